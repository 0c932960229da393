//! Set OLE tuples (§III-C5, Eq. 11) and the OT offline phase that makes them (§IV-D):
//! Gilboa product sharing on IKNP random OTs.
//!
//! A set tuple for bin i is the receiver's `(s_A,i, r_A,i,1..β)` and the sender's
//! `(s_B,i,j, w_i,j)` for j in [β], with `r_A,i,j · r_B,i,j = s_A,i + s_B,i,j` and
//! `w = r_B⁻¹` (the sender only ever needs the inverse: spec §1.1). s_A is shared by the β
//! comparisons of one bin and nothing is shared across bins.
//!
//! **Gilboa with correlated OTs** (spec §5.4). For each comparison (i, j) the receiver
//! draws r_A ∈ 𝔽_Q and the sender r_B ∈ 𝔽*_Q; they run ℓ OTs, OT ι with the sender's choice
//! bit `b_ι` = bit ι of r_B. From random OT ι (messages `x0 = F(H(o, q_o))`,
//! `x1 = F(H(o, q_o ⊕ Δ))`, the sender's `F(H(o, t_o)) = x_{b_ι}`, o the OT's index in the
//! run) the receiver makes the correlated pair `(x0, x0 + r_A·2^ι)` by sending
//! `τ_ι = x1 − x0 − r_A·2^ι`; the sender outputs `x_{b_ι} − b_ι·τ_ι = x0 + b_ι·r_A·2^ι`.
//! The receiver's share is `−Σ_ι x0` and the sender's `Σ_ι (x0 + b_ι r_A 2^ι)`, so the two
//! add up to `r_A · Σ_ι b_ι 2^ι = r_A·r_B` (the paper's ℓ-bit OT messages
//! `(−ρ, r_A 2^ι − ρ)` with `ρ = −x0`, each of ℓ bits on the wire, as §V-A counts them). F
//! maps a 128-bit hash to 𝔽_Q by `⌊h·Q / 2^128⌋` (bias at most Q/2^128).
//!
//! **One s_A per bin.** The receiver's shares of a bin's β products differ; it keeps the
//! first, `s_A,i = s_A,i,1`, and sends `κ_j = s_A,i − s_A,i,j` for j ≥ 2, which the sender
//! subtracts from its own. κ_j is uniform to the sender (it contains `r_A,i,j·r_B,i,j` for
//! a fresh uniform r_A,i,j), and the tuples come out as the ideal ones: r_A uniform, r_B
//! uniform on 𝔽*_Q, s_A uniform and s_B = r_A·r_B − s_A (spec §1.1's equivalent sampling).
//!
//! **In chunks.** The ~αβℓ OTs (483 million at 2^20) run a chunk of bins at a time, each
//! chunk its own IKNP extension on fresh column streams of the one set of base OTs
//! ([`SenderSeeds::segment`]), its OTs numbered on through the run in the hash tweaks, so
//! no two OTs under Δ share a tweak and a party holds one chunk's rows at a time.

use super::field::{packed_bytes, Field, Packed, PackedWriter};
use super::params::Kbm23Params;
use crate::crypto::{tccr_hash, Block, Prg};
use crate::net::Channel;
use crate::ot::{ExtensionReceiver, ReceiverSeeds, SenderSeeds};
use crate::util::wide_cpu::with_avx512;
use crate::Result;

/// OTs per chunk, about: 16 MiB of rows (chunks of 2^16 OTs, whose rows would stay in
/// cache, measured 1.10× slower at 2^17: a round trip per chunk).
const CHUNK_OTS: usize = if cfg!(test) { 1 << 12 } else { 1 << 20 };

/// The receiver's halves of the set tuples, bin-major.
pub(super) struct ReceiversTuples {
    /// `s_A,i` for each bin.
    pub s: Packed,
    /// `r_A,i,j` for each comparison.
    pub r: Packed,
}

