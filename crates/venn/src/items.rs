//! A party's input set: arbitrary byte strings, stored in one arena, each optionally with
//! values, one in each of a few columns (the numbers a sum over the intersection adds up).

use crate::crypto::{Aes, Block, RandomOracle};
use crate::util::memory::{huge_zeroed, prefetch, with_huge_capacity};
use crate::{Error, Result};
use rayon::prelude::*;
use std::hash::BuildHasher;

/// Byte-string items in one allocation (no per-item heap object, so 2^24 items are cheap).
#[derive(Clone, Default, Debug)]
pub struct Items {
    data: Vec<u8>,
    ends: Vec<usize>,
    /// The items' values, if they carry any: `value_columns` an item, item by item.
    values: Option<Vec<u64>>,
    value_columns: usize,
    /// The items' records, if they carry any: `record_width` bytes an item, item by item.
    records: Option<Vec<u8>>,
    record_width: usize,
    /// The records of repeated items' later rows, which deduplication sets aside.
    repeats: Repeats,
}

/// The records a repeated item's later rows carry (PSI with payloads where a key has
/// several rows): each with the item it belongs to, in input order.
#[derive(Clone, Default, Debug)]
struct Repeats {
    /// The (deduplicated) item each record belongs to.
    of: Vec<u32>,
    /// `record_width` bytes each.
    records: Vec<u8>,
}

impl Items {
    /// No items.
    pub fn new() -> Self {
        Items::default()
    }

    /// Room for `items` items of `bytes` bytes in all (on huge pages where available:
    /// the room is filled in one go, and page faults would otherwise cost more than
    /// the filling).
    pub fn with_capacity(items: usize, bytes: usize) -> Self {
        Items {
            data: with_huge_capacity(bytes),
            ends: with_huge_capacity(items),
            values: None,
            value_columns: 0,
            records: None,
            record_width: 0,
            repeats: Repeats::default(),
        }
    }

    /// Appends an item.
    ///
    /// # Panics
    /// If the items carry values or records (add those with [`Items::with_values`] or
    /// [`Items::with_records`] once all are in).
    pub fn push(&mut self, item: &[u8]) {
        assert!(
            self.values.is_none() && self.records.is_none(),
            "an item without its value or record"
        );
        self.data.extend_from_slice(item);
        self.ends.push(self.data.len());
    }

    /// The items with `values[i]` the value of item `i` (one value per item).
    pub fn with_values(self, values: Vec<u64>) -> Result<Self> {
        self.with_value_columns(values, 1)
    }

    /// The items with `columns` values each, item by item: item `i`'s in
    /// `values[i·columns..(i + 1)·columns]`.
    pub fn with_value_columns(mut self, values: Vec<u64>, columns: usize) -> Result<Self> {
        if columns == 0 || values.len() != self.len() * columns {
            return Err(Error::Usage(format!(
                "{} values for {} items in {columns} columns",
                values.len(),
                self.len()
            )));
        }
        self.values = Some(values);
        self.value_columns = columns;
        Ok(self)
    }

    /// The items with a record of `width` bytes each (the sender's columns for the
    /// receiver's matches), item by item: item `i`'s in `records[i·width..(i + 1)·width]`.
    pub fn with_records(mut self, records: Vec<u8>, width: usize) -> Result<Self> {
        if width == 0 || records.len() != self.len() * width {
            return Err(Error::Usage(format!(
                "{} bytes of records for {} items of {width} bytes",
                records.len(),
                self.len()
            )));
        }
        self.records = Some(records);
        self.record_width = width;
        Ok(self)
    }

