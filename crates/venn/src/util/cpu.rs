//! Which x86-64 instruction-set extensions Venn's own kernels may use: those this CPU has,
//! up to a level the user may cap with `VENN_CPU`. Every kernel chosen at run time asks
//! [`has`] here (never `is_x86_feature_detected!` itself), so one setting can force the
//! paths a CPU without AVX-512 takes — Zen 3 and many cloud VMs (AVX2, VAES, VPCLMULQDQ),
//! or older ones (AES-NI only) — on any machine, to test and to measure them.
//!
//! The CPU is asked once. A cap never enables what the CPU lacks. The `aes`, `sha2` and
//! `blake3` crates under Venn choose their own paths; baseline SSE2 code that no choice
//! guards (the tag table's compare, prefetch hints) runs at every level.

use crate::{Error, Result};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The environment variable that caps the level.
pub const ENV: &str = "VENN_CPU";

/// A cap on the extensions used, each level a superset of the one below.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// No x86 intrinsics where a portable path exists.
    Portable,
    /// AES-NI, PCLMULQDQ, SSE2, SSSE3 and SSE4.1 (Westmere to Ivy Bridge).
    Aesni,
    /// Also AVX2, VAES, VPCLMULQDQ on 256 bits and SHA-NI, no AVX-512 of any kind (Zen 3).
    Avx2,
    /// Everything this CPU has (the default).
    Avx512,
}

impl Level {
    /// Every level, the widest first.
    pub const ALL: [Level; 4] = [Level::Avx512, Level::Avx2, Level::Aesni, Level::Portable];

    /// The name `VENN_CPU` takes.
    pub fn name(self) -> &'static str {
        match self {
            Level::Portable => "portable",
            Level::Aesni => "aesni",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
        }
    }

    /// The level named `s` (any case).
    pub fn parse(s: &str) -> Result<Level> {
        Level::ALL
            .into_iter()
            .find(|l| l.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{ENV}={s:?} is not a level: use avx512 (the default), avx2, aesni or portable"
                ))
            })
    }

    /// The features the level allows, one bit each.
    fn mask(self) -> u32 {
        use Feature::*;
        let bits = |fs: &[Feature]| fs.iter().fold(0, |m, f| m | f.bit());
        match self {
            Level::Portable => 0,
            Level::Aesni => bits(&[Sse2, Ssse3, Sse41, Aes, Pclmulqdq]),
            Level::Avx2 => Level::Aesni.mask() | bits(&[Sha, Avx2, Vaes, Vpclmulqdq]),
            Level::Avx512 => u32::MAX,
        }
    }
}

/// An extension some kernel is chosen by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// 128-bit integer vectors, x86-64's baseline: the bit transpose's narrow kernel.
    Sse2,
    /// Byte shuffles: the AES-NI key schedules and SHA-NI's message byte order.
    Ssse3,
    /// SSE4.1's blends and inserts, which the SHA-NI kernel needs beside SHA itself.
    Sse41,
    /// AES-NI, one AES round an instruction on 128 bits: the fixed-key and many-key AES.
    Aes,
    /// Carry-less multiplication on 128 bits: products in GF(2^128).
    Pclmulqdq,
    /// SHA-NI, SHA-256 rounds in hardware: the hash of many short messages side by side.
    Sha,
    /// 256-bit integer vectors: the transpose, BLAKE3 lanes and the VOLE code's window.
    Avx2,
    /// AES rounds on 256- and 512-bit registers: AES, and the PPRF and half-tree expansions.
    Vaes,
    /// Carry-less multiplication on 256- and 512-bit registers: GF(2^128) evaluations.
    Vpclmulqdq,
    /// 512-bit vectors (the foundation every AVX-512 kernel needs).
    Avx512f,
    /// AVX-512 on bytes and 16-bit words: with DQ and VL, loops the compiler vectorises.
    Avx512bw,
    /// AVX-512 on 32- and 64-bit lanes (64-bit multiplies): as BW.
    Avx512dq,
    /// AVX-512's instructions on 128- and 256-bit registers too: as BW.
    Avx512vl,
    /// 52-bit integer multiply-add: the service's pairings, eight at a time.
    Avx512ifma,
}

impl Feature {
    /// Every feature, in the order of the levels that allow them.
    pub const ALL: [Feature; 14] = {
        use Feature::*;
        [
            Sse2, Ssse3, Sse41, Aes, Pclmulqdq, Sha, Avx2, Vaes, Vpclmulqdq, Avx512f, Avx512bw,
            Avx512dq, Avx512vl, Avx512ifma,
        ]
    };

