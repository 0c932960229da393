//! The run plan: the first frame of every run of the `venn` tool and the Python package,
//! one each way, before any session. It says how many rows a party brings, how many hash
//! buckets it needs for its memory (runs on inputs larger than memory go bucket by bucket
//! over one connection, each bucket its own session) and how it takes its keys
//! ([`KeyForm`]: trimmed, lower-cased, of how many columns, matched together or any one
//! of them). Both take the larger bucket
//! count, a power of two. Parties that take their keys differently are refused unless the
//! user allows it (then warned): equal keys would not match, and nothing would say so.
//! It also names the columns a party reveals for its matched rows and those it asks of the
//! peer ([`Columns`]), each revealed column with its padded width: both sides refuse a run
//! where what one reveals is not what the other asks for.
//!
//! Every session of the run — the one session of a run in one bucket ([`Agreed::bind`]),
//! or each bucket's — is bound to both plans as sent ([`Agreed::digest`], through the
//! channel binding the session id hashes), so a plan altered in transit fails the
//! handshake: a relay that showed each party its own key form in the peer's plan would
//! otherwise let parties that take their keys differently run, unwarned.

use crate::net::{Channel, Reader, Rebound, Writer};
use crate::options::MAX_RECORD_WIDTH as MAX_WIDTH;
use crate::parties::Role;
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"VENN/PSI";
/// Where a session hello has its wire version, a plan has this mark (0xFFFE before plans
/// carried the key form, 0xFFFD before they carried the columns, 0xFFFC before the key
/// form said whether any one column matches, 0xFFFB before a bucketed run's later rows
/// went after its last bucket).
const PLAN_MARK: u16 = 0xFFFA;
/// The most columns a party may reveal, or ask for.
pub const MAX_COLUMNS: usize = 64;
/// The most bytes of a column's name.
pub const MAX_COLUMN_NAME: usize = 255;
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
    /// Columns a key is made of (their values length-prefixed when more than one), or,
    /// with `any`, the identifiers a record is matched on.
    pub columns: u16,
    /// Whether a record matches on any one of its `columns` (`--match-any`): each of its
    /// non-empty identifiers is an item of its own, prefixed by the identifier's number.
    pub any: bool,
}

impl std::fmt::Display for KeyForm {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let no = |on: bool| if on { "" } else { "no " };
        write!(
            f,
            "{}trim, {}lowercase, {}{} key column{}",
            no(self.trim),
            no(self.lowercase),
            if self.any { "any of " } else { "" },
            self.columns,
            if self.columns == 1 { "" } else { "s" }
        )
    }
}

/// How both parties order their outputs (`--align`, with `--both`): as their inputs are
/// (none), or the matched rows in one order both derive, alone (inner) or followed by
/// each side's unmatched rows and the placeholders of the other's (outer). Both must ask
/// for the same.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Align {
    /// Each output in its input's order.
    #[default]
    None,
    /// The matched rows, in the same order on both sides.
    Inner,
    /// The matched rows in the same order, then the sender's unmatched rows, then the
    /// receiver's (the other side writing placeholders for them).
    Outer,
}

impl Align {
    /// The names `--align` takes.
    pub const NAMES: &'static [&'static str] = &["none", "inner", "outer"];

    /// The alignment `--align` names.
    pub fn parse(name: &str) -> Result<Align> {
        match name {
            "none" => Ok(Align::None),
            "inner" => Ok(Align::Inner),
            "outer" => Ok(Align::Outer),
            _ => Err(Error::Usage(format!(
                "--align is one of {}, not '{name}'",
                Align::NAMES.join(", ")
            ))),
        }
    }

    /// Its name, as `--align` takes it.
    pub fn name(self) -> &'static str {
        Align::NAMES[self as usize]
    }
}

