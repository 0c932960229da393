//! AES-128 on [`Block`]s through the RustCrypto `aes` crate (AES-NI chosen at run time),
//! with runs of 16 blocks on 256-bit VAES where the CPU has it (two blocks per
//! instruction: the crate uses 128-bit AES-NI only).
//!
//! Always encrypt in batches: the crate pipelines eight blocks per call through AES-NI,
//! so per-block calls in a hot loop cost several times more.

use super::Block;
use ::aes::cipher::{BlockEncrypt, KeyInit};

/// AES on 256-bit registers (VAES): the round keys, and runs of [`wide::RUN`] blocks.
mod wide {
    use super::Block;
    #[cfg(target_arch = "x86_64")]
    use crate::util::cpu::{self, Feature};

    /// Blocks per run: eight registers of two, enough to hide the rounds' latency.
    pub(super) const RUN: usize = 16;

    /// The round keys of `key`, where this process may use VAES and AVX2 (else `None`).
    /// An `Aes` is often made once and shared (the fixed keys are statics), so this asks
    /// the process's cap, and each run asks [`allowed`] on its own thread.
    pub(super) fn round_keys(key: Block) -> Option<[Block; 11]> {
        #[cfg(target_arch = "x86_64")]
        if cpu::has_in_process(&[Feature::Aes, Feature::Vaes, Feature::Avx2]) {
            // SAFETY: AES-NI was detected (`has_in_process` allows only that).
            return Some(unsafe { expand(key) });
        }
        let _ = key;
        None
    }

    /// Whether this thread may run [`encrypt`].
    #[cfg(target_arch = "x86_64")]
    #[inline]
    pub(super) fn allowed() -> bool {
        cpu::has_all(&[Feature::Vaes, Feature::Avx2])
    }

    /// The FIPS 197 §5.2 key expansion with AESKEYGENASSIST.
    ///
    /// # Safety
    /// The CPU has AES-NI.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "aes,sse2")]
    unsafe fn expand(key: Block) -> [Block; 11] {
        use std::arch::x86_64::*;
        let mut k = [_mm_setzero_si128(); 11];
        // SAFETY: `key` is the 16 bytes the load reads, at any alignment.
        k[0] = unsafe { _mm_loadu_si128((&key as *const Block).cast()) };
        macro_rules! step {
            ($i:literal, $rcon:literal) => {
                let assist =
                    _mm_shuffle_epi32::<0xff>(_mm_aeskeygenassist_si128::<$rcon>(k[$i - 1]));
                let mut t = k[$i - 1];
                t = _mm_xor_si128(t, _mm_slli_si128::<4>(t));
                t = _mm_xor_si128(t, _mm_slli_si128::<8>(t));
                k[$i] = _mm_xor_si128(t, assist);
            };
        }
        step!(1, 0x01);
        step!(2, 0x02);
        step!(3, 0x04);
        step!(4, 0x08);
        step!(5, 0x10);
        step!(6, 0x20);
        step!(7, 0x40);
        step!(8, 0x80);
        step!(9, 0x1b);
        step!(10, 0x36);
        k.map(|r| {
            let mut b = Block::ZERO;
            // SAFETY: `b` is the 16 bytes the store writes, at any alignment.
            unsafe { _mm_storeu_si128((&mut b as *mut Block).cast(), r) };
            b
        })
    }

    /// Encrypts the leading whole runs of [`RUN`] of the `len` blocks at `input` into
    /// `output` (which may be `input`); returns how many blocks.
    ///
    /// # Safety
    /// The CPU has VAES and AVX2; `input` and `output` are valid for `len` blocks.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,vaes")]
    pub(super) unsafe fn encrypt(
        keys: &[Block; 11],
        input: *const Block,
        output: *mut Block,
        len: usize,
    ) -> usize {
        use std::arch::x86_64::*;
        let k: [__m256i; 11] = std::array::from_fn(|i| {
            // SAFETY: `keys[i]` is the 16 bytes the load reads, at any alignment.
            _mm256_broadcastsi128_si256(unsafe {
                _mm_loadu_si128((&keys[i] as *const Block).cast())
            })
        });
        let mut done = 0;
        while done + RUN <= len {
            let mut s: [__m256i; RUN / 2] = std::array::from_fn(|l| {
                // SAFETY: blocks `done + 2l` and the next are inside the `len` at `input`
                // (the caller's contract): `done + RUN ≤ len` and `2l + 2 ≤ RUN`.
                let x = unsafe { _mm256_loadu_si256(input.add(done + 2 * l).cast()) };
                _mm256_xor_si256(x, k[0])
            });
            for key in &k[1..10] {
                for x in s.iter_mut() {
                    *x = _mm256_aesenc_epi128(*x, *key);
                }
            }
            for (l, x) in s.iter().enumerate() {
                let c = _mm256_aesenclast_epi128(*x, k[10]);
                // SAFETY: as the loads, in the `len` blocks at `output`; every load of the run
                // is done, so an `output` that is `input` is read before it is written.
                unsafe { _mm256_storeu_si256(output.add(done + 2 * l).cast(), c) };
            }
            done += RUN;
        }
        done
    }
}

/// An expanded AES-128 key.
#[derive(Clone)]
pub struct Aes {
    cipher: ::aes::Aes128,
    /// The round keys, on a CPU with VAES.
    wide: Option<[Block; 11]>,
}

