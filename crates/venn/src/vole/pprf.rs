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
            Aes::new(0x7070_7266_2d6c_6566_742d_6368_696c_6421),
            Aes::new(0x7070_7266_2d72_6967_6874_2d63_6869_6c64),
        ]
    })
}

/// Expands the level held in `level[..half]` to the next one in `level[..2·half]`, in
/// place: `child[2i + b] = G_b(parent[i])`. Parents are taken from the last in chunks, each
/// copied out before its children (at 2i ≥ i) can overwrite it.
fn expand_level(level: &mut [Block], half: usize) {
    const CHUNK: usize = 64;
    let (left, right) = (&keys()[0], &keys()[1]);
    let (mut l, mut r) = ([0; CHUNK], [0; CHUNK]);
    let mut end = half;
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        let n = end - start;
        let mut parents = [0; CHUNK];
        parents[..n].copy_from_slice(&level[start..end]);
        left.encrypt_blocks_to(&parents[..n], &mut l[..n]);
        right.encrypt_blocks_to(&parents[..n], &mut r[..n]);
        for i in 0..n {
            level[2 * (start + i)] = l[i] ^ parents[i];
            level[2 * (start + i) + 1] = r[i] ^ parents[i];
        }
        end = start;
    }
}

/// The XORs of a level's left (even) and right (odd) nodes.
fn side_sums(level: &[Block]) -> [Block; 2] {
    let mut sums = [0; 2];
    for pair in level.chunks_exact(2) {
        sums[0] ^= pair[0];
        sums[1] ^= pair[1];
    }
    sums
}

/// The sender's tree from `root`: its 2^`depth` leaves into `leaves`, and for each level
/// 1..=depth the sums of its left and right nodes.
pub fn expand_sender(root: Block, depth: usize, leaves: &mut [Block]) -> Vec<[Block; 2]> {
    assert_eq!(leaves.len(), 1 << depth);
    let mut sums = Vec::with_capacity(depth);
    leaves[0] = root;
    for l in 1..=depth {
        expand_level(leaves, 1 << (l - 1));
        sums.push(side_sums(&leaves[..1 << l]));
    }
    sums
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
            expand_level(leaves, 1 << (l - 1));
            let next = &mut leaves[..1 << l];
            let sibling = on_path ^ 1;
            next[sibling] = 0;
            next[sibling] = off_path[l - 1] ^ side_sums(next)[1 - bit];
        }
        leaves[on_path] = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Prg;

    #[test]
    fn the_receiver_has_every_leaf_but_its_point() {
        let mut prg = Prg::from_seed(8);
        for depth in [1, 2, 5, 10] {
            for alpha in [0, 1, (1 << depth) - 1, prg.below(1 << depth) as usize] {
                let root = prg.block();
                let mut sent = vec![0; 1 << depth];
                let sums = expand_sender(root, depth, &mut sent);
                // What the OTs give: at level l, the side whose bit is off the path.
                let off_path: Vec<Block> = (1..=depth)
                    .map(|l| sums[l - 1][1 - ((alpha >> (depth - l)) & 1)])
                    .collect();
                let mut got = vec![0; 1 << depth];
                expand_receiver(alpha, &off_path, &mut got);
                for j in 0..1 << depth {
                    match j == alpha {
                        true => assert_eq!(got[j], 0),
                        false => assert_eq!(got[j], sent[j], "depth {depth}, α {alpha}, j {j}"),
                    }
                }
                assert_ne!(sent[alpha], 0);
            }
        }
    }
}
