//! The random oracle: SHA-256 (SHA-NI when the CPU has it) with domain separation.

use super::sha256_lanes::{compress_lanes, LANES};
use super::{blake3_lanes, row_mask, Block};
use sha2::{Digest, Sha256};

/// A domain-separated random oracle. Every use in Venn names its own domain, so outputs
/// of different purposes are independent.
#[derive(Clone)]
pub struct RandomOracle {
    prefix: Sha256,
}

impl RandomOracle {
    /// The oracle for `domain`; `context` (e.g. a session id) is bound in as well.
    pub fn new(domain: &str, context: &[u8]) -> Self {
        let mut prefix = Sha256::new();
        // Pad the prefix to one SHA-256 block so each call hashes only its own input.
        let mut block = [0u8; 64];
        let d = domain.as_bytes();
        assert!(
            d.len() + context.len() <= 62,
            "domain and context fit in one block"
        );
        block[0] = d.len() as u8;
        block[1..1 + d.len()].copy_from_slice(d);
        block[1 + d.len()] = context.len() as u8;
        block[2 + d.len()..2 + d.len() + context.len()].copy_from_slice(context);
        prefix.update(block);
        RandomOracle { prefix }
    }

    /// The 32-byte digest of the concatenation of `parts` (lengths are bound in).
    pub fn hash(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut h = self.prefix.clone();
        for p in parts {
            h.update((p.len() as u64).to_le_bytes());
            h.update(p);
        }
        h.finalize().into()
    }

    /// The first 128 bits of `hash(&[input])`.
    pub fn hash_block(&self, input: &[u8]) -> Block {
        let d = self.hash(&[input]);
        Block::from_le_bytes(d[..16].try_into().expect("16 bytes"))
    }
}

/// A fixed-input-length hash of up to 60 bytes plus a 32-bit index: one SHA-256
/// compression (SHA-NI) with a domain-separated IV. Inputs all have the same length within a
/// domain, so no Merkle–Damgård padding is needed. Used where KKRT16 Fig. 2 needs
/// `H : [m] × {0,1}^k → {0,1}^v` on k ≤ 480-bit rows.
#[derive(Clone)]
pub struct WideHash {
    iv: [u32; 8],
}

impl WideHash {
    /// The longest row this hash accepts, in bytes.
    pub const MAX_INPUT: usize = 60;

    /// The hash for `domain` bound to `context`.
    pub fn new(domain: &str, context: &[u8]) -> Self {
        let d = RandomOracle::new(domain, context).hash(&[b"WideHash IV"]);
        let mut iv = [0u32; 8];
        for (w, c) in iv.iter_mut().zip(d.chunks_exact(4)) {
            *w = u32::from_le_bytes(c.try_into().expect("4 bytes"));
        }
        WideHash { iv }
    }

    /// Blocks in one row.
    pub const ROW_BLOCKS: usize = 4;

    /// `out[e] = H(indices[e], row_e)` where row `e` is `rows[4e..4e+4]`, of which the
    /// first `len ≤ 60` bytes are hashed. The rows are used as the hash input in place:
    /// their bytes past `len` are overwritten (zeros, then the index). Four hashes run at a
    /// time on SHA-NI (see `sha256_lanes`).
    pub fn hash_rows(&self, indices: &[u32], rows: &mut [Block], len: usize, out: &mut [Block]) {
        assert!(len <= Self::MAX_INPUT);
        assert_eq!(rows.len(), indices.len() * Self::ROW_BLOCKS);
        assert_eq!(out.len(), indices.len());
        let mask = row_mask(Self::ROW_BLOCKS, len);
        for (row, &i) in rows.chunks_exact_mut(Self::ROW_BLOCKS).zip(indices) {
            for (x, m) in row.iter_mut().zip(&mask) {
                *x &= m;
            }
            row[Self::ROW_BLOCKS - 1] |= Block::from_halves(0, u64::from(i) << 32);
        }
        let as_bytes = |r: &[Block]| -> [u8; 64] {
            let mut b = [0u8; 64];
            for (c, x) in b.chunks_exact_mut(16).zip(r) {
                c.copy_from_slice(&x.to_le_bytes());
            }
            b
        };
        let full = indices.len() / LANES * LANES;
        for (out, rows) in out[..full]
            .chunks_exact_mut(LANES)
            .zip(rows.chunks_exact(LANES * Self::ROW_BLOCKS))
        {
            // SAFETY: row l < `LANES` of the chunk is its `ROW_BLOCKS` = 4 `u128`s from
            // l·`ROW_BLOCKS`: 64 bytes inside it (little-endian = its byte encoding), and
            // `[u8; 64]` has no alignment requirement.
            let lane =
                |l: usize| unsafe { &*rows[l * Self::ROW_BLOCKS..].as_ptr().cast::<[u8; 64]>() };
            let states = compress_lanes(&self.iv, [lane(0), lane(1), lane(2), lane(3)]);
            for (o, s) in out.iter_mut().zip(&states) {
                *o = first_block(s);
            }
        }
        for (o, row) in out[full..]
            .iter_mut()
            .zip(rows[full * Self::ROW_BLOCKS..].chunks_exact(Self::ROW_BLOCKS))
        {
            let b = as_bytes(row);
            *o = first_block(&compress_lanes(&self.iv, [&b, &b, &b, &b])[0]);
        }
    }
}

