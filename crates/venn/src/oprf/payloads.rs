//! The sender's payloads over the OPRF (PSI with associated data): each sender item y
//! carries a record of `width` bytes, sent after the answers in the same shuffled order,
//! XORed with a pad only the holder of y's OPRF value F(y) can make. The receiver, which
//! holds F(x) for each of its own items, makes the pads of the items it matched and reads
//! their records; for any other y, F(y) is masked by Δ (the OPRF's security), so the pad,
//! and with it the record, is pseudorandom to it.
//!
//! **The pad.** Block j of item y's pad is a Davies–Meyer hash with the OPRF value in the
//! key, as rr22-m's output hash is (`rr22/malicious.rs`): AES_{F(y) + w_p}(x_y + j) +
//! (x_y + j), with x_y the item's block and w_p the pad key. A separate key from the
//! answers' hash, so the answer the receiver sees for an unmatched y (cut to v bits) says
//! nothing of its pad. w_p is derived from the session alone in the semi-honest run; in
//! rr22-m from the coin-tossed w, which is opened only once the receiver's OKVS is fixed.
//!
//! **The stream.** The answers stay as they are (the receiver's lookup loop untouched);
//! the records follow in frames of about [`FRAME_BYTES`], in the order the answers went.
//! The receiver reads every frame (their number follows from the agreed sizes) and keeps
//! only its matches' records: memory of matches × width, not n_S × width.
//!
//! **The receiver's records** (with `--both`) go the other way in the clear, after the
//! positions or tags that tell the sender its matches, in their order and in frames of the
//! same size: the sender learns those items anyway, and the receiver reveals those rows'
//! columns by choice. It sends nothing of its other items. The sender reads exactly as
//! many records as it was told of matches, a number already bounded by the set sizes.

use crate::crypto::{encrypt_under_keys, Block, RandomOracle};
use crate::framework::Output;
use crate::net::Channel;
use crate::util::memory::{prefetch, prefetch_range};
use crate::{Error, Result};
use rayon::prelude::*;

/// About how many bytes of records go in one frame.
const FRAME_BYTES: usize = 1 << 20;
/// The widest record.
pub(crate) const MAX_WIDTH: usize = crate::options::MAX_RECORD_WIDTH;

/// The key the pads are made under (w_p).
#[derive(Clone, Copy)]
pub(crate) struct PadKey(Block);

impl PadKey {
    /// The semi-honest run's: from the session id alone.
    pub(crate) fn of_session(sid: &[u8; 32]) -> PadKey {
        PadKey(RandomOracle::new("venn/rr22/payload pad key", sid).hash_block(b""))
    }

    /// rr22-m's: from the coin-tossed `w`, which the receiver learns only once its OKVS
    /// is fixed.
    pub(crate) fn of_toss(sid: &[u8; 32], w: Block) -> PadKey {
        PadKey(RandomOracle::new("venn/rr22/payload pad key", sid).hash_block(&w.to_le_bytes()))
    }
}

/// Refuses a record width outside 1..=[`MAX_WIDTH`] (a configuration allows none).
fn check_width(width: usize) -> Result<()> {
    if !(1..=MAX_WIDTH).contains(&width) {
        return Err(Error::protocol(
            format!("records of 1 to {MAX_WIDTH} bytes"),
            format!("{width} bytes"),
        ));
    }
    Ok(())
}

/// Records per frame for records of `width` bytes.
fn per_frame(width: usize) -> usize {
    (FRAME_BYTES / width.max(1)).max(1)
}

/// Pad blocks made by one call of the AES under many keys: enough for its widest lanes.
const PAD_BLOCKS: usize = 256;

