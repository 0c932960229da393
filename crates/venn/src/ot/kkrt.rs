//! OT extension in KK13's coding view (KKRT16 §2): the receiver's codeword for row `j` is
//! `C(r_j)` from a code `C` instead of IKNP's repetition code. With a pseudorandom code
//! this is the BaRK-OPRF of KKRT16 (Fig. 2); with the Walsh–Hadamard code on bytes it is
//! KK13's 1-out-of-256 random OT, which PSSZ15 uses.
//!
//! The sender ends with `q_j = t_j ⊕ (C(r_j) ∧ s)` and can evaluate
//! `F(j, x) = H(j, q_j ⊕ (C(x) ∧ s))` for any `x`; the receiver learns `F(j, r_j) = H(j, t_j)`.
//! Other values stay hidden as long as any two code words differ in at least κ bits.

use super::ExtensionReceiver;
use super::ExtensionSender;
use crate::crypto::{Aes, Block, RandomOracle, WideHash};
use crate::net::Channel;
use crate::util::memory::prefetch;
use crate::Result;

/// Blocks in a BaRK-OPRF code word: k ≤ 512 bits.
pub const OPRF_BLOCKS: usize = WideHash::ROW_BLOCKS;

/// The code the receiver encodes its rows' inputs with.
pub trait Code: Sync {
    /// Blocks in a code word (the extension width, rounded up to blocks).
    const BLOCKS: usize;
    /// What it encodes.
    type Input: Copy + Default + Sync;

    /// Writes `C(inputs[j])` block-major: block `i` of code word `j` is
    /// `out[i * inputs.len() + j]`.
    fn encode(&self, inputs: &[Self::Input], out: &mut [Block]);
}

/// The pseudorandom code of KKRT16 §6.3 / Lemma 3,
/// `C(x) = AES_{sk_1}(x) ‖ AES_{sk_2}(x) ‖ AES_{sk_3}(x) ‖ AES_{sk_4}(x)`, truncated to
/// `k` bits by the OT extension. Independent keys per output block make it a PRF of the
/// 128-bit input (the paper's `AES_sk(i ‖ x)` would need inputs shorter than a block).
pub struct PseudorandomCode {
    keys: [Aes; OPRF_BLOCKS],
}

impl PseudorandomCode {
    /// The code chosen by the key `sk` (KKRT16 Fig. 2 step 0).
    pub fn new(sk: Block) -> Self {
        let ro = RandomOracle::new("venn/kkrt16/code-key", &[]);
        let key = |i: u8| Aes::new(ro.hash_block(&[&sk.to_le_bytes()[..], &[i]].concat()));
        PseudorandomCode {
            keys: [key(0), key(1), key(2), key(3)],
        }
    }
}

impl Code for PseudorandomCode {
    const BLOCKS: usize = OPRF_BLOCKS;
    type Input = Block;

    fn encode(&self, inputs: &[Block], out: &mut [Block]) {
        assert_eq!(out.len(), inputs.len() * OPRF_BLOCKS);
        for (aes, out) in self
            .keys
            .iter()
            .zip(out.chunks_exact_mut(inputs.len().max(1)))
        {
            aes.encrypt_blocks_to(inputs, out);
        }
    }
}

/// The OPRF receiver after the extension, holding what it needs to compute its outputs.
pub struct OprfReceiver {
    ext: ExtensionReceiver,
    rows: usize,
    row_len: usize,
}

