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
//! **Repeated keys' later rows** ([`send_repeats`]): an item y whose key has several rows
//! carries its first row's record as above, and each later row r = 1, 2, … goes after all
//! the records as a tag and a record, shuffled among all items' later rows. Both are made
//! like the first row's pad, under the item block x_y ⊕ r·2^32 (a record's block indices
//! stay below 2^12, so the rows' pad inputs never meet): the record's pad from block
//! indices 0, 1, …, the tag from block index 2^32 − 1, which no record reaches. The
//! receiver makes the tags of rows 1, 2, … of each item it matched until one is absent,
//! and reads those rows' records; for any other y the tags and records are pseudorandom
//! to it, as the first row's pad is. What it learns beyond the records of its matches is
//! the number of later rows in all (sent first), which is the sender's rows less its
//! items, and for each matched item its number of rows.
//!
//! **The receiver's records** (with `--both`) go the other way in the clear, after the
//! positions or tags that tell the sender its matches, in their order and in frames of the
//! same size: the sender learns those items anyway, and the receiver reveals those rows'
//! columns by choice. It sends nothing of its other items. The sender reads exactly as
//! many records as it was told of matches, a number already bounded by the set sizes.

use crate::crypto::{encrypt_under_keys, Block, Prg, RandomOracle};
use crate::framework::{Output, PadSeeds};
use crate::net::{Channel, Reader, Writer};
use crate::util::groups::Groups;
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

    /// The key of pads made from [`PadSeeds`], whose OPRF values have their run's key
    /// folded in (the pads XOR the key into the value, so the two make the same pads).
    pub(crate) const FOLDED: PadKey = PadKey(Block::ZERO);

    /// The pad seeds of the items with blocks `x` and OPRF values `v` under this key.
    pub(crate) fn seeds(self, x: &[Block], v: &[Block]) -> PadSeeds {
        PadSeeds::new(self.0, x, v)
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

/// The block index of a later row's tag: one no record's pad reaches.
const TAG_BLOCK: u64 = u32::MAX as u64;

/// Item block `x` as row `rank` of its key uses it (row 0: the item's own record).
fn row_block(x: Block, rank: u32) -> Block {
    x ^ Block::from((rank as u64) << 32)
}

/// The statistical security parameter the tags' length is set for.
const LAMBDA: u32 = 40;

/// Bytes of a later row's tag when there are `repeats` of them and `n_receiver` receiver
/// items: the receiver looks up at most one more tag than it finds for each item, so at
/// most `n_receiver + repeats` lookups among `repeats` tags, each false with probability
/// 2^-8t: t bytes hold λ + log2 of both.
fn tag_bytes(repeats: u64, n_receiver: u64) -> usize {
    let log2 = |n: u64| 64 - n.leading_zeros();
    let bits = LAMBDA + log2(repeats) + log2(n_receiver.saturating_add(repeats));
    (bits.div_ceil(8) as usize).min(16)
}

/// The tags of `items` (each its row's block and the OPRF value): a Davies–Meyer hash as
/// the pads', at [`TAG_BLOCK`].
fn tags(key: PadKey, items: &[(Block, Block)]) -> Vec<Block> {
    let mut out = vec![Block::ZERO; items.len()];
    out.par_chunks_mut(PAD_BLOCKS)
        .zip(items.par_chunks(PAD_BLOCKS))
        .for_each(|(out, items)| {
            let keys: Vec<Block> = items.iter().map(|&(_, v)| v ^ key.0).collect();
            let inputs: Vec<Block> = (items.iter())
                .map(|&(x, _)| x ^ Block::from(TAG_BLOCK))
                .collect();
            encrypt_under_keys(&keys, &inputs, out);
            out.iter_mut().zip(&inputs).for_each(|(o, i)| *o ^= *i);
        });
    out
}

/// The sender's side of its repeated keys' later rows: `of[e]`, the own item row `e`
/// belongs to, and its record (`width` bytes each, in `records`), in the order the rows
/// came (so row r of an item is its r-th entry in `of`). Their number, then their tags
/// in a random order, then their padded records in the same order.
pub(crate) fn send_repeats(
    chan: &mut dyn Channel,
    key: PadKey,
    prg: &mut Prg,
    (x, v): (&[Block], &[Block]),
    (of, records): (&[u32], &[u8]),
    width: usize,
    n_receiver: u64,
) -> Result<()> {
    assert!((1..=MAX_WIDTH).contains(&width) && records.len() == of.len() * width);
    chan.send(&Writer::new().u64(of.len() as u64).0)?;
    if of.is_empty() {
        return Ok(());
    }
    let mut rank = vec![0u32; x.len()];
    let rows: Vec<(Block, Block)> = (of.iter())
        .map(|&i| {
            let i = i as usize;
            rank[i] += 1;
            (row_block(x[i], rank[i]), v[i])
        })
        .collect();
    drop(rank);
    let perm = prg.permutation(of.len());
    let rows: Vec<(Block, Block)> = perm.iter().map(|&e| rows[e as usize]).collect();
    let t = tag_bytes(of.len() as u64, n_receiver);
    for chunk in rows.chunks(per_frame(t)) {
        let frame: Vec<u8> = (tags(key, chunk).iter())
            .flat_map(|tag| tag.to_le_bytes().into_iter().take(t))
            .collect();
        chan.send(&frame)?;
    }
    for (positions, rows) in perm
        .chunks(per_frame(width))
        .zip(rows.chunks(per_frame(width)))
    {
        let mut frame: Vec<u8> = (positions.iter())
            .flat_map(|&e| &records[e as usize * width..(e as usize + 1) * width])
            .copied()
            .collect();
        frame
            .par_chunks_mut(TASK_RECORDS * width)
            .zip(rows.par_chunks(TASK_RECORDS))
            .for_each(|(out, rows)| xor_pads(key, rows, out, width));
        chan.send(&frame)?;
    }
    Ok(())
}

/// The later rows' records the receiver read: for each of its matches, how many, and the
/// records match by match, each match's in the sender's row order.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Repeated {
    /// For each match, its later rows' number.
    pub counts: Vec<u32>,
    /// Their records, `width` bytes each.
    pub records: Vec<u8>,
}

