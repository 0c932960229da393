//! The run plan: the first frame of every run of the `venn` tool and the Python package,
//! one each way, before any session. It says how many rows a party brings, how many hash
//! buckets it needs for its memory (runs on inputs larger than memory go bucket by bucket
//! over one connection, each bucket its own session) and how it takes its keys
//! ([`KeyForm`]: trimmed, lower-cased, of how many columns). Both take the larger bucket
//! count, a power of two. Parties that take their keys differently are refused unless the
//! user allows it (then warned): equal keys would not match, and nothing would say so.
//!
//! Every session of the run — the one session of a run in one bucket ([`Agreed::bind`]),
//! or each bucket's — is bound to both plans as sent ([`Agreed::digest`], through the
//! channel binding the session id hashes), so a plan altered in transit fails the
//! handshake: a relay that showed each party its own key form in the peer's plan would
//! otherwise let parties that take their keys differently run, unwarned.

use crate::net::{Channel, Reader, Rebound, Writer};
use crate::parties::Role;
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"VENN/PSI";
/// Where a session hello has its wire version, a plan has this mark (0xFFFE before plans
/// carried the key form).
const PLAN_MARK: u16 = 0xFFFD;
/// The most buckets a run may have (2^20).
pub const MAX_LOG2_BUCKETS: u8 = 20;
/// The most rows a plan may announce (2^40): they cost us nothing but the sessions their
/// buckets take; each bucket's size is checked against --max-peer-items.
const MAX_ROWS: u64 = 1 << 40;
/// What both parties must do alike for equal keys to match: the part of the front ends' `KeyOptions`
/// that changes a key's bytes. Each party sends its own in the run plan, and a run whose
/// parties differ is refused (a receiver that lower-cases against a sender that does not
/// would find only the keys already in lower case, and say nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyForm {
    /// Whether white space around a key is dropped (Unicode's, where it is UTF-8).
    pub trim: bool,
    /// Whether a key is lower-cased (by Unicode's rules, where it is UTF-8).
    pub lowercase: bool,
    /// Columns a key is made of (their values length-prefixed when more than one).
    pub columns: u16,
}

impl std::fmt::Display for KeyForm {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let no = |on: bool| if on { "" } else { "no " };
        write!(
            f,
            "{}trim, {}lowercase, {} key column{}",
            no(self.trim),
            no(self.lowercase),
            self.columns,
            if self.columns == 1 { "" } else { "s" }
        )
    }
}

/// What a party says of its side of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Rows brought (after skipping empty keys).
    pub rows: u64,
    /// log2 of the buckets this party needs.
    pub log2_buckets: u8,
    /// How this party takes its keys.
    pub form: KeyForm,
}

impl Plan {
    fn encode(&self) -> Vec<u8> {
        Writer::new()
            .bytes(MAGIC)
            .u16(PLAN_MARK)
            .u64(self.rows)
            .u8(self.log2_buckets)
            .u8(self.form.trim as u8)
            .u8(self.form.lowercase as u8)
            .u16(self.form.columns)
            .0
    }

    fn decode(frame: &[u8]) -> Result<Plan> {
        let mut r = Reader::new(frame, "run plan");
        let not_venn = || Error::Handshake("the peer is not a venn endpoint (no run plan)".into());
        if r.bytes(MAGIC.len()).map_err(|_| not_venn())? != MAGIC {
            return Err(not_venn());
        }
        if r.u16()? != PLAN_MARK {
            return Err(Error::Handshake(
                "the peer runs another venn release (it sent no run plan); run the same \
                 release on both sides"
                    .into(),
            ));
        }
        let (rows, log2_buckets) = (r.u64()?, r.u8()?);
        let flag = |b: u8| match b {
            0 | 1 => Ok(b == 1),
            _ => Err(Error::Handshake(format!(
                "the peer's run plan has a flag of {b}"
            ))),
        };
        let (trim, lowercase) = (flag(r.u8()?)?, flag(r.u8()?)?);
        let columns = r.u16()?;
        r.finish()?;
        if columns == 0 {
            return Err(Error::Handshake("the peer's keys have no columns".into()));
        }
        let plan = Plan {
            rows,
            log2_buckets,
            form: KeyForm {
                trim,
                lowercase,
                columns,
            },
        };
        if plan.rows > MAX_ROWS || plan.log2_buckets > MAX_LOG2_BUCKETS {
            return Err(Error::Handshake(format!(
                "the peer brings {} rows in 2^{} buckets; at most {MAX_ROWS} rows in \
                 2^{MAX_LOG2_BUCKETS} buckets are supported",
                plan.rows, plan.log2_buckets
            )));
        }
        Ok(plan)
    }
}

/// Both plans, as sent: what the buckets' sessions are bound to.
pub struct Agreed {
    /// The plan this party sent.
    pub ours: Plan,
    /// The plan the peer sent.
    pub peer: Plan,
    digest: [u8; 32],
    /// Why the run goes on although the parties take their keys differently
    /// ([`KeyMismatch::Warn`]): for the user to be told.
    pub warning: Option<String>,
}

