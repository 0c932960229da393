//! PSWW18's circuit (spec B.3) on the GMW engine: a bit for each bin of both tables and
//! each stash slot, set where that slot holds a common item — XOR-shared, so neither party
//! learns which.
//!
//! - **Bins**: the sender's value against each of the receiver's two slots (an ℓ-bit
//!   equality: XNOR the bits, AND them by a tree), the two results XORed (at most one
//!   holds: two slots with the sender's value would hold the same item and function).
//! - **Stash**: each of the sender's stash slots against each of the receiver's items (a
//!   σ-bit equality; with separate stashes σ + 1 bits, the table included), XORed over its
//!   items (at most one equal) and ANDed with the slot's valid bit.
//!
//! Inputs are bit-sliced planes, each shared on its own: plane j holds bit j of every
//! comparison's value, so a layer of the trees is one AND of planes. Both trees share
//! their exchanges.

use super::hashing::{ReceiversTables, SendersTables};
use super::params::Psww18Params;
use crate::gmw::{Gmw, Shared};
use crate::Result;

/// The lengths of a party's input vectors: ℓ table planes, the stash planes, and for
/// the sender the stash's valid bits.
pub(super) fn input_lengths(p: &Psww18Params, of_sender: bool) -> Vec<usize> {
    let (table, stash) = (p.table_comparisons(), p.stash_comparisons());
    let mut lengths = vec![table as usize; p.ell() as usize];
    lengths.extend(vec![stash as usize; p.stash_width() as usize]);
    if of_sender {
        lengths.push(p.stash_slots());
    }
    lengths
}

/// The sender's input: its value of each bin twice (once per slot of the receiver's), its
/// stash values each once per item of the receiver's, and the stash's valid bits.
pub(super) fn senders_input(
    p: &Psww18Params,
    t: &SendersTables,
    stash_values: &[u128],
) -> Vec<Shared> {
    let n_a = p.n_a as usize;
    let comparisons = (
        p.table_comparisons() as usize,
        p.stash_comparisons() as usize,
    );
    let mut input = Shared::planes(comparisons.0, p.ell(), |i| t.values[i / 2]);
    input.extend(Shared::planes(comparisons.1, p.stash_width(), |i| {
        stash_values[i / n_a]
    }));
    input.push(Shared::from_bools(t.slots.iter().map(Option::is_some)));
    input
}

/// The receiver's input: its two slots of each bin, and its items once per stash slot.
pub(super) fn receivers_input(
    p: &Psww18Params,
    t: &ReceiversTables,
    items: &[u128],
) -> Vec<Shared> {
    let n_a = p.n_a as usize;
    let comparisons = (
        p.table_comparisons() as usize,
        p.stash_comparisons() as usize,
    );
    let mut input = Shared::planes(comparisons.0, p.ell(), |i| t.values[i]);
    input.extend(Shared::planes(comparisons.1, p.stash_width(), |i| {
        items[i % n_a]
    }));
    input
}

/// Evaluates the circuit on shares of both inputs ([`input_lengths`]): a share of one bit
/// per bin of L, then R, then per stash slot.
pub(super) fn evaluate(
    gmw: &mut Gmw,
    p: &Psww18Params,
    receiver: &[Shared],
    sender: &[Shared],
) -> Result<Shared> {
    let ell = p.ell() as usize;
    let width = p.stash_width() as usize;
    let equal = |planes: std::ops::Range<usize>| -> Vec<Shared> {
        planes.map(|j| gmw.xnor(&receiver[j], &sender[j])).collect()
    };
    let table = equal(0..ell);
    let stash = equal(ell..ell + width);
    let mut eq = gmw.and_all(vec![table, stash])?.into_iter();
    let (table, stash) = (eq.next().flatten(), eq.next().flatten());
    let bins = table.expect("ℓ ≥ 1").xor_groups(2);
    let valid = &sender[ell + width];
    let stash = match stash {
        Some(eq) if p.n_a > 0 => {
            let found = eq.xor_groups(p.n_a as usize);
            gmw.and(&[(&found, valid)])?.remove(0)
        }
        _ => Shared::zeros(p.stash_slots()),
    };
    Ok(Shared::concat(&[&bins, &stash]))
}
