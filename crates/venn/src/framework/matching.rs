//! The last step shared by hashing-based PSI protocols (KKRT16 Fig. 3 steps 4–6, RR22
//! Fig. 4 step 4, and the naive baseline): the sender streams, for each of its items in a
//! random order, one value per group; the receiver looks each value up among its own. With
//! `--both` the receiver returns the matching positions and the sender maps them back
//! through its permutation.

use super::{Context, Output};
use crate::crypto::{pack_rows, row_mask, unpack_row, Block, UNPACK_SLACK};
use crate::net::{Channel, Reader, Writer};
use crate::tables::MatchTable;
use crate::util::memory::prefetch;
use crate::{Error, Result};
use rayon::prelude::*;

/// Sender items per frame.
pub(crate) const CHUNK_ITEMS: usize = 4096;
/// How many values ahead table slots are prefetched.
const PREFETCH_AHEAD: usize = 16;
/// Frames of sender values made, or looked up, together (on the rayon pool).
const BATCH_FRAMES: usize = 16;
/// Positions per frame when returning the intersection.
const CHUNK_POSITIONS: usize = 1 << 20;

/// The sender's side with one value per item: `values` (one per own item, cut to `bits`
/// bits) sent in a random order; with `--both`, the intersection received back.
pub(crate) fn send_shuffled(ctx: &mut Context, values: &[Block], bits: usize) -> Result<Output> {
    let perm = send_permuted(ctx, values, bits)?;
    sender_output(ctx, &perm)
}

/// The sender's output once its values (and whatever follows them) are sent: nothing, or
/// with `--both` the intersection the receiver sends back, mapped through the values'
/// order `perm` (position → own item).
pub(crate) fn sender_output(ctx: &mut Context, perm: &[u32]) -> Result<Output> {
    if !ctx.session.both {
        return Ok(Output::Nothing);
    }
    let mut matched = sender_matches(ctx, perm)?;
    matched.sort_unstable();
    Ok(Output::Indices(matched))
}

/// With `--both`, the sender's own items the receiver matched (its positions mapped
/// through `perm`), in the order the receiver sent them: the order of what it sends of
/// them next (its records).
pub(crate) fn sender_matches(ctx: &mut Context, perm: &[u32]) -> Result<Vec<usize>> {
    ctx.phase("receive intersection", false);
    let n_r = ctx.session.n_receiver as usize;
    receive_positions(ctx.peer, perm, n_r)
}

/// Sends `values` (cut to `bits` bits) in a random order; returns the order (position →
/// own item).
pub(crate) fn send_permuted(ctx: &mut Context, values: &[Block], bits: usize) -> Result<Vec<u32>> {
    let mask = Block::low_ones(bits);
    let perm = ctx.prg.permutation(values.len());
    send_values(ctx.peer, values.len(), 1, bits / 8, |first, out| {
        for (o, &i) in out.iter_mut().zip(&perm[first..]) {
            *o = values[i as usize] & mask;
        }
    })?;
    Ok(perm)
}

/// The receiver's side with one value per item: its own `values` (cut to `bits` bits)
/// against those [`send_shuffled`] sends; with `--both`, the matching positions sent back.
pub(crate) fn match_shuffled(ctx: &mut Context, values: &[Block], bits: usize) -> Result<Output> {
    let matches = match_values(ctx, values, bits)?;
    let indices = receiver_indices(ctx, &matches)?;
    Ok(Output::Indices(indices))
}

/// The receiver's intersection from its `matches` (own entry, sender position); with
/// `--both`, the positions sent back to the sender first.
pub(crate) fn receiver_indices(ctx: &mut Context, matches: &[(u32, u32)]) -> Result<Vec<usize>> {
    if ctx.session.both {
        ctx.phase("send intersection", false);
        send_positions(ctx.peer, matches)?;
    }
    Ok(matches.iter().map(|m| m.0 as usize).collect())
}

