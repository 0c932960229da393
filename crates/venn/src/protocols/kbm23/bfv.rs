//! KBM23's tuples from BFV homomorphic encryption (§IV-B, Prop. 1, Thm 4), with the secure
//! reading of spec §5.3 (recipe A) and the `fhe` crate.
//!
//! **The field is the plaintext space** (spec §5.3, 1A): SIMD batching needs a prime
//! `t ≡ 1 (mod 2N)`, and none of Table II's Q is one, so under `--offline bfv` the comparison
//! field is `Q = t`, the least such prime `≥ k·D + 2` (65537 at 2^20: ℓ = 17, not 14, and
//! the online traffic grows by that ratio). Only 32-bit integer keys: hashed keys would need
//! a 62-bit plaintext modulus.
//!
//! **Protocol.** The receiver makes a key pair, sends the public key and, for each block of
//! N bins, a seeded secret-key encryption of its `s_A` for those bins. For each block and
//! each of the β comparisons of a bin, the sender samples `s_B` and `w = r_B⁻¹ ∈ 𝔽*_Q` for
//! the block's bins and returns `(ct + s_B)·w`, switched down to its first two moduli, plus
//! a fresh `Enc_pk(0)` and flooding noise (below); the receiver decrypts
//! `r_A = (s_A + s_B)·w`, which is Eq. 11 with `r_B = w⁻¹`. Each product gets a fresh copy
//! of the receiver's ciphertext (the authors' code multiplied in place, spec §5.3 [C]).
//!
//! **Circuit privacy** (spec §5.3, 3): the returned ciphertext's `c₁` and noise would
//! otherwise depend on w. `Enc_pk(0)` re-randomises `c₁`; to `c₀` the sender adds noise
//! uniform in `[−2^FLOOD, 2^FLOOD)`, `2^(λ + ⌈log₂(N·results)⌉)` times a bound on every
//! noise term that depends on its values. That bound: the receiver's fresh noise times w is
//! at most `N·t·6σ` before the switch, which divides it by the dropped modulus (2^62), and
//! the switch's rounding is at most `(1 + N·‖s‖∞)/2`; 2^16 covers both at N = 8192 (the
//! measured total is 2^17 with `Enc_pk(0)`'s own noise). Each coefficient is then within
//! statistical distance `2^-(λ + log₂(N·results))` of a value independent of the sender's,
//! so a whole run within 2^-40. Decryption needs the noise below `Δ/2 = q₀q₁/(2t)`:
//! `2^(FLOOD + 1) < 2^(124 − 17 − 1)`.
//!
//! **Security level.** N = 8192 with 186 bits of ciphertext modulus (three 62-bit primes):
//! the HE standard allows up to 218 bits for 128-bit security at N = 8192 (ternary secret),
//! which [`crate::he::params::Bfv::check`] asserts.

use super::field::{Packed, PackedWriter};
use super::params::Kbm23Params;
use super::tuples::{ReceiversTuples, SendersTuples};
use crate::crypto::Prg;
use crate::net::Channel;
use crate::{Error, Result};
use fhe::bfv::{BfvParameters, Ciphertext, Encoding, Plaintext, PublicKey, SecretKey};
use fhe_math::rq::{traits::TryConvertFrom, Poly, Representation};
use fhe_traits::{
    DeserializeParametrized, FheDecoder, FheDecrypter, FheEncoder, FheEncrypter, Serialize,
};
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::sync::Arc;

pub(super) use super::params::BFV_DEGREE as DEGREE;
/// The ciphertext moduli, in bits.
const MODULI: [usize; 3] = [62, 62, 62];
/// The level results are returned at: the first two moduli.
const RESULT_LEVEL: usize = 1;
/// λ.
const STATISTICAL: u32 = 40;
/// log₂ of the bound on the sender-dependent noise in a result (module docs).
const NOISE_BITS: u32 = 16;
/// The most bytes accepted for a public key or a ciphertext from the peer.
const MAX_MESSAGE: usize = 1 << 21;

/// The BFV parameters of a run: 128-bit secure ([`crate::he::params`]).
fn parameters(p: &Kbm23Params) -> Result<Arc<BfvParameters>> {
    let bfv = crate::he::params::Bfv {
        degree: DEGREE,
        plain: p.field.modulus(),
        moduli: MODULI.to_vec(),
    };
    bfv.build()
}

