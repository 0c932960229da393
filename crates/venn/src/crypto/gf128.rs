//! Arithmetic in GF(2^128) = GF(2)[X] / (X^128 + X^7 + X^2 + X + 1), the field of the KOS15
//! correlation check. Bit `i` of a [`Block`] is the coefficient of `X^i`.
//!
//! Inner products accumulate unreduced 256-bit carry-less products and reduce once at the
//! end; on x86-64 with PCLMULQDQ each product is four carry-less 64×64 multiplications.

use super::Block;

/// `Σ a[i] · b[i]` in GF(2^128).
pub fn inner_product(a: &[Block], b: &[Block]) -> Block {
    assert_eq!(a.len(), b.len());
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("pclmulqdq") && std::is_x86_feature_detected!("sse2") {
        // SAFETY: the features the function is compiled for were detected above.
        let (lo, hi) = unsafe { clmul::inner_product_wide(a, b) };
        return reduce(lo, hi);
    }
    portable_inner_product(a, b)
}

/// `a · b` in GF(2^128).
pub fn mul(a: Block, b: Block) -> Block {
    inner_product(&[a], &[b])
}

/// The unreduced 256-bit product of `a` and `b` as (low, high) halves, bit by bit.
fn portable_mul_wide(a: Block, b: Block) -> (Block, Block) {
    let (mut lo, mut hi) = (0 as Block, 0 as Block);
    for i in 0..128 {
        if (b >> i) & 1 == 1 {
            lo ^= a << i;
            if i > 0 {
                hi ^= a >> (128 - i);
            }
        }
    }
    (lo, hi)
}

fn portable_inner_product(a: &[Block], b: &[Block]) -> Block {
    let (mut lo, mut hi) = (0, 0);
    for (&x, &y) in a.iter().zip(b) {
        let (l, h) = portable_mul_wide(x, y);
        lo ^= l;
        hi ^= h;
    }
    reduce(lo, hi)
}

/// Reduces `hi · X^128 + lo` modulo `X^128 + X^7 + X^2 + X + 1`.
fn reduce(lo: Block, hi: Block) -> Block {
    // X^128 ≡ X^7 + X^2 + X + 1: fold `hi` down twice (the second fold has at most 7 bits).
    let fold = |h: Block| -> (Block, Block) {
        let l = h ^ (h << 1) ^ (h << 2) ^ (h << 7);
        let overflow = (h >> 127) ^ (h >> 126) ^ (h >> 121);
        (l, overflow)
    };
    let (l1, o1) = fold(hi);
    let (l2, _) = fold(o1);
    lo ^ l1 ^ l2
}

#[cfg(target_arch = "x86_64")]
mod clmul {
    use super::Block;
    use std::arch::x86_64::*;

    /// `Σ a[i]·b[i]` as an unreduced (low, high) pair.
    #[target_feature(enable = "pclmulqdq,sse2")]
    pub unsafe fn inner_product_wide(a: &[Block], b: &[Block]) -> (Block, Block) {
        let mut lo = _mm_setzero_si128();
        let mut mid = _mm_setzero_si128();
        let mut hi = _mm_setzero_si128();
        for (&x, &y) in a.iter().zip(b) {
            let x = _mm_set_epi64x((x >> 64) as i64, x as i64);
            let y = _mm_set_epi64x((y >> 64) as i64, y as i64);
            lo = _mm_xor_si128(lo, _mm_clmulepi64_si128(x, y, 0x00));
            mid = _mm_xor_si128(mid, _mm_clmulepi64_si128(x, y, 0x10));
            mid = _mm_xor_si128(mid, _mm_clmulepi64_si128(x, y, 0x01));
            hi = _mm_xor_si128(hi, _mm_clmulepi64_si128(x, y, 0x11));
        }
        let get = |v: __m128i| {
            let mut out = [0u8; 16];
            _mm_storeu_si128(out.as_mut_ptr().cast(), v);
            u128::from_le_bytes(out)
        };
        let (lo, mid, hi) = (get(lo), get(mid), get(hi));
        (lo ^ (mid << 64), hi ^ (mid >> 64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Prg;

    #[test]
    fn field_laws_and_agreement_with_the_portable_version() {
        let mut prg = Prg::from_seed(11);
        let v: Vec<Block> = (0..64).map(|_| prg.block()).collect();
        assert_eq!(mul(v[0], 1), v[0], "1 is the identity");
        assert_eq!(mul(v[0], 0), 0);
        assert_eq!(mul(v[0], v[1]), mul(v[1], v[0]), "commutative");
        assert_eq!(
            mul(mul(v[0], v[1]), v[2]),
            mul(v[0], mul(v[1], v[2])),
            "associative"
        );
        assert_eq!(
            mul(v[0], v[1] ^ v[2]),
            mul(v[0], v[1]) ^ mul(v[0], v[2]),
            "distributive"
        );
        // X^127 · X = X^128 = X^7 + X^2 + X + 1.
        assert_eq!(mul(1 << 127, 2), 0x87);
        assert_eq!(
            inner_product(&v[..32], &v[32..]),
            portable_inner_product(&v[..32], &v[32..])
        );
    }
}
