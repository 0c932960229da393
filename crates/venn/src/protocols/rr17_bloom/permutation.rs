//! Fig. 4 step 5 on the wire: the receiver's injective map π from Bloom-filter positions to
//! unopened OTs, sent in frames of [`FRAME`] positions, each entry ⌈log2 N_ot⌉ bits, while
//! it is being built; and the sender's checks that it is in range, injective and avoids
//! the opened set C.

use crate::net::Channel;
use crate::util::bits::BitSet;
use crate::util::memory::prefetch;
use crate::{Error, Result};

/// Filter positions per frame.
pub(super) const FRAME: usize = 1 << 18;
/// Prefetch distance of the injectivity check.
const AHEAD: usize = 32;

/// Bits per entry for `n_ot` OTs.
pub(super) fn entry_bits(n_ot: u64) -> usize {
    (64 - (n_ot.max(2) - 1).leading_zeros()) as usize
}

/// Sends π for a filter of `n_bf` bits, packed at [`entry_bits`] bits an entry.
/// `fill(first, count, entries)` appends the entries of positions `first..first + count`;
/// on two threads it builds the next frame while the previous one is packed and sent.
pub(super) fn send(
    chan: &mut dyn Channel,
    n_bf: usize,
    n_ot: u64,
    mut fill: impl FnMut(usize, usize, &mut Vec<u32>) + Send,
) -> Result<()> {
    let w = entry_bits(n_ot);
    let frames: Vec<(usize, usize)> = (0..n_bf)
        .step_by(FRAME)
        .map(|first| (first, (n_bf - first).min(FRAME)))
        .collect();
    let mut fill_frame = |f: usize, entries: &mut Vec<u32>| {
        if let Some(&(first, count)) = frames.get(f) {
            entries.clear();
            fill(first, count, entries);
            assert_eq!(entries.len(), count, "one entry per position");
        }
    };
    let (mut ready, mut next, mut bytes) = (Vec::with_capacity(FRAME), Vec::new(), Vec::new());
    fill_frame(0, &mut ready);
    for f in 0..frames.len() {
        let (sent, ()) = rayon::join(
            || {
                pack(&ready, w, &mut bytes);
                chan.send(&bytes)
            },
            || fill_frame(f + 1, &mut next),
        );
        sent?;
        std::mem::swap(&mut ready, &mut next);
    }
    Ok(())
}

/// `entries` at `w` bits each, little-endian, into `bytes`.
fn pack(entries: &[u32], w: usize, bytes: &mut Vec<u8>) {
    bytes.clear();
    let (mut acc, mut held) = (0u128, 0);
    for &v in entries {
        acc |= (v as u128) << held;
        held += w;
        if held >= 64 {
            bytes.extend_from_slice(&(acc as u64).to_le_bytes());
            acc >>= 64;
            held -= 64;
        }
    }
    bytes.extend_from_slice(&(acc as u64).to_le_bytes());
    bytes.truncate((entries.len() * w).div_ceil(8));
}

/// Receives π for a filter of `n_bf` bits and checks it: every entry below `n_ot`, no entry
/// twice, none in `opened` (sorted). `on_frame(first, entries)` gets each frame's entries,
/// for positions `first..`, once they are in range; injectivity and C are checked over the
/// whole of π, so the caller must not reveal anything until this returns `Ok`.
pub(super) fn receive(
    chan: &mut dyn Channel,
    n_bf: usize,
    n_ot: u64,
    opened: &[u32],
    mut on_frame: impl FnMut(usize, &[u32]) + Send,
) -> Result<()> {
    let w = entry_bits(n_ot);
    let mask = (1u64 << w) - 1;
    // Opened OTs count as taken, so one test-and-set per entry does both checks.
    let mut taken = BitSet::new(n_ot as usize);
    for &j in opened {
        taken.set(j as usize);
    }
    let (mut frame, mut entries) = (Vec::new(), Vec::with_capacity(FRAME));
    for first in (0..n_bf).step_by(FRAME) {
        let count = (n_bf - first).min(FRAME);
        chan.recv_exact_into(&mut frame, (count * w).div_ceil(8), "permutation π")?;
        frame.extend_from_slice(&[0; 8]);
        entries.clear();
        entries.extend((0..count).map(|i| {
            let bit = i * w;
            let word = u64::from_le_bytes(frame[bit / 8..bit / 8 + 8].try_into().expect("8"));
            (word >> (bit % 8) & mask) as u32
        }));
        if let Some(&v) = entries.iter().find(|&&v| v as u64 >= n_ot) {
            return Err(Error::CheatingDetected(format!(
                "π maps a filter position to OT {v}, out of range"
            )));
        }
        // The caller's work on the frame and the checks are independent: on two threads
        // they overlap.
        let (_, checked) = rayon::join(
            || on_frame(first, &entries),
            || take_all(&mut taken, &entries, opened),
        );
        checked?;
    }
    Ok(())
}

/// Marks every entry as taken; an entry already taken is in C or repeats an earlier one.
fn take_all(taken: &mut BitSet, entries: &[u32], opened: &[u32]) -> Result<()> {
    for (i, &v) in entries.iter().enumerate() {
        if let Some(&ahead) = entries.get(i + AHEAD) {
            prefetch(&taken.words()[ahead as usize / 64]);
        }
        if taken.set(v as usize) {
            return Err(Error::CheatingDetected(
                if opened.binary_search(&v).is_ok() {
                    format!("π points into the opened set (OT {v})")
                } else {
                    format!("π is not injective (OT {v} twice)")
                },
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Block;
    use crate::crypto::Prg;
    use crate::net::mem_pair;
    use std::time::Duration;

    #[test]
    fn packed_entries_round_trip_and_every_bad_entry_is_named() {
        let n_ot = 200_000u64;
        let opened: Vec<u32> = (0..n_ot as u32).filter(|i| i % 17 == 0).collect();
        let mut pi: Vec<u32> = (0..n_ot as u32).filter(|i| i % 17 != 0).collect();
        Prg::from_seed(Block::from(3)).shuffle(&mut pi);
        pi.truncate(150_000);
        let run = |pi: &[u32]| {
            let (mut a, mut b) = mem_pair(Duration::from_secs(5));
            send(&mut a, pi.len(), n_ot, |first, count, out| {
                out.extend_from_slice(&pi[first..first + count]);
            })
            .unwrap();
            let mut got = vec![];
            receive(&mut b, pi.len(), n_ot, &opened, |first, chunk| {
                assert_eq!(first, got.len());
                got.extend_from_slice(chunk);
            })
            .map(|()| got)
        };
        assert_eq!(run(&pi).unwrap(), pi);
        let cases: [(usize, u32, &str); 3] = [
            (100_000, pi[5], "not injective"),
            (70_000, 34, "opened set"),
            (3, (1 << entry_bits(n_ot)) - 1, "out of range"),
        ];
        for (at, value, what) in cases {
            let mut bad = pi.clone();
            bad[at] = value;
            let e = run(&bad).unwrap_err();
            assert!(
                matches!(e, Error::CheatingDetected(ref w) if w.contains(what)),
                "{e}"
            );
        }
    }
}
