//! The session handshake on one link. Both parties announce magic, version, protocol,
//! role, output mode, set size, what kind of run this is and a fresh nonce (the
//! *hellos*); each computes the protocol parameters from the set sizes and sends their
//! canonical encoding with a hash over both hellos and that encoding. Each side checks the
//! peer's encoding and hash against its own: a mismatch in the announced setup is named,
//! and hellos altered on the way (a flipped nonce, size or flag) are caught by the hash.
//! That hash is the session id, so every later derivation is bound to exactly what both
//! parties saw.
//!
//! The hash is keyed: with a public key for a fresh run, and with the secret the two
//! parties agreed on in the offline session for a run that continues a precomputed state
//! ([`Resume`]). Only the party that took part in that precomputation can then produce
//! the session id — checked before the state is used up — and the session key derived
//! from it authenticates the transcript confirmation.

use super::{Role, Sizes, VERSION};
use crate::crypto::Prg;
use crate::net::{Channel, Reader, Writer};
use crate::options::Options;
use crate::{peer_text, Error, Result};

const MAGIC: &[u8; 8] = b"VENN/PSI";
const MAX_HELLO: usize = 8 + 2 + 1 + 255 + 1 + 1 + 4 + 8 + 16 + 1 + 32;
/// The key of the session-id hash when the parties share no secret.
const PUBLIC_KEY: [u8; 32] = *b"venn/session-id/public-key/v2...";
/// The longest parameter encoding accepted from the peer.
const MAX_PARAMS: usize = 1024;

/// How many opening bytes of a connection [`looks_like_hello`] needs.
pub const HELLO_PREFIX: usize = 4 + MAGIC.len();

/// Whether a connection's opening bytes (a frame length and the magic) can be a peer's
/// hello: what a listener checks before it takes a connection.
pub fn looks_like_hello(first: &[u8]) -> bool {
    first.len() >= HELLO_PREFIX
        && (u32::from_le_bytes(first[..4].try_into().expect("4 bytes")) as usize) <= MAX_HELLO
        && &first[4..HELLO_PREFIX] == MAGIC
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
    /// The protocol's options (`--bins`, `--sigma`).
    pub options: Options,
    /// The number of (distinct) items we bring.
    pub set_size: u64,
    /// What kind of run this is.
    pub mode: Mode,
}

/// What kind of run a session is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Offline and online in one session.
    Run,
    /// The offline phase only (`venn precompute`).
    Precompute,
    /// The online phase, continuing a precomputed state.
    Resume(Resume),
}

impl Mode {
    fn name(&self) -> &'static str {
        match self {
            Mode::Run => "a full run",
            Mode::Precompute => "a precomputation (venn precompute)",
            Mode::Resume(_) => "an online run from a precomputed state (--state)",
        }
    }
}

/// The offline session a precomputed state comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Resume {
    /// Its session id.
    pub session: [u8; 32],
    /// The set sizes it was run for: the most each party may bring now.
    pub sizes: Sizes,
    /// The secret both parties agreed on in it (see [`super::agree_secret`]).
    pub secret: [u8; 32],
}

impl std::fmt::Debug for Resume {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resume")
            .field("session", &self.session)
            .field("sizes", &self.sizes)
            .finish_non_exhaustive()
    }
}

impl Hello {
    fn encode(&self, nonce: &[u8; 16]) -> Vec<u8> {
        let w = Writer::new()
            .bytes(MAGIC)
            .u16(VERSION)
            .str8(&self.protocol)
            .u8(self.role.code())
            .u8(self.both as u8);
        let w = self.options.write(w).u64(self.set_size).bytes(nonce);
        match &self.mode {
            Mode::Run => w.u8(0),
            Mode::Precompute => w.u8(1),
            Mode::Resume(r) => w.u8(2).bytes(&r.session),
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
#[derive(Clone)]
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
    /// The protocol's options.
    pub options: Options,
    /// The key that authenticates this session's transcript confirmation: derived from
    /// the session id, and from the precomputation's secret when there is one.
    pub key: [u8; 32],
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("role", &self.role)
            .field("n_sender", &self.n_sender)
            .field("n_receiver", &self.n_receiver)
            .field("sized", &self.sized)
            .field("both", &self.both)
            .field("options", &self.options)
            .finish_non_exhaustive()
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
    let (sized, base) = match &ours.mode {
        Mode::Resume(r) => (r.sizes, r.secret),
        _ => (
            Sizes {
                sender: n_sender,
                receiver: n_receiver,
            },
            PUBLIC_KEY,
        ),
    };
    let keys = Keys::new(&base);
    let params = params(sized)?;
    let (sender_hello, receiver_hello) = match ours.role {
        Role::Sender => (&our_hello, &peer_hello),
        Role::Receiver => (&peer_hello, &our_hello),
    };
    let mut h = blake3::Hasher::new_keyed(&keys.id);
    // Over TLS, the session is bound to the TLS channel: frames relayed from another TLS
    // session give another id, and the proofs below fail.
    if let Some(binding) = chan.binding() {
        h.update(b"tls-exporter");
        h.update(&binding);
    }
    for part in [sender_hello, receiver_hello, &params.encoding] {
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part);
    }
    let id = *h.finalize().as_bytes();
    chan.send(
        &Writer::new()
            .u16(params.encoding.len() as u16)
            .bytes(&params.encoding)
            .bytes(keys.proof(ours.role, &id).as_bytes())
            .0,
    )?;
    let msg = chan.recv(2 + MAX_PARAMS + 32)?;
    let mut r = Reader::new(&msg, "parameter confirmation");
    let len = r.u16()? as usize;
    let peer_encoding = r.bytes(len)?;
    let peer_proof: [u8; 32] = r.array()?;
    r.finish()?;
    if peer_encoding != params.encoding {
        return Err(Error::Handshake(format!(
            "parameter mismatch: we use [{}] for these set sizes and the peer computed others \
             (run the same venn release on both sides)",
            params.shown
        )));
    }
    // The peer's proof is made for *its* role, so our own message reflected back fails.
    if keys.proof(ours.role.other(), &id) != blake3::Hash::from_bytes(peer_proof) {
        return Err(Error::Integrity(match ours.mode {
            Mode::Resume(_) => "the peer does not hold the secret of our precomputation (or \
                                the hellos or run plans were altered in transit)"
                .into(),
            _ => "the hellos or run plans were altered in transit: the two parties saw \
                  different handshakes"
                .into(),
        }));
    }
    Ok(Session {
        id,
        role: ours.role,
        n_sender,
        n_receiver,
        sized,
        both: ours.both,
        options: ours.options,
        key: keys.session(&id),
    })
}

/// The keys of one handshake, each derived for its own purpose from the base key (the
/// public constant, or the precomputation's secret).
struct Keys {
    id: [u8; 32],
    proof: [u8; 32],
    session: [u8; 32],
}

impl Keys {
    fn new(base: &[u8; 32]) -> Self {
        Keys {
            id: blake3::derive_key("venn/session-id", base),
            proof: blake3::derive_key("venn/handshake-proof", base),
            session: blake3::derive_key("venn/session-key", base),
        }
    }

