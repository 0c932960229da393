//! The last step of RR17 dual execution (Fig. 4 step 4, with the §6.2 aggregation) as a
//! partitioned hash join.
//!
//! The receiver outputs each of its items one of whose n_B·μ_A comparison values is among
//! the sender's n_A·μ_B. The values are ℓ = λ + log2(n_A·μ_B) + log2(n_B·μ_A) bits long, so
//! that a spurious match among *all* those pairs has probability at most 2^-λ: no value
//! needs to be compared with fewer than all of the other side's. A table of the receiver's
//! values larger than the cache would cost a memory access per insertion and per lookup
//! (about 2^25 of each at n = 2^20, the most expensive part of the protocol). Instead both
//! sides spread their values over 2^P partitions by the top P bits of a public 64-bit key
//! of the value ([`key`]); the sender sends its values partition by partition, **in a
//! uniformly random order within each partition**, and the receiver joins each partition of
//! the sender's with its own in a table that fits in the cache.
//!
//! What the receiver sees is the multiset of the sender's values, in an order that depends
//! only on the values and on its coins: no more than Fig. 4's items in a random order with
//! each item's μ values side by side (from which the multiset follows), and it does not
//! tell which values belong to one item. The order within a partition must be random, not
//! the order of computation, which follows the sender's bins.
//!
//! The receiver keeps 8 bytes per value in its partition — the key's low 32 bits (a
//! fingerprint) and the entry's index — and, by entry, the rest of the value: the key's
//! high 32 bits and the value's bytes above its low 8 ([`Rest`]), which confirm a
//! fingerprint hit. (The key is a bijection of the folded value, and the folded value with
//! the high bytes gives the value: equal keys and high bytes are equal values.) Its
//! encodings are then no longer needed once its values are computed. The sender chooses its
//! values, but the receiver's are random-oracle outputs: whatever the sender sends, the
//! receiver's tables have the probe lengths of random keys, and each value it sends costs
//! at most one probe sequence plus a comparison per fingerprint it hits.

use crate::crypto::{pack_rows, row_mask, unpack_row, Block, Prg, UNPACK_SLACK};
use crate::net::Channel;
use crate::tables::Partitions;
use crate::{Error, Result};

/// Values per frame of the sender's.
const FRAME_VALUES: usize = 1 << 16;
/// The receiver's values per partition, about: a partition's table (twice as many slots of
/// 8 bytes) then stays in the L2 cache.
const PER_PARTITION: u64 = 1 << 13;

/// The public key of a comparison value: its 128 bits folded to 64 and multiplied by an odd
/// constant (a bijection of the folded bits). Its top [`partition_bits`] bits name the
/// partition, which depend on all the folded bits; its low 32 bits, the receiver's
/// fingerprint, depend only on the folded value's low 32 bits — enough, as the receiver's
/// values are random-oracle outputs and a fingerprint hit is only a candidate.
#[inline]
pub(super) fn key(value: Block) -> u64 {
    let folded = value.low_u64() ^ value.high_u64().rotate_left(32);
    (folded ^ 0x9E37_79B9_7F4A_7C15).wrapping_mul(0xD6E8_FEB8_6659_FD93)
}

/// P for the receiver's `entries` values (both parties compute it from the public sizes).
pub(super) fn partition_bits(entries: u64) -> u32 {
    (entries / PER_PARTITION)
        .max(1)
        .next_power_of_two()
        .ilog2()
        .min(20)
}

fn partition(key: u64, bits: u32) -> usize {
    key.checked_shr(64 - bits).unwrap_or(0) as usize
}

/// The sender's comparison values by partition, as it computes them.
pub(super) struct SendersValues {
    parts: Partitions<Block>,
    bits: u32,
}

impl SendersValues {
    /// Room for `count` values in 2^`bits` partitions.
    pub(super) fn new(bits: u32, count: usize) -> Self {
        SendersValues {
            parts: Partitions::new(1 << bits, count),
            bits,
        }
    }

    pub(super) fn push(&mut self, value: Block) {
        self.parts.push(partition(key(value), self.bits), value);
    }

    /// Sends every value, `bytes` bytes each, partition by partition, each partition
    /// shuffled with `prg`; in frames of [`FRAME_VALUES`] values (the last one shorter).
    pub(super) fn send(self, chan: &mut dyn Channel, bytes: usize, prg: &mut Prg) -> Result<()> {
        let mut pending: Vec<Block> = Vec::with_capacity(2 * FRAME_VALUES);
        let mut frame = Vec::with_capacity(FRAME_VALUES * bytes);
        let mut shuffled = Vec::new();
        for p in 0..self.parts.count() {
            shuffled.clear();
            shuffled.extend(self.parts.records(p));
            prg.shuffle(&mut shuffled);
            pending.extend_from_slice(&shuffled);
            if pending.len() >= FRAME_VALUES {
                let whole = pending.len() / FRAME_VALUES * FRAME_VALUES;
                for values in pending[..whole].chunks_exact(FRAME_VALUES) {
                    pack_rows(values, 1, bytes, &mut frame);
                    chan.send(&frame)?;
                }
                pending.drain(..whole);
            }
        }
        if !pending.is_empty() {
            pack_rows(&pending, 1, bytes, &mut frame);
            chan.send(&frame)?;
        }
        Ok(())
    }
}

