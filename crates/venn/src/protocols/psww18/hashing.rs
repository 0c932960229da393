//! Two-dimensional cuckoo hashing (PSWW18; spec B.2): two tables L and R of b bins, two
//! functions per table. The sender, the cuckoo side, puts each item into one bin of L *and*
//! one bin of R, one item a bin, the items that do not fit into a stash. The receiver, the
//! simple side, puts each item into *both* of its bins of *one* table, two items a bin,
//! with no stash. A common item then meets itself in exactly one bin: the receiver has it
//! in both its bins of some table, the sender in one of them.
//!
//! Values are stored short by permutation-based hashing ([`super::params`]): function j of
//! table k stores `(x_R, q, tag_j)` in bin `y mod b`, `y = x_L ⊕ F_{k,j}(x_R)`,
//! `q = ⌊y / b⌋`, with tags 01 and 10 for the two functions. An empty slot of the
//! receiver's holds 0 (tag 00) and an empty bin of the sender's 3 (tag 11), so neither
//! equals anything.

use super::params::Psww18Params;
use crate::crypto::{Aes, Block, Prg};
use crate::protocols::Stash;
use crate::tables::cuckoo_insert;
use crate::{Error, Result};

/// The receiver's value in an empty slot (tag 00).
pub(super) const RECEIVERS_EMPTY: u128 = 0;
/// The sender's value in an empty bin (tag 11).
pub(super) const SENDERS_EMPTY: u128 = 3;
/// No item.
const NONE: u32 = u32::MAX;
/// Evictions one insertion of the receiver's may cause before it fails.
const MAX_EVICTIONS: usize = 1000;

/// An item's bin and stored value under each of the four functions, `[table][j]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Placed {
    pub bins: [[u32; 2]; 2],
    pub values: [[u128; 2]; 2],
}

/// Rounds of the Feistel permutation of integer items (as FF1).
const FEISTEL_ROUNDS: u128 = 10;

/// The four functions, keyed by the session's coin-tossed seed.
///
/// Permutation-based hashing spreads items only as well as their bits are random: with
/// x_R shared by many items (counters, IDs below 2^(a+t)) both of an item's bins are
/// fixed XOR offsets of x_L, the cuckoo graph is far from random, and the sender's stash
/// overflowed at 2^20 on the benchmark's integers. So σ-bit integers first go through a
/// keyed pseudorandom permutation of {0,1}^σ (a 10-round Feistel network on σ/2-bit
/// halves with AES round functions, FF1's structure); equal items stay equal and distinct
/// ones distinct. Hashed keys are pseudorandom already.
pub(super) struct Hashing {
    aes: Aes,
    /// The permutation's key, for σ-bit integers.
    feistel: Option<(Aes, u32)>,
    bins: u64,
    /// Bits of x_L (a).
    low: u32,
}

impl Hashing {
    /// The functions of a run with parameters `p` under `seed`.
    pub(super) fn new(p: &Psww18Params, seed: Block) -> Self {
        let aes = Aes::new(seed);
        let feistel = (!p.hashed).then(|| (Aes::new(aes.encrypt(Block::ONES)), p.sigma / 2));
        Hashing {
            aes,
            feistel,
            bins: p.bins,
            low: p.a,
        }
    }

    /// The permutation of integer items, in place (σ even).
    fn permute(&self, items: &mut [u128]) {
        let Some((aes, half)) = &self.feistel else {
            return;
        };
        let mask = (1u128 << half) - 1;
        let mut f = Vec::with_capacity(items.len());
        for round in 0..FEISTEL_ROUNDS {
            f.clear();
            f.extend(
                items
                    .iter()
                    .map(|&x| Block::from_u128(x & mask | round << 120)),
            );
            aes.encrypt_blocks(&mut f);
            for (x, f) in items.iter_mut().zip(&f) {
                let (left, right, f) = (*x >> half, *x & mask, f.as_u128());
                *x = right << half | (left ^ (f & mask));
            }
        }
    }

