//! An oblivious key-value store: RR22's 3H-GCT with clustering ("Baxos"; Raghuraman–Rindal,
//! CCS 2022, §2–3). Encode({(x_i, v_i)}) is a vector P of about 1.35·n values in
//! GF(2^128) with Decode(P, x_i) = v_i; Decode(P, x) for any other x is a value that says
//! nothing of the others when P is masked (as VOLE-PSI masks it).
//!
//! A key lands in one of about n/2^14 bins ([`params`]); in its bin its row is three sparse
//! columns and a dense part (d, d^2, …, d^g) ([`rows`]), and Decode is the row against the
//! bin's slice of P: P[c0] + P[c1] + P[c2] + Σ d^j·P[m'+j−1]. Each bin is solved on its
//! own ([`solve`]), so bins run on as many threads as the caller's rayon pool has, and each
//! bin's ~350 KB stays in the cache.

mod params;
mod rows;
mod solve;

pub use params::{Params, BIN_KEYS};

use crate::crypto::Block;
use crate::{memory, Error, Result};
use rayon::prelude::*;
use rows::{Row, RowHasher, BATCH};

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
        let mut bins = vec![0u32; keys.len()];
        for (k, b) in keys.chunks(BATCH).zip(bins.chunks_mut(BATCH)) {
            self.hasher.bins(k, b);
        }
        // The keys' indices by bin (a counting sort).
        let mut start = vec![0usize; p.bins as usize + 1];
        for &b in &bins {
            start[b as usize + 1] += 1;
        }
        if let Some(load) = start.iter().copied().find(|&c| c as u64 > p.bin_keys) {
            return Err(Error::Params(format!(
                "the OKVS could not be encoded: a bin of {load} keys, over its {} (the \
                 2^-{} failure)",
                p.bin_keys, p.lambda
            )));
        }
        for b in 0..p.bins as usize {
            start[b + 1] += start[b];
        }
        let mut fill = start.clone();
        let mut order = vec![0u32; keys.len()];
        for (i, &b) in bins.iter().enumerate() {
            order[fill[b as usize]] = i as u32;
            fill[b as usize] += 1;
        }
        drop(bins);
        let mut encoding = vec![0; p.len()];
        encoding
            .par_chunks_mut(p.bin_len())
            .enumerate()
            .try_for_each(|(b, out)| {
                let members = &order[start[b]..start[b + 1]];
                let bin_keys: Vec<Block> = members.iter().map(|&i| keys[i as usize]).collect();
                let bin_values: Vec<Block> = members.iter().map(|&i| values[i as usize]).collect();
                let mut rows = vec![Row { cols: [0; 3], d: 0 }; members.len()];
                let mut unused = [0u32; BATCH];
                for (k, r) in bin_keys.chunks(BATCH).zip(rows.chunks_mut(BATCH)) {
                    self.hasher.place(k, &mut unused[..k.len()], r);
                }
                solve::solve(&rows, &bin_values, p.sparse as usize, out)
            })?;
        Ok(encoding)
    }

    /// Decode(P, keys[i]) into `out[i]`, for an `encoding` P of these dimensions.
    pub fn decode(&self, encoding: &[Block], keys: &[Block], out: &mut [Block]) {
        assert_eq!(keys.len(), out.len());
        assert_eq!(encoding.len(), self.params.len());
        let (bin_len, sparse) = (self.params.bin_len(), self.params.sparse as usize);
        // A batch's loads are all asked for a batch ahead of their use: at 2^20 keys P is
        // 22 MB, and each key's four lines are misses.
        let placed = |k: &[Block]| {
            let mut bins = [0u32; BATCH];
            let mut rows = [Row { cols: [0; 3], d: 0 }; BATCH];
            self.hasher
                .place(k, &mut bins[..k.len()], &mut rows[..k.len()]);
            for (&b, r) in bins.iter().zip(&rows).take(k.len()) {
                let bin = &encoding[b as usize * bin_len..][..bin_len];
                for c in r.cols {
                    memory::prefetch(&bin[c as usize]);
                }
                memory::prefetch(&bin[sparse]);
            }
            (bins, rows)
        };
        const SPAN: usize = 64 * BATCH;
        keys.par_chunks(SPAN)
            .zip(out.par_chunks_mut(SPAN))
            .for_each(|(keys, out)| {
                let mut batches = keys.chunks(BATCH).zip(out.chunks_mut(BATCH)).peekable();
                let mut next = batches.peek().map(|(k, _)| placed(k));
                while let Some((_, o)) = batches.next() {
                    let (bins, rows) = next.take().expect("placed ahead");
                    next = batches.peek().map(|(k, _)| placed(k));
                    for ((o, &b), r) in o.iter_mut().zip(&bins).zip(&rows) {
                        let bin = &encoding[b as usize * bin_len..][..bin_len];
                        *o = bin[r.cols[0] as usize]
                            ^ bin[r.cols[1] as usize]
                            ^ bin[r.cols[2] as usize]
                            ^ solve::dense_value(r.d, &bin[sparse..]);
                    }
                }
            });
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
        // Another key decodes to something else.
        let mut other = [0];
        okvs.decode(&p, &[prg.block()], &mut other);
        assert!(!values.contains(&other[0]));
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
