//! The sender's evaluations of KKRT16 Fig. 3 step 4 over its items in permuted order:
//! `H_z = F(k_{h_z(x)}, x ‖ z)` for z = 1, 2, 3 and `S_j = F(k_{stash j}, x)`.
//!
//! OPRF rows are ordered stash first: row `j < s` is stash position `j`, row `s + i` is
//! bin `i`. The stash rows thus arrive in the first chunk of the extension, and the `S_j`
//! values can be computed while the rest of it streams in.

use super::{with_index, Kkrt16Params};
use crate::crypto::{Block, WideHash};
use crate::ot::{OprfRows, PseudorandomCode, OPRF_BLOCKS};
use crate::tables::{CuckooHash, HASHES};
use std::ops::Range;

/// Evaluates the sender's items; holds the scratch space reused across batches.
pub struct Evaluator<'a> {
    p: &'a Kkrt16Params,
    y: &'a [Block],
    perm: &'a [u32],
    code: PseudorandomCode,
    hash: WideHash,
    cuckoo: CuckooHash,
    inputs: Vec<Block>,
    codes: Vec<Block>,
    bins: Vec<[u32; HASHES]>,
    rows: Vec<u32>,
    code_at: Vec<u32>,
    values: Vec<Block>,
}

impl<'a> Evaluator<'a> {
    /// An evaluator of items `y[perm[i]]` (position `i` of the sender's random order).
    pub fn new(
        p: &'a Kkrt16Params,
        y: &'a [Block],
        perm: &'a [u32],
        code: PseudorandomCode,
        hash: WideHash,
        cuckoo: CuckooHash,
    ) -> Self {
        Evaluator {
            p,
            y,
            perm,
            code,
            hash,
            cuckoo,
            inputs: Vec::new(),
            codes: Vec::new(),
            bins: Vec::new(),
            rows: Vec::new(),
            code_at: Vec::new(),
            values: Vec::new(),
        }
    }

    /// Code words `C(y ‖ z)` for each item at `positions` and each `z` in `zs`; code word
    /// number `item·|zs| + (z − zs.start)`.
    fn encode(&mut self, positions: Range<usize>, zs: Range<usize>) {
        let perm = &self.perm[positions];
        let y = self.y;
        self.inputs.clear();
        self.inputs.extend(
            perm.iter()
                .flat_map(|&i| zs.clone().map(move |z| with_index(y[i as usize], z))),
        );
        self.codes.resize(self.inputs.len() * OPRF_BLOCKS, 0);
        self.code.encode(&self.inputs, &mut self.codes);
    }

    /// `out[i·s + j] = S_j` of the item at position `positions.start + i`.
    pub fn stash_values(&mut self, oprf: &OprfRows, positions: Range<usize>, out: &mut [Block]) {
        let s = self.p.stash;
        assert_eq!(out.len(), positions.len() * s);
        self.encode(positions.clone(), 0..1);
        self.rows.clear();
        self.code_at.clear();
        for item in 0..positions.len() {
            for j in 0..s {
                self.rows.push(j as u32);
                self.code_at.push(item as u32);
            }
        }
        oprf.eval_batch(&self.hash, &self.rows, &self.codes, &self.code_at, out);
    }

    /// `out[i·3 + z-1] = H_z` of the item at position `positions.start + i`.
    pub fn hash_values(&mut self, oprf: &OprfRows, positions: Range<usize>, out: &mut [Block]) {
        assert_eq!(out.len(), positions.len() * HASHES);
        self.values.clear();
        self.values.extend(
            self.perm[positions.clone()]
                .iter()
                .map(|&i| self.y[i as usize]),
        );
        self.cuckoo.bins_of(&self.values, &mut self.bins);
        self.encode(positions, 1..HASHES + 1);
        self.rows.clear();
        self.code_at.clear();
        for (item, b) in self.bins.iter().enumerate() {
            for (z, &bin) in b.iter().enumerate() {
                self.rows.push((self.p.stash + bin as usize) as u32);
                self.code_at.push((item * HASHES + z) as u32);
            }
        }
        oprf.eval_batch(&self.hash, &self.rows, &self.codes, &self.code_at, out);
    }
}