    /// The items with the records of their keys' later rows set aside as
    /// [`Items::deduplicate`] sets them ([`Items::repeated_records`]): `of[e]`, the item
    /// row `e` repeats, and its record in `records`, of the items' records' width, each
    /// item's rows in the order they came. For items made distinct another way.
    pub fn with_repeated_records(mut self, of: Vec<u32>, records: Vec<u8>) -> Result<Self> {
        let fits = self.records.is_some()
            && records.len() == of.len() * self.record_width
            && of.iter().all(|&i| (i as usize) < self.len());
        if !fits {
            return Err(Error::Usage(format!(
                "{} bytes of repeated rows' records for {} rows of {} items with records of \
                 {} bytes",
                records.len(),
                of.len(),
                self.len(),
                self.record_width
            )));
        }
        self.repeats = Repeats { of, records };
        Ok(self)
    }

    /// The items' records and their width, if they carry any.
    pub fn records(&self) -> Option<(&[u8], usize)> {
        self.records.as_deref().map(|r| (r, self.record_width))
    }

    /// The records of repeated items' later rows, which [`Items::deduplicate`] set aside:
    /// the item each belongs to, and the records ([`Items::records`]' width each), in the
    /// order the rows came. Empty where no item with a record was repeated.
    pub fn repeated_records(&self) -> (&[u32], &[u8]) {
        (&self.repeats.of, &self.repeats.records)
    }

    /// The items' values, if they carry any: [`Items::value_columns`] an item, item by
    /// item.
    pub fn values(&self) -> Option<&[u64]> {
        self.values.as_deref()
    }

    /// Values an item carries: 0 without values.
    pub fn value_columns(&self) -> usize {
        self.value_columns
    }

