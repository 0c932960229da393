//! The PPRF step of a silent VOLE or correlated OT (BCGIKRS19 Fig. 7; Ferret's regular
//! noise, YWL+20 Fig. 4), shared by both: S makes one tree per noise block and sends, per
//! tree and level, what gives R the sum of the level's side off its path; R, whose OT
//! choices are the complements of its path bits, rebuilds every leaf but its point α. The
//! trees come in two kinds ([`Sending`]):
//! - GGM trees ([`pprf`], the VOLE's): the left and right sums masked by a random OT's two
//!   messages, and per tree the correction γ = Σ_j b_j + β (β its base-VOLE value), so that
//!   R sets c_α = γ + z + Σ_{j≠α} c_j = b_α + y·Δ;
//! - half-trees ([`half_tree`], the correlated OT's): the left sum masked by a correlated
//!   OT of the tree's own Δ, every level summing to Δ, so that R's c_α = Σ_{j≠α} c_j =
//!   b_α + Δ with no correction.

use super::code::{ExConv, Symbol};
use super::noise::Shape;
use super::{half_tree, pprf};
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

/// What S's trees are and how their level sums reach R.
#[derive(Clone, Copy)]
pub(super) enum Sending<'a> {
    /// GGM trees: a level's two sums masked by a random OT's two messages (`ots`, h a
    /// tree), and tree i's correction with its base correlation `beta[i]`.
    Ggm {
        ots: &'a [[Block; 2]],
        beta: &'a [Block],
    },
    /// Half-trees of the correlated OT of `delta`: a level's left sum masked by the value q
    /// of a correlated OT of the same Δ (`q`, h a tree).
    Half { delta: Block, q: &'a [Block] },
}

/// The kind of the trees R receives: GGM trees ([`Sending::Ggm`]), its OTs' messages
/// those its choices gave; or half-trees ([`Sending::Half`]), its correlated OTs' values
/// t = q ⊕ c·Δ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tree {
    Ggm,
    Half,
}

impl Tree {
    /// Blocks of level sums a tree of depth `h` sends: two a level or one.
    fn sum_blocks(self, h: usize) -> usize {
        match self {
            Tree::Ggm => 2 * h,
            Tree::Half => h,
        }
    }

    /// Blocks a tree of depth `h` sends: its level sums, and a GGM tree's correction.
    pub(super) fn message_blocks(self, h: usize) -> usize {
        self.sum_blocks(h) + usize::from(self == Tree::Ggm)
    }

    /// The point whose path R's choices (the complements of its turns, the first level's
    /// first) give: a GGM tree's first turn is its index's top bit, a half-tree's its low.
    fn point(self, choices: &[bool]) -> usize {
        let turns = choices.iter().map(|&c| usize::from(!c));
        match self {
            Tree::Ggm => turns.fold(0, |alpha, t| alpha << 1 | t),
            Tree::Half => turns.rev().fold(0, |alpha, t| alpha << 1 | t),
        }
    }
}

/// S's side: the trees (on the rayon pool) a group at a time, in [`TreeOrder`], each
/// group's messages sent as soon as they are made (the level sums of all its trees, then a
/// GGM tree's corrections); each of the N leaves b given to `put` with its place in
/// `noise`.
pub(super) fn send<T: Symbol>(
    chan: &mut dyn Channel,
    prg: &mut Prg,
    shape: &Shape,
    sending: Sending,
    noise: &mut [T],
    put: impl Fn(&mut T, Block) + Sync,
) -> Result<()> {
    let h = shape.depth;
    let (ots, kind) = match sending {
        Sending::Ggm { ots, beta } => {
            assert_eq!(beta.len(), shape.trees);
            (ots.len(), Tree::Ggm)
        }
        Sending::Half { q, .. } => (q.len(), Tree::Half),
    };
    assert_eq!(ots, shape.trees * h);
    assert_eq!(noise.len(), shape.noise_len());
    let mut message = Vec::with_capacity(TREES_A_MESSAGE * kind.message_blocks(h));
    for group in &TreeOrder::new(shape).groups {
        let roots: Vec<Block> = group.clone().map(|_| prg.block()).collect();
        // Each tree's masked level sums, and a GGM tree's correction.
        let trees: Vec<(Vec<Block>, Option<Block>)> = noise
            [group.start * shape.block()..group.end * shape.block()]
            .par_chunks_exact_mut(shape.block())
            .zip(roots)
            .enumerate()
            .map_init(
                || vec![Block::ZERO; shape.block()],
                |leaves, (i, (tree, root))| {
                    let i = group.start + i;
                    let sent = match sending {
                        Sending::Ggm { ots, beta } => {
                            let sums = pprf::expand_sender(root, h, leaves);
                            let masked = (sums.iter().zip(&ots[i * h..]))
                                .flat_map(|(sum, m)| [sum[0] ^ m[0], sum[1] ^ m[1]]);
                            // The leaves' sum: the last level's two sides.
                            let all = sums[h - 1][0] ^ sums[h - 1][1];
                            (masked.collect(), Some(all ^ beta[i]))
                        }
                        Sending::Half { delta, q } => {
                            let sums = half_tree::expand_sender(root, delta, h, leaves);
                            let masked = sums.iter().zip(&q[i * h..]).map(|(s, q)| s ^ q);
                            (masked.collect(), None)
                        }
                    };
                    tree.iter_mut()
                        .zip(leaves.iter())
                        .for_each(|(e, &b)| put(e, b));
                    sent
                },
            )
            .collect();
        message.clear();
        message.extend(trees.iter().flat_map(|(sums, _)| sums));
        message.extend(trees.iter().filter_map(|(_, correction)| *correction));
        chan.send_blocks(&message)?;
    }
    Ok(())
}