/// The receiver's comparison values by partition, each as its fingerprint and its entry
/// index, and the rest of each by entry.
pub(super) struct ReceiversValues {
    parts: Partitions<u64>,
    bits: u32,
    rest: Rest,
    bytes: usize,
}

impl ReceiversValues {
    /// Room for `count` values (fewer than 2^32 − 1) of `bytes` bytes in 2^`bits`
    /// partitions.
    pub(super) fn new(bits: u32, count: usize, bytes: usize) -> Self {
        assert!(count < u32::MAX as usize, "entries have 32-bit indices");
        ReceiversValues {
            parts: Partitions::new(1 << bits, count),
            bits,
            rest: Rest::new(count, bytes),
            bytes,
        }
    }

    /// Records `value` (below 2^(8·bytes)) as the next entry (0, 1, … in order of the
    /// calls).
    #[inline]
    pub(super) fn push(&mut self, value: Block) {
        let k = key(value);
        let entry = self.rest.push(value, k);
        self.parts.push(
            partition(k, self.bits),
            (k as u32 as u64) << 32 | entry as u64,
        );
    }

    /// Receives the sender's `n` values ([`SendersValues::send`]) and joins them with its
    /// own, partition by partition. Returns `(entry, position of the sender's value)` for
    /// each match, sorted by entry, each entry once. Values out of partition order are a
    /// protocol error.
    pub(super) fn join(&self, chan: &mut dyn Channel, n: usize) -> Result<Vec<(u32, u32)>> {
        let bytes = self.bytes;
        let most = (0..self.parts.count()).map(|p| self.parts.len(p)).max();
        let mut table = PartitionTable::new(most.unwrap_or(0));
        let mut current = None;
        let (mut matches, mut frame, mask, mut v) =
            (Vec::new(), Vec::new(), row_mask(1, bytes), [Block::ZERO]);
        for first in (0..n).step_by(FRAME_VALUES) {
            let count = (n - first).min(FRAME_VALUES);
            chan.recv_exact_into(&mut frame, count * bytes, "comparison values")?;
            frame.resize(frame.len() + UNPACK_SLACK, 0);
            for e in 0..count {
                unpack_row(&frame, e, bytes, &mask, &mut v);
                let k = key(v[0]);
                let p = partition(k, self.bits);
                if current != Some(p) {
                    if current > Some(p) {
                        return Err(Error::protocol(
                            "comparison values in partition order",
                            format!(
                                "value {} in partition {p} after partition {current:?}",
                                first + e
                            ),
                        ));
                    }
                    table.fill(self.parts.len(p), self.parts.records(p));
                    current = Some(p);
                }
                if let Some(entry) = table.find(k as u32, |e| self.rest.is(e, v[0], k)) {
                    matches.push((entry, (first + e) as u32));
                }
            }
        }
        matches.sort_unstable();
        matches.dedup_by_key(|m| m.0);
        Ok(matches)
    }
}

/// What a value's fingerprint leaves out, by entry: the key's high 32 bits and the
/// value's bytes above its low 8 (none for values of up to 8 bytes), `4 + (bytes − 8)`
/// bytes in all. Entries are appended, each as 16 bytes whose tail (zeros) the next ones
/// overwrite: fixed-size stores and loads, not a copy of a run-time length.
struct Rest {
    data: Vec<u8>,
    stride: usize,
    /// The entries so far.
    len: usize,
}

impl Rest {
    fn new(count: usize, bytes: usize) -> Self {
        let stride = 4 + bytes.saturating_sub(8);
        Rest {
            data: vec![0; count * stride + 16],
            stride,
            len: 0,
        }
    }

    /// The rest of `value`, whose key is `k`: below 2^(8·stride) for a value of `bytes`
    /// bytes.
    #[inline]
    fn of(value: Block, k: u64) -> Block {
        Block::from_u128(u128::from(value.high_u64()) << 32 | u128::from(k >> 32))
    }

    /// Appends the rest of `value` (key `k`); returns its entry.
    #[inline]
    fn push(&mut self, value: Block, k: u64) -> u32 {
        let at = self.len * self.stride;
        self.data[at..at + 16].copy_from_slice(&Self::of(value, k).to_le_bytes());
        self.len += 1;
        (self.len - 1) as u32
    }