/// XORs into each of `records` (`width` bytes each) the pad of its item (`x`, `v`) in
/// `items`: [`PAD_BLOCKS`] blocks at a time through buffers on the stack, whatever the
/// records' width, so that short records share the AES's lanes.
fn xor_pads(key: PadKey, items: &[(Block, Block)], records: &mut [u8], width: usize) {
    let (mut keys, mut inputs, mut pad) = (
        [Block::ZERO; PAD_BLOCKS],
        [Block::ZERO; PAD_BLOCKS],
        [Block::ZERO; PAD_BLOCKS],
    );
    // Where each pad block goes: its record's bytes `at[k].0..at[k].1` (16, or its tail).
    let mut at = [(0usize, 0usize); PAD_BLOCKS];
    let mut k = 0;
    let mut flush =
        |k: usize, keys: &[Block], inputs: &[Block], at: &[(usize, usize)], records: &mut [u8]| {
            encrypt_under_keys(&keys[..k], &inputs[..k], &mut pad[..k]);
            for ((p, i), &(from, to)) in pad[..k].iter().zip(&inputs[..k]).zip(&at[..k]) {
                let p = (*p ^ *i).to_le_bytes();
                records[from..to]
                    .iter_mut()
                    .zip(p)
                    .for_each(|(r, p)| *r ^= p);
            }
        };
    for (r, &(x, v)) in items.iter().enumerate() {
        let end = (r + 1) * width;
        for (j, start) in (r * width..end).step_by(16).enumerate() {
            let to = (start + 16).min(end);
            (keys[k], inputs[k], at[k]) = (v ^ key.0, x ^ Block::from(j as u64), (start, to));
            k += 1;
            if k == PAD_BLOCKS {
                flush(k, &keys, &inputs, &at, records);
                k = 0;
            }
        }
    }
    flush(k, &keys, &inputs, &at, records);
}

/// Records padded by one task of the sender's (on the rayon pool).
const TASK_RECORDS: usize = 1024;

/// How many records ahead of the one copied an item's memory is loaded: the items are
/// read in an order of their own (the sender's in the shuffle's, the receiver's in the
/// stream's), most far from the cache.
const PREFETCH_AHEAD: usize = 16;

/// The sender's side: the record of each own item (`width` bytes each, item by item in
/// `records`), padded under its block `x[i]` and OPRF value `v[i]`, sent in the order
/// `perm` (position → own item) the answers went in.
pub(crate) fn send(
    chan: &mut dyn Channel,
    key: PadKey,
    perm: &[u32],
    x: &[Block],
    v: &[Block],
    records: &[u8],
    width: usize,
) -> Result<()> {
    assert!((1..=MAX_WIDTH).contains(&width) && records.len() == x.len() * width);
    for positions in perm.chunks(per_frame(width)) {
        let mut frame = vec![0u8; positions.len() * width];
        frame
            .par_chunks_mut(TASK_RECORDS * width)
            .zip(positions.par_chunks(TASK_RECORDS))
            .for_each(|(out, positions)| {
                let items: Vec<(Block, Block)> = (positions.iter().enumerate())
                    .zip(out.chunks_mut(width))
                    .map(|((j, &i), out)| {
                        if let Some(&a) = positions.get(j + PREFETCH_AHEAD) {
                            let a = a as usize;
                            prefetch_range(&records[a * width..(a + 1) * width]);
                            prefetch(&x[a]);
                            prefetch(&v[a]);
                        }
                        let i = i as usize;
                        out.copy_from_slice(&records[i * width..(i + 1) * width]);
                        (x[i], v[i])
                    })
                    .collect();
                xor_pads(key, &items, out, width);
            });
        chan.send(&frame)?;
    }
    Ok(())
}