    /// What `role` sends to show it computed `id` with the base key.
    fn proof(&self, role: Role, id: &[u8; 32]) -> blake3::Hash {
        let mut h = blake3::Hasher::new_keyed(&self.proof);
        h.update(&[role.code()]);
        h.update(id);
        h.finalize()
    }

    /// The session's key, for the transcript confirmation.
    fn session(&self, id: &[u8; 32]) -> [u8; 32] {
        *blake3::keyed_hash(&self.session, id).as_bytes()
    }
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
    let options = Options::read(&mut r)?;
    if options != ours.options {
        return Err(Error::Handshake(format!(
            "the peer runs {} with [{}], we with [{}]: both must pass the same options",
            ours.protocol,
            options.describe(),
            ours.options.describe()
        )));
    }
    let peer_size = r.u64()?;
    if peer_size > max_peer_items {
        return Err(Error::Handshake(format!(
            "the peer announces {peer_size} items, more than the {max_peer_items} we accept (raise --max-peer-items)"
        )));
    }
    r.array::<16>()?;
    let peer_mode = match r.u8()? {
        0 => Mode::Run,
        1 => Mode::Precompute,
        // What the peer precomputed for is not on the wire: our own state says it.
        2 => Mode::Resume(Resume {
            session: r.array()?,
            sizes: Sizes {
                sender: 0,
                receiver: 0,
            },
            secret: [0; 32],
        }),
        b => return Err(Error::protocol("a run mode of 0, 1 or 2", b.to_string())),
    };
    r.finish()?;
    match (&ours.mode, &peer_mode) {
        (Mode::Run, Mode::Run) | (Mode::Precompute, Mode::Precompute) => {}
        (Mode::Resume(r), Mode::Resume(peer)) => {
            if r.session != peer.session {
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
        (ours, theirs) => {
            let resuming = matches!(ours, Mode::Resume(_)) || matches!(theirs, Mode::Resume(_));
            return Err(Error::Handshake(format!(
                "we run {} and the peer runs {}{}",
                ours.name(),
                theirs.name(),
                if resuming {
                    " (pass --state on both sides)"
                } else {
                    ""
                }
            )));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Block;
    use crate::net::{mem_pair, Rebound};
    use std::time::Duration;

    fn run(bindings: [[u8; 32]; 2]) -> [Result<Session>; 2] {
        let (a, b) = mem_pair(Duration::from_secs(5));
        let params = |_| {
            Ok(WireParams {
                encoding: b"params".to_vec(),
                shown: "params".into(),
            })
        };
        let hello = |role| Hello {
            protocol: "kkrt16".into(),
            role,
            both: false,
            options: Default::default(),
            set_size: 4,
            mode: Mode::Run,
        };
        std::thread::scope(|s| {
            let t = s.spawn(move || {
                // A binding as TLS gives one.
                let mut b = Rebound {
                    inner: b,
                    binding: bindings[1],
                };
                handshake(
                    &mut b,
                    &hello(Role::Receiver),
                    8,
                    &mut Prg::from_seed(Block::from(2)),
                    params,
                )
            });
            let mut a = Rebound {
                inner: a,
                binding: bindings[0],
            };
            let ours = handshake(
                &mut a,
                &hello(Role::Sender),
                8,
                &mut Prg::from_seed(Block::from(1)),
                params,
            );
            [ours, t.join().unwrap()]
        })
    }

    #[test]
    fn the_session_is_bound_to_the_channel() {
        let [a, b] = run([[7; 32], [7; 32]]);
        assert_eq!(a.unwrap().id, b.unwrap().id);
        // Two TLS sessions with a relay between them: each end has its own binding, so
        // frames passed along unchanged still fail the proofs.
        for r in run([[7; 32], [8; 32]]) {
            assert!(matches!(r, Err(Error::Integrity(_))), "{r:?}");
        }
    }
}