/// Its own `values` (cut to `bits` bits) against those [`send_permuted`] sends: `(own
/// entry, sender position)` per match, as [`receive_matches`] returns them.
pub(crate) fn match_values(
    ctx: &mut Context,
    values: &[Block],
    bits: usize,
) -> Result<Vec<(u32, u32)>> {
    let mask = Block::low_ones(bits);
    let table = MatchTable::build(values.len(), values.len(), |i| {
        (values[i] & mask, 0, i as u32)
    });
    let n_s = ctx.session.n_sender as usize;
    receive_matches(ctx.peer, n_s, 1, bits / 8, &table)
}

/// Sends `groups` values of `bytes` bytes for each of `n` items. `fill(first, values)`
/// computes the values of items `first..first + values.len() / groups`; frames are filled
/// a batch at a time on the rayon pool, then sent in order.
pub(crate) fn send_values(
    chan: &mut dyn Channel,
    n: usize,
    groups: usize,
    bytes: usize,
    fill: impl Fn(usize, &mut [Block]) + Sync,
) -> Result<()> {
    send_values_with(
        chan,
        n,
        groups,
        bytes,
        || (),
        |_, first, out| fill(first, out),
    )
}

/// [`send_values`] for a `fill` that needs working space: each frame of a batch has its
/// own `S` (from `scratch`), kept from batch to batch.
pub(crate) fn send_values_with<S: Send>(
    chan: &mut dyn Channel,
    n: usize,
    groups: usize,
    bytes: usize,
    scratch: impl Fn() -> S,
    fill: impl Fn(&mut S, usize, &mut [Block]) + Sync,
) -> Result<()> {
    let firsts: Vec<usize> = (0..n).step_by(CHUNK_ITEMS).collect();
    let mut slots: Vec<(Vec<u8>, Vec<Block>, S)> = (0..BATCH_FRAMES.min(firsts.len()))
        .map(|_| (Vec::new(), Vec::new(), scratch()))
        .collect();
    for batch in firsts.chunks(BATCH_FRAMES) {
        slots
            .par_iter_mut()
            .zip(batch)
            .for_each(|((frame, values, scratch), &first)| {
                values.clear();
                values.resize((n - first).min(CHUNK_ITEMS) * groups, Block::ZERO);
                fill(scratch, first, values);
                pack_rows(values, 1, bytes, frame);
            });
        for (frame, _, _) in &slots[..batch.len()] {
            chan.send(frame)?;
        }
    }
    Ok(())
}

/// Receives the values [`send_values`] sends for `n_sender` items and looks each up in
/// `table` under its group. Returns `(receiver entry, sender position)` per match, sorted
/// by receiver entry; a receiver entry matches at most once (with its first position).
pub(crate) fn receive_matches(
    chan: &mut dyn Channel,
    n_sender: usize,
    groups: usize,
    bytes: usize,
    table: &MatchTable,
) -> Result<Vec<(u32, u32)>> {
    // The receiver entries matched so far (a bit each: 128 KB at 2^20, in the cache), and
    // each one's first sender position: set once, read out in entry order, so the matches
    // need no sort.
    let mut matched = vec![0u64; table.items().div_ceil(64)];
    let mut position = vec![0u32; table.items()];
    let mask = row_mask(1, bytes);
    // Frames are looked up a batch at a time on the rayon pool, while the next batch is
    // received and the last batch's hits are applied, in frame order, so each entry keeps
    // its first sender position.
    let batches: Vec<usize> = (0..n_sender).step_by(CHUNK_ITEMS * BATCH_FRAMES).collect();
    let starts = |batch: usize| (batch..n_sender).step_by(CHUNK_ITEMS).take(BATCH_FRAMES);
    let mut receive = |frames: &mut [Vec<u8>], batch: usize| -> Result<()> {
        for (frame, start) in frames.iter_mut().zip(starts(batch)) {
            let count = (n_sender - start).min(CHUNK_ITEMS);
            chan.recv_exact_into(frame, count * groups * bytes, "sender values")?;
            frame.resize(frame.len() + UNPACK_SLACK, 0);
        }
        Ok(())
    };
    let mut frames: Vec<Vec<u8>> = vec![Vec::new(); BATCH_FRAMES];
    let mut next: Vec<Vec<u8>> = vec![Vec::new(); BATCH_FRAMES];
    let mut hits = Vec::new();
    if let Some(&first) = batches.first() {
        receive(&mut frames, first)?;
    }
    for (k, &batch) in batches.iter().enumerate() {
        let (found, (received, ())) = rayon::join(
            || {
                frames
                    .par_iter()
                    .zip(starts(batch).collect::<Vec<_>>())
                    .map(|(frame, start)| {
                        let entries = (n_sender - start).min(CHUNK_ITEMS) * groups;
                        lookups(frame, entries, start, groups, bytes, &mask, table)
                    })
                    .collect::<Vec<_>>()
            },
            || {
                rayon::join(
                    || match batches.get(k + 1) {
                        Some(&batch) => receive(&mut next, batch),
                        None => Ok(()),
                    },
                    || apply_hits(&hits, &mut matched, &mut position),
                )
            },
        );
        received?;
        hits.clear();
        hits.extend(found.into_iter().flatten());
        std::mem::swap(&mut frames, &mut next);
    }
    apply_hits(&hits, &mut matched, &mut position);
    let mut matches = Vec::new();
    for (w, &word) in matched.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let r = 64 * w + bits.trailing_zeros() as usize;
            matches.push((r as u32, position[r]));
            bits &= bits - 1;
        }
    }
    Ok(matches)
}

