//! The integration tests, as one binary: its tests run side by side (a binary at a
//! time would leave a core idle behind each one's slowest test), and it links once.
//! Run one file's tests with `cargo test --test suite <file>::`.

mod common;

mod circuit_psi;
mod flow_control;
mod fuzz_corpus;
mod payloads;
mod protocols;
mod rr17;
mod rr22;