    /// Each item's bins and values (items below 2^σ).
    pub(super) fn place_all(&self, items: &[u128]) -> Vec<Placed> {
        let mut items = items.to_vec();
        self.permute(&mut items);
        let mask = (1u128 << self.low) - 1;
        let mut blocks = Vec::with_capacity(4 * items.len());
        for &x in &items {
            // F_{k,j}(x_R): AES of x_R with (k, j) in its top bits (x_R < 2^(σ − a − t)).
            let x_r = x >> self.low;
            blocks.extend((0..4u128).map(|f| Block::from_u128(x_r | f << 124)));
        }
        self.aes.encrypt_blocks(&mut blocks);
        // q = ⌊y / b⌋ < 2, as y < 2^a < 2b.
        let q_bits = 1;
        items
            .iter()
            .zip(blocks.chunks_exact(4))
            .map(|(&x, f)| {
                let (x_l, x_r) = (x & mask, x >> self.low);
                let mut placed = Placed {
                    bins: [[0; 2]; 2],
                    values: [[0; 2]; 2],
                };
                for (i, &f) in f.iter().enumerate() {
                    let (k, j) = (i / 2, i % 2);
                    let y = (x_l ^ (f.as_u128() & mask)) as u64;
                    let (bin, q) = (y % self.bins, y / self.bins);
                    placed.bins[k][j] = bin as u32;
                    let tag = 1 << j;
                    placed.values[k][j] = tag | (q as u128) << 2 | x_r << (2 + q_bits);
                }
                placed
            })
            .collect()
    }
}

/// The sender's tables: the item in each bin of L then R and its value, and its stash.
pub(super) struct SendersTables {
    pub items: Vec<Option<u32>>,
    pub values: Vec<u128>,
    /// The stash's slots, each with an item or none (for separate stashes L's first).
    pub slots: Vec<Option<u32>>,
}

impl SendersTables {
    /// The sender's item behind the circuit's output bit `i` (bin i of L then R, then stash
    /// slot i − 2b), if any.
    pub(super) fn item_of_output(&self, i: usize) -> Option<u32> {
        match self.items.get(i) {
            Some(&bin) => bin,
            None => self.slots[i - self.items.len()],
        }
    }
}

/// The sender's placement: a cuckoo table for L and one for R, the items that do not fit in
/// one stash (an item that fails either table leaves both) or in each table's own.
pub(super) fn senders_tables(
    p: &Psww18Params,
    placed: &[Placed],
    prg: &mut Prg,
) -> Result<SendersTables> {
    let b = p.bins as usize;
    let limit = p.stash_slots();
    let tables = [0, 1].map(|k| {
        let bins: Vec<[u32; 2]> = placed.iter().map(|x| x.bins[k]).collect();
        cuckoo_insert(&bins, b, limit, prg)
    });
    let [l, r] = tables;
    let mut tables = [l?, r?];
    let overflow = |stash: &[u32]| {
        Err(Error::Unlucky(format!(
            "the sender's cuckoo hashing needed a stash of more than {} items (an event of \
             probability below 2^-40)",
            stash.len().max(p.stash_size)
        )))
    };
    let mut slots: Vec<Option<u32>> = Vec::with_capacity(limit);
    match p.stash {
        Stash::Combined => {
            let mut stash: Vec<u32> = tables.iter().flat_map(|t| t.stash.clone()).collect();
            stash.sort_unstable();
            stash.dedup();
            if stash.len() > p.stash_size {
                return overflow(&stash);
            }
            for &y in &stash {
                for (k, t) in tables.iter_mut().enumerate() {
                    t.remove(y as usize, &placed[y as usize].bins[k]);
                }
            }
            slots.extend(stash.iter().map(|&y| Some(y)));
            slots.resize(p.stash_size, None);
        }
        Stash::Separate => {
            for (k, t) in tables.iter().enumerate() {
                if t.stash.len() > p.stash_size {
                    return overflow(&t.stash);
                }
                slots.extend(t.stash.iter().map(|&y| Some(y)));
                slots.resize((k + 1) * p.stash_size, None);
            }
        }
    }
    let bins = || (tables.iter().enumerate()).flat_map(|(k, t)| (0..b).map(move |i| (k, t.bin(i))));
    let items = bins().map(|(_, bin)| bin.map(|(y, _)| y as u32)).collect();
    let values = bins()
        .map(|(k, bin)| match bin {
            Some((y, j)) => placed[y].values[k][j],
            None => SENDERS_EMPTY,
        })
        .collect();
    Ok(SendersTables {
        items,
        values,
        slots,
    })
}

/// The receiver's tables: the values of both slots of each bin of L then R (`2·2b`, a bin's
/// two slots together).
pub(super) struct ReceiversTables {
    pub values: Vec<u128>,
    /// The table each item is in.
    pub table_of: Vec<u8>,
}

