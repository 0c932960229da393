//! The receiver's table of its own PRF (or hash) values, against which the sender's values
//! are looked up: open addressing with linear probing from the low 64 bits of the
//! (uniformly random) values mapped onto the table by multiply-shift, 16 bytes a slot.
//! A slot holds a value's low 88 bits and its group, so that where no value has more
//! (values of up to 88 bits: the output lengths of λ + log2(n_S·n_R) bits up to 2^24 items
//! each side) a hit is decided by the slot alone; the bits above 88 are kept apart, by
//! item, and compared on a hit only if some value has them.

use crate::crypto::Block;
use crate::memory::huge_vec;
use crate::memory::prefetch;

const EMPTY: u32 = u32::MAX;
/// Value bits a slot holds.
const SLOT_BITS: u32 = 88;

#[derive(Clone, Copy)]
struct Slot {
    low: u64,
    item: u32,
    /// The value's bits 64..88, then the group in the low byte.
    middle: u32,
}

/// A slot's `middle` for `value` in `group`.
#[inline]
fn middle(value: Block, group: u32) -> u32 {
    ((value >> 64) as u32) << 8 | group
}

/// Maps `(value, group)` to the receiver's item index.
pub struct MatchTable {
    slots: Vec<Slot>,
    /// Each item's value bits from 88 on.
    high: Vec<u64>,
    /// Whether some item's value has bits from 88 on.
    wide: bool,
}

impl MatchTable {
    /// A table for up to `items` entries, at load factor ≤ 1/2.
    pub fn with_capacity(items: usize) -> Self {
        let cap = (2 * items).max(16);
        MatchTable {
            slots: huge_vec(
                cap,
                Slot {
                    low: 0,
                    item: EMPTY,
                    middle: 0,
                },
            ),
            high: huge_vec(items, 0),
            wide: false,
        }
    }

    /// Where the probe for a value starts: `⌊low · cap / 2^64⌋`.
    #[inline]
    fn start(&self, value: Block) -> usize {
        ((value as u64 as u128 * self.slots.len() as u128) >> 64) as usize
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

    /// Records that `item` (below [`MatchTable::items`]) has `value` in `group` (below
    /// 256). Each item is inserted at most once.
    pub fn insert(&mut self, value: Block, group: u32, item: u32) {
        assert!(group < 256, "group {group} of a match table");
        let high = (value >> SLOT_BITS) as u64;
        self.high[item as usize] = high;
        self.wide |= high != 0;
        let mut i = self.start(value);
        while self.slots[i].item != EMPTY {
            i = self.next(i);
        }
        self.slots[i] = Slot {
            low: value as u64,
            item,
            middle: middle(value, group),
        };
    }

    /// Inserts each `(value, group, item)`, loading the slot of an entry a few entries
    /// before it is written (a table larger than the cache otherwise costs a miss each).
    pub fn insert_all(&mut self, entries: impl Iterator<Item = (Block, u32, u32)> + Clone) {
        const AHEAD: usize = 16;
        let mut ahead = entries.clone().skip(AHEAD);
        for (value, group, item) in entries {
            if let Some((value, _, _)) = ahead.next() {
                self.prefetch(value);
            }
            self.insert(value, group, item);
        }
    }

    /// How many items the table has room for: every item is below it.
    pub fn items(&self) -> usize {
        self.high.len()
    }

    /// Starts loading the slot where a lookup of `value` begins.
    #[inline]
    pub fn prefetch(&self, value: Block) {
        prefetch(&self.slots[self.start(value)]);
    }

    /// The item with `value` in `group`, if any.
    #[inline]
    pub fn find(&self, value: Block, group: u32) -> Option<u32> {
        let (low, middle, high) = (
            value as u64,
            middle(value, group),
            (value >> SLOT_BITS) as u64,
        );
        if high != 0 && !self.wide {
            return None;
        }
        let mut i = self.start(value);
        loop {
            let s = self.slots[i];
            if s.item == EMPTY {
                return None;
            }
            if s.low == low
                && s.middle == middle
                && (!self.wide || self.high[s.item as usize] == high)
            {
                return Some(s.item);
            }
            i = self.next(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_exactly_what_was_inserted() {
        let mut t = MatchTable::with_capacity(100);
        for i in 0..100u32 {
            t.insert((i as u128) << 70 | (i as u128 * 7919), i % 3, i);
        }
        for i in 0..100u32 {
            let v = (i as u128) << 70 | (i as u128 * 7919);
            assert_eq!(t.find(v, i % 3), Some(i));
            assert_eq!(t.find(v, (i + 1) % 3), None, "group must match");
            assert_eq!(t.find(v ^ (1 << 100), i % 3), None, "high bits must match");
            assert_eq!(t.find(v ^ (1 << 80), i % 3), None, "middle bits must match");
        }
    }

    #[test]
    fn narrow_values_are_decided_by_their_slots() {
        // Values below 2^88 (no item has high bits): a value with high bits matches none.
        let mut t = MatchTable::with_capacity(100);
        for i in 0..100u32 {
            t.insert((i as u128) << 70 | (i as u128 * 7919), 0, i);
        }
        for i in 0..100u32 {
            let v = (i as u128) << 70 | (i as u128 * 7919);
            assert_eq!(t.find(v, 0), Some(i));
            assert_eq!(t.find(v | 1 << 90, 0), None);
            assert_eq!(t.find(v ^ 1 << 87, 0), None);
        }
    }
}