/// Records each hit `(receiver entry, sender position)`, in order, whose entry has none
/// yet. Each entry's words are loaded a few hits ahead (the positions are too many for
/// the cache).
fn apply_hits(hits: &[(u32, u32)], matched: &mut [u64], position: &mut [u32]) {
    for (k, &(r, p)) in hits.iter().enumerate() {
        if let Some(&(ahead, _)) = hits.get(k + PREFETCH_AHEAD) {
            prefetch(&position[ahead as usize]);
            prefetch(&matched[ahead as usize / 64]);
        }
        let (word, bit) = (&mut matched[r as usize / 64], 1 << (r % 64));
        if *word & bit == 0 {
            *word |= bit;
            position[r as usize] = p;
        }
    }
}

/// The hits among a frame's `entries` values (`groups` per sender item, the first item
/// at position `start`): (receiver entry, sender position), in frame order.
fn lookups(
    frame: &[u8],
    entries: usize,
    start: usize,
    groups: usize,
    bytes: usize,
    mask: &[Block],
    table: &MatchTable,
) -> Vec<(u32, u32)> {
    let mut hits = Vec::new();
    let (mut v, mut ahead) = ([Block::ZERO], [Block::ZERO]);
    for e in 0..entries {
        if e + PREFETCH_AHEAD < entries {
            unpack_row(frame, e + PREFETCH_AHEAD, bytes, mask, &mut ahead);
            table.prefetch(ahead[0]);
        }
        unpack_row(frame, e, bytes, mask, &mut v);
        if let Some(r) = table.find(v[0], (e % groups) as u32) {
            hits.push((r, (start + e / groups) as u32));
        }
    }
    hits
}

/// Sends the sender positions of the matches (KKRT16 Fig. 3 step 6).
pub(crate) fn send_positions(chan: &mut dyn Channel, matches: &[(u32, u32)]) -> Result<()> {
    chan.send(&Writer::new().u64(matches.len() as u64).0)?;
    for chunk in matches.chunks(CHUNK_POSITIONS) {
        let frame: Vec<u8> = chunk.iter().flat_map(|m| m.1.to_le_bytes()).collect();
        chan.send(&frame)?;
    }
    Ok(())
}