    /// Its name as `target_feature` and /proc/cpuinfo spell it (but `sha` for sha_ni).
    pub fn name(self) -> &'static str {
        use Feature::*;
        match self {
            Sse2 => "sse2",
            Ssse3 => "ssse3",
            Sse41 => "sse4.1",
            Aes => "aes",
            Pclmulqdq => "pclmulqdq",
            Sha => "sha",
            Avx2 => "avx2",
            Vaes => "vaes",
            Vpclmulqdq => "vpclmulqdq",
            Avx512f => "avx512f",
            Avx512bw => "avx512bw",
            Avx512dq => "avx512dq",
            Avx512vl => "avx512vl",
            Avx512ifma => "avx512ifma",
        }
    }

    fn bit(self) -> u32 {
        1 << self as u32
    }

    /// Whether this CPU has it: the one place Venn asks.
    #[cfg(target_arch = "x86_64")]
    fn detected(self) -> bool {
        use std::arch::is_x86_feature_detected as has;
        use Feature::*;
        match self {
            Sse2 => has!("sse2"),
            Ssse3 => has!("ssse3"),
            Sse41 => has!("sse4.1"),
            Aes => has!("aes"),
            Pclmulqdq => has!("pclmulqdq"),
            Sha => has!("sha"),
            Avx2 => has!("avx2"),
            Vaes => has!("vaes"),
            Vpclmulqdq => has!("vpclmulqdq"),
            Avx512f => has!("avx512f"),
            Avx512bw => has!("avx512bw"),
            Avx512dq => has!("avx512dq"),
            Avx512vl => has!("avx512vl"),
            Avx512ifma => has!("avx512ifma"),
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn detected(self) -> bool {
        false
    }
}

/// The features this CPU has, one bit each.
fn detected() -> u32 {
    static DETECTED: OnceLock<u32> = OnceLock::new();
    *DETECTED.get_or_init(|| {
        Feature::ALL
            .iter()
            .filter(|f| f.detected())
            .fold(0, |m, f| m | f.bit())
    })
}

/// The process's level, whether `VENN_CPU` set it, and the features it allows on this CPU.
#[derive(Clone, Copy)]
struct Process {
    level: Level,
    from_env: bool,
    allowed: u32,
}

/// The process's [`Process`], fixed at the first use.
fn process() -> Process {
    static PROCESS: OnceLock<Process> = OnceLock::new();
    *PROCESS.get_or_init(|| {
        // A front end has refused a bad value through `init` already.
        let (level, from_env) = match from_env() {
            Ok(Some(level)) => (level, true),
            _ => (Level::Avx512, false),
        };
        Process {
            level,
            from_env,
            allowed: detected() & level.mask(),
        }
    })
}

/// The level `VENN_CPU` asks for, if it is set (and not empty).
fn from_env() -> Result<Option<Level>> {
    match std::env::var(ENV) {
        Ok(s) if !s.trim().is_empty() => Level::parse(&s).map(Some),
        _ => Ok(None),
    }
}

/// Fixes this process's level from `VENN_CPU`: for a front end's start-up, so that a value
/// that names no level stops it with an error. (Without it the first kernel to ask fixes
/// the level, and takes the default for such a value.)
pub fn init() -> Result<Level> {
    from_env()?;
    Ok(process().level)
}

thread_local! {
    /// The mask of [`with_level`] on this thread (all bits outside one).
    static THREAD: Cell<u32> = const { Cell::new(u32::MAX) };
}

/// How many [`with_level`] calls are running, on any thread: while none is, [`has`] skips
/// the thread-local (a function call in a shared library, such as the Python module).
static CAPPED_THREADS: AtomicUsize = AtomicUsize::new(0);

/// Whether a kernel may use `feature` here: this CPU has it, the process's level allows it,
/// and so does this thread's [`with_level`], if any.
#[inline]
pub fn has(feature: Feature) -> bool {
    has_all(&[feature])
}

/// Whether a kernel may use every one of `features` here (as [`has`]).
#[inline]
pub fn has_all(features: &[Feature]) -> bool {
    let want = features.iter().fold(0, |m, f| m | f.bit());
    let mut allowed = process().allowed;
    // A thread's own `with_level` raised the count before it set its mask, so a capped
    // thread always sees it.
    if CAPPED_THREADS.load(Ordering::Relaxed) != 0 {
        allowed &= THREAD.get();
    }
    allowed & want == want
}

/// Whether the process may use all of `features`, whatever a thread's [`with_level`]: for
/// what is prepared once and shared between threads (an `Aes`'s round keys), where the
/// kernels that use it ask [`has`] as they run.
pub fn has_in_process(features: &[Feature]) -> bool {
    let want = features.iter().fold(0, |m, f| m | f.bit());
    process().allowed & want == want
}

/// Runs `f` with this thread's kernels capped at `level` too (the process's cap still
/// holds): each path of a kernel, tested side by side in one process. Threads that `f`
/// starts or hands work to keep the process's cap.
pub fn with_level<R>(level: Level, f: impl FnOnce() -> R) -> R {
    struct Restore(u32);
    impl Drop for Restore {
        fn drop(&mut self) {
            THREAD.set(self.0);
            CAPPED_THREADS.fetch_sub(1, Ordering::Relaxed);
        }
    }
    CAPPED_THREADS.fetch_add(1, Ordering::Relaxed);
    let before = THREAD.get();
    let _restore = Restore(before);
    THREAD.set(before & level.mask());
    f()
}

/// The process's level and what it means on this CPU, for a benchmark's header: e.g.
/// `avx2 (VENN_CPU): sse2 ssse3 … vpclmulqdq; held back: avx512f …; not on this CPU: sha`.
pub fn describe() -> String {
    let Process {
        level,
        from_env,
        allowed,
    } = process();
    let names = |pick: &dyn Fn(u32) -> bool| -> String {
        let v: Vec<&str> = Feature::ALL
            .iter()
            .filter(|f| pick(f.bit()))
            .map(|f| f.name())
            .collect();
        if v.is_empty() {
            "none".into()
        } else {
            v.join(" ")
        }
    };
    let source = if from_env { ENV } else { "default" };
    let mut out = format!(
        "{} ({source}): {}",
        level.name(),
        names(&|b| allowed & b != 0)
    );
    let held = detected() & !level.mask();
    if held != 0 {
        out += &format!("; held back: {}", names(&|b| held & b != 0));
    }
    let absent = !detected() & level.mask();
    if Feature::ALL.iter().any(|f| absent & f.bit() != 0) {
        out += &format!("; not on this CPU: {}", names(&|b| absent & b != 0));
    }
    out
}

/// A rayon pool of `threads` threads that run at `level` (as [`with_level`]): for tests of
/// kernels that hand work to rayon (whose global pool keeps the process's cap).
pub fn pool_at(
    level: Level,
    threads: usize,
) -> std::result::Result<rayon::ThreadPool, rayon::ThreadPoolBuildError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .spawn_handler(move |thread| {
            std::thread::Builder::new().spawn(move || with_level(level, || thread.run()))?;
            Ok(())
        })
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_nested_and_parse_by_name() {
        for pair in Level::ALL.windows(2) {
            let (wider, narrower) = (pair[0].mask(), pair[1].mask());
            assert_eq!(
                wider & narrower,
                narrower,
                "{:?} within {:?}",
                pair[1],
                pair[0]
            );
            assert_ne!(wider, narrower);
        }
        for level in Level::ALL {
            assert_eq!(Level::parse(level.name()).unwrap(), level);
        }
        assert_eq!(Level::parse(" AVX2 ").unwrap(), Level::Avx2);
        let e = Level::parse("avx-512").unwrap_err().to_string();
        assert!(e.contains("VENN_CPU") && e.contains("portable"), "{e}");
        assert!(!Level::Avx2.mask() & Feature::Avx512f.bit() != 0);
        assert!(Level::Aesni.mask() & Feature::Avx2.bit() == 0);
    }

    #[test]
    fn a_thread_cap_lowers_this_thread_only_and_is_restored() {
        let all: Vec<bool> = Feature::ALL.iter().map(|&f| has(f)).collect();
        with_level(Level::Avx2, || {
            assert!(!has(Feature::Avx512f));
            assert_eq!(has(Feature::Vaes), all[Feature::Vaes as usize]);
            // A nested cap cannot raise it again.
            with_level(Level::Avx512, || assert!(!has(Feature::Avx512ifma)));
            with_level(Level::Portable, || {
                assert!(Feature::ALL.iter().all(|&f| !has(f)));
                let other = std::thread::spawn(|| Feature::ALL.map(has)).join().unwrap();
                assert_eq!(other[..], all[..], "another thread keeps the process's cap");
            });
            assert_eq!(has(Feature::Aes), all[Feature::Aes as usize]);
        });
        let after: Vec<bool> = Feature::ALL.iter().map(|&f| has(f)).collect();
        assert_eq!(after, all);
        // Never more than the CPU has.
        for f in Feature::ALL {
            assert!(!has(f) || f.detected(), "{f:?}");
        }
    }
}
