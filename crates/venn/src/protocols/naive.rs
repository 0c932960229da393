//! The insecure "naive hashing" baseline of KKRT16 Table 3 (from PSSZ15): both parties
//! hash their items with SHA-256 truncated to v bits; the sender shuffles its hashes and
//! sends them; the receiver looks its own up. It protects nothing: the receiver can test
//! any guess against the sender's hashes. It exists so every benchmark row has a floor.

use super::matching::{match_shuffled, send_shuffled};
use super::{
    no_offline_state, output_bits, AnyParty, Context, Output, OutputBits, OutputKind, Parameters,
    Party, ProtocolInfo, RoleInfo, Security, Sizes, TypedProtocol,
};
use crate::crypto::{Block, RandomOracle};
use crate::items::Items;
use crate::session::Role;
use crate::Result;

/// The naive-hashing baseline.
pub(super) struct Naive;
/// Its sender.
struct NaiveSender;
/// Its receiver.
struct NaiveReceiver;

static INFO: ProtocolInfo = ProtocolInfo {
    name: "naive",
    paper: "KKRT16 Table 3 'naive hashing' baseline (PSSZ15)",
    security: Security::Insecure,
    leakage: "INSECURE: the receiver gets a plain hash of every sender item and can test any \
              guess against it. A benchmark floor only; the CLI refuses it without --insecure.",
    both_allowed: true,
    roles: &[
        RoleInfo {
            role: Role::Sender,
            security: Security::Insecure,
            output: OutputKind::Nothing,
            peer_item_bytes: 16,
            own_item_bytes: 128,
        },
        RoleInfo {
            role: Role::Receiver,
            security: Security::Insecure,
            output: OutputKind::Indices,
            peer_item_bytes: 16,
            own_item_bytes: 128,
        },
    ],
};

fn hashes(items: &Items) -> Vec<Block> {
    let oracle = RandomOracle::new("venn/naive/item", &[]);
    items.map_all(|item| oracle.hash_block(item))
}

impl TypedProtocol for Naive {
    type Config = ();

    fn info(&self) -> &'static ProtocolInfo {
        &INFO
    }

    fn params(&self, sizes: Sizes, _: ()) -> Result<Box<dyn Parameters>> {
        Ok(Box::new(OutputBits(output_bits(sizes))))
    }

    fn party(&self, role: Role) -> &'static dyn AnyParty {
        match role {
            Role::Sender => &NaiveSender,
            Role::Receiver => &NaiveReceiver,
        }
    }
}

impl Party for NaiveSender {
    no_offline_state!();

    fn online(&self, ctx: &mut Context, _: (), items: &Items) -> Result<Output> {
        let v = output_bits(ctx.session.sized);
        ctx.phase("hash items", false);
        let h = hashes(items);
        ctx.phase("send hashes", false);
        send_shuffled(ctx, &h, v)
    }
}

impl Party for NaiveReceiver {
    no_offline_state!();

    fn online(&self, ctx: &mut Context, _: (), items: &Items) -> Result<Output> {
        let v = output_bits(ctx.session.sized);
        ctx.phase("hash items", false);
        let h = hashes(items);
        ctx.phase("match hashes", false);
        match_shuffled(ctx, &h, v)
    }
}