/// A sum over part of R's noise, the positions from the first argument on (Ferret's).
pub(super) type PartSum<'a, T> = &'a (dyn Fn(usize, &[T]) -> Block + Sync);

/// Where R's trees were rebuilt.
pub(super) struct Rebuilt {
    /// Each tree's point, as a noise position.
    pub points: Vec<usize>,
    /// The trees from here on were sent first ([`TreeOrder`]).
    pub split: usize,
    /// `parity_sum(split, noise[split..])`, taken before the accumulation.
    pub parity_sum: Option<Block>,
}

/// R's side: each tree (of kind `tree_kind`) rebuilt (on the rayon pool) with its point's value,
/// a group at a time as the groups come ([`TreeOrder`]). `choices` are R's OT choices (h a
/// tree, the complements of its path bits), `ots` what they gave (a random OT's message,
/// or a correlated OT's t); `put(place, tree, at_point, c)` writes a position's c into its
/// place in `noise` (each place written, all N), at the point the sum of the others (a GGM
/// tree's plus its correction), to which a VOLE adds its base value z. With a `code`,
/// once the code's parity half is in, its accumulation (serial) runs beside the other
/// trees, and the sum (for Ferret's check) over it before.
pub(super) fn receive<T: Symbol>(
    chan: &mut dyn Channel,
    shape: &Shape,
    (tree_kind, choices, ots): (Tree, &[bool], &[Block]),
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
    let level_blocks = tree_kind.sum_blocks(h);
    let mut rebuild = |groups: &[Range<usize>], part: &mut [MaybeUninit<T>], offset: usize| {
        for group in groups {
            let trees = group.len();
            let blocks = trees * tree_kind.message_blocks(h);
            chan.recv_blocks(blocks, &mut message, "the PPRF's sums")?;
            let (sums, corrections) = message.split_at(trees * level_blocks);
            let block = |tree: usize| tree * shape.block() - offset;
            part[block(group.start)..block(group.end)]
                .par_chunks_exact_mut(shape.block())
                .zip(&mut points[group.clone()])
                .enumerate()
                .for_each_init(
                    || vec![Block::ZERO; shape.block()],
                    |leaves, (i, (tree_noise, point))| {
                        let tree = group.start + i;
                        let (choices, ots) = (&choices[tree * h..][..h], &ots[tree * h..][..h]);
                        let alpha = tree_kind.point(choices);
                        let sums = &sums[i * level_blocks..][..level_blocks];
                        match tree_kind {
                            Tree::Ggm => {
                                let off_path: Vec<Block> = (0..h)
                                    .map(|l| sums[2 * l + usize::from(choices[l])] ^ ots[l])
                                    .collect();
                                pprf::expand_receiver(alpha, &off_path, leaves);
                                let others = leaves.iter().fold(Block::ZERO, |acc, c| acc ^ c);
                                leaves[alpha] = corrections[i] ^ others;
                            }
                            Tree::Half => {
                                let off_path: Vec<Block> =
                                    sums.iter().zip(ots).map(|(s, t)| s ^ t).collect();
                                half_tree::expand_receiver(alpha, &off_path, leaves);
                            }
                        }
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
