//! HEK12 PSI-CA (Huang, Evans, Katz: *Private Set Intersection: Are Garbled Circuits
//! Better than Custom Protocols?*, NDSS 2012, sort-compare; spec C.1): the size of the
//! intersection from a sorting network on the GMW engine — the O(n log n) baseline of
//! PSWW18's slides.
//!
//! A front end of the generic circuit PSI ([`crate::circuit_psi`], which does the rest).
//!
//! **Offline** (no inputs): the network's and comparisons' Beaver triples and one random
//! OT per output bit.
//!
//! **Online**: each party sorts its own values (σ-bit integers, or keys hashed to
//! λ + 2·log₂(2n) bits) ascending and shares them as bit planes: the receiver's run at
//! positions 0..n, the sender's at n..2n, padded with dummies ([`params`]). Batcher's
//! odd–even merging network ([`network`]) makes one ascending run of both; a common item
//! then sits next to itself, so the XOR-shared equality bits of the 2n − 1 adjacent pairs
//! hold one set bit per common item and no other. The random OTs turn them into shares of
//! their sum, as for PSWW18 (or, with `--threshold`, only whether it reaches T). HEK12's
//! shuffle is not needed: only the count leaves the circuit.

mod network;
mod params;

use crate::circuit_psi::{CircuitParams, CircuitPsi, FrontEnd, Function, Side};
use crate::crypto::Prg;
use crate::framework::{Context, OutputKind, ProtocolInfo, Security};
use crate::gmw::{Gmw, Shared};
use crate::items::Items;
use crate::session::Role;
use crate::Result;
pub(super) use params::{Hek12Config, Hek12Params};

/// HEK12's front end of the circuit PSI: the sort-compare network.
pub(super) struct Hek12;

/// HEK12's sort-compare PSI-CA (`hek12-ca`).
pub(super) const CA: CircuitPsi<Hek12> = CircuitPsi::new(Function::Count, &INFO);

/// A party's side: its run is the first (the receiver's) or the second (`SECOND`, the
/// sender's); the receiver learns the count.
pub(super) struct Run<const SECOND: bool>;

static INFO: ProtocolInfo = ProtocolInfo {
    name: "hek12-ca",
    paper: "Huang, Evans, Katz: Private Set Intersection: Are Garbled Circuits Better than \
            Custom Protocols? (NDSS 2012), sort-compare with Batcher's odd-even merging \
            network, on a GMW circuit with OT-based triples; the baseline of PSWW18's \
            slides",
    security: Security::SemiHonest,
    leakage: "The receiver learns the size of the intersection (with --threshold T only \
              whether it is at least T); the sender learns nothing. Neither learns which \
              items are common. Both learn the other's set size. Secure only if both \
              parties follow the protocol (GMW with triples from silent OT: dual LPN over \
              the ExConv code, a correlation-robust hash and the base OTs' DDH; \
              --offline iknp: IKNP, without the LPN assumption). With --sigma 32 the keys \
              are 32-bit integers compared exactly; other keys are hashed with a \
              per-session key to λ + 2·log2(2n) bits, so two distinct keys match with \
              probability at most 2^-40.",
    both_allowed: false,
    roles: &crate::circuit_psi::roles(OutputKind::Count, 2048),
};

impl FrontEnd for Hek12 {
    type Params = Hek12Params;
    type Sender = Run<true>;
    type Receiver = Run<false>;
    const DOMAIN: &'static str = "venn/hek12/base-ots";
    const CIRCUIT: &'static str = "network and count";
    const VALUE_COLUMNS: usize = 0;

    /// The 2n values' planes a few times over (shares, and a stage's gathered halves),
    /// and the values.
    fn memory(p: &Hek12Params, _: Role) -> u64 {
        let planes = 6 * 2 * p.n * p.width() as u64 / 8;
        let values = 16 * 2 * p.n;
        planes + values
    }

    fn check_items(protocol: &str, config: Hek12Config, items: &Items) -> Result<()> {
        items.check_integers(protocol, config.sigma)
    }
}

/// A party's sorted values, padded to the run with its dummies (`odd`: the sender's).
fn sorted_run(p: &Hek12Params, ctx: &Context, items: &Items, odd: bool) -> Result<Vec<u128>> {
    let mut values = items.numbers(p.sigma, p.hashed, "venn/hek12/item", &ctx.session.id)?;
    values.sort_unstable();
    let dummies =
        (0..p.n - values.len() as u64).map(|i| 1 << p.sigma | (2 * i + odd as u64) as u128);
    values.extend(dummies);
    Ok(values)
}

/// The circuit on both runs' shared planes (the receiver's first): a share of the equality
/// of each adjacent pair of the merged run.
fn evaluate(gmw: &mut Gmw, p: &Hek12Params, first: &[Shared], second: &[Shared]) -> Result<Shared> {
    let mut run: Vec<Shared> = first
        .iter()
        .zip(second)
        .map(|(a, b)| Shared::concat(&[a, b]))
        .collect();
    network::merge(gmw, &mut run, p.n as usize)?;
    let pairs = p.outputs() as usize;
    let equal: Vec<Shared> = run
        .iter()
        .map(|plane| gmw.xnor(&plane.slice(0, pairs), &plane.slice(1, pairs)))
        .collect();
    Ok(gmw.and_all(vec![equal])?.remove(0).expect("w ≥ 1"))
}

/// Shares of this party's planes, then of the peer's (each party sends its own first).
fn share_runs(gmw: &mut Gmw, mine: &[Shared], n: usize, prg: &mut Prg) -> Result<[Vec<Shared>; 2]> {
    let ours = mine
        .iter()
        .map(|x| gmw.share_input(x, prg))
        .collect::<Result<_>>()?;
    let theirs = (0..mine.len())
        .map(|_| gmw.peers_input(n))
        .collect::<Result<_>>()?;
    Ok([ours, theirs])
}

impl<const SECOND: bool> Side<Hek12Params> for Run<SECOND> {
    type Kept = ();
    type Inputs = Vec<Shared>;

    fn offline(_: &mut Context, _: &Hek12Params) -> Result<()> {
        Ok(())
    }

    /// The party's sorted run as bit planes.
    fn inputs(ctx: &mut Context, p: &Hek12Params, _: (), items: &Items) -> Result<Vec<Shared>> {
        ctx.phase("sort", false);
        let run = sorted_run(p, ctx, items, SECOND)?;
        Ok(Shared::planes(run.len(), p.width(), |i| run[i]))
    }

    /// Both runs shared (each party its own first), merged, their adjacent pairs
    /// compared.
    fn circuit(
        gmw: &mut Gmw,
        p: &Hek12Params,
        mine: &Vec<Shared>,
        prg: &mut Prg,
    ) -> Result<Shared> {
        let [ours, theirs] = share_runs(gmw, mine, p.n as usize, prg)?;
        let [first, second] = if SECOND {
            [theirs, ours]
        } else {
            [ours, theirs]
        };
        evaluate(gmw, p, &first, &second)
    }
}
