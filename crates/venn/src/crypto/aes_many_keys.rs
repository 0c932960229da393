//! AES-128 under many keys, each used once: `out[i] = AES_{keys[i]}(inputs[i])`, the
//! standard-model PRF of RR17's F_encode (§4), where every OT delivers a fresh key.
//!
//! Expanding a key is as much work as the encryption, and the `aes` crate expands both
//! the encryption and the decryption schedule and moves them about (more than half the
//! time of `rr17-de-sm` went there). Here each round key is derived just before the round
//! that uses it (FIPS 197 §5.2, `SubWord(RotWord(·))` by AESENCLAST), and eight keys
//! (sixteen with VAES) go through the rounds side by side so the AES unit's latency is
//! hidden. Falls back to the `aes` crate on CPUs without AES-NI. Checked against
//! [`super::Aes`] in the tests.

use super::{Aes, Block};
#[cfg(target_arch = "x86_64")]
use crate::util::cpu::{self, Feature};

/// Keys processed side by side.
const LANES: usize = 8;

/// `out[i] = AES-128_{keys[i]}(inputs[i])` for every i.
pub fn encrypt_under_keys(keys: &[Block], inputs: &[Block], out: &mut [Block]) {
    assert!(keys.len() == inputs.len() && keys.len() == out.len());
    #[cfg(target_arch = "x86_64")]
    if cpu::has_all(&[Feature::Vaes, Feature::Avx2]) {
        let mut k = keys.chunks_exact(2 * WIDE);
        let mut x = inputs.chunks_exact(2 * WIDE);
        let mut o = out.chunks_exact_mut(2 * WIDE);
        for ((k, x), o) in (&mut k).zip(&mut x).zip(&mut o) {
            // SAFETY: the features the function is compiled for were detected (`cpu::has`).
            unsafe { vaes::encrypt::<WIDE>(k, x, o) };
        }
        let (k, x, o) = (k.remainder(), x.remainder(), o.into_remainder());
        return encrypt_narrow(k, x, o);
    }
    encrypt_narrow(keys, inputs, out)
}

/// Pairs of keys processed side by side with VAES.
const WIDE: usize = 8;

/// [`encrypt_under_keys`] with 128-bit AES-NI, or the `aes` crate.
fn encrypt_narrow(keys: &[Block], inputs: &[Block], out: &mut [Block]) {
    #[cfg(target_arch = "x86_64")]
    if cpu::has_all(&[Feature::Aes, Feature::Ssse3]) {
        let mut k = keys.chunks_exact(LANES);
        let mut x = inputs.chunks_exact(LANES);
        let mut o = out.chunks_exact_mut(LANES);
        for ((k, x), o) in (&mut k).zip(&mut x).zip(&mut o) {
            // SAFETY: the features the function is compiled for were detected (`cpu::has`).
            unsafe { ni::encrypt::<LANES>(k, x, o) };
        }
        for ((k, x), o) in k
            .remainder()
            .iter()
            .zip(x.remainder())
            .zip(o.into_remainder())
        {
            // SAFETY: as above.
            unsafe { ni::encrypt::<1>(&[*k], &[*x], std::slice::from_mut(o)) };
        }
        return;
    }
    for ((&k, &x), o) in keys.iter().zip(inputs).zip(out) {
        *o = Aes::new(k).encrypt(x);
    }
}

#[cfg(target_arch = "x86_64")]
mod ni {
    use super::Block;
    use std::arch::x86_64::*;

    /// The next round key from `key` and `assist`, which holds `SubWord(RotWord(w3)) ⊕
    /// rcon` in every word (FIPS 197 §5.2: `w[i] = w[i−1] ⊕ w[i−4]` folded into prefix
    /// XORs of the four words).
    ///
    /// # Safety
    /// The CPU has SSE2 (x86-64 always does): inlined into [`encrypt`], compiled for it.
    #[inline(always)]
    unsafe fn next_key(key: __m128i, assist: __m128i) -> __m128i {
        // SAFETY: SSE2 (the caller's contract).
        unsafe {
            let mut k = key;
            k = _mm_xor_si128(k, _mm_slli_si128::<4>(k));
            k = _mm_xor_si128(k, _mm_slli_si128::<8>(k));
            _mm_xor_si128(k, assist)
        }
    }