/// Receives the positions [`send_positions`] sends and maps them through `perm` (position
/// → own item index). Every position must be in range and distinct. Returns the indices
/// in the order received.
fn receive_positions(
    chan: &mut dyn Channel,
    perm: &[u32],
    n_receiver: usize,
) -> Result<Vec<usize>> {
    let msg = chan.recv_exact(8, "intersection size")?;
    let mut r = Reader::new(&msg, "intersection size");
    let count = r.u64()?;
    r.finish()?;
    let bound = perm.len().min(n_receiver) as u64;
    if count > bound {
        return Err(Error::protocol(
            format!("an intersection of at most {bound} items"),
            format!("{count} items"),
        ));
    }
    let mut seen = vec![false; perm.len()];
    let mut out = Vec::with_capacity(count as usize);
    let mut frame = Vec::new();
    let mut left = count as usize;
    while left > 0 {
        let n = left.min(CHUNK_POSITIONS);
        chan.recv_exact_into(&mut frame, 4 * n, "intersection positions")?;
        for p in frame.chunks_exact(4) {
            let p = u32::from_le_bytes(p.try_into().expect("4 bytes")) as usize;
            if p >= perm.len() || std::mem::replace(&mut seen[p], true) {
                return Err(Error::protocol(
                    "distinct positions of our items",
                    format!("position {p} (out of range or repeated)"),
                ));
            }
            out.push(perm[p] as usize);
        }
        left -= n;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::mem_pair;
    use std::time::Duration;

    /// Matches come out in receiver-entry order, each entry once with its first sender
    /// position, whatever order and repeats the sender's values come in; groups must agree.
    #[test]
    fn each_entry_matches_once_at_its_first_position_in_entry_order() {
        let own: Vec<Block> = (0..10u64)
            .map(|i| Block::from(i * 0x9e37_79b9 + 5))
            .collect();
        let table = MatchTable::build(own.len(), own.len(), |i| (own[i], i as u32 % 2, i as u32));
        // Two values a sender item (position e / 2, group e % 2); entry i is in group i % 2.
        let sent = [
            own[2],
            own[3], // position 0
            own[6],
            Block::from(1), // 1
            own[3],
            own[1], // 2: own[3] in the wrong group
            own[2],
            own[3], // 3: both again
            own[7],
            Block::from(2), // 4: own[7] in the wrong group
        ];
        let (mut a, mut b) = mem_pair(Duration::from_secs(5));
        send_values(&mut a, sent.len() / 2, 2, 16, |first, out| {
            out.copy_from_slice(&sent[2 * first..][..out.len()]);
        })
        .unwrap();
        let matches = receive_matches(&mut b, sent.len() / 2, 2, 16, &table).unwrap();
        assert_eq!(matches, [(1, 2), (2, 0), (3, 0), (6, 1)]);
    }

    /// Past one batch of frames (looked up on a pool of three threads): an entry sent in
    /// several batches keeps the first position, whichever thread looked up which frame.
    #[test]
    fn first_positions_hold_across_batches_and_threads() {
        let n = CHUNK_ITEMS * BATCH_FRAMES * 2 + 100;
        let own: Vec<Block> = (0..64u64)
            .map(|i| Block::from_halves(i, (i + 1) << 6))
            .collect();
        let table = MatchTable::build(own.len(), own.len(), |i| (own[i], 0, i as u32));
        // Entry i at positions i·1000 + 7, and again at every later multiple of 1000 + 7.
        let value = |p: usize| match p % 1000 {
            7 => own[(p / 1000) % own.len()],
            _ => Block::from(p as u64),
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let (mut a, mut b) = mem_pair(Duration::from_secs(5));
        std::thread::scope(|s| {
            s.spawn(move || {
                send_values(&mut a, n, 1, 16, |first, out| {
                    for (j, o) in out.iter_mut().enumerate() {
                        *o = value(first + j);
                    }
                })
                .unwrap()
            });
            let matches = pool.install(|| receive_matches(&mut b, n, 1, 16, &table).unwrap());
            let want: Vec<(u32, u32)> = (0..own.len() as u32).map(|i| (i, i * 1000 + 7)).collect();
            assert_eq!(matches, want);
        });
    }
}
