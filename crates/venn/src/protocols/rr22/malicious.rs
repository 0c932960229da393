//! What `rr22-m`'s online phase adds against malicious parties (RR22 §4 "Malicious
//! instantiation", after Rindal–Schoppmann, Eurocrypt 2021, §5; rr22.md §1.2–1.3):
//!
//! - **A coin-tossed output key.** S commits to w_S before it sees anything of R's; R sends
//!   w_R right after A'; S opens only once A' is in (volePSI opens as soon as w_R arrives,
//!   which lets an asynchronous R learn w before fixing P — the point of w is that P is
//!   fixed first). The toss gives two blocks: w, and w_τ for the tags below.
//! - **The output hash** H^o(v, x) = AES_{v+w}(x) + x, Davies–Meyer with the OPRF value in
//!   the key and the item as input, so that each answer names one item (the simulator
//!   extracts S's set from its queries), and whole: 128 bits on the wire, since a
//!   truncated answer could match several of a cheating S's queries.
//! - **`--both` by tags** (rr22.md §1.3): R sends, in a random order, the tag
//!   τ(x) = AES_{v_x+w_τ}(x) + x of each x it output; S accepts exactly the tags equal to
//!   some τ(y) of its own. A tag needs the OPRF value, so R cannot add an item it did not
//!   learn; it can withhold some (selective delivery, which no protocol without fairness
//!   prevents). Never tags for all of X: S holds the OPRF key and could test them against
//!   guesses.

use super::super::matching::{match_values, send_permuted};
use super::super::{Context, Output};
use crate::crypto::{encrypt_under_keys, Block};
use crate::net::{Reader, Writer};
use crate::oprf::payloads::PadKey;
use crate::session::{CoinToss, CoinTossReply};
use crate::tables::MatchTable;
use crate::{Error, Result};
use rayon::prelude::*;

/// The toss's label (its commitment and value are bound to it and to the session).
const W_TOSS: &str = "rr22-m output key w";

/// S's first message of its online phase: its commitment to its share of w, and a fresh
/// salt for H^B and the OKVS's rows ([`super::overfitting`]); returns both.
pub(super) fn commit(ctx: &mut Context) -> Result<(CoinToss, Block)> {
    let toss = CoinToss::commit(ctx.peer, &ctx.session.id, W_TOSS, &mut ctx.prg)?;
    let salt = ctx.prg.block();
    ctx.peer.send_blocks(&[salt])?;
    Ok((toss, salt))
}

/// R takes S's commitment and salt (before it draws its OKVS seed and sends A').
pub(super) fn reply(ctx: &mut Context) -> Result<(CoinTossReply, Block)> {
    let toss = CoinTossReply::receive(ctx.peer, &ctx.session.id, W_TOSS)?;
    let mut salt = Vec::new();
    ctx.peer.recv_blocks(1, &mut salt, "the sender's salt")?;
    Ok((toss, salt[0]))
}

/// `AES_{v_i + w}(x_i) + x_i` for each i, on the rayon pool (the AES under many keys of
/// [`encrypt_under_keys`]).
fn davies_meyer(w: Block, x: &[Block], v: &[Block]) -> Vec<Block> {
    const CHUNK: usize = 256;
    let mut out = vec![Block::ZERO; x.len()];
    out.par_chunks_mut(CHUNK)
        .zip(x.par_chunks(CHUNK).zip(v.par_chunks(CHUNK)))
        .for_each(|(out, (x, v))| {
            let mut keys = [Block::ZERO; CHUNK];
            let keys = &mut keys[..x.len()];
            keys.iter_mut().zip(v).for_each(|(k, v)| *k = v ^ w);
            encrypt_under_keys(keys, x, out);
            out.iter_mut().zip(x).for_each(|(o, x)| *o ^= x);
        });
    out
}

