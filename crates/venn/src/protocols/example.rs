//! A protocol that exists to prove the add-a-protocol recipe (ARCHITECTURE.md): this module
//! and one registry line, under the `test-protocol` feature that only the workspace's test
//! builds turn on (venn's own dev-dependency on itself), and every registry-driven suite —
//! the library's protocol, fuzz-corpus and flow-control tests, the `venn` tool's and the
//! Python package's — runs it with no edit of its own. It is the naive baseline with a
//! fresh salt a run: the sender draws 16 bytes, sends them, and sends its items' salted
//! hashes shuffled; the receiver looks its own up. INSECURE (the receiver can test any guess
//! against the hashes, as with `naive`); never in a build users get.

use super::matching::{match_shuffled, send_shuffled};
use super::{
    no_offline_state, output_bits, AnyParty, Context, Output, OutputBits, OutputKind, Parameters,
    Party, ProtocolInfo, RoleInfo, Security, Sizes, TypedProtocol,
};
use crate::crypto::{Block, RandomOracle};
use crate::items::Items;
use crate::session::Role;
use crate::Result;

/// Salted hashing, the test builds' extra protocol.
pub(super) struct Example;
/// Its sender.
struct ExampleSender;
/// Its receiver.
struct ExampleReceiver;

/// The salt's length in bytes.
const SALT: usize = 16;

static INFO: ProtocolInfo = ProtocolInfo {
    name: "example",
    paper: "none: the test builds' proof that a protocol is its module and a registry line",
    security: Security::Insecure,
    leakage: "INSECURE: the receiver gets a salted hash of every sender item and the salt, \
              so it can test any guess. In test builds only.",
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

/// The items' hashes under `salt`.
fn salted(salt: &[u8], items: &Items) -> Vec<Block> {
    let oracle = RandomOracle::new("venn/example/item", salt);
    items.map_all(|item| oracle.hash_block(item))
}

impl TypedProtocol for Example {
    type Config = ();

    fn info(&self) -> &'static ProtocolInfo {
        &INFO
    }

    fn params(&self, sizes: Sizes, _: ()) -> Result<Box<dyn Parameters>> {
        Ok(Box::new(OutputBits(output_bits(sizes))))
    }

    fn party(&self, role: Role) -> &'static dyn AnyParty {
        match role {
            Role::Sender => &ExampleSender,
            Role::Receiver => &ExampleReceiver,
        }
    }
}

impl Party for ExampleSender {
    no_offline_state!();

    fn online(&self, ctx: &mut Context, _: (), items: &Items) -> Result<Output> {
        let mut salt = [0; SALT];
        ctx.prg.fill_bytes(&mut salt);
        ctx.phase("send salt", false);
        ctx.peer.send(&salt)?;
        ctx.phase("hash items", false);
        let h = salted(&salt, items);
        ctx.phase("send hashes", false);
        send_shuffled(ctx, &h, output_bits(ctx.session.sized))
    }
}

impl Party for ExampleReceiver {
    no_offline_state!();

    fn online(&self, ctx: &mut Context, _: (), items: &Items) -> Result<Output> {
        ctx.phase("receive salt", false);
        let salt = ctx.peer.recv_exact(SALT, "the salt")?;
        ctx.phase("hash items", false);
        let h = salted(&salt, items);
        ctx.phase("match hashes", false);
        match_shuffled(ctx, &h, output_bits(ctx.session.sized))
    }
}