/// The receiver's side of [`send_repeats`]: the later rows of the items of its `matches`
/// (own entry, sender position), found by their tags under its own `x` and `v`. The
/// sender's number of later rows is refused past `most` before anything is allocated for
/// them.
pub(crate) fn receive_repeats(
    chan: &mut dyn Channel,
    key: PadKey,
    most: u64,
    n_receiver: u64,
    width: usize,
    matches: &[(u32, u32)],
    (x, v): (&[Block], &[Block]),
) -> Result<Repeated> {
    check_width(width)?;
    let repeats = recv_repeats_count(chan, most)?;
    let mut out = Repeated {
        counts: vec![0; matches.len()],
        records: Vec::new(),
    };
    if repeats == 0 {
        return Ok(out);
    }
    let n = repeats as usize;
    let t = tag_bytes(repeats, n_receiver);
    // Each tag's first 8 bytes with its position, sorted; the whole tags beside.
    let (mut all, mut sorted, mut frame) = (Vec::with_capacity(n * t), Vec::new(), Vec::new());
    for first in (0..n).step_by(per_frame(t)) {
        let count = (n - first).min(per_frame(t));
        chan.recv_exact_into(&mut frame, count * t, "repeated rows' tags")?;
        all.extend_from_slice(&frame);
    }
    sorted.extend((all.chunks_exact(t).enumerate()).map(|(p, tag)| (prefix(tag), p as u32)));
    sorted.sort_unstable();
    let directory = Directory::new(&sorted, t);
    let find = |tag: &Block| -> Option<u32> {
        let tag = &tag.to_le_bytes()[..t];
        let k = prefix(tag);
        let range = &sorted[directory.range(k)];
        let from = range.partition_point(|&(j, _)| j < k);
        (range[from..].iter())
            .take_while(|&&(j, _)| j == k)
            .find(|&&(_, p)| &all[p as usize * t..(p as usize + 1) * t] == tag)
            .map(|&(_, p)| p)
    };
    // Rows 1, 2, … of every match, a round a row, until each misses one: at most one
    // tag found a row, and a row's tag is found for at most one (match, rank).
    let mut found: Vec<(u32, u32, u32)> = Vec::new(); // (position, match, rank)
    let mut pending: Vec<u32> = (0..matches.len() as u32).collect();
    let mut rank = 1u32;
    while !pending.is_empty() && (rank as u64) <= repeats {
        let rows: Vec<(Block, Block)> = (pending.iter())
            .map(|&k| {
                let e = matches[k as usize].0 as usize;
                (row_block(x[e], rank), v[e])
            })
            .collect();
        let row_tags = tags(key, &rows);
        let hits: Vec<Option<u32>> = row_tags.par_iter().with_min_len(1024).map(find).collect();
        pending = (pending.iter().zip(hits))
            .filter_map(|(&k, hit)| {
                let p = hit?;
                found.push((p, k, rank));
                Some(k)
            })
            .collect();
        rank += 1;
    }
    drop((all, sorted));
    found.sort_unstable();
    // The records, kept where found, unpadded a frame's worth together.
    let mut got = vec![0u8; found.len() * width];
    let (mut next, per) = (0, per_frame(width));
    for start in (0..n).step_by(per) {
        let count = (n - start).min(per);
        chan.recv_exact_into(&mut frame, count * width, "repeated rows' records")?;
        let end = next + found[next..].partition_point(|f| (f.0 as usize) < start + count);
        let rows: Vec<(Block, Block)> = (found[next..end].iter())
            .map(|&(_, k, rank)| {
                let e = matches[k as usize].0 as usize;
                (row_block(x[e], rank), v[e])
            })
            .collect();
        let records = &mut got[next * width..end * width];
        for (record, f) in records.chunks_mut(width).zip(&found[next..end]) {
            let at = (f.0 as usize - start) * width;
            record.copy_from_slice(&frame[at..at + width]);
        }
        records
            .par_chunks_mut(TASK_RECORDS * width)
            .zip(rows.par_chunks(TASK_RECORDS))
            .for_each(|(records, rows)| xor_pads(key, rows, records, width));
        next = end;
    }
    // Match by match, each in row order.
    let mut order: Vec<usize> = (0..found.len()).collect();
    order.sort_unstable_by_key(|&f| (found[f].1, found[f].2));
    out.records.reserve_exact(found.len() * width);
    for f in order {
        out.counts[found[f].1 as usize] += 1;
        out.records
            .extend_from_slice(&got[f * width..(f + 1) * width]);
    }
    Ok(out)
}

