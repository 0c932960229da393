//! Cuckoo hashing with 3 hash functions and a stash (Pagh–Rodler; KKRT16 §5.2 as used by
//! PSSZ15), with the hash index `z(y)` kept for every placed item (KKRT16 Fig. 3 step 2).

use crate::crypto::{Aes, Block, Prg};
use crate::util::memory::huge_vec;
use crate::util::memory::prefetch;
use crate::{Error, Result};

/// The number of hash functions.
pub const HASHES: usize = 3;
/// Evictions before an item goes to the stash.
const MAX_EVICTIONS: usize = 500;
/// A slot holding no item.
const EMPTY: u32 = u32::MAX;
/// How many items ahead the candidate bins are prefetched.
const PREFETCH_AHEAD: usize = 16;

/// The maximum stash size for `n` items in 1.2n bins with failure probability ≤ 2^-40,
/// from PSSZ15 as tabulated in KKRT16 Table 2. Between the tabulated sizes the value for
/// the next *smaller* tabulated n is used: the needed stash shrinks as n grows, so this
/// errs on the safe side. Below 2^8 items the table is sized as for 2^8 items (see
/// [`crate::protocols`]' kkrt16 parameters), so s = 12 applies there too.
pub fn pssz15_stash_size(n: u64) -> usize {
    match n {
        0..=0xfff => 12,            // 2^8 ≤ n < 2^12
        0x1000..=0xffff => 6,       // 2^12
        0x1_0000..=0xf_ffff => 4,   // 2^16
        0x10_0000..=0xff_ffff => 3, // 2^20
        _ => 2,                     // 2^24 and beyond
    }
}

/// Sets smaller than this are hashed into stash-free tables sized as for it: the fit of
/// [`stashless_expansion`] is for sets of at least 2^8 items.
pub const SMALLEST_STASHLESS: u64 = 1 << 8;

/// The bins per item e for a 3-way cuckoo table with no stash to fail with probability at
/// most 2^-40 for `n` items (sized as for at least [`SMALLEST_STASHLESS`]): the
/// `cryptoTools` fit λ ≈ 240·e − 256 − log₂n (`CuckooIndex::selectParams`, three
/// functions, no stash) solved for e at λ = 40 — 1.3 at 2^16, 1.317 at 2^20.
pub fn stashless_expansion(n: u64) -> f64 {
    let n = n.max(SMALLEST_STASHLESS) as f64;
    (crate::STATISTICAL_SECURITY as f64 + 256.0 + n.log2()) / 240.0
}

/// The bins of a 3-way cuckoo table with no stash for `n` items: ⌈e·n⌉ for e from
/// [`stashless_expansion`], as for at least [`SMALLEST_STASHLESS`] items.
pub fn stashless_bins(n: u64) -> u64 {
    (stashless_expansion(n) * n.max(SMALLEST_STASHLESS) as f64).ceil() as u64
}

/// The public hash functions `h_1, h_2, h_3 : {0,1}^128 → [bins]`: one fixed-key AES call
/// under a shared seed, split into three 42-bit values, each mapped to `[bins]` by
/// multiply-shift (bias ≤ bins / 2^42).
#[derive(Clone)]
pub struct CuckooHash {
    aes: Aes,
    bins: u64,
}

impl CuckooHash {
    /// The functions chosen by `seed` for a table of `bins` bins.
    pub fn new(seed: Block, bins: usize) -> Self {
        CuckooHash {
            aes: Aes::new(seed),
            bins: bins as u64,
        }
    }

    /// The number of bins.
    pub fn bins(&self) -> usize {
        self.bins as usize
    }

    /// Writes `[h_1(x), h_2(x), h_3(x)]` for each item to `out`.
    pub fn bins_of(&self, items: &[Block], out: &mut Vec<[u32; HASHES]>) {
        const MASK: u128 = (1 << 42) - 1;
        let mut buf = [Block::ZERO; 256];
        out.clear();
        for chunk in items.chunks(buf.len()) {
            let buf = &mut buf[..chunk.len()];
            buf.copy_from_slice(chunk);
            self.aes.encrypt_blocks(buf);
            out.extend(buf.iter().map(|h| {
                let h = h.as_u128();
                let f = |i: u32| ((((h >> (42 * i)) & MASK) * self.bins as u128) >> 42) as u32;
                [f(0), f(1), f(2)]
            }));
        }
    }
}

/// A bin: the item in it (or [`EMPTY`]) and that item's `K` candidate bins, kept together
/// so an eviction finds where the evicted item may go without another memory access.
#[derive(Clone, Copy)]
struct Slot<const K: usize> {
    item: u32,
    bins: [u32; K],
}

/// Items placed into bins and a stash, each item with `K` candidate bins.
pub struct CuckooTable<const K: usize = HASHES> {
    slots: Vec<Slot<K>>,
    /// Item indices in the stash, in stash order.
    pub stash: Vec<u32>,
}

