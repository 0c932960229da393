//! The session handshake: both parties announce magic, version, protocol, role, output
//! mode, set size and a fresh nonce; then both compute the protocol parameters from the two
//! set sizes and compare them. Any disagreement aborts with a message naming it.

use super::{Channel, Reader, Writer};
use crate::crypto::{Prg, RandomOracle};
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"VENN/PSI";
/// Wire-format version; bumped on any incompatible change.
pub const VERSION: u16 = 1;
const MAX_HELLO: usize = 8 + 2 + 1 + 1 + 256 + 8 + 16;
const MAX_PARAMS_TEXT: usize = 4096;

/// Which side of a two-party protocol a party plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Contributes its set; learns the intersection only with `--both`.
    Sender,
    /// Learns the intersection.
    Receiver,
}

impl Role {
    fn code(self) -> u8 {
        match self {
            Role::Sender => 0,
            Role::Receiver => 1,
        }
    }
    /// The lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Role::Sender => "sender",
            Role::Receiver => "receiver",
        }
    }
}

/// What a party announces about itself.
#[derive(Clone, Debug)]
pub struct Hello {
    /// Registry name of the protocol.
    pub protocol: String,
    /// Our role.
    pub role: Role,
    /// Whether both parties learn the intersection.
    pub both: bool,
    /// The number of (distinct) items we bring.
    pub set_size: u64,
}

/// What both parties agreed on.
#[derive(Clone, Debug)]
pub struct Session {
    /// Fresh per run; binds every hash and key derivation to this session.
    pub id: [u8; 32],
    /// Our role.
    pub role: Role,
    /// The sender's set size.
    pub n_sender: u64,
    /// The receiver's set size.
    pub n_receiver: u64,
    /// Whether both parties learn the intersection.
    pub both: bool,
}

impl Session {
    /// The peer's set size.
    pub fn n_peer(&self) -> u64 {
        match self.role {
            Role::Sender => self.n_receiver,
            Role::Receiver => self.n_sender,
        }
    }
}

/// Runs the handshake. `max_peer_items` bounds the set size we accept from the peer (it
/// decides how much memory we allocate); `params_text(n_sender, n_receiver)` renders the
/// parameters both sides must agree on.
pub fn handshake(
    chan: &mut dyn Channel,
    ours: &Hello,
    max_peer_items: u64,
    prg: &mut Prg,
    params_text: impl Fn(u64, u64) -> Result<String>,
) -> Result<Session> {
    let mut nonce = [0u8; 16];
    prg.fill_bytes(&mut nonce);
    let hello = Writer::new()
        .bytes(MAGIC)
        .u16(VERSION)
        .str8(&ours.protocol)
        .u8(ours.role.code())
        .u8(ours.both as u8)
        .u64(ours.set_size)
        .bytes(&nonce);
    chan.send(&hello.0)?;
    let msg = chan.recv(MAX_HELLO).map_err(garbage)?;
    let mut r = Reader::new(&msg, "handshake");
    if r.bytes(8).map_err(garbage)? != MAGIC {
        return Err(Error::Handshake(
            "the peer is not a venn endpoint (bad magic bytes)".into(),
        ));
    }
    let version = r.u16()?;
    if version != VERSION {
        return Err(Error::Handshake(format!(
            "the peer speaks wire version {version}, we speak {VERSION}: run the same venn release on both sides"
        )));
    }
    let protocol = r.str8()?;
    if protocol != ours.protocol {
        return Err(Error::Handshake(format!(
            "the peer runs protocol '{protocol}', we run '{}'",
            ours.protocol
        )));
    }
    let role = r.u8()?;
    if role > 1 {
        return Err(Error::Handshake(format!(
            "the peer announced unknown role {role}"
        )));
    }
    if role == ours.role.code() {
        return Err(Error::Handshake(format!(
            "both parties are {}s: one must run `venn send`, the other `venn receive`",
            ours.role.name()
        )));
    }
    let both = r.u8()? == 1;
    if both != ours.both {
        return Err(Error::Handshake(format!(
            "output mode differs: we {} --both, the peer {}",
            if ours.both { "passed" } else { "did not pass" },
            if both { "did" } else { "did not" }
        )));
    }
    let peer_size = r.u64()?;
    if peer_size > max_peer_items {
        return Err(Error::Handshake(format!(
            "the peer announces {peer_size} items, more than the {max_peer_items} we accept (raise --max-peer-items)"
        )));
    }
    let peer_nonce: [u8; 16] = r.array()?;
    r.finish()?;

    let (n_sender, n_receiver, sender_nonce, receiver_nonce) = match ours.role {
        Role::Sender => (ours.set_size, peer_size, nonce, peer_nonce),
        Role::Receiver => (peer_size, ours.set_size, peer_nonce, nonce),
    };
    let text = params_text(n_sender, n_receiver)?;
    chan.send(&Writer::new().str16(&text).0)?;
    let msg = chan.recv(MAX_PARAMS_TEXT + 2)?;
    let mut r = Reader::new(&msg, "parameter confirmation");
    let peer_text = r.str16()?;
    r.finish()?;
    if peer_text != text {
        return Err(Error::Handshake(format!(
            "parameter mismatch: we use [{text}], the peer uses [{peer_text}]"
        )));
    }
    let id = RandomOracle::new("venn/session-id", &[]).hash(&[&sender_nonce, &receiver_nonce]);
    Ok(Session {
        id,
        role: ours.role,
        n_sender,
        n_receiver,
        both,
    })
}

/// A first message that does not even parse is reported as "not a venn endpoint".
fn garbage(e: Error) -> Error {
    match e {
        Error::Protocol { got, .. } => Error::Handshake(format!(
            "the peer is not a venn endpoint (its first message was {got})"
        )),
        e => e,
    }
}
