//! An oblivious key-value store: RR22's 3H-GCT with clustering ("Baxos"; Raghuraman–Rindal,
//! CCS 2022, §2–3). Encode({(x_i, v_i)}) is a vector P of about 1.35·n values with
//! Decode(P, x_i) = v_i; Decode(P, x) for any other x is a value that says nothing of the
//! others when P is masked (as VOLE-PSI masks it) or randomized ([`Okvs::encode_random`]).
//!
//! A key lands in one of about n/2^14 bins (`params`); in its bin its row is three sparse
//! columns and a dense part (`rows`, `dense`), and Decode is the row against the bin's
//! slice of P: P\[c0\] + P\[c1\] + P\[c2\] + the dense part against the dense columns — Σ
//! d^j·P[m'+j−1] for values in GF(2^128) ([`Okvs::new`]), or the XOR of the dense columns
//! the row's g + λ' random bits pick, for values of any width ([`Okvs::binary`]). Both encode and decode
//! first group the keys by bin ([`Buckets`]); each bin is then solved (`solve`) or read
//! on its own, so bins run on as many threads as the caller's rayon pool has, and each
//! bin's ~350 KB stays in the cache.

mod dense;
mod params;
mod rows;
mod solve;

pub use dense::{BitRow, FieldRow, Row, Value};
pub use params::{Params, BIN_KEYS};

use crate::crypto::{Block, Prg};
use crate::tables::Buckets;
use crate::util::memory::{self, huge_zeroed};
use crate::{Error, Result};
use rayon::prelude::*;
use rows::{RowHasher, BATCH};
use solve::Solver;
use std::marker::PhantomData;
use std::ops::Range;

/// An OKVS's dimensions and hashing (the seed r is fresh per encoding: RR22 §2 footnote 2,
/// chosen after the keys are fixed, so no one can choose keys that make it fail), with
/// rows of kind `R`.
pub struct Okvs<R: Row = FieldRow> {
    params: Params,
    hasher: RowHasher,
    rows: PhantomData<R>,
}

impl Okvs {
    /// The OKVS of values in GF(2^128) with dimensions `params` ([`Params::new`]) under
    /// `seed`.
    pub fn new(params: Params, seed: Block) -> Okvs {
        assert!(!params.binary, "binary dimensions for field rows");
        Okvs::with_rows(params, seed)
    }
}

impl<V: Value> Okvs<BitRow<V>> {
    /// The OKVS of values `V` (bits added by XOR) with binary dense columns, with
    /// dimensions `params` ([`Params::binary`]) under `seed`.
    pub fn binary(params: Params, seed: Block) -> Okvs<BitRow<V>> {
        assert!(params.binary && params.dense as usize <= params::MAX_BIT_COLUMNS);
        Okvs::with_rows(params, seed)
    }
}

impl<R: Row> Okvs<R> {
    fn with_rows(params: Params, seed: Block) -> Okvs<R> {
        Okvs {
            hasher: RowHasher::new(&params, seed),
            params,
            rows: PhantomData,
        }
    }

    /// Its dimensions.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The sparse columns of each key's row in its bin (the tests of what a cheating
    /// encoder can do with them).
    #[cfg(test)]
    pub(crate) fn sparse_columns(&self, keys: &[Block]) -> Vec<[u32; 3]> {
        let mut cols = vec![[0; 3]; keys.len()];
        let mut ds = [Block::ZERO; BATCH];
        for (c, k) in cols.chunks_mut(BATCH).zip(keys.chunks(BATCH)) {
            self.hasher.rows(k, c, &mut ds[..k.len()]);
        }
        cols
    }