impl<const K: usize> CuckooTable<K> {
    /// The item in bin `i` and its hash index `z` (`h_z(item) = i`), if the bin is
    /// occupied. When two hash functions map the item to `i`, the first is named.
    pub fn bin(&self, i: usize) -> Option<(usize, usize)> {
        let s = &self.slots[i];
        (s.item != EMPTY).then(|| {
            let z = s
                .bins
                .iter()
                .position(|&b| b as usize == i)
                .expect("item is in one of its bins");
            (s.item as usize, z)
        })
    }

    /// Empties the bin holding `item`, one of its candidate `bins`; whether it held it.
    pub fn remove(&mut self, item: usize, bins: &[u32; K]) -> bool {
        let slot = bins
            .iter()
            .map(|&b| b as usize)
            .find(|&b| self.slots[b].item as usize == item);
        if let Some(b) = slot {
            self.slots[b].item = EMPTY;
        }
        slot.is_some()
    }

    /// The number of bins.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the table has no bins.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

/// Inserts items with bin candidates `hashes` into `bins` bins, spilling into a stash of at
/// most `max_stash` items (KKRT16 §5.2: an empty candidate bin if there is one, else evict
/// the occupant of a random candidate bin other than the one just left, and re-insert it).
pub fn cuckoo_insert<const K: usize>(
    hashes: &[[u32; K]],
    bins: usize,
    max_stash: usize,
    prg: &mut Prg,
) -> Result<CuckooTable<K>> {
    let empty = Slot {
        item: EMPTY,
        bins: [0; K],
    };
    let mut table = CuckooTable {
        slots: huge_vec(bins, empty),
        stash: Vec::new(),
    };
    let slots = &mut table.slots;
    for (item, h) in hashes.iter().enumerate() {
        if let Some(ahead) = hashes.get(item + PREFETCH_AHEAD) {
            for &b in ahead {
                prefetch(&slots[b as usize]);
            }
        }
        let mut current = Slot {
            item: item as u32,
            bins: *h,
        };
        let mut placed = false;
        // The bin the current item was just evicted from: the walk does not go back there
        // (with two functions a random choice would undo half its steps).
        let mut left: Option<u32> = None;
        for _ in 0..MAX_EVICTIONS {
            let h = current.bins;
            if let Some(&b) = h.iter().find(|&&b| slots[b as usize].item == EMPTY) {
                slots[b as usize] = current;
                placed = true;
                break;
            }
            let onward = h.iter().filter(|&&b| Some(b) != left).count();
            let bin = match onward {
                0 => h[prg.below(K as u64) as usize],
                _ => {
                    let k = prg.below(onward as u64) as usize;
                    *h.iter()
                        .filter(|&&b| Some(b) != left)
                        .nth(k)
                        .expect("k < onward")
                }
            };
            current = std::mem::replace(&mut slots[bin as usize], current);
            left = Some(bin);
        }
        if !placed {
            if table.stash.len() == max_stash {
                return Err(Error::Unlucky(format!(
                    "cuckoo hashing needed a stash larger than {max_stash} (an event of \
                     probability below 2^-40)"
                )));
            }
            table.stash.push(current.item);
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_is_placed_once_at_one_of_its_bins() {
        let mut prg = Prg::from_seed(Block::from(4));
        let n = 1 << 14;
        let items: Vec<Block> = (0..n).map(|_| prg.block()).collect();
        let bins = n * 6 / 5;
        let hasher = CuckooHash::new(prg.block(), bins);
        let mut hashes = Vec::new();
        hasher.bins_of(&items, &mut hashes);
        assert!(hashes.iter().flatten().all(|&b| (b as usize) < bins));
        let table = cuckoo_insert(&hashes, bins, pssz15_stash_size(n as u64), &mut prg).unwrap();
        let mut seen = vec![0; n];
        for i in 0..table.len() {
            if let Some((item, z)) = table.bin(i) {
                assert_eq!(
                    hashes[item][z] as usize, i,
                    "z(y) names the hash that maps y here"
                );
                seen[item] += 1;
            }
        }
        for &s in &table.stash {
            seen[s as usize] += 1;
        }
        assert!(
            seen.iter().all(|&c| c == 1),
            "each item placed exactly once"
        );
    }

    #[test]
    fn bins_cover_large_tables_uniformly() {
        // 1.2 · 2^31 bins: the largest table a receiver may need.
        let bins = (1usize << 31) / 5 * 6;
        let hasher = CuckooHash::new(Block::from(3), bins);
        let items: Vec<Block> = (0..1u64 << 16).map(Block::from).collect();
        let mut out = Vec::new();
        hasher.bins_of(&items, &mut out);
        for i in 0..HASHES {
            let quarter = |q: usize| out.iter().filter(|h| h[i] as usize * 4 / bins == q).count();
            for q in 0..4 {
                let c = quarter(q);
                assert!(
                    (15_000..17_800).contains(&c),
                    "h_{i}: quarter {q} got {c} of 65536"
                );
            }
        }
    }

    #[test]
    fn stash_overflow_is_an_error() {
        // Ten items that all hash to the same three bins cannot fit with a stash of 2.
        let hashes = vec![[0, 1, 2]; 10];
        let err = cuckoo_insert(&hashes, 12, 2, &mut Prg::from_seed(Block::from(1)));
        assert!(matches!(err, Err(Error::Unlucky(_))));
    }
}
