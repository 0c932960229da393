//! Set OLE tuples (§III-C5, Eq. 11) and the OT offline phase that makes them (§IV-D):
//! Gilboa product sharing on IKNP random OTs.
//!
//! A set tuple for bin i is Alice's `(s_A,i, r_A,i,1..β)` and Bob's `(s_B,i,j, w_i,j)` for
//! j in [β], with `r_A,i,j · r_B,i,j = s_A,i + s_B,i,j` and `w = r_B⁻¹` (Bob only ever
//! needs the inverse: spec §1.1). s_A is shared by the β comparisons of one bin and
//! nothing is shared across bins.
//!
//! **Gilboa with correlated OTs** (spec §5.4). For each comparison (i, j) Alice draws
//! r_A ∈ 𝔽_Q and Bob r_B ∈ 𝔽*_Q; they run ℓ OTs, OT ι with Bob's choice bit `b_ι` = bit ι
//! of r_B. From random OT ι (messages `x0 = F(H(o, q_o))`, `x1 = F(H(o, q_o ⊕ Δ))`,
//! Bob's `F(H(o, t_o)) = x_{b_ι}`, o the OT's index in the run) Alice makes the correlated
//! pair `(x0, x0 + r_A·2^ι)` by sending `τ_ι = x1 − x0 − r_A·2^ι`; Bob outputs `x_{b_ι} −
//! b_ι·τ_ι = x0 + b_ι·r_A·2^ι`. Alice's share is `−Σ_ι x0` and Bob's `Σ_ι (x0 + b_ι r_A 2^ι)`,
//! so the two add up to `r_A · Σ_ι b_ι 2^ι = r_A·r_B` (the paper's ℓ-bit OT messages
//! `(−ρ, r_A 2^ι − ρ)` with `ρ = −x0`, each of ℓ bits on the wire, as §V-A counts them).
//! F maps a 128-bit hash to 𝔽_Q by `⌊h·Q / 2^128⌋` (bias at most Q/2^128).
//!
//! **One s_A per bin.** Alice's shares of a bin's β products differ; she keeps the first,
//! `s_A,i = s_A,i,1`, and sends `κ_j = s_A,i − s_A,i,j` for j ≥ 2, which Bob subtracts from
//! his. κ_j is uniform to Bob (it contains `r_A,i,j·r_B,i,j` for a fresh uniform r_A,i,j),
//! and the tuples come out as the ideal ones: r_A uniform, r_B uniform on 𝔽*_Q, s_A
//! uniform and s_B = r_A·r_B − s_A (spec §1.1's equivalent sampling).
//!
//! **In chunks.** The ~αβℓ OTs (483 million at 2^20) run a chunk of bins at a time, each
//! chunk its own IKNP extension on fresh column streams of the one set of base OTs
//! ([`SenderSeeds::segment`]), its OTs numbered on through the run in the hash tweaks, so
//! no two OTs under Δ share a tweak and a party holds one chunk's rows at a time.

use super::field::{packed_bytes, Field, Packed, PackedWriter};
use super::params::Kbm23Params;
use crate::crypto::{tccr_hash, Block, Prg};
use crate::net::Channel;
use crate::ot::{ReceiverSeeds, SenderSeeds};
use crate::Result;

/// OTs per chunk, about: 16 MiB of rows (chunks of 2^16 OTs, whose rows would stay in
/// cache, measured 1.10× slower at 2^17: a round trip per chunk).
const CHUNK_OTS: usize = if cfg!(test) { 1 << 12 } else { 1 << 20 };

/// Alice's halves of the set tuples, bin-major.
pub struct AlicesTuples {
    /// `s_A,i` for each bin.
    pub s: Packed,
    /// `r_A,i,j` for each comparison.
    pub r: Packed,
}

/// Bob's halves of the set tuples, bin-major, as he uses them online: `w = r_B⁻¹` and
/// `u = (k·D + 1 + s_B)·w`, from which s_B is not needed (see [`super::SenderState`]).
pub struct BobsTuples {
    /// `w_i,j = r_B,i,j⁻¹` for each comparison.
    pub w: Packed,
    /// `u_i,j = (k·D + 1 + s_B,i,j)·w_i,j` for each comparison.
    pub u: Packed,
}

/// The chunks of a run: consecutive ranges of bins.
fn chunks(p: &Kbm23Params) -> impl Iterator<Item = std::ops::Range<usize>> {
    let per = (CHUNK_OTS / (p.beta * p.field.bits() as usize)).max(1);
    let alpha = p.alpha as usize;
    (0..alpha.div_ceil(per)).map(move |k| k * per..((k + 1) * per).min(alpha))
}