/// The receiver's slots: two per bin of L then R, each holding an item or [`NONE`].
struct Slots {
    slots: Vec<u32>,
    bins: usize,
}

impl Slots {
    fn range(&self, k: usize, bin: u32) -> std::ops::Range<usize> {
        let first = 2 * (k * self.bins + bin as usize);
        first..first + 2
    }

    fn free(&self, k: usize, bin: u32) -> usize {
        let range = self.range(k, bin);
        self.slots[range].iter().filter(|&&s| s == NONE).count()
    }

    /// Whether `x` has room in both of its bins of table `k`.
    fn fits(&self, x: &Placed, k: usize) -> bool {
        match x.bins[k] {
            [b0, b1] if b0 == b1 => self.free(k, b0) == 2,
            [b0, b1] => self.free(k, b0) >= 1 && self.free(k, b1) >= 1,
        }
    }

    /// Fills a free slot of each of `x`'s bins of table `k` with `item`.
    fn put(&mut self, x: &Placed, item: u32, k: usize) {
        for bin in x.bins[k] {
            let range = self.range(k, bin);
            let slot = self.slots[range].iter_mut().find(|s| **s == NONE);
            *slot.expect("room") = item;
        }
    }

    /// Empties `item`'s slots in its bins of table `k`.
    fn take_out(&mut self, x: &Placed, item: u32, k: usize) {
        for bin in x.bins[k] {
            let range = self.range(k, bin);
            let slot = self.slots[range].iter_mut().find(|s| **s == item);
            *slot.expect("placed") = NONE;
        }
    }
}

/// The receiver's placement: each item into both of its bins of one table, at most two
/// items a bin. An item with no room in either table takes it in one (the one other than
/// the table it was just evicted from, else a random one), evicting random occupants of its
/// full bins there — both copies of each — which are placed in turn, trying their other
/// table first. A walk of at most [`MAX_EVICTIONS`] evictions an item, failing closed.
pub(super) fn receivers_tables(
    p: &Psww18Params,
    placed: &[Placed],
    prg: &mut Prg,
) -> Result<ReceiversTables> {
    let b = p.bins as usize;
    let mut slots = Slots {
        slots: vec![NONE; 4 * b],
        bins: b,
    };
    for first in 0..placed.len() as u32 {
        // Items to place, each with the table it was evicted from (2: none).
        let mut pending = vec![(first, 2usize)];
        let mut evictions = 0;
        while let Some((item, from)) = pending.pop() {
            let x = &placed[item as usize];
            let preferred = match from {
                2 => prg.below(2) as usize,
                k => 1 - k,
            };
            if let Some(k) = [preferred, 1 - preferred]
                .into_iter()
                .find(|&k| slots.fits(x, k))
            {
                slots.put(x, item, k);
                continue;
            }
            let k = preferred;
            while !slots.fits(x, k) {
                if evictions == MAX_EVICTIONS {
                    return Err(Error::Unlucky(
                        "the receiver's two-dimensional cuckoo hashing found no place for an \
                         item (an event of probability below 2^-40)"
                            .into(),
                    ));
                }
                // A random occupant of a random bin without room.
                let [b0, b1] = x.bins[k];
                let bin = match (b0 == b1, slots.free(k, b0), slots.free(k, b1)) {
                    (true, ..) | (false, 0, 1..) => b0,
                    (false, 1.., 0) => b1,
                    _ => x.bins[k][prg.below(2) as usize],
                };
                let range = slots.range(k, bin);
                let victim = slots.slots[range.start + prg.below(2) as usize];
                if victim == NONE {
                    continue;
                }
                slots.take_out(&placed[victim as usize], victim, k);
                pending.push((victim, k));
                evictions += 1;
            }
            slots.put(x, item, k);
        }
    }
    let mut table_of = vec![0; placed.len()];
    for (i, &item) in slots.slots.iter().enumerate() {
        if item != NONE {
            table_of[item as usize] = (i / (2 * b)) as u8;
        }
    }
    let values = slots
        .slots
        .chunks_exact(2)
        .enumerate()
        .flat_map(|(i, pair)| {
            let (k, bin) = (i / b, (i % b) as u32);
            [0, 1].map(|s| match pair[s] {
                NONE => RECEIVERS_EMPTY,
                item => {
                    let x = &placed[item as usize];
                    // A bin both functions name holds the item twice: function s's copy
                    // in slot s.
                    let j = if x.bins[k] == [bin, bin] {
                        s
                    } else {
                        usize::from(x.bins[k][0] != bin)
                    };
                    x.values[k][j]
                }
            })
        })
        .collect();
    Ok(ReceiversTables { values, table_of })
}