/// The receiver's side: the records of its `matches` — (own entry, sender position), as
/// the answers' lookup returns them — read from the stream of `n_sender` records of
/// `width` bytes and unpadded under its own `x` and `v`; returned match by match.
///
/// A frame's matched records are gathered in stream order and unpadded together, as the
/// sender pads them ([`TASK_RECORDS`] a task, [`PAD_BLOCKS`] blocks a call), then put in
/// their places: one record a call would leave the AES's wide lanes idle.
pub(crate) fn receive(
    chan: &mut dyn Channel,
    key: PadKey,
    n_sender: usize,
    width: usize,
    matches: &[(u32, u32)],
    x: &[Block],
    v: &[Block],
) -> Result<Vec<u8>> {
    check_width(width)?;
    // The matches in stream order: each its sender position over its index among the
    // matches (both below 2^32), so that sorting the words sorts by position.
    let mut wanted: Vec<u64> = (matches.iter().enumerate())
        .map(|(k, m)| (m.1 as u64) << 32 | k as u64)
        .collect();
    wanted.sort_unstable();
    let position = |w: u64| (w >> 32) as usize;
    let index = |w: u64| w as u32 as usize;
    let mut out = vec![0u8; matches.len() * width];
    let (mut next, per) = (0, per_frame(width));
    let (mut frame, mut gathered, mut items) = (Vec::new(), Vec::new(), Vec::new());
    for start in (0..n_sender).step_by(per) {
        let count = (n_sender - start).min(per);
        chan.recv_exact_into(&mut frame, count * width, "payload records")?;
        let end = next + wanted[next..].partition_point(|&w| position(w) < start + count);
        let here = &wanted[next..end];
        gathered.clear();
        items.clear();
        // The own items are in the matches' order, not the stream's: each match's entry
        // is loaded two steps ahead, then its item one step ahead.
        for (j, &w) in here.iter().enumerate() {
            if let Some(&a) = here.get(j + 2 * PREFETCH_AHEAD) {
                prefetch(&matches[index(a)]);
            }
            if let Some(&a) = here.get(j + PREFETCH_AHEAD) {
                let entry = matches[index(a)].0 as usize;
                prefetch(&x[entry]);
                prefetch(&v[entry]);
            }
            let at = (position(w) - start) * width;
            gathered.extend_from_slice(&frame[at..at + width]);
            let entry = matches[index(w)].0 as usize;
            items.push((x[entry], v[entry]));
        }
        gathered
            .par_chunks_mut(TASK_RECORDS * width)
            .zip(items.par_chunks(TASK_RECORDS))
            .for_each(|(records, items)| xor_pads(key, items, records, width));
        for (j, (&w, record)) in here.iter().zip(gathered.chunks(width)).enumerate() {
            if let Some(&a) = here.get(j + PREFETCH_AHEAD) {
                prefetch_range(&out[index(a) * width..(index(a) + 1) * width]);
            }
            let k = index(w);
            out[k * width..(k + 1) * width].copy_from_slice(record);
        }
        next = end;
    }
    Ok(out)
}

/// The receiver's side of its own records: those of its items `entries` (`width` bytes
/// each, item by item in `records`), in that order, in the clear.
pub(crate) fn send_revealed(
    chan: &mut dyn Channel,
    entries: &[usize],
    records: &[u8],
    width: usize,
) -> Result<()> {
    for chunk in entries.chunks(per_frame(width)) {
        let frame: Vec<u8> = (chunk.iter())
            .flat_map(|&e| &records[e * width..(e + 1) * width])
            .copied()
            .collect();
        chan.send(&frame)?;
    }
    Ok(())
}

