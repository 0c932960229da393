//! The half-tree: the punctured PRF of a silent correlated OT with one OT and one block a
//! level (Guo–Yang–Wang–Zhang–Xie–Zhang–Liu, "Half-Tree: Halving the Cost of Tree
//! Expansion in COT and DPF", Eurocrypt 2023, ePrint 2022/1431, the single-point COT of
//! its §4), where a GGM tree ([`super::pprf`]) takes two of each.
//!
//! S's first level is (s, s ⊕ Δ) for a random s and its COT's Δ; a node x has the children
//! H(x) and x ⊕ H(x), H(x) = π(σ(x)) ⊕ σ(x) the circular correlation-robust hash of
//! fixed-key AES ([`pi`]) (GKWY20 §7.3, σ a linear orthomorphism). A node's children sum to it, so
//! every level sums to Δ, and the right side's sum is the left's plus Δ: one correlated OT
//! of Δ a level gives R the sum of the side off its path (S sends the left sum masked by
//! its COT value q; R, with choice c and t = q ⊕ c·Δ, unmasks the sum of side c), and the
//! leaves need no correction: R's value at its point, the sum of the others, is b_α ⊕ Δ.
//! One AES call a node, where a GGM tree takes two.
//!
//! Layout: level l's 2^l nodes are the first 2^l blocks, node i's children i (left) and
//! i + 2^l (right), so bit l − 1 of a leaf's index is its path's turn at level l (1 right).

use crate::crypto::{Aes, Block};

/// The tree's π: fixed-key AES under a key of its own, apart from the π of the hashes
/// that other protocols (and the triples) apply to these COTs' outputs.
fn pi() -> &'static Aes {
    static PI: std::sync::OnceLock<Aes> = std::sync::OnceLock::new();
    PI.get_or_init(|| Aes::new(Block::from_u128(0x6861_6c66_2d74_7265_652d_6363_722d_7069)))
}

/// σ(x_hi ‖ x_lo) = (x_hi ⊕ x_lo) ‖ x_hi: linear, and x ↦ σ(x) ⊕ x is a permutation too.
fn sigma(x: Block) -> Block {
    let hi = x.high_u64();
    Block::from_halves(hi, hi ^ x.low_u64())
}

/// Expands the level in `level[..half]` to the next one in `level[..2·half]`, in place
/// (each parent's left child where it was, its right one `half` on); returns the sum of the
/// new left side.
fn expand_level(level: &mut [Block], half: usize) -> Block {
    let (left, right) = level[..2 * half].split_at_mut(half);
    let mut sum = Block::ZERO;
    let done = wide::expand(left, right, &mut sum);
    const CHUNK: usize = 64;
    let pi = pi();
    for (left, right) in left[done..]
        .chunks_mut(CHUNK)
        .zip(right[done..].chunks_mut(CHUNK))
    {
        right.copy_from_slice(left);
        left.iter_mut().for_each(|x| *x = sigma(*x));
        pi.encrypt_blocks(left);
        for (l, r) in left.iter_mut().zip(right.iter_mut()) {
            *l ^= sigma(*r);
            *r ^= *l;
            sum ^= *l;
        }
    }
    sum
}

/// The level's expansion on VAES, 512-bit (AVX-512) or 256-bit (AVX2): four or two
/// parents a register, σ by a shuffle, eight registers through the rounds side by side to
/// hide the AES latency, the left sum XORed up on the way.
mod wide {
    use super::Block;
    #[cfg(target_arch = "x86_64")]
    use crate::crypto::lanes::{self, Lanes};
    #[cfg(target_arch = "x86_64")]
    use crate::util::cpu::{has_all, Feature};

    /// Registers a run.
    const REGISTERS: usize = 8;

    /// Expands (as [`super::expand_level`]) the parents in `left` from the first in whole
    /// runs, their right children into `right`, where VAES and AVX-512F or AVX2 may be
    /// used, adding the left children into `sum`; returns how many parents it expanded
    /// (none elsewhere).
    pub(super) fn expand(left: &mut [Block], right: &mut [Block], sum: &mut Block) -> usize {
        #[cfg(target_arch = "x86_64")]
        if let Some(keys) = super::pi().round_keys() {
            assert_eq!(left.len(), right.len());
            let (l, r, half) = (left.as_mut_ptr(), right.as_mut_ptr(), left.len());
            if has_all(&[Feature::Avx512f, Feature::Vaes]) {
                // SAFETY: the features the function is compiled for were detected
                // (`cpu::has`); `left` and `right` are two slices of `half` blocks each.
                return unsafe { runs512(keys, l, r, half, sum) };
            }
            if has_all(&[Feature::Avx2, Feature::Vaes]) {
                // SAFETY: as above, with AVX2.
                return unsafe { runs256(keys, l, r, half, sum) };
            }
        }
        let _ = (left, right, sum);
        0
    }

