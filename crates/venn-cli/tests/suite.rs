//! The integration tests, as one binary: its tests run side by side (a binary at a
//! time would leave a core idle behind each one's slowest test), and it links once.
//! Run one file's tests with `cargo test --test suite <file>::`.

mod common;

mod bad_peers;
mod buckets;
mod cli;
mod cloud;
mod cpu;
mod dealer;
mod faults;
mod joins;
mod memory;
mod outputs;
mod parquet;
mod precompute;
mod tls;
mod ub;