    /// `keys` grouped by bin, for encoding or decoding at them.
    pub fn bin(&self, keys: &[Block]) -> BinnedKeys<'_, R> {
        let binning = Buckets::new(keys.len(), self.params.bins as usize, |first, bins| {
            for (b, k) in bins.chunks_mut(BATCH).zip(keys[first..].chunks(BATCH)) {
                self.hasher.bins(k, b);
            }
        });
        let mut binned = huge_zeroed(keys.len());
        binning.scatter(keys, &mut binned);
        BinnedKeys {
            okvs: self,
            binning,
            keys: binned,
        }
    }

    /// P with Decode(P, keys\[i\]) = values\[i\]. Fails (an `Error::Params`) for a repeated
    /// key, or with probability at most 2^-λ.
    pub fn encode(&self, keys: &[Block], values: &[R::Value]) -> Result<Vec<R::Value>> {
        self.encode_with(keys, values, None)
    }

    /// [`Okvs::encode`], randomized (RR22 Fig. 1 step 5; the "doubly oblivious" OKVS of
    /// GPRTY21): every column the system leaves free is drawn from a PRG under `fill`,
    /// so that P is uniform among the encodings of these pairs and says nothing of the
    /// keys when the values are random. An OPPRF's hint must be encoded so: left 0, the
    /// free columns would show which columns the keys' rows fall in.
    pub fn encode_random(
        &self,
        keys: &[Block],
        values: &[R::Value],
        fill: Block,
    ) -> Result<Vec<R::Value>> {
        self.encode_with(keys, values, Some(fill))
    }

    fn encode_with(
        &self,
        keys: &[Block],
        values: &[R::Value],
        fill: Option<Block>,
    ) -> Result<Vec<R::Value>> {
        assert_eq!(keys.len(), values.len());
        let mut encoding = huge_zeroed(self.params.len());
        let bin_len = self.params.bin_len();
        let binned = self.bin(keys);
        let mut binned_values = huge_zeroed(values.len());
        binned.binning.scatter(values, &mut binned_values);
        let values = |keys: Range<usize>, out: &mut [R::Value]| {
            out.copy_from_slice(&binned_values[keys]);
        };
        binned.check_bins()?;
        encoding
            .par_chunks_mut(bin_len)
            .enumerate()
            .try_for_each_init(
                || (Solver::default(), Vec::new()),
                |(solver, bin_values), (b, out)| {
                    // Each bin's fill from its own part of the stream.
                    let mut prg = fill.map(|f| Prg::from_seed_at(f, (b as u128) << 64));
                    binned.solve_bin(b, &values, (solver, bin_values), out, prg.as_mut())
                },
            )?;
        Ok(encoding)
    }

    /// Decode(P, keys\[i\]) into `out[i]`, for an `encoding` P of these dimensions.
    pub fn decode(&self, encoding: &[R::Value], keys: &[Block], out: &mut [R::Value]) {
        self.bin(keys).decode(encoding, out);
    }
}

/// Keys grouped by bin ([`Okvs::bin`]).
pub struct BinnedKeys<'a, R: Row = FieldRow> {
    okvs: &'a Okvs<R>,
    binning: Buckets,
    /// The keys in bin order.
    keys: Vec<Block>,
}

