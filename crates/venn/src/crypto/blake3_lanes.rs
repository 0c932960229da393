//! BLAKE3 keyed-XOF output blocks of 64-byte messages, eight at a time with AVX2.
//!
//! For a one-block message M and key K, output block t of BLAKE3's keyed XOF is one
//! compression: `compress(K, M, t, 64, CHUNK_START | CHUNK_END | ROOT | KEYED_HASH)`
//! (BLAKE3 specification §2.6: the root's output blocks differ only in the counter).
//! [`xof_blocks`] returns the first 32 bytes of that block for up to eight pairs (M, t),
//! one compression per 32-bit lane of eight. Without AVX2 it asks the `blake3` crate for
//! the same bytes; the tests check both against the crate.

use super::Row512;

/// Messages per call.
pub const LANES: usize = 8;

/// The first 32 bytes of output block `counters[l]` of BLAKE3-keyed(`key`, `rows[l]`), as
/// little-endian words, for each of the `rows.len() ≤ LANES` rows.
pub fn xof_blocks(key: &[u32; 8], rows: &[Row512], counters: &[u64]) -> [[u32; 8]; LANES] {
    assert!(rows.len() <= LANES && rows.len() == counters.len());
    #[cfg(target_arch = "x86_64")]
    if !rows.is_empty() && std::is_x86_feature_detected!("avx2") {
        // Lanes past the rows repeat the last; their outputs are ignored.
        let at = |l: usize| l.min(rows.len() - 1);
        let lanes = std::array::from_fn(|l| &rows[at(l)]);
        let counters = std::array::from_fn(|l| counters[at(l)]);
        // SAFETY: the feature the function is compiled for was detected above.
        return unsafe { avx2::compress(key, lanes, counters) };
    }
    let mut out = [[0u32; 8]; LANES];
    for ((o, row), &t) in out.iter_mut().zip(rows).zip(counters) {
        *o = with_crate(key, row, t);
    }
    out
}

