//! The receiver's table of its own PRF (or hash) values, against which the sender's values
//! are looked up: open addressing with linear probing from the low 64 bits of the
//! (uniformly random) values mapped onto the table by multiply-shift, 16 bytes a slot.
//! A slot holds a value's low 88 bits and its group, so that where no value has more
//! (values of up to 88 bits: the output lengths of λ + log2(n_S·n_R) bits up to 2^24 items
//! each side) a hit is decided by the slot alone; the bits above 88 are kept apart, by
//! slot, and compared on a hit only if some value has them.

use super::Buckets;
use crate::crypto::Block;
use crate::util::memory::{huge_zeroed, prefetch};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// Value bits a slot holds.
const SLOT_BITS: u32 = 88;
/// Slots a region has: 512 KiB, built in the L2 cache by one task.
const REGION: usize = 1 << 15;

/// A slot: the value's low 64 bits; then the item + 1 (0: an empty slot) in the low half
/// and the value's bits 64..88 and the group in the high half. All zeros is empty, so a
/// table starts as untouched zeroed memory.
type Slot = [u64; 2];

/// The slot of `value` for `item` in `group`.
#[inline]
fn slot(value: Block, group: u32, item: u32) -> Slot {
    [
        value.low_u64(),
        (item as u64 + 1) | (middle(value, group) as u64) << 32,
    ]
}

/// Whether `slot` holds no entry.
#[inline]
fn is_empty(slot: &Slot) -> bool {
    slot[1] as u32 == 0
}

/// A slot's `middle` for `value` in `group`: the value's bits 64..88, then the group in the
/// low byte.
#[inline]
fn middle(value: Block, group: u32) -> u32 {
    (value.high_u64() as u32) << 8 | group
}

/// Maps `(value, group)` to the receiver's item index.
pub struct MatchTable {
    slots: Vec<Slot>,
    /// Each slot's value bits from 88 on, if some value has any (else empty).
    high: Vec<u64>,
    items: usize,
}

impl MatchTable {
    /// The table of `count` entries, entry i being `entry(i) = (value, group, item)` with
    /// group below 256 and each item below `items` and in at most one entry; at load
    /// factor ≤ 1/2.
    ///
    /// Built in parallel: the entries are grouped by the region of slots where their
    /// probes start ([`Buckets`]), and each region is filled by one task, in the cache,
    /// an entry probing on from its start as linear probing does; an entry that runs off
    /// its region's end is placed after all regions, probing on into the next. Each
    /// entry then sits at or after its start with no empty slot between, as [`find`]
    /// needs, and the table is the same on any number of threads.
    ///
    /// [`find`]: MatchTable::find
    pub fn build(
        items: usize,
        count: usize,
        entry: impl Fn(usize) -> (Block, u32, u32) + Sync,
    ) -> Self {
        let cap = (2 * count).max(16);
        let mut slots: Vec<Slot> = huge_zeroed(cap);
        let regions = cap.div_ceil(REGION);
        let start_of = |value: Block| start(value, cap);
        let check = |(value, group, item): (Block, u32, u32)| {
            assert!(group < 256, "group {group} of a match table");
            assert!((item as usize) < items, "item {item} of a table of {items}");
            (value, group, item)
        };
        let wide = AtomicBool::new(false);
        let buckets = Buckets::new(count, regions, |first, out| {
            for (i, o) in (first..).zip(out) {
                let value = entry(i).0;
                if value.as_u128() >> SLOT_BITS != 0 {
                    wide.store(true, Ordering::Relaxed);
                }
                *o = (start_of(value) / REGION) as u32;
            }
        });
        let wide = wide.into_inner();
        let mut sorted: Vec<Slot> = huge_zeroed(count);
        buckets.scatter_with(
            |i| {
                let (value, group, item) = check(entry(i));
                slot(value, group, item)
            },
            &mut sorted,
        );
        let (mut high, mut sorted_high) = (Vec::new(), Vec::new());
        if wide {
            (high, sorted_high) = (huge_zeroed(cap), huge_zeroed(count));
            buckets.scatter_with(
                |i| (entry(i).0.as_u128() >> SLOT_BITS) as u64,
                &mut sorted_high,
            );
        }
        // Each region's high bits (none where no value has any).
        let high_regions: Vec<&mut [u64]> = if wide {
            high.chunks_mut(REGION).collect()
        } else {
            (0..regions).map(|_| &mut [][..]).collect()
        };
        let spills: Vec<(usize, Slot, u64)> = slots
            .par_chunks_mut(REGION)
            .zip(high_regions)
            .enumerate()
            .flat_map_iter(|(r, (slots, high))| {
                let entries = buckets.range(r);
                let mut spills = Vec::new();
                for k in entries {
                    let (s, h) = (sorted[k], sorted_high.get(k).copied().unwrap_or(0));
                    let from = start_of(Block::from(s[0])) - r * REGION;
                    match (from..slots.len()).find(|&i| is_empty(&slots[i])) {
                        Some(i) => {
                            slots[i] = s;
                            if wide {
                                high[i] = h;
                            }
                        }
                        None => spills.push((r * REGION + slots.len(), s, h)),
                    }
                }
                spills
            })
            .collect();
        drop((sorted, sorted_high));
        let mut table = MatchTable { slots, high, items };
        for (from, s, h) in spills {
            let mut i = from % cap;
            while !is_empty(&table.slots[i]) {
                i = table.next(i);
            }
            table.slots[i] = s;
            if wide {
                table.high[i] = h;
            }
        }
        table
    }

