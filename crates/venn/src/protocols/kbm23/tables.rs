//! KBM23's hashing (§III-C1, §III-C2, §III-C4): permutation-based hashing of σ-bit items,
//! the receiver's cuckoo table with one value per bin and the sender's simple table of β
//! values per bin, each bin in uniformly random order.
//!
//! **Permutation-based hashing, additively** (spec §2.2 with E4): with D = ⌈2^σ/α⌉ an
//! item x splits into `x_R = x mod D` and `x_L = ⌊x/D⌋ < α`; hash function j puts x in bin
//! `(h_j(x_R) + x_L) mod α` and stores `j·D + x_R`. Within a bin the stored value and the
//! bin give back x (`x_L = (bin − h_j(x_R)) mod α`), so equal values in one bin are equal
//! items, and the range `j·D..(j+1)·D` keeps values stored by different functions apart.
//! The h_j are a per-session PRF (AES under the coin-tossed seed), not the authors' fixed
//! tables, with h_1(x_R), h_2(x_R), h_3(x_R) made pairwise distinct by re-drawing, so an
//! item's bins are distinct.
//!
//! **The sender's bins in random order** (spec §2.4, missing from the paper and the
//! authors' code): the slot of a match is what the receiver sees, so each of the sender's
//! values goes to a uniformly random free slot of its bin and the rest hold its dummy — the
//! same distribution as a shuffle of the padded bin, since the dummies are alike.

use super::field::Field;
use super::params::{Kbm23Params, K};
use crate::crypto::{Aes, Block, Prg};
use crate::tables::{cuckoo_insert, Partitions, HASHES};
use crate::util::memory::prefetch;
use crate::{Error, Result};

const _: () = assert!(K == HASHES, "the cuckoo table's functions are KBM23's k");

/// The split and the hash functions of one session.
pub(super) struct Hashing {
    alpha: u64,
    d: u64,
    h: Aes,
}

/// Where an item goes: its k bins and its suffix `x_R`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Placed {
    pub bins: [u32; K],
    pub suffix: u64,
}

impl Hashing {
    /// The hashing of `p` with the coin-tossed `seed`.
    pub(super) fn new(p: &Kbm23Params, seed: Block) -> Self {
        Hashing {
            alpha: p.alpha,
            d: p.d,
            h: Aes::new(seed),
        }
    }

    /// `h_1(x_R), …, h_k(x_R)`: 42-bit pieces of `AES(x_R ‖ t)` mapped to `[0, α)` by
    /// multiply-shift (bias ≤ α/2^42), for the least t that makes them pairwise distinct;
    /// `first` is the block for t = 0.
    fn functions(&self, suffix: u64, first: Block) -> [u64; K] {
        const MASK: u128 = (1 << 42) - 1;
        let split = |h: Block| -> [u64; K] {
            let h = h.as_u128();
            std::array::from_fn(|i| ((((h >> (42 * i)) & MASK) * self.alpha as u128) >> 42) as u64)
        };
        std::iter::once(first)
            .chain((1u64..).map(|t| self.h.encrypt(Block::from_halves(suffix, t))))
            .map(split)
            .find(|h| h[0] != h[1] && h[0] != h[2] && h[1] != h[2])
            .expect("distinct values for some t")
    }

    /// The bins and suffix of each item `x < 2^σ`, the first AES blocks of a batch of
    /// items encrypted together.
    pub(super) fn place_all(&self, mut xs: impl ExactSizeIterator<Item = u128>) -> Vec<Placed> {
        const BATCH: usize = 256;
        let mut placed = Vec::with_capacity(xs.len());
        let (mut split, mut blocks) = ([(0, 0); BATCH], [Block::ZERO; BATCH]);
        loop {
            let mut len = 0;
            for (s, x) in split.iter_mut().zip(xs.by_ref()) {
                *s = self.split(x);
                blocks[len] = Block::from(s.1);
                len += 1;
            }
            if len == 0 {
                return placed;
            }
            self.h.encrypt_blocks(&mut blocks[..len]);
            let batch = split[..len].iter().zip(&blocks[..len]);
            placed.extend(batch.map(|(&(left, suffix), &first)| {
                let h = self.functions(suffix, first);
                // h, x_L < α, so one subtraction reduces their sum.
                Placed {
                    bins: h.map(|h| {
                        let b = h + left;
                        b.min(b.wrapping_sub(self.alpha)) as u32
                    }),
                    suffix,
                }
            }));
        }
    }

