//! A party's input set: arbitrary byte strings, stored in one arena.

use crate::crypto::{Block, RandomOracle};
use rayon::prelude::*;

/// Byte-string items in one allocation (no per-item heap object, so 2^24 items are cheap).
#[derive(Clone, Default, Debug)]
pub struct Items {
    data: Vec<u8>,
    ends: Vec<usize>,
}

impl Items {
    /// No items.
    pub fn new() -> Self {
        Items::default()
    }

    /// Room for `items` items of `bytes` bytes in all.
    pub fn with_capacity(items: usize, bytes: usize) -> Self {
        Items {
            data: Vec::with_capacity(bytes),
            ends: Vec::with_capacity(items),
        }
    }

    /// Appends an item.
    pub fn push(&mut self, item: &[u8]) {
        self.data.extend_from_slice(item);
        self.ends.push(self.data.len());
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Item `i`.
    pub fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.data[start..self.ends[i]]
    }

    /// `oracle(item)` for every item, in parallel on the current rayon pool.
    pub fn hash_all(&self, oracle: &RandomOracle) -> Vec<Block> {
        (0..self.len())
            .into_par_iter()
            .with_min_len(4096)
            .map(|i| oracle.hash_block(self.get(i)))
            .collect()
    }
}

impl<T: AsRef<[u8]>> FromIterator<T> for Items {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut items = Items::new();
        for i in iter {
            items.push(i.as_ref());
        }
        items
    }
}