/// The peer's number of repeated rows, refused past `most` (the rows it may bring less
/// its items).
fn recv_repeats_count(chan: &mut dyn Channel, most: u64) -> Result<u64> {
    let msg = chan.recv_exact(8, "the number of repeated rows")?;
    let mut r = Reader::new(&msg, "the number of repeated rows");
    let count = r.u64()?;
    r.finish()?;
    if count > most {
        return Err(Error::protocol(
            format!("at most {most} repeated rows (the peer's rows less its items)"),
            format!("{count} rows"),
        ));
    }
    Ok(count)
}

/// Where in the sorted tag prefixes each run of leading bits starts: a lookup searches
/// only its run (one or two entries for pseudorandom tags, against a search of the whole
/// array's cache lines), and never more than the whole array's binary search, however a
/// cheating sender chose its tags.
struct Directory {
    starts: Vec<u32>,
    shift: u32,
}

impl Directory {
    /// The directory of `sorted` prefixes of `t`-byte tags: about one run per tag.
    fn new(sorted: &[(u64, u32)], t: usize) -> Self {
        let width = 8 * t.min(8) as u32;
        let bits = (sorted.len().max(2).ilog2()).min(width).min(30);
        let shift = width - bits;
        let mut starts = vec![0u32; (1 << bits) + 1];
        sorted
            .iter()
            .for_each(|&(k, _)| starts[(k >> shift) as usize + 1] += 1);
        (1..starts.len()).for_each(|b| starts[b] += starts[b - 1]);
        Directory { starts, shift }
    }

    /// The indices of the sorted prefixes whose leading bits are `k`'s.
    fn range(&self, k: u64) -> std::ops::Range<usize> {
        let b = (k >> self.shift) as usize;
        self.starts[b] as usize..self.starts[b + 1] as usize
    }
}

/// A tag's first (up to) 8 bytes as a number, for sorting and searching.
fn prefix(tag: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = tag.len().min(8);
    b[..n].copy_from_slice(&tag[..n]);
    u64::from_le_bytes(b)
}

