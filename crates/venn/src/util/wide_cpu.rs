//! Loops compiled a second time for AVX-512, for the compiler to vectorise where plain
//! x86-64 code would stay scalar (64-bit lane multiplies, 32-bit lanes of 16 at a time).
//! The loop is written once, as ordinary Rust, and inlined into both.

use super::cpu::{has_all, Feature};

/// Runs `f`, compiled for AVX-512 (F, BW, DQ, VL) where it may be used ([`super::cpu`]).
/// `f` and what it calls should be `#[inline(always)]` to be compiled with those features.
#[inline(always)]
pub(crate) fn with_avx512<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if avx512() {
        // SAFETY: the features were detected (`has` allows only those).
        return unsafe { run_avx512(f) };
    }
    f()
}

#[cfg(target_arch = "x86_64")]
fn avx512() -> bool {
    has_all(&[
        Feature::Avx512f,
        Feature::Avx512bw,
        Feature::Avx512dq,
        Feature::Avx512vl,
    ])
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
unsafe fn run_avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::cpu::{with_level, Level};

    /// The same loop at every level: compiled twice, it gives one answer.
    #[test]
    fn the_loop_gives_one_answer_at_every_level() {
        let words: Vec<u64> = (0..1001u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        let sum = |w: &[u64]| {
            with_avx512(
                #[inline(always)]
                || {
                    w.iter()
                        .fold(0u64, |s, &x| s.wrapping_add((x >> 32) * (x & 0xffff_ffff)))
                },
            )
        };
        for len in [0, 1, 7, 8, 9, 1001] {
            let want = words[..len]
                .iter()
                .fold(0u64, |s, &x| s.wrapping_add((x >> 32) * (x & 0xffff_ffff)));
            for level in Level::ALL {
                assert_eq!(
                    with_level(level, || sum(&words[..len])),
                    want,
                    "{level:?}, {len}"
                );
            }
        }
    }
}