    /// The memory the items hold, in bytes: the room their buffers have (at least what
    /// they use), as `--max-memory` counts a party's input.
    pub fn memory(&self) -> u64 {
        let values = self.values.as_ref().map_or(0, Vec::capacity);
        let records = self.records.as_ref().map_or(0, Vec::capacity);
        let repeats = self.repeats.of.capacity() * 4 + self.repeats.records.capacity();
        (self.data.capacity()
            + self.ends.capacity() * std::mem::size_of::<usize>()
            + values * std::mem::size_of::<u64>()
            + records
            + repeats) as u64
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Refuses the items unless each is a `decimal_integer` below 2^σ, naming the first
    /// that is not (for `protocol`, which runs on such integers given a σ: `--sigma`;
    /// without one, on any keys).
    pub fn check_integers(&self, protocol: &str, sigma: Option<u32>) -> Result<()> {
        let Some(sigma) = sigma else { return Ok(()) };
        match (0..self.len()).find(|&i| decimal_integer(self.get(i), sigma).is_none()) {
            None => Ok(()),
            Some(i) => Err(Error::Usage(format!(
                "{protocol} with --sigma {sigma} runs on integers below 2^{sigma} written in \
                 decimal (no sign, no leading zeros); key number {} is not one",
                i + 1
            ))),
        }
    }

    /// Each item as the `decimal_integer` below 2^σ it stands for, naming the first that
    /// is not one.
    pub fn integers(&self, sigma: u32) -> Result<Vec<u64>> {
        (0..self.len())
            .map(|i| {
                decimal_integer(self.get(i), sigma).ok_or_else(|| {
                    Error::Usage(format!("key number {} is not a {sigma}-bit integer", i + 1))
                })
            })
            .collect()
    }

    /// Each item as a number below 2^σ, as the protocols on σ-bit numbers compare them:
    /// with `hashed`, any key hashed to σ bits under `domain` and `context` (the session
    /// id, so that the hash is fresh for each run); otherwise the decimal σ-bit integer it
    /// is ([`Items::integers`]).
    pub fn numbers(
        &self,
        sigma: u32,
        hashed: bool,
        domain: &str,
        context: &[u8],
    ) -> Result<Vec<u128>> {
        if hashed {
            let encoder = BlockEncoder::new(domain, context);
            let mask = Block::low_ones(sigma as usize);
            Ok(encoder
                .encode_all(self, mask)
                .into_iter()
                .map(Block::as_u128)
                .collect())
        } else {
            Ok(self.integers(sigma)?.into_iter().map(u128::from).collect())
        }
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The items, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Item `i`.
    pub fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.data[start..self.ends[i]]
    }

    /// Removes every item equal to an earlier one, keeping first appearances in order, and
    /// returns, for each item as it was, the index of its value afterwards. Values of
    /// equal items are added (modulo 2^64) into the one kept; of records, the first's is
    /// the item's and the later ones are set aside ([`Items::repeated_records`]).
    ///
    /// One pass of an open-addressing table of item hashes (linear probing, half full)
    /// under a hash keyed afresh on each call, so that no input can be crafted to collide;
    /// the table's line for an item is prefetched a few items ahead, which hides most of
    /// the cache misses a table larger than the cache costs. The kept items are moved down
    /// in place.
    ///
    /// # Panics
    /// With 2^32 - 1 items or more (callers bound their inputs well below).
    pub fn deduplicate(&mut self) -> Vec<u32> {
        /// How many items ahead a table line is prefetched.
        const AHEAD: usize = 16;
        let n = self.len();
        assert!(n < u32::MAX as usize, "too many items to deduplicate");
        let hasher = foldhash::fast::RandomState::default();
        let mut hashes = with_huge_capacity(n);
        hashes.extend((0..n).map(|i| hasher.hash_one(self.get(i))));
        let mask = (2 * n).next_power_of_two().max(16) - 1;
        // A slot holds the hash's upper half and 1 + the kept index (0: empty).
        let mut slots = huge_zeroed::<u64>(mask + 1);
        let mut index = with_huge_capacity(n);
        let (mut kept, mut kept_bytes, mut start) = (0usize, 0usize, 0usize);
        for (i, &h) in hashes.iter().enumerate() {
            if let Some(&ahead) = hashes.get(i + AHEAD) {
                prefetch(&slots[ahead as usize & mask]);
            }
            let end = self.ends[i];
            let tag = h >> 32;
            let mut pos = h as usize & mask;
            let found = loop {
                let slot = slots[pos];
                if slot == 0 {
                    slots[pos] = tag << 32 | (kept as u64 + 1);
                    break None;
                }
                if slot >> 32 == tag {
                    let k = (slot as u32 - 1) as usize;
                    // Kept items lie below `kept_bytes` <= `start`: both are intact.
                    let k_start = if k == 0 { 0 } else { self.ends[k - 1] };
                    if self.data[k_start..self.ends[k]] == self.data[start..end] {
                        break Some(k as u32);
                    }
                }
                pos = (pos + 1) & mask;
            };
            let k = match found {
                Some(k) => {
                    if let Some(records) = &self.records {
                        // Row `i`'s record is intact: records move down only to `kept` <= `i`.
                        let w = self.record_width;
                        self.repeats.of.push(k);
                        (self.repeats.records).extend_from_slice(&records[i * w..(i + 1) * w]);
                    }
                    k as usize
                }
                None => {
                    self.data.copy_within(start..end, kept_bytes);
                    kept_bytes += end - start;
                    self.ends[kept] = kept_bytes;
                    if let Some(records) = &mut self.records {
                        let w = self.record_width;
                        records.copy_within(i * w..(i + 1) * w, kept * w);
                    }
                    kept += 1;
                    kept - 1
                }
            };
            if let Some(values) = &mut self.values {
                // Kept values lie at `kept` <= `i`: the ones at `i` are intact, and those
                // a new item overwrites were moved down when their own item was seen.
                let w = self.value_columns;
                for c in 0..w {
                    let v = values[i * w + c];
                    values[k * w + c] = match found {
                        Some(_) => values[k * w + c].wrapping_add(v),
                        None => v,
                    };
                }
            }
            index.push(k as u32);
            start = end;
        }
        self.data.truncate(kept_bytes);
        self.ends.truncate(kept);
        if let Some(values) = &mut self.values {
            values.truncate(kept * self.value_columns);
        }
        if let Some(records) = &mut self.records {
            records.truncate(kept * self.record_width);
        }
        // A buffer using under half its room (many repeats, or keys taken from a wider
        // file's room) gives the rest back rather than hold it through a whole run.
        if 2 * kept_bytes < self.data.capacity() {
            self.data.shrink_to_fit();
        }
        if 2 * kept < self.ends.capacity() {
            self.ends.shrink_to_fit();
        }
        index
    }

    /// `f(item)` for every item, in parallel on the current rayon pool.
    pub fn map_all(&self, f: impl Fn(&[u8]) -> Block + Sync) -> Vec<Block> {
        (0..self.len())
            .into_par_iter()
            .with_min_len(4096)
            .map(|i| f(self.get(i)))
            .collect()
    }
}

/// Maps items to uniformly distributed 128-bit values for protocols that work on blocks.
///
/// Items of at most 16 bytes are encoded injectively — up to 15 bytes with their length
/// in byte 15, exactly 16 bytes as they are — and the encoding is passed through AES under
/// a key for its length class (the two classes get independent keys, so they cannot
/// collide by construction); longer items are hashed with the random oracle. Keys and
/// oracle are bound to `domain` and the session `context`. Distinct items map to equal
/// values with probability at most 2^-128 per pair, as with a random oracle, while short
/// items — the common case, and the ≤ 128-bit inputs of the papers' evaluations — cost one
/// AES call instead of a hash.
pub struct BlockEncoder {
    short: Aes,
    sixteen: Aes,
    long: RandomOracle,
}

impl BlockEncoder {
    /// The encoder for `domain` in the session `context`.
    pub fn new(domain: &str, context: &[u8]) -> Self {
        let ro = RandomOracle::new(domain, context);
        BlockEncoder {
            short: Aes::new(ro.hash_block(b"key for items of 0-15 bytes")),
            sixteen: Aes::new(ro.hash_block(b"key for items of 16 bytes")),
            long: ro,
        }
    }

