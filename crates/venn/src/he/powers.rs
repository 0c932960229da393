//! Which powers of an encrypted x to compute, and how: a client sends x^s for a few source
//! powers s, and the server derives every power a polynomial evaluation needs, each as the
//! product of two it has, with as few multiplications in sequence (depth) as the sources
//! allow (CMdG+21 §4.2's "powers DAG"; APSI's `PowersDag`). Depth is what a BFV modulus
//! chain pays for; products are what time pays for.
//!
//! Every power p up to the largest target gets its least depth, d(s) = 0 for a source and
//! d(p) = 1 + min over a + b = p of max(d(a), d(b)); among the pairs of that depth, one
//! whose halves are needed anyway (sources or targets) is preferred. The powers computed
//! are then the targets and, transitively, the halves they are made of.

use crate::{Error, Result};

/// The most a power may be: past it, a query's sources are not what a polynomial of a
/// bin's degree needs.
pub const MAX_POWER: u32 = 1 << 16;

/// How to compute target powers from source powers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PowersDag {
    /// Each power's depth, from 0 (unused: index 0, and powers not computed).
    depth: Vec<u32>,
    /// The products in an order where each one's halves come before it: (power, a, b)
    /// with a + b = power, a ≤ b.
    steps: Vec<(u32, u32, u32)>,
    /// The sources, ascending.
    sources: Vec<u32>,
}

impl PowersDag {
    /// The DAG computing `targets` from `sources` (which must hold 1, each power at most
    /// [`MAX_POWER`]).
    pub fn new(sources: &[u32], targets: &[u32]) -> Result<PowersDag> {
        let mut sources = sources.to_vec();
        sources.sort_unstable();
        sources.dedup();
        let max = targets.iter().chain(&sources).copied().max().unwrap_or(1);
        if sources.first() != Some(&1) || max > MAX_POWER || targets.contains(&0) {
            return Err(Error::Params(format!(
                "source powers {sources:?} for targets up to {max}: the sources hold 1, every \
                 power is 1 to {MAX_POWER}"
            )));
        }
        let max = max as usize;
        let mut wanted = vec![false; max + 1];
        sources
            .iter()
            .chain(targets)
            .for_each(|&p| wanted[p as usize] = true);
        // Each power's least depth and the halves giving it.
        let mut depth = vec![u32::MAX; max + 1];
        let mut halves = vec![(0u32, 0u32); max + 1];
        sources.iter().for_each(|&s| depth[s as usize] = 0);
        for p in 2..=max {
            if depth[p] == 0 {
                continue;
            }
            let mut best = (u32::MAX, false, 0);
            for a in 1..=p / 2 {
                let d = 1 + depth[a].max(depth[p - a]);
                let both_wanted = wanted[a] && wanted[p - a];
                // Less depth first; at equal depth, halves needed anyway.
                if (d, !both_wanted) < (best.0, !best.1) {
                    best = (d, both_wanted, a);
                }
            }
            depth[p] = best.0;
            halves[p] = (best.2 as u32, (p - best.2) as u32);
        }
        // The targets and what they are made of, transitively.
        let mut needed = vec![false; max + 1];
        let mut stack: Vec<usize> = targets.iter().map(|&t| t as usize).collect();
        while let Some(p) = stack.pop() {
            if std::mem::replace(&mut needed[p], true) || depth[p] == 0 {
                continue;
            }
            let (a, b) = halves[p];
            stack.extend([a as usize, b as usize]);
        }
        let mut steps: Vec<(u32, u32, u32)> = (2..=max)
            .filter(|&p| needed[p] && depth[p] > 0)
            .map(|p| (p as u32, halves[p].0, halves[p].1))
            .collect();
        steps.sort_by_key(|&(p, _, _)| (depth[p as usize], p));
        for (p, d) in depth.iter_mut().enumerate() {
            if !needed[p] && *d != 0 {
                *d = u32::MAX;
            }
        }
        Ok(PowersDag {
            depth,
            steps,
            sources,
        })
    }

    /// The products, each after its halves: (power, a, b) with a + b = power.
    pub fn steps(&self) -> &[(u32, u32, u32)] {
        &self.steps
    }

    /// The sources, ascending.
    pub fn sources(&self) -> &[u32] {
        &self.sources
    }

    /// The depth of `power`, if it is a source or computed.
    pub fn depth_of(&self, power: u32) -> Option<u32> {
        (self.depth.get(power as usize))
            .copied()
            .filter(|&d| d != u32::MAX)
    }

    /// The greatest depth of a power computed: the products in sequence it takes.
    pub fn depth(&self) -> u32 {
        (self.steps.iter())
            .map(|&(p, _, _)| self.depth[p as usize])
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The least depth of every power up to `max` from `sources`, by brute force over
    /// every way to make it (sets of powers reachable at each depth).
    fn least_depths(sources: &[u32], max: u32) -> Vec<u32> {
        let mut depth = vec![u32::MAX; max as usize + 1];
        let mut have: Vec<u32> = sources.to_vec();
        sources.iter().for_each(|&s| depth[s as usize] = 0);
        for d in 1..20 {
            let mut next = have.clone();
            for &a in &have {
                for &b in &have {
                    if a + b <= max && depth[(a + b) as usize] == u32::MAX {
                        depth[(a + b) as usize] = d;
                        next.push(a + b);
                    }
                }
            }
            have = next;
        }
        depth
    }

    /// Every target is a source or computed, each step from powers computed before it,
    /// at the least depth brute force finds; the spec's sets reach their polynomials'
    /// powers in the depths APSI's parameter files give.
    #[test]
    fn powers_come_at_their_least_depth() {
        for (sources, targets) in [
            (vec![1u32], (1..=16).collect::<Vec<u32>>()),
            (vec![1, 3, 4, 9], (1..=40).collect()),
            (vec![1, 5, 8, 27], (1..=60).collect()),
        ] {
            let dag = PowersDag::new(&sources, &targets).unwrap();
            let least = least_depths(&sources, *targets.iter().max().unwrap());
            let mut have: Vec<u32> = sources.clone();
            for &(p, a, b) in dag.steps() {
                assert_eq!(a + b, p);
                assert!(have.contains(&a) && have.contains(&b), "{p} = {a} + {b}");
                have.push(p);
            }
            for &t in &targets {
                assert!(have.contains(&t), "{t}");
                assert_eq!(dag.depth_of(t), Some(least[t as usize]), "depth of {t}");
            }
        }
        // Paterson–Stockmeyer's powers for V16M-1 (d = 782, ℓ = 26): 1..26 and the
        // multiples of 27, from 1, 5, 8, 27, 135; and V1M-4096's (d = 98, ℓ = 8).
        for (sources, degree, low, depth) in [
            (vec![1, 5, 8, 27, 135], 782u32, 26u32, 4),
            (vec![1, 3, 4, 9, 27], 98, 8, 3),
        ] {
            let targets: Vec<u32> = (1..=low)
                .chain((1..=degree / (low + 1)).map(|i| i * (low + 1)))
                .collect();
            let dag = PowersDag::new(&sources, &targets).unwrap();
            assert!(dag.depth() <= depth, "{sources:?}: depth {}", dag.depth());
            assert!(targets.iter().all(|&t| dag.depth_of(t).is_some()));
        }
        assert!(PowersDag::new(&[2, 3], &[5]).is_err(), "no 1");
        assert!(PowersDag::new(&[1], &[0]).is_err());
        assert!(PowersDag::new(&[1], &[MAX_POWER + 1]).is_err());
    }
}
