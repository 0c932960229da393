//! The receiver's table of its own PRF (or hash) values, against which the sender's values
//! are looked up: open addressing with linear probing from the low 64 bits of the
//! (uniformly random) values mapped onto the table by multiply-shift, 16 bytes a slot, full
//! values compared on a hit.

use crate::crypto::Block;
use crate::memory::huge_vec;
use crate::memory::prefetch;

const EMPTY: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Slot {
    low: u64,
    item: u32,
    group: u32,
}

/// Maps `(value, group)` to the receiver's item index.
pub struct MatchTable {
    slots: Vec<Slot>,
    high: Vec<u64>,
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
                    group: 0,
                },
            ),
            high: huge_vec(items, 0),
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

    /// Records that `item` (below [`MatchTable::items`]) has `value` in `group`. Each item
    /// is inserted at most once.
    pub fn insert(&mut self, value: Block, group: u32, item: u32) {
        self.high[item as usize] = (value >> 64) as u64;
        let mut i = self.start(value);
        while self.slots[i].item != EMPTY {
            i = self.next(i);
        }
        self.slots[i] = Slot {
            low: value as u64,
            item,
            group,
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
        let (low, high) = (value as u64, (value >> 64) as u64);
        let mut i = self.start(value);
        loop {
            let s = self.slots[i];
            if s.item == EMPTY {
                return None;
            }
            if s.low == low && s.group == group && self.high[s.item as usize] == high {
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
        }
    }
}
