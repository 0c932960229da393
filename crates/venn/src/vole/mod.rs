//! Silent VOLE over GF(2^128) (Boyle–Couteau–Gilboa–Ishai–Kohl–Rindal–Scholl, CCS 2019;
//! as RR22 §4 uses it): the sender S gets Δ and B, the receiver R gets A and C with
//! C = B + A·Δ, from a few thousand base OTs, a punctured PRF per noise block, and the
//! dual of a linear code (`code`) that compresses the sparse noise; and its GF(2) form,
//! silent correlated OT ([`cot`]).

mod base;
mod code;
pub mod cot;
mod half_tree;
mod noise;
pub mod pprf;
mod silent;
mod trees;

pub use code::{ExConv, Pair, Symbol};
pub use noise::{Shape, MIN_BINARY_TREES, MIN_TREES};
pub use silent::{receive, send, Adversary, VoleReceiver, VoleSender};
pub use trees::TREES_A_MESSAGE;