/// `⌊h·Q / 2^128⌋`: a uniform 128-bit value as an element of 𝔽_Q.
fn element(field: &Field, h: Block) -> u64 {
    let q = field.modulus() as u128;
    let high = (h >> 64) * q + (((h as u64) as u128 * q) >> 64);
    (high >> 64) as u64
}

/// Alice's side (the IKNP sender, seeds from the base OTs she received).
pub fn alices_tuples(
    chan: &mut dyn Channel,
    seeds: &SenderSeeds,
    p: &Kbm23Params,
    prg: &mut Prg,
) -> Result<AlicesTuples> {
    let (f, beta, ell) = (p.field, p.beta, p.field.bits() as usize);
    let mut s_all = PackedWriter::new(f.bits(), p.alpha as usize);
    let mut r_all = PackedWriter::new(f.bits(), p.comparisons());
    let (mut q0_buf, mut q1) = (Vec::new(), Vec::new());
    let (mut tau_buf, mut kappa_buf) = (Vec::new(), Vec::new());
    for (k, bins) in chunks(p).enumerate() {
        let first = bins.start * beta;
        let comparisons = bins.len() * beta;
        let ext = seeds.segment(k as u64);
        let delta = ext.s()[0];
        let mut q0 = ext.extend_into(chan, comparisons * ell, q0_buf, |_| {})?;
        q1.clear();
        q1.extend(q0.iter().map(|q| q ^ delta));
        tccr_hash((first * ell) as u64, &mut q0);
        tccr_hash((first * ell) as u64, &mut q1);
        let mut tau = PackedWriter::reusing(f.bits(), comparisons * ell, tau_buf);
        let mut kappa = PackedWriter::reusing(f.bits(), bins.len() * (beta - 1), kappa_buf);
        let mut s_bin = 0;
        let rows = q0.chunks_exact(ell).zip(q1.chunks_exact(ell));
        for (c, (q0, q1)) in rows.enumerate() {
            let r = f.random(prg);
            r_all.push(r);
            // Σ_ι −x0, and τ_ι = x1 − x0 − r·2^ι.
            let (mut s, mut r_shifted) = (0, r);
            for (&q0, &q1) in q0.iter().zip(q1) {
                let (x0, x1) = (element(&f, q0), element(&f, q1));
                s = f.sub(s, x0);
                tau.push(f.sub(f.sub(x1, x0), r_shifted));
                r_shifted = f.add(r_shifted, r_shifted);
            }
            if c % beta == 0 {
                s_bin = s;
                s_all.push(s);
            } else {
                kappa.push(f.sub(s_bin, s));
            }
        }
        let (tau, kappa) = (tau.finish(), kappa.finish());
        chan.send(tau.as_bytes())?;
        chan.send(kappa.as_bytes())?;
        chan.flush()?;
        (tau_buf, kappa_buf) = (tau.into_bytes(), kappa.into_bytes());
        q0_buf = q0;
    }
    Ok(AlicesTuples {
        s: s_all.finish(),
        r: r_all.finish(),
    })
}

/// Bob's side (the IKNP receiver, seeds from the base OTs he sent).
pub fn bobs_tuples(
    chan: &mut dyn Channel,
    seeds: &ReceiverSeeds,
    p: &Kbm23Params,
    prg: &mut Prg,
) -> Result<BobsTuples> {
    let (f, beta, ell, dummy) = (p.field, p.beta, p.field.bits() as usize, p.bobs_dummy());
    let mut w_all = PackedWriter::new(f.bits(), p.comparisons());
    let mut u_all = PackedWriter::new(f.bits(), p.comparisons());
    let (mut frame, mut t, mut s_chunk) = (Vec::new(), Vec::new(), Vec::new());
    for (k, bins) in chunks(p).enumerate() {
        let first = bins.start * beta;
        let comparisons = bins.len() * beta;
        let r: Vec<u64> = (0..comparisons).map(|_| f.random_nonzero(prg)).collect();
        let choice = |o: usize| (r[o / ell] >> (o % ell)) & 1 == 1;
        let ext = seeds.segment(k as u64);
        let ots = comparisons * ell;
        ext.extend(chan, ots, |from, u| {
            // The last chunk of rows runs past the OTs.
            for (o, u) in (from..ots).zip(u.iter_mut()) {
                if choice(o) {
                    *u ^= Block::MAX;
                }
            }
        })?;
        t.clear();
        t.resize(ots.next_multiple_of(128), 0);
        ext.replay_t().par_rows(0, &mut t);
        t.truncate(ots);
        tccr_hash((first * ell) as u64, &mut t);
        chan.recv_exact_into(&mut frame, packed_bytes(f.bits(), ots), "τ")?;
        let tau = Packed::parse(&f, ots, std::mem::take(&mut frame), "τ")?;
        let kappas = bins.len() * (beta - 1);
        chan.recv_exact_into(&mut frame, packed_bytes(f.bits(), kappas), "κ")?;
        let kappa = Packed::parse(&f, kappas, std::mem::take(&mut frame), "κ")?;
        s_chunk.clear();
        for (c, (t, &r)) in t.chunks_exact(ell).zip(&r).enumerate() {
            // Σ_ι x_{b_ι} − b_ι·τ_ι, minus κ after a bin's first comparison.
            let mut s = 0;
            for (i, &t) in t.iter().enumerate() {
                let x = element(&f, t);
                let bit = (r >> i) & 1 == 1;
                s = f.add(
                    s,
                    if bit {
                        f.sub(x, tau.get(c * ell + i))
                    } else {
                        x
                    },
                );
            }
            let (bin, j) = (c / beta, c % beta);
            if j > 0 {
                s = f.sub(s, kappa.get(bin * (beta - 1) + j - 1));
            }
            s_chunk.push(s);
        }
        for (w, &s) in inverses(&f, &r).into_iter().zip(&s_chunk) {
            w_all.push(w);
            u_all.push(f.mul(f.add(dummy, s), w));
        }
        frame = tau.into_bytes();
    }
    Ok(BobsTuples {
        w: w_all.finish(),
        u: u_all.finish(),
    })
}

