//! One SHA-256 compression on each of four independent blocks at once, with the x86 SHA
//! extensions. A single compression is latency-bound (≈ 55 ns here); four interleaved
//! streams keep the SHA unit busy (≈ 39 ns each). Falls back to the `sha2` crate on CPUs
//! without SHA-NI. Checked against `sha2::compress256` in the tests.

#[cfg(target_arch = "x86_64")]
use crate::util::cpu::{self, Feature};
use sha2::digest::generic_array::GenericArray;

/// Lanes per call.
pub(super) const LANES: usize = 4;

/// `out[l] = compress256(iv, blocks[l])` for each lane.
pub(super) fn compress_lanes(iv: &[u32; 8], blocks: [&[u8; 64]; LANES]) -> [[u32; 8]; LANES] {
    compress_lanes_from([iv; LANES], blocks)
}

/// `out[l] = compress256(ivs[l], blocks[l])` for each lane (each its own chaining value).
pub(super) fn compress_lanes_from(
    ivs: [&[u32; 8]; LANES],
    blocks: [&[u8; 64]; LANES],
) -> [[u32; 8]; LANES] {
    #[cfg(target_arch = "x86_64")]
    if cpu::has_all(&[Feature::Sha, Feature::Sse2, Feature::Ssse3, Feature::Sse41]) {
        // SAFETY: the features the function is compiled for were detected (`cpu::has`).
        return unsafe { shani::compress_lanes(ivs, blocks) };
    }
    std::array::from_fn(|l| {
        let mut state = *ivs[l];
        sha2::compress256(&mut state, &[GenericArray::clone_from_slice(blocks[l])]);
        state
    })
}

#[cfg(target_arch = "x86_64")]
mod shani {
    use super::LANES;
    use std::arch::x86_64::*;

    /// The SHA-256 round constants, FIPS 180-4 §4.2.2.
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];

    /// The Intel SHA-extensions compression (as in the `sha2` crate's x86 backend), with
    /// every step applied to all lanes before the next so their latencies overlap.
    ///
    /// # Safety
    /// The CPU has SHA-NI, SSSE3 and SSE4.1.
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    pub(super) unsafe fn compress_lanes(
        ivs: [&[u32; 8]; LANES],
        blocks: [&[u8; 64]; LANES],
    ) -> [[u32; 8]; LANES] {
        let byte_swap = _mm_set_epi64x(0x0C0D_0E0F_0809_0A0B, 0x0405_0607_0001_0203);
        let (mut abef0, mut cdgh0) = ([_mm_setzero_si128(); LANES], [_mm_setzero_si128(); LANES]);
        for l in 0..LANES {
            let iv_ptr = ivs[l].as_ptr().cast::<__m128i>();
            // SAFETY: an IV is 8 words, 32 bytes: the two 16-byte loads, at any alignment.
            let (abcd, efgh) = unsafe { (_mm_loadu_si128(iv_ptr), _mm_loadu_si128(iv_ptr.add(1))) };
            let cdab = _mm_shuffle_epi32(abcd, 0xB1);
            let efgh = _mm_shuffle_epi32(efgh, 0x1B);
            abef0[l] = _mm_alignr_epi8(cdab, efgh, 8);
            cdgh0[l] = _mm_blend_epi16(efgh, cdab, 0xF0);
        }
        let mut abef = abef0;
        let mut cdgh = cdgh0;
        let mut w = [[_mm_setzero_si128(); 4]; LANES];
        for l in 0..LANES {
            let p = blocks[l].as_ptr().cast::<__m128i>();
            for (i, w) in w[l].iter_mut().enumerate() {
                // SAFETY: i < 4: the i-th 16 bytes of the block's 64, at any alignment.
                *w = _mm_shuffle_epi8(unsafe { _mm_loadu_si128(p.add(i)) }, byte_swap);
            }
        }
        for r in 0..16 {
            // SAFETY: r < 16: words 4r..4r + 4 of the 64 of `K`, at any alignment.
            let k = unsafe { _mm_loadu_si128(K.as_ptr().add(4 * r).cast::<__m128i>()) };
            for l in 0..LANES {
                let words = if r < 4 {
                    w[l][r]
                } else {
                    let v = &w[l];
                    let t1 = _mm_sha256msg1_epu32(v[r % 4], v[(r + 1) % 4]);
                    let t2 = _mm_alignr_epi8(v[(r + 3) % 4], v[(r + 2) % 4], 4);
                    let next = _mm_sha256msg2_epu32(_mm_add_epi32(t1, t2), v[(r + 3) % 4]);
                    w[l][r % 4] = next;
                    next
                };
                let t = _mm_add_epi32(words, k);
                cdgh[l] = _mm_sha256rnds2_epu32(cdgh[l], abef[l], t);
                abef[l] = _mm_sha256rnds2_epu32(abef[l], cdgh[l], _mm_shuffle_epi32(t, 0x0E));
            }
        }
        let mut out = [[0u32; 8]; LANES];
        for l in 0..LANES {
            let feba = _mm_shuffle_epi32(_mm_add_epi32(abef[l], abef0[l]), 0x1B);
            let dchg = _mm_shuffle_epi32(_mm_add_epi32(cdgh[l], cdgh0[l]), 0xB1);
            let (abcd, efgh) = (
                _mm_blend_epi16(feba, dchg, 0xF0),
                _mm_alignr_epi8(dchg, feba, 8),
            );
            let o = out[l].as_mut_ptr().cast::<__m128i>();
            // SAFETY: `out[l]` is 8 words, 32 bytes: the two 16-byte stores, at any alignment.
            unsafe {
                _mm_storeu_si128(o, abcd);
                _mm_storeu_si128(o.add(1), efgh);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::cpu::{with_level, Level};

    /// SHA-NI at the levels that allow it, the crate below.
    #[test]
    fn matches_sha2_crate() {
        for level in Level::ALL {
            with_level(level, matches_sha2_crate_at);
        }
    }

    fn matches_sha2_crate_at() {
        let iv = [1, 2, 3, 4, 5, 6, 7, 0x8000_0000];
        let mut blocks = [[0u8; 64]; LANES];
        for (l, b) in blocks.iter_mut().enumerate() {
            for (i, x) in b.iter_mut().enumerate() {
                *x = (i * 7 + l * 31) as u8;
            }
        }
        let got = compress_lanes(&iv, [&blocks[0], &blocks[1], &blocks[2], &blocks[3]]);
        let ivs: [[u32; 8]; LANES] = std::array::from_fn(|l| iv.map(|w| w ^ (l as u32 * 0x9E37)));
        let each = compress_lanes_from(
            [&ivs[0], &ivs[1], &ivs[2], &ivs[3]],
            [&blocks[0], &blocks[1], &blocks[2], &blocks[3]],
        );
        for l in 0..LANES {
            let mut s = iv;
            sha2::compress256(&mut s, &[GenericArray::clone_from_slice(&blocks[l])]);
            assert_eq!(got[l], s, "lane {l}");
            let mut s = ivs[l];
            sha2::compress256(&mut s, &[GenericArray::clone_from_slice(&blocks[l])]);
            assert_eq!(each[l], s, "lane {l}, its own chaining value");
        }
    }
}
