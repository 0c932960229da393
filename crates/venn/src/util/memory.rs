//! Memory placement for the large tables that hot loops access at random (the OPRF rows,
//! the match table, the cuckoo table): backing them with 2 MiB transparent huge pages
//! removes most TLB misses, which otherwise serialise those accesses; and prefetching,
//! which lets those loops ask for a line before they need it. Also the machine's memory,
//! and memory figures as `--max-memory`'s refusals show them.

/// `bytes` in GiB with two decimals, as the refusals of `--max-memory` name memory.
pub fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// Asks the kernel to back `v`'s allocation with huge pages. Call it before the memory is
/// first written. A hint only: without Linux THP it does nothing.
pub fn advise_huge_pages<T>(v: &Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let bytes = v.capacity() * std::mem::size_of::<T>();
        if bytes < 1 << 21 {
            return;
        }
        let start = v.as_ptr() as usize;
        let aligned = start.next_multiple_of(PAGE);
        let len = (start + bytes - aligned) / PAGE * PAGE;
        // SAFETY: the range lies inside `v`'s allocation, and MADV_HUGEPAGE changes no
        // contents or permissions; failure (e.g. THP disabled) is harmless.
        unsafe {
            libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}

/// Gives the whole pages of `v`'s spare capacity (past its length) back to the system:
/// after a `truncate` that halves a large vector, its memory use halves too, without the
/// copy a `shrink_to_fit` makes. The capacity stays; pages written again come back zeroed.
pub fn release_spare<T>(v: &Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let size = std::mem::size_of::<T>();
        let base = v.as_ptr() as usize;
        let start = (base + v.len() * size).next_multiple_of(PAGE);
        let end = (base + v.capacity() * size) / PAGE * PAGE;
        if end > start {
            // SAFETY: [start, end) lies inside `v`'s allocation past its last element:
            // memory no value lives in and the allocator keeps nothing in (its
            // bookkeeping is outside the capacity). MADV_DONTNEED only drops those pages;
            // they read as zeros if touched again.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}

/// An empty vector with room for `capacity` elements, on huge pages where available.
pub fn with_huge_capacity<T>(capacity: usize) -> Vec<T> {
    let v = Vec::with_capacity(capacity);
    advise_huge_pages(&v);
    v
}

/// A vector of `len` zeros, on huge pages where available. Its memory comes zeroed from
/// the system and is not written here: each page is faulted in (and zeroed by the kernel)
/// by whichever thread first writes it, so a vector filled on the rayon pool costs one
/// pass over its memory, in parallel, where [`huge_vec`] costs a serial one first.
pub fn huge_zeroed<T: bytemuck::Zeroable>(len: usize) -> Vec<T> {
    let v = bytemuck::zeroed_vec(len);
    advise_huge_pages(&v);
    v
}

/// A vector of `len` copies of `value`, on huge pages where available.
pub fn huge_vec<T: Clone>(len: usize, value: T) -> Vec<T> {
    let mut v = with_huge_capacity(len);
    v.resize(len, value);
    v
}

/// Asks the CPU to start loading the cache line of `x` (a hint; no effect on results).
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    prefetch_address((x as *const T).cast::<u8>());
}

/// Asks the CPU to start loading the cache line of `x` into its second-level cache (a
/// hint, T1): for random reads many iterations ahead, more of which can then be under way
/// than the first-level cache has room to wait for (the ExConv expander's, about 30%
/// faster than with [`prefetch`] on Zen 4).
#[inline(always)]
pub fn prefetch_l2<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
        // SAFETY: as in `prefetch_address`.
        unsafe { _mm_prefetch::<_MM_HINT_T1>((x as *const T).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// Starts loading every cache line that `items` spans.
#[inline]
pub fn prefetch_range<T>(items: &[T]) {
    const LINE: usize = 64;
    let (start, len) = (items.as_ptr().cast::<u8>(), std::mem::size_of_val(items));
    if len == 0 {
        return;
    }
    // Steps of one line from the start meet every line but perhaps the last.
    for offset in (0..len).step_by(LINE) {
        prefetch_address(start.wrapping_add(offset));
    }
    prefetch_address(start.wrapping_add(len - 1));
}

#[inline(always)]
fn prefetch_address(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: prefetching never faults and reads nothing observable; SSE is part of
        // the x86_64 baseline.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(at.cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// The machine's physical memory in bytes (MemTotal of /proc/meminfo), read once; `None`
/// where it cannot be read.
pub fn physical_memory() -> Option<u64> {
    static TOTAL: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *TOTAL.get_or_init(|| {
        let m = std::fs::read_to_string("/proc/meminfo").ok()?;
        let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn physical_memory_is_read_on_linux() {
        let m = physical_memory().expect("/proc/meminfo");
        assert!(m >= 64 << 20, "{m} bytes");
        assert_eq!(physical_memory(), Some(m));
    }

    #[test]
    fn zeroed_vectors_are_zero_and_writable() {
        for len in [0, 1, 1 << 20] {
            let mut v: Vec<u128> = huge_zeroed(len);
            assert_eq!(v.len(), len);
            assert!(v.iter().all(|&x| x == 0));
            v.iter_mut().enumerate().for_each(|(i, x)| *x = i as u128);
            assert!(v.iter().enumerate().all(|(i, &x)| x == i as u128));
        }
    }

    /// Releasing the spare capacity keeps every element, at any length that is not a whole
    /// number of pages, and the vector grows back into the released room.
    #[test]
    fn released_spare_keeps_the_elements_and_can_be_refilled() {
        for len in [0, 1, 511, 513, 100_003] {
            let mut v: Vec<u64> = huge_vec(1 << 20, 7);
            v.iter_mut().enumerate().for_each(|(i, x)| *x = i as u64);
            v.truncate(len);
            release_spare(&v);
            assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64), "{len}");
            v.resize(1 << 20, 3);
            assert!(v[len..].iter().all(|&x| x == 3), "{len}");
            assert!(v[..len].iter().enumerate().all(|(i, &x)| x == i as u64));
        }
    }
}