/// Runs the receiver's side of the extension for rows `inputs` (KKRT16 Fig. 2 steps 2–3).
/// `seeds` are the `k` column seed pairs (from random OTs in which it was the sender).
pub fn oprf_receive<C: Code>(
    chan: &mut dyn Channel,
    seeds: &[[Block; 2]],
    code: &C,
    inputs: &[C::Input],
) -> Result<OprfReceiver> {
    let ext = ExtensionReceiver::new(seeds);
    assert_eq!(ext.row_blocks(), C::BLOCKS, "code width fits the columns");
    ext.extend(chan, inputs.len(), |first, u| {
        let rows = u.len() / C::BLOCKS;
        let mut chunk_inputs = inputs[first..(first + rows).min(inputs.len())].to_vec();
        chunk_inputs.resize(rows, C::Input::default());
        let mut codewords = vec![Block::ZERO; u.len()];
        code.encode(&chunk_inputs, &mut codewords);
        for (j, u) in u.chunks_exact_mut(C::BLOCKS).enumerate() {
            for (i, u) in u.iter_mut().enumerate() {
                *u ^= codewords[i * rows + j];
            }
        }
    })?;
    Ok(OprfReceiver {
        ext,
        rows: inputs.len(),
        row_len: seeds.len() / 8,
    })
}

impl OprfReceiver {
    /// `F(j, r_j) = H(j, t_j)` for every row. The outputs depend only on the receiver's
    /// rows `t_j`, so they are computed here, after the extension, from the replayed PRG
    /// matrix: the extension's critical path stays short and this work overlaps the
    /// sender's evaluation.
    pub fn outputs(&self, hash: &WideHash) -> Vec<Block> {
        const CHUNK: usize = 4096;
        const HASHED: usize = WideHash::ROW_BLOCKS;
        let t_matrix = self.ext.replay_t();
        let w = self.ext.row_blocks();
        let mut out = vec![Block::ZERO; self.rows];
        let mut t = vec![Block::ZERO; CHUNK * w];
        // Narrower rows are spread out to the hash's row width first.
        let mut wide = vec![Block::ZERO; if w < HASHED { CHUNK * HASHED } else { 0 }];
        let mut indices = Vec::with_capacity(CHUNK);
        for (c, out) in out.chunks_mut(CHUNK).enumerate() {
            let padded = out.len().next_multiple_of(128);
            let t = &mut t[..padded * w];
            let first = c * CHUNK;
            t_matrix.rows(first, t);
            indices.clear();
            indices.extend(first as u32..(first + out.len()) as u32);
            let rows = if w < HASHED {
                for (wide, t) in wide.chunks_exact_mut(HASHED).zip(t.chunks_exact(w)) {
                    wide[..w].copy_from_slice(t);
                }
                &mut wide[..out.len() * HASHED]
            } else {
                &mut t[..out.len() * HASHED]
            };
            hash.hash_rows(&indices, rows, self.row_len, out);
        }
        out
    }
}

/// The OPRF sender's rows `q_j` (all of them, or those received so far) with its secret
/// `s`: evaluates `F(j, x) = H(j, q_j ⊕ (C(x) ∧ s))` for any row `j` it has and any `x`.
pub struct OprfRows<'a> {
    s: &'a [Block],
    q: &'a [Block],
    row_len: usize,
}

impl OprfRows<'_> {
    /// The number of rows available.
    pub fn rows(&self) -> usize {
        self.q.len() / self.s.len()
    }

    /// `out[e] = F(rows[e], x_e)` where `C(x_e)` is code word number `codes[e]` of
    /// `codewords`, laid out block-major as [`Code::encode`] writes them.
    ///
    /// One pass gathers each `q_j` (random accesses into a large table, prefetched ahead
    /// and independent of each other so the CPU overlaps them) and masks in the code word;
    /// then all are hashed.
    pub fn eval_batch(
        &self,
        hash: &WideHash,
        rows: &[u32],
        codewords: &[Block],
        codes: &[u32],
        out: &mut [Block],
    ) {
        const AHEAD: usize = 16;
        assert!(out.len() == rows.len() && codes.len() == rows.len());
        const HASHED: usize = WideHash::ROW_BLOCKS;
        let w = self.s.len();
        debug_assert_eq!(codewords.len() % w, 0, "code words as wide as the rows");
        let n_codes = codewords.len() / w;
        let mut y = Vec::with_capacity(rows.len() * HASHED);
        for (e, (&r, &c)) in rows.iter().zip(codes).enumerate() {
            if let Some(&next) = rows.get(e + AHEAD) {
                prefetch(&self.q[next as usize * w]);
            }
            let (r, c) = (r as usize * w, c as usize);
            let mut row = [Block::ZERO; HASHED];
            for (i, (y, (q, s))) in row
                .iter_mut()
                .zip(self.q[r..r + w].iter().zip(self.s))
                .enumerate()
            {
                *y = q ^ (codewords[i * n_codes + c] & s);
            }
            y.extend_from_slice(&row);
        }
        hash.hash_rows(rows, &mut y, self.row_len, out);
    }
}