    /// [`runs`] on 512-bit registers.
    ///
    /// # Safety
    /// As [`runs`]; the CPU has AVX-512F and VAES.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,vaes")]
    unsafe fn runs512(
        k: &[Block; 11],
        left: *mut Block,
        right: *mut Block,
        half: usize,
        sum: &mut Block,
    ) -> usize {
        // SAFETY: AVX-512F and VAES, what `__m512i`'s rounds need, and the pointers as
        // `runs` needs them (this function's contract).
        unsafe { runs::<std::arch::x86_64::__m512i>(k, left, right, half, sum) }
    }

    /// [`runs`] on 256-bit registers.
    ///
    /// # Safety
    /// As [`runs`]; the CPU has AVX2 and VAES.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,vaes")]
    unsafe fn runs256(
        k: &[Block; 11],
        left: *mut Block,
        right: *mut Block,
        half: usize,
        sum: &mut Block,
    ) -> usize {
        // SAFETY: AVX2 and VAES, what `__m256i`'s rounds need, and the pointers as `runs`
        // needs them (this function's contract).
        unsafe { runs::<std::arch::x86_64::__m256i>(k, left, right, half, sum) }
    }

    /// The parents of `left` in whole runs of [`REGISTERS`] registers; returns how many.
    ///
    /// # Safety
    /// The CPU has what `V` needs; `left` and `right` are valid for `half` blocks each and
    /// do not overlap.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn runs<V: Lanes>(
        k: &[Block; 11],
        left: *mut Block,
        right: *mut Block,
        half: usize,
        sum: &mut Block,
    ) -> usize {
        let run = REGISTERS * V::BLOCKS;
        // SAFETY: the CPU has `V`'s features (the caller's contract).
        let keys: [V; 11] = std::array::from_fn(|r| unsafe { V::from_blocks([k[r]; 4]) });
        // SAFETY: as above.
        let mut all = unsafe { V::zero() };
        let mut start = 0;
        while start + run <= half {
            // SAFETY: `V`'s features; register j's `BLOCKS` blocks from `start + BLOCKS·j`
            // are inside the run, inside the `half` blocks at `left` and at `right`
            // (`start + run ≤ half`; the caller's contract: valid, not overlapping).
            unsafe {
                let x: [V; REGISTERS] =
                    std::array::from_fn(|j| V::load(left.add(start + V::BLOCKS * j)));
                // σ(x) a lane at a time: (x_hi, x_lo) swapped, then x_hi added to the top half.
                let s = x.map(|x| x.swap_halves().xor(x.high_only()));
                let c = lanes::encrypt(s, &keys);
                for (j, ((c, s), x)) in c.iter().zip(&s).zip(&x).enumerate() {
                    let l = c.xor(*s);
                    all = all.xor(l);
                    l.store(left.add(start + V::BLOCKS * j));
                    x.xor(l).store(right.add(start + V::BLOCKS * j));
                }
            }
            start += run;
        }
        // SAFETY: the CPU has `V`'s features (the caller's contract).
        *sum ^= unsafe { all.blocks() }
            .iter()
            .fold(Block::ZERO, |a, b| a ^ b);
        start
    }
}

/// S's tree for the COT of `delta` from the seed `s`: its 2^`depth` leaves (summing to
/// Δ) into `leaves`; returns each level's left sum, levels 1 to `depth`.
pub(super) fn expand_sender(
    s: Block,
    delta: Block,
    depth: usize,
    leaves: &mut [Block],
) -> Vec<Block> {
    assert!(depth >= 1);
    assert_eq!(leaves.len(), 1 << depth);
    leaves[0] = s;
    leaves[1] = s ^ delta;
    let mut sums = Vec::with_capacity(depth);
    sums.push(s);
    sums.extend((1..depth).map(|l| expand_level(leaves, 1 << l)));
    sums
}