impl<R: Row> BinnedKeys<'_, R> {
    /// The keys in bin order.
    pub fn keys(&self) -> &[Block] {
        &self.keys
    }

    /// Values in the order of [`BinnedKeys::keys`] put back in the order the keys were
    /// given in.
    pub fn unbin<T: Copy + bytemuck::Zeroable + Send + Sync>(&self, binned: &[T]) -> Vec<T> {
        let mut out = huge_zeroed(binned.len());
        self.binning.gather(binned, &mut out);
        out
    }

    /// P with Decode(P, key) = v for each key and its value v, the values of the keys at
    /// `range` of [`BinnedKeys::keys`] put into `out` by `values(range, out)`; handed out
    /// as it is solved, and `other` (a vector of this OKVS's length, its values
    /// `value(&other[j])`) decoded at the same keys on the way, from the rows the encoding
    /// found. Each bin's range of P's columns and its values, once solved, go through
    /// `make(columns, p)` and then, in bin order, to `each(columns, p)`. Returns
    /// Decode(other, key) for each key, in the order the keys were given in.
    ///
    /// Without barriers: every thread of the rayon pool claims the next bin, solves it
    /// into a ring of a few slots a thread, makes it and reads `other` at its keys; the
    /// calling thread also hands each finished bin to `each` as soon as the bins before it
    /// are handed on. A thread that is slow (or descheduled) holds up only its own bin,
    /// and the others solve on while the ring has room.
    pub fn encode_streaming<T: Sync>(
        &self,
        values: impl Fn(Range<usize>, &mut [R::Value]) + Sync,
        other: &[T],
        value: impl Fn(&T) -> R::Value + Sync,
        make: impl Fn(Range<usize>, &mut [R::Value]) + Sync,
        mut each: impl FnMut(Range<usize>, &[R::Value]) -> Result<()> + Send,
    ) -> Result<Vec<R::Value>> {
        use std::sync::{Condvar, Mutex};
        let params = &self.okvs.params;
        assert_eq!(other.len(), params.len());
        self.check_bins()?;
        let (bins, bin_len, sparse) = (
            params.bins as usize,
            params.bin_len(),
            params.sparse as usize,
        );
        let threads = rayon::current_num_threads();
        let ring = 4 * threads;
        let mut decoded = huge_zeroed(self.keys.len());
        let outs: Vec<Mutex<Option<&mut [R::Value]>>> = self
            .binning
            .split_mut(&mut decoded)
            .into_iter()
            .map(|o| Mutex::new(Some(o)))
            .collect();
        let slots: Vec<Mutex<Vec<R::Value>>> = (0..ring)
            .map(|_| Mutex::new(vec![R::Value::default(); bin_len]))
            .collect();
        struct State {
            next: usize,
            sent: usize,
            ready: Vec<Option<usize>>,
            failed: Option<Error>,
            /// A thread panicked: the others stop instead of waiting for its bin.
            panicked: bool,
        }
        let state = Mutex::new(State {
            next: 0,
            sent: 0,
            ready: vec![None; ring],
            failed: None,
            panicked: false,
        });
        let changed = Condvar::new();
        // Wakes the other threads if this one unwinds (the panic then leaves the scope).
        struct OnPanic<'s>(&'s Mutex<State>, &'s Condvar);
        impl Drop for OnPanic<'_> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    self.0.lock().unwrap_or_else(|e| e.into_inner()).panicked = true;
                    self.1.notify_all();
                }
            }
        }
        // Solves bin b into its ring slot and reads `other` at its keys.
        let work =
            |b: usize, solver: &mut Solver<R>, bin_values: &mut Vec<R::Value>| -> Result<()> {
                let mut p = slots[b % ring].lock().expect("slot");
                self.solve_bin(b, &values, (solver, bin_values), &mut p, None)?;
                make(b * bin_len..(b + 1) * bin_len, &mut p);
                drop(p);
                let out = outs[b].lock().expect("out").take().expect("once");
                let part = &other[b * bin_len..(b + 1) * bin_len];
                let (cols, ds) = solver.filled();
                let dense: Vec<R::Value> = part[sparse..].iter().map(&value).collect();
                read_rows(&part[..sparse], &value, &dense, cols, ds, out);
                Ok(())
            };
        // One loop for every thread: claim the next bin while the ring has room; the
        // calling thread also sends, in order, every bin that is ready.
        type Hand<'h, V> = &'h mut dyn FnMut(usize, &[V]) -> Result<()>;
        let run = |mut send: Option<Hand<R::Value>>| {
            let _wake = OnPanic(&state, &changed);
            let (mut solver, mut bin_values) = (Solver::default(), Vec::new());
            let mut st = state.lock().expect("state");
            loop {
                if st.failed.is_some() || st.panicked {
                    return;
                }
                if let Some(send) = send.as_mut() {
                    if st.sent == bins {
                        return;
                    }
                    if st.ready[st.sent % ring] == Some(st.sent) {
                        let b = st.sent;
                        drop(st);
                        let p = slots[b % ring].lock().expect("slot");
                        let r = send(b, &p);
                        drop(p);
                        st = state.lock().expect("state");
                        st.ready[b % ring] = None;
                        st.sent += 1;
                        if let Err(e) = r {
                            st.failed = Some(e);
                        }
                        changed.notify_all();
                        continue;
                    }
                }
                if st.next < bins && st.next < st.sent + ring {
                    let b = st.next;
                    st.next += 1;
                    drop(st);
                    let r = work(b, &mut solver, &mut bin_values);
                    st = state.lock().expect("state");
                    match r {
                        Ok(()) => st.ready[b % ring] = Some(b),
                        Err(e) => st.failed = Some(e),
                    }
                    changed.notify_all();
                    continue;
                }
                if send.is_none() && st.next >= bins {
                    return;
                }
                st = changed.wait(st).expect("state");
            }
        };
        let mut send = |b: usize, p: &[R::Value]| each(b * bin_len..(b + 1) * bin_len, p);
        rayon::scope(|s| {
            for _ in 1..threads {
                s.spawn(|_| run(None));
            }
            run(Some(&mut send));
        });
        if let Some(e) = state.into_inner().expect("state").failed {
            return Err(e);
        }
        drop(outs);
        let mut out = huge_zeroed(self.keys.len());
        self.binning.gather(&decoded, &mut out);
        Ok(out)
    }

    /// Solves bin `b`'s system into `out` (its slice of P, zeroed first; its free columns
    /// drawn from `fill` if given), its keys' values put into `bin_values` by `values`,
    /// its rows into `solver`.
    fn solve_bin(
        &self,
        b: usize,
        values: &impl Fn(Range<usize>, &mut [R::Value]),
        (solver, bin_values): (&mut Solver<R>, &mut Vec<R::Value>),
        out: &mut [R::Value],
        fill: Option<&mut Prg>,
    ) -> Result<()> {
        let bin = self.binning.range(b);
        bin_values.resize(bin.len(), R::Value::default());
        values(bin.clone(), bin_values);
        let keys = &self.keys[bin];
        let (cols, ds) = solver.rows(keys.len());
        for ((k, c), d) in keys
            .chunks(BATCH)
            .zip(cols.chunks_mut(BATCH))
            .zip(ds.chunks_mut(BATCH))
        {
            R::hash(&self.okvs.hasher, k, c, d, self.okvs.params.dense as usize);
        }
        out.fill(R::Value::default());
        solver.solve(bin_values, self.okvs.params.sparse as usize, out, fill)
    }

    /// Fails if a bin has more keys than its system can hold (the 2^-λ failure).
    fn check_bins(&self) -> Result<()> {
        let p = &self.okvs.params;
        if self.binning.most() as u64 > p.bin_keys {
            return Err(Error::Params(format!(
                "the OKVS could not be encoded: a bin of {} keys, over its {} (the \
                 2^-{} failure)",
                self.binning.most(),
                p.bin_keys,
                p.lambda
            )));
        }
        Ok(())
    }

    /// Decode(P, keys\[i\]) into `out[i]`, for an `encoding` P of these dimensions.
    pub fn decode(&self, encoding: &[R::Value], out: &mut [R::Value]) {
        let bin_len = self.okvs.params.bin_len();
        assert_eq!(encoding.len(), self.okvs.params.len());
        let mut binned = huge_zeroed(self.keys.len());
        self.binning
            .split_mut(&mut binned)
            .into_par_iter()
            .zip(encoding.par_chunks(bin_len))
            .enumerate()
            .for_each(|(b, (out, bin))| self.decode_bin(b, bin, out));
        self.binning.gather(&binned, out);
    }

    /// Decode(P, keys\[i\]) into `out[i]` for a P that arrives bin by bin: `next(len, buf)`
    /// puts `len` values into `buf`, which `make(b, buf)` turns into bin b of P (bins are
    /// made and read on the rayon pool, as many at a time as it has threads, while the
    /// next ones are received).
    pub fn decode_streaming(
        &self,
        mut next: impl FnMut(usize, &mut Vec<R::Value>) -> Result<()> + Send,
        make: impl Fn(usize, &mut [R::Value]) + Sync,
        out: &mut [R::Value],
    ) -> Result<()> {
        let p = &self.okvs.params;
        let (bins, bin_len) = (p.bins as usize, p.bin_len());
        let group = rayon::current_num_threads().clamp(1, bins.max(1));
        let groups: Vec<Range<usize>> = (0..bins)
            .step_by(group)
            .map(|first| first..(first + group).min(bins))
            .collect();
        let mut binned = huge_zeroed(self.keys.len());
        let mut binned_bins = self.binning.split_mut(&mut binned);
        let mut receive = |into: &mut [Vec<R::Value>], bins: Option<&Range<usize>>| {
            into.iter_mut()
                .take(bins.map_or(0, |b| b.len()))
                .try_for_each(|buf| next(bin_len, buf))
        };
        let (mut received, mut ahead) = (vec![Vec::new(); group], vec![Vec::new(); group]);
        receive(&mut received, groups.first())?;
        for (k, bins) in groups.iter().enumerate() {
            let (got, ()) = rayon::join(
                || receive(&mut ahead, groups.get(k + 1)),
                || {
                    binned_bins[bins.clone()]
                        .par_iter_mut()
                        .zip(received.par_iter_mut())
                        .zip(bins.clone())
                        .for_each(|((out, bin), b)| {
                            make(b, bin);
                            self.decode_bin(b, bin, out);
                        })
                },
            );
            got?;
            std::mem::swap(&mut received, &mut ahead);
        }
        self.binning.gather(&binned, out);
        Ok(())
    }

    /// Decode(P, key) into `out` for each of bin `b`'s keys, for its slice `bin` of P.
    fn decode_bin(&self, b: usize, bin: &[R::Value], out: &mut [R::Value]) {
        let (sparse, dense) = bin.split_at(self.okvs.params.sparse as usize);
        let keys = &self.keys[self.binning.range(b)];
        // A batch's rows are found, and their columns asked for, a batch ahead of their
        // use: the bin's slice is in no cache when its first keys come.
        let rows = |keys: &[Block]| {
            let (mut cols, mut ds) = ([[0u32; 3]; BATCH], [R::default(); BATCH]);
            let n = keys.len();
            let dense = self.okvs.params.dense as usize;
            R::hash(&self.okvs.hasher, keys, &mut cols[..n], &mut ds[..n], dense);
            prefetch_columns(sparse, &cols[..n]);
            (cols, ds)
        };
        let mut batches = keys.chunks(BATCH).zip(out.chunks_mut(BATCH));
        let mut next = batches.next().map(|(k, o)| (rows(k), o));
        while let Some(((cols, ds), out)) = next.take() {
            next = batches.next().map(|(k, o)| (rows(k), o));
            let n = out.len();
            read_rows(sparse, &|&x| x, dense, &cols[..n], &ds[..n], out);
        }
    }
}

