//! The PPRF step of a silent VOLE or correlated OT (BCGIKRS19 Fig. 7; Ferret's regular
//! noise, YWL+20 Fig. 4), shared by both: S makes one GGM tree per noise block
//! ([`pprf`]) and sends, per tree and level, the left and right sums masked by that level's
//! OT messages, and per tree the correction γ = Σ_j b_j + β (β its base correlation: a
//! base-VOLE value, or Δ itself for a correlated OT); R, whose OT choices are the
//! complements of its path bits, rebuilds every leaf but its point α and sets
//! c_α = γ + z + Σ_{j≠α} c_j = b_α + y·Δ (z = 0 and y = 1 for a correlated OT).

use super::code::{ExConv, Symbol};
use super::noise::Shape;
use super::pprf;
use crate::crypto::{Block, Prg};
use crate::net::Channel;
use crate::{Error, Result};
use rayon::prelude::*;
use std::mem::MaybeUninit;
use std::ops::Range;

/// Trees a PPRF message carries: S sends the trees a group at a time, so that R expands
/// one group while S makes the next.
pub const TREES_A_MESSAGE: usize = 32;

/// The order in which S sends its trees, [`TREES_A_MESSAGE`] a message: the groups that
/// hold the code's parity half (noise positions N/2..N) first, then the others, each part
/// from its last group back. R can then accumulate the parity half ([`ExConv::accumulate`],
/// serial) while it rebuilds the other trees.
struct TreeOrder {
    /// The groups' trees, in the order sent.
    groups: Vec<Range<usize>>,
    /// How many of `groups` hold the parity half: they cover the trees from `split` on.
    parity: usize,
    split: usize,
}

impl TreeOrder {
    fn new(shape: &Shape) -> TreeOrder {
        let t = shape.trees;
        let half = shape.noise_len() / 2 / shape.block();
        let split = half / TREES_A_MESSAGE * TREES_A_MESSAGE;
        let groups: Vec<Range<usize>> = (0..t)
            .step_by(TREES_A_MESSAGE)
            .rev()
            .map(|first| first..(first + TREES_A_MESSAGE).min(t))
            .collect();
        let parity = groups.iter().filter(|g| g.start >= split).count();
        TreeOrder {
            groups,
            parity,
            split,
        }
    }

    /// The groups holding the parity half, then the others.
    fn parts(&self) -> (&[Range<usize>], &[Range<usize>]) {
        self.groups.split_at(self.parity)
    }
}

/// S's side: the trees (on the rayon pool) a group at a time, in [`TreeOrder`], each
/// group's level sums masked by `ots` (h pairs a tree) and its corrections (tree i's with
/// `beta[i]`) sent as soon as they are made; each of the N leaves b given to `put` with
/// its place in `noise`.
pub fn send<T: Symbol>(
    chan: &mut dyn Channel,
    prg: &mut Prg,
    shape: &Shape,
    (ots, beta): (&[[Block; 2]], &[Block]),
    noise: &mut [T],
    put: impl Fn(&mut T, Block) + Sync,
) -> Result<()> {
    let h = shape.depth;
    assert_eq!((ots.len(), beta.len()), (shape.trees * h, shape.trees));
    assert_eq!(noise.len(), shape.noise_len());
    let mut message = Vec::with_capacity(TREES_A_MESSAGE * (2 * h + 1));
    for group in &TreeOrder::new(shape).groups {
        let roots: Vec<Block> = group.clone().map(|_| prg.block()).collect();
        let trees: Vec<(Vec<[Block; 2]>, Block)> = noise
            [group.start * shape.block()..group.end * shape.block()]
            .par_chunks_exact_mut(shape.block())
            .zip(roots)
            .map_init(
                || vec![0; shape.block()],
                |leaves, (tree, root)| {
                    let sums = pprf::expand_sender(root, h, leaves);
                    tree.iter_mut()
                        .zip(leaves.iter())
                        .for_each(|(e, &b)| put(e, b));
                    // The leaves' sum: the last level's two sides.
                    let all = sums[h - 1][0] ^ sums[h - 1][1];
                    (sums, all)
                },
            )
            .collect();
        message.clear();
        for (i, (sums, _)) in group.clone().zip(&trees) {
            for (sum, m) in sums.iter().zip(&ots[i * h..]) {
                message.extend([sum[0] ^ m[0], sum[1] ^ m[1]]);
            }
        }
        message.extend(
            trees
                .iter()
                .zip(&beta[group.clone()])
                .map(|((_, all), beta)| all ^ beta),
        );
        chan.send_blocks(&message)?;
    }
    Ok(())
}