/// R's tree with the point `alpha` (below 2^`depth`), from each level's sum of the side off
/// its path (`off_path[l]` for level l + 1): every leaf but `leaves[alpha]` as S has it,
/// and there the sum of the others (b_α ⊕ Δ).
///
/// R keeps its on-path node at the sum of the other nodes of its level (the true node ⊕ Δ):
/// then the nodes it expands sum to zero, so its two computed sides have one sum, and the
/// off-path child is the known side's sum less that side's other nodes.
pub(super) fn expand_receiver(alpha: usize, off_path: &[Block], leaves: &mut [Block]) {
    let depth = off_path.len();
    assert!(depth >= 1);
    assert_eq!(leaves.len(), 1 << depth);
    assert!(alpha < leaves.len());
    leaves[0] = off_path[0];
    leaves[1] = off_path[0];
    for (l, &known) in off_path.iter().enumerate().skip(1) {
        let half = 1 << l;
        let on_path_parent = alpha & (half - 1);
        let parent = leaves[on_path_parent];
        let side_sum = expand_level(leaves, half);
        let turn = (alpha >> l) & 1;
        let (on, off) = (
            on_path_parent + turn * half,
            on_path_parent + (1 - turn) * half,
        );
        leaves[off] ^= known ^ side_sum;
        leaves[on] = parent ^ leaves[off];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Prg;
    use crate::util::cpu::{with_level, Level};

    /// The tree as defined, node by node in index order: its leaves and its levels.
    fn tree_by_definition(s: Block, delta: Block, depth: usize) -> Vec<Vec<Block>> {
        let h = |x: Block| pi().encrypt(sigma(x)) ^ sigma(x);
        let mut levels = vec![vec![s, s ^ delta]];
        for _ in 1..depth {
            let last = levels.last().unwrap();
            let left: Vec<Block> = last.iter().map(|&x| h(x)).collect();
            let right: Vec<Block> = last.iter().zip(&left).map(|(x, l)| x ^ l).collect();
            levels.push([left, right].concat());
        }
        levels
    }

    #[test]
    fn sigma_is_an_orthomorphism_on_samples() {
        let mut prg = Prg::from_seed(Block::from(1));
        for _ in 0..100 {
            let (x, y) = (prg.block(), prg.block());
            assert_eq!(sigma(x ^ y), sigma(x) ^ sigma(y));
            assert_ne!(sigma(x) ^ x, sigma(y) ^ y);
        }
        // σ(x) ⊕ x = x_lo ‖ (x_hi ⊕ x_lo): zero only at zero.
        assert_eq!(sigma(Block::ONE) ^ Block::ONE, Block::from_halves(1, 1));
    }

    /// At each level (the VAES runs where it allows them, the chunks elsewhere).
    #[test]
    fn the_sender_expands_as_defined_and_every_level_sums_to_delta() {
        for level in Level::ALL {
            with_level(level, || the_sender_expands_as_defined_at(level));
        }
    }

    fn the_sender_expands_as_defined_at(level: Level) {
        let mut prg = Prg::from_seed(Block::from(7));
        for depth in 1..=11 {
            let (s, delta) = (prg.block(), prg.block());
            let mut leaves = vec![Block::ZERO; 1 << depth];
            let sums = expand_sender(s, delta, depth, &mut leaves);
            let levels = tree_by_definition(s, delta, depth);
            assert_eq!(&leaves, levels.last().unwrap(), "{level:?}, depth {depth}");
            for (l, level) in levels.iter().enumerate() {
                let (left, right) = level.split_at(level.len() / 2);
                let sum = |side: &[Block]| side.iter().fold(Block::ZERO, |a, b| a ^ b);
                assert_eq!(sums[l], sum(left), "depth {depth}, level {}", l + 1);
                assert_eq!(sum(left) ^ sum(right), delta);
            }
        }
    }

    #[test]
    fn the_receiver_has_every_leaf_but_its_point_and_there_b_plus_delta() {
        for level in Level::ALL {
            with_level(level, the_receiver_has_every_leaf_but_its_point_at);
        }
    }

    fn the_receiver_has_every_leaf_but_its_point_at() {
        let mut prg = Prg::from_seed(Block::from(8));
        for depth in [1, 2, 5, 11] {
            for alpha in [0, 1, (1 << depth) - 1, prg.below(1 << depth) as usize] {
                let (s, delta) = (prg.block(), prg.block());
                let levels = tree_by_definition(s, delta, depth);
                let sent = levels.last().unwrap();
                let left_sums: Vec<Block> = levels
                    .iter()
                    .map(|l| l[..l.len() / 2].iter().fold(Block::ZERO, |a, b| a ^ b))
                    .collect();
                // What the COTs give: at level l, the sum of the side whose turn α does
                // not take (the right side's is the left's plus Δ).
                let off_path: Vec<Block> = (0..depth)
                    .map(|l| {
                        left_sums[l]
                            ^ if (alpha >> l) & 1 == 0 {
                                delta
                            } else {
                                Block::ZERO
                            }
                    })
                    .collect();
                let mut got = vec![Block::ZERO; 1 << depth];
                expand_receiver(alpha, &off_path, &mut got);
                for j in 0..1 << depth {
                    match j == alpha {
                        true => assert_eq!(got[j], sent[j] ^ delta, "depth {depth}, α {alpha}"),
                        false => assert_eq!(got[j], sent[j], "depth {depth}, α {alpha}, j {j}"),
                    }
                }
            }
        }
    }
}
