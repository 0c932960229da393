//! Batcher's odd–even merging network (Batcher, *Sorting networks and their applications*,
//! 1968; Knuth TAOCP §5.3.4) evaluated on XOR-shared values: two ascending runs of N = 2^k
//! values, positions 0..N and N..2N, become one ascending run in k + 1 stages of disjoint
//! compare-exchanges, N·k + 1 of them — the "n·log n comparisons" of HEK12's merge and of
//! the slides' circuit size (spec C.1; a bitonic merger of 2N values has N·(k + 1)).
//!
//! A compare-exchange of w-bit values costs 2w AND gates: the comparison by a ripple from
//! the least significant bit, `gt ← gt ⊕ ((x_i ⊕ y_i) ∧ (x_i ⊕ gt))` (w gates, w
//! exchanges: the result is x_i where the bits differ, else the lower bits' answer), then
//! the swap `t = gt ∧ (x ⊕ y)`, `x ← x ⊕ t`, `y ← y ⊕ t` (w gates, one exchange). All
//! compare-exchanges of a stage run as one: the values are bit planes, plane j holding
//! bit j of every value.

use crate::gmw::{Gmw, Shared};
use crate::Result;

/// The distances of the stages of the network merging positions 0..n and n..2n (n a power
/// of two, or 0): k = n, n/2, .., 1 (Knuth's iteration for the last merge of odd–even
/// merge sort), one stage each.
pub(super) fn distances(n: usize) -> impl Iterator<Item = usize> {
    assert!(n == 0 || n.is_power_of_two(), "runs of a power of two");
    std::iter::successors((n > 0).then_some(n), |&k| (k > 1).then_some(k / 2))
}

/// The comparators `(lo, hi)`, `lo < hi`, of the stage at distance `k`, disjoint: they
/// start at `j = k mod n`, `j + 2k`, .., each a run of k within 2n. Made a stage at a
/// time, so the network's n·log n comparators are never held at once.
pub(super) fn stage(n: usize, k: usize) -> (Vec<u32>, Vec<u32>) {
    let mut lo = Vec::with_capacity(stage_len(n, k));
    let mut j = k % n;
    while j + k < 2 * n {
        lo.extend((j..j + k.min(2 * n - j - k)).map(|i| i as u32));
        j += 2 * k;
    }
    let hi = lo.iter().map(|&i| i + k as u32).collect();
    (lo, hi)
}

/// How many comparators [`stage`] has: n at distance n; below it the runs at k, 3k, ..,
/// 2n − 3k, n − k in all.
pub(super) fn stage_len(n: usize, k: usize) -> usize {
    if k == n {
        n
    } else {
        n - k
    }
}

/// Comparators of the network for runs of `n` (`n·log₂ n + 1`, or none for n = 0).
pub(super) fn comparators(n: usize) -> u64 {
    match n {
        0 => 0,
        n => n as u64 * n.ilog2() as u64 + 1,
    }
}

/// Merges the shared values whose bit planes are `planes` (least significant first, each
/// of 2n bits: two ascending runs of n) in place.
pub(super) fn merge(gmw: &mut Gmw, planes: &mut [Shared], n: usize) -> Result<()> {
    for k in distances(n) {
        let (lo, hi) = stage(n, k);
        let x: Vec<Shared> = planes.iter().map(|p| p.gather(&lo)).collect();
        let y: Vec<Shared> = planes.iter().map(|p| p.gather(&hi)).collect();
        let greater = greater_than(gmw, &x, &y)?;
        let differ: Vec<Shared> = x.iter().zip(&y).map(|(x, y)| x.xor(y)).collect();
        let pairs: Vec<(&Shared, &Shared)> = differ.iter().map(|d| (&greater, d)).collect();
        let swaps = gmw.and(&pairs)?;
        for (plane, t) in planes.iter_mut().zip(&swaps) {
            plane.xor_at(&lo, t);
            plane.xor_at(&hi, t);
        }
    }
    Ok(())
}

/// Shares of `x > y` for the unsigned numbers whose bit planes are `x` and `y`.
fn greater_than(gmw: &mut Gmw, x: &[Shared], y: &[Shared]) -> Result<Shared> {
    let mut gt = Shared::zeros(x.first().map_or(0, Shared::len));
    for (x, y) in x.iter().zip(y) {
        let t = gmw.and(&[(&x.xor(y), &x.xor(&gt))])?.remove(0);
        gt = gt.xor(&t);
    }
    Ok(gt)
}