#[cfg(test)]
mod tests {
    use super::super::params::Psww18Config;
    use super::*;
    use crate::circuit_psi::CircuitParams;
    use crate::protocols::Sizes;

    fn seed_of(n: usize) -> Block {
        Block::from(7 * n as u64 + 1)
    }

    /// The parameters, both parties' tables, and the sender's and the receiver's items.
    type Run = (
        Psww18Params,
        SendersTables,
        ReceiversTables,
        Vec<u128>,
        Vec<u128>,
    );

    /// The sender's and the receiver's tables for sets sharing `common` items, and the
    /// items.
    fn tables(n: usize, common: usize, stash: Stash, seed: Block) -> Result<Run> {
        let sizes = Sizes {
            sender: n as u64,
            receiver: n as u64,
        };
        let config = Psww18Config {
            sigma: Some(32),
            stash,
        };
        let p = Psww18Params::new(sizes, config, None)?;
        let mut prg = Prg::from_seed(seed);
        let mut distinct: Vec<u128> = (0..3 * n).map(|_| prg.u64() as u32 as u128).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let (shared, rest) = distinct.split_at(common);
        let sender: Vec<u128> = shared.iter().chain(&rest[..n - common]).copied().collect();
        let receiver: Vec<u128> = shared
            .iter()
            .chain(&rest[n - common..2 * (n - common)])
            .copied()
            .collect();
        let h = Hashing::new(&p, seed_of(n));
        let s_tables = senders_tables(&p, &h.place_all(&sender), &mut prg)?;
        let r_tables = receivers_tables(&p, &h.place_all(&receiver), &mut prg)?;
        Ok((p, s_tables, r_tables, sender, receiver))
    }

    #[test]
    fn common_items_meet_in_exactly_one_bin_or_the_stash() {
        for (n, stash) in [
            (5000, Stash::Combined),
            (3000, Stash::Separate),
            (40_000, Stash::Combined),
        ] {
            let common = n / 3;
            let (p, s_tables, r_tables, sender, receiver) =
                tables(n, common, stash, Block::from(n as u64)).unwrap();
            assert_eq!(s_tables.values.len(), 2 * p.bins as usize);
            assert_eq!(r_tables.values.len(), 4 * p.bins as usize);
            assert_eq!(s_tables.slots.len(), p.stash_slots());
            // Every item of the sender's is in one bin of each table, or stashed; its value
            // says which, and the bins' values are distinct.
            let h = Hashing::new(&p, seed_of(n));
            let placed = h.place_all(&sender);
            let stash: Vec<u32> = s_tables.slots.iter().flatten().copied().collect();
            let at = |k: usize, x: &Placed| {
                (0..2).find(|&j| {
                    s_tables.values[k * p.bins as usize + x.bins[k][j] as usize] == x.values[k][j]
                })
            };
            for (y, x) in placed.iter().enumerate() {
                let found = [at(0, x), at(1, x)];
                match p.stash {
                    Stash::Combined if stash.contains(&(y as u32)) => {
                        assert_eq!(found, [None, None])
                    }
                    Stash::Combined => assert!(found.iter().all(Option::is_some)),
                    Stash::Separate => {
                        let stashes = s_tables.slots.chunks_exact(p.stash_size);
                        for (found, stash) in found.iter().zip(stashes) {
                            assert_eq!(found.is_none(), stash.contains(&Some(y as u32)));
                        }
                    }
                }
            }
            // Matches in the bins: exactly the common items not stashed (from a combined
            // stash), each once.
            let mut matched = Vec::new();
            for (bin, &v) in s_tables.values.iter().enumerate() {
                let hits = r_tables.values[2 * bin..2 * bin + 2]
                    .iter()
                    .filter(|&&a| a == v)
                    .count();
                assert!(hits <= 1);
                if hits == 1 {
                    let k = bin / p.bins as usize;
                    let y = placed
                        .iter()
                        .position(|x| {
                            (0..2).any(|j| {
                                x.values[k][j] == v
                                    && x.bins[k][j] as usize == bin % p.bins as usize
                            })
                        })
                        .unwrap();
                    matched.push(sender[y]);
                }
            }
            let receiver_set: std::collections::HashSet<u128> = receiver.iter().copied().collect();
            // Found through the stash instead: a combined stash's items, and a separate
            // stash's where the receiver put them in that stash's table.
            let receivers_table = |x: u128| {
                receiver
                    .iter()
                    .position(|&a| a == x)
                    .map(|i| r_tables.table_of[i] as usize)
            };
            let stashed: Vec<u128> = (s_tables.slots.iter().enumerate())
                .filter_map(|(slot, y)| y.map(|y| (slot / p.stash_size, sender[y as usize])))
                .filter(|&(k, x)| p.stash == Stash::Combined || receivers_table(x) == Some(k))
                .map(|(_, x)| x)
                .collect();
            matched.sort_unstable();
            let mut expected: Vec<u128> = sender
                .iter()
                .filter(|x| receiver_set.contains(x) && !stashed.contains(x))
                .copied()
                .collect();
            expected.sort_unstable();
            assert_eq!(matched, expected);
            // The receiver's slots hold each of its items twice, in the table it names.
            for (k, half) in r_tables
                .values
                .chunks_exact(2 * p.bins as usize)
                .enumerate()
            {
                let in_k = r_tables
                    .table_of
                    .iter()
                    .filter(|&&t| t as usize == k)
                    .count();
                assert_eq!(
                    half.iter().filter(|&&v| v != RECEIVERS_EMPTY).count(),
                    2 * in_k
                );
            }
            assert_eq!(
                r_tables
                    .values
                    .iter()
                    .filter(|&&v| v != RECEIVERS_EMPTY)
                    .count(),
                2 * n
            );
        }
    }