    /// The value of every item, cut to the bits of `mask`, in parallel on the current rayon
    /// pool: [`BlockEncoder::encode`] with the AES of the items of at most 16 bytes run a
    /// batch at a time, its pipeline full instead of waiting out one block per item.
    pub fn encode_all(&self, items: &Items, mask: Block) -> Vec<Block> {
        const BATCH: usize = 64;
        let mut out = huge_zeroed(items.len());
        out.par_chunks_mut(BATCH)
            .with_min_len(64)
            .enumerate()
            .for_each(|(b, blocks)| {
                let first = b * BATCH;
                let (mut short, mut sixteen, mut long) = (false, false, false);
                for (i, x) in blocks.iter_mut().enumerate() {
                    let item = items.get(first + i);
                    match item.len() {
                        0..=15 => {
                            *x = padded(item);
                            short = true;
                        }
                        16 => {
                            *x = Block::from_le_bytes(item.try_into().expect("16 bytes"));
                            sixteen = true;
                        }
                        _ => long = true,
                    }
                }
                // A batch of one class (the usual case) takes one pass of AES.
                if short ^ sixteen && !long {
                    let aes = if short { &self.short } else { &self.sixteen };
                    aes.encrypt_blocks(blocks);
                } else {
                    for (i, x) in blocks.iter_mut().enumerate() {
                        *x = self.encode(items.get(first + i));
                    }
                }
                blocks.iter_mut().for_each(|x| *x &= mask);
            });
        out
    }