/// The sender's halves of the set tuples, bin-major, as it uses them online: `w = r_B⁻¹`
/// and `u = (k·D + 1 + s_B)·w`, from which s_B is not needed (see [`super::SenderState`]).
pub(super) struct SendersTuples {
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
    let (q, h) = (field.modulus() as u128, h.as_u128());
    let high = (h >> 64) * q + (((h as u64) as u128 * q) >> 64);
    (high >> 64) as u64
}

/// [`element`] of each `h` into `out`. For Q < 2^32 the product is taken in 32-bit pieces
/// of `h`, each `piece·Q + carry` below 2^64, with the carry into the next piece exact:
/// 64-bit lane arithmetic the compiler vectorises.
fn elements(field: &Field, h: &[Block], out: &mut [u64]) {
    with_avx512(
        #[inline(always)]
        || elements_any(field, h, out),
    )
}

#[inline(always)]
fn elements_any(field: &Field, h: &[Block], out: &mut [u64]) {
    let q = field.modulus();
    if q >> 32 != 0 {
        out.iter_mut()
            .zip(h)
            .for_each(|(o, &h)| *o = element(field, h));
        return;
    }
    let mut groups = out.chunks_exact_mut(8).zip(h.chunks_exact(8));
    for (out, h) in &mut groups {
        let mut carry = [0u64; 8];
        for piece in 0..4 {
            for (carry, &h) in carry.iter_mut().zip(h) {
                *carry = ((h.as_u128() >> (32 * piece)) as u32 as u64 * q + *carry) >> 32;
            }
        }
        out.copy_from_slice(&carry);
    }
    let done = out.len() / 8 * 8;
    for (o, &h) in out[done..].iter_mut().zip(&h[done..]) {
        *o = element(field, h);
    }
}

/// Comparisons whose OTs one pass over a chunk's rows handles at a time: their hashes
/// and elements stay in cache.
const TILE: usize = 256;

/// A tile's buffers, reused from tile to tile.
#[derive(Default)]
struct Tile {
    /// The hashed rows (the receiver: of `q`).
    hashes: Vec<Block>,
    /// The receiver: the hashes of `q ⊕ Δ`.
    more_hashes: Vec<Block>,
    /// Three arrays of elements, one per OT: the receiver's x0, x1 and τ; the sender's x, τ
    /// and masks.
    x: Vec<u64>,
    y: Vec<u64>,
    z: Vec<u64>,
}

/// `v` resized to `len` (its memory reused).
fn sized<T: Copy + Default>(v: &mut Vec<T>, len: usize) -> &mut [T] {
    v.resize(len, T::default());
    &mut v[..len]
}