/// A sum over part of R's noise, the positions from the first argument on (Ferret's).
pub type PartSum<'a, T> = &'a (dyn Fn(usize, &[T]) -> Block + Sync);

/// Where R's trees were rebuilt.
pub struct Rebuilt {
    /// Each tree's point, as a noise position.
    pub points: Vec<usize>,
    /// The trees from here on were sent first ([`TreeOrder`]).
    pub split: usize,
    /// `parity_sum(split, noise[split..])`, taken before the accumulation.
    pub parity_sum: Option<Block>,
}

/// R's side: each tree rebuilt (on the rayon pool) with its point's value, a group at a
/// time as the groups come ([`TreeOrder`]). `choices` are R's OT choices (h a tree, the
/// complements of its path bits), `ots` the messages they gave; `put(place, tree,
/// at_point, c)` writes a position's c into its place in `noise` (each place written, all
/// N), at the point c = γ + Σ_{j≠α} c_j, to which a VOLE adds its base value z. With a
/// `code`, once the code's parity half is in, its accumulation (serial) runs beside the
/// other trees, and the sum (for Ferret's check) over it before.
pub fn receive<T: Symbol>(
    chan: &mut dyn Channel,
    shape: &Shape,
    (choices, ots): (&[bool], &[Block]),
    noise: &mut [MaybeUninit<T>],
    put: impl Fn(&mut MaybeUninit<T>, usize, bool, Block) + Sync,
    accumulate: Option<(&ExConv, Option<PartSum<T>>)>,
) -> Result<Rebuilt> {
    let (t, h) = (shape.trees, shape.depth);
    assert_eq!((choices.len(), ots.len()), (t * h, t * h));
    assert_eq!(noise.len(), shape.noise_len());
    let order = TreeOrder::new(shape);
    let (parity_groups, other_groups) = order.parts();
    let (n, split) = (shape.noise_len() / 2, order.split * shape.block());
    let mut points = vec![0; t];
    let mut message = Vec::new();
    let mut rebuild = |groups: &[Range<usize>], part: &mut [MaybeUninit<T>], offset: usize| {
        for group in groups {
            let trees = group.len();
            chan.recv_blocks(trees * (2 * h + 1), &mut message, "the PPRF's sums")?;
            let (sums, corrections) = message.split_at(trees * 2 * h);
            let block = |tree: usize| tree * shape.block() - offset;
            part[block(group.start)..block(group.end)]
                .par_chunks_exact_mut(shape.block())
                .zip(&mut points[group.clone()])
                .enumerate()
                .for_each_init(
                    || vec![0; shape.block()],
                    |leaves, (i, (tree_noise, point))| {
                        let tree = group.start + i;
                        let mut alpha = 0;
                        let off_path: Vec<Block> = (0..h)
                            .map(|l| {
                                let (k, c) = (i * h + l, usize::from(choices[tree * h + l]));
                                alpha = alpha << 1 | (1 - c);
                                sums[2 * k + c] ^ ots[tree * h + l]
                            })
                            .collect();
                        pprf::expand_receiver(alpha, &off_path, leaves);
                        let others = leaves.iter().fold(0, |acc, c| acc ^ c);
                        leaves[alpha] = corrections[i] ^ others;
                        for (j, (e, &c)) in tree_noise.iter_mut().zip(leaves.iter()).enumerate() {
                            put(e, tree, j == alpha, c);
                        }
                        *point = tree * shape.block() + alpha;
                    },
                );
        }
        Ok::<_, Error>(())
    };
    let (others, parity_side) = noise.split_at_mut(split);
    rebuild(parity_groups, parity_side, split)?;
    // SAFETY: the parity groups' trees tile `parity_side` and `put` wrote each of its
    // symbols; a `MaybeUninit<T>` has a `T`'s layout.
    let parity_side = unsafe { &mut *(parity_side as *mut [MaybeUninit<T>] as *mut [T]) };
    let (parity_sum, rebuilt) = rayon::join(
        || {
            // The sum over these positions before the code changes them.
            let (code, sum) = accumulate?;
            let sum = sum.map(|sum| sum(split, parity_side));
            code.accumulate(&mut parity_side[n - split..]);
            sum
        },
        || rebuild(other_groups, others, 0),
    );
    rebuilt?;
    Ok(Rebuilt {
        points,
        split,
        parity_sum,
    })
}
