//! The punctured PRF of silent VOLE: a GGM tree per noise block (BCGIKRS19 §5; Ferret's
//! "regular" form, YWL+20 Fig. 4). The sender expands a random root into 2^h leaves and,
//! for each level, the sums of its left and of its right children; the receiver, told the
//! sum of the side off its path at each level (by one OT per level whose choice is the
//! complement of its path bit), rebuilds every leaf but the one at its point α.
//!
//! A node's children are G(x) = (AES_{k0}(x) + x, AES_{k1}(x) + x) under two fixed public
//! keys (a correlation-robust hash in each half; GKWY20).

use crate::crypto::{Aes, Block};

/// The two fixed keys of the tree's length-doubling PRG.
fn keys() -> &'static [Aes; 2] {
    static KEYS: std::sync::OnceLock<[Aes; 2]> = std::sync::OnceLock::new();
    KEYS.get_or_init(|| {
        [
            Aes::new(Block::from_u128(0x7070_7266_2d6c_6566_742d_6368_696c_6421)),
            Aes::new(Block::from_u128(0x7070_7266_2d72_6967_6874_2d63_6869_6c64)),
        ]
    })
}

/// Expands the level held in `level[..half]` to the next one in `level[..2·half]`, in
/// place: `child[2i + b] = G_b(parent[i])`; returns the XORs of the new level's left (even)
/// and right (odd) nodes. Parents are taken from the last in chunks, each read before its
/// children (at 2i ≥ i) can overwrite it.
fn expand_level(level: &mut [Block], half: usize) -> [Block; 2] {
    assert!(level.len() >= 2 * half);
    let mut sums = [Block::ZERO; 2];
    let end = wide::expand(level, half, &mut sums);
    const CHUNK: usize = 64;
    let (left, right) = (&keys()[0], &keys()[1]);
    let (mut l, mut r) = ([Block::ZERO; CHUNK], [Block::ZERO; CHUNK]);
    let mut end = end;
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        let n = end - start;
        let mut parents = [Block::ZERO; CHUNK];
        parents[..n].copy_from_slice(&level[start..end]);
        left.encrypt_blocks_to(&parents[..n], &mut l[..n]);
        right.encrypt_blocks_to(&parents[..n], &mut r[..n]);
        for i in 0..n {
            let children = [l[i] ^ parents[i], r[i] ^ parents[i]];
            level[2 * (start + i)..2 * (start + i) + 2].copy_from_slice(&children);
            sums[0] ^= children[0];
            sums[1] ^= children[1];
        }
        end = start;
    }
    sums
}

/// The tree's PRG on VAES, 512-bit (AVX-512) or 256-bit (AVX2): each register holds
/// parents each twice and runs the rounds of k0 in its even lanes and of k1 in its odd
/// ones, so it comes out as the children in their place in the next level; eight
/// registers (sixteen or eight parents) go through the rounds side by side to hide the AES
/// latency. The level's sums are XORed up on the way.
mod wide {
    use super::Block;
    #[cfg(target_arch = "x86_64")]
    use crate::crypto::lanes::{self, Lanes};
    #[cfg(target_arch = "x86_64")]
    use crate::util::cpu::{has_all, Feature};

    /// Registers a run.
    const REGISTERS: usize = 8;

    /// Expands (as [`super::expand_level`]) the parents from the last down in whole runs,
    /// where VAES and AVX-512F or AVX2 may be used ([`crate::util::cpu`]), adding the
    /// children into `sums`; returns how many parents are left, from the first (all of
    /// them elsewhere).
    pub(super) fn expand(level: &mut [Block], half: usize, sums: &mut [Block; 2]) -> usize {
        #[cfg(target_arch = "x86_64")]
        if let [Some(k0), Some(k1)] = super::keys().each_ref().map(|k| k.round_keys()) {
            assert!(level.len() >= 2 * half);
            let level = level.as_mut_ptr();
            if has_all(&[Feature::Avx512f, Feature::Vaes]) {
                // SAFETY: the features the function is compiled for were detected
                // (`cpu::has`); `level` holds the 2·`half` blocks written (asserted).
                return unsafe { runs512(k0, k1, level, half, sums) };
            }
            if has_all(&[Feature::Avx2, Feature::Vaes]) {
                // SAFETY: as above, with AVX2.
                return unsafe { runs256(k0, k1, level, half, sums) };
            }
        }
        let _ = (level, sums);
        half
    }