/// S's answers H^o(v_y, y) for its item keys `x` and OPRF values `v`, shuffled, and its
/// `records` (of their width) after them, padded under a key from w; with `--both`, R's
/// tags checked against its own, and R's records of `theirs` bytes after them if any.
pub(super) fn send(
    ctx: &mut Context,
    w: [Block; 2],
    x: &[Block],
    v: &[Block],
    (records, theirs): (Option<super::Own>, Option<u32>),
) -> Result<Output> {
    let answers = davies_meyer(w[0], x, v);
    ctx.phase("send values", false);
    let perm = send_permuted(ctx, &answers, 128)?;
    if let Some(own) = records {
        let key = PadKey::of_toss(&ctx.session.id, w[0]);
        super::send_records(ctx, key, &perm, (x, v), own)?;
    }
    if !ctx.session.both {
        return Ok(Output::Nothing);
    }
    ctx.phase("receive intersection", false);
    let tags = davies_meyer(w[1], x, v);
    let matched = receive_tags(ctx, &tags)?;
    super::sender_with_records(ctx, matched, theirs)
}

/// R's output: its items whose H^o(v_x, x) S sent, with their records where S sends records
/// of `width` bytes; with `--both`, their tags sent back, and then its `own` records of
/// them if it has any.
pub(super) fn receive(
    ctx: &mut Context,
    w: [Block; 2],
    x: &[Block],
    v: &[Block],
    (width, own): (Option<usize>, Option<super::Own>),
) -> Result<Output> {
    let answers = davies_meyer(w[0], x, v);
    let matches = match_values(ctx, &answers, 128)?;
    let key = PadKey::of_toss(&ctx.session.id, w[0]);
    let records = super::receive_records(ctx, key, width, &matches, (x, v))?;
    let mine: Vec<usize> = matches.iter().map(|m| m.0 as usize).collect();
    if ctx.session.both {
        ctx.phase("send intersection", false);
        // The tags in a random order, and the records after them in the same.
        let mut order = mine.clone();
        ctx.prg.shuffle(&mut order);
        let (xs, vs): (Vec<Block>, Vec<Block>) = order.iter().map(|&i| (x[i], v[i])).unzip();
        let tags = davies_meyer(w[1], &xs, &vs);
        ctx.peer.send(&Writer::new().u64(tags.len() as u64).0)?;
        ctx.peer.send_blocks(&tags)?;
        super::send_own_records(ctx, own, &order)?;
    }
    Ok(super::with_records(mine, records))
}