/// The receiver's side (the IKNP sender, seeds from the base OTs it received).
pub(super) fn receivers_tuples(
    chan: &mut dyn Channel,
    seeds: &SenderSeeds,
    p: &Kbm23Params,
    prg: &mut Prg,
) -> Result<ReceiversTuples> {
    let (f, beta, ell) = (p.field, p.beta, p.field.bits() as usize);
    let mut s_all = PackedWriter::new(f.bits(), p.alpha as usize);
    let mut r_all = PackedWriter::new(f.bits(), p.comparisons());
    let (mut q_buf, mut tile) = (Vec::new(), Tile::default());
    let (mut tau_buf, mut kappa_buf) = (Vec::new(), Vec::new());
    for (k, bins) in chunks(p).enumerate() {
        let first = bins.start * beta;
        let comparisons = bins.len() * beta;
        let ext = seeds.segment(k as u64);
        let delta = ext.s()[0];
        let q = ext.extend_into(chan, comparisons * ell, q_buf, |_| {})?;
        let mut tau = PackedWriter::reusing(f.bits(), comparisons * ell, tau_buf);
        let mut kappa = PackedWriter::reusing(f.bits(), bins.len() * (beta - 1), kappa_buf);
        let mut s_bin = 0;
        for (t, rows) in q.chunks(TILE * ell).enumerate() {
            let tweak = ((first + t * TILE) * ell) as u64;
            let h0 = sized(&mut tile.hashes, rows.len());
            h0.copy_from_slice(rows);
            let h1 = sized(&mut tile.more_hashes, rows.len());
            h1.iter_mut().zip(rows).for_each(|(h, q)| *h = q ^ delta);
            tccr_hash(tweak, h0);
            tccr_hash(tweak, h1);
            let x0 = sized(&mut tile.x, rows.len());
            elements(&f, h0, x0);
            let x1 = sized(&mut tile.y, rows.len());
            elements(&f, h1, x1);
            let taus = sized(&mut tile.z, rows.len());
            let ots = x0.chunks_exact(ell).zip(x1.chunks_exact(ell));
            for (c, ((x0, x1), taus)) in ots.zip(taus.chunks_exact_mut(ell)).enumerate() {
                let r = f.random(prg);
                r_all.push(r);
                // Σ_ι −x0, and τ_ι = x1 − x0 − r·2^ι.
                let (mut s, mut r_shifted) = (0, r);
                for ((&x0, &x1), tau) in x0.iter().zip(x1).zip(taus) {
                    s = f.sub(s, x0);
                    *tau = f.sub(f.sub(x1, x0), r_shifted);
                    r_shifted = f.add(r_shifted, r_shifted);
                }
                if (t * TILE + c).is_multiple_of(beta) {
                    s_bin = s;
                    s_all.push(s);
                } else {
                    kappa.push(f.sub(s_bin, s));
                }
            }
            tau.extend(taus);
        }
        let (tau, kappa) = (tau.finish(), kappa.finish());
        chan.send(tau.as_bytes())?;
        chan.send(kappa.as_bytes())?;
        (tau_buf, kappa_buf) = (tau.into_bytes(), kappa.into_bytes());
        q_buf = q;
    }
    Ok(ReceiversTuples {
        s: s_all.finish(),
        r: r_all.finish(),
    })
}

/// A chunk of the sender's OTs whose rows it has sent: its `r_B` and its rows `t`.
struct SendersChunk {
    bins: std::ops::Range<usize>,
    r: Vec<u64>,
    t: Vec<Block>,
}

/// The sender's side (the IKNP receiver, seeds from the base OTs it sent). It sends a
/// chunk's rows before it reads the receiver's answer to the one before, so that the
/// receiver computes that chunk while the sender finishes the last.
pub(super) fn senders_tuples(
    chan: &mut dyn Channel,
    seeds: &ReceiverSeeds,
    p: &Kbm23Params,
    prg: &mut Prg,
) -> Result<SendersTuples> {
    let f = p.field;
    let mut out = SendersWriter {
        w: PackedWriter::new(f.bits(), p.comparisons()),
        u: PackedWriter::new(f.bits(), p.comparisons()),
        frame: Vec::new(),
        tile: Tile::default(),
        s: Vec::new(),
    };
    let (mut sent, mut spare): (Option<SendersChunk>, Vec<Block>) = (None, Vec::new());
    for (k, bins) in chunks(p).map(Some).chain([None]).enumerate() {
        let next = match bins {
            Some(bins) => Some(senders_rows(
                chan,
                seeds.segment(k as u64),
                p,
                bins,
                spare,
                prg,
            )?),
            None => None,
        };
        spare = match sent {
            Some(chunk) => out.finish_chunk(chan, p, chunk)?,
            None => Vec::new(),
        };
        sent = next;
    }
    Ok(SendersTuples {
        w: out.w.finish(),
        u: out.u.finish(),
    })
}