/// The receiver's side of its own records: those of its items `entries` (`width` bytes
/// each, item by item in `records`), in that order, in the clear; then the number of their
/// later rows in all (`repeats`: the item each belongs to and its record, in row order,
/// as [`crate::Items::repeated_records`] gives them), and if any, each entry's number of
/// them and their records entry by entry.
pub(crate) fn send_revealed(
    chan: &mut dyn Channel,
    entries: &[usize],
    (records, width): (&[u8], usize),
    (of, repeats): (&[u32], &[u8]),
) -> Result<()> {
    for chunk in entries.chunks(per_frame(width)) {
        let frame: Vec<u8> = (chunk.iter())
            .flat_map(|&e| &records[e * width..(e + 1) * width])
            .copied()
            .collect();
        chan.send(&frame)?;
    }
    // Each item's later rows (indices into `of`).
    let by_item = Groups::new(of, records.len() / width);
    let rows = |e: usize| by_item.of(e);
    let total: u64 = entries.iter().map(|&e| rows(e).len() as u64).sum();
    chan.send(&Writer::new().u64(total).0)?;
    if total == 0 {
        return Ok(());
    }
    for chunk in entries.chunks(per_frame(4)) {
        let frame: Vec<u8> = (chunk.iter())
            .flat_map(|&e| (rows(e).len() as u32).to_le_bytes())
            .collect();
        chan.send(&frame)?;
    }
    let named: Vec<u32> = entries.iter().flat_map(|&e| rows(e)).copied().collect();
    for chunk in named.chunks(per_frame(width)) {
        let frame: Vec<u8> = (chunk.iter())
            .flat_map(|&r| &repeats[r as usize * width..(r as usize + 1) * width])
            .copied()
            .collect();
        chan.send(&frame)?;
    }
    Ok(())
}

/// The sender's side: a record of `width` bytes for each of its `matched` items, in the
/// order the receiver named them, and their later rows' (refused past `most` in all
/// before anything is allocated for them); the output sorted by item, each with its
/// records.
pub(crate) fn receive_revealed(
    chan: &mut dyn Channel,
    mut matched: Vec<usize>,
    width: usize,
    most: u64,
) -> Result<Output> {
    check_width(width)?;
    // Where each record goes: its item's place among the matched items, sorted.
    let mut order: Vec<u32> = (0..matched.len() as u32).collect();
    order.sort_unstable_by_key(|&k| matched[k as usize]);
    let mut place = vec![0u32; matched.len()];
    for (p, &k) in order.iter().enumerate() {
        place[k as usize] = p as u32;
    }
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
    let total = recv_repeats_count(chan, most)?;
    let mut repeated = Repeated {
        counts: vec![0; matched.len()],
        records: Vec::new(),
    };
    if total > 0 {
        // Each named item's number of later rows, in the order named.
        let mut counts = Vec::with_capacity(matched.len());
        for first in (0..matched.len()).step_by(per_frame(4)) {
            let count = (matched.len() - first).min(per_frame(4));
            chan.recv_exact_into(&mut frame, count * 4, "repeated rows' numbers")?;
            counts.extend(
                frame
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes(c.try_into().unwrap())),
            );
        }
        let sum: u64 = counts.iter().map(|&c| c as u64).sum();
        if sum != total {
            return Err(Error::protocol(
                format!("{total} repeated rows in all"),
                format!("{sum} rows named item by item"),
            ));
        }
        // Their records, in the order named; then put in item order.
        let n = total as usize;
        let mut named = Vec::with_capacity(n * width);
        for first in (0..n).step_by(per) {
            let count = (n - first).min(per);
            chan.recv_exact_into(&mut frame, count * width, "the receiver's repeated rows")?;
            named.extend_from_slice(&frame);
        }
        let mut starts = vec![0usize; counts.len() + 1];
        (0..counts.len()).for_each(|k| starts[k + 1] = starts[k] + counts[k] as usize * width);
        for &k in &order {
            let k = k as usize;
            repeated.counts[place[k] as usize] = counts[k];
            (repeated.records).extend_from_slice(&named[starts[k]..starts[k + 1]]);
        }
    }
    Ok(with_repeats(matched, records, repeated, width))
}