    /// `(x_L, x_R)` of item `x < 2^σ` (in 64-bit arithmetic where x allows).
    fn split(&self, x: u128) -> (u64, u64) {
        let (left, suffix) = match u64::try_from(x) {
            Ok(x) => (x / self.d, x % self.d),
            Err(_) => ((x / self.d as u128) as u64, (x % self.d as u128) as u64),
        };
        debug_assert!(left < self.alpha, "D = ⌈2^σ/α⌉ keeps x_L a bin");
        (left, suffix)
    }

    /// The value stored for an item with `suffix` placed by function `j`.
    pub(super) fn value(&self, j: usize, suffix: u64) -> u64 {
        j as u64 * self.d + suffix
    }
}

/// The receiver's table: one value per bin, and the item in each bin.
pub(super) struct ReceiversTable {
    /// `T_A[i]`: the value of the item in bin i, or the receiver's dummy.
    pub values: Vec<u64>,
    /// The item in each bin, or `u32::MAX`.
    pub items: Vec<u32>,
}

/// Cuckoo-hashes `placed` (§III-C1) into α bins with no stash.
pub(super) fn receivers_table(
    p: &Kbm23Params,
    h: &Hashing,
    placed: &[Placed],
    prg: &mut Prg,
) -> Result<ReceiversTable> {
    let bins: Vec<[u32; K]> = placed.iter().map(|p| p.bins).collect();
    let table = cuckoo_insert(&bins, h.alpha as usize, 0, prg)?;
    let (mut values, mut items) = (
        Vec::with_capacity(table.len()),
        Vec::with_capacity(table.len()),
    );
    // The items of the bins are in random order: each one's suffix is asked for a few
    // bins ahead, so that the reads overlap.
    const AHEAD: usize = 16;
    for i in 0..table.len() {
        if let Some((item, _)) = (i + AHEAD < table.len())
            .then(|| table.bin(i + AHEAD))
            .flatten()
        {
            prefetch(&placed[item]);
        }
        match table.bin(i) {
            Some((item, j)) => {
                values.push(h.value(j, placed[item].suffix));
                items.push(item as u32);
            }
            None => {
                values.push(p.receivers_dummy());
                items.push(u32::MAX);
            }
        }
    }
    Ok(ReceiversTable { values, items })
}

/// Bins of a region of the sender's table: its values take their random slots, and its
/// answers are computed, region by region, so each region's slots stay in cache (at 2^20
/// and β = 25, 26K slots).
pub(super) const REGION_BINS: usize = if cfg!(test) { 1 << 4 } else { 1 << 10 };

/// Bins of a group of regions: the sender's values are first partitioned by group (a few
/// hundred groups even at 2^24, whose write streams stay in cache), and a group's values by
/// region when the group is reached.
pub(super) const GROUP_BINS: usize = REGION_BINS * if cfg!(test) { 4 } else { 64 };

/// The sender's values (§III-C2): each item's value under every function, grouped by the
/// group of regions of that function's bin.
pub(super) struct SendersValues {
    beta: usize,
    dummy: u64,
    groups: Partitions<(u32, u64)>,
    /// The group last reached, its values in region order, and where each region's start.
    current: Option<usize>,
    sorted: Vec<(u32, u64)>,
    starts: Vec<usize>,
}

