//! Simple hashing with phasing, as RR17's dual-execution and encode-commit protocols use
//! it (§3.2, §6.1, §6.6): one hash function, every item in exactly one of m bins, at a
//! uniformly random unused slot of the bin, every bin padded to exactly μ slots.
//!
//! Cuckoo hashing cannot be used against a malicious party (§6.1: whether an item placed
//! in only one of its bins matches would depend on the honest party's other items), and
//! slots must be random rather than first-free (spec §3.6: a first-free position would
//! depend on the other items of the bin).

use crate::crypto::{Block, Prg};
use crate::{Error, Result, STATISTICAL_SECURITY};

/// The bin size μ for n items in m bins: the least μ with
/// `m · Pr[Binomial(n, 1/m) > μ] ≤ 2^-λ` (RR17 §6.6). Computed for the m in use, never
/// read from Fig. 5: its LAN row belongs to m = n/3, not the printed n/4 (spec E1).
pub fn bin_size(n: u64, m: u64) -> usize {
    assert!(m >= 1);
    if m == 1 {
        return n as usize;
    }
    let bound = -(STATISTICAL_SECURITY as f64) * std::f64::consts::LN_2 - (m as f64).ln();
    let p = 1.0 / m as f64;
    // The least μ that fits, by bisection (the tail falls as μ grows; μ = n always fits):
    // a scan from 0 took minutes for a peer announcing 2^24 items into a small table.
    let fits = |mu: u64| ln_tail(n, p, mu + 1) <= bound;
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo as usize
}

/// ln k!: exact below 32, else Stirling's series to the k^-5 term (error below 10^-12).
fn ln_factorial(k: u64) -> f64 {
    if k < 32 {
        return (2..=k).map(|t| (t as f64).ln()).sum();
    }
    let x = k as f64;
    x * x.ln() - x + 0.5 * (std::f64::consts::TAU * x).ln() + 1.0 / (12.0 * x)
        - 1.0 / (360.0 * x.powi(3))
        + 1.0 / (1260.0 * x.powi(5))
}

/// ln Pr[Binomial(n, p) ≥ k], summed term by term from k until the terms no longer add
/// to the sum (infinite, so "does not fit", when k is far below the mean).
fn ln_tail(n: u64, p: f64, k: u64) -> f64 {
    if k > n {
        return f64::NEG_INFINITY;
    }
    // ln of the k-th term: ln C(n, k) + k ln p + (n − k) ln(1 − p).
    let ln_choose = ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k);
    let first = ln_choose + k as f64 * p.ln() + (n - k) as f64 * (-p).ln_1p();
    let (mut term, mut sum) = (1.0f64, 0.0f64);
    let ratio = p / (1.0 - p);
    for i in k..=n {
        sum += term;
        term *= (n - i) as f64 / (i + 1) as f64 * ratio;
        if term < sum * 1e-18 {
            break;
        }
        if sum == f64::INFINITY {
            return f64::INFINITY;
        }
    }
    first + sum.ln()
}

/// Bits of the hashed item value v (RR17 §7, spec §3.3): the largest length that keeps
/// the representative below 2^76, at most 128.
pub fn hashed_bits(m: u64) -> u32 {
    (76 + m.ilog2()).min(128)
}

/// Phasing of a hashed value v < 2^hashed_bits(m) (RR17 §3.2 with h ≡ 0, valid since v is
/// a random-oracle output): bin `v mod m` and representative `⌊v / m⌋ < 2^76`. A
/// bijection, so distinct values in one bin have distinct representatives.
pub fn phase(v: Block, m: u64) -> (usize, Block) {
    let (v, m) = (v.as_u128(), u128::from(m));
    ((v % m) as usize, Block::from_u128(v / m))
}

/// Items placed in m bins of μ slots: `slot_of[i]` is item i's slot `b·μ + p`, and
/// [`SlotTable::item_at`] the item in a slot.
pub struct SlotTable {
    /// The number of bins, m.
    pub bins: usize,
    /// The slots in each bin, μ: a bin's items and the dummies that fill it.
    pub mu: usize,
    /// Each item's slot `b·μ + p`, by the item's index.
    pub slot_of: Vec<u32>,
    /// The item in each slot, [`EMPTY`] in a dummy (4 bytes a slot, not an `Option`'s 8:
    /// most slots are empty).
    items: Vec<u32>,
}

/// An empty slot (no item has this index: there are fewer than 2^32 − 1).
const EMPTY: u32 = u32::MAX;