/// The output of a party that read the peer's records: its `indices` (sorted), the first
/// row's record of each (`first`, in the same order) and the later rows' (`repeated`, in
/// the same order), index by index.
pub(crate) fn with_repeats(
    indices: Vec<usize>,
    first: Vec<u8>,
    repeated: Repeated,
    width: usize,
) -> Output {
    if repeated.records.is_empty() {
        return Output::Records {
            rows: vec![1; indices.len()],
            indices,
            records: first,
            width,
        };
    }
    let mut records = Vec::with_capacity(first.len() + repeated.records.len());
    let mut later = repeated.records.chunks_exact(width);
    let mut rows = Vec::with_capacity(indices.len());
    for (record, &count) in first.chunks_exact(width).zip(&repeated.counts) {
        records.extend_from_slice(record);
        for _ in 0..count {
            records.extend_from_slice(later.next().expect("a record for each row counted"));
        }
        rows.push(count + 1);
    }
    Output::Records {
        indices,
        records,
        width,
        rows,
    }
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
    /// in, over several frames; with repeated rows, each item's in row order after its
    /// first.
    #[test]
    fn the_sender_gets_the_receivers_records_by_its_own_items() {
        let mut prg = Prg::from_seed(Block::from(13u64));
        for (width, repeated) in [
            (1, false),
            (48, false),
            (5000, false),
            (48, true),
            (5000, true),
        ] {
            let n = 2 * per_frame(width) + 3;
            let mut records = vec![0u8; n * width];
            prg.fill_bytes(&mut records);
            // Later rows: item e has e % 3 of them (none without `repeated`), interleaved.
            let of: Vec<u32> = match repeated {
                true => (1..3)
                    .flat_map(|r| (0..n as u32).filter(move |e| e % 3 >= r))
                    .collect(),
                false => Vec::new(),
            };
            let mut repeats = vec![0u8; of.len() * width];
            prg.fill_bytes(&mut repeats);
            let mut later: Vec<Vec<&[u8]>> = vec![Vec::new(); n];
            for (&i, r) in of.iter().zip(repeats.chunks(width)) {
                later[i as usize].push(r);
            }
            let rows_of = |e: usize| -> Vec<&[u8]> {
                let first = &records[e * width..(e + 1) * width];
                std::iter::once(first)
                    .chain(later[e].iter().copied())
                    .collect()
            };
            // The receiver's matched entries, in its order, and the sender's item 3e + 1
            // for its entry e; one entry unmatched.
            let entries: Vec<usize> = prg.permutation(n)[1..]
                .iter()
                .map(|&e| e as usize)
                .collect();
            let matched = entries.iter().map(|&e| 3 * e + 1).collect();
            let (mut a, mut b) = mem_pair(Duration::from_secs(10));
            send_revealed(&mut a, &entries, (&records, width), (&of, &repeats)).unwrap();
            let Output::Records {
                indices,
                records: got,
                width: w,
                rows,
            } = receive_revealed(&mut b, matched, width, 1 << 20).unwrap()
            else {
                panic!("records")
            };
            assert_eq!((indices.len(), w, rows.len()), (n - 1, width, n - 1));
            assert!(indices.is_sorted());
            let mut got = got.chunks(width);
            for (&i, &r) in indices.iter().zip(&rows) {
                let expected = rows_of((i - 1) / 3);
                assert_eq!(r as usize, expected.len());
                for record in expected {
                    assert_eq!(got.next(), Some(record));
                }
            }
            assert_eq!(got.next(), None);
        }
    }

    /// The sender's own items with several rows: item i has i % 4 later rows. Returns
    /// `of` and their records (row by row, in an interleaved order).
    fn repeats(n: usize, width: usize, prg: &mut Prg) -> (Vec<u32>, Vec<u8>) {
        let of: Vec<u32> = (1..4)
            .flat_map(|r| (0..n as u32).filter(move |i| i % 4 >= r))
            .collect();
        let mut records = vec![0u8; of.len() * width];
        prg.fill_bytes(&mut records);
        (of, records)
    }

    /// The later rows of each item the receiver matched come back in row order, however
    /// many frames and rounds they take; none of an item it holds under a wrong OPRF
    /// value, nor of an item it does not hold.
    #[test]
    fn the_receiver_reads_its_matches_later_rows_in_order() {
        let mut prg = Prg::from_seed(Block::from(17u64));
        for width in [33, 5000] {
            let n = 2 * per_frame(width) + 9;
            let (x, v, _) = sender(n, width, &mut prg);
            let (of, records) = repeats(n, width, &mut prg);
            // The receiver's entries: every other sender item, and item 3 under a wrong
            // OPRF value (its answer would not have matched; here it claims a match).
            let shared: Vec<usize> = (0..n).step_by(2).collect();
            let (mut rx, mut rv): (Vec<Block>, Vec<Block>) =
                shared.iter().map(|&i| (x[i], v[i])).unzip();
            rx.push(x[3]);
            rv.push(v[3] ^ Block::ONE);
            let matches: Vec<(u32, u32)> = (0..rx.len() as u32).map(|e| (e, 0)).collect();
            let (mut a, mut b) = mem_pair(Duration::from_secs(10));
            let key = PadKey::of_session(&[5; 32]);
            let mut seed = Prg::from_seed(Block::from(3u64));
            send_repeats(
                &mut a,
                key,
                &mut seed,
                (&x, &v),
                (&of, &records),
                width,
                rx.len() as u64,
            )
            .unwrap();
            let got = receive_repeats(
                &mut b,
                key,
                of.len() as u64,
                rx.len() as u64,
                width,
                &matches,
                (&rx, &rv),
            )
            .unwrap();
            let mut rows: Vec<Vec<&[u8]>> = vec![Vec::new(); n];
            for (&i, r) in of.iter().zip(records.chunks(width)) {
                rows[i as usize].push(r);
            }
            let mut later = got.records.chunks(width);
            for (e, &i) in shared.iter().enumerate() {
                let expected = &rows[i];
                assert_eq!(got.counts[e] as usize, expected.len(), "item {i}");
                for &record in expected {
                    assert_eq!(later.next(), Some(record), "item {i}");
                }
            }
            assert_eq!(got.counts[shared.len()], 0, "a wrong F(y) finds no row");
            assert_eq!(later.next(), None);
        }
    }

    /// A sender that announces more later rows than the receiver allows is refused before
    /// any is read; none at all is an empty answer.
    #[test]
    fn too_many_later_rows_are_refused() {
        let key = PadKey::of_session(&[6; 32]);
        let mut prg = Prg::from_seed(Block::from(19u64));
        let (x, v, _) = sender(10, 8, &mut prg);
        let (of, records) = repeats(10, 8, &mut prg);
        let (mut a, mut b) = mem_pair(Duration::from_secs(10));
        send_repeats(&mut a, key, &mut prg, (&x, &v), (&of, &records), 8, 10).unwrap();
        let most = of.len() as u64 - 1;
        let err = receive_repeats(&mut b, key, most, 10, 8, &[(0, 0)], (&x, &v)).unwrap_err();
        assert!(err.to_string().contains("repeated rows"), "{err}");
        let (mut a, mut b) = mem_pair(Duration::from_secs(10));
        send_repeats(&mut a, key, &mut prg, (&x, &v), (&[], &[]), 8, 10).unwrap();
        let got = receive_repeats(&mut b, key, 0, 10, 8, &[(0, 0)], (&x, &v)).unwrap();
        assert_eq!(
            got,
            Repeated {
                counts: vec![0],
                records: vec![]
            }
        );
    }

    /// The directory's run of a prefix holds every entry with that prefix, for tags of
    /// every length, pseudorandom or all crowded into one run as a cheating sender could
    /// send them.
    #[test]
    fn the_directory_finds_every_prefix_in_its_run() {
        let mut prg = Prg::from_seed(Block::from(29u64));
        for (t, n, crowded) in [(6, 1000, false), (8, 5000, false), (11, 3000, true)] {
            let mask = if t >= 8 { u64::MAX } else { (1 << (8 * t)) - 1 };
            let mut sorted: Vec<(u64, u32)> = (0..n)
                .map(|p| {
                    let k = prg.block().low_u64() & mask;
                    (if crowded && p % 2 == 0 { k & 0xffff } else { k }, p)
                })
                .collect();
            sorted.sort_unstable();
            let directory = Directory::new(&sorted, t);
            for &(k, p) in &sorted {
                assert!(sorted[directory.range(k)].contains(&(k, p)), "t {t}, {k:x}");
            }
        }
    }

    /// Tags are long enough for λ = 40 over every lookup, and at most a block.
    #[test]
    fn tags_are_long_enough_for_their_lookups() {
        assert_eq!(tag_bytes(1, 1), 6); // 40 + 1 + 2 bits
        assert_eq!(tag_bytes(1 << 20, 1 << 20), 11); // 40 + 21 + 22 bits
        assert_eq!(tag_bytes(u64::MAX, u64::MAX), 16);
    }

    #[test]
    fn a_width_out_of_range_is_refused_before_anything_is_read() {
        let (_a, mut b) = mem_pair(Duration::from_secs(1));
        let key = PadKey::of_session(&[3; 32]);
        for width in [0, MAX_WIDTH + 1] {
            let err = receive(&mut b, key, 10, width, &[], &[], &[]).unwrap_err();
            assert!(err.to_string().contains("records of 1 to"), "{err}");
            let err = receive_revealed(&mut b, vec![1, 2], width, 0).unwrap_err();
            assert!(err.to_string().contains("records of 1 to"), "{err}");
        }
    }
}