/// One output block's first 32 bytes through the `blake3` crate.
fn with_crate(key: &[u32; 8], row: &Row512, t: u64) -> [u32; 8] {
    let mut k = [0u8; 32];
    for (c, w) in k.chunks_exact_mut(4).zip(key) {
        c.copy_from_slice(&w.to_le_bytes());
    }
    let mut message = [0u8; 64];
    for (c, x) in message.chunks_exact_mut(16).zip(row) {
        c.copy_from_slice(&x.to_le_bytes());
    }
    let mut reader = blake3::Hasher::new_keyed(&k)
        .update(&message)
        .finalize_xof();
    reader.set_position(64 * t);
    let mut bytes = [0u8; 32];
    reader.fill(&mut bytes);
    std::array::from_fn(|i| u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().expect("4")))
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Row512, LANES};
    use std::arch::x86_64::*;

    /// The BLAKE3 IV (SHA-256's), specification §2.2.
    const IV: [u32; 4] = [0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A];
    /// CHUNK_START | CHUNK_END | ROOT | KEYED_HASH (specification §2.1, Table 3).
    const FLAGS: u32 = 1 | 2 | 8 | 16;
    /// The message word permutation applied between rounds (specification §2.2).
    const PERMUTATION: [usize; 16] = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8];

    /// Round r's message word order: the permutation applied r times.
    const fn schedule() -> [[usize; 16]; 7] {
        let mut s = [[0usize; 16]; 7];
        let mut i = 0;
        while i < 16 {
            s[0][i] = i;
            i += 1;
        }
        let mut r = 1;
        while r < 7 {
            let mut i = 0;
            while i < 16 {
                s[r][i] = s[r - 1][PERMUTATION[i]];
                i += 1;
            }
            r += 1;
        }
        s
    }
    const SCHEDULE: [[usize; 16]; 7] = schedule();

    #[inline(always)]
    unsafe fn add(a: __m256i, b: __m256i) -> __m256i {
        _mm256_add_epi32(a, b)
    }

    #[inline(always)]
    unsafe fn xor(a: __m256i, b: __m256i) -> __m256i {
        _mm256_xor_si256(a, b)
    }

    /// The byte order that rotates each 32-bit word right by `bytes` bytes (a shuffle
    /// within each word, in both 128-bit halves).
    const fn byte_rotation(bytes: usize) -> [u8; 32] {
        let mut order = [0u8; 32];
        let mut i = 0;
        while i < 32 {
            order[i] = (i % 16 / 4 * 4 + (i % 4 + bytes) % 4) as u8;
            i += 1;
        }
        order
    }
    const ROT16: [u8; 32] = byte_rotation(2);
    const ROT8: [u8; 32] = byte_rotation(1);

    #[inline(always)]
    unsafe fn rotate_bytes(x: __m256i, order: &[u8; 32]) -> __m256i {
        _mm256_shuffle_epi8(x, _mm256_loadu_si256(order.as_ptr().cast()))
    }

    #[inline(always)]
    unsafe fn rot12(x: __m256i) -> __m256i {
        _mm256_or_si256(_mm256_srli_epi32::<12>(x), _mm256_slli_epi32::<20>(x))
    }

    #[inline(always)]
    unsafe fn rot7(x: __m256i) -> __m256i {
        _mm256_or_si256(_mm256_srli_epi32::<7>(x), _mm256_slli_epi32::<25>(x))
    }

    /// The quarter-round G on columns or diagonals (a, b, c, d) with message words x, y.
    #[inline(always)]
    unsafe fn g(v: &mut [__m256i; 16], [a, b, c, d]: [usize; 4], x: __m256i, y: __m256i) {
        v[a] = add(add(v[a], v[b]), x);
        v[d] = rotate_bytes(xor(v[d], v[a]), &ROT16);
        v[c] = add(v[c], v[d]);
        v[b] = rot12(xor(v[b], v[c]));
        v[a] = add(add(v[a], v[b]), y);
        v[d] = rotate_bytes(xor(v[d], v[a]), &ROT8);
        v[c] = add(v[c], v[d]);
        v[b] = rot7(xor(v[b], v[c]));
    }

    /// Round `R`: G on the columns, then on the diagonals (specification §2.2), with the
    /// message words in round R's order (a constant, so the rounds unroll).
    #[inline(always)]
    unsafe fn round<const R: usize>(v: &mut [__m256i; 16], m: &[__m256i; 16]) {
        let s = &SCHEDULE[R];
        g(v, [0, 4, 8, 12], m[s[0]], m[s[1]]);
        g(v, [1, 5, 9, 13], m[s[2]], m[s[3]]);
        g(v, [2, 6, 10, 14], m[s[4]], m[s[5]]);
        g(v, [3, 7, 11, 15], m[s[6]], m[s[7]]);
        g(v, [0, 5, 10, 15], m[s[8]], m[s[9]]);
        g(v, [1, 6, 11, 12], m[s[10]], m[s[11]]);
        g(v, [2, 7, 8, 13], m[s[12]], m[s[13]]);
        g(v, [3, 4, 9, 14], m[s[14]], m[s[15]]);
    }

    /// Transposes the 8×8 matrix of 32-bit words whose rows are `r`.
    #[inline(always)]
    unsafe fn transpose(r: [__m256i; 8]) -> [__m256i; 8] {
        let t: [__m256i; 8] = std::array::from_fn(|i| {
            let (a, b) = (r[i / 2 * 2], r[i / 2 * 2 + 1]);
            if i % 2 == 0 {
                _mm256_unpacklo_epi32(a, b)
            } else {
                _mm256_unpackhi_epi32(a, b)
            }
        });
        // u[4h + k]: word k (and k + 4) of rows 4h..4h + 4.
        let u: [__m256i; 8] = std::array::from_fn(|i| {
            let (h, k) = (i / 4, i % 4);
            let (a, b) = (t[4 * h + k / 2], t[4 * h + k / 2 + 2]);
            if k % 2 == 0 {
                _mm256_unpacklo_epi64(a, b)
            } else {
                _mm256_unpackhi_epi64(a, b)
            }
        });
        std::array::from_fn(|w| {
            if w < 4 {
                _mm256_permute2x128_si256::<0x20>(u[w], u[4 + w])
            } else {
                _mm256_permute2x128_si256::<0x31>(u[w - 4], u[w])
            }
        })
    }

    /// The eight compressions, lane l on `rows[l]` with counter `counters[l]`.
    #[target_feature(enable = "avx2")]
    pub unsafe fn compress(
        key: &[u32; 8],
        rows: [&Row512; LANES],
        counters: [u64; LANES],
    ) -> [[u32; 8]; LANES] {
        // A row's 64 bytes are its 16 message words (little-endian, as x86 stores them).
        let half = |h: usize| -> [__m256i; 8] {
            std::array::from_fn(|l| _mm256_loadu_si256((rows[l].as_ptr() as *const __m256i).add(h)))
        };
        let (low, high) = (transpose(half(0)), transpose(half(1)));
        let m: [__m256i; 16] = std::array::from_fn(|i| if i < 8 { low[i] } else { high[i - 8] });
        let lane_words = |f: fn(u64) -> u32| {
            let w: [u32; LANES] = std::array::from_fn(|l| f(counters[l]));
            _mm256_loadu_si256(w.as_ptr() as *const __m256i)
        };
        let mut v: [__m256i; 16] = std::array::from_fn(|i| match i {
            0..=7 => _mm256_set1_epi32(key[i] as i32),
            8..=11 => _mm256_set1_epi32(IV[i - 8] as i32),
            12 => lane_words(|t| t as u32),
            13 => lane_words(|t| (t >> 32) as u32),
            14 => _mm256_set1_epi32(64),
            _ => _mm256_set1_epi32(FLAGS as i32),
        });
        round::<0>(&mut v, &m);
        round::<1>(&mut v, &m);
        round::<2>(&mut v, &m);
        round::<3>(&mut v, &m);
        round::<4>(&mut v, &m);
        round::<5>(&mut v, &m);
        round::<6>(&mut v, &m);
        let words = transpose(std::array::from_fn(|i| xor(v[i], v[i + 8])));
        let mut out = [[0u32; 8]; LANES];
        for (o, w) in out.iter_mut().zip(words) {
            _mm256_storeu_si256(o.as_mut_ptr() as *mut __m256i, w);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lane_is_the_crates_xof_block_at_its_counter() {
        let key: [u32; 8] = std::array::from_fn(|i| 0x9e37_79b9u32.wrapping_mul(i as u32 + 1));
        let rows: Vec<Row512> = (0..11u128)
            .map(|i| [i, i.wrapping_mul(0x1234_5678_9abc_def1) ^ !0, i << 77, !i])
            .collect();
        let counters: Vec<u64> = (0..11u64).map(|i| i * 0x1_0000_0001 + 3).collect();
        for n in [1, 5, 8] {
            for first in [0, 3] {
                let out = xof_blocks(&key, &rows[first..first + n], &counters[first..first + n]);
                for l in 0..n {
                    let reference = with_crate(&key, &rows[first + l], counters[first + l]);
                    assert_eq!(out[l], reference, "{n} lanes from {first}, lane {l}");
                }
            }
        }
    }

    #[test]
    fn output_block_zero_is_the_keyed_hash() {
        let key = [7u32; 8];
        let row = [1u128, 2, 3, 4];
        let mut k = [0u8; 32];
        for (c, w) in k.chunks_exact_mut(4).zip(&key) {
            c.copy_from_slice(&w.to_le_bytes());
        }
        let mut message = Vec::new();
        for x in row {
            message.extend_from_slice(&x.to_le_bytes());
        }
        let digest = blake3::keyed_hash(&k, &message);
        let words = xof_blocks(&key, &[row], &[0])[0];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(&bytes[..], digest.as_bytes());
    }
}