impl SendersValues {
    /// The values of the items `placed`.
    pub(super) fn new(p: &Kbm23Params, h: &Hashing, placed: &[Placed]) -> Self {
        let mut groups = Partitions::new((p.alpha as usize).div_ceil(GROUP_BINS), K * placed.len());
        for item in placed {
            for (j, &bin) in item.bins.iter().enumerate() {
                groups.push(bin as usize / GROUP_BINS, (bin, h.value(j, item.suffix)));
            }
        }
        SendersValues {
            beta: p.beta,
            dummy: p.senders_dummy(),
            groups,
            current: None,
            sorted: Vec::new(),
            starts: Vec::new(),
        }
    }

    /// The values of region `r`, its group sorted by region first if not yet.
    fn region(&mut self, r: usize) -> &[(u32, u64)] {
        const REGIONS: usize = GROUP_BINS / REGION_BINS;
        let group = r / REGIONS;
        if self.current != Some(group) {
            let local = |bin: u32| bin as usize % GROUP_BINS / REGION_BINS;
            let mut starts = [0usize; REGIONS + 1];
            for (bin, _) in self.groups.records(group) {
                starts[local(bin) + 1] += 1;
            }
            for i in 0..REGIONS {
                starts[i + 1] += starts[i];
            }
            self.sorted.clear();
            self.sorted.resize(self.groups.len(group), (0, 0));
            let mut at = starts;
            for record in self.groups.records(group) {
                let i = &mut at[local(record.0)];
                self.sorted[*i] = record;
                *i += 1;
            }
            self.starts = starts.to_vec();
            self.current = Some(group);
        }
        let i = r % REGIONS;
        &self.sorted[self.starts[i]..self.starts[i + 1]]
    }