/// The random-oracle hash `H(j, row)` of 64-byte rows with a 64-bit index, OOS16's output
/// hash as RR17 §7 requires it ("the OT-extension hash function \[is\] modeled as a
/// random-oracle"): output block `j` of BLAKE3's keyed XOF on the row, the key derived
/// from the domain and context. The index must be hashed in: an OOS16 receiver picks its
/// own seeds and could make two instances' rows equal, which without `j` would make their
/// encodings equal too. Block j of the XOF is one compression with `j` as its counter
/// (`blake3_lanes`), so the index costs nothing; BLAKE3's XOF is a standard
/// random-oracle instantiation like SHA-256 (which spec D4 names, at two compressions:
/// one over `j` and one over the row), and its output blocks for distinct (row, j) are as
/// independent as the oracle's outputs on distinct inputs.
#[derive(Clone)]
pub struct RowHash {
    key: [u32; 8],
}

/// A 64-byte row, as four blocks (bit 8i + b of the row is bit b of byte i).
pub type Row512 = [Block; 4];

/// The first 256 bits of [`RowHash`]'s output block, as little-endian words.
pub type RowDigest = [u32; 8];

impl RowHash {
    /// Rows hashed at a time ([`RowHash::hash`] runs best on a multiple of it).
    pub const LANES: usize = blake3_lanes::LANES;

    /// The hash for `domain` bound to `context`.
    pub fn new(domain: &str, context: &[u8]) -> Self {
        let d = RandomOracle::new(domain, context).hash(&[b"RowHash key"]);
        RowHash {
            key: std::array::from_fn(|i| {
                u32::from_le_bytes(d[4 * i..4 * i + 4].try_into().expect("4 bytes"))
            }),
        }
    }

    /// `out[e] = H(index(e), rows[e])` appended for each row, eight at a time.
    pub fn hash(&self, rows: &[Row512], index: impl Fn(usize) -> u64, out: &mut Vec<RowDigest>) {
        for (c, rows) in rows.chunks(Self::LANES).enumerate() {
            let at = c * Self::LANES;
            let mut counters = [0; Self::LANES];
            for (l, t) in counters[..rows.len()].iter_mut().enumerate() {
                *t = index(at + l);
            }
            let digests = blake3_lanes::xof_blocks(&self.key, rows, &counters[..rows.len()]);
            out.extend_from_slice(&digests[..rows.len()]);
        }
    }
}

/// The first 128 bits of a digest (its first four words, little-endian).
pub fn first_block(state: &[u32; 8]) -> Block {
    block_of_words(&state[..4])
}

/// The block whose 32-bit words, least significant first, are `words` (four of them).
pub fn block_of_words(words: &[u32]) -> Block {
    assert_eq!(words.len(), 4, "four words make a block");
    let word = |i: usize| u64::from(words[i]);
    Block::from_halves(word(0) | word(1) << 32, word(2) | word(3) << 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Output block `j` of the keyed XOF, through the `blake3` crate.
    fn reference(h: &RowHash, j: u64, row: &Row512) -> RowDigest {
        let key: Vec<u8> = h.key.iter().flat_map(|w| w.to_le_bytes()).collect();
        let message: Vec<u8> = row.iter().flat_map(|x| x.to_le_bytes()).collect();
        let mut reader = blake3::Hasher::new_keyed(&key.try_into().expect("32 bytes"))
            .update(&message)
            .finalize_xof();
        reader.set_position(64 * j);
        let mut bytes = [0u8; 32];
        reader.fill(&mut bytes);
        std::array::from_fn(|i| u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap()))
    }

    #[test]
    fn row_hash_is_the_keyed_xof_block_at_the_index_in_every_batching() {
        let h = RowHash::new("test", b"ctx");
        let rows: Vec<Row512> = (0..19u128)
            .map(|i| [i, i * 3, !i, i << 100].map(Block::from_u128))
            .collect();
        let mut out = Vec::new();
        h.hash(&rows, |_| 42, &mut out);
        h.hash(&rows, |e| 1000 + e as u64, &mut out);
        for (i, row) in rows.iter().enumerate() {
            assert_eq!(out[i], reference(&h, 42, row), "row {i} at index 42");
            assert_eq!(out[19 + i], reference(&h, 1000 + i as u64, row), "row {i}");
        }
        assert_ne!(out[0], out[19], "the index is hashed in");
        let other = RowHash::new("test", b"other ctx");
        assert_ne!(
            reference(&other, 42, &rows[0]),
            out[0],
            "bound to the context"
        );
    }
}