    /// [`runs`] on 512-bit registers.
    ///
    /// # Safety
    /// As [`runs`]; the CPU has AVX-512F and VAES.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,vaes")]
    unsafe fn runs512(
        k0: &[Block; 11],
        k1: &[Block; 11],
        level: *mut Block,
        half: usize,
        sums: &mut [Block; 2],
    ) -> usize {
        // SAFETY: AVX-512F and VAES, what `__m512i`'s rounds need, and `level` as `runs`
        // needs it (this function's contract).
        unsafe { runs::<std::arch::x86_64::__m512i>(k0, k1, level, half, sums) }
    }

    /// [`runs`] on 256-bit registers.
    ///
    /// # Safety
    /// As [`runs`]; the CPU has AVX2 and VAES.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,vaes")]
    unsafe fn runs256(
        k0: &[Block; 11],
        k1: &[Block; 11],
        level: *mut Block,
        half: usize,
        sums: &mut [Block; 2],
    ) -> usize {
        // SAFETY: AVX2 and VAES, what `__m256i`'s rounds need, and `level` as `runs` needs
        // it (this function's contract).
        unsafe { runs::<std::arch::x86_64::__m256i>(k0, k1, level, half, sums) }
    }

    /// The parents from the last down in whole runs; returns how many are left.
    ///
    /// # Safety
    /// The CPU has what `V` needs; `level` is valid for 2·`half` blocks.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn runs<V: Lanes>(
        k0: &[Block; 11],
        k1: &[Block; 11],
        level: *mut Block,
        half: usize,
        sums: &mut [Block; 2],
    ) -> usize {
        let per = V::BLOCKS / 2;
        let run = REGISTERS * per;
        // SAFETY: the CPU has `V`'s features (the caller's contract).
        let keys: [V; 11] =
            std::array::from_fn(|r| unsafe { V::from_blocks([k0[r], k1[r], k0[r], k1[r]]) });
        // SAFETY: as above.
        let mut all = unsafe { V::zero() };
        let mut end = half;
        while end >= run {
            let start = end - run;
            // Every parent of the run is read before any child is written: the children
            // (from 2·start) overwrite only this run's parents and later ones.
            // SAFETY: `V`'s features; the run's parents (`per` = `BLOCKS / 2` a register)
            // are below `end ≤ half`, its children below 2·`end`, inside the 2·`half`
            // blocks at `level` (the caller's contract).
            unsafe {
                let x: [V; REGISTERS] =
                    std::array::from_fn(|j| V::each_twice(level.add(start + per * j)));
                let s = lanes::encrypt(x, &keys);
                for (j, (s, x)) in s.iter().zip(&x).enumerate() {
                    let children = s.xor(*x);
                    all = all.xor(children);
                    children.store(level.add(2 * start + V::BLOCKS * j));
                }
            }
            end = start;
        }
        // SAFETY: the CPU has `V`'s features (the caller's contract).
        let lanes = unsafe { all.blocks() };
        sums[0] ^= lanes[0] ^ lanes[2];
        sums[1] ^= lanes[1] ^ lanes[3];
        end
    }
}

/// The sender's tree from `root`: its 2^`depth` leaves into `leaves`, and for each level
/// 1..=depth the sums of its left and right nodes.
pub fn expand_sender(root: Block, depth: usize, leaves: &mut [Block]) -> Vec<[Block; 2]> {
    assert_eq!(leaves.len(), 1 << depth);
    leaves[0] = root;
    (1..=depth)
        .map(|l| expand_level(leaves, 1 << (l - 1)))
        .collect()
}

