//! Hash tables for PSI: three-way cuckoo hashing with a stash (the receiver's side of
//! KKRT16 Fig. 3), Bloom-filter hashing, and the table that matches the sender's values
//! against the receiver's.

mod bitset;
mod bloom;
mod cuckoo;
mod match_table;

pub use bitset::BitSet;
pub use bloom::{bloom_bits, BloomHash};
pub use cuckoo::{cuckoo_insert, pssz15_stash_size, CuckooHash, CuckooTable, HASHES};
pub use match_table::MatchTable;

/// Asks the CPU to start loading the cache line of `x` (a hint; no effect on results).
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: prefetching never faults and reads nothing observable; SSE is part of
        // the x86_64 baseline.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((x as *const T).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
