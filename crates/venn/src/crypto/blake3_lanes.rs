//! BLAKE3 keyed-XOF output blocks of 64-byte messages, sixteen at a time with AVX-512 or
//! eight at a time with AVX2.
//!
//! For a one-block message M and key K, output block t of BLAKE3's keyed XOF is one
//! compression: `compress(K, M, t, 64, CHUNK_START | CHUNK_END | ROOT | KEYED_HASH)`
//! (BLAKE3 specification §2.6: the root's output blocks differ only in the counter).
//! [`xof_blocks`] returns the first 32 bytes of that block for up to sixteen pairs (M, t),
//! one compression per 32-bit lane. Without AVX2 it asks the `blake3` crate for the same
//! bytes; the tests check every path against the crate.

use super::Row512;
#[cfg(target_arch = "x86_64")]
use crate::util::cpu::{self, Feature};

/// Messages per call.
pub(super) const LANES: usize = 16;

/// The first 32 bytes of output block `counters[l]` of BLAKE3-keyed(`key`, `rows[l]`), as
/// little-endian words, for each of the `rows.len() ≤ LANES` rows.
pub(super) fn xof_blocks(key: &[u32; 8], rows: &[Row512], counters: &[u64]) -> [[u32; 8]; LANES] {
    assert!(rows.len() <= LANES && rows.len() == counters.len());
    let mut out = [[0u32; 8]; LANES];
    #[cfg(target_arch = "x86_64")]
    if !rows.is_empty() {
        // Lanes past the rows repeat the last; their outputs are ignored.
        let at = |l: usize| l.min(rows.len() - 1);
        if cpu::has(Feature::Avx512f) {
            let lanes = std::array::from_fn(|l| &rows[at(l)]);
            let counters = std::array::from_fn(|l| counters[at(l)]);
            // SAFETY: the feature the function is compiled for was detected (`cpu::has`).
            return unsafe { simd::compress16(key, lanes, counters) };
        }
        if cpu::has(Feature::Avx2) {
            for half in 0..rows.len().div_ceil(8) {
                let lanes = std::array::from_fn(|l| &rows[at(8 * half + l)]);
                let counters = std::array::from_fn(|l| counters[at(8 * half + l)]);
                // SAFETY: as above.
                let eight = unsafe { simd::compress8(key, lanes, counters) };
                out[8 * half..8 * half + 8].copy_from_slice(&eight);
            }
            return out;
        }
    }
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
mod simd {
    use super::Row512;
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

    /// A register of 32-bit lanes, one compression in each: what a round needs of it.
    ///
    /// # Safety
    /// Every method needs the register's instruction set (AVX2, AVX-512F): it is called
    /// only from functions compiled for it, into which it is inlined.
    trait Lanes: Copy {
        unsafe fn splat(x: u32) -> Self;
        unsafe fn add(self, b: Self) -> Self;
        unsafe fn xor(self, b: Self) -> Self;
        /// Each lane rotated right by `N` bits (16, 12, 8 or 7).
        unsafe fn ror<const N: i32>(self) -> Self;
        /// Within each 128-bit lane, the low (or `high`) 32-bit words of `self` and `b`
        /// interleaved.
        unsafe fn unpack32(self, b: Self, high: bool) -> Self;
        /// The same for 64-bit words.
        unsafe fn unpack64(self, b: Self, high: bool) -> Self;
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

    /// AVX2: rotations by whole bytes as shuffles, the others as two shifts.
    impl Lanes for __m256i {
        #[inline(always)]
        unsafe fn splat(x: u32) -> Self {
            // SAFETY: AVX2 (the trait's contract).
            unsafe { _mm256_set1_epi32(x as i32) }
        }
        #[inline(always)]
        unsafe fn add(self, b: Self) -> Self {
            // SAFETY: AVX2 (the trait's contract).
            unsafe { _mm256_add_epi32(self, b) }
        }
        #[inline(always)]
        unsafe fn xor(self, b: Self) -> Self {
            // SAFETY: AVX2 (the trait's contract).
            unsafe { _mm256_xor_si256(self, b) }
        }
        #[inline(always)]
        unsafe fn ror<const N: i32>(self) -> Self {
            // SAFETY: AVX2 (the trait's contract); `order` is the 32 bytes the load reads.
            unsafe {
                let bytes = |order: &[u8; 32]| {
                    _mm256_shuffle_epi8(self, _mm256_loadu_si256(order.as_ptr().cast()))
                };
                match N {
                    16 => bytes(&ROT16),
                    8 => bytes(&ROT8),
                    12 => _mm256_or_si256(
                        _mm256_srli_epi32::<12>(self),
                        _mm256_slli_epi32::<20>(self),
                    ),
                    _ => {
                        _mm256_or_si256(_mm256_srli_epi32::<7>(self), _mm256_slli_epi32::<25>(self))
                    }
                }
            }
        }
        #[inline(always)]
        unsafe fn unpack32(self, b: Self, high: bool) -> Self {
            // SAFETY: AVX2 (the trait's contract).
            unsafe {
                match high {
                    false => _mm256_unpacklo_epi32(self, b),
                    true => _mm256_unpackhi_epi32(self, b),
                }
            }
        }
        #[inline(always)]
        unsafe fn unpack64(self, b: Self, high: bool) -> Self {
            // SAFETY: AVX2 (the trait's contract).
            unsafe {
                match high {
                    false => _mm256_unpacklo_epi64(self, b),
                    true => _mm256_unpackhi_epi64(self, b),
                }
            }
        }
    }

    /// AVX-512: rotations are one instruction.
    impl Lanes for __m512i {
        #[inline(always)]
        unsafe fn splat(x: u32) -> Self {
            // SAFETY: AVX-512F (the trait's contract).
            unsafe { _mm512_set1_epi32(x as i32) }
        }
        #[inline(always)]
        unsafe fn add(self, b: Self) -> Self {
            // SAFETY: AVX-512F (the trait's contract).
            unsafe { _mm512_add_epi32(self, b) }
        }
        #[inline(always)]
        unsafe fn xor(self, b: Self) -> Self {
            // SAFETY: AVX-512F (the trait's contract).
            unsafe { _mm512_xor_si512(self, b) }
        }
        #[inline(always)]
        unsafe fn ror<const N: i32>(self) -> Self {
            // SAFETY: AVX-512F (the trait's contract).
            unsafe { _mm512_ror_epi32::<N>(self) }
        }
        #[inline(always)]
        unsafe fn unpack32(self, b: Self, high: bool) -> Self {
            // SAFETY: AVX-512F (the trait's contract).
            unsafe {
                match high {
                    false => _mm512_unpacklo_epi32(self, b),
                    true => _mm512_unpackhi_epi32(self, b),
                }
            }
        }
        #[inline(always)]
        unsafe fn unpack64(self, b: Self, high: bool) -> Self {
            // SAFETY: AVX-512F (the trait's contract).
            unsafe {
                match high {
                    false => _mm512_unpacklo_epi64(self, b),
                    true => _mm512_unpackhi_epi64(self, b),
                }
            }
        }
    }

    /// The quarter-round G on columns or diagonals (a, b, c, d) with message words x, y.
    #[inline(always)]
    unsafe fn g<V: Lanes>(v: &mut [V; 16], [a, b, c, d]: [usize; 4], x: V, y: V) {
        // SAFETY: the CPU has `V`'s instruction set (the caller's contract).
        unsafe {
            v[a] = v[a].add(v[b]).add(x);
            v[d] = v[d].xor(v[a]).ror::<16>();
            v[c] = v[c].add(v[d]);
            v[b] = v[b].xor(v[c]).ror::<12>();
            v[a] = v[a].add(v[b]).add(y);
            v[d] = v[d].xor(v[a]).ror::<8>();
            v[c] = v[c].add(v[d]);
            v[b] = v[b].xor(v[c]).ror::<7>();
        }
    }

    /// Round `R`: G on the columns, then on the diagonals (specification §2.2), with the
    /// message words in round R's order (a constant, so the rounds unroll).
    #[inline(always)]
    unsafe fn round<V: Lanes, const R: usize>(v: &mut [V; 16], m: &[V; 16]) {
        // SAFETY: the CPU has `V`'s instruction set (the caller's contract).
        unsafe {
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
    }

    /// The compressions of message words `m` (word i of every lane in `m[i]`) under `key`
    /// with each lane's counter halves `(low, high)`; returns `v[i] ⊕ v[i + 8]`, i < 8.
    #[inline(always)]
    unsafe fn rounds<V: Lanes>(key: &[u32; 8], m: &[V; 16], low: V, high: V) -> [V; 8] {
        // SAFETY: the CPU has `V`'s instruction set (the caller's contract).
        unsafe {
            let mut v: [V; 16] = std::array::from_fn(|i| match i {
                0..=7 => V::splat(key[i]),
                8..=11 => V::splat(IV[i - 8]),
                12 => low,
                13 => high,
                14 => V::splat(64),
                _ => V::splat(FLAGS),
            });
            round::<V, 0>(&mut v, m);
            round::<V, 1>(&mut v, m);
            round::<V, 2>(&mut v, m);
            round::<V, 3>(&mut v, m);
            round::<V, 4>(&mut v, m);
            round::<V, 5>(&mut v, m);
            round::<V, 6>(&mut v, m);
            std::array::from_fn(|i| v[i].xor(v[i + 8]))
        }
    }

    /// The 4×4 transposes within each 128-bit lane of each four rows: `u[4q + i]` holds,
    /// in 128-bit lane k, word 4k + i of rows 4q..4q + 4 of `r`.
    #[inline(always)]
    unsafe fn within_lanes<V: Lanes, const N: usize>(r: [V; N]) -> [V; N] {
        // SAFETY: the CPU has `V`'s instruction set (the caller's contract).
        unsafe {
            let t: [V; N] =
                std::array::from_fn(|i| r[i / 2 * 2].unpack32(r[i / 2 * 2 + 1], i % 2 == 1));
            std::array::from_fn(|x| {
                let (q, i) = (x / 4, x % 4);
                t[4 * q + i / 2].unpack64(t[4 * q + i / 2 + 2], i % 2 == 1)
            })
        }
    }

    /// Transposes the 8×8 matrix of 32-bit words whose rows are `r`.
    #[inline(always)]
    unsafe fn transpose8(r: [__m256i; 8]) -> [__m256i; 8] {
        // SAFETY: AVX2 (the caller's contract).
        unsafe {
            // u[4h + k]: word k (and k + 4) of rows 4h..4h + 4.
            let u = within_lanes(r);
            std::array::from_fn(|w| {
                if w < 4 {
                    _mm256_permute2x128_si256::<0x20>(u[w], u[4 + w])
                } else {
                    _mm256_permute2x128_si256::<0x31>(u[w - 4], u[w])
                }
            })
        }
    }

    /// The lanes' counters' low and high words.
    #[inline(always)]
    fn counter_words<const L: usize>(counters: [u64; L]) -> ([u32; L], [u32; L]) {
        (
            std::array::from_fn(|l| counters[l] as u32),
            std::array::from_fn(|l| (counters[l] >> 32) as u32),
        )
    }

    /// Eight compressions, lane l on `rows[l]` with counter `counters[l]`.
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn compress8(
        key: &[u32; 8],
        rows: [&Row512; 8],
        counters: [u64; 8],
    ) -> [[u32; 8]; 8] {
        // A row's 64 bytes are its 16 message words (little-endian, as x86 stores them).
        let half = |h: usize| -> [__m256i; 8] {
            std::array::from_fn(|l| {
                // SAFETY: AVX2 (this function's contract); half `h` (0 or 1) of a row is its
                // 32 bytes from byte 32·h, inside its 64.
                unsafe { _mm256_loadu_si256((rows[l].as_ptr() as *const __m256i).add(h)) }
            })
        };
        // SAFETY: AVX2, all the helpers need (this function's contract).
        let (low, high) = unsafe { (transpose8(half(0)), transpose8(half(1))) };
        let m: [__m256i; 16] = std::array::from_fn(|i| if i < 8 { low[i] } else { high[i - 8] });
        let (t0, t1) = counter_words(counters);
        // SAFETY: AVX2; `w` is 8 words, the 32 bytes the load reads.
        let load = |w: &[u32; 8]| unsafe { _mm256_loadu_si256(w.as_ptr().cast()) };
        // SAFETY: AVX2, all the helpers need (this function's contract).
        let words = unsafe { transpose8(rounds(key, &m, load(&t0), load(&t1))) };
        let mut out = [[0u32; 8]; 8];
        for (o, w) in out.iter_mut().zip(words) {
            // SAFETY: AVX2; `o` is 8 words, the 32 bytes the store writes.
            unsafe { _mm256_storeu_si256(o.as_mut_ptr().cast(), w) };
        }
        out
    }

    /// Transposes the 16×16 matrix of 32-bit words whose rows are `r`: within each 128-bit
    /// lane by 32- then 64-bit unpacks, then the 4×4 matrix of 128-bit lanes.
    #[inline(always)]
    unsafe fn transpose16(r: [__m512i; 16]) -> [__m512i; 16] {
        // SAFETY: AVX-512F (the caller's contract).
        unsafe {
            let u = within_lanes(r);
            // Word 4k + i of all rows: lane k of u[i], u[4 + i], u[8 + i], u[12 + i].
            let mut out = [_mm512_setzero_si512(); 16];
            for i in 0..4 {
                let (a, b, c, d) = (u[i], u[4 + i], u[8 + i], u[12 + i]);
                let (ab01, ab23) = (
                    _mm512_shuffle_i32x4::<0x44>(a, b),
                    _mm512_shuffle_i32x4::<0xEE>(a, b),
                );
                let (cd01, cd23) = (
                    _mm512_shuffle_i32x4::<0x44>(c, d),
                    _mm512_shuffle_i32x4::<0xEE>(c, d),
                );
                out[i] = _mm512_shuffle_i32x4::<0x88>(ab01, cd01);
                out[4 + i] = _mm512_shuffle_i32x4::<0xDD>(ab01, cd01);
                out[8 + i] = _mm512_shuffle_i32x4::<0x88>(ab23, cd23);
                out[12 + i] = _mm512_shuffle_i32x4::<0xDD>(ab23, cd23);
            }
            out
        }
    }

    /// Sixteen compressions, lane l on `rows[l]` with counter `counters[l]`.
    ///
    /// # Safety
    /// The CPU has AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn compress16(
        key: &[u32; 8],
        rows: [&Row512; 16],
        counters: [u64; 16],
    ) -> [[u32; 8]; 16] {
        let loaded: [__m512i; 16] = std::array::from_fn(|l| {
            // SAFETY: AVX-512F (this function's contract); a row is the 64 bytes the load
            // reads.
            unsafe { _mm512_loadu_si512(rows[l].as_ptr().cast()) }
        });
        // SAFETY: AVX-512F, all the helper needs (this function's contract).
        let m = unsafe { transpose16(loaded) };
        let (t0, t1) = counter_words(counters);
        // SAFETY: AVX-512F; `w` is 16 words, the 64 bytes the load reads.
        let load = |w: &[u32; 16]| unsafe { _mm512_loadu_si512(w.as_ptr().cast()) };
        // SAFETY: AVX-512F, all the helper needs (this function's contract).
        let words = unsafe { rounds(key, &m, load(&t0), load(&t1)) };
        // Word i of every lane to each lane's eight words.
        let mut by_word = [[0u32; 16]; 8];
        for (b, w) in by_word.iter_mut().zip(words) {
            // SAFETY: AVX-512F; `b` is 16 words, the 64 bytes the store writes.
            unsafe { _mm512_storeu_si512(b.as_mut_ptr().cast(), w) };
        }
        std::array::from_fn(|l| std::array::from_fn(|i| by_word[i][l]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Block;
    use crate::util::cpu::{with_level, Level};

    /// Each path (sixteen lanes on AVX-512, eight on AVX2, the crate) at the levels that
    /// take it, on every count of lanes.
    #[test]
    fn every_lane_is_the_crates_xof_block_at_its_counter() {
        let key: [u32; 8] = std::array::from_fn(|i| 0x9e37_79b9u32.wrapping_mul(i as u32 + 1));
        let rows: Vec<Row512> = (0..19u128)
            .map(|i| {
                [i, i.wrapping_mul(0x1234_5678_9abc_def1) ^ !0, i << 77, !i].map(Block::from_u128)
            })
            .collect();
        let counters: Vec<u64> = (0..19u64).map(|i| i * 0x1_0000_0001 + 3).collect();
        for level in Level::ALL {
            for n in 0..=LANES {
                for first in [0, 3] {
                    let (rows, counters) = (&rows[first..first + n], &counters[first..first + n]);
                    let out = with_level(level, || xof_blocks(&key, rows, counters));
                    for l in 0..n {
                        let reference = with_crate(&key, &rows[l], counters[l]);
                        assert_eq!(
                            out[l], reference,
                            "{level:?}: {n} lanes from {first}, lane {l}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn output_block_zero_is_the_keyed_hash() {
        let key = [7u32; 8];
        let row = [1u64, 2, 3, 4].map(Block::from);
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
