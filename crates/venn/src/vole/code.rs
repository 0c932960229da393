//! The expand-convolute code of Raghuraman–Rindal–Tanguy (RRT23, Crypto 2023, §4: "ExConv
//! 7x24"), the linear code whose dual compresses the PCG's sparse noise into pseudorandom
//! VOLE outputs (dual LPN; BCGIKRS19). Never Silver: RRT23 found low-weight codewords in it.
//!
//! Dual-encoding a vector e of length N = 2n: the parity half e[n..N) is accumulated twice —
//! each position, in order, added into the next 24 positions picked by 24 pseudorandom
//! bits and always into the 25th (cyclically) — and then each output e[i], i < n, gets the
//! sum of 7 positions of the accumulated half: one in each quarter (the regular part) and 3
//! anywhere. About 31 additions of 16 bytes an output. The code is public: its
//! coefficients come from an AES-CTR stream under a fixed seed (advanced per use by the
//! caller), as libOTe's do from its own.

use crate::crypto::{Block, Prg};
use std::ops::{BitXor, BitXorAssign};

/// What a code adds: a block, or two blocks side by side ([`Pair`]) that share the code's
/// positions — the receiver's noise and its PPRF outputs, whose random reads then share
/// their cache lines.
pub trait Symbol: Copy + Default + BitXor<Output = Self> + BitXorAssign + Send + Sync {}

impl Symbol for Block {}

/// Two blocks encoded together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(32))]
pub struct Pair(pub Block, pub Block);

impl BitXor for Pair {
    type Output = Pair;
    #[inline(always)]
    fn bitxor(self, o: Pair) -> Pair {
        Pair(self.0 ^ o.0, self.1 ^ o.1)
    }
}

impl BitXorAssign for Pair {
    #[inline(always)]
    fn bitxor_assign(&mut self, o: Pair) {
        *self = *self ^ o;
    }
}

impl Symbol for Pair {}

/// Positions after each one that it may be added into (besides the always-taken 25th).
const ACCUMULATOR: usize = 24;
/// Accumulated positions summed into each output: `REGULAR` one per equal part, the rest
/// anywhere.
const EXPANDER: usize = 7;
const REGULAR: usize = 4;

/// The code for `n` outputs from `2n` inputs, under a public seed.
#[derive(Clone, Copy, Debug)]
pub struct ExConv {
    n: usize,
    seed: Block,
}

impl ExConv {
    /// The code compressing 2`n` noise positions into `n` outputs, for `n` of at least
    /// [`ExConv::MIN_OUTPUTS`] (shorter, the accumulator would wrap onto the position it
    /// adds).
    pub fn new(n: usize, seed: Block) -> ExConv {
        assert!(n >= Self::MIN_OUTPUTS, "an ExConv code of {n} outputs");
        ExConv { n, seed }
    }

    /// The fewest outputs a code has.
    pub const MIN_OUTPUTS: usize = ACCUMULATOR + 2;

    /// Inputs the code takes (N = 2n).
    pub fn inputs(&self) -> usize {
        2 * self.n
    }

    /// Dual-encodes `e` (N long) in place; its first n positions are the result.
    pub fn dual_encode<T: Symbol>(&self, e: &mut [T]) {
        assert_eq!(e.len(), self.inputs());
        let (out, parity) = e.split_at_mut(self.n);
        accumulate(parity, self.seed);
        accumulate(parity, !self.seed);
        expand(parity, out, self.seed ^ 0xcc);
    }
}

/// Each position, in order, added into the following ones its 24 coefficient bits pick,
/// and into the 25th after it (all cyclically).
fn accumulate<T: Symbol>(x: &mut [T], seed: Block) {
    let len = x.len();
    let mut coefficients = Prg::from_seed(seed);
    let mut bits = 0u64;
    let mut left = 0;
    let full = len.saturating_sub(ACCUMULATOR + 1);
    for i in 0..len {
        if left < ACCUMULATOR {
            bits = coefficients.u64();
            left = 64;
        }
        let xi = x[i];
        let row = bits;
        bits >>= ACCUMULATOR;
        left -= ACCUMULATOR;
        if i < full {
            // No wrap: the 25 positions after i lie in the slice.
            let next = &mut x[i + 1..i + 2 + ACCUMULATOR];
            let mut set = row & ((1 << ACCUMULATOR) - 1);
            while set != 0 {
                next[set.trailing_zeros() as usize] ^= xi;
                set &= set - 1;
            }
            next[ACCUMULATOR] ^= xi;
        } else {
            for k in 0..ACCUMULATOR {
                if (row >> k) & 1 == 1 {
                    x[(i + 1 + k) % len] ^= xi;
                }
            }
            x[(i + 1 + ACCUMULATOR) % len] ^= xi;
        }
    }
}

