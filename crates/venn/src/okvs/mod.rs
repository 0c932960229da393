//! An oblivious key-value store: RR22's 3H-GCT with clustering ("Baxos"; Raghuraman–Rindal,
//! CCS 2022, §2–3). Encode({(x_i, v_i)}) is a vector P of about 1.35·n values in
//! GF(2^128) with Decode(P, x_i) = v_i; Decode(P, x) for any other x is a value that says
//! nothing of the others when P is masked (as VOLE-PSI masks it).
//!
//! A key lands in one of about n/2^14 bins ([`params`]); in its bin its row is three sparse
//! columns and a dense part (d, d^2, …, d^g) ([`rows`]), and Decode is the row against the
//! bin's slice of P: P[c0] + P[c1] + P[c2] + Σ d^j·P[m'+j−1]. Both encode and decode
//! first group the keys by bin ([`binning`]); each bin is then solved ([`solve`]) or read
//! on its own, so bins run on as many threads as the caller's rayon pool has, and each
//! bin's ~350 KB stays in the cache.

mod binning;
mod params;
mod rows;
mod solve;

pub use params::{Params, BIN_KEYS};

use crate::crypto::{gf128, Block};
use crate::memory::{self, huge_vec};
use crate::{Error, Result};
use binning::Binning;
use rayon::prelude::*;
use rows::{RowHasher, BATCH};
use solve::Solver;

/// An OKVS's dimensions and hashing (the seed r is fresh per encoding: RR22 §2 footnote 2,
/// chosen after the keys are fixed, so no one can choose keys that make it fail).
pub struct Okvs {
    params: Params,
    hasher: RowHasher,
}

impl Okvs {
    /// The OKVS with dimensions `params` under `seed`.
    pub fn new(params: Params, seed: Block) -> Okvs {
        Okvs {
            hasher: RowHasher::new(&params, seed),
            params,
        }
    }

    /// Its dimensions.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// P with Decode(P, keys[i]) = values[i]. Fails (an `Error::Params`) for a repeated
    /// key, or with probability at most 2^-λ.
    pub fn encode(&self, keys: &[Block], values: &[Block]) -> Result<Vec<Block>> {
        assert_eq!(keys.len(), values.len());
        let p = &self.params;
        let binning = Binning::new(&self.hasher, keys, p.bins as usize);
        if binning.most() as u64 > p.bin_keys {
            return Err(Error::Params(format!(
                "the OKVS could not be encoded: a bin of {} keys, over its {} (the \
                 2^-{} failure)",
                binning.most(),
                p.bin_keys,
                p.lambda
            )));
        }
        let (mut binned_keys, mut binned_values) =
            (huge_vec(keys.len(), 0), huge_vec(keys.len(), 0));
        binning.scatter(keys, &mut binned_keys);
        binning.scatter(values, &mut binned_values);
        let mut encoding = huge_vec(p.len(), 0);
        encoding
            .par_chunks_mut(p.bin_len())
            .enumerate()
            .try_for_each_init(Solver::default, |solver, (b, out)| {
                let bin = binning.range(b);
                let keys = &binned_keys[bin.clone()];
                let (cols, ds) = solver.rows(keys.len());
                for ((k, c), d) in keys
                    .chunks(BATCH)
                    .zip(cols.chunks_mut(BATCH))
                    .zip(ds.chunks_mut(BATCH))
                {
                    self.hasher.rows(k, c, d);
                }
                solver.solve(&binned_values[bin], p.sparse as usize, out)
            })?;
        Ok(encoding)
    }

    /// Decode(P, keys[i]) into `out[i]`, for an `encoding` P of these dimensions.
    pub fn decode(&self, encoding: &[Block], keys: &[Block], out: &mut [Block]) {
        assert_eq!(keys.len(), out.len());
        assert_eq!(encoding.len(), self.params.len());
        let binning = Binning::new(&self.hasher, keys, self.params.bins as usize);
        // The keys in bin order, each bin's replaced by their values where they lie.
        let mut binned = huge_vec(keys.len(), 0);
        binning.scatter(keys, &mut binned);
        binning
            .split_mut(&mut binned)
            .into_par_iter()
            .zip(encoding.par_chunks(self.params.bin_len()))
            .for_each(|(keys, bin)| self.decode_bin(bin, keys));
        binning.gather(&binned, out);
    }

