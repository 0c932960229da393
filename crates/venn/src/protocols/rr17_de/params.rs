//! The parameters of a dual execution, in either model: bins, slots per bin, OTs per
//! direction and the comparison values' length, and their table and wire form.

use super::join::partition_bits;
use super::Hashing;
use crate::net::Writer;
use crate::protocols::{round_up_to_byte, ParamTable, Parameters};
use crate::session::Role;
use crate::tables::simple_hash::bin_size;
use crate::{Result, STATISTICAL_SECURITY};

/// The parameters of one run (Fig. 4 header, §6.6, spec §4.4, §4.8 and §4.9).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Rr17DeParams {
    /// Set sizes, m bins (⌊n/4⌋ or ⌊n/10⌋ for n the larger set) and item bits.
    pub(super) hashing: Hashing,
    /// The items' bit length σ in the standard model (`None`: hashed to `hashing.bits` by
    /// a random oracle).
    pub(super) sigma: Option<u32>,
    /// Slots in the sender's bins (direction B has m·μ_A instances).
    pub mu_a: usize,
    /// Slots in the receiver's bins (direction A has m·μ_B instances).
    pub mu_b: usize,
    /// Bytes of a comparison value.
    pub value_bytes: usize,
}

impl Rr17DeParams {
    /// The parameters of `name` for `hashing`, on σ-bit items in the standard model if
    /// `sigma` is given (an instance then takes σ' OTs, else one OOS16 OT).
    pub(super) fn new(name: &str, hashing: Hashing, sigma: Option<u32>) -> Result<Self> {
        let h = hashing;
        let (mu_a, mu_b) = (bin_size(h.n_a, h.m), bin_size(h.n_b, h.m));
        let ots = ots_per_slot(&h, sigma) as u128;
        // OTs of each direction and comparison values of each party.
        let (ma, mb) = (mu_a as u128, mu_b as u128);
        let (m, n_a, n_b) = (h.m as u128, h.n_a as u128, h.n_b as u128);
        Hashing::fit_32_bits(name, &[m * ma * ots, m * mb * ots, n_a * mb, n_b * ma])?;
        let value_bits = STATISTICAL_SECURITY as f64
            + (h.n_a as f64 * mu_b as f64).log2()
            + (h.n_b as f64 * mu_a as f64).log2();
        let value_bytes = round_up_to_byte(value_bits) / 8;
        assert!(value_bytes <= 16, "comparison values fit a block");
        Ok(Rr17DeParams {
            hashing: h,
            sigma,
            mu_a,
            mu_b,
            value_bytes,
        })
    }
}

impl Rr17DeParams {
    /// The F_encode instances of the peer of `role`: the receiver's m·μ_B slots for the
    /// sender, the sender's m·μ_A for the receiver.
    pub(super) fn peer_instances(&self, role: Role) -> usize {
        let mu = match role {
            Role::Sender => self.mu_b,
            Role::Receiver => self.mu_a,
        };
        self.hashing.m as usize * mu
    }

    /// The bits P of the partitions of the comparison values ([`super::join`]), from the
    /// receiver's count of them.
    pub(super) fn partition_bits(&self) -> u32 {
        partition_bits(self.hashing.n_b * self.mu_a as u64)
    }
}

/// OTs of one F_encode instance: σ' chosen-message OTs in the standard model (`sigma`
/// given), one OOS16 OT otherwise.
fn ots_per_slot(h: &Hashing, sigma: Option<u32>) -> u64 {
    match sigma {
        Some(_) => h.word_bits() as u64,
        None => 1,
    }
}

impl Parameters for Rr17DeParams {
    fn encode(&self) -> Vec<u8> {
        Writer::new()
            .u64(self.hashing.m)
            .u64(self.mu_a as u64)
            .u64(self.mu_b as u64)
            .u64(self.hashing.bits as u64)
            .u64(self.sigma.unwrap_or(0) as u64)
            .u64(self.value_bytes as u64)
            .0
    }

    fn table(&self) -> ParamTable {
        let h = &self.hashing;
        let per_slot = ots_per_slot(h, self.sigma);
        let mut table = vec![
            ("bins", h.m.to_string()),
            ("mu_sender", self.mu_a.to_string()),
            ("mu_receiver", self.mu_b.to_string()),
            // OTs per direction: the receiver encodes m·μ_B slots (A), the sender m·μ_A
            // (B); an OOS16 instance is one OT, a standard-model one σ' chosen-message OTs.
            ("ots_A", (h.m * self.mu_b as u64 * per_slot).to_string()),
            ("ots_B", (h.m * self.mu_a as u64 * per_slot).to_string()),
        ];
        match self.sigma {
            Some(sigma) => {
                table.push(("sigma", sigma.to_string()));
                table.push(("word_bits", h.word_bits().to_string()));
            }
            None => table.push(("hashed_bits", h.bits.to_string())),
        }
        table.push(("v", (8 * self.value_bytes).to_string()));
        ParamTable(table)
    }
}