/// The sender's side: a record of `width` bytes for each of its `matched` items, in the
/// order the receiver named them; the output sorted by item, each with its record.
pub(crate) fn receive_revealed(
    chan: &mut dyn Channel,
    mut matched: Vec<usize>,
    width: usize,
) -> Result<Output> {
    check_width(width)?;
    // Where each record goes: its item's place among the matched items, sorted.
    let mut order: Vec<u32> = (0..matched.len() as u32).collect();
    order.sort_unstable_by_key(|&k| matched[k as usize]);
    let mut place = vec![0u32; matched.len()];
    for (p, &k) in order.iter().enumerate() {
        place[k as usize] = p as u32;
    }
    drop(order);
    matched.sort_unstable();
    let mut records = vec![0u8; matched.len() * width];
    let (mut frame, per) = (Vec::new(), per_frame(width));
    for first in (0..matched.len()).step_by(per) {
        let count = (matched.len() - first).min(per);
        chan.recv_exact_into(&mut frame, count * width, "the receiver's records")?;
        for (record, &p) in frame.chunks_exact(width).zip(&place[first..]) {
            let p = p as usize;
            records[p * width..(p + 1) * width].copy_from_slice(record);
        }
    }
    Ok(Output::Records {
        indices: matched,
        records,
        width,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Prg;
    use crate::net::mem_pair;
    use std::time::Duration;

    /// A sender's items and OPRF values, and records of `width` bytes.
    fn sender(n: usize, width: usize, prg: &mut Prg) -> (Vec<Block>, Vec<Block>, Vec<u8>) {
        let x: Vec<Block> = (0..n).map(|_| prg.block()).collect();
        let v: Vec<Block> = (0..n).map(|_| prg.block()).collect();
        let mut records = vec![0u8; n * width];
        prg.fill_bytes(&mut records);
        (x, v, records)
    }

    #[test]
    fn the_receiver_reads_exactly_its_matches_records() {
        let mut prg = Prg::from_seed(Block::from(7u64));
        for width in [1, 16, 33, 5000] {
            let n = 3 * per_frame(width) + 5;
            let (x, v, records) = sender(n, width, &mut prg);
            let perm = prg.permutation(n);
            // The receiver holds items 2, n-1 and 0 of the sender's (under its own entries
            // 0, 1, 2) and one item it does not share (entry 3, a wrong OPRF value).
            let shared = [2usize, n - 1, 0];
            let mut rx: Vec<Block> = shared.iter().map(|&i| x[i]).collect();
            let mut rv: Vec<Block> = shared.iter().map(|&i| v[i]).collect();
            rx.push(x[1]);
            rv.push(v[1] ^ Block::ONE);
            let position = |i: usize| perm.iter().position(|&p| p as usize == i).unwrap() as u32;
            let matches: Vec<(u32, u32)> = (0..4)
                .map(|e| (e as u32, position(if e < 3 { shared[e] } else { 1 })))
                .collect();
            let (mut a, mut b) = mem_pair(Duration::from_secs(10));
            let key = PadKey::of_session(&[1; 32]);
            send(&mut a, key, &perm, &x, &v, &records, width).unwrap();
            let got = receive(&mut b, key, n, width, &matches, &rx, &rv).unwrap();
            for (e, &i) in shared.iter().enumerate() {
                assert_eq!(
                    &got[e * width..(e + 1) * width],
                    &records[i * width..(i + 1) * width]
                );
            }
            assert_ne!(
                &got[3 * width..],
                &records[width..2 * width],
                "a wrong F(y) reads nothing"
            );
        }
    }

    /// Many matches, several frames' worth and more than a task's in each frame, in an
    /// order of their own (the receiver's entries, not the stream's): each match gets its
    /// own record, unpadded in the batches the receiver gathers.
    #[test]
    fn the_receiver_reads_many_matches_across_frames_and_tasks() {
        let mut prg = Prg::from_seed(Block::from(13u64));
        let width = 36;
        let n = 2 * per_frame(width) + 3 * TASK_RECORDS + 7;
        let (x, v, records) = sender(n, width, &mut prg);
        let perm = prg.permutation(n);
        let mut position = vec![0u32; n];
        for (p, &i) in perm.iter().enumerate() {
            position[i as usize] = p as u32;
        }
        // The receiver's entry e holds the sender's item shared[e]: every third item, in
        // an order unrelated to the stream's, and one item twice.
        let mut shared: Vec<usize> = (0..n).step_by(3).collect();
        let order = prg.permutation(shared.len());
        shared = order.iter().map(|&o| shared[o as usize]).collect();
        shared.push(shared[5]);
        let (rx, rv): (Vec<Block>, Vec<Block>) = shared.iter().map(|&i| (x[i], v[i])).unzip();
        let matches: Vec<(u32, u32)> = (shared.iter().enumerate())
            .map(|(e, &i)| (e as u32, position[i]))
            .collect();
        let (mut a, mut b) = mem_pair(Duration::from_secs(10));
        let key = PadKey::of_session(&[4; 32]);
        send(&mut a, key, &perm, &x, &v, &records, width).unwrap();
        let got = receive(&mut b, key, n, width, &matches, &rx, &rv).unwrap();
        assert_eq!(got.len(), shared.len() * width);
        for (e, &i) in shared.iter().enumerate() {
            assert_eq!(
                &got[e * width..(e + 1) * width],
                &records[i * width..(i + 1) * width],
                "entry {e}, item {i}"
            );
        }
    }

    /// Under a wrong OPRF value the record a receiver reads is the record XOR a pad it
    /// cannot make: over many records its bits are balanced whatever the records hold
    /// (all zero here), and its bytes spread evenly.
    #[test]
    fn records_read_under_a_wrong_oprf_value_are_balanced_noise() {
        let mut prg = Prg::from_seed(Block::from(11u64));
        let (n, width) = (4096, 32);
        let (x, v, _) = sender(n, width, &mut prg);
        let records = vec![0u8; n * width];
        let perm: Vec<u32> = (0..n as u32).collect();
        let wrong: Vec<Block> = v.iter().map(|v| *v ^ Block::from(1u64 << 40)).collect();
        let matches: Vec<(u32, u32)> = (0..n as u32).map(|i| (i, i)).collect();
        let (mut a, mut b) = mem_pair(Duration::from_secs(10));
        let key = PadKey::of_session(&[2; 32]);
        send(&mut a, key, &perm, &x, &v, &records, width).unwrap();
        let got = receive(&mut b, key, n, width, &matches, &x, &wrong).unwrap();
        let ones: u64 = got.iter().map(|b| b.count_ones() as u64).sum();
        let bits = (got.len() * 8) as f64;
        // Binomial(bits, 1/2): 6 standard deviations.
        assert!(
            (ones as f64 - bits / 2.0).abs() < 6.0 * (bits / 4.0).sqrt(),
            "{ones} of {bits}"
        );
        let mut counts = [0u64; 256];
        got.iter().for_each(|&b| counts[b as usize] += 1);
        let expected = got.len() as f64 / 256.0;
        let chi2: f64 = counts
            .iter()
            .map(|&c| (c as f64 - expected).powi(2) / expected)
            .sum();
        // 255 degrees of freedom: the 1 - 10^-6 quantile is about 370.
        assert!(chi2 < 370.0, "chi-square {chi2}");
    }

    /// The receiver's records reach the sender by item, whatever the order it names them
    /// in, over several frames.
    #[test]
    fn the_sender_gets_the_receivers_records_by_its_own_items() {
        let mut prg = Prg::from_seed(Block::from(13u64));
        for width in [1, 48, 5000] {
            let n = 2 * per_frame(width) + 3;
            let mut records = vec![0u8; n * width];
            prg.fill_bytes(&mut records);
            // The receiver's matched entries, in its order, and the sender's item 3e + 1
            // for its entry e; one entry unmatched.
            let entries: Vec<usize> = prg.permutation(n)[1..]
                .iter()
                .map(|&e| e as usize)
                .collect();
            let matched = entries.iter().map(|&e| 3 * e + 1).collect();
            let (mut a, mut b) = mem_pair(Duration::from_secs(10));
            send_revealed(&mut a, &entries, &records, width).unwrap();
            let Output::Records {
                indices,
                records: got,
                width: w,
            } = receive_revealed(&mut b, matched, width).unwrap()
            else {
                panic!("records")
            };
            assert_eq!((indices.len(), w), (n - 1, width));
            assert!(indices.is_sorted());
            for (k, &i) in indices.iter().enumerate() {
                let e = (i - 1) / 3;
                assert_eq!(
                    &got[k * width..(k + 1) * width],
                    &records[e * width..(e + 1) * width]
                );
            }
        }
    }

    #[test]
    fn a_width_out_of_range_is_refused_before_anything_is_read() {
        let (_a, mut b) = mem_pair(Duration::from_secs(1));
        let key = PadKey::of_session(&[3; 32]);
        for width in [0, MAX_WIDTH + 1] {
            let err = receive(&mut b, key, 10, width, &[], &[], &[]).unwrap_err();
            assert!(err.to_string().contains("records of 1 to"), "{err}");
            let err = receive_revealed(&mut b, vec![1, 2], width).unwrap_err();
            assert!(err.to_string().contains("records of 1 to"), "{err}");
        }
    }
}