/// The receiver's tree with the point `alpha` (below 2^`depth`; its bits from the top are
/// the path), from the sum of each level's side off the path (`off_path[l]` for level
/// l + 1): every leaf but `leaves[alpha]` (left 0) as the sender has it.
pub fn expand_receiver(alpha: usize, off_path: &[Block], leaves: &mut [Block]) {
    let depth = off_path.len();
    assert_eq!(leaves.len(), 1 << depth);
    assert!(alpha < leaves.len());
    for l in 1..=depth {
        let bit = (alpha >> (depth - l)) & 1;
        let on_path = alpha >> (depth - l);
        if l == 1 {
            leaves[1 - bit] = off_path[0];
        } else {
            // The punctured parent's children come out wrong; the one off the path is the
            // side's sum less every other node on that side.
            let sums = expand_level(leaves, 1 << (l - 1));
            let sibling = on_path ^ 1;
            leaves[sibling] ^= off_path[l - 1] ^ sums[1 - bit];
        }
        leaves[on_path] = Block::ZERO;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Prg;
    use crate::util::cpu::{with_level, Level};

    /// The tree as defined, a node at a time: its leaves and each level's side sums.
    fn tree_by_definition(root: Block, depth: usize) -> (Vec<Block>, Vec<[Block; 2]>) {
        let mut level = vec![root];
        let mut sums = Vec::new();
        for _ in 0..depth {
            level = level
                .iter()
                .flat_map(|&x| keys().each_ref().map(|k| k.encrypt(x) ^ x))
                .collect();
            let side = |b: usize| {
                level
                    .iter()
                    .skip(b)
                    .step_by(2)
                    .fold(Block::ZERO, |acc, x| acc ^ x)
            };
            sums.push([side(0), side(1)]);
        }
        (level, sums)
    }

    /// Every level size, so the VAES runs (at the levels that allow them) and the
    /// portable chunks, and where they meet.
    #[test]
    fn the_sender_expands_as_defined() {
        let mut prg = Prg::from_seed(Block::from(7));
        for depth in 1..=11 {
            let root = prg.block();
            let want = tree_by_definition(root, depth);
            for level in Level::ALL {
                let mut leaves = vec![Block::ZERO; 1 << depth];
                let sums = with_level(level, || expand_sender(root, depth, &mut leaves));
                assert_eq!((leaves, sums), want, "{level:?}, depth {depth}");
            }
        }
    }

    #[test]
    fn the_receiver_has_every_leaf_but_its_point() {
        for level in Level::ALL {
            with_level(level, the_receiver_has_every_leaf_but_its_point_at);
        }
    }

    fn the_receiver_has_every_leaf_but_its_point_at() {
        let mut prg = Prg::from_seed(Block::from(8));
        for depth in [1, 2, 5, 10] {
            for alpha in [0, 1, (1 << depth) - 1, prg.below(1 << depth) as usize] {
                let root = prg.block();
                let (sent, sums) = tree_by_definition(root, depth);
                // What the OTs give: at level l, the side whose bit is off the path.
                let off_path: Vec<Block> = (1..=depth)
                    .map(|l| sums[l - 1][1 - ((alpha >> (depth - l)) & 1)])
                    .collect();
                let mut got = vec![Block::ZERO; 1 << depth];
                expand_receiver(alpha, &off_path, &mut got);
                for j in 0..1 << depth {
                    match j == alpha {
                        true => assert_eq!(got[j], Block::ZERO),
                        false => assert_eq!(got[j], sent[j], "depth {depth}, α {alpha}, j {j}"),
                    }
                }
                assert_ne!(sent[alpha], Block::ZERO);
            }
        }
    }
}