    /// One round on every lane: expand each key with `RCON`, then `AESENC` (or
    /// `AESENCLAST`) under it. `SubWord(RotWord(w3)) ⊕ rcon` comes from AESENCLAST on
    /// w3 rotated into every column (ShiftRows then moves nothing), which pipelines
    /// better than AESKEYGENASSIST.
    macro_rules! round {
        ($keys:ident, $state:ident, $rcon:literal, $enc:ident) => {
            let rot = _mm_set_epi8(
                12, 15, 14, 13, 12, 15, 14, 13, 12, 15, 14, 13, 12, 15, 14, 13,
            );
            let rcon = _mm_set1_epi32($rcon);
            for l in 0..L {
                let assist = _mm_aesenclast_si128(_mm_shuffle_epi8($keys[l], rot), rcon);
                // SAFETY: SSE2, which `encrypt` is compiled for.
                $keys[l] = unsafe { next_key($keys[l], assist) };
                $state[l] = $enc($state[l], $keys[l]);
            }
        };
    }

    /// `out[l] = AES-128_{keys[l]}(inputs[l])` for `L` lanes.
    ///
    /// # Safety
    /// The CPU has AES-NI and SSSE3.
    #[target_feature(enable = "aes,sse2,ssse3")]
    pub(super) unsafe fn encrypt<const L: usize>(
        keys: &[Block],
        inputs: &[Block],
        out: &mut [Block],
    ) {
        // A Block's little-endian bytes are the AES block and key bytes (as in `Aes`).
        // SAFETY: `b` is the 16 bytes the load reads, at any alignment.
        let load = |b: &Block| unsafe { _mm_loadu_si128((b as *const Block).cast()) };
        let mut k: [__m128i; L] = std::array::from_fn(|l| load(&keys[l]));
        let mut s: [__m128i; L] = std::array::from_fn(|l| _mm_xor_si128(load(&inputs[l]), k[l]));
        round!(k, s, 0x01, _mm_aesenc_si128);
        round!(k, s, 0x02, _mm_aesenc_si128);
        round!(k, s, 0x04, _mm_aesenc_si128);
        round!(k, s, 0x08, _mm_aesenc_si128);
        round!(k, s, 0x10, _mm_aesenc_si128);
        round!(k, s, 0x20, _mm_aesenc_si128);
        round!(k, s, 0x40, _mm_aesenc_si128);
        round!(k, s, 0x80, _mm_aesenc_si128);
        round!(k, s, 0x1b, _mm_aesenc_si128);
        round!(k, s, 0x36, _mm_aesenclast_si128);
        for (o, s) in out.iter_mut().zip(s) {
            // SAFETY: `o` is the 16 bytes the store writes, at any alignment.
            unsafe { _mm_storeu_si128((o as *mut Block).cast(), s) };
        }
    }
}

/// The same rounds on 256-bit vectors: two keys per register (VAES, AVX2).
#[cfg(target_arch = "x86_64")]
mod vaes {
    use super::Block;
    use std::arch::x86_64::*;

    /// [`super::ni`]'s next round key, for the two keys of a register.
    ///
    /// # Safety
    /// The CPU has AVX2: inlined into [`encrypt`], compiled for it.
    #[inline(always)]
    unsafe fn next_key(key: __m256i, assist: __m256i) -> __m256i {
        // SAFETY: AVX2 (the caller's contract).
        unsafe {
            let mut k = key;
            k = _mm256_xor_si256(k, _mm256_slli_si256::<4>(k));
            k = _mm256_xor_si256(k, _mm256_slli_si256::<8>(k));
            _mm256_xor_si256(k, assist)
        }
    }