    /// Whether `value` (key `k`, whose fingerprint is entry `entry`'s) is entry `entry`'s.
    #[inline]
    fn is(&self, entry: u32, value: Block, k: u64) -> bool {
        let at = entry as usize * self.stride;
        let stored = Block::from_le_bytes(self.data[at..at + 16].try_into().expect("16 bytes"));
        stored & Block::low_ones(8 * self.stride) == Self::of(value, k)
    }
}

/// One partition of the receiver's values by fingerprint: open addressing at load 1/3 to
/// 2/3, the probe starting at the fingerprint's top bits.
struct PartitionTable {
    /// `fingerprint << 32 | entry`, or [`EMPTY`]; the first `len` are in use.
    slots: Vec<u64>,
    len: usize,
    shift: u32,
}

/// An empty slot (no entry has this index).
const EMPTY: u64 = u64::MAX;

/// Slots for `records` records.
fn table_len(records: usize) -> usize {
    (records + records / 2 + 1).next_power_of_two().max(16)
}

impl PartitionTable {
    /// A table for partitions of up to `most` records.
    fn new(most: usize) -> Self {
        PartitionTable {
            slots: vec![EMPTY; table_len(most)],
            len: 0,
            shift: 0,
        }
    }

    /// Holds the `len` `records` (and nothing else).
    fn fill(&mut self, len: usize, records: impl Iterator<Item = u64>) {
        self.len = table_len(len);
        self.shift = 32 - self.len.ilog2();
        let (slots, mask) = (&mut self.slots[..self.len], self.len - 1);
        slots.fill(EMPTY);
        for r in records {
            let mut i = (r >> 32 >> self.shift) as usize;
            while slots[i] != EMPTY {
                i = (i + 1) & mask;
            }
            slots[i] = r;
        }
    }

