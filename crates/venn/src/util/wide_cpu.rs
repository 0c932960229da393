//! Loops compiled a second time for AVX-512, for the compiler to vectorise where plain
//! x86-64 code would stay scalar (64-bit lane multiplies, 32-bit lanes of 16 at a time).
//! The loop is written once, as ordinary Rust, and inlined into both.

/// Runs `f`, compiled for AVX-512 (F, BW, DQ, VL) where this CPU has it. `f` and what it
/// calls should be `#[inline(always)]` to be compiled with those features.
#[inline(always)]
pub fn with_avx512<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if avx512() {
        // SAFETY: the features were detected.
        return unsafe { run_avx512(f) };
    }
    f()
}

#[cfg(target_arch = "x86_64")]
fn avx512() -> bool {
    use std::arch::is_x86_feature_detected as has;
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl"))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
unsafe fn run_avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}
