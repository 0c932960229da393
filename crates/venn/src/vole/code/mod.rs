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

mod accumulate;
mod expand;
mod rows;
mod wide;

use crate::crypto::Block;
use accumulate::accumulate;
use expand::expand;
use std::ops::{BitXor, BitXorAssign};

/// What a code adds: a block, or two blocks side by side ([`Pair`]) that share the code's
/// positions — the receiver's noise and its PPRF outputs, whose random reads then share
/// their cache lines.
pub trait Symbol: Copy + Default + BitXor<Output = Self> + BitXorAssign + Send + Sync {
    /// Blocks in a symbol: the SIMD paths move whole blocks.
    const BLOCKS: usize;

    /// The blocks of `s`, in order.
    fn blocks_mut(s: &mut [Self]) -> &mut [Block];
}

impl Symbol for Block {
    const BLOCKS: usize = 1;

    fn blocks_mut(s: &mut [Block]) -> &mut [Block] {
        s
    }
}

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

impl Symbol for Pair {
    const BLOCKS: usize = 2;

    fn blocks_mut(s: &mut [Pair]) -> &mut [Block] {
        // SAFETY: a `Pair` is two `Block`s with no padding (`repr(C)`, 32 bytes, aligned
        // more strictly than a block), and any bits are a valid block: the same memory,
        // borrowed as mutably and for as long, is `2·len` blocks.
        unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<Block>(), 2 * s.len()) }
    }
}

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
        self.accumulate(parity);
        self.expand(parity, out);
    }

    /// [`dual_encode`]'s first step, on the parity half `e[n..N)` alone: its two
    /// accumulations, serial (each position waits on the ones before it), so that a
    /// caller can run them beside other work — the VOLE beside the trees of the first half.
    ///
    /// [`dual_encode`]: ExConv::dual_encode
    pub fn accumulate<T: Symbol>(&self, parity: &mut [T]) {
        assert_eq!(parity.len(), self.n);
        accumulate(parity, None, self.seed);
        accumulate(parity, None, !self.seed);
    }

    /// [`dual_encode`]'s second step: `out` (`e[0..n)`) gets the accumulated `parity`'s
    /// positions added in; on the rayon pool.
    ///
    /// [`dual_encode`]: ExConv::dual_encode
    pub fn expand<T: Symbol>(&self, parity: &[T], out: &mut [T]) {
        assert_eq!((parity.len(), out.len()), (self.n, self.n));
        expand(parity, out, None, self.seed ^ Block::from(0xcc));
    }

    /// [`ExConv::accumulate`] on blocks and on a vector of bits at once (a correlated OT's
    /// noise: its choice bits, encoded beside its blocks), bit i of the parity half in bit
    /// i % 64 of word i / 64. Both take each position's coefficients from one draw, and
    /// where the blocks' vector window runs, the bits' serial chain runs on the scalar
    /// ports beside it, hidden under the vector work.
    pub fn accumulate_with_bits<T: Symbol>(&self, parity: &mut [T], parity_bits: &mut [u64]) {
        assert_eq!(parity.len(), self.n);
        assert_eq!(parity_bits.len(), self.n.div_ceil(64));
        accumulate(parity, Some(&mut *parity_bits), self.seed);
        accumulate(parity, Some(parity_bits), !self.seed);
    }

    /// [`ExConv::expand`] on blocks and on bits at once (each output's positions drawn
    /// once for both): `out` and `out_bits` get the positions of `parity` and of
    /// `parity_bits` (bits as in [`ExConv::accumulate_with_bits`]) added in.
    pub fn expand_with_bits<T: Symbol>(
        &self,
        parity: &[T],
        out: &mut [T],
        parity_bits: &[u64],
        out_bits: &mut [u64],
    ) {
        assert_eq!((parity.len(), out.len()), (self.n, self.n));
        let words = self.n.div_ceil(64);
        assert_eq!((parity_bits.len(), out_bits.len()), (words, words));
        expand(
            parity,
            out,
            Some((parity_bits, out_bits)),
            self.seed ^ Block::from(0xcc),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::accumulate::accumulate_bits;
    use super::expand::below;
    use super::rows::Rows;
    use super::*;
    use crate::crypto::Prg;
    use crate::util::cpu::{self, with_level, Level};

    fn random(n: usize, seed: Block) -> Vec<Block> {
        let mut prg = Prg::from_seed(seed);
        (0..n).map(|_| prg.block()).collect()
    }

    #[test]
    fn the_dual_encoding_is_linear_and_fixed_by_its_seed() {
        for n in [ExConv::MIN_OUTPUTS, 27, 100, 4096, 100_003] {
            let code = ExConv::new(n, Block::from(42));
            let (a, b) = (random(2 * n, Block::from(1)), random(2 * n, Block::from(2)));
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
            ExConv::new(n, Block::from(43)).dual_encode(&mut other);
            assert_ne!(other[..n], ea[..n], "n = {n}");
        }
    }

    /// The code itself, pinned: outputs of the first (scalar, memory-bound) implementation,
    /// which every faster one must keep (both parties must use one code).
    #[test]
    fn the_code_is_pinned() {
        let pins: [(usize, Block, Block, Block); 4] = [
            (
                26,
                Block::from_u128(0x6520d4d9fe916515f887157d5ec12718),
                Block::from_u128(0x70b5e72c513cd1d46e0ec902cbecedcb),
                Block::from_u128(0x2cc81dd3f6e9e726566fc6095ed24812),
            ),
            (
                100,
                Block::from_u128(0x0cd0a69181f8e94cb9c31c13abad67f0),
                Block::from_u128(0xc0334740167bd557c23eb5de369cae4b),
                Block::from_u128(0x4ed627e0a405a6483e50b79df18f95f0),
            ),
            (
                5000,
                Block::from_u128(0x04019d8f1aef9d3b89c1eeed1e9f6f00),
                Block::from_u128(0x47834d4e3cb3eb9382ddcb3a2b2d6b69),
                Block::from_u128(0x1f8534f511322b00c7687f4c91919967),
            ),
            // Several parts of the expander, drawn from their places in the stream.
            (
                20_000,
                Block::from_u128(0x80d8ae94a6e4737b8269d3ac856c34a1),
                Block::from_u128(0x1a7a8f9752849dc547b862d490e10c1d),
                Block::from_u128(0xd805212d2c68826cbfca21fbfaccd513),
            ),
        ];
        // At each level, on one thread and on three (the expander's parts split among them).
        for level in Level::ALL {
            for threads in [1, 3] {
                let pool = cpu::pool_at(level, threads).unwrap();
                for (n, first, last, fold) in pins {
                    let mut e = random(2 * n, Block::from(1));
                    pool.install(|| ExConv::new(n, Block::from(42)).dual_encode(&mut e));
                    let sum = e[..n].iter().fold(Block::ZERO, |acc, x| acc ^ x);
                    assert_eq!(
                        (e[0], e[n - 1], sum),
                        (first, last, fold),
                        "{level:?}, {threads} threads, n = {n}"
                    );
                }
            }
        }
    }

    /// The accumulator as defined, one position and one coefficient at a time.
    fn accumulate_by_definition<T: Symbol>(x: &mut [T], seed: Block) {
        let mut rows = Rows::new(seed);
        let len = x.len();
        for i in 0..len {
            let row = rows.next() | 1 << ACCUMULATOR;
            let xi = x[i];
            for k in 0..=ACCUMULATOR {
                if (row >> k) & 1 == 1 {
                    x[(i + 1 + k) % len] ^= xi;
                }
            }
        }
    }

    /// The register window (at the levels that allow it) and the scalar tail agree with
    /// the definition at every length around the window's, for blocks and pairs.
    #[test]
    fn the_accumulator_follows_its_definition() {
        let lengths = (ACCUMULATOR + 2..80).chain([255, 256, 257, 4099]);
        for len in lengths {
            let a = random(len, Block::from(len as u64));
            let mut want = a.clone();
            accumulate_by_definition(&mut want, Block::from(5));
            let pairs: Vec<Pair> = a
                .iter()
                .map(|&x| Pair(x, Block::from_u128(x.as_u128().rotate_left(9))))
                .collect();
            let mut want_pairs = pairs.clone();
            accumulate_by_definition(&mut want_pairs, Block::from(6));
            for level in Level::ALL {
                let mut got = a.clone();
                with_level(level, || accumulate(&mut got, None, Block::from(5)));
                assert_eq!(got, want, "{level:?}, blocks, length {len}");
                let mut got = pairs.clone();
                with_level(level, || accumulate(&mut got, None, Block::from(6)));
                assert_eq!(got, want_pairs, "{level:?}, pairs, length {len}");
            }
        }
    }

    #[test]
    fn below_is_the_high_word_of_the_product() {
        let mut prg = Prg::from_seed(Block::from(11));
        for m in [1, 2, 3, 1000, 1_429_504, u64::from(u32::MAX)] {
            for x in (0..1000).map(|_| prg.u64()).chain([0, u64::MAX]) {
                let want = (u128::from(x) * u128::from(m)) >> 64;
                assert_eq!(u128::from(below(x, m)), want, "{x} · {m}");
            }
        }
    }

    #[test]
    fn pairs_encode_as_their_halves_do() {
        let n = 1000;
        let code = ExConv::new(n, Block::from(9));
        let (a, b) = (random(2 * n, Block::from(3)), random(2 * n, Block::from(4)));
        let mut pairs: Vec<Pair> = a.iter().zip(&b).map(|(&x, &y)| Pair(x, y)).collect();
        let (mut ea, mut eb) = (a, b);
        code.dual_encode(&mut ea);
        code.dual_encode(&mut eb);
        code.dual_encode(&mut pairs);
        for i in 0..n {
            assert_eq!(pairs[i], Pair(ea[i], eb[i]));
        }
    }

    /// Bits encode as blocks of 0 and 1 do: the accumulator at every length around a word
    /// and the window's, and the whole code with several parts of the expander.
    /// At each level (in a pool of its own: the expander runs on rayon's threads).
    #[test]
    fn bits_encode_as_blocks_of_their_values_do() {
        for level in Level::ALL {
            cpu::pool_at(level, 1)
                .unwrap()
                .install(bits_encode_as_blocks_of_their_values_do_at);
        }
    }

    fn bits_encode_as_blocks_of_their_values_do_at() {
        let pack = |blocks: &[Block]| -> Vec<u64> {
            let mut words = vec![0; blocks.len().div_ceil(64)];
            for (i, b) in blocks.iter().enumerate() {
                words[i / 64] |= u64::from(b.bit(0)) << (i % 64);
            }
            words
        };
        let bits_of = |seed| -> Vec<Block> {
            let mut prg = Prg::from_seed(seed);
            (0..2 * 20_011).map(|_| prg.block() & Block::ONE).collect()
        };
        let e = bits_of(Block::from(12));
        for len in (ACCUMULATOR + 2..200).chain([255, 256, 257, 4099]) {
            let mut want = e[..len].to_vec();
            accumulate(&mut want, None, Block::from(3));
            // Beside blocks (in the blocks' window where the CPU has it) and alone (the
            // word window): the blocks keep to their own definition.
            let mut got = pack(&e[..len]);
            let blocks = random(len, Block::from(4));
            let mut with = blocks.clone();
            accumulate(&mut with, Some(&mut got), Block::from(3));
            assert_eq!(got, pack(&want), "length {len}, beside blocks");
            let mut without = blocks.clone();
            accumulate(&mut without, None, Block::from(3));
            assert_eq!(with, without, "length {len}");
            let mut got = pack(&e[..len]);
            let mut pairs: Vec<Pair> = blocks.iter().map(|&b| Pair(b, !b)).collect();
            accumulate(&mut pairs, Some(&mut got), Block::from(3));
            assert_eq!(got, pack(&want), "length {len}, beside pairs");
            let mut got = pack(&e[..len]);
            accumulate_bits(&mut got, len, Block::from(3));
            assert_eq!(got, pack(&want), "length {len}, alone");
        }
        for n in [ExConv::MIN_OUTPUTS, 100, 8191, 20_011] {
            let code = ExConv::new(n, Block::from(5));
            let noise = random(2 * n, Block::from(13));
            let (mut blocks, mut bits) = (noise.clone(), e[..2 * n].to_vec());
            code.dual_encode(&mut bits);
            let (out, parity) = blocks.split_at_mut(n);
            let (mut out_bits, mut parity_bits) = (pack(&e[..n]), pack(&e[n..2 * n]));
            code.accumulate_with_bits(parity, &mut parity_bits);
            code.expand_with_bits(parity, out, &parity_bits, &mut out_bits);
            let mut want = noise;
            code.dual_encode(&mut want);
            assert_eq!(blocks[..n], want[..n], "n = {n}");
            assert_eq!(out_bits, pack(&bits[..n]), "n = {n}");
        }
    }

    #[test]
    fn one_noise_position_reaches_many_outputs() {
        // A single nonzero parity position spreads through both accumulations and the
        // expander: about half the outputs change (the code is far from sparse).
        let n = 1 << 12;
        let code = ExConv::new(n, Block::from(7));
        let mut e = vec![Block::ZERO; 2 * n];
        e[n + 5] = Block::from(1);
        code.dual_encode(&mut e);
        let touched = e[..n].iter().filter(|&&x| x != Block::ZERO).count();
        assert!(touched > n / 3, "{touched} of {n}");
    }
}
