//! What an OT extension starts from: κ base OTs, run once with a [`BaseOt`] of the
//! caller's choice and kept (or saved in a precomputed state) until the extension runs.
//!
//! The roles cross over: the extension *sender* is the base-OT *receiver*, with random
//! choice bits Δ; the extension *receiver* is the base-OT *sender*.

use super::{BaseOt, ExtensionReceiver, ExtensionSender, BASE_OTS};
use crate::crypto::{Aes, Block, Prg};
use crate::net::Channel;
use crate::state::{exactly, StateReader, StateWriter};
use crate::Result;

/// The extension sender's seeds: its base-OT choices Δ and the keys `k_i^{Δ_i}`.
pub struct SenderSeeds {
    pub(super) delta: Vec<bool>,
    pub(super) keys: Vec<Block>,
}

/// The column seed of segment `k` of an extension run in segments:
/// `AES_seed(2^127 + k)`, a block of the column's AES-CTR stream far past the counters of
/// any row (those are below 2^32), so every segment's columns are fresh PRG streams.
fn segment_seed(seed: Block, k: u64) -> Block {
    Aes::new(seed).encrypt(Block::unit(127) | Block::from(k))
}

/// The segment whose keys [`SenderSeeds::chosen_by_delta`] and
/// [`ReceiverSeeds::chosen_by_delta`] give: one no extension run reaches (their segments
/// count from 0), so those keys are independent of every extension's streams.
const CHOSEN_BY_DELTA: u64 = u64::MAX;

impl SenderSeeds {
    /// The OT extension these seeds key, as its sender.
    pub fn extension(&self) -> ExtensionSender {
        ExtensionSender::new(&self.keys, &self.delta)
    }

    /// The sender of segment `k` of an extension run in segments (KOS15 Fig. 7's Extend
    /// called again with the same Δ): the same Δ, fresh column streams.
    pub fn segment(&self, k: u64) -> ExtensionSender {
        ExtensionSender::new(&self.segment_keys(k), &self.delta)
    }

    fn segment_keys(&self, k: u64) -> Vec<Block> {
        self.keys.iter().map(|&s| segment_seed(s, k)).collect()
    }

    /// Δ as a block, bit i the choice of base OT i.
    pub fn delta_block(&self) -> Block {
        self.delta
            .iter()
            .enumerate()
            .filter(|(_, &bit)| bit)
            .fold(Block::ZERO, |acc, (i, _)| acc | Block::unit(i))
    }

    /// κ more OTs with Δ's bits as the choices, for a protocol that multiplies by the
    /// extension's Δ (the silent VOLE's base VOLE, which so shares the extension's Δ as
    /// Ferret's shares IKNP's, YWL+20 §5): `k_i^{Δ_i}` of a segment reserved for them.
    pub fn chosen_by_delta(&self) -> Vec<Block> {
        self.segment_keys(CHOSEN_BY_DELTA)
    }

    /// Runs κ base OTs of kind `B` as their receiver, with fresh random Δ.
    pub fn new<B: BaseOt>(chan: &mut dyn Channel, prg: &mut Prg, sid: &[u8; 32]) -> Result<Self> {
        let delta: Vec<bool> = (0..BASE_OTS).map(|_| prg.u64() & 1 == 1).collect();
        let keys = B::receive(chan, &delta, prg, sid)?;
        Ok(SenderSeeds { delta, keys })
    }

    /// Writes the seeds (for a precomputed state).
    pub fn save(&self, out: &mut StateWriter) -> Result<()> {
        out.bits(&self.delta)?;
        out.blocks(&self.keys)
    }

    /// Reads what [`SenderSeeds::save`] wrote.
    pub fn load(input: &mut StateReader) -> Result<Self> {
        Ok(SenderSeeds {
            delta: exactly(input.bits(BASE_OTS, "base-OT choices")?, BASE_OTS)?,
            keys: exactly(input.blocks(BASE_OTS, "base-OT keys")?, BASE_OTS)?,
        })
    }
}

/// The extension receiver's seeds: the base-OT key pairs `(k_i^0, k_i^1)`.
pub struct ReceiverSeeds {
    pub(super) keys: Vec<[Block; 2]>,
}

impl ReceiverSeeds {
    /// The OT extension these seeds key, as its receiver.
    pub fn extension(&self) -> ExtensionReceiver {
        ExtensionReceiver::new(&self.keys)
    }

    /// The receiver of segment `k` (see [`SenderSeeds::segment`]).
    pub fn segment(&self, k: u64) -> ExtensionReceiver {
        ExtensionReceiver::new(&self.segment_keys(k))
    }

    fn segment_keys(&self, k: u64) -> Vec<[Block; 2]> {
        self.keys
            .iter()
            .map(|pair| pair.map(|s| segment_seed(s, k)))
            .collect()
    }

    /// The sender's pairs of the OTs [`SenderSeeds::chosen_by_delta`] chooses from.
    pub fn chosen_by_delta(&self) -> Vec<[Block; 2]> {
        self.segment_keys(CHOSEN_BY_DELTA)
    }

    /// Runs κ base OTs of kind `B` as their sender.
    pub fn new<B: BaseOt>(chan: &mut dyn Channel, prg: &mut Prg, sid: &[u8; 32]) -> Result<Self> {
        Ok(ReceiverSeeds {
            keys: B::send(chan, BASE_OTS, prg, sid)?,
        })
    }

    /// Writes the seeds (for a precomputed state).
    pub fn save(&self, out: &mut StateWriter) -> Result<()> {
        out.blocks(self.keys.as_flattened())
    }

    /// Reads what [`ReceiverSeeds::save`] wrote.
    pub fn load(input: &mut StateReader) -> Result<Self> {
        let keys = exactly(
            input.blocks(2 * BASE_OTS, "base-OT key pairs")?,
            2 * BASE_OTS,
        )?;
        Ok(ReceiverSeeds {
            keys: keys.chunks_exact(2).map(|k| [k[0], k[1]]).collect(),
        })
    }
}

/// Correlated seeds for `columns` columns without running OTs (tests of the extensions):
/// choices Δ, the chosen keys, and the key pairs.
#[cfg(test)]
pub(super) fn test_columns(
    prg: &mut Prg,
    columns: usize,
) -> (Vec<bool>, Vec<Block>, Vec<[Block; 2]>) {
    let delta: Vec<bool> = (0..columns).map(|_| prg.u64() & 1 == 1).collect();
    let keys: Vec<[Block; 2]> = (0..columns).map(|_| [prg.block(), prg.block()]).collect();
    let chosen = keys
        .iter()
        .zip(&delta)
        .map(|(k, &d)| k[d as usize])
        .collect();
    (delta, chosen, keys)
}

/// Correlated seeds for both sides without running base OTs (tests of the extensions).
#[cfg(test)]
pub(crate) fn test_seeds(prg: &mut Prg) -> (SenderSeeds, ReceiverSeeds) {
    let (delta, chosen, keys) = test_columns(prg, BASE_OTS);
    (
        SenderSeeds {
            delta,
            keys: chosen,
        },
        ReceiverSeeds { keys },
    )
}
