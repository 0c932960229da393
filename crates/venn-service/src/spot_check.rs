//! Spot checks of external workers' answers. Workers run outside the service's trust, so
//! before the service accepts an answer it recomputes a few items of the chunk, chosen
//! uniformly at random once the answer is in, and compares them with the answer's. A task's
//! output item `i` depends only on its input item `i` (a pairing, a digest or an
//! exponentiation per item: see [`worker::answer`]), so `k` items cost the service `k`
//! items' work, whatever the chunk's size.
//!
//! **Detection.** A worker that falsifies `m` of a chunk's `n` items is missed only if
//! none of the `k` distinct positions checked is one of them:
//!
//! ```text
//! P(miss) = C(n−m, k) / C(n, k) = ∏_{i<k} (n−m−i)/(n−i) ≤ (1 − f)^k,   f = m/n,
//! ```
//!
//! so an answer is refused with probability at least `1 − (1 − f)^k`: with the default
//! `k` = 32, at least 0.966 when a tenth of the items are false and 0.9999 when a quarter
//! are; every item of a chunk of at most `k` items is checked. A worker caught once is
//! quarantined, so one that lies in `c` answers goes unnoticed with probability at most
//! `(1 − f)^{kc}`. What it does not catch: a worker falsifying one item of a large chunk is
//! caught with probability `k/n` per answer (about 0.2% for the default 2^14-item chunk),
//! enough to drop or invent a match now and then. The service's own pool of workers is
//! trusted and not checked.

use crate::error::Result;
use rand_core::RngCore;
use std::collections::BTreeSet;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use venn_cloud::api::Task;
use venn_cloud::worker;
use venn_cloud::Error;

/// `k` distinct positions of `0..n` (all of them when `k ≥ n`), each `k`-subset equally
/// likely, in increasing order (Floyd's algorithm: `k` draws whatever `n`).
pub fn positions(n: u64, k: usize, rng: &mut impl RngCore) -> Vec<u64> {
    let k = (k as u64).min(n);
    let mut chosen = BTreeSet::new();
    for j in n - k..n {
        let t = at_most(j, rng);
        if !chosen.insert(t) {
            chosen.insert(j);
        }
    }
    chosen.into_iter().collect()
}

/// A uniform integer of `0..=bound` (draws in the last partial block of `2^64 mod
/// (bound + 1)` values are drawn again).
fn at_most(bound: u64, rng: &mut impl RngCore) -> u64 {
    let Some(range) = bound.checked_add(1) else {
        return rng.next_u64();
    };
    let skip = range.wrapping_neg() % range;
    loop {
        let x = rng.next_u64();
        if x >= skip {
            return x % range;
        }
    }
}

/// The probability that `k` distinct positions of `n`, chosen uniformly at random, miss all
/// `m` falsified items: `C(n−m, k) / C(n, k)` (see the module's documentation).
pub fn miss_probability(n: u64, m: u64, k: u64) -> f64 {
    let k = k.min(n);
    (0..k)
        .map(|i| n.saturating_sub(m + i) as f64 / (n - i) as f64)
        .product()
}

/// Checks `answer` to `task` at `k` positions chosen at random (with the operating
/// system's generator, after the answer arrived), recomputing those items from the task's
/// `input` file; returns the first item that differs, if any. The answer's length must be
/// checked before. With `k` = 0 every answer is taken.
pub fn check(task: &Task, input: &Path, answer: &[u8], k: usize) -> Result<Option<u64>> {
    let positions = positions(task.items, k, &mut rand_core::OsRng);
    if positions.is_empty() {
        return Ok(None);
    }
    first_mismatch(task, input, answer, &positions)
}

