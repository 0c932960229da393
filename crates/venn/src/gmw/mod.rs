//! Generic two-party computation on Boolean circuits: the GMW protocol with Beaver triples
//! from OT extension (the engine under PSWW18's circuit PSI and HEK12's sorting network).
//!
//! Semi-honest: each party's view is simulatable from its input and output as long as both
//! follow the protocol. Wires are XOR-shared bit vectors, one bit per instance of a circuit
//! evaluated on many inputs at once ([`Shared`]); the triples are made offline
//! ([`Triples::generate`], from silent OT or IKNP) and spent online ([`Gmw`]).

#[cfg(test)]
mod circuit;
mod engine;
mod shared;
mod triples;

pub use engine::Gmw;
pub use shared::Shared;
#[cfg(test)]
pub(crate) use triples::tests::triple_pair;
pub use triples::{
    working_bytes as triple_working_bytes, RandomOts, Source as TripleSource, Triples,
};
