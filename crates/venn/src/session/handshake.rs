//! The session handshake on one link. Both parties announce magic, version, protocol,
//! role, output mode, set size and a fresh nonce (the *hellos*); each computes the
//! protocol parameters from the two set sizes and sends their canonical encoding with a
//! hash over both hellos and that encoding. Each side checks the peer's encoding and hash
//! against its own: a mismatch in the announced setup is named, and hellos altered on the
//! way (a flipped nonce, size or flag) are caught by the hash. That hash is the session id,
//! so every later derivation is bound to exactly what both parties saw.

use super::{Role, Sizes};
use crate::crypto::{Prg, RandomOracle};
use crate::net::{Channel, Reader, Writer};
use crate::{peer_text, Error, Result};

const MAGIC: &[u8; 8] = b"VENN/PSI";
/// Wire-format version; bumped on any incompatible change.
pub const VERSION: u16 = 2;
const MAX_HELLO: usize = 8 + 2 + 1 + 255 + 1 + 1 + 8 + 16 + 1 + 32;
/// The longest parameter encoding accepted from the peer.
const MAX_PARAMS: usize = 1024;

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
    /// The precomputed offline phase this online run continues, if any.
    pub resume: Option<Resume>,
}

/// The offline session a precomputed state comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resume {
    /// Its session id.
    pub session: [u8; 32],
    /// The set sizes it was run for: the most each party may bring now.
    pub sizes: Sizes,
}

impl Hello {
    fn encode(&self, nonce: &[u8; 16]) -> Vec<u8> {
        let w = Writer::new()
            .bytes(MAGIC)
            .u16(VERSION)
            .str8(&self.protocol)
            .u8(self.role.code())
            .u8(self.both as u8)
            .u64(self.set_size)
            .bytes(nonce);
        match &self.resume {
            None => w.u8(0),
            Some(r) => w.u8(1).bytes(&r.session),
        }
        .0
    }
}

/// The protocol parameters as the handshake compares them.
pub struct WireParams {
    /// The canonical encoding both parties must agree on byte for byte.
    pub encoding: Vec<u8>,
    /// How to show them to a user when they differ.
    pub shown: String,
}

/// What both parties agreed on.
#[derive(Clone, Debug)]
pub struct Session {
    /// The hash of both hellos and the parameter encoding; binds every hash and key
    /// derivation of the run to this session.
    pub id: [u8; 32],
    /// Our role.
    pub role: Role,
    /// The sender's set size in this run.
    pub n_sender: u64,
    /// The receiver's set size in this run.
    pub n_receiver: u64,
    /// The sizes the parameters are computed for: the actual ones, or those of the
    /// precomputed offline phase (at least the actual ones).
    pub sized: Sizes,
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
/// decides how much memory we allocate); `params(sizes)` computes the parameters both
/// sides must agree on (and may refuse sizes, e.g. for memory).
pub fn handshake(
    chan: &mut dyn Channel,
    ours: &Hello,
    max_peer_items: u64,
    prg: &mut Prg,
    params: impl Fn(Sizes) -> Result<WireParams>,
) -> Result<Session> {
    let mut nonce = [0u8; 16];
    prg.fill_bytes(&mut nonce);
    let our_hello = ours.encode(&nonce);
    chan.send(&our_hello)?;
    let peer_hello = chan.recv(MAX_HELLO).map_err(garbage)?;
    let peer_size = check_peer_hello(&peer_hello, ours, max_peer_items)?;

    let (n_sender, n_receiver) = match ours.role {
        Role::Sender => (ours.set_size, peer_size),
        Role::Receiver => (peer_size, ours.set_size),
    };
    let sized = match &ours.resume {
        Some(r) => r.sizes,
        None => Sizes {
            sender: n_sender,
            receiver: n_receiver,
        },
    };
    let params = params(sized)?;
    let (sender_hello, receiver_hello) = match ours.role {
        Role::Sender => (&our_hello, &peer_hello),
        Role::Receiver => (&peer_hello, &our_hello),
    };
    let id = RandomOracle::new("venn/session-id", &[]).hash(&[
        sender_hello,
        receiver_hello,
        &params.encoding,
    ]);
    chan.send(
        &Writer::new()
            .u16(params.encoding.len() as u16)
            .bytes(&params.encoding)
            .bytes(&id)
            .0,
    )?;
    let msg = chan.recv(2 + MAX_PARAMS + 32)?;
    let mut r = Reader::new(&msg, "parameter confirmation");
    let len = r.u16()? as usize;
    let peer_encoding = r.bytes(len)?;
    let peer_id: [u8; 32] = r.array()?;
    r.finish()?;
    if peer_encoding != params.encoding {
        return Err(Error::Handshake(format!(
            "parameter mismatch: we use [{}] for these set sizes and the peer computed others \
             (run the same venn release on both sides)",
            params.shown
        )));
    }
    if peer_id != id {
        return Err(Error::Integrity(
            "the hellos were altered in transit: the two parties saw different handshakes".into(),
        ));
    }
    Ok(Session {
        id,
        role: ours.role,
        n_sender,
        n_receiver,
        sized,
        both: ours.both,
    })
}

/// Checks the peer's hello against ours; returns the peer's set size.
fn check_peer_hello(msg: &[u8], ours: &Hello, max_peer_items: u64) -> Result<u64> {
    let mut r = Reader::new(msg, "handshake");
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
            "the peer runs protocol '{}', we run '{}'",
            peer_text(&protocol),
            ours.protocol
        )));
    }
    let role = Role::from_code(r.u8()?)?;
    if role == ours.role {
        return Err(Error::Handshake(format!(
            "both parties are {}s: one must run `venn send`, the other `venn receive`",
            ours.role.name()
        )));
    }
    let both = match r.u8()? {
        0 => false,
        1 => true,
        b => {
            return Err(Error::protocol(
                "an output-mode flag of 0 or 1",
                b.to_string(),
            ))
        }
    };
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
    r.array::<16>()?;
    let peer_resume = match r.u8()? {
        0 => None,
        1 => Some(r.array::<32>()?),
        b => return Err(Error::protocol("a state flag of 0 or 1", b.to_string())),
    };
    r.finish()?;
    match (&ours.resume, peer_resume) {
        (None, None) => {}
        (Some(_), None) => return Err(Error::Handshake(
            "we continue a precomputed state and the peer does not (pass --state on both sides)"
                .into(),
        )),
        (None, Some(_)) => {
            return Err(Error::Handshake(
                "the peer continues a precomputed state and we do not (pass --state on both sides)"
                    .into(),
            ))
        }
        (Some(r), Some(id)) => {
            if r.session != id {
                return Err(Error::Handshake(
                    "the peer's state comes from a different precomputation than ours".into(),
                ));
            }
            let most = match ours.role {
                Role::Sender => r.sizes.receiver,
                Role::Receiver => r.sizes.sender,
            };
            if peer_size > most {
                return Err(Error::Handshake(format!(
                    "the peer brings {peer_size} items, more than the {most} it precomputed for"
                )));
            }
        }
    }
    Ok(peer_size)
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
