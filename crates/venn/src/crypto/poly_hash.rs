//! A polynomial universal hash over GF(2^128) (Carter–Wegman; POLYVAL's construction in
//! Venn's field [`super::gf128`]): the byte stream, zero-padded to whole blocks `b_1 … b_ℓ`
//! and followed by a block holding its length in bytes, is evaluated as
//! `P_H(M) = Σ_i b_i · H^(ℓ+2−i) + len · H` at the key H.
//!
//! For two different streams of at most ℓ blocks, `P_H(M) ⊕ P_H(M')` is a non-zero
//! polynomial in H of degree at most ℓ + 1 (equal lengths: some padded block differs;
//! different lengths: the length blocks differ), so for a uniform H unknown when M' is
//! chosen the two collide with probability at most (ℓ + 1)/2^128 — about 2^-94 at a
//! terabyte. The value itself reveals H (it is a root of a known polynomial), so where H
//! must stay secret, only a PRF of the value may leave the machine.
//!
//! Horner's rule a chunk of [`CHUNK`] blocks at a time: `acc ← Σ_j (b_j ⊕ [j = 0]·acc) ·
//! H^(CHUNK−j)`, one inner product with the key's powers and one reduction per chunk.

use super::{gf128, Block};

/// Blocks per Horner step.
const CHUNK: usize = 64;

/// The streaming state of one `P_H` evaluation.
pub struct PolyHash {
    /// `H^CHUNK, …, H^1`.
    powers: Vec<Block>,
    acc: Block,
    /// Bytes not yet in a whole chunk (fewer than `16·CHUNK`).
    pending: Vec<u8>,
    len: u64,
}

impl PolyHash {
    /// Starts an evaluation at `key`.
    pub fn new(key: Block) -> Self {
        let mut powers = vec![key; CHUNK];
        for i in (0..CHUNK - 1).rev() {
            powers[i] = powers[i + 1] * key;
        }
        PolyHash {
            powers,
            acc: Block::ZERO,
            pending: Vec::with_capacity(16 * CHUNK),
            len: 0,
        }
    }

    /// Appends `bytes` to the stream.
    pub fn update(&mut self, mut bytes: &[u8]) {
        self.len += bytes.len() as u64;
        if !self.pending.is_empty() {
            let take = bytes.len().min(16 * CHUNK - self.pending.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() < 16 * CHUNK {
                return;
            }
            let chunk = std::mem::take(&mut self.pending);
            self.chunks(&chunk);
            self.pending = chunk;
            self.pending.clear();
        }
        let whole = bytes.len() - bytes.len() % (16 * CHUNK);
        self.chunks(&bytes[..whole]);
        self.pending.extend_from_slice(&bytes[whole..]);
    }

    /// Horner steps over whole chunks, read where they lie: `acc · H^CHUNK` is added
    /// separately rather than into the chunk's first block.
    fn chunks(&mut self, bytes: &[u8]) {
        let top = self.powers[0];
        for chunk in bytes.chunks_exact(16 * CHUNK) {
            self.acc = (self.acc * top) ^ gf128::inner_product_le(chunk, &self.powers);
        }
    }

    /// `P_H` of the stream.
    pub fn finalize(&self) -> Block {
        let mut blocks: Vec<Block> = self
            .pending
            .chunks(16)
            .map(|b| {
                let mut block = [0; 16];
                block[..b.len()].copy_from_slice(b);
                Block::from_le_bytes(block)
            })
            .collect();
        blocks.push(Block::from(self.len));
        // Up to CHUNK + 1 blocks: Horner steps of up to CHUNK, each with the last powers.
        let mut acc = self.acc;
        for piece in blocks.chunks_mut(CHUNK) {
            piece[0] ^= acc;
            acc = gf128::inner_product(piece, &self.powers[CHUNK - piece.len()..]);
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Prg;

    /// `P_H` by the definition, one block at a time.
    fn horner(key: Block, bytes: &[u8]) -> Block {
        let mut acc = Block::ZERO;
        for b in bytes.chunks(16) {
            let mut block = [0; 16];
            block[..b.len()].copy_from_slice(b);
            acc = (acc ^ Block::from_le_bytes(block)) * key;
        }
        (acc ^ Block::from(bytes.len() as u64)) * key
    }

    #[test]
    fn streaming_in_any_pieces_is_horners_rule() {
        let mut prg = Prg::from_seed(Block::from(5));
        let key = prg.block();
        let bytes: Vec<u8> = (0..5000).map(|_| prg.block().to_le_bytes()[0]).collect();
        for len in [0, 1, 15, 16, 17, 1023, 1024, 1025, 2048, 5000] {
            let want = horner(key, &bytes[..len]);
            let mut whole = PolyHash::new(key);
            whole.update(&bytes[..len]);
            assert_eq!(whole.finalize(), want, "{len} bytes at once");
            let mut pieces = PolyHash::new(key);
            for piece in bytes[..len].chunks(7 + len / 3) {
                pieces.update(piece);
                pieces.update(&[]);
            }
            assert_eq!(pieces.finalize(), want, "{len} bytes in pieces");
        }
    }

    #[test]
    fn trailing_zeros_and_single_flips_change_the_value() {
        let key = Prg::from_seed(Block::from(6)).block();
        let hash = |bytes: &[u8]| {
            let mut h = PolyHash::new(key);
            h.update(bytes);
            h.finalize()
        };
        let bytes = vec![7u8; 3000];
        let base = hash(&bytes);
        assert_ne!(hash(&bytes[..2999]), base);
        assert_ne!(
            hash(&[&bytes[..], &[0]].concat()),
            base,
            "a trailing zero byte"
        );
        assert_ne!(
            hash(&[&[0u8; 16][..], &bytes].concat()),
            base,
            "a leading zero block"
        );
        for at in [0, 15, 16, 1023, 1024, 2999] {
            let mut flipped = bytes.clone();
            flipped[at] ^= 1;
            assert_ne!(hash(&flipped), base, "byte {at}");
        }
    }
}
