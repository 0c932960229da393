//! The insecure "naive hashing" baseline of KKRT16 Table 3 (from PSSZ15): both parties
//! hash their items with SHA-256 truncated to v bits; the sender shuffles its hashes and
//! sends them; the receiver looks its own up. It protects nothing: the receiver can test
//! any guess against the sender's hashes. It exists so every benchmark row has a floor.

use super::matching::{low_bits, receive_matches, receive_positions, send_positions, send_values};
use super::{output_bits, Context, OutputBits, Parameters, Protocol, ProtocolInfo, Security};
use crate::crypto::{Block, RandomOracle};
use crate::items::Items;
use crate::tables::MatchTable;
use crate::Result;

/// The naive-hashing baseline.
pub struct Naive;

static INFO: ProtocolInfo = ProtocolInfo {
    name: "naive",
    paper: "KKRT16 Table 3 'naive hashing' baseline (PSSZ15)",
    security: Security::Insecure,
    leakage: "INSECURE: the receiver gets a plain hash of every sender item and can test any \
              guess against it. A benchmark floor only; the CLI refuses it without --insecure.",
    both_allowed: true,
};

fn hashes(items: &Items, bits: usize) -> Vec<Block> {
    let mask = low_bits(bits);
    let oracle = RandomOracle::new("venn/naive/item", &[]);
    let mut h = items.map_all(|item| oracle.hash_block(item));
    h.iter_mut().for_each(|v| *v &= mask);
    h
}

impl Protocol for Naive {
    fn info(&self) -> &'static ProtocolInfo {
        &INFO
    }

    fn params(&self, n_sender: u64, n_receiver: u64) -> Result<Box<dyn Parameters>> {
        Ok(Box::new(OutputBits(output_bits(n_sender, n_receiver))))
    }

    fn send(&self, ctx: &mut Context, items: &Items) -> Result<Option<Vec<usize>>> {
        let v = output_bits(ctx.session.n_sender, ctx.session.n_receiver);
        ctx.phase("hash items", false);
        let h = hashes(items, v);
        let perm = ctx.prg.permutation(items.len());
        ctx.phase("send hashes", false);
        send_values(ctx.chan, items.len(), 1, v / 8, |first, out| {
            for (o, &p) in out.iter_mut().zip(&perm[first..]) {
                *o = h[p as usize];
            }
        })?;
        if !ctx.session.both {
            return Ok(None);
        }
        ctx.phase("receive intersection", false);
        let n_r = ctx.session.n_receiver as usize;
        receive_positions(ctx.chan, &perm, n_r).map(Some)
    }

    fn receive(&self, ctx: &mut Context, items: &Items) -> Result<Vec<usize>> {
        let v = output_bits(ctx.session.n_sender, ctx.session.n_receiver);
        ctx.phase("hash items", false);
        let h = hashes(items, v);
        let mut table = MatchTable::with_capacity(items.len());
        for (i, &x) in h.iter().enumerate() {
            table.insert(x, 0, i as u32);
        }
        ctx.phase("match hashes", false);
        let n_s = ctx.session.n_sender as usize;
        let matches = receive_matches(ctx.chan, n_s, 1, v / 8, &table)?;
        if ctx.session.both {
            ctx.phase("send intersection", false);
            send_positions(ctx.chan, &matches)?;
        }
        Ok(matches.iter().map(|m| m.0 as usize).collect())
    }
}
