//! The sender's evaluations of KKRT16 Fig. 3 step 4 over its items in permuted order:
//! `H_z = F(k_{h_z(x)}, input_z(x))` for z = 1, 2, 3 and `S_j = F(k_{stash j}, x)`.
//!
//! OPRF instances are ordered stash first: instance `j < s` is stash position `j`,
//! instance `s + i` is bin `i`. The stash rows thus arrive in the first chunk of the
//! extension, and the `S_j` values can be computed while the rest of it streams in.

use super::{BatchedOprf, Hashing, Layout};
use crate::crypto::Block;
use crate::ot::OprfRows;
use crate::tables::HASHES;
use std::ops::Range;

/// Evaluates the sender's items; holds the scratch space reused across batches.
pub(super) struct Evaluator<'a, O, H> {
    l: &'a Layout,
    y: &'a [Block],
    perm: &'a [u32],
    oprf: &'a O,
    hashing: &'a H,
    inputs: Vec<Block>,
    bins: Vec<[u32; HASHES]>,
    instances: Vec<u32>,
    input_at: Vec<u32>,
    items: Vec<Block>,
}

impl<'a, O: BatchedOprf, H: Hashing> Evaluator<'a, O, H> {
    /// An evaluator of items `y[perm[i]]` (position `i` of the sender's random order).
    pub(super) fn new(
        l: &'a Layout,
        y: &'a [Block],
        perm: &'a [u32],
        oprf: &'a O,
        hashing: &'a H,
    ) -> Self {
        Evaluator {
            l,
            y,
            perm,
            oprf,
            hashing,
            inputs: Vec::new(),
            bins: Vec::new(),
            instances: Vec::new(),
            input_at: Vec::new(),
            items: Vec::new(),
        }
    }

    /// `out[i·s + j] = S_j` of the item at position `positions.start + i`.
    pub(super) fn stash_values(
        &mut self,
        ot: &OprfRows,
        positions: Range<usize>,
        out: &mut [Block],
    ) {
        let s = self.l.stash;
        assert_eq!(out.len(), positions.len() * s);
        self.inputs.clear();
        let (y, hashing) = (self.y, self.hashing);
        self.inputs.extend(
            self.perm[positions]
                .iter()
                .map(|&i| hashing.stash_input(y[i as usize])),
        );
        self.instances.clear();
        self.input_at.clear();
        for item in 0..self.inputs.len() {
            for j in 0..s {
                self.instances.push(j as u32);
                self.input_at.push(item as u32);
            }
        }
        self.oprf
            .eval(ot, &self.instances, &self.inputs, &self.input_at, out);
    }

    /// `out[i·3 + z-1] = H_z` of the item at position `positions.start + i`.
    pub(super) fn hash_values(
        &mut self,
        ot: &OprfRows,
        positions: Range<usize>,
        out: &mut [Block],
    ) {
        assert_eq!(out.len(), positions.len() * HASHES);
        self.items.clear();
        self.items
            .extend(self.perm[positions].iter().map(|&i| self.y[i as usize]));
        self.hashing.bins_of(&self.items, &mut self.bins);
        self.inputs.clear();
        self.instances.clear();
        for (&y, b) in self.items.iter().zip(&self.bins) {
            for (z, &bin) in b.iter().enumerate() {
                self.inputs.push(self.hashing.input(y, z + 1));
                self.instances.push((self.l.stash + bin as usize) as u32);
            }
        }
        self.input_at.clear();
        self.input_at.extend(0..self.inputs.len() as u32);
        self.oprf
            .eval(ot, &self.instances, &self.inputs, &self.input_at, out);
    }
}