/// `out[i] ^=` the sum of `EXPANDER` positions of `parity` (one in each of `REGULAR` equal
/// parts, the rest anywhere), for every i.
fn expand<T: Symbol>(parity: &[T], out: &mut [T], seed: Block) {
    let m = parity.len() as u64;
    let step = m / REGULAR as u64;
    let mut stream = Prg::from_seed(seed);
    // Positions picked a chunk of outputs at a time and their lines asked for a chunk
    // ahead: the parity half is n blocks (22 MB at n = 1.4M), so each is a miss. A public
    // code needs no exact uniformity: positions are 64-bit words scaled down (bias m/2^64).
    const CHUNK: usize = 32;
    let picks = |stream: &mut Prg| {
        let mut words = [0 as Block; CHUNK * EXPANDER / 2];
        stream.fill_blocks(&mut words);
        let mut p = [[0usize; EXPANDER]; CHUNK];
        for (i, p) in p.iter_mut().enumerate() {
            for (j, p) in p.iter_mut().enumerate() {
                let w = words[(i * EXPANDER + j) / 2] >> (64 * ((i * EXPANDER + j) % 2));
                *p = match j < REGULAR {
                    true => (j as u64 * step + below(w as u64, step)) as usize,
                    false => below(w as u64, m) as usize,
                };
                crate::memory::prefetch(&parity[*p]);
            }
        }
        p
    };
    let mut next = picks(&mut stream);
    for out in out.chunks_mut(CHUNK) {
        let here = next;
        next = picks(&mut stream);
        for (o, p) in out.iter_mut().zip(&here) {
            *o ^= p.iter().fold(T::default(), |acc, &j| acc ^ parity[j]);
        }
    }
}

/// `x` scaled into [0, m).
fn below(x: u64, m: u64) -> u64 {
    ((u128::from(x) * u128::from(m)) >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random(n: usize, seed: Block) -> Vec<Block> {
        let mut prg = Prg::from_seed(seed);
        (0..n).map(|_| prg.block()).collect()
    }

    #[test]
    fn the_dual_encoding_is_linear_and_fixed_by_its_seed() {
        for n in [ExConv::MIN_OUTPUTS, 27, 100, 4096, 100_003] {
            let code = ExConv::new(n, 42);
            let (a, b) = (random(2 * n, 1), random(2 * n, 2));
            let mut sum: Vec<Block> = a.iter().zip(&b).map(|(x, y)| x ^ y).collect();
            let (mut ea, mut eb) = (a.clone(), b.clone());
            code.dual_encode(&mut ea);
            code.dual_encode(&mut eb);
            code.dual_encode(&mut sum);
            for i in 0..n {
                assert_eq!(sum[i], ea[i] ^ eb[i], "n = {n}, i = {i}");
            }
            let mut again = a.clone();
            code.dual_encode(&mut again);
            assert_eq!(again[..n], ea[..n]);
            let mut other = a.clone();
            ExConv::new(n, 43).dual_encode(&mut other);
            assert_ne!(other[..n], ea[..n], "n = {n}");
        }
    }

    #[test]
    fn pairs_encode_as_their_halves_do() {
        let n = 1000;
        let code = ExConv::new(n, 9);
        let (a, b) = (random(2 * n, 3), random(2 * n, 4));
        let mut pairs: Vec<Pair> = a.iter().zip(&b).map(|(&x, &y)| Pair(x, y)).collect();
        let (mut ea, mut eb) = (a, b);
        code.dual_encode(&mut ea);
        code.dual_encode(&mut eb);
        code.dual_encode(&mut pairs);
        for i in 0..n {
            assert_eq!(pairs[i], Pair(ea[i], eb[i]));
        }
    }

    #[test]
    fn one_noise_position_reaches_many_outputs() {
        // A single nonzero parity position spreads through both accumulations and the
        // expander: about half the outputs change (the code is far from sparse).
        let n = 1 << 12;
        let code = ExConv::new(n, 7);
        let mut e = vec![0; 2 * n];
        e[n + 5] = 1;
        code.dual_encode(&mut e);
        let touched = e[..n].iter().filter(|&&x| x != 0).count();
        assert!(touched > n / 3, "{touched} of {n}");
    }
}