/// The first of `positions` (increasing) at which `answer` differs from the service's own
/// computation of the item from `input`.
fn first_mismatch(
    task: &Task,
    input: &Path,
    answer: &[u8],
    positions: &[u64],
) -> Result<Option<u64>> {
    let (in_width, out_width) = (task.input_width(), task.answer_width());
    let mut file = std::fs::File::open(input)?;
    let mut selected = vec![0u8; positions.len() * in_width];
    for (&p, item) in positions.iter().zip(selected.chunks_exact_mut(in_width)) {
        file.seek(SeekFrom::Start(p * in_width as u64))?;
        file.read_exact(item)?;
    }
    let sample = Task {
        items: positions.len() as u64,
        ..task.clone()
    };
    let expected = worker::answer(&sample, &selected)
        .map_err(|e| Error::Internal(format!("recomputing a spot check: {e}")))?;
    Ok(positions
        .iter()
        .zip(expected.chunks_exact(out_width))
        .find(|&(&p, item)| answer[p as usize * out_width..][..out_width] != *item)
        .map(|(&p, _)| p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::OsRng;
    use venn_cloud::api::Work;
    use venn_cloud::crypto::{self, Secret};

    /// Positions are distinct, increasing, within the chunk, and all of a chunk of at most
    /// `k` items.
    #[test]
    fn positions_are_distinct_and_capped_at_the_chunk() {
        for (n, k) in [
            (0, 4),
            (1, 4),
            (5, 5),
            (5, 32),
            (100, 32),
            (1 << 16, 32),
            (9, 0),
        ] {
            let p = positions(n, k, &mut OsRng);
            assert_eq!(p.len() as u64, (k as u64).min(n), "{n} {k}");
            assert!(p.windows(2).all(|w| w[0] < w[1]), "{p:?}");
            assert!(p.iter().all(|&x| x < n));
        }
        assert_eq!(positions(5, 32, &mut OsRng), [0, 1, 2, 3, 4]);
    }

    /// Within `5σ` of `expected` over `trials` trials of probability `expected`.
    fn close(observed: usize, trials: usize, expected: f64) -> bool {
        let sigma = (expected * (1.0 - expected) / trials as f64).sqrt();
        (observed as f64 / trials as f64 - expected).abs() <= 5.0 * sigma + 1e-12
    }

    /// Each position is chosen equally often: k/n of the time.
    #[test]
    fn positions_are_uniform() {
        let (n, k, trials) = (10u64, 3, 30_000);
        let mut hits = [0usize; 10];
        for _ in 0..trials {
            for p in positions(n, k, &mut OsRng) {
                hits[p as usize] += 1;
            }
        }
        for (p, &h) in hits.iter().enumerate() {
            assert!(close(h, trials, 0.3), "position {p}: {h} of {trials}");
        }
    }

    /// The detection rate measured over 10,000 answers, each falsifying the same `m` of `n`
    /// items, is `1 − C(n−m, k)/C(n, k)` (within 5σ), and at least `1 − (1 − m/n)^k`.
    #[test]
    fn measured_detection_matches_the_formula() {
        let trials = 10_000;
        for (n, m, k) in [
            (4u64, 1u64, 2usize),
            (8, 1, 2),
            (64, 4, 16),
            (100, 25, 16),
            (1024, 32, 32),
            (1024, 102, 32),
            (16384, 1, 32),
        ] {
            let falsified: BTreeSet<u64> =
                positions(n, m as usize, &mut OsRng).into_iter().collect();
            let caught = (0..trials)
                .filter(|_| {
                    positions(n, k, &mut OsRng)
                        .iter()
                        .any(|p| falsified.contains(p))
                })
                .count();
            let expected = 1.0 - miss_probability(n, m, k as u64);
            let bound = 1.0 - (1.0 - m as f64 / n as f64).powi(k as i32);
            eprintln!(
                "n {n}, m {m}, k {k}: caught {caught} of {trials} ({:.4}); \
                 1 − C(n−m,k)/C(n,k) = {expected:.4} ≥ 1 − (1−f)^k = {bound:.4}",
                caught as f64 / trials as f64
            );
            assert!(expected >= bound - 1e-12, "{n} {m} {k}");
            assert!(close(caught, trials, expected), "{n} {m} {k}: {caught}");
        }
        assert_eq!(miss_probability(8, 8, 1), 0.0, "all false: always caught");
        assert_eq!(miss_probability(8, 1, 8), 0.0, "every item checked");
        assert_eq!(miss_probability(8, 0, 4), 1.0);
        assert!((1.0 - miss_probability(16384, 4096, 32) - 0.9999).abs() < 1e-4);
    }

    /// Every kind of task answers item by item: the items at chosen positions, recomputed
    /// alone, are the whole answer's; a falsified item is found when checked, and only then.
    #[test]
    fn items_are_recomputed_alone() {
        let dir = tempfile::tempdir().unwrap();
        let points = crypto::encrypt(
            &(0..12).map(|i| format!("k{i}")).collect(),
            &Secret::random(),
        )
        .concat();
        let token = hex::encode(crypto::token(&Secret::random(), &Secret::random()));
        let pair = |parties| Work::Pair {
            token: token.clone(),
            parties,
        };
        let task = |work| Task {
            run: venn_cloud::api::new_id(),
            side: 0,
            chunk: 0,
            items: 12,
            work,
            lease_seconds: 0,
        };
        let precompute = task(pair(1));
        let precomputed = worker::answer(&precompute, &points).unwrap();
        let raise = Work::Raise {
            exponent: hex::encode(Secret::random().to_bytes()),
            target: venn_cloud::api::new_id(),
        };
        for (task, input) in [
            (precompute, &points),
            (task(pair(2)), &points),
            (task(pair(3)), &points),
            (task(raise), &precomputed),
        ] {
            let file = dir.path().join("input");
            std::fs::write(&file, input).unwrap();
            let mut answer = worker::answer(&task, input).unwrap();
            let all: Vec<u64> = (0..12).collect();
            assert_eq!(first_mismatch(&task, &file, &answer, &all).unwrap(), None);
            answer[7 * task.answer_width() + 3] ^= 1;
            let found = |p: &[u64]| first_mismatch(&task, &file, &answer, p).unwrap();
            assert_eq!(found(&all), Some(7), "{:?}", task.work);
            assert_eq!(found(&[2, 7, 11]), Some(7));
            assert_eq!(found(&[0, 6, 8, 11]), None);
        }
    }
}