/// Words of triples [`merge`] uses on `width`-bit values: 2·width gates a comparator, a
/// stage's gates of one bit in one vector.
pub(super) fn triple_words(n: usize, width: u32) -> usize {
    distances(n)
        .map(|k| 2 * width as usize * stage_len(n, k).div_ceil(64))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Block;
    use crate::crypto::Prg;

    /// Every stage of the network for runs of `n`.
    fn stages(n: usize) -> Vec<(Vec<u32>, Vec<u32>)> {
        distances(n).map(|k| stage(n, k)).collect()
    }

    /// The network on plain values.
    fn merged(values: &mut [u64], stages: &[(Vec<u32>, Vec<u32>)]) {
        for (lo, hi) in stages {
            for (&lo, &hi) in lo.iter().zip(hi) {
                let (lo, hi) = (lo as usize, hi as usize);
                if values[lo] > values[hi] {
                    values.swap(lo, hi);
                }
            }
        }
    }

    #[test]
    fn the_network_merges_two_sorted_runs_with_n_log_n_plus_one_comparators() {
        let mut prg = Prg::from_seed(Block::from(4));
        for k in 0..=10 {
            let n = 1usize << k;
            let s = stages(n);
            assert_eq!(s.len(), k as usize + 1, "stages for n = {n}");
            let count: usize = s.iter().map(|(lo, _)| lo.len()).sum();
            assert_eq!(count as u64, comparators(n));
            for (d, (lo, hi)) in distances(n).zip(&s) {
                assert_eq!(lo.len(), stage_len(n, d));
                let mut seen = vec![false; 2 * n];
                for (&lo, &hi) in lo.iter().zip(hi) {
                    assert!(
                        lo < hi && !seen[lo as usize] && !seen[hi as usize],
                        "disjoint"
                    );
                    seen[lo as usize] = true;
                    seen[hi as usize] = true;
                }
            }
            for _ in 0..20 {
                let run = |prg: &mut Prg| {
                    let mut v: Vec<u64> = (0..n).map(|_| prg.u64() % (3 * n as u64)).collect();
                    v.sort_unstable();
                    v
                };
                let mut values = [run(&mut prg), run(&mut prg)].concat();
                let mut sorted = values.clone();
                sorted.sort_unstable();
                merged(&mut values, &s);
                assert_eq!(values, sorted, "n = {n}");
            }
        }
        assert!(stages(0).is_empty());
        assert_eq!(comparators(1 << 20), 20 * (1 << 20) + 1);
    }

    #[test]
    fn the_shared_network_sorts_like_the_plain_one() {
        use crate::gmw::triple_pair;
        use crate::net::mem_pair;
        use std::time::Duration;
        let (n, width) = (64, 9);
        let mut prg = Prg::from_seed(Block::from(8));
        let run = |prg: &mut Prg| {
            let mut v: Vec<u64> = (0..n).map(|_| prg.u64() % (1 << width)).collect();
            v.sort_unstable();
            v
        };
        let (a, b) = (run(&mut prg), run(&mut prg));
        let (ta, tb) = triple_pair(triple_words(n, width));
        let (mut x, mut y) = mem_pair(Duration::from_secs(30));
        let party = |chan: &mut dyn crate::net::Channel, leader: bool, triples, mine: &[u64]| {
            let mut gmw = Gmw::new(chan, leader, triples);
            let mut prg = Prg::from_seed(Block::from(leader as u64));
            let shared: Vec<Shared> = Shared::planes(mine.len(), width, |i| mine[i] as u128)
                .iter()
                .map(|p| gmw.share_input(p, &mut prg).unwrap())
                .collect();
            let peers: Vec<Shared> = (0..width).map(|_| gmw.peers_input(n).unwrap()).collect();
            let (first, second) = if leader {
                (shared, peers)
            } else {
                (peers, shared)
            };
            let mut all: Vec<Shared> = (first.iter().zip(&second))
                .map(|(f, s)| Shared::concat(&[f, s]))
                .collect();
            merge(&mut gmw, &mut all, n).unwrap();
            assert_eq!(gmw.triples_left(), 0, "exactly the triples counted");
            all.iter()
                .map(|p| gmw.reveal(p).unwrap())
                .collect::<Vec<_>>()
        };
        let opened = std::thread::scope(|sc| {
            let t = sc.spawn(|| party(&mut y, false, tb, &b));
            let mine = party(&mut x, true, ta, &a);
            assert_eq!(mine, t.join().unwrap());
            mine
        });
        let got: Vec<u64> = (0..2 * n)
            .map(|i| (0..width).fold(0, |v, j| v | (opened[j as usize].get(i) as u64) << j))
            .collect();
        let mut sorted = [a, b].concat();
        sorted.sort_unstable();
        assert_eq!(got, sorted);
    }
}