/// The columns of a party's rows that go with its matched keys (PSI with payloads): those
/// it reveals to the peer, and those it asks the peer for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Columns {
    /// The columns this party reveals, in order: each name and the bytes its values are
    /// padded to.
    pub reveals: Vec<(String, u16)>,
    /// The columns this party asks of the peer, by name, in order.
    pub asks: Vec<String>,
}

impl Columns {
    /// The width of the records carrying the columns `reveals` (each value after its
    /// two-byte length, padded to its column's width); `None` for no columns.
    pub fn record_width(reveals: &[(String, u16)]) -> Option<u32> {
        (!reveals.is_empty()).then(|| reveals.iter().map(|(_, w)| 2 + *w as u32).sum())
    }

    /// A party's columns, refused if they could not be sent: too many, a name empty or too
    /// long, a width of 0, records wider than a run carries.
    pub fn new(reveals: Vec<(String, u16)>, asks: Vec<String>) -> Result<Columns> {
        let columns = Columns { reveals, asks };
        columns.check().map_err(Error::Usage)?;
        Ok(columns)
    }

    fn check(&self) -> std::result::Result<(), String> {
        if self.reveals.len() > MAX_COLUMNS || self.asks.len() > MAX_COLUMNS {
            return Err(format!("at most {MAX_COLUMNS} columns each way"));
        }
        let names = self.reveals.iter().map(|(n, _)| n).chain(&self.asks);
        if let Some(bad) = names
            .into_iter()
            .find(|n| n.is_empty() || n.len() > MAX_COLUMN_NAME)
        {
            return Err(format!(
                "a column's name is 1 to {MAX_COLUMN_NAME} bytes, not {}",
                bad.len()
            ));
        }
        if let Some((name, _)) = self.reveals.iter().find(|(_, w)| *w == 0) {
            return Err(format!(
                "the column '{}' has a width of 0",
                name.escape_debug()
            ));
        }
        match Columns::record_width(&self.reveals) {
            Some(w) if w as usize > MAX_WIDTH => Err(format!(
                "the revealed columns take {w} bytes a row (each value after a two-byte \
                 length); at most {MAX_WIDTH}"
            )),
            _ => Ok(()),
        }
    }

    fn encode(&self, w: Writer) -> Writer {
        let mut w = w.u8(self.reveals.len() as u8);
        for (name, width) in &self.reveals {
            w = w.str8(name).u16(*width);
        }
        w = w.u8(self.asks.len() as u8);
        for name in &self.asks {
            w = w.str8(name);
        }
        w
    }

    fn decode(r: &mut Reader) -> Result<Columns> {
        let mut reveals = Vec::new();
        for _ in 0..r.u8()? {
            reveals.push((r.str8()?, r.u16()?));
        }
        let asks = (0..r.u8()?).map(|_| r.str8()).collect::<Result<_>>()?;
        let columns = Columns { reveals, asks };
        columns
            .check()
            .map_err(|why| Error::Handshake(format!("the peer's run plan: {why}")))?;
        Ok(columns)
    }
}

/// What a party says of its side of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Rows brought (after skipping empty keys).
    pub rows: u64,
    /// log2 of the buckets this party needs.
    pub log2_buckets: u8,
    /// How this party takes its keys.
    pub form: KeyForm,
    /// The columns it reveals for its matched rows, and those it asks the peer for.
    pub columns: Columns,
    /// How it orders its output.
    pub align: Align,
}