    /// The slot after `i`, wrapping around.
    #[inline]
    fn next(&self, i: usize) -> usize {
        if i + 1 == self.slots.len() {
            0
        } else {
            i + 1
        }
    }

    /// How many items the table has room for: every item is below it.
    pub fn items(&self) -> usize {
        self.items
    }

    /// Starts loading the slot where a lookup of `value` begins.
    #[inline]
    pub fn prefetch(&self, value: Block) {
        prefetch(&self.slots[start(value, self.slots.len())]);
    }

    /// The item with `value` in `group`, if any.
    #[inline]
    pub fn find(&self, value: Block, group: u32) -> Option<u32> {
        let (low, middle, high) = (
            value.low_u64(),
            middle(value, group),
            (value.as_u128() >> SLOT_BITS) as u64,
        );
        let wide = !self.high.is_empty();
        if high != 0 && !wide {
            return None;
        }
        let mut i = start(value, self.slots.len());
        loop {
            let [s_low, rest] = self.slots[i];
            if rest as u32 == 0 {
                return None;
            }
            if s_low == low && (rest >> 32) as u32 == middle && (!wide || self.high[i] == high) {
                return Some(rest as u32 - 1);
            }
            i = self.next(i);
        }
    }
}

/// Where the probe for a value starts in a table of `cap` slots: `⌊low · cap / 2^64⌋`.
#[inline]
fn start(value: Block, cap: usize) -> usize {
    ((value.low_u64() as u128 * cap as u128) >> 64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(i: u32) -> Block {
        Block::from_u128((i as u128) << 70 | (i as u128 * 7919))
    }

    #[test]
    fn finds_exactly_what_was_inserted() {
        let t = MatchTable::build(100, 100, |i| {
            (value(i as u32) | Block::unit(100), i as u32 % 3, i as u32)
        });
        for i in 0..100u32 {
            let v = value(i) | Block::unit(100);
            assert_eq!(t.find(v, i % 3), Some(i));
            assert_eq!(t.find(v, (i + 1) % 3), None, "group must match");
            assert_eq!(
                t.find(v ^ Block::unit(101), i % 3),
                None,
                "high bits must match"
            );
            assert_eq!(
                t.find(v ^ Block::unit(80), i % 3),
                None,
                "middle bits must match"
            );
        }
    }

    #[test]
    fn narrow_values_are_decided_by_their_slots() {
        // Values below 2^88 (no item has high bits): a value with high bits matches none.
        let t = MatchTable::build(100, 100, |i| (value(i as u32), 0, i as u32));
        for i in 0..100u32 {
            let v = value(i);
            assert_eq!(t.find(v, 0), Some(i));
            assert_eq!(t.find(v | Block::unit(90), 0), None);
            assert_eq!(t.find(v ^ Block::unit(87), 0), None);
        }
    }

    /// Many regions, with values crowded at the regions' ends so that probes run off them
    /// (and off the table's end, wrapping): every entry is found, a repeated value finds
    /// its first entry, and the table is the same on one thread and on three.
    #[test]
    fn regions_spill_into_their_neighbours_and_the_layout_ignores_threads() {
        let n = 5 * REGION;
        let cap = 2 * n;
        // Every 16th entry's probe starts near the end of a region (or of the table); the
        // others anywhere.
        let regions = cap / REGION;
        let low = |i: usize| match i % 16 {
            0 => {
                let slot = ((i / 16) % regions + 1) * REGION - 1 - (i / 16 / regions) % 7;
                ((slot as u128) << 64).div_ceil(cap as u128) as u64
            }
            _ => (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
        };
        let entry = |i: usize| {
            let i = i.min(n - 2); // the last two entries repeat one value
            (Block::from_halves(low(i), i as u64), 0, i as u32)
        };
        let entry_at = |i: usize| (entry(i).0, 0, i as u32);
        let build = |threads| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| MatchTable::build(n, n, entry_at))
        };
        let (one, three) = (build(1), build(3));
        assert_eq!(one.slots, three.slots);
        for i in 0..n - 1 {
            assert_eq!(one.find(entry(i).0, 0), Some(i as u32), "entry {i}");
        }
        assert_eq!(
            one.find(entry(n - 1).0, 0),
            Some(n as u32 - 2),
            "the first of a repeat"
        );
        let spilled = (0..cap)
            .filter(|&at| {
                let item = one.slots[at][1] as u32;
                item != 0 && at / REGION != start(entry(item as usize - 1).0, cap) / REGION
            })
            .count();
        assert!(
            spilled > regions,
            "{spilled} entries placed outside their region"
        );
    }
}