/// An RNG for `fhe` from ours.
fn rng(prg: &mut Prg) -> StdRng {
    let mut seed = [0u8; 32];
    prg.fill_bytes(&mut seed);
    StdRng::from_seed(seed)
}

fn bfv_error(what: &str) -> impl Fn(fhe::Error) -> Error + '_ {
    move |e| Error::protocol(what.to_string(), e.to_string())
}

/// Bins of a block, one ciphertext's slots.
fn blocks(p: &Kbm23Params) -> impl Iterator<Item = std::ops::Range<usize>> {
    let alpha = p.alpha as usize;
    (0..alpha.div_ceil(DEGREE)).map(move |b| b * DEGREE..((b + 1) * DEGREE).min(alpha))
}

/// The receiver's `(s_A, r_A)`.
pub(super) fn receivers_tuples(
    chan: &mut dyn Channel,
    p: &Kbm23Params,
    prg: &mut Prg,
) -> Result<ReceiversTuples> {
    let par = parameters(p)?;
    let f = p.field;
    let mut rng = rng(prg);
    let sk = SecretKey::random(&par, &mut rng);
    chan.send(&PublicKey::new(&sk, &mut rng).to_bytes())?;
    let s: Vec<u64> = (0..p.alpha).map(|_| f.random(prg)).collect();
    let encrypt = |bins: std::ops::Range<usize>, rng: &mut StdRng| -> Result<Vec<u8>> {
        let mut slots = s[bins].to_vec();
        slots.resize(DEGREE, 0);
        let pt = Plaintext::try_encode(&slots, Encoding::simd(), &par).map_err(bfv_error("s_A"))?;
        let ct: Ciphertext = sk.try_encrypt(&pt, rng).map_err(bfv_error("s_A"))?;
        Ok(ct.to_bytes())
    };
    // One block's ciphertext ahead of the results read, so neither side's sending waits
    // on a peer that is sending too.
    let all: Vec<_> = blocks(p).collect();
    if let Some(first) = all.first() {
        chan.send(&encrypt(first.clone(), &mut rng)?)?;
    }
    let mut r = PackedWriter::new(f.bits(), p.comparisons());
    let mut block = Vec::new();
    for (k, bins) in all.iter().enumerate() {
        if let Some(next) = all.get(k + 1) {
            chan.send(&encrypt(next.clone(), &mut rng)?)?;
        }
        block.clear();
        block.resize(bins.len() * p.beta, 0);
        for j in 0..p.beta {
            let bytes = chan.recv(MAX_MESSAGE)?;
            let ct = Ciphertext::from_bytes(&bytes, &par).map_err(bfv_error("a BFV result"))?;
            let pt = sk.try_decrypt(&ct).map_err(bfv_error("a BFV result"))?;
            let v =
                Vec::<u64>::try_decode(&pt, Encoding::simd()).map_err(bfv_error("a BFV result"))?;
            for (i, &v) in v[..bins.len()].iter().enumerate() {
                block[i * p.beta + j] = v;
            }
        }
        r.extend(&block);
    }
    let s = Packed::from_values(f.bits(), s.into_iter());
    Ok(ReceiversTuples { s, r: r.finish() })
}