    /// Region `r` of the sender's table, as offsets from its dummy: bins `r·REGION_BINS..`
    /// (up to `bins` of them), β slots each, and each value at a uniformly random free slot
    /// of its bin, written `v − dummy` (never 0: values are below the dummy); 0 in the
    /// other slots, which hold the dummy. The order in which a bin's values take their
    /// slots does not change the distribution (spec §2.4: a shuffled padded bin). Regions
    /// are reached in order.
    pub(super) fn offsets(
        &mut self,
        f: &Field,
        r: usize,
        bins: usize,
        prg: &mut Prg,
        out: &mut Vec<u64>,
    ) -> Result<()> {
        let (beta, dummy) = (self.beta, self.dummy);
        out.clear();
        out.resize(bins * beta, 0);
        let mut load = [0u32; REGION_BINS];
        for &(bin, value) in self.region(r) {
            let local = bin as usize % REGION_BINS;
            if load[local] as usize == beta {
                return Err(Error::Unlucky(format!(
                    "a bin of the sender's table overflowed its {beta} slots (an event of \
                     probability below 2^-40)"
                )));
            }
            load[local] += 1;
            let slot = loop {
                let s = local * beta + prg.below(beta as u64) as usize;
                if out[s] == 0 {
                    break s;
                }
            };
            out[slot] = f.sub(value, dummy);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocols::Sizes;
    use std::collections::HashMap;

    fn place(h: &Hashing, x: u128) -> Placed {
        h.place_all([x].into_iter())[0]
    }

    /// The sender's whole table, region by region.
    fn senders_table(
        p: &Kbm23Params,
        h: &Hashing,
        placed: &[Placed],
        prg: &mut Prg,
    ) -> Result<Vec<u64>> {
        let mut values = SendersValues::new(p, h, placed);
        let mut table = Vec::new();
        let mut offsets = Vec::new();
        for first in (0..p.alpha as usize).step_by(REGION_BINS) {
            let bins = REGION_BINS.min(p.alpha as usize - first);
            values.offsets(&p.field, first / REGION_BINS, bins, prg, &mut offsets)?;
            table.extend(offsets.iter().map(|&o| p.field.add(p.senders_dummy(), o)));
        }
        Ok(table)
    }

    fn params(n: u64) -> Kbm23Params {
        Kbm23Params::new(
            Sizes {
                sender: n,
                receiver: n,
            },
            Some(32),
        )
        .unwrap()
    }

    #[test]
    fn value_and_bin_give_back_the_item_even_at_the_top_of_the_domain() {
        let p = params(1 << 12);
        let h = Hashing::new(&p, Block::from(7));
        let mut seen = HashMap::new();
        let top = (1u128 << 32) - 1;
        let items = (0..20_000u128)
            .chain(top - 20_000..=top)
            .chain((0..20_000).map(|i| i * 214_749));
        let items: Vec<u128> = items.collect();
        let all = h.place_all(items.iter().copied());
        for (&x, &placed) in items.iter().zip(&all) {
            assert_eq!(placed, place(&h, x), "placed alone and in a batch");
            let distinct: std::collections::HashSet<_> = placed.bins.iter().collect();
            assert_eq!(distinct.len(), K, "an item's bins are distinct");
            for (j, &bin) in placed.bins.iter().enumerate() {
                assert!((bin as u64) < p.alpha);
                let v = h.value(j, placed.suffix);
                assert!(v < p.receivers_dummy(), "values stay below the dummies");
                if let Some(&y) = seen.get(&(bin, v)) {
                    assert_eq!(y, x, "(bin, value) of {x} and {y}");
                }
                seen.insert((bin, v), x);
            }
        }
        assert!(p.senders_dummy() < p.field.modulus());
    }

    #[test]
    fn receivers_bins_hold_each_item_once_and_senders_all_three() {
        let mut prg = Prg::from_seed(Block::from(3));
        let n = 5000;
        let p = params(n);
        let h = Hashing::new(&p, Block::from(11));
        let xs: Vec<Placed> = (0..n).map(|_| place(&h, prg.u64() as u128 >> 32)).collect();
        let a = receivers_table(&p, &h, &xs, &mut prg).unwrap();
        let mut count = vec![0; n as usize];
        for (i, (&v, &item)) in a.values.iter().zip(&a.items).enumerate() {
            if item == u32::MAX {
                assert_eq!(v, p.receivers_dummy());
                continue;
            }
            count[item as usize] += 1;
            let x = &xs[item as usize];
            let j = x.bins.iter().position(|&b| b as usize == i).unwrap();
            assert_eq!(v, h.value(j, x.suffix));
        }
        assert!(count.iter().all(|&c| c == 1));
        let b = senders_table(&p, &h, &xs, &mut prg).unwrap();
        for x in &xs {
            for (j, &bin) in x.bins.iter().enumerate() {
                let bin = bin as usize;
                let slots = (bin * p.beta..(bin + 1) * p.beta).map(|s| b[s]);
                assert_eq!(slots.filter(|&v| v == h.value(j, x.suffix)).count(), 1);
            }
        }
        let filled = (0..p.comparisons())
            .filter(|&s| b[s] != p.senders_dummy())
            .count();
        assert_eq!(filled, K * n as usize);
    }

    #[test]
    fn a_lone_value_lands_in_every_slot_alike() {
        // Spec §9: the slot of a match must not depend on the sender's other items.
        let p = params(16);
        let h = Hashing::new(&p, Block::from(5));
        let x = place(&h, 12345);
        let mut prg = Prg::from_seed(Block::from(9));
        let mut at = vec![0u32; p.beta];
        let runs = 100 * p.beta;
        for _ in 0..runs {
            let b = senders_table(&p, &h, &[x], &mut prg).unwrap();
            let bin = x.bins[0] as usize;
            let s = (0..p.beta)
                .find(|&s| b[bin * p.beta + s] != p.senders_dummy())
                .unwrap();
            at[s] += 1;
        }
        // 100 expected per slot; 5.5 standard deviations either way.
        assert!(at.iter().all(|&c| (45..=155).contains(&c)), "{at:?}");
    }

    #[test]
    fn an_overfull_bin_is_an_error() {
        let p = params(16);
        let h = Hashing::new(&p, Block::from(5));
        let x = place(&h, 1);
        let same = vec![x; p.beta + 1];
        let e = senders_table(&p, &h, &same, &mut Prg::from_seed(Block::from(1)));
        assert!(matches!(e, Err(Error::Unlucky(_))));
    }
}