/// The OPRF sender after the extension.
pub struct OprfSender {
    s: Vec<Block>,
    q: Vec<Block>,
    row_len: usize,
}

impl OprfSender {
    /// Runs the extension for `rows` rows with the chosen seeds `k_i^{s_i}` of the `k`
    /// columns and the secret choice bits `s` (KKRT16 Fig. 2 steps 1–3).
    /// `after_chunk(rows_so_far)` may evaluate on the rows received so far while the
    /// receiver computes the next ones.
    pub fn extend(
        chan: &mut dyn Channel,
        seeds: &[Block],
        s: &[bool],
        rows: usize,
        mut after_chunk: impl FnMut(&OprfRows),
    ) -> Result<Self> {
        let ext = ExtensionSender::new(seeds, s);
        assert!(
            ext.row_blocks() <= WideHash::ROW_BLOCKS,
            "rows fit the hash"
        );
        let s = ext.s().to_vec();
        let row_len = seeds.len() / 8;
        let q = ext.extend(chan, rows, |q| after_chunk(&OprfRows { s: &s, q, row_len }))?;
        Ok(OprfSender { s, q, row_len })
    }

    /// Evaluation on all rows.
    pub fn rows(&self) -> OprfRows<'_> {
        OprfRows {
            s: &self.s,
            q: &self.q,
            row_len: self.row_len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Prg;
    use crate::net::mem_pair;
    use std::time::Duration;

    #[test]
    fn sender_evaluation_matches_receiver_output_only_on_its_input() {
        let k = 448;
        let mut prg = Prg::from_seed(Block::from(9));
        let s: Vec<bool> = (0..k).map(|_| prg.u64() & 1 == 1).collect();
        let pairs: Vec<[Block; 2]> = (0..k).map(|_| [prg.block(), prg.block()]).collect();
        let chosen: Vec<Block> = pairs.iter().zip(&s).map(|(p, &b)| p[b as usize]).collect();
        let inputs: Vec<Block> = (0..5000).map(|_| prg.block()).collect();
        let code_key = prg.block();
        let hash = WideHash::new("test", &[]);
        let (mut a, mut b) = mem_pair(Duration::from_secs(10));
        let (inp, h2) = (inputs.clone(), hash.clone());
        let t = std::thread::spawn(move || {
            let r = oprf_receive(&mut b, &pairs, &PseudorandomCode::new(code_key), &inp).unwrap();
            r.outputs(&h2)
        });
        let sender = OprfSender::extend(&mut a, &chosen, &s, inputs.len(), |_| {}).unwrap();
        let out = t.join().unwrap();
        let code = PseudorandomCode::new(code_key);
        let mut cw = vec![Block::ZERO; 2 * OPRF_BLOCKS];
        let mut got = [Block::ZERO; 2];
        for j in 0..inputs.len() {
            code.encode(&[inputs[j], inputs[j] ^ Block::ONE], &mut cw);
            sender
                .rows()
                .eval_batch(&hash, &[j as u32, j as u32], &cw, &[0, 1], &mut got);
            assert_eq!(got[0], out[j], "row {j}");
            assert_ne!(got[1], out[j], "row {j} other input");
        }
    }
}
