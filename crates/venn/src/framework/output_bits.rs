//! The output length of the hash-based protocols, which compare short hashes of the items:
//! long enough that no two distinct items of the two sets are taken for a match, except
//! with probability 2^-σ.

use super::{ParamTable, Parameters};
use crate::net::Writer;
use crate::session::Sizes;

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