    macro_rules! round {
        ($keys:ident, $state:ident, $rcon:literal, $enc:ident) => {
            let rot = _mm256_set_epi8(
                12, 15, 14, 13, 12, 15, 14, 13, 12, 15, 14, 13, 12, 15, 14, 13, 12, 15, 14, 13, 12,
                15, 14, 13, 12, 15, 14, 13, 12, 15, 14, 13,
            );
            let rcon = _mm256_set1_epi32($rcon);
            for l in 0..P {
                let assist = _mm256_aesenclast_epi128(_mm256_shuffle_epi8($keys[l], rot), rcon);
                // SAFETY: AVX2, which `encrypt` is compiled for.
                $keys[l] = unsafe { next_key($keys[l], assist) };
                $state[l] = $enc($state[l], $keys[l]);
            }
        };
    }

    /// `out[i] = AES-128_{keys[i]}(inputs[i])` for `2P` keys.
    ///
    /// # Safety
    /// The CPU has AVX2 and VAES.
    #[target_feature(enable = "avx2,vaes")]
    pub(super) unsafe fn encrypt<const P: usize>(
        keys: &[Block],
        inputs: &[Block],
        out: &mut [Block],
    ) {
        // The 256-bit loads and stores below read and write two blocks from each start.
        assert!(keys.len() >= 2 * P && inputs.len() >= 2 * P && out.len() >= 2 * P);
        // SAFETY: `b` starts at block 2l < 2P of a slice of 2P or more: two blocks, the 32
        // bytes the load reads, at any alignment.
        let load = |b: &[Block]| unsafe { _mm256_loadu_si256(b.as_ptr().cast()) };
        let mut k: [__m256i; P] = std::array::from_fn(|l| load(&keys[2 * l..]));
        let mut s: [__m256i; P] =
            std::array::from_fn(|l| _mm256_xor_si256(load(&inputs[2 * l..]), k[l]));
        round!(k, s, 0x01, _mm256_aesenc_epi128);
        round!(k, s, 0x02, _mm256_aesenc_epi128);
        round!(k, s, 0x04, _mm256_aesenc_epi128);
        round!(k, s, 0x08, _mm256_aesenc_epi128);
        round!(k, s, 0x10, _mm256_aesenc_epi128);
        round!(k, s, 0x20, _mm256_aesenc_epi128);
        round!(k, s, 0x40, _mm256_aesenc_epi128);
        round!(k, s, 0x80, _mm256_aesenc_epi128);
        round!(k, s, 0x1b, _mm256_aesenc_epi128);
        round!(k, s, 0x36, _mm256_aesenclast_epi128);
        for (l, s) in s.iter().enumerate() {
            // SAFETY: blocks 2l and 2l + 1 of `out`, inside its 2P or more (asserted).
            unsafe { _mm256_storeu_si256(out[2 * l..].as_mut_ptr().cast(), *s) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Prg;
    use crate::util::cpu::{with_level, Level};

    /// Each path (VAES runs of sixteen keys, AES-NI runs of eight and single keys, the
    /// crate) at the levels that take it, at lengths around each run's.
    #[test]
    fn matches_aes_under_each_key() {
        let mut prg = Prg::from_seed(Block::from(4));
        for n in [0, 1, 7, 8, 9, 15, 16, 17, 33, 100] {
            let keys: Vec<Block> = (0..n).map(|_| prg.block()).collect();
            let inputs: Vec<Block> = (0..n).map(|_| prg.block()).collect();
            let want: Vec<Block> = (0..n)
                .map(|i| Aes::new(keys[i]).encrypt(inputs[i]))
                .collect();
            for level in Level::ALL {
                let mut out = vec![Block::ZERO; n];
                with_level(level, || encrypt_under_keys(&keys, &inputs, &mut out));
                assert_eq!(out, want, "{level:?}, n = {n}");
            }
        }
    }

    #[test]
    fn fips_197_appendix_c1() {
        let key = Block::from_le_bytes(
            *b"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f",
        );
        let plain = Block::from_le_bytes(
            *b"\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee\xff",
        );
        let expected = *b"\x69\xc4\xe0\xd8\x6a\x7b\x04\x30\xd8\xcd\xb7\x80\x70\xb4\xc5\x5a";
        for level in Level::ALL {
            let mut out = [Block::ZERO];
            with_level(level, || encrypt_under_keys(&[key], &[plain], &mut out));
            assert_eq!(out[0].to_le_bytes(), expected, "{level:?}");
        }
    }
}
