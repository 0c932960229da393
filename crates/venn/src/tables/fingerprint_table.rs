//! Dual execution's receiver table (RR17 Fig. 4 step 6): Bob's n_B·μ_A comparison values,
//! each with the group (slot) Alice's value for it comes in, looked up n_A·μ_B times.
//!
//! A slot is 8 bytes — a 32-bit fingerprint of `(value, group)` and the entry's index — at
//! load ≤ 2/3, with linear probing. The values themselves are not kept: a fingerprint hit
//! is confirmed by the caller, who can recompute an entry's value (Bob re-encodes one item
//! in one instance). At 2^20 items this is 384 MB where a table of whole values took 1 GB,
//! most of whose cost on first touch was the memory itself. Bob's values are random-oracle
//! outputs, so the probe lengths are those of random keys whatever Alice sends; a lookup
//! asks for a confirmation on each true match and otherwise with probability about
//! 2^-32 per slot probed.

use crate::crypto::Block;
use crate::memory::{huge_vec, prefetch};

/// An empty slot (no entry has this index: entries are fewer than 2^32 − 1).
const EMPTY: u64 = u64::MAX;

/// Fingerprints and entry indices of `(value, group)` keys.
pub struct FingerprintTable {
    /// `fingerprint << 32 | entry`, or [`EMPTY`].
    slots: Vec<u64>,
}

/// The probe start and fingerprint of a key: a multiplicative hash of the value's 128 bits
/// folded to 64, mixed with the group. Its high bits pick the slot, its low 32 bits (a
/// bijection of the folded key's low 32) are the fingerprint.
#[inline]
fn mix(value: Block, group: u32) -> u64 {
    let folded = value as u64 ^ ((value >> 64) as u64).rotate_left(32);
    let keyed = folded ^ (group as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    keyed.wrapping_mul(0xD6E8_FEB8_6659_FD93)
}

impl FingerprintTable {
    /// A table for up to `entries` keys (fewer than 2^32 − 1).
    pub fn new(entries: usize) -> Self {
        assert!(entries < u32::MAX as usize, "entries have 32-bit indices");
        FingerprintTable {
            slots: huge_vec((entries + entries / 2).max(16), EMPTY),
        }
    }

    #[inline]
    fn start(&self, h: u64) -> usize {
        ((h as u128 * self.slots.len() as u128) >> 64) as usize
    }

    #[inline]
    fn next(&self, i: usize) -> usize {
        if i + 1 == self.slots.len() {
            0
        } else {
            i + 1
        }
    }

    /// Inserts each `(value, group, entry)`, loading the slot of a key a few keys before
    /// it is written (a table larger than the cache otherwise costs a miss each).
    pub fn insert_batch(&mut self, keys: &[(Block, u32, u32)]) {
        const AHEAD: usize = 16;
        for (k, &(value, group, entry)) in keys.iter().enumerate() {
            if let Some(&(v, g, _)) = keys.get(k + AHEAD) {
                self.prefetch(v, g);
            }
            let h = mix(value, group);
            let mut i = self.start(h);
            while self.slots[i] != EMPTY {
                i = self.next(i);
            }
            self.slots[i] = (h as u32 as u64) << 32 | entry as u64;
        }
    }

    /// Starts loading the slot where a lookup of `(value, group)` begins.
    #[inline]
    pub fn prefetch(&self, value: Block, group: u32) {
        prefetch(&self.slots[self.start(mix(value, group))]);
    }

    /// The first entry whose fingerprint is that of `(value, group)` and which
    /// `confirm(entry)` accepts.
    #[inline]
    pub fn find(
        &self,
        value: Block,
        group: u32,
        mut confirm: impl FnMut(u32) -> bool,
    ) -> Option<u32> {
        let h = mix(value, group);
        let mut i = self.start(h);
        loop {
            let s = self.slots[i];
            if s == EMPTY {
                return None;
            }
            if (s >> 32) as u32 == h as u32 && confirm(s as u32) {
                return Some(s as u32);
            }
            i = self.next(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_was_inserted_under_its_group_and_confirmed() {
        let value = |i: u32| (i as Block).wrapping_mul(0x1234_5678_9abc_def1_2345) >> 24;
        let keys: Vec<(Block, u32, u32)> = (0..1000).map(|i| (value(i), i % 3, i)).collect();
        let mut t = FingerprintTable::new(keys.len());
        t.insert_batch(&keys);
        let confirm = |v: Block, g: u32| move |e: u32| value(e) == v && e % 3 == g;
        for i in 0..1000u32 {
            let (v, g) = (value(i), i % 3);
            assert_eq!(t.find(v, g, confirm(v, g)), Some(i));
            assert_eq!(t.find(v, (g + 1) % 3, confirm(v, (g + 1) % 3)), None);
            assert_eq!(t.find(v ^ 1 << 90, g, confirm(v ^ 1 << 90, g)), None);
        }
        // An entry the caller does not confirm is not found, even under its fingerprint.
        assert_eq!(t.find(value(5), 2, |_| false), None);
    }

    #[test]
    fn short_values_spread_over_the_table() {
        // 40-bit values (the shortest a run uses) must not all start at one slot.
        let keys: Vec<(Block, u32, u32)> = (0..4096u32)
            .map(|i| {
                (
                    (i as Block).wrapping_mul(0x009E_3779_B97F) & ((1 << 40) - 1),
                    0,
                    i,
                )
            })
            .collect();
        let mut t = FingerprintTable::new(keys.len());
        t.insert_batch(&keys);
        let longest = keys
            .iter()
            .map(|&(v, g, _)| {
                let (mut i, mut probes) = (t.start(mix(v, g)), 1);
                while t.slots[i] != EMPTY {
                    i = t.next(i);
                    probes += 1;
                }
                probes
            })
            .max()
            .unwrap();
        assert!(longest < 64, "a probe of {longest} slots");
    }
}