/// Draws the sender's `r_B` for the comparisons of `bins`, sends the chunk's rows with the
/// bits of `r_B` as choices (OT ι of comparison c chooses bit ι of `r_B,c`), and keeps its
/// own rows `t`, in the memory of `t`.
fn senders_rows(
    chan: &mut dyn Channel,
    ext: ExtensionReceiver,
    p: &Kbm23Params,
    bins: std::ops::Range<usize>,
    mut t: Vec<Block>,
    prg: &mut Prg,
) -> Result<SendersChunk> {
    let (f, ell) = (p.field, p.field.bits() as usize);
    let comparisons = bins.len() * p.beta;
    let r: Vec<u64> = (0..comparisons).map(|_| f.random_nonzero(prg)).collect();
    let ots = comparisons * ell;
    ext.extend(chan, ots, |from, u| {
        // The last chunk of rows runs past the OTs.
        let (mut c, mut bit) = (from / ell, from % ell);
        for u in u.iter_mut().take(ots.saturating_sub(from)) {
            if (r[c] >> bit) & 1 == 1 {
                *u ^= Block::ONES;
            }
            bit += 1;
            if bit == ell {
                (c, bit) = (c + 1, 0);
            }
        }
    })?;
    t.clear();
    t.resize(ots.next_multiple_of(128), Block::ZERO);
    ext.replay_t().par_rows(0, &mut t);
    t.truncate(ots);
    Ok(SendersChunk { bins, r, t })
}

/// The sender's tuples as they are made, and its reused buffers.
struct SendersWriter {
    w: PackedWriter,
    u: PackedWriter,
    frame: Vec<u8>,
    tile: Tile,
    s: Vec<u64>,
}

impl SendersWriter {
    /// Reads the receiver's τ and κ for `chunk` and appends its tuples; returns the chunk's
    /// row memory for reuse.
    fn finish_chunk(
        &mut self,
        chan: &mut dyn Channel,
        p: &Kbm23Params,
        chunk: SendersChunk,
    ) -> Result<Vec<Block>> {
        let (f, beta, ell, dummy) = (p.field, p.beta, p.field.bits() as usize, p.senders_dummy());
        let SendersChunk { bins, r, mut t } = chunk;
        let first = bins.start * beta;
        let ots = t.len();
        let frame = &mut self.frame;
        chan.recv_exact_into(frame, packed_bytes(f.bits(), ots), "τ")?;
        let tau = Packed::parse(&f, ots, std::mem::take(frame), "τ")?;
        let kappas = bins.len() * (beta - 1);
        chan.recv_exact_into(frame, packed_bytes(f.bits(), kappas), "κ")?;
        let kappa = Packed::parse(&f, kappas, std::mem::take(frame), "κ")?;
        let (tile, s_chunk) = (&mut self.tile, &mut self.s);
        s_chunk.clear();
        for (i, rows) in t.chunks_mut(TILE * ell).enumerate() {
            let start = i * TILE * ell;
            tccr_hash((first * ell + start) as u64, rows);
            let x = sized(&mut tile.x, rows.len());
            elements(&f, rows, x);
            let taus = sized(&mut tile.y, rows.len());
            tau.unpack(start, taus);
            // x_{b_ι} − b_ι·τ_ι for each OT, with b_ι as a mask.
            let masks = sized(&mut tile.z, rows.len());
            let comparisons = r[i * TILE..].iter().zip(masks.chunks_exact_mut(ell));
            for (&r, masks) in comparisons {
                for (bit, m) in masks.iter_mut().enumerate() {
                    *m = ((r >> bit) & 1).wrapping_neg();
                }
            }
            with_avx512(
                #[inline(always)]
                || {
                    for ((x, &tau), &m) in x.iter_mut().zip(&*taus).zip(&*masks) {
                        *x = f.sub(*x, tau & m);
                    }
                },
            );
            for (c, x) in x.chunks_exact(ell).enumerate() {
                let s = x.iter().fold(0, |s, &x| f.add(s, x));
                // Minus κ after a bin's first comparison.
                let c = i * TILE + c;
                let (bin, j) = (c / beta, c % beta);
                s_chunk.push(if j > 0 {
                    f.sub(s, kappa.get(bin * (beta - 1) + j - 1))
                } else {
                    s
                });
            }
        }
        for (w, &s) in inverses(&f, &r).into_iter().zip(&*s_chunk) {
            self.w.push(w);
            self.u.push(f.mul(f.add(dummy, s), w));
        }
        *frame = tau.into_bytes();
        Ok(t)
    }
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
    use crate::util::cpu::{with_level, Level};
    use std::time::Duration;