    /// The value of one item.
    pub fn encode(&self, item: &[u8]) -> Block {
        match item.len() {
            0..=15 => self.short.encrypt(padded(item)),
            16 => self
                .sixteen
                .encrypt(Block::from_le_bytes(item.try_into().expect("16 bytes"))),
            _ => self.long.hash_block(item),
        }
    }
}

/// An item of at most 15 bytes as a block: its bytes, then its length in byte 15.
fn padded(item: &[u8]) -> Block {
    let mut b = [0u8; 16];
    b[..item.len()].copy_from_slice(item);
    b[15] = item.len() as u8;
    Block::from_le_bytes(b)
}

/// The integer an item stands for, if it is one below 2^σ written in canonical decimal
/// (digits only, no sign, no leading zeros): the items of protocols on σ-bit integers.
pub(crate) fn decimal_integer(item: &[u8], sigma: u32) -> Option<u64> {
    if item.is_empty() || (item[0] == b'0' && item.len() > 1) {
        return None;
    }
    let x = item.iter().try_fold(0u64, |x, &b| {
        let digit = b.wrapping_sub(b'0');
        (digit < 10).then_some(())?;
        x.checked_mul(10)?.checked_add(digit as u64)
    })?;
    (sigma >= 64 || x >> sigma == 0).then_some(x)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_canonical_decimal_integers_below_two_to_sigma_are_items() {
        assert_eq!(decimal_integer(b"0", 32), Some(0));
        assert_eq!(decimal_integer(b"4294967295", 32), Some(u32::MAX as u64));
        assert_eq!(decimal_integer(b"4294967296", 32), None);
        assert_eq!(decimal_integer(b"4294967296", 64), Some(1 << 32));
        assert_eq!(decimal_integer(b"18446744073709551615", 64), Some(u64::MAX));
        for bad in [
            &b""[..],
            b"007",
            b"+7",
            b"-7",
            b" 7",
            b"7 ",
            b"0x10",
            b"1e3",
            b"18446744073709551616",
        ] {
            assert_eq!(
                decimal_integer(bad, 64),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn encoding_separates_lengths_and_classes() {
        let e = BlockEncoder::new("test", b"sid");
        let items: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0, 0],
            vec![0; 15],
            vec![0; 16],
            vec![0; 17],
            vec![1; 15],
            [vec![0; 14], vec![15]].concat(),
        ];
        let values: Vec<Block> = items.iter().map(|i| e.encode(i)).collect();
        for i in 0..values.len() {
            for j in 0..i {
                assert_ne!(values[i], values[j], "{:?} vs {:?}", items[i], items[j]);
            }
        }
        assert_eq!(values[4], e.encode(&[0; 16]), "deterministic");
        assert_ne!(
            BlockEncoder::new("test", b"other").encode(&[1]),
            e.encode(&[1]),
            "bound to the session"
        );
    }

    /// Batches of one length class (encrypted a batch at a time) and of mixed ones.
    #[test]
    fn encode_all_takes_uniform_and_mixed_batches() {
        let e = BlockEncoder::new("test", b"sid");
        for lengths in [
            vec![16; 200],
            vec![5; 200],
            [vec![16; 100], vec![3; 100]].concat(),
        ] {
            let items: Items = lengths
                .iter()
                .enumerate()
                .map(|(i, &len)| vec![i as u8; len])
                .collect::<Vec<_>>()
                .iter()
                .collect();
            let all = e.encode_all(&items, Block::ONES);
            assert!((0..items.len()).all(|i| all[i] == e.encode(items.get(i))));
        }
    }

    proptest::proptest! {
        /// Encoding all items at once gives each item's own encoding, masked, whatever the
        /// mix of length classes in a batch (lengths around 16 mostly) and the batch ends.
        #[test]
        fn encode_all_is_encode_of_each(
            lengths in proptest::collection::vec(
                proptest::prop_oneof![8 => proptest::strategy::Just(16usize), 1 => 0usize..40],
                0..300
            ),
            mask in proptest::prop_oneof![proptest::strategy::Just(u128::MAX), 0..u128::MAX],
        ) {
            let items: Items = lengths
                .iter()
                .enumerate()
                .map(|(i, &len)| (0..len).map(|j| (i * 31 + j) as u8).collect::<Vec<u8>>())
                .collect::<Vec<_>>()
                .iter()
                .collect();
            let (e, mask) = (BlockEncoder::new("test", b"sid"), Block::from_u128(mask));
            let all = e.encode_all(&items, mask);
            proptest::prop_assert_eq!(all.len(), items.len());
            for (i, &v) in all.iter().enumerate() {
                proptest::prop_assert_eq!(v, e.encode(items.get(i)) & mask);
            }
        }

        /// Deduplication keeps first appearances in order and maps each item to its value.
        #[test]
        fn deduplicate_keeps_first_appearances(
            items in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..4), 0..200)
        ) {
            let mut store: Items = items.iter().collect();
            let index = store.deduplicate();
            let mut expected: Vec<&Vec<u8>> = Vec::new();
            for i in &items {
                if !expected.contains(&i) {
                    expected.push(i);
                }
            }
            proptest::prop_assert_eq!(store.len(), expected.len());
            for (k, e) in expected.iter().enumerate() {
                proptest::prop_assert_eq!(store.get(k), e.as_slice());
            }
            for (i, item) in items.iter().enumerate() {
                proptest::prop_assert_eq!(store.get(index[i] as usize), item.as_slice());
            }
        }

        /// Values of equal items are added into the one kept, column by column.
        #[test]
        fn deduplicate_adds_the_values_of_equal_items(
            rows in proptest::collection::vec((0u8..4, 0u64..1 << 40), 0..100),
            columns in 1usize..4,
        ) {
            let items: Items = rows.iter().map(|(k, _)| [*k]).collect();
            // Column c holds the row's value times c + 1.
            let values: Vec<u64> = (rows.iter())
                .flat_map(|(_, v)| (1..=columns as u64).map(move |c| v * c))
                .collect();
            let mut store = items.with_value_columns(values, columns).unwrap();
            store.deduplicate();
            let sums: Vec<u64> = (0..store.len())
                .flat_map(|k| {
                    let key = store.get(k)[0];
                    let sum: u64 = rows.iter().filter(|(r, _)| *r == key).map(|(_, v)| v).sum();
                    (1..=columns as u64).map(move |c| sum * c)
                })
                .collect();
            proptest::prop_assert_eq!(store.values().unwrap(), &sums[..]);
        }

        /// Of records, each kept item has its first row's, and every later row's is set
        /// aside with its item, in row order: together, each row's record exactly once.
        #[test]
        fn deduplicate_sets_aside_the_records_of_later_rows(
            keys in proptest::collection::vec(0u8..5, 0..80),
            width in 1usize..20,
        ) {
            let items: Items = keys.iter().map(|k| [*k]).collect();
            // Row r's record: its number, then filler.
            let record = |r: usize| -> Vec<u8> {
                (0..width).map(|b| if b == 0 { r as u8 } else { 0xA5 }).collect()
            };
            let records: Vec<u8> = (0..keys.len()).flat_map(record).collect();
            let mut store = items.with_records(records, width).unwrap();
            let index = store.deduplicate();
            let (all, w) = store.records().unwrap();
            let (of, repeats) = store.repeated_records();
            proptest::prop_assert_eq!(w, width);
            proptest::prop_assert_eq!(of.len() * width, repeats.len());
            let mut later = of.iter().zip(repeats.chunks(width));
            let mut seen = std::collections::HashSet::new();
            for (r, k) in index.iter().enumerate() {
                let k = *k as usize;
                if seen.insert(k) {
                    proptest::prop_assert_eq!(&all[k * width..(k + 1) * width], &record(r)[..]);
                } else {
                    let (&item, rec) = later.next().unwrap();
                    proptest::prop_assert_eq!((item as usize, rec), (k, &record(r)[..]));
                }
            }
            proptest::prop_assert!(later.next().is_none());
        }
    }
}