/// `v⁻¹` for each non-zero `v`, with one inversion (Montgomery's trick: prefix products,
/// one inverse of the total, then back).
fn inverses(f: &Field, v: &[u64]) -> Vec<u64> {
    let mut prefix = Vec::with_capacity(v.len());
    let mut acc = 1;
    for &x in v {
        prefix.push(acc);
        acc = f.mul(acc, x);
    }
    let mut inv = if v.is_empty() { 1 } else { f.inv(acc) };
    let mut out = vec![0; v.len()];
    for i in (0..v.len()).rev() {
        out[i] = f.mul(inv, prefix[i]);
        inv = f.mul(inv, v[i]);
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::net::mem_pair;
    use crate::ot::test_seeds;
    use crate::protocols::Sizes;
    use std::time::Duration;

    /// Eq. 11 for every comparison: `r_A·r_B = s_A + s_B`, with `r_B = w⁻¹` and
    /// `s_B = u·w⁻¹ − (k·D + 1)`.
    pub(crate) fn assert_tuples(p: &Kbm23Params, a: &AlicesTuples, b: &BobsTuples) {
        let f = p.field;
        for c in 0..p.comparisons() {
            let w = b.w.get(c);
            assert_ne!(w, 0);
            let r_b = f.inv(w);
            let s_b = f.sub(f.mul(b.u.get(c), r_b), p.bobs_dummy());
            let left = f.mul(a.r.get(c), r_b);
            assert_eq!(left, f.add(a.s.get(c / p.beta), s_b), "comparison {c}");
        }
    }

    #[test]
    fn gilboa_tuples_satisfy_eq_11() {
        for (n, sigma) in [(300, Some(32)), (40, None)] {
            let p = Kbm23Params::new(
                Sizes {
                    sender: n,
                    receiver: n,
                },
                sigma,
            )
            .unwrap();
            assert!(chunks(&p).count() > 1, "several chunks");
            let mut prg = Prg::from_seed(8);
            let (sender_seeds, receiver_seeds) = test_seeds(&mut prg);
            let (mut x, mut y) = mem_pair(Duration::from_secs(30));
            let p2 = p.clone();
            let bob = std::thread::spawn(move || {
                bobs_tuples(&mut y, &receiver_seeds, &p2, &mut Prg::from_seed(2)).unwrap()
            });
            let alice = alices_tuples(&mut x, &sender_seeds, &p, &mut Prg::from_seed(1)).unwrap();
            assert_tuples(&p, &alice, &bob.join().unwrap());
        }
    }

    #[test]
    fn batch_inversion_and_the_hash_to_the_field() {
        let f = Field::new(9689);
        let mut prg = Prg::from_seed(4);
        let v: Vec<u64> = (0..1000).map(|_| f.random_nonzero(&mut prg)).collect();
        let inv = inverses(&f, &v);
        assert!(v.iter().zip(&inv).all(|(&x, &y)| f.mul(x, y) == 1));
        assert_eq!(element(&f, 0), 0);
        assert_eq!(element(&f, Block::MAX), 9688);
        assert_eq!(element(&f, 1 << 127), 9689 / 2);
    }
}