/// The error of a system with no solution: a bin's rows dependent ([`solve`]'s gap, or two
/// rows alike in [`dense`]).
fn unsolvable(why: String) -> Error {
    Error::Params(format!(
        "the OKVS could not be encoded ({why}): a duplicate key, or the 2^-40 failure"
    ))
}

/// Starts loading the sparse columns of the rows `cols`.
fn prefetch_columns<T>(sparse: &[T], cols: &[[u32; 3]]) {
    for c in cols.iter().flatten() {
        memory::prefetch(&sparse[*c as usize]);
    }
}

/// Each row's value against a bin of P — its sparse columns `sparse` (each's value
/// `value(&sparse[c])`) and its dense ones — into `out`: P[c0] + P[c1] + P[c2] + the
/// dense part. The columns of the rows a batch ahead are prefetched.
fn read_rows<R: Row, T>(
    sparse: &[T],
    value: &impl Fn(&T) -> R::Value,
    dense: &[R::Value],
    cols: &[[u32; 3]],
    ds: &[R],
    out: &mut [R::Value],
) {
    for ((out, cols), (ds, ahead)) in out.chunks_mut(BATCH).zip(cols.chunks(BATCH)).zip(
        ds.chunks(BATCH)
            .zip(cols.chunks(BATCH).skip(1).map(Some).chain([None])),
    ) {
        if let Some(ahead) = ahead {
            prefetch_columns(sparse, ahead);
        }
        for (v, c) in out.iter_mut().zip(cols) {
            *v = (c.iter()).fold(R::Value::default(), |acc, &c| {
                acc ^ value(&sparse[c as usize])
            });
        }
        R::add_evaluations(ds, dense, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Prg;

    fn round_trip(n: usize, seed: u64) {
        let mut prg = Prg::from_seed(Block::from(seed));
        let okvs = Okvs::new(Params::new(n as u64, 40).unwrap(), prg.block());
        round_trip_with(&okvs, n, &mut prg, |prg| prg.block());
        let okvs = Okvs::binary(Params::binary(n as u64, 40).unwrap(), prg.block());
        round_trip_with(&okvs, n, &mut prg, |prg| prg.u64());
        let okvs = Okvs::binary(Params::binary(n as u64, 40).unwrap(), prg.block());
        round_trip_with(&okvs, n, &mut prg, |prg| prg.block());
    }

    fn round_trip_with<R: Row>(
        okvs: &Okvs<R>,
        n: usize,
        prg: &mut Prg,
        value: impl Fn(&mut Prg) -> R::Value,
    ) {
        let keys: Vec<Block> = (0..n).map(|_| prg.block()).collect();
        let values: Vec<R::Value> = (0..n).map(|_| value(prg)).collect();
        let p = okvs.encode(&keys, &values).unwrap();
        assert_eq!(p.len(), okvs.params().len());
        let mut got = vec![R::Value::default(); n];
        okvs.decode(&p, &keys, &mut got);
        assert!(got == values, "n = {n}");
        // Other keys decode to something else. Not every one: a key whose columns are one
        // pivot column and two columns never set (0) decodes to that pivot's value if its
        // row's other columns are never set either, a few percent of keys at n = 64; eight
        // in a row do so with probability below 2^-30.
        let mut others = [R::Value::default(); 8];
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
    /// that plus 3σ), with field rows and with binary ones (whose gaps may also be
    /// dependent).
    #[test]
    fn failures_stay_under_the_bound_at_small_lambda() {
        let (n, lambda) = (1u64 << 10, 12);
        failures_under_the_bound(n, lambda, |seed| {
            Okvs::new(Params::new(n, lambda).unwrap(), seed)
        });
        failures_under_the_bound(n, lambda, |seed| {
            Okvs::<BitRow<u64>>::binary(Params::binary(n, lambda).unwrap(), seed)
        });
    }

    fn failures_under_the_bound<R: Row>(
        n: u64,
        lambda: u32,
        okvs: impl Fn(Block) -> Okvs<R> + Sync,
    ) {
        let trials = 1u32 << 16;
        let values = vec![R::Value::default(); n as usize];
        let failures: u32 = (0..trials)
            .into_par_iter()
            .map(|t| {
                let mut prg = Prg::from_seed(Block::from_halves(0xf00d, t.into()));
                let keys: Vec<Block> = (0..n).map(|_| prg.block()).collect();
                u32::from(okvs(prg.block()).encode(&keys, &values).is_err())
            })
            .sum();
        let expected = f64::from(trials) * 2f64.powi(-(lambda as i32));
        assert!(
            f64::from(failures) <= expected + 3.0 * expected.sqrt(),
            "{failures} failures in {trials} encodings"
        );
    }

    /// Streamed, bin by bin (one and three bins at a time), P is what [`Okvs::encode`]
    /// gives, and the decodings on the way and at the other end are [`Okvs::decode`]'s.
    #[test]
    fn streaming_gives_the_same_encoding_and_decodings() {
        let n = 40_000;
        let mut prg = Prg::from_seed(Block::from(11));
        let keys: Vec<Block> = (0..n).map(|_| prg.block()).collect();
        let values: Vec<Block> = (0..n).map(|_| prg.block()).collect();
        let okvs = Okvs::new(Params::new(n as u64, 40).unwrap(), prg.block());
        assert!(okvs.params().bins > 2);
        let other: Vec<Block> = (0..okvs.params().len()).map(|_| prg.block()).collect();
        let p = okvs.encode(&keys, &values).unwrap();
        let mut on_other = vec![Block::ZERO; n];
        okvs.decode(&other, &keys, &mut on_other);
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut streamed = Vec::new();
            let binned = okvs.bin(&keys);
            let by_key: std::collections::HashMap<Block, Block> =
                keys.iter().copied().zip(values.iter().copied()).collect();
            let decoded = pool
                .install(|| {
                    binned.encode_streaming(
                        |range, out| {
                            let keys = &binned.keys()[range];
                            out.iter_mut().zip(keys).for_each(|(v, k)| *v = by_key[k]);
                        },
                        &other,
                        |&x| x,
                        |columns, bin| {
                            bin.iter_mut()
                                .for_each(|x| *x ^= Block::from(columns.start as u64))
                        },
                        |columns, bin| {
                            assert_eq!(columns.start, streamed.len());
                            let masked = bin.iter().map(|x| x ^ Block::from(columns.start as u64));
                            streamed.extend(masked);
                            Ok(())
                        },
                    )
                })
                .unwrap();
            assert!(streamed == p, "{threads} threads");
            assert!(decoded == on_other, "{threads} threads");
            let mut bins = p.chunks(okvs.params().bin_len());
            let mut got = vec![Block::ZERO; n];
            pool.install(|| {
                // Each bin sent with 1 added to its values, and made again by adding 1.
                okvs.bin(&keys).decode_streaming(
                    |len, buf| {
                        let bin = bins.next().unwrap();
                        assert_eq!(bin.len(), len);
                        *buf = bin.iter().map(|x| x ^ Block::ONE).collect();
                        Ok(())
                    },
                    |_, bin| bin.iter_mut().for_each(|x| *x ^= Block::ONE),
                    &mut got,
                )
            })
            .unwrap();
            assert!(got == values, "{threads} threads");
            assert!(bins.next().is_none());
        }
    }

    /// A hand-off that fails (the peer gone) ends the streamed encoding with its error
    /// on any number of threads, with no bin handed on after it.
    #[test]
    fn a_failed_hand_off_stops_the_streamed_encoding() {
        let n = 40_000;
        let mut prg = Prg::from_seed(Block::from(12));
        let keys: Vec<Block> = (0..n).map(|_| prg.block()).collect();
        let okvs = Okvs::new(Params::new(n as u64, 40).unwrap(), prg.block());
        let other = vec![Block::ZERO; okvs.params().len()];
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let binned = okvs.bin(&keys);
            let mut handed = 0;
            let err = pool
                .install(|| {
                    binned.encode_streaming(
                        |_, out| out.fill(Block::from(7)),
                        &other,
                        |&x| x,
                        |_, _| {},
                        |_, _| {
                            handed += 1;
                            match handed {
                                2 => Err(Error::PeerClosed("")),
                                _ => Ok(()),
                            }
                        },
                    )
                })
                .unwrap_err();
            assert!(matches!(err, Error::PeerClosed(_)), "{err}");
            assert_eq!(handed, 2, "{threads} threads");
        }
    }

    /// A randomized encoding decodes as the plain one does, and fills its free columns:
    /// another fill gives another P, and the values all 0 give a P with no 0 in it (each
    /// column 0 with probability 2^-128, or 2^-64 for 64-bit values) — with field rows
    /// and with binary ones.
    #[test]
    fn a_randomized_encoding_fills_its_free_columns() {
        let mut prg = Prg::from_seed(Block::from(13));
        for n in [1, 64, 3000, 40_000] {
            let okvs = Okvs::new(Params::new(n as u64, 40).unwrap(), prg.block());
            randomized(&okvs, n, &mut prg, |prg| prg.block());
            let okvs = Okvs::binary(Params::binary(n as u64, 40).unwrap(), prg.block());
            randomized(&okvs, n, &mut prg, |prg| prg.u64());
        }
    }

    fn randomized<R: Row>(
        okvs: &Okvs<R>,
        n: usize,
        prg: &mut Prg,
        value: impl Fn(&mut Prg) -> R::Value,
    ) {
        let zero = R::Value::default();
        let keys: Vec<Block> = (0..n).map(|_| prg.block()).collect();
        let values: Vec<R::Value> = (0..n).map(|_| value(prg)).collect();
        let (p, q) = (
            okvs.encode_random(&keys, &values, Block::from(1)).unwrap(),
            okvs.encode_random(&keys, &values, Block::from(2)).unwrap(),
        );
        assert_ne!(p, q, "n = {n}");
        for p in [&p, &q] {
            let mut got = vec![zero; n];
            okvs.decode(p, &keys, &mut got);
            assert!(got == values, "n = {n}");
        }
        let zeros = okvs
            .encode_random(&keys, &vec![zero; n], Block::from(3))
            .unwrap();
        assert!(zeros.iter().all(|&x| x != zero), "n = {n}");
        let mut got = vec![value(prg); n];
        okvs.decode(&zeros, &keys, &mut got);
        assert!(got.iter().all(|&x| x == zero), "n = {n}");
    }

    #[test]
    fn a_repeated_key_is_refused() {
        let mut prg = Prg::from_seed(Block::from(5));
        let mut keys: Vec<Block> = (0..500).map(|_| prg.block()).collect();
        keys[17] = keys[400];
        let values: Vec<Block> = (0..500).map(|_| prg.block()).collect();
        let okvs = Okvs::new(Params::new(500, 40).unwrap(), Block::from(9));
        let err = okvs.encode(&keys, &values).unwrap_err();
        assert!(
            matches!(err, Error::Params(ref m) if m.contains("duplicate")),
            "{err}"
        );
    }
}
