//! RR17 Bloom-filter PSI with cut-and-choose (Rindal & Rosulek, Eurocrypt 2017, Fig. 4).
//! So far: its parameters (§5.2). The protocol is not in the registry until it is complete.

mod params;

pub use params::Rr17BloomParams;