    /// Items that all want the same two bins of both tables: two fit in each table, the
    /// rest go to the stash, and every output bit names the item it stands for.
    #[test]
    fn each_output_bit_names_its_item_stash_slots_too() {
        let sizes = Sizes {
            sender: 6,
            receiver: 6,
        };
        let p = Psww18Params::new(sizes, Psww18Config::default(), None).unwrap();
        let placed: Vec<Placed> = (0..6u128)
            .map(|y| Placed {
                bins: [[0, 1], [0, 1]],
                values: [[y << 2 | 1, y << 2 | 2], [y << 2 | 1, y << 2 | 2]],
            })
            .collect();
        let t = senders_tables(&p, &placed, &mut Prg::from_seed(Block::from(3))).unwrap();
        let b = p.bins as usize;
        let outputs: Vec<Option<u32>> = (0..p.outputs() as usize)
            .map(|i| t.item_of_output(i))
            .collect();
        let stashed: Vec<u32> = t.slots.iter().flatten().copied().collect();
        assert!(stashed.len() >= 2, "at most two of six fit a table");
        for y in 0..6u32 {
            let at: Vec<usize> = (0..outputs.len())
                .filter(|&i| outputs[i] == Some(y))
                .collect();
            if stashed.contains(&y) {
                assert!(
                    at.len() == 1 && at[0] >= 2 * b,
                    "item {y} once, in the stash"
                );
            } else {
                assert!(at.len() == 2 && at[0] < b && (b..2 * b).contains(&at[1]));
                for &i in &at {
                    let value = (y as u128) << 2;
                    assert!([value | 1, value | 2].contains(&t.values[i]), "bin {i}");
                }
            }
        }
        assert!(outputs.iter().flatten().count() == 2 * (6 - stashed.len()) + stashed.len());
    }

    #[test]
    fn a_crowded_table_fails_cleanly() {
        // 60 items whose four bins are among two: no placement exists.
        let sizes = Sizes {
            sender: 60,
            receiver: 60,
        };
        let p = Psww18Params::new(sizes, Psww18Config::default(), None).unwrap();
        let x = Placed {
            bins: [[0, 1], [0, 1]],
            values: [[1, 2], [1, 2]],
        };
        let mut prg = Prg::from_seed(Block::from(1));
        let receiver = receivers_tables(&p, &vec![x; 60], &mut prg);
        assert!(matches!(receiver, Err(Error::Unlucky(_))));
        let sender = senders_tables(&p, &vec![x; 60], &mut prg);
        assert!(matches!(sender, Err(Error::Unlucky(_))));
    }
}
