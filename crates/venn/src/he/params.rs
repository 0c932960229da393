//! BFV parameters, checked before `fhe` sees them: the ring degree N, the plaintext
//! modulus t and the ciphertext moduli's sizes.
//!
//! **Security.** The ciphertext modulus may take at most the bits the Homomorphic
//! Encryption Standard allows for 128-bit classical security at each N (Albrecht et al.,
//! 2018, Table 1, for a ternary secret: 27, 54, 109, 218, 438 and 881 bits at N = 2^10 …
//! 2^15). `fhe` samples its secret like its errors (a centred binomial of variance 10),
//! not ternary; the standard's bounds for secrets of the error distribution are a bit or
//! two larger, so the ternary ones hold with room.
//!
//! **Batching** (N slots a plaintext) needs t prime and t ≡ 1 (mod 2N). `fhe` takes
//! moduli sizes of 10 to 62 bits and picks primes of those sizes; it assumes every modulus
//! exceeds t (it negates t modulo each: a panic, or wrapped arithmetic in a release build),
//! so each modulus must be wider than t.

use super::product::Tensor;
use crate::util::primes::is_prime;
use crate::{Error, Result};
use fhe::bfv::BfvParameters;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// The largest ciphertext modulus, in bits, for 128-bit security at each ring degree (the
/// HE standard's table for ternary secrets).
const MAX_MODULUS_BITS: [(usize, usize); 6] = [
    (1 << 10, 27),
    (1 << 11, 54),
    (1 << 12, 109),
    (1 << 13, 218),
    (1 << 14, 438),
    (1 << 15, 881),
];

/// The sizes of a ciphertext modulus `fhe` can make.
const MODULUS_SIZES: std::ops::RangeInclusive<usize> = 10..=62;

/// The most ciphertext-modulus bits 128-bit security allows at ring degree `degree`, if
/// the standard covers it.
pub fn max_modulus_bits(degree: usize) -> Option<usize> {
    (MAX_MODULUS_BITS.iter())
        .find(|&&(n, _)| n == degree)
        .map(|&(_, bits)| bits)
}

/// A BFV parameter set: what `fhe` builds from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bfv {
    /// The ring degree N: slots a plaintext.
    pub degree: usize,
    /// The plaintext modulus t.
    pub plain: u64,
    /// The ciphertext moduli's sizes, in bits, largest first as `fhe` orders its levels.
    pub moduli: Vec<usize>,
}

impl Bfv {
    /// Refuses the set unless it is 128-bit secure, batches N slots and `fhe` can make it.
    pub fn check(&self) -> Result<()> {
        let (n, t) = (self.degree, self.plain);
        let bits: usize = self.moduli.iter().sum();
        let most = max_modulus_bits(n).ok_or_else(|| {
            Error::Params(format!(
                "BFV with N = {n}: a power of two from 2^10 to 2^15"
            ))
        })?;
        if bits > most {
            return Err(Error::Params(format!(
                "BFV with N = {n} and a {bits}-bit modulus is below 128-bit security (at most \
                 {most} bits)"
            )));
        }
        if !is_prime(t) || t % (2 * n as u64) != 1 {
            return Err(Error::Params(format!(
                "BFV's plaintext modulus {t} is not a prime ≡ 1 mod 2N = {}: no batching",
                2 * n
            )));
        }
        let t_bits = (u64::BITS - t.leading_zeros()) as usize;
        if let Some(&q) =
            (self.moduli.iter()).find(|&&q| !MODULUS_SIZES.contains(&q) || q <= t_bits)
        {
            return Err(Error::Params(format!(
                "BFV's ciphertext moduli are of 10 to 62 bits, each wider than t's {t_bits}: \
                 not {q}"
            )));
        }
        if self.moduli.is_empty() {
            return Err(Error::Params("BFV without a ciphertext modulus".into()));
        }
        Ok(())
    }

    /// The set for `fhe`, checked: made once a process and shared (making one takes
    /// about 80 ms: every modulus's NTT plans and the RNS converters), up to 16 sets;
    /// past them, made anew each time.
    pub fn build(&self) -> Result<Arc<BfvParameters>> {
        self.check()?;
        let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(set) = kept.iter().find(|k| k.bfv == *self) {
            return Ok(set.par.clone());
        }
        let par = fhe::bfv::BfvParametersBuilder::new()
            .set_degree(self.degree)
            .set_plaintext_modulus(self.plain)
            .set_moduli_sizes(&self.moduli)
            .build_arc()
            .map_err(|e| Error::Params(format!("BFV parameters {self:?}: {e}")))?;
        if kept.len() < MAX_KEPT {
            kept.push(Kept {
                bfv: self.clone(),
                par: par.clone(),
                tensor: Arc::new(OnceLock::new()),
            });
        }
        Ok(par)
    }
}

