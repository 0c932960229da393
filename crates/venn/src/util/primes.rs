//! Primes of 64 bits: a deterministic test, the next one, the next one that batches
//! (field moduli, BFV's plaintext moduli).

/// Whether `n` is prime: Miller–Rabin with the first twelve primes as bases, which is
/// exact for every n < 3.3·10^24 (Sorenson–Webster), so for every u64.
pub fn is_prime(n: u64) -> bool {
    const BASES: [u64; 12] = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37];
    if n < 2 {
        return false;
    }
    if let Some(&p) = BASES.iter().find(|&&p| n.is_multiple_of(p)) {
        return n == p;
    }
    let (mul, pow) = (|a, b| mul_mod(a, b, n), |a, e| pow_mod(a, e, n));
    let (s, d) = (
        (n - 1).trailing_zeros(),
        (n - 1) >> (n - 1).trailing_zeros(),
    );
    BASES.iter().all(|&a| {
        let mut x = pow(a, d);
        if x == 1 || x == n - 1 {
            return true;
        }
        (1..s).any(|_| {
            x = mul(x, x);
            x == n - 1
        })
    })
}

/// `a·b mod n`.
fn mul_mod(a: u64, b: u64, n: u64) -> u64 {
    (u128::from(a) * u128::from(b) % u128::from(n)) as u64
}

/// `a^e mod n`, by squaring and multiplying (variable time: for public values).
pub fn pow_mod(mut a: u64, mut e: u64, n: u64) -> u64 {
    let mut r = 1 % n;
    while e > 0 {
        if e & 1 == 1 {
            r = mul_mod(r, a, n);
        }
        a = mul_mod(a, a, n);
        e >>= 1;
    }
    r
}

/// The smallest prime `≥ n`.
pub fn next_prime(n: u64) -> u64 {
    (n.max(2)..)
        .find(|&p| is_prime(p))
        .expect("a prime below 2^64")
}

/// A prime `t ≡ 1 (mod 2·degree)` with `t ≥ least`, a plaintext modulus that packs
/// `degree` slots: the first of the progression from ⌈least/2N⌉·2N + 1, which passes over
/// `least` itself where `least ≡ 1 (mod 2N)` (kbm23's field is this, for both parties
/// alike, so it stays).
pub fn batching_prime(degree: usize, least: u64) -> u64 {
    let step = 2 * degree as u64;
    let first = least.max(2).div_ceil(step) * step + 1;
    (first..)
        .step_by(step as usize)
        .find(|&t| is_prime(t))
        .expect("a prime in the progression")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primes_are_found_exactly() {
        let small: Vec<u64> = (0..50).filter(|&n| is_prime(n)).collect();
        assert_eq!(
            small,
            [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47]
        );
        // KBM23's authors' MODULUS constants: nextprime(3·2^σ₂ + 2).
        for (sigma2, q) in [(12, 12301), (10, 3079), (8, 773), (6, 197)] {
            assert_eq!(next_prime(3 * (1 << sigma2) + 2), q);
        }
        assert!(is_prime(65537) && is_prime((1 << 61) - 1));
        assert!(
            !is_prime(3_215_031_751),
            "a strong pseudoprime to bases 2, 3, 5, 7"
        );
        assert!(!is_prime(((1u64 << 32) - 5) * ((1 << 31) - 1)));
        assert_eq!(batching_prime(8192, 2), 65537);
        let t = batching_prime(4096, 1 << 20);
        assert!(is_prime(t) && t % 8192 == 1);
        assert!((1 << 20..(1 << 20) + 8192 * 64).contains(&t), "{t}");
    }
}