impl Agreed {
    /// A digest of both plans, as sent.
    pub fn digest(&self) -> [u8; 32] {
        self.digest
    }

    /// log2 of the bucket count both use.
    pub fn log2_buckets(&self) -> u8 {
        self.ours.log2_buckets.max(self.peer.log2_buckets)
    }

    /// `chan` with both plans joined to its binding, for a run in one bucket: its session
    /// id then differs between parties that saw different plans, and the handshake fails.
    pub fn bind<'a>(&self, chan: &'a mut dyn Channel) -> Rebound<&'a mut dyn Channel> {
        let mut h = blake3::Hasher::new_derive_key("venn 2026-11 session of a run plan");
        h.update(&chan.binding().unwrap_or_default());
        h.update(&self.digest);
        Rebound {
            binding: *h.finalize().as_bytes(),
            inner: chan,
        }
    }
}

/// What a party does when the peer takes its keys otherwise ([`KeyForm`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeyMismatch {
    /// Refuse the run, naming both forms (the default).
    #[default]
    Refuse,
    /// Run, with a warning naming both (`--allow-key-mismatch`).
    Warn,
}

impl KeyMismatch {
    /// What `--allow-key-mismatch` (Python's `allow_key_mismatch`) asks for.
    pub fn allowed(allow: bool) -> KeyMismatch {
        if allow {
            KeyMismatch::Warn
        } else {
            KeyMismatch::Refuse
        }
    }
}

/// Sends our plan and receives the peer's: refused if the peer's is out of bounds
/// (more rows than `max_peer_items`, more buckets than its rows justify) or takes its keys
/// otherwise than ours (unless `mismatch` allows it).
pub fn exchange(
    chan: &mut dyn Channel,
    ours: Plan,
    role: Role,
    max_peer_items: u64,
    mismatch: KeyMismatch,
) -> Result<Agreed> {
    chan.send(&ours.encode())?;
    let frame = chan.recv(64).map_err(|e| match e {
        Error::Protocol { .. } => {
            Error::Handshake("the peer is not a venn endpoint (no run plan)".into())
        }
        e => e,
    })?;
    let peer = Plan::decode(&frame)?;
    // The peer's whole set is what --max-peer-items bounds (each bucket's session then
    // accepts no more than that set's padded share), and it may ask for no more buckets
    // than its rows justify: buckets cost us a session each.
    if peer.rows > max_peer_items {
        return Err(Error::Handshake(format!(
            "the peer brings {} rows, more than the {max_peer_items} we accept \
             (--max-peer-items)",
            peer.rows
        )));
    }
    if 1u64 << peer.log2_buckets > peer.rows.max(1).next_power_of_two() {
        return Err(Error::Handshake(format!(
            "the peer asks for 2^{} buckets for {} rows",
            peer.log2_buckets, peer.rows
        )));
    }
    let mut warning = None;
    if peer.form != ours.form {
        let why = format!(
            "the parties take their keys differently, so equal keys may not match: ours \
             with {}, the peer's with {} (--trim, --lowercase and the number of --column \
             must agree; Python: trim=, lowercase=)",
            ours.form, peer.form
        );
        match mismatch {
            KeyMismatch::Refuse => {
                return Err(Error::Handshake(format!(
                    "{why}; --allow-key-mismatch runs anyway"
                )))
            }
            KeyMismatch::Warn => warning = Some(why),
        }
    }
    let (sender, receiver) = match role {
        Role::Sender => (ours, peer),
        Role::Receiver => (peer, ours),
    };
    let mut h = blake3::Hasher::new_derive_key("venn 2026-11 run plan");
    h.update(&sender.encode());
    h.update(&receiver.encode());
    Ok(Agreed {
        ours,
        peer,
        digest: *h.finalize().as_bytes(),
        warning,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_bounded_and_named() {
        let plan = Plan {
            rows: 10,
            log2_buckets: 2,
            form: KeyForm {
                trim: true,
                lowercase: false,
                columns: 2,
            },
        };
        assert_eq!(Plan::decode(&plan.encode()).unwrap(), plan);
        // After the magic, the mark and the rows: log2 of the buckets, the two flags,
        // the columns.
        let at = MAGIC.len() + 2 + 8;
        for (offset, bad) in [(0, MAX_LOG2_BUCKETS + 1), (1, 2), (2, 7)] {
            let mut frame = plan.encode();
            frame[at + offset] = bad;
            assert!(Plan::decode(&frame).is_err(), "byte {offset} = {bad}");
        }
        let mut none = plan.encode();
        none[at + 3..].fill(0);
        assert!(Plan::decode(&none).is_err(), "no columns");
        let mut huge = Plan {
            rows: MAX_ROWS + 1,
            ..plan
        }
        .encode();
        assert!(Plan::decode(&huge).is_err());
        huge.push(0);
        assert!(Plan::decode(&huge).is_err(), "trailing bytes");
        let mut old = plan.encode();
        old[8] = 2;
        let e = Plan::decode(&old).unwrap_err().to_string();
        assert!(e.contains("another venn release"), "{e}");
        assert!(Plan::decode(b"GET / HTTP/1.1").is_err());
    }
}