/// The most BFV sets a process keeps made ([`Bfv::build`]): Venn's ub-fhe sets and
/// kbm23's, with room.
const MAX_KEPT: usize = 16;

/// A BFV set made, and its products once made.
struct Kept {
    bfv: Bfv,
    par: Arc<BfvParameters>,
    tensor: Arc<OnceLock<Arc<Tensor>>>,
}

/// The sets made so far.
static KEPT: Mutex<Vec<Kept>> = Mutex::new(Vec::new());

/// Products of `par`'s ciphertexts at level 0 ([`Tensor`]: NTT plans and RNS constants
/// over Q ∪ P, about 10 ms to make): made once for a set [`Bfv::build`] keeps.
pub fn tensor(par: &Arc<BfvParameters>) -> Result<Arc<Tensor>> {
    let kept = (KEPT.lock().unwrap_or_else(PoisonError::into_inner).iter())
        .find(|k| Arc::ptr_eq(&k.par, par))
        .map(|k| k.tensor.clone());
    let Some(kept) = kept else {
        return Ok(Arc::new(Tensor::new(par, 0)?));
    };
    if let Some(made) = kept.get() {
        return Ok(made.clone());
    }
    // Another thread may make it meanwhile: the same either way.
    let _ = kept.set(Arc::new(Tensor::new(par, 0)?));
    Ok(kept.get().expect("set above").clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::primes::batching_prime;

    fn bfv(degree: usize, plain: u64, moduli: &[usize]) -> Bfv {
        Bfv {
            degree,
            plain,
            moduli: moduli.to_vec(),
        }
    }

    /// The sets the unbalanced-PSI spec found to work with `fhe` pass (t of 17, 20 and 24
    /// bits, 218 bits of modulus at N = 8192), and kbm23's; each fault is refused.
    #[test]
    fn sets_are_secure_batching_and_buildable() {
        let t20 = batching_prime(8192, (1 << 20) - (1 << 16));
        let t24 = batching_prime(8192, (1 << 24) - (1 << 18));
        assert!(t20 < 1 << 20 && t24 < 1 << 24, "{t20} {t24}");
        assert_eq!(batching_prime(8192, 2), 65537);
        for good in [
            bfv(8192, 65537, &[56, 56, 56, 50]),
            bfv(8192, t20, &[56, 56, 56, 50]),
            bfv(8192, t24, &[50, 50, 50, 38, 30]),
            bfv(8192, 65537, &[62, 62, 62]),
            bfv(4096, batching_prime(4096, 40000), &[60]),
        ] {
            good.check().unwrap();
        }
        for (bad, why) in [
            (bfv(8192, 65537, &[62, 62, 62, 60]), "security"),
            (bfv(4096, 40961, &[40, 32, 32, 10]), "security"),
            (bfv(8192, 65539, &[56]), "batching"),
            (bfv(8192, 40961, &[56]), "batching"),
            (bfv(8192, 65537, &[17, 56]), "t's"),
            (bfv(8192, t24, &[62, 20]), "wider than t's 24"),
            (bfv(8192, 65537, &[9]), "10 to 62"),
            (bfv(8192, 65537, &[63]), "10 to 62"),
            (bfv(8192, 65537, &[]), "without"),
            (bfv(3000, 65537, &[56]), "power of two"),
            (bfv(1 << 16, 65537, &[56]), "power of two"),
        ] {
            let e = bad.check().unwrap_err().to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        assert_eq!(max_modulus_bits(8192), Some(218));
        assert_eq!(max_modulus_bits(1 << 15), Some(881));
    }

    /// What passes the checks, `fhe` builds.
    #[test]
    fn checked_sets_build() {
        let built = bfv(8192, 65537, &[56, 56, 56, 50]).build().unwrap();
        assert_eq!(built.degree(), 8192);
        assert_eq!(built.plaintext(), 65537);
        assert!(bfv(8192, 65537, &[62, 62, 62, 62]).build().is_err());
    }
}