impl SlotTable {
    /// Places item i in bin `bins_of[i]` at a uniformly random unused slot. A bin holding
    /// more than μ items fails the run (probability ≤ 2^-40 for honest inputs, with μ from
    /// [`bin_size`]); items are never dropped and μ is never raised.
    pub fn place(bins_of: &[usize], bins: usize, mu: usize, prg: &mut Prg) -> Result<Self> {
        assert!(bins >= 1 && bins.checked_mul(mu).is_some_and(|s| s <= u32::MAX as usize));
        assert!(bins_of.len() < EMPTY as usize, "items have 32-bit indices");
        let mut load = vec![0usize; bins];
        for &b in bins_of {
            load[b] += 1;
            if load[b] > mu {
                return Err(Error::Unlucky(format!(
                    "a hash bin holds more than its {mu} slots (probability below 2^-40)"
                )));
            }
        }
        // Bin by bin (the items grouped by bin, a counting sort), each bin's items take
        // distinct uniformly random slots: a partial Fisher–Yates shuffle of its μ slots,
        // one step per item.
        let mut start = vec![0usize; bins + 1];
        for b in 0..bins {
            start[b + 1] = start[b] + load[b];
        }
        let mut by_bin = vec![0u32; bins_of.len()];
        for (i, &b) in bins_of.iter().enumerate() {
            by_bin[start[b]] = i as u32;
            start[b] += 1;
        }
        let mut items = vec![EMPTY; bins * mu];
        let mut slot_of = vec![0; bins_of.len()];
        let mut slots: Vec<u32> = (0..mu as u32).collect();
        let mut first = 0;
        for (b, &k) in load.iter().enumerate() {
            for (t, &i) in by_bin[first..first + k].iter().enumerate() {
                let pick = t + prg.below((mu - t) as u64) as usize;
                slots.swap(t, pick);
                let s = (b * mu) as u32 + slots[t];
                slot_of[i as usize] = s;
                items[s as usize] = i;
            }
            first += k;
        }
        Ok(SlotTable {
            bins,
            mu,
            slot_of,
            items,
        })
    }

    /// The number of slots, m·μ.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are none (never: a table has at least one bin).
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The item in slot `s` (`None` for a dummy).
    #[inline]
    pub fn item_at(&self, s: usize) -> Option<u32> {
        Some(self.items[s]).filter(|&x| x != EMPTY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inverse of [`phase`] (how a simulator extracts an item from its slot).
    fn unphase(bin: usize, z: Block, m: u64) -> Block {
        Block::from_u128(z.as_u128() * u128::from(m) + bin as u128)
    }

    #[test]
    fn bin_sizes_are_the_recomputed_fig5() {
        // Spec §3.5, recomputed from the exact tail: m = n/4 (RR17's LAN), n/3 (what Fig.
        // 5's LAN row matches) and n/10 (WAN), n = 2^8 … 2^24.
        let expect = [
            (4, [26, 28, 30, 31, 32]),
            (3, [24, 25, 26, 28, 29]),
            (10, [41, 43, 45, 47, 49]),
        ];
        for (div, mus) in expect {
            for (k, mu) in [8u32, 12, 16, 20, 24].into_iter().zip(mus) {
                let n = 1u64 << k;
                assert_eq!(bin_size(n, n / div), mu, "n = 2^{k}, m = n/{div}");
            }
        }
        // n / log2 n at 2^20: the §6.3 example, μ = 68.
        assert_eq!(bin_size(1 << 20, (1 << 20) / 20), 68);
        assert_eq!(bin_size(10, 1), 10, "one bin holds everything");
    }

    #[test]
    fn phasing_is_a_bijection_with_short_representatives() {
        let mut prg = Prg::from_seed(Block::from(1));
        for m in [1u64, 3, 1000, 104857, 1 << 18] {
            let bits = hashed_bits(m);
            for _ in 0..1000 {
                let v = prg.block() & Block::low_ones(bits as usize);
                let (b, z) = phase(v, m);
                assert!((b as u64) < m && z.as_u128() >> 76 == 0, "m = {m}");
                assert_eq!(unphase(b, z, m), v);
            }
        }
    }

    #[test]
    fn slots_are_random_distinct_and_overflow_is_refused() {
        let mut prg = Prg::from_seed(Block::from(2));
        let bins_of: Vec<usize> = (0..300).map(|i| i % 7).collect();
        let t = SlotTable::place(&bins_of, 7, 50, &mut prg).unwrap();
        let mut seen = std::collections::HashSet::new();
        for (i, &s) in t.slot_of.iter().enumerate() {
            assert_eq!(s as usize / 50, bins_of[i], "in its bin");
            assert!(seen.insert(s), "one item a slot");
            assert_eq!(t.item_at(s as usize), Some(i as u32));
        }
        assert_eq!((0..t.len()).filter_map(|s| t.item_at(s)).count(), 300);
        // The first item of bin 0 is not always in the bin's first slot.
        let firsts: std::collections::HashSet<u32> = (0..20)
            .map(|_| SlotTable::place(&[0], 1, 30, &mut prg).unwrap().slot_of[0])
            .collect();
        assert!(firsts.len() > 5, "{firsts:?}");
        let full = vec![0; 51];
        assert!(matches!(
            SlotTable::place(&full, 7, 50, &mut prg),
            Err(Error::Unlucky(_))
        ));
    }

    /// Every item, in every bin, is at each of its bin's μ slots equally often.
    #[test]
    fn slots_are_uniform_in_every_bin() {
        let mut prg = Prg::from_seed(Block::from(3));
        let bins_of = [1, 0, 1, 0, 1];
        let mut counts = [[0u32; 4]; 5];
        for _ in 0..4000 {
            let t = SlotTable::place(&bins_of, 2, 4, &mut prg).unwrap();
            for (i, &s) in t.slot_of.iter().enumerate() {
                counts[i][s as usize % 4] += 1;
            }
        }
        // 1000 expected each, standard deviation about 27.
        for (i, c) in counts.iter().enumerate() {
            assert!(
                c.iter().all(|&n| (880..1120).contains(&n)),
                "item {i}: {c:?}"
            );
        }
    }
}