/// The sender's `(w, u)` (u as in [`super::SenderState`]).
pub(super) fn senders_tuples(
    chan: &mut dyn Channel,
    p: &Kbm23Params,
    prg: &mut Prg,
) -> Result<SendersTuples> {
    let par = parameters(p)?;
    let (f, beta) = (p.field, p.beta);
    let mut rng = rng(prg);
    let pk_bytes = chan.recv(MAX_MESSAGE)?;
    let pk =
        PublicKey::from_bytes(&pk_bytes, &par).map_err(bfv_error("the receiver's public key"))?;
    let zero = Plaintext::try_encode(&[0u64; DEGREE], Encoding::simd_at_level(RESULT_LEVEL), &par)
        .map_err(bfv_error("zero"))?;
    let moduli = &par.moduli()[..=RESULT_LEVEL];
    let top = par
        .context_at_level(0)
        .map_err(bfv_error("the top level"))?;
    let ctx = par
        .context_at_level(RESULT_LEVEL)
        .map_err(bfv_error("the result level"))?;
    let results = blocks(p).count() * beta;
    let flood = STATISTICAL + (DEGREE * results).next_power_of_two().ilog2() + NOISE_BITS;
    let budget: u32 = MODULI[..=RESULT_LEVEL].iter().sum::<usize>() as u32 - f.bits() - 2;
    if flood >= budget {
        return Err(Error::Usage(format!(
            "BFV tuples for {results} results would need {flood}-bit flooding, above the \
             {budget} bits decryption allows"
        )));
    }
    let (mut w_all, mut u_all) = (
        PackedWriter::new(f.bits(), p.comparisons()),
        PackedWriter::new(f.bits(), p.comparisons()),
    );
    let (mut w_block, mut u_block) = (Vec::new(), Vec::new());
    let (mut s_slots, mut w_slots) = (vec![0; DEGREE], vec![0; DEGREE]);
    let dummy = p.senders_dummy();
    for bins in blocks(p) {
        let bytes = chan.recv(MAX_MESSAGE)?;
        let ct =
            Ciphertext::from_bytes(&bytes, &par).map_err(bfv_error("the receiver's ciphertext"))?;
        if ct.len() != 2 || ct[0].ctx() != top {
            return Err(Error::protocol("a fresh two-part ciphertext", "another"));
        }
        w_block.clear();
        w_block.resize(bins.len() * beta, 0);
        u_block.clear();
        u_block.resize(bins.len() * beta, 0);
        // Slots past the last bin multiply by 0: left holding an earlier bin's s_B and w,
        // they would hand the receiver (0 + s_B)·w beside its r_A = (s_A + s_B)·w,
        // and so w.
        s_slots.fill(0);
        w_slots.fill(0);
        for j in 0..beta {
            for i in 0..bins.len() {
                let (s, w) = (f.random(prg), f.random_nonzero(prg));
                (s_slots[i], w_slots[i]) = (s, w);
                w_block[i * beta + j] = w;
                u_block[i * beta + j] = f.mul(f.add(dummy, s), w);
            }
            // The product at the top level, then the switch: it divides the noise that
            // depends on w by the dropped 62-bit modulus (module docs).
            let pt_s = Plaintext::try_encode(&s_slots, Encoding::simd(), &par)
                .map_err(bfv_error("s_B"))?;
            let pt_w =
                Plaintext::try_encode(&w_slots, Encoding::simd(), &par).map_err(bfv_error("w"))?;
            let mut result = &(&ct + &pt_s) * &pt_w;
            result
                .switch_to_level(RESULT_LEVEL)
                .map_err(bfv_error("a result"))?;
            let fresh: Ciphertext = pk
                .try_encrypt(&zero, &mut rng)
                .map_err(bfv_error("Enc(0)"))?;
            result += &fresh;
            result[0] += &flooding(ctx, moduli, flood, prg)?;
            chan.send(&result.to_bytes())?;
        }
        w_all.extend(&w_block);
        u_all.extend(&u_block);
    }
    Ok(SendersTuples {
        w: w_all.finish(),
        u: u_all.finish(),
    })
}

/// A polynomial with coefficients uniform in `[−2^bits, 2^bits)`, in NTT form over
/// `moduli`: the low `bits + 1` bits of a PRG block, less `2^bits`.
fn flooding(
    ctx: &Arc<fhe_math::rq::Context>,
    moduli: &[u64],
    bits: u32,
    prg: &mut Prg,
) -> Result<Poly> {
    assert!(bits < 126, "flooding fits an i128");
    let mask = (1u128 << (bits + 1)) - 1;
    let mut residues = ndarray::Array2::<u64>::zeros((moduli.len(), DEGREE));
    for k in 0..DEGREE {
        let x = (prg.block().as_u128() & mask) as i128 - (1i128 << bits);
        for (m, &q) in moduli.iter().enumerate() {
            residues[[m, k]] = x.rem_euclid(q as i128) as u64;
        }
    }
    let mut poly = Poly::try_convert_from(residues, ctx, false, Representation::PowerBasis)
        .map_err(|e| Error::Usage(format!("flooding noise: {e}")))?;
    poly.change_representation(Representation::Ntt);
    Ok(poly)
}

#[cfg(test)]
mod tests {
    use super::super::tuples::tests::assert_tuples;
    use super::super::Kbm23Config;
    use super::*;
    use crate::crypto::Block;
    use crate::net::mem_pair;
    use crate::protocols::{Offline, Sizes};
    use std::time::Duration;

