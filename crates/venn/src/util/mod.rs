//! Small utilities every layer may use (they import nothing of the crate but its error): memory
//! (huge pages, zeroed vectors, the machine's RAM), files written whole or not at all, bit
//! sets, elements grouped by a counting sort, splitting work into slices, the CPU features kernels may use, and AVX-512 clones of
//! hot loops.

pub(crate) mod bits;
pub mod cpu;
pub mod files;
pub mod groups;
pub mod memory;
pub mod primes;
pub(crate) mod slices;
pub(crate) mod wide_cpu;