/// S's side of `--both`: R's tags, each of which must be the tag of a distinct own item
/// (an honest R sends no other); returns those items, in the order of the tags.
fn receive_tags(ctx: &mut Context, own: &[Block]) -> Result<Vec<usize>> {
    let msg = ctx.peer.recv_exact(8, "intersection size")?;
    let mut r = Reader::new(&msg, "intersection size");
    let count = r.u64()?;
    r.finish()?;
    let bound = own.len().min(ctx.session.n_receiver as usize) as u64;
    if count > bound {
        return Err(Error::protocol(
            format!("an intersection of at most {bound} items"),
            format!("{count} items"),
        ));
    }
    let table = MatchTable::build(own.len(), own.len(), |i| (own[i], 0, i as u32));
    let mut tags = Vec::new();
    ctx.peer
        .recv_blocks(count as usize, &mut tags, "intersection tags")?;
    let mut seen = vec![false; own.len()];
    let mut out = Vec::with_capacity(tags.len());
    for t in tags {
        match table.find(t, 0) {
            Some(i) if !std::mem::replace(&mut seen[i as usize], true) => out.push(i as usize),
            _ => {
                return Err(Error::CheatingDetected(
                    "the receiver sent an intersection tag of no item of ours, or one twice".into(),
                ))
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::{Evaluated, Rr22Params, Rr22Receiver, Rr22Sender};
    use super::*;
    use crate::crypto::{Aes, Prg};
    use crate::framework::Party;
    use crate::items::Items;
    use crate::net::mem_pair;
    use crate::oprf::{payloads, Hashes};
    use crate::options::Options;
    use crate::session::{Role, Session, Sizes};
    use crate::vole::Adversary;
    use std::collections::HashSet;
    use std::time::Duration;

    const SID: [u8; 32] = [9; 32];
    const WIDTH: usize = 40;

    /// The record the sender gives `item`: its bytes over and over.
    fn record(item: &[u8]) -> Vec<u8> {
        item.iter().copied().cycle().take(WIDTH).collect()
    }

    /// The record of `item`'s second row: its bytes reversed, over and over.
    fn second_record(item: &[u8]) -> Vec<u8> {
        item.iter().rev().copied().cycle().take(WIDTH).collect()
    }

    fn items(tag: &str, range: std::ops::Range<usize>) -> Vec<String> {
        range.map(|i| format!("{tag}{i}")).collect()
    }

    /// What a cheating receiver got: the entries of its items whose answers it matched,
    /// those whose sender record it read at some position of the stream, and those whose
    /// second row's record it found among the repeated rows.
    #[derive(Debug, PartialEq)]
    struct Learned {
        answered: Vec<usize>,
        read: Vec<usize>,
        second: Vec<usize>,
    }

    /// The honest rr22-m sender of `sender` against a receiver of `receiver` that applies
    /// `then` to the values its OKVS encodes, then unpads every record of the stream
    /// under every one of its keys and OPRF values, not only at its matches.
    fn cheat(
        sender: &Items,
        receiver: &Items,
        then: impl Fn(&[Block], &mut [Block]) + Send + Sync,
    ) -> Learned {
        let (n_s, n_r) = (sender.len(), receiver.len());
        let session = |role| Session {
            id: SID,
            role,
            n_sender: n_s as u64,
            n_receiver: n_r as u64,
            sized: Sizes {
                sender: n_s as u64,
                receiver: n_r as u64,
            },
            both: false,
            options: Options {
                payload: Some(WIDTH as u32),
                ..Options::default()
            },
            key: [0; 32],
        };
        // Each party on a pool of its own, as `run` gives it.
        let pool = || rayon::ThreadPoolBuilder::new().num_threads(1).build();
        let (mut a, mut b) = mem_pair(Duration::from_secs(30));
        std::thread::scope(|s| {
            let honest = s.spawn(|| {
                pool().unwrap().install(|| {
                    let seed = Prg::from_seed(Block::from(1));
                    let mut ctx = Context::new(&mut a, session(Role::Sender), seed, None);
                    let party = Rr22Sender(Adversary::Malicious);
                    let state = Party::offline(&party, &mut ctx)?;
                    Party::online(&party, &mut ctx, state, sender)
                })
            });
            let learned = pool().unwrap().install(|| -> Result<Learned> {
                let seed = Prg::from_seed(Block::from(2));
                let mut ctx = Context::new(&mut b, session(Role::Receiver), seed, None);
                let party = Rr22Receiver(Adversary::Malicious);
                let p = Rr22Params::new(ctx.session.sized, Adversary::Malicious)?;
                let state = Party::offline(&party, &mut ctx)?;
                let Evaluated {
                    keys, values, toss, ..
                } = party.evaluate(&mut ctx, &p, state, receiver, then)?;
                let w = toss.expect("rr22-m tosses w").receive_opening(ctx.peer)?;
                let answers = davies_meyer(w[0], &keys, &values);
                let matches = match_values(&mut ctx, &answers, 128)?;
                let every: Vec<(u32, u32)> = (0..n_r as u32)
                    .flat_map(|k| (0..n_s as u32).map(move |p| (k, p)))
                    .collect();
                let key = PadKey::of_toss(&SID, w[0]);
                let stream = payloads::receive(ctx.peer, key, n_s, WIDTH, &every, &keys, &values)?;
                let read = (0..n_r)
                    .filter(|&k| {
                        let mine = &stream[k * n_s * WIDTH..(k + 1) * n_s * WIDTH];
                        mine.chunks(WIDTH).any(|r| r == record(receiver.get(k)))
                    })
                    .collect();
                // Every own item's rows looked for, matched or not.
                let all: Vec<(u32, u32)> = (0..n_r as u32).map(|k| (k, 0)).collect();
                let (most, n) = (u64::MAX, n_r as u64);
                let rows = (keys.as_slice(), values.as_slice());
                let later = payloads::receive_repeats(ctx.peer, key, most, n, WIDTH, &all, rows)?;
                let mut at = later.records.chunks(WIDTH);
                let second = (0..n_r)
                    .filter(|&k| {
                        let found: Vec<&[u8]> =
                            at.by_ref().take(later.counts[k] as usize).collect();
                        found.contains(&&second_record(receiver.get(k))[..])
                    })
                    .collect();
                let answered = matches.iter().map(|m| m.0 as usize).collect();
                Ok(Learned {
                    answered,
                    read,
                    second,
                })
            });
            let sent = honest.join().unwrap();
            assert!(matches!(sent, Ok(Output::Nothing)), "{sent:?}");
            learned.unwrap()
        })
    }

    /// A cheating rr22-m receiver reads a sender's record only where its answer matches,
    /// whatever its OKVS encodes: each record's pad needs the item's OPRF value, which Δ
    /// masks wherever the OKVS does not decode to H^B. Its honest set holds 100 of the
    /// sender's 400 items and 50 others; beside them it encodes 50 more of the sender's
    /// items as a receiver holding them would (what a larger set, up to m items, gets in
    /// any case) and, at 100 more of them, values that are not H^B's (another hash of
    /// the item). Every other sender item has a second row, whose record it finds exactly
    /// for the even items among its answers. Then an OKVS of nothing but such values: no
    /// answer, no record, no second row.
    #[test]
    fn a_cheating_receiver_reads_no_record_beyond_its_answers() {
        let sender: Items = (items("y", 0..400).into_iter())
            .chain((0..400).step_by(2).map(|i| format!("y{i}")))
            .collect();
        let records = (0..sender.len())
            .flat_map(|i| match i < 400 {
                true => record(sender.get(i)),
                false => second_record(sender.get(i)),
            })
            .collect();
        let mut sender = sender.with_records(records, WIDTH).unwrap();
        sender.deduplicate();
        // Entries 0..100 shared, 100..150 its own, 150..250 garbage, 250..300 extra.
        let receiver: Items = (items("y", 0..100).into_iter())
            .chain(items("x", 0..50))
            .chain(items("y", 100..250))
            .collect();
        let garbage: Items = items("y", 100..200).into_iter().collect();
        let garbage: HashSet<Block> = Hashes::new(&SID, None).keys(&garbage).into_iter().collect();
        let other = Aes::new(Block::from(0x0bad_c0de));
        let learned = cheat(&sender, &receiver, |keys, values| {
            for (k, v) in keys.iter().zip(values) {
                if garbage.contains(k) {
                    *v = other.encrypt(*k);
                }
            }
        });
        let encoded: Vec<usize> = (0..100).chain(250..300).collect();
        // Entry e holds y_e (e < 100) or y_(e - 50) (e >= 150): even items have two rows.
        let second = encoded.iter().copied().filter(|e| e % 2 == 0).collect();
        assert_eq!(
            learned,
            Learned {
                answered: encoded.clone(),
                read: encoded,
                second,
            }
        );
        let learned = cheat(&sender, &receiver, |keys, values| {
            Hashes::hash_to(&other, keys, values)
        });
        let nothing = Learned {
            answered: vec![],
            read: vec![],
            second: vec![],
        };
        assert_eq!(learned, nothing, "a garbage OKVS reads no record at all");
    }
}
