//! The 512 column seeds of an OOS16 extension, from KOS15 random OTs (malicious-secure,
//! as OOS16 needs; IKNP's would not do), and their place in a precomputed state.

use super::COLUMNS;
use crate::crypto::{Block, Prg};
use crate::net::Channel;
use crate::ot::{kos_receive, kos_send, MasnyRindal, ReceiverSeeds, SenderSeeds};
use crate::state::{exactly, StateReader, StateWriter};
use crate::Result;

/// The sender's column seeds: random choices Δ and the keys `k_i^{Δ_i}`.
pub struct OosSenderSeeds {
    pub(super) delta: Vec<bool>,
    pub(super) keys: Vec<Block>,
}

impl OosSenderSeeds {
    /// 512 KOS15 random OTs as their receiver, with random choices Δ (`sid` should name
    /// this direction).
    pub fn new(chan: &mut dyn Channel, prg: &mut Prg, sid: &[u8; 32]) -> Result<Self> {
        let base = ReceiverSeeds::new::<MasnyRindal>(chan, prg, sid)?;
        let delta: Vec<bool> = (0..COLUMNS).map(|_| prg.u64() & 1 == 1).collect();
        let kos = kos_receive(chan, &base, delta.clone(), prg, sid, Vec::new())?;
        let all: Vec<u32> = (0..COLUMNS as u32).collect();
        Ok(OosSenderSeeds {
            keys: kos.messages(&all),
            delta,
        })
    }

    /// Writes the seeds (for a precomputed state).
    pub fn save(&self, out: &mut StateWriter) -> Result<()> {
        out.bits(&self.delta)?;
        out.blocks(&self.keys)
    }

    /// Reads what [`OosSenderSeeds::save`] wrote.
    pub fn load(input: &mut StateReader) -> Result<Self> {
        Ok(OosSenderSeeds {
            delta: exactly(input.bits(COLUMNS, "OOS16 choices")?, COLUMNS)?,
            keys: exactly(input.blocks(COLUMNS, "OOS16 keys")?, COLUMNS)?,
        })
    }
}

/// The receiver's column seeds: both keys `(k_i^0, k_i^1)` of each column.
pub struct OosReceiverSeeds {
    pub(super) keys: Vec<[Block; 2]>,
}

impl OosReceiverSeeds {
    /// 512 KOS15 random OTs as their sender (`sid` should name this direction).
    pub fn new(chan: &mut dyn Channel, prg: &mut Prg, sid: &[u8; 32]) -> Result<Self> {
        let base = SenderSeeds::new::<MasnyRindal>(chan, prg, sid)?;
        let kos = kos_send(chan, &base, COLUMNS, prg, sid)?;
        let all: Vec<u32> = (0..COLUMNS as u32).collect();
        let (mut k0, mut k1) = (Vec::new(), Vec::new());
        kos.messages(&all, false, &mut k0);
        kos.messages(&all, true, &mut k1);
        Ok(OosReceiverSeeds {
            keys: k0.into_iter().zip(k1).map(|(a, b)| [a, b]).collect(),
        })
    }

    /// Writes the seeds (for a precomputed state).
    pub fn save(&self, out: &mut StateWriter) -> Result<()> {
        out.blocks(self.keys.as_flattened())
    }

    /// Reads what [`OosReceiverSeeds::save`] wrote.
    pub fn load(input: &mut StateReader) -> Result<Self> {
        let keys = exactly(input.blocks(2 * COLUMNS, "OOS16 key pairs")?, 2 * COLUMNS)?;
        Ok(OosReceiverSeeds {
            keys: keys.chunks_exact(2).map(|k| [k[0], k[1]]).collect(),
        })
    }
}
