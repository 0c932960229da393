//! Fig. 4 step 5: the receiver's injective map π from Bloom-filter positions to unopened
//! OTs with `BF[i] = b_{π(i)}`, sent as `N_bf` entries of ⌈log2 N_ot⌉ bits, and the
//! sender's checks that it is in range, injective and avoids the opened set C.

use crate::crypto::Prg;
use crate::memory::advise_huge_pages;
use crate::net::Channel;
use crate::tables::BitSet;
use crate::{Error, Result};

/// Entries per frame.
const CHUNK: usize = 1 << 16;

/// Bits per entry for `n_ot` OTs.
pub fn entry_bits(n_ot: u64) -> usize {
    (64 - (n_ot.max(2) - 1).leading_zeros()) as usize
}

/// The receiver's π: each filter position gets a distinct unopened OT whose choice bit
/// equals the filter bit, chosen at random.
///
/// The unopened OTs hold more ones than a filter of n·k insertions has set bits (the
/// parameters leave slack for the check, and hash collisions set fewer bits), and fewer
/// zeros than it has clear bits. So random clear positions are first set to one until the
/// filter has exactly as many ones as there are unopened one-OTs: a filter with extra ones
/// still contains every item, and §5.2 already bounds the receiver to N_1 ones.
pub fn build(
    bf: &mut [bool],
    choice: impl Fn(usize) -> bool,
    n_ot: usize,
    opened: &[usize],
    prg: &mut Prg,
) -> Result<Vec<u32>> {
    let mut is_opened = BitSet::new(n_ot);
    for &j in opened {
        is_opened.set(j);
    }
    let (mut ones, mut zeros): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
    for j in (0..n_ot).filter(|&j| !is_opened.get(j)) {
        if choice(j) {
            ones.push(j as u32)
        } else {
            zeros.push(j as u32)
        }
    }
    drop(is_opened);
    prg.shuffle(&mut ones);
    prg.shuffle(&mut zeros);
    let set = bf.iter().filter(|&&b| b).count();
    if set > ones.len() {
        return Err(Error::Params(format!(
            "the Bloom filter has {set} ones but only {} unopened OTs have choice bit 1 (probability ≤ 2^-40)",
            ones.len()
        )));
    }
    // A uniformly random set of clear positions, by rejection (few compared to the filter).
    let mut extra = (ones.len() - set).min(bf.len() - set);
    while extra > 0 {
        let i = prg.below(bf.len() as u64) as usize;
        if !bf[i] {
            bf[i] = true;
            extra -= 1;
        }
    }
    bf.iter()
        .map(|&bit| if bit { ones.pop() } else { zeros.pop() })
        .collect::<Option<Vec<u32>>>()
        .ok_or_else(|| {
            Error::Params("fewer unopened OTs than Bloom-filter bits (probability ≤ 2^-40)".into())
        })
}

/// Sends π packed at [`entry_bits`] bits per entry.
pub fn send(chan: &mut dyn Channel, pi: &[u32], n_ot: u64) -> Result<()> {
    let w = entry_bits(n_ot);
    for chunk in pi.chunks(CHUNK) {
        let len = (chunk.len() * w).div_ceil(8);
        let mut bytes = Vec::with_capacity(len + 8);
        let (mut acc, mut held) = (0u128, 0);
        for &v in chunk {
            acc |= (v as u128) << held;
            held += w;
            if held >= 64 {
                bytes.extend_from_slice(&(acc as u64).to_le_bytes());
                acc >>= 64;
                held -= 64;
            }
        }
        bytes.extend_from_slice(&(acc as u64).to_le_bytes());
        bytes.truncate(len);
        chan.send(&bytes)?;
    }
    chan.flush()
}

/// Receives π for a filter of `n_bf` bits and checks it: every entry below `n_ot`, no entry
/// twice, none in the opened set.
pub fn receive(
    chan: &mut dyn Channel,
    n_bf: usize,
    n_ot: u64,
    opened: &[usize],
) -> Result<Vec<u32>> {
    let w = entry_bits(n_ot);
    let (mut is_opened, mut taken) = (BitSet::new(n_ot as usize), BitSet::new(n_ot as usize));
    for &j in opened {
        is_opened.set(j);
    }
    let mut pi = Vec::with_capacity(n_bf);
    advise_huge_pages(&pi);
    let mut frame = Vec::new();
    for first in (0..n_bf).step_by(CHUNK) {
        let count = (n_bf - first).min(CHUNK);
        chan.recv_exact_into(&mut frame, (count * w).div_ceil(8), "permutation π")?;
        let (mut acc, mut held, mut next) = (0u64, 0, 0);
        for _ in 0..count {
            while held < w {
                acc |= (frame[next] as u64) << held;
                next += 1;
                held += 8;
            }
            let v = acc & ((1 << w) - 1);
            acc >>= w;
            held -= w;
            if v >= n_ot {
                return Err(Error::CheatingDetected(format!(
                    "π maps a filter position to OT {v}, out of range"
                )));
            }
            if is_opened.get(v as usize) {
                return Err(Error::CheatingDetected(format!(
                    "π points into the opened set (OT {v})"
                )));
            }
            if taken.set(v as usize) {
                return Err(Error::CheatingDetected(format!(
                    "π is not injective (OT {v} twice)"
                )));
            }
            pi.push(v as u32);
        }
    }
    Ok(pi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::mem_pair;
    use std::time::Duration;

    #[test]
    fn packed_entries_round_trip_and_build_matches_the_filter() {
        let mut prg = Prg::from_seed(3);
        let n_ot = 5000usize;
        let choices: Vec<bool> = (0..n_ot).map(|_| prg.below(3) == 0).collect();
        let opened: Vec<usize> = (0..n_ot).filter(|i| i % 17 == 0).collect();
        let mut bf: Vec<bool> = (0..3000).map(|_| prg.below(5) == 0).collect();
        let before = bf.clone();
        let pi = build(&mut bf, |j| choices[j], n_ot, &opened, &mut prg).unwrap();
        assert!(
            before.iter().zip(&bf).all(|(&b, &a)| !b || a),
            "padding only adds ones"
        );
        for (i, &j) in pi.iter().enumerate() {
            assert_eq!(choices[j as usize], bf[i]);
            assert!(j % 17 != 0, "avoids the opened set");
        }
        let (mut a, mut b) = mem_pair(Duration::from_secs(5));
        send(&mut a, &pi, n_ot as u64).unwrap();
        assert_eq!(receive(&mut b, pi.len(), n_ot as u64, &opened).unwrap(), pi);
    }
}
