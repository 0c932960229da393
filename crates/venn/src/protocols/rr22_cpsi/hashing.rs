//! Where each party's items go (rr22.md §5 steps 1–2; volePSI's `RsCpsi`): the receiver
//! cuckoo-hashes its items into β bins with three functions and no stash, one key a bin;
//! the sender puts each of its items into all three of its bins, one key each. The key of
//! item x placed by function j is K_j(x) = AES_{k_j}(x) ⊕ x, so that it names the
//! function too: R's key in bin i = h_j(x) equals one of S's keys there exactly when S
//! holds x (two distinct (x, j) collide with probability 2^-128).

use crate::crypto::{Aes, Block, Prg, RandomOracle};
use crate::oprf::Hashes;
use crate::tables::{cuckoo_insert, CuckooHash, HASHES};
use crate::Result;
use rayon::prelude::*;

/// The run's bins and keys: the cuckoo functions under the receiver's seed, the key
/// functions under the session.
pub(super) struct Hashing {
    cuckoo: CuckooHash,
    keys: [Aes; HASHES],
}

impl Hashing {
    /// The functions for `bins` bins under the cuckoo seed `seed`, in session `sid`.
    pub(super) fn new(sid: &[u8; 32], seed: Block, bins: u64) -> Hashing {
        let oracle = RandomOracle::new("venn/rr22-cpsi/bin keys", sid);
        Hashing {
            cuckoo: CuckooHash::new(seed, bins as usize),
            keys: [0u8, 1, 2].map(|j| Aes::new(oracle.hash_block(&[j]))),
        }
    }

    /// K_j(x) for each function j and each of `items`, function by function.
    fn keys(&self, items: &[Block]) -> Vec<Block> {
        let n = items.len();
        let mut keys = vec![Block::ZERO; HASHES * n];
        keys.par_chunks_mut(n.max(1))
            .zip(&self.keys)
            .for_each(|(keys, aes)| Hashes::hash_to(aes, items, keys));
        keys
    }

    /// The receiver's key of each bin: K_j(x) for the item x placed there by function j,
    /// a fresh random block in an empty bin. Fails if an item finds no place (probability
    /// at most 2^-40 for the table's size).
    pub(super) fn receivers_keys(&self, items: &[Block], prg: &mut Prg) -> Result<Vec<Block>> {
        let mut bins = Vec::new();
        self.cuckoo.bins_of(items, &mut bins);
        let table = cuckoo_insert(&bins, self.cuckoo.bins(), 0, prg)?;
        let keys = self.keys(items);
        let n = items.len();
        Ok((0..table.len())
            .map(|i| match table.bin(i) {
                Some((x, j)) => keys[j * n + x],
                None => prg.block(),
            })
            .collect())
    }

    /// The sender's keys, K_j(y) for each function j and item y (function by function),
    /// and the bin of each.
    pub(super) fn senders_keys(&self, items: &[Block]) -> (Vec<Block>, Vec<u32>) {
        let mut bins = Vec::new();
        self.cuckoo.bins_of(items, &mut bins);
        let of = (0..HASHES)
            .flat_map(|j| bins.iter().map(move |b| b[j]))
            .collect();
        (self.keys(items), of)
    }
}