    /// Eq. 11 for every comparison: `r_A·r_B = s_A + s_B`, with `r_B = w⁻¹` and
    /// `s_B = u·w⁻¹ − (k·D + 1)`.
    pub(crate) fn assert_tuples(p: &Kbm23Params, a: &ReceiversTuples, b: &SendersTuples) {
        let f = p.field;
        for c in 0..p.comparisons() {
            let w = b.w.get(c);
            assert_ne!(w, 0);
            let r_b = f.inv(w);
            let s_b = f.sub(f.mul(b.u.get(c), r_b), p.senders_dummy());
            let left = f.mul(a.r.get(c), r_b);
            assert_eq!(left, f.add(a.s.get(c / p.beta), s_b), "comparison {c}");
        }
    }

    /// Both parties at each level (the AVX-512 clones of the sender's loops, or not).
    #[test]
    fn gilboa_tuples_satisfy_eq_11() {
        for level in Level::ALL {
            gilboa_tuples_satisfy_eq_11_at(level);
        }
    }

    fn gilboa_tuples_satisfy_eq_11_at(level: Level) {
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
            let mut prg = Prg::from_seed(Block::from(8));
            let (sender_seeds, receiver_seeds) = test_seeds(&mut prg);
            let (mut x, mut y) = mem_pair(Duration::from_secs(30));
            let p2 = p.clone();
            let sender = std::thread::spawn(move || {
                with_level(level, || {
                    senders_tuples(
                        &mut y,
                        &receiver_seeds,
                        &p2,
                        &mut Prg::from_seed(Block::from(2)),
                    )
                    .unwrap()
                })
            });
            let receiver = with_level(level, || {
                receivers_tuples(
                    &mut x,
                    &sender_seeds,
                    &p,
                    &mut Prg::from_seed(Block::from(1)),
                )
                .unwrap()
            });
            assert_tuples(&p, &receiver, &sender.join().unwrap());
        }
    }

    #[test]
    fn batch_inversion_and_the_hash_to_the_field() {
        let f = Field::new(9689);
        let mut prg = Prg::from_seed(Block::from(4));
        let v: Vec<u64> = (0..1000).map(|_| f.random_nonzero(&mut prg)).collect();
        let inv = inverses(&f, &v);
        assert!(v.iter().zip(&inv).all(|(&x, &y)| f.mul(x, y) == 1));
        assert_eq!(element(&f, Block::ZERO), 0);
        assert_eq!(element(&f, Block::ONES), 9688);
        assert_eq!(element(&f, Block::unit(127)), 9689 / 2);
        // At each level (the AVX-512 clone of the loop, or not), at lengths around a
        // vector's.
        for q in [9689, (1 << 31) - 1, (1 << 61) - 1] {
            let f = Field::new(q);
            let mut h: Vec<Block> = (0..100).map(|_| prg.block()).collect();
            h.extend([
                Block::ZERO,
                Block::ONES,
                Block::low_ones(127),
                Block::from(u64::MAX),
            ]);
            for level in Level::ALL {
                for len in [0, 1, 7, 9, h.len()] {
                    let mut x = vec![0; len];
                    with_level(level, || elements(&f, &h[..len], &mut x));
                    assert!(
                        h.iter().zip(&x).all(|(&h, &x)| x == element(&f, h)),
                        "Q = {q}, {level:?}, {len}"
                    );
                }
            }
        }
    }
}