    /// The first entry with fingerprint `fp` that `confirm` accepts.
    #[inline]
    fn find(&self, fp: u32, mut confirm: impl FnMut(u32) -> bool) -> Option<u32> {
        let mask = self.len - 1;
        let mut i = (fp >> self.shift) as usize;
        loop {
            let s = self.slots[i];
            if s == EMPTY {
                return None;
            }
            if (s >> 32) as u32 == fp && confirm(s as u32) {
                return Some(s as u32);
            }
            i = (i + 1) & mask;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::{unpack_row, Block};
    use crate::net::{mem_pair, Writer};
    use std::time::Duration;

    const BYTES: usize = 12;

    fn value(i: u64) -> Block {
        Block::from_u128((i as u128 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835))
            & low(BYTES)
    }

    fn low(bytes: usize) -> Block {
        Block::low_ones(8 * bytes)
    }

    /// The sender's values as the receiver receives them.
    fn sent(values: &[Block], bits: u32, seed: Block) -> Vec<Block> {
        let (mut a, mut b) = mem_pair(Duration::from_secs(5));
        let b: &mut dyn Channel = &mut b;
        let mut sender = SendersValues::new(bits, values.len());
        values.iter().for_each(|&v| sender.push(v));
        sender
            .send(&mut a, BYTES, &mut Prg::from_seed(seed))
            .unwrap();
        let mask = row_mask(1, BYTES);
        let mut out = Vec::new();
        while out.len() < values.len() {
            let mut frame = b
                .recv_exact(FRAME_VALUES.min(values.len() - out.len()) * BYTES, "v")
                .unwrap();
            let count = frame.len() / BYTES;
            frame.resize(frame.len() + UNPACK_SLACK, 0);
            let mut v = [Block::ZERO];
            for e in 0..count {
                unpack_row(&frame, e, BYTES, &mask, &mut v);
                out.push(v[0]);
            }
        }
        out
    }

    #[test]
    fn sender_sends_each_value_once_by_partition_in_a_random_order_within() {
        let bits = 3;
        let values: Vec<Block> = (0..100_000).map(value).collect();
        let (one, two) = (
            sent(&values, bits, Block::from(1)),
            sent(&values, bits, Block::from(2)),
        );
        let parts: Vec<usize> = one.iter().map(|&v| partition(key(v), bits)).collect();
        assert!(parts.is_sorted() && parts[0] == 0 && parts[parts.len() - 1] == 7);
        let (mut a, mut b, mut c) = (one.clone(), two.clone(), values.clone());
        for v in [&mut a, &mut b, &mut c] {
            v.sort_unstable_by_key(|v| v.as_u128());
        }
        assert!(a == c && b == c, "the same values");
        assert_ne!(one, two, "another order with other coins");
        // Within a partition, not in the order they were computed.
        let first: Vec<Block> = values
            .iter()
            .copied()
            .filter(|&v| partition(key(v), bits) == 0)
            .collect();
        assert_ne!(one[..first.len()], first[..]);
    }

    /// The receiver's `entries` against the sender's values sent as `frames` (each a list
    /// of values).
    fn joined(entries: &[Block], bits: u32, frames: Vec<Vec<Block>>) -> Result<Vec<(u32, u32)>> {
        let mut receiver = ReceiversValues::new(bits, entries.len(), BYTES);
        for &v in entries {
            receiver.push(v);
        }
        let (mut a, mut b) = mem_pair(Duration::from_secs(5));
        let n = frames.iter().map(Vec::len).sum();
        let mut frame = Vec::new();
        for values in frames {
            pack_rows(&values, 1, BYTES, &mut frame);
            a.send(&frame).unwrap();
        }
        receiver.join(&mut b, n)
    }

    #[test]
    fn receiver_finds_the_values_it_has_whatever_their_fingerprints() {
        let bits = 4;
        let entries: Vec<Block> = (0..50_000).map(value).collect();
        // The sender: every third of its values, others, and one with the fingerprint and
        // partition of its entry 7 but another value (the confirmation must refuse it).
        let mut sender: Vec<Block> = (0..150_000)
            .map(|i| {
                if i % 9 == 0 {
                    value(i / 3)
                } else {
                    value(10_000_000 + i)
                }
            })
            .collect();
        // (The key folds the high half onto the low: d moved into both keeps it.)
        let d = Block::from_halves(0x1234_5678 << 32, 0x1234_5678);
        let twin = entries[7] ^ d;
        assert_eq!(key(twin), key(entries[7]));
        sender.push(twin);
        sender.sort_by_key(|&v| partition(key(v), bits));
        let frames: Vec<Vec<Block>> = sender.chunks(FRAME_VALUES).map(<[Block]>::to_vec).collect();
        let found = joined(&entries, bits, frames).unwrap();
        let expected: Vec<u32> = (0..50_000).filter(|e| e % 3 == 0).collect();
        assert_eq!(found.iter().map(|m| m.0).collect::<Vec<_>>(), expected);
        for &(e, at) in &found {
            assert_eq!(sender[at as usize], entries[e as usize]);
        }
    }

    #[test]
    fn a_fingerprint_hit_is_confirmed_by_all_of_the_value() {
        // Values with entry 0's fingerprint (the key's low 32 bits): one with its whole key
        // and other high bytes, one with other key bits and its high bytes.
        for bytes in [6, 12, 16] {
            let v = value(7) & low(bytes);
            let (k, d) = (key(v), Block::from_halves(0x1234_5678 << 32, 0x1234_5678));
            let same_key = v ^ d;
            let same_high = v ^ Block::from(0x55 << 40);
            assert_eq!(key(same_high) as u32, k as u32);
            assert_ne!(key(same_high), k);
            let mut rest = Rest::new(3, bytes);
            let (before, after) = (!v & low(bytes), v ^ Block::unit(70) & low(bytes));
            rest.push(before, key(before));
            rest.push(v, k);
            rest.push(after, key(after));
            assert!(rest.is(0, before, key(before)) && rest.is(2, after, key(after)));
            assert!(rest.is(1, v, k));
            assert!(!rest.is(1, same_high, key(same_high)), "{bytes} bytes");
            if bytes > 8 {
                assert_eq!(key(same_key), k);
                assert!(!rest.is(1, same_key, k), "{bytes} bytes");
            }
        }
    }

    #[test]
    fn one_partition_and_repeated_keys() {
        // P = 0; the receiver's entries 0 and 1 share their key (the second is found past
        // the first, which the confirmation refuses); the sender sends entry 1's value
        // three times (the first position is reported) and entry 2's once.
        let d = Block::from_halves(0xabcd << 32, 0xabcd);
        let entries = [value(1), value(1) ^ d, value(2)];
        assert_eq!(key(entries[0]), key(entries[1]));
        let sender = vec![
            value(9),
            entries[1],
            value(8),
            entries[1],
            entries[2],
            entries[1],
        ];
        let found = joined(&entries, 0, vec![sender]).unwrap();
        assert_eq!(found, [(1, 1), (2, 4)]);
    }

    #[test]
    fn values_out_of_partition_order_are_refused() {
        let bits = 4;
        let entries: Vec<Block> = (0..1000).map(value).collect();
        let mut sender: Vec<Block> = (0..1000).map(value).collect();
        sender.sort_by_key(|&v| std::cmp::Reverse(partition(key(v), bits)));
        let e = joined(&entries, bits, vec![sender]).unwrap_err();
        assert!(matches!(e, Error::Protocol { .. }), "{e}");
    }

    #[test]
    fn a_frame_shorter_than_announced_is_refused() {
        let mut receiver = ReceiversValues::new(2, 10, BYTES);
        receiver.push(value(1));
        let (mut a, mut b) = mem_pair(Duration::from_secs(5));
        a.send(&Writer::new().u64(5).0).unwrap();
        assert!(receiver.join(&mut b, 100).is_err());
    }
}