impl Plan {
    fn encode(&self) -> Vec<u8> {
        let w = Writer::new()
            .bytes(MAGIC)
            .u16(PLAN_MARK)
            .u64(self.rows)
            .u8(self.log2_buckets)
            .u8(self.form.trim as u8)
            .u8(self.form.lowercase as u8)
            .u16(self.form.columns)
            .u8(self.form.any as u8)
            .u8(self.align as u8);
        self.columns.encode(w).0
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
        let (key_columns, any) = (r.u16()?, flag(r.u8()?)?);
        let align = match r.u8()? {
            0 => Align::None,
            1 => Align::Inner,
            2 => Align::Outer,
            b => {
                return Err(Error::Handshake(format!(
                    "the peer's run plan aligns its output as {b}"
                )))
            }
        };
        let columns = Columns::decode(&mut r)?;
        r.finish()?;
        if key_columns == 0 {
            return Err(Error::Handshake("the peer's keys have no columns".into()));
        }
        let plan = Plan {
            rows,
            log2_buckets,
            form: KeyForm {
                trim,
                lowercase,
                columns: key_columns,
                any,
            },
            columns,
            align,
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

    /// The width of the sender's records and of the receiver's (each `None` where that
    /// party reveals no columns), for this party of role `role`.
    pub fn record_widths(&self, role: Role) -> (Option<u32>, Option<u32>) {
        let (ours, peer) = (
            Columns::record_width(&self.ours.columns.reveals),
            Columns::record_width(&self.peer.columns.reveals),
        );
        match role {
            Role::Sender => (ours, peer),
            Role::Receiver => (peer, ours),
        }
    }

    /// The most the peer's records of `rows` of its rows take in memory (a tag and a
    /// record a row; nothing if it reveals no columns): what a run, or a bucket's session
    /// for its share, counts against --max-memory beside its input.
    pub fn peer_records_memory(&self, rows: u64) -> u64 {
        Columns::record_width(&self.peer.columns.reveals)
            .map_or(0, |width| rows.saturating_mul(width as u64 + 32))
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
    let frame = chan.recv(MAX_PLAN_BYTES).map_err(|e| match e {
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
    check_columns(&ours.columns, &peer.columns)?;
    if ours.align != peer.align {
        return Err(Error::Handshake(format!(
            "we align our output as --align {} and the peer as --align {}: both pass the same",
            ours.align.name(),
            peer.align.name()
        )));
    }
    let mut warning = None;
    if peer.form != ours.form {
        let why = format!(
            "the parties take their keys differently, so equal keys may not match: ours \
             with {}, the peer's with {} (--trim, --lowercase, the number of --column and \
             --match-any must agree; Python: trim=, lowercase=, match_any=)",
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
        Role::Sender => (&ours, &peer),
        Role::Receiver => (&peer, &ours),
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

/// The longest plan: its fixed part and [`MAX_COLUMNS`] names each way, revealed ones
/// with their widths.
const MAX_PLAN_BYTES: usize = 64 + 2 + MAX_COLUMNS * (1 + MAX_COLUMN_NAME) * 2 + MAX_COLUMNS * 2;

/// Refuses a run where what either party reveals is not what the other asks for, in the
/// same order: a receiver would otherwise take a column under another's name, or a sender
/// reveal what nobody asked for.
fn check_columns(ours: &Columns, peer: &Columns) -> Result<()> {
    let names = |c: &Columns| -> Vec<String> { c.reveals.iter().map(|(n, _)| n.clone()).collect() };
    let list = |names: &[String]| -> String {
        if names.is_empty() {
            return "no columns".into();
        }
        let quoted: Vec<String> = names
            .iter()
            .map(|n| format!("'{}'", n.escape_debug()))
            .collect();
        format!("columns {}", quoted.join(", "))
    };
    let hint = "--reveal-columns on one side must name the columns --peer-columns names on the \
                other, in the same order (Python: reveal_columns= or reveal=, peer_columns=)";
    if names(peer) != ours.asks {
        return Err(Error::Handshake(format!(
            "the peer reveals {} and we ask for {}: {hint}",
            list(&names(peer)),
            list(&ours.asks)
        )));
    }
    if names(ours) != peer.asks {
        return Err(Error::Handshake(format!(
            "we reveal {} and the peer asks for {}: {hint}",
            list(&names(ours)),
            list(&peer.asks)
        )));
    }
    Ok(())
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
                any: true,
            },
            columns: Columns::default(),
            align: Align::Outer,
        };
        assert_eq!(Plan::decode(&plan.encode()).unwrap(), plan);
        // After the magic, the mark and the rows: log2 of the buckets, the two flags,
        // the key's columns, whether any one matches, the alignment.
        let at = MAGIC.len() + 2 + 8;
        for (offset, bad) in [(0, MAX_LOG2_BUCKETS + 1), (1, 2), (2, 7), (5, 2), (6, 3)] {
            let mut frame = plan.encode();
            frame[at + offset] = bad;
            assert!(Plan::decode(&frame).is_err(), "byte {offset} = {bad}");
        }
        let mut none = plan.encode();
        none[at + 3..].fill(0);
        assert!(Plan::decode(&none).is_err(), "no columns");
        let mut huge = Plan {
            rows: MAX_ROWS + 1,
            ..plan.clone()
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

    /// Columns go both ways with their widths; a peer's that could not have been sent is
    /// refused, and so is a run where one side reveals other columns than the other asks
    /// for, on both sides, naming both lists, or where they align their outputs otherwise.
    #[test]
    fn columns_and_alignment_are_carried_and_must_agree() {
        let form = KeyForm {
            trim: false,
            lowercase: false,
            columns: 1,
            any: false,
        };
        let plan = |reveals: &[(&str, u16)], asks: &[&str]| Plan {
            rows: 3,
            log2_buckets: 0,
            form,
            columns: Columns {
                reveals: reveals.iter().map(|(n, w)| (n.to_string(), *w)).collect(),
                asks: asks.iter().map(|n| n.to_string()).collect(),
            },
            align: Align::None,
        };
        let sender = plan(&[("segment", 16), ("score", 32)], &[]);
        assert_eq!(Plan::decode(&sender.encode()).unwrap(), sender);
        assert_eq!(Columns::record_width(&sender.columns.reveals), Some(52));
        assert_eq!(Columns::record_width(&[]), None);
        for bad in [
            plan(&[("x", 0)], &[]),
            plan(&[("", 4)], &[]),
            plan(&[("a", 40_000), ("b", 40_000)], &[]),
        ] {
            assert!(Plan::decode(&bad.encode()).is_err(), "{:?}", bad.columns);
            assert!(Columns::new(bad.columns.reveals, bad.columns.asks).is_err());
        }
        let run = |ours: Plan, peer: Plan| {
            let (mut a, mut b) = crate::net::mem_pair(std::time::Duration::from_secs(5));
            let t = std::thread::spawn(move || {
                exchange(&mut b, peer, Role::Receiver, 100, KeyMismatch::Refuse).map(|_| ())
            });
            let r = exchange(&mut a, ours, Role::Sender, 100, KeyMismatch::Refuse);
            (r.map(|a| a.record_widths(Role::Sender)), t.join().unwrap())
        };
        let (widths, peer) = run(sender.clone(), plan(&[], &["segment", "score"]));
        assert_eq!(widths.unwrap(), (Some(52), None));
        peer.unwrap();
        for asks in [&["score", "segment"][..], &["segment"], &[]] {
            let (ours, peer) = run(sender.clone(), plan(&[], asks));
            let (ours, peer) = (ours.unwrap_err().to_string(), peer.unwrap_err().to_string());
            assert!(
                ours.contains("we reveal columns 'segment', 'score' and the peer asks for"),
                "{ours}"
            );
            assert!(
                peer.contains("the peer reveals columns 'segment', 'score'"),
                "{peer}"
            );
        }
        let mut aligned = plan(&[], &[]);
        aligned.align = Align::Inner;
        let (ours, peer) = run(plan(&[], &[]), aligned);
        let ours = ours.unwrap_err().to_string();
        assert!(
            ours.contains("--align none and the peer as --align inner"),
            "{ours}"
        );
        assert!(peer.is_err(), "refused on both sides");
    }
}
