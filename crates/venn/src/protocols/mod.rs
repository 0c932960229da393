//! The PSI protocols, all behind one [`Protocol`] interface and one registry. The CLI, the
//! benchmark and the tests iterate over [`registry`]; a protocol that is not implemented
//! is simply not in it. Adding one is its own module, its `mod` line and one entry in
//! [`registry`]; nothing in the runner, the CLI or the benchmark names a protocol.

mod api;
mod circuit_psi;
mod context;
mod dcw13;
mod dgt12;
mod dkt10;
mod hek12;
pub mod kbm23;
mod matching;
mod naive;
mod oprf_psi;
mod options;
mod psww18;
mod rr17_bloom;
mod rr17_de;
mod rr22;
mod rr22_cpsi;

pub use crate::session::Sizes;
use api::no_offline_state;
pub use api::{
    AnyParty, Output, OutputKind, ParamTable, Parameters, Party, Protocol, ProtocolInfo, RoleInfo,
};
pub use circuit_psi::MAX_VALUE_COLUMNS;
pub use context::{Context, DealerLink, Phase, Progress};
pub use options::{Accepts, Bins, Offline, Options, Stash};

use crate::net::Writer;
use crate::{Error, Result};

/// The security a protocol (or one of its roles) offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Security {
    /// No privacy at all: a baseline for measurements.
    Insecure,
    /// Secure against parties that follow the protocol but try to learn more.
    SemiHonest,
    /// Secure against parties that deviate from the protocol arbitrarily.
    Malicious,
}

impl Security {
    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            Security::Insecure => "INSECURE",
            Security::SemiHonest => "semi-honest",
            Security::Malicious => "malicious",
        }
    }
}

/// Every implemented protocol.
pub fn registry() -> &'static [&'static dyn Protocol] {
    &[
        &oprf_psi::Kkrt16::NEW,
        &rr22::Rr22::SEMI_HONEST,
        &rr22::Rr22::MALICIOUS,
        &oprf_psi::Pssz15::NEW,
        &rr17_bloom::Rr17Bloom,
        &rr17_de::Rr17De::NEW,
        &rr17_de::Rr17Ec,
        &rr17_de::Rr17DeSm::NEW,
        &kbm23::Kbm23,
        &rr22_cpsi::Rr22Cpsi::CA,
        &rr22_cpsi::Rr22Cpsi::SUM,
        &psww18::Psww18::CA,
        &psww18::Psww18::SUM,
        &hek12::Hek12,
        &dgt12::Dgt12,
        &dkt10::Dkt10,
        &dcw13::Dcw13,
        &naive::Naive,
    ]
}

/// The protocol called `name`.
pub fn find(name: &str) -> Result<&'static dyn Protocol> {
    registry()
        .iter()
        .copied()
        .find(|p| p.info().name == name)
        .ok_or_else(|| {
            let names: Vec<&str> = registry().iter().map(|p| p.info().name).collect();
            Error::Usage(format!(
                "unknown protocol '{name}' (available: {})",
                names.join(", ")
            ))
        })
}

/// `⌈x⌉` rounded up to a multiple of 8 (protocol messages are whole bytes).
pub(crate) fn round_up_to_byte(bits: f64) -> usize {
    (bits.ceil() as usize).next_multiple_of(8)
}

/// Parameters that are only the output length `v` in bits (hash-based protocols).
pub(crate) struct OutputBits(pub usize);

impl Parameters for OutputBits {
    fn encode(&self) -> Vec<u8> {
        Writer::new().u64(self.0 as u64).0
    }
    fn table(&self) -> ParamTable {
        ParamTable(vec![("v", self.0.to_string())])
    }
}

/// The output length `v = σ + log2(n_sender · n_receiver)` bits, rounded up to a byte, that
/// bounds the chance of any spurious match to 2^-σ (KKRT16 §5.2 / §6.1).
pub(crate) fn output_bits(sizes: Sizes) -> usize {
    let pairs = sizes.sender.max(1) as f64 * sizes.receiver.max(1) as f64;
    round_up_to_byte(crate::STATISTICAL_SECURITY as f64 + pairs.log2())
}