    fn params(sender: u64, receiver: u64) -> Kbm23Params {
        let config = Kbm23Config {
            offline: Offline::Bfv,
            sigma: Some(32),
        };
        Kbm23Params::for_config(Sizes { sender, receiver }, config).unwrap()
    }

    #[test]
    fn the_field_is_an_ntt_friendly_prime_above_the_values() {
        let p = params(1 << 20, 1 << 20);
        assert!(parameters(&p).is_ok(), "128-bit secure");
        assert_eq!(p.field.modulus(), 65537, "spec §5.3: 65537 at 2^20");
        for n in [256, 1 << 12, 1 << 16, 1 << 24] {
            let p = params(n, n);
            let t = p.field.modulus();
            assert_eq!(t % (2 * DEGREE as u64), 1);
            assert!(
                crate::util::primes::is_prime(t) && t >= p.receivers_dummy() + 2,
                "2^{n}"
            );
        }
        let hashed = Kbm23Config {
            offline: Offline::Bfv,
            sigma: None,
        };
        let sizes = Sizes {
            sender: 100,
            receiver: 100,
        };
        assert!(
            Kbm23Params::for_config(sizes, hashed).is_err(),
            "σ = 32 only"
        );
    }

    #[test]
    fn bfv_tuples_satisfy_eq_11() {
        let p = params(3000, 2000);
        let (mut a, mut b) = mem_pair(Duration::from_secs(60));
        let (a, b) = std::thread::scope(|scope| {
            let receiver = scope.spawn(|| {
                receivers_tuples(&mut a, &p, &mut Prg::from_seed(Block::from(1))).unwrap()
            });
            let sender = senders_tuples(&mut b, &p, &mut Prg::from_seed(Block::from(2))).unwrap();
            (receiver.join().unwrap(), sender)
        });
        assert_tuples(&p, &a, &b);
    }

    #[test]
    fn slots_past_the_last_bin_say_nothing() {
        // Two blocks: the second's unused slots must not hold the first's tuples.
        let p = params(12_000, 7_000);
        assert_eq!(blocks(&p).count(), 2);
        let par = parameters(&p).unwrap();
        let mut rng = rng(&mut Prg::from_seed(Block::from(4)));
        let sk = SecretKey::random(&par, &mut rng);
        let (mut a, mut b) = mem_pair(Duration::from_secs(60));
        let (used, beta) = (blocks(&p).last().unwrap().len(), p.beta);
        let receiver = std::thread::spawn(move || {
            let a: &mut dyn Channel = &mut a;
            a.send(&PublicKey::new(&sk, &mut rng).to_bytes()).unwrap();
            let zeros = Plaintext::try_encode(&[0u64; DEGREE], Encoding::simd(), &par).unwrap();
            let mut last = Vec::new();
            for block in 0..2 {
                let ct: Ciphertext = sk.try_encrypt(&zeros, &mut rng).unwrap();
                a.send(&ct.to_bytes()).unwrap();
                for _ in 0..beta {
                    let bytes = a.recv(MAX_MESSAGE).unwrap();
                    let ct = Ciphertext::from_bytes(&bytes, &par).unwrap();
                    let v = Vec::<u64>::try_decode(&sk.try_decrypt(&ct).unwrap(), Encoding::simd());
                    if block == 1 {
                        last.push(v.unwrap());
                    }
                }
            }
            last
        });
        senders_tuples(&mut b, &p, &mut Prg::from_seed(Block::from(5))).unwrap();
        for v in receiver.join().unwrap() {
            assert!(
                v[..used].iter().any(|&x| x != 0),
                "the used slots hold s_B·w"
            );
            assert!(v[used..].iter().all(|&x| x == 0), "the others nothing");
        }
    }

    #[test]
    fn a_ciphertext_that_is_not_one_is_an_error() {
        let p = params(100, 100);
        for garbage in [vec![], vec![7; 100], vec![0xff; 5000]] {
            let (mut a, mut b) = mem_pair(Duration::from_secs(10));
            let sent = std::thread::spawn(move || {
                a.send(&garbage).unwrap();
                a
            });
            let Err(e) = senders_tuples(&mut b, &p, &mut Prg::from_seed(Block::from(3))) else {
                panic!("garbage taken for a public key")
            };
            assert!(matches!(e, Error::Protocol { .. }), "{e}");
            drop(sent.join());
        }
    }
}
