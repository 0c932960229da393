//! The dual execution in the random-oracle model (`rr17-de`): F_encode by OOS16 over
//! BCH-(511, 76, 171), items hashed to words (§7).

use super::dual::{directions, Configured, DeState, DualExecution, Realisation};
use super::params::Rr17DeParams;
use super::{phased, Domains, Hashing, OwnSlots};
use crate::crypto::{first_block, Block, RowDigest, RowHash};
use crate::items::Items;
use crate::ot::oos16::{
    both_ways, OosReceiver, OosReceiverSeeds, OosRows, OosSender, OosSenderSeeds,
};
use crate::protocols::{Bins, Context, OutputKind, ProtocolInfo, RoleInfo, Security, Sizes};
use crate::session::Role;
use crate::tables::simple_hash::SlotTable;
use crate::Result;

/// RR17 dual-execution PSI in the random-oracle model (`rr17-de`).
pub(crate) type Rr17De = DualExecution<Rom>;

static INFO: ProtocolInfo = ProtocolInfo {
    name: "rr17-de",
    paper: "Rindal, Rosulek: Malicious-Secure Private Set Intersection via Dual Execution \
            (CCS 2017), Fig. 4 with §6.2, F_encode by OOS16 over BCH-(511,76,171) (§7)",
    security: Security::Malicious,
    leakage: "The receiver learns the intersection; the sender learns nothing. Both learn the \
              other's set size. Secure against a malicious party in the random-oracle model \
              (UC, with the paper's relaxation: a cheating party's set may hold up to m·μ \
              items, about 7.75n at n = 2^20); a party whose OT-extension rows do not each \
              encode one value is caught by the OOS16 check before anything depends on them.",
    both_allowed: false,
    roles: &[
        RoleInfo {
            role: Role::Sender,
            security: Security::Malicious,
            output: OutputKind::Nothing,
            // Direction A's rows: m·μ_B rows of 64 bytes, m·μ_B ≈ 7.75 n_B.
            peer_item_bytes: 600,
            // Its slot words and outputs, and its μ_B values of 16 bytes (μ_B about 31
            // with LAN bins, 47 with WAN bins at 2^20).
            own_item_bytes: 1000,
        },
        RoleInfo {
            role: Role::Receiver,
            security: Security::Malicious,
            output: OutputKind::Indices,
            // Direction B's rows (m·μ_A of 64 bytes) and the sender's values as they
            // stream.
            peer_item_bytes: 600,
            // μ_A values per item, each 8 bytes in its partition and 4 to 12 kept by
            // entry, slot words and outputs: about 600 bytes an item with LAN bins, μ about
            // 1.5 times larger with WAN bins.
            own_item_bytes: 1000,
        },
    ],
};

/// The random-oracle realisation: OOS16 over BCH-(511, 76, 171), items hashed to
/// [`Hashing::bits`] bits (§7).
pub(crate) struct Rom;

impl Configured for Rom {
    type Config = Bins;
}

impl Realisation for Rom {
    const INFO: &'static ProtocolInfo = &INFO;
    const SEED_TOSS: &'static str = "rr17-de hashing seed";
    type SendingSeeds = OosSenderSeeds;
    type EncodingSeeds = OosReceiverSeeds;
    type Sending = (OosRows, RowHash);
    type Scratch = Vec<RowDigest>;

    fn params(sizes: Sizes, bins: Bins) -> Result<Rr17DeParams> {
        let hashing = Hashing::new(INFO.name, sizes, bins)?;
        Rr17DeParams::new(INFO.name, hashing, None)
    }

    fn phased(
        d: &Domains,
        p: &Rr17DeParams,
        seed: Block,
        items: &Items,
    ) -> Result<(Vec<usize>, Vec<Block>)> {
        Ok(phased(&d.hashed(&p.hashing, seed, items), p.hashing.m))
    }

    /// Both directions at once, a batch of each in turn ([`both_ways`]).
    fn encode_both(
        ctx: &mut Context,
        p: &Rr17DeParams,
        d: &Domains,
        state: &DeState<Self>,
        role: Role,
        slots: &SlotTable,
        words: &[Block],
    ) -> Result<(Vec<Block>, (OosRows, RowHash))> {
        let (own_direction, peer_direction) = directions(role);
        let (own_words, own) = OwnSlots::new(slots, words);
        let (receiver, sender) = (
            OosReceiver::new(&state.encoding),
            OosSender::new(&state.sending),
        );
        let encoding = receiver.start(own_words, &mut ctx.prg);
        let incoming = sender.start(p.peer_instances(role), false);
        let hash = d.encoding_hash(own_direction);
        let (outputs, rows) = both_ways(ctx.peer, encoding, incoming, &mut ctx.prg, &hash)?;
        let own = own.by_item(outputs).iter().map(first_block).collect();
        Ok((own, (rows, d.encoding_hash(peer_direction))))
    }

    fn encode_bin(
        (rows, hash): &(OosRows, RowHash),
        first: usize,
        count: usize,
        words: &[Block],
        digests: &mut Vec<RowDigest>,
        out: &mut Vec<Block>,
    ) {
        digests.clear();
        rows.encode(hash, first, count, words, digests);
        out.extend(digests.iter().map(first_block));
    }

    fn release((rows, _): &mut (OosRows, RowHash), from: usize) {
        rows.release(from);
    }
}