    /// Replaces each of one bin's `keys` by Decode(P, key), for its slice `bin` of P.
    fn decode_bin(&self, bin: &[Block], keys: &mut [Block]) {
        let (sparse, dense) = bin.split_at(self.params.sparse as usize);
        // A batch's rows are found, and their columns asked for, a batch ahead of their
        // use: the bin's slice is in no cache when its first keys come.
        let rows = |keys: &[Block]| {
            let (mut cols, mut ds) = ([[0u32; 3]; BATCH], [0 as Block; BATCH]);
            let n = keys.len();
            self.hasher.rows(keys, &mut cols[..n], &mut ds[..n]);
            for c in cols[..n].iter().flatten() {
                memory::prefetch(&sparse[*c as usize]);
            }
            (cols, ds)
        };
        let mut batches = keys.chunks_mut(BATCH);
        let mut next = batches.next().map(|b| (rows(b), b));
        while let Some(((cols, ds), batch)) = next.take() {
            next = batches.next().map(|b| (rows(b), b));
            for (v, c) in batch.iter_mut().zip(&cols) {
                *v = c.iter().fold(0, |acc, &c| acc ^ sparse[c as usize]);
            }
            gf128::add_evaluations(&ds[..batch.len()], dense, batch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Prg;

    fn round_trip(n: usize, seed: u64) {
        let mut prg = Prg::from_seed(seed as u128);
        let keys: Vec<Block> = (0..n).map(|_| prg.block()).collect();
        let values: Vec<Block> = (0..n).map(|_| prg.block()).collect();
        let okvs = Okvs::new(Params::new(n as u64, 40).unwrap(), prg.block());
        let p = okvs.encode(&keys, &values).unwrap();
        assert_eq!(p.len(), okvs.params().len());
        let mut got = vec![0; n];
        okvs.decode(&p, &keys, &mut got);
        assert!(got == values, "n = {n}");
        // Other keys decode to something else. Not every one: a key whose columns are one
        // pivot column and two columns never set (0) decodes to that pivot's value if its
        // row's other columns are never set either, a few percent of keys at n = 64; eight
        // in a row do so with probability below 2^-30.
        let mut others = [0; 8];
        let other_keys: Vec<Block> = (0..8).map(|_| prg.block()).collect();
        okvs.decode(&p, &other_keys, &mut others);
        assert!(others.iter().any(|o| !values.contains(o)), "n = {n}");
    }

    #[test]
    fn every_key_decodes_to_its_value() {
        for n in [
            0,
            1,
            2,
            63,
            64,
            65,
            1000,
            (1 << 14) - 1,
            1 << 14,
            (1 << 14) + 1,
            1 << 16,
        ] {
            round_trip(n, n as u64 + 1);
        }
    }

    /// At a small λ the failures can be counted: RR22's dimensions for 2^10 keys at
    /// λ = 12 fail at most 2^-12 of the time (here 16 expected in 2^16 encodings; allowed:
    /// that plus 3σ).
    #[test]
    fn failures_stay_under_the_bound_at_small_lambda() {
        let (n, lambda, trials) = (1usize << 10, 12, 1u32 << 16);
        let params = Params::new(n as u64, lambda).unwrap();
        let values = vec![0; n];
        let failures: u32 = (0..trials)
            .into_par_iter()
            .map(|t| {
                let mut prg = Prg::from_seed(Block::from(t) << 64 | 0xf00d);
                let keys: Vec<Block> = (0..n).map(|_| prg.block()).collect();
                u32::from(
                    Okvs::new(params, prg.block())
                        .encode(&keys, &values)
                        .is_err(),
                )
            })
            .sum();
        let expected = f64::from(trials) * 2f64.powi(-(lambda as i32));
        assert!(
            f64::from(failures) <= expected + 3.0 * expected.sqrt(),
            "{failures} failures in {trials} encodings"
        );
    }

    #[test]
    fn a_repeated_key_is_refused() {
        let mut prg = Prg::from_seed(5);
        let mut keys: Vec<Block> = (0..500).map(|_| prg.block()).collect();
        keys[17] = keys[400];
        let values: Vec<Block> = (0..500).map(|_| prg.block()).collect();
        let okvs = Okvs::new(Params::new(500, 40).unwrap(), 9);
        let err = okvs.encode(&keys, &values).unwrap_err();
        assert!(
            matches!(err, Error::Params(ref m) if m.contains("duplicate")),
            "{err}"
        );
    }
}