impl Aes {
    /// Expands `key`.
    pub fn new(key: Block) -> Self {
        Aes {
            cipher: ::aes::Aes128::new(&key.to_le_bytes().into()),
            wide: wide::round_keys(key),
        }
    }

    /// The fixed public key used for fixed-key-AES hashing (the π of GKWY20).
    pub fn fixed() -> &'static Aes {
        static FIXED: std::sync::OnceLock<Aes> = std::sync::OnceLock::new();
        FIXED.get_or_init(|| Aes::new(Block::from_u128(0x5665_6e6e_2066_6978_6564_2d6b_6579_2121)))
    }

    /// Encrypts `blocks` in place.
    #[inline]
    pub fn encrypt_blocks(&self, blocks: &mut [Block]) {
        let done = self.encrypt_wide(blocks.as_ptr(), blocks.as_mut_ptr(), blocks.len());
        let blocks = &mut blocks[done..];
        // SAFETY: `aes::Block` is `GenericArray<u8, U16>`, a transparent wrapper of
        // `[u8; 16]`: same size as `u128`, and its alignment (1) is weaker. On a
        // little-endian machine the bytes are the block's wire encoding.
        let view = unsafe {
            std::slice::from_raw_parts_mut(blocks.as_mut_ptr().cast::<::aes::Block>(), blocks.len())
        };
        self.cipher.encrypt_blocks(view);
    }

    /// Writes the encryptions of `input` to `output` (same length).
    #[inline]
    pub fn encrypt_blocks_to(&self, input: &[Block], output: &mut [Block]) {
        assert_eq!(input.len(), output.len());
        let done = self.encrypt_wide(input.as_ptr(), output.as_mut_ptr(), input.len());
        let (input, output) = (&input[done..], &mut output[done..]);
        // SAFETY: as in `encrypt_blocks`.
        let (i, o) = unsafe {
            (
                std::slice::from_raw_parts(input.as_ptr().cast::<::aes::Block>(), input.len()),
                std::slice::from_raw_parts_mut(
                    output.as_mut_ptr().cast::<::aes::Block>(),
                    output.len(),
                ),
            )
        };
        self.cipher.encrypt_blocks_b2b(i, o).expect("equal lengths");
    }

    /// Encrypts the leading whole runs of [`wide::RUN`] of the `len` blocks at `input` into
    /// `output` (which may be `input`) with VAES, where it may be used; returns how many.
    #[inline]
    fn encrypt_wide(&self, input: *const Block, output: *mut Block, len: usize) -> usize {
        match &self.wide {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `allowed` holds only where VAES and AVX2 were detected; the pointers
            // cover `len` blocks (the caller's slices).
            Some(keys) if len >= wide::RUN && wide::allowed() => unsafe {
                wide::encrypt(keys, input, output, len)
            },
            _ => 0,
        }
    }

    /// The 11 round keys (FIPS 197 §5.2), where this process may use VAES and AVX2: for
    /// callers that run their own rounds on wider registers (and ask [`crate::util::cpu`]
    /// for their own features as they run).
    pub fn round_keys(&self) -> Option<&[Block; 11]> {
        self.wide.as_ref()
    }

    /// Encrypts one block. Avoid in hot loops; see the module docs.
    #[inline]
    pub fn encrypt(&self, block: Block) -> Block {
        let mut b = [block];
        self.encrypt_blocks(&mut b);
        b[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::cpu::{with_level, Level};

    /// The VAES runs (at the levels that allow them) and the crate agree, for every length
    /// around the run size, in place and into another buffer.
    #[test]
    fn wide_runs_match_the_crate() {
        for level in Level::ALL {
            with_level(level, || wide_runs_match_the_crate_at(level));
        }
    }

    fn wide_runs_match_the_crate_at(level: Level) {
        let aes = Aes::new(Block::from_u128(0x0f0e_0d0c_0b0a_0908_0706_0504_0302_0100));
        for len in 0..3 * wide::RUN + 3 {
            let input: Vec<Block> = (0..len as u128)
                .map(|i| Block::from_u128(i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i << 70))
                .collect();
            let want: Vec<Block> = input
                .iter()
                .map(|&b| {
                    let mut x = b.to_le_bytes().into();
                    aes.cipher.encrypt_block(&mut x);
                    Block::from_le_bytes(x.into())
                })
                .collect();
            let mut in_place = input.clone();
            aes.encrypt_blocks(&mut in_place);
            assert_eq!(in_place, want, "{level:?}, in place, {len} blocks");
            let mut out = vec![Block::ZERO; len];
            aes.encrypt_blocks_to(&input, &mut out);
            assert_eq!(out, want, "{level:?}, into another buffer, {len} blocks");
        }
    }

    #[test]
    fn fips_197_appendix_c1_in_a_run() {
        for level in Level::ALL {
            with_level(level, fips_197_appendix_c1_in_a_run_at);
        }
    }

    fn fips_197_appendix_c1_in_a_run_at() {
        let aes = Aes::new(Block::from_le_bytes(
            *b"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f",
        ));
        let plain = Block::from_le_bytes(
            *b"\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee\xff",
        );
        let mut run = [plain; wide::RUN];
        aes.encrypt_blocks(&mut run);
        let expected = *b"\x69\xc4\xe0\xd8\x6a\x7b\x04\x30\xd8\xcd\xb7\x80\x70\xb4\xc5\x5a";
        assert!(run.iter().all(|b| b.to_le_bytes() == expected));
    }
}
