//! The parts of the `venn` tool that are more than command-line plumbing, as a library:
//! for the fuzz targets in `fuzz/`, and for other front ends (the Python package runs the
//! CLI's parties on keys in memory).

pub mod buckets;
pub mod input;
pub mod lanes;
pub mod output;
pub mod party;
pub mod progress;
pub mod thunder;
pub mod transport;
