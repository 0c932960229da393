//! The encode-commit receiver's multimap (RR17 Fig. 9 step 3): from the 32-bit tag of an
//! item's encoding, and the slot of its bin it was encoded in, to the item. Tags are short,
//! so they repeat: a lookup visits every entry with its tag. Lookups outnumber entries μ to
//! one and almost all miss, so the tags are packed 15 to a 64-byte bucket (with its count),
//! about 8 to a bucket, where one cache line answers a lookup: a miss touches 8 bytes of
//! bucket per item, a third of an open-addressing table of whole 12-byte entries at load
//! 1/2 (items and groups, 11.5 bytes an item more, are read only on a tag match). A full
//! bucket overflows into the next; a lookup goes on past full buckets only, and there is
//! always one that is not full (the table holds ⌈n/8⌉·15 > n tags).

use crate::util::memory::{huge_vec, huge_zeroed, prefetch};

/// Tags in a bucket.
const WIDTH: usize = 15;
/// Items per bucket on average.
const LOAD: usize = 8;
// Insertion and lookup stop at a bucket that is not full: there must be one.
const _: () = assert!(LOAD < WIDTH);

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Bucket {
    tags: [u32; WIDTH],
    len: u32,
}

impl Bucket {
    /// Bit i is set where tag i (or, for i = 15, the count) equals `tag`.
    #[inline]
    fn matches(&self, tag: u32) -> u32 {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            // SAFETY: SSE2 is part of the x86_64 baseline; a bucket is 64 bytes, 64-aligned.
            unsafe {
                let want = _mm_set1_epi32(tag as i32);
                let at = (self as *const Bucket).cast::<__m128i>();
                (0..4).fold(0, |bits, k| {
                    let eq = _mm_cmpeq_epi32(_mm_load_si128(at.add(k)), want);
                    bits | (_mm_movemask_ps(_mm_castsi128_ps(eq)) as u32) << (4 * k)
                })
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        (0..WIDTH).fold(0, |bits, i| bits | ((self.tags[i] == tag) as u32) << i)
    }
}

/// Maps `(tag, group)` to every item inserted with it.
pub struct TagTable {
    buckets: Vec<Bucket>,
    /// The item of tag i of bucket b at `b·WIDTH + i`.
    items: Vec<u32>,
    groups: Vec<u32>,
}

impl TagTable {
    /// The table of `keys`: item i has tag and group `keys[i]`.
    pub fn new(keys: impl ExactSizeIterator<Item = (u32, u32)>) -> Self {
        let count = keys.len().div_ceil(LOAD).max(1);
        let empty = Bucket {
            tags: [0; WIDTH],
            len: 0,
        };
        let mut t = TagTable {
            buckets: huge_vec(count, empty),
            items: huge_zeroed(count * WIDTH),
            groups: Vec::with_capacity(keys.len()),
        };
        for (item, (tag, group)) in keys.enumerate() {
            t.groups.push(group);
            let mut b = t.home(tag);
            while t.buckets[b].len as usize == WIDTH {
                b = (b + 1) % count;
            }
            let bucket = &mut t.buckets[b];
            let at = bucket.len as usize;
            bucket.tags[at] = tag;
            bucket.len += 1;
            t.items[b * WIDTH + at] = item as u32;
        }
        t
    }

    /// The bucket where `tag` belongs (tags are uniformly random: the high bits of
    /// `tag · buckets`).
    #[inline]
    fn home(&self, tag: u32) -> usize {
        ((tag as u64 * self.buckets.len() as u64) >> 32) as usize
    }

    /// Starts loading the bucket where a lookup of `tag` begins.
    #[inline]
    pub fn prefetch(&self, tag: u32) {
        prefetch(&self.buckets[self.home(tag)]);
    }

    /// Calls `found` with every item of `tag` in `group`.
    #[inline]
    pub fn find(&self, tag: u32, group: u32, mut found: impl FnMut(u32)) {
        let mut b = self.home(tag);
        loop {
            let bucket = &self.buckets[b];
            let mut hits = bucket.matches(tag) & ((1 << bucket.len) - 1);
            while hits != 0 {
                let item = self.items[b * WIDTH + hits.trailing_zeros() as usize];
                if self.groups[item as usize] == group {
                    found(item);
                }
                hits &= hits - 1;
            }
            if (bucket.len as usize) < WIDTH {
                return;
            }
            b = (b + 1) % self.buckets.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_item_with_a_tag_and_group_and_nothing_else() {
        // Tags 0..50 each twice (groups 0 and 1), tag 7 four more times in group 1.
        let mut keys: Vec<(u32, u32)> = (0..100).map(|i| (i / 2, i % 2)).collect();
        keys.extend([(7, 1); 4]);
        let t = TagTable::new(keys.iter().copied());
        for tag in 0..60 {
            for group in 0..3 {
                let mut found = Vec::new();
                t.find(tag, group, |i| found.push(i));
                found.sort_unstable();
                let expect: Vec<u32> = (0..keys.len() as u32)
                    .filter(|&i| keys[i as usize] == (tag, group))
                    .collect();
                assert_eq!(found, expect, "tag {tag} group {group}");
            }
        }
        let mut count = 0;
        t.find(7, 1, |_| count += 1);
        assert_eq!(count, 5);
    }

    #[test]
    fn an_empty_table_finds_nothing() {
        let t = TagTable::new(std::iter::empty());
        t.find(0, 0, |i| panic!("found {i}"));
        t.find(u32::MAX, 5, |i| panic!("found {i}"));
    }
}
