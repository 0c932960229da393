//! The parts of the `venn` tool that are more than command-line plumbing, as a library so
//! that the fuzz targets in `fuzz/` can reach them.

pub mod input;
