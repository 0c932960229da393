//! PSWW18's circuit (spec B.3) on the GMW engine: a bit for each bin of both tables and
//! each stash slot, set where that slot holds a common item — XOR-shared, so neither party
//! learns which.
//!
//! - **Bins**: Bob's value against each of Alice's two slots (an ℓ-bit equality: XNOR the
//!   bits, AND them by a tree), the two results XORed (at most one holds: two slots with
//!   Bob's value would hold the same item and function).
//! - **Stash**: each of Bob's stash slots against each of Alice's items (a σ-bit equality;
//!   with separate stashes σ + 1 bits, the table included), XORed over her items (at most
//!   one equal) and ANDed with the slot's valid bit.
//!
//! Inputs are bit-sliced planes: plane j holds bit j of every comparison's value, so a
//! layer of the trees is one AND of planes. Both trees share their exchanges.

use super::hashing::{AlicesTables, BobsTables};
use super::params::Psww18Params;
use crate::gmw::{Gmw, Shared};
use crate::Result;

/// Bits of the planes of `n` values of `bits` bits each, plane after plane.
fn planes(n: usize, bits: u32, value: impl Fn(usize) -> u128) -> Vec<Shared> {
    let values: Vec<u128> = (0..n).map(value).collect();
    (0..bits)
        .map(|j| {
            let words = values
                .chunks(64)
                .map(|c| {
                    (c.iter().enumerate()).fold(0u64, |w, (i, &v)| w | ((v >> j) as u64 & 1) << i)
                })
                .collect();
            Shared::from_words(words, n)
        })
        .collect()
}

/// The shape of the circuit's inputs.
struct Layout {
    /// Table comparisons (4b: bin-major, Alice's two slots).
    table: usize,
    /// Stash comparisons (slot-major, all of Alice's items a slot).
    stash: usize,
    ell: u32,
    width: u32,
    slots: usize,
}

impl Layout {
    fn new(p: &Psww18Params) -> Self {
        Layout {
            table: p.table_comparisons() as usize,
            stash: p.stash_comparisons() as usize,
            ell: p.ell(),
            width: p.stash_width(),
            slots: p.stash_slots(),
        }
    }

    /// Bits of Alice's input: her table planes, then her stash planes.
    fn alices_bits(&self) -> usize {
        self.ell as usize * self.table + self.width as usize * self.stash
    }

    /// Bits of Bob's input: his planes as Alice's, then each stash slot's valid bit.
    fn bobs_bits(&self) -> usize {
        self.alices_bits() + self.slots
    }

    /// Plane `j` of the table part, and of the stash part, of an input vector.
    fn table_plane(&self, input: &Shared, j: u32) -> Shared {
        input.slice(j as usize * self.table, self.table)
    }

    fn stash_plane(&self, input: &Shared, j: u32) -> Shared {
        let start = self.ell as usize * self.table + j as usize * self.stash;
        input.slice(start, self.stash)
    }
}

/// Bob's input bits: his value of each bin twice (once per slot of Alice's), his stash
/// values each once per item of Alice's, and the stash's valid bits.
pub fn bobs_input(p: &Psww18Params, t: &BobsTables, stash_values: &[u128]) -> Shared {
    let l = Layout::new(p);
    let n_a = p.n_a as usize;
    let table = planes(l.table, l.ell, |i| t.values[i / 2]);
    let stash = planes(l.stash, l.width, |i| stash_values[i / n_a]);
    let valid = Shared::from_bools(t.slots.iter().map(Option::is_some));
    let parts: Vec<&Shared> = table.iter().chain(&stash).chain([&valid]).collect();
    Shared::concat(&parts)
}

/// Alice's input bits: her two slots of each bin, and her items once per stash slot.
pub fn alices_input(p: &Psww18Params, t: &AlicesTables, items: &[u128]) -> Shared {
    let l = Layout::new(p);
    let n_a = p.n_a as usize;
    let table = planes(l.table, l.ell, |i| t.values[i]);
    let stash = planes(l.stash, l.width, |i| items[i % n_a]);
    let parts: Vec<&Shared> = table.iter().chain(&stash).collect();
    Shared::concat(&parts)
}

/// Bits of Alice's input.
pub fn alices_bits(p: &Psww18Params) -> usize {
    Layout::new(p).alices_bits()
}

/// Bits of Bob's input.
pub fn bobs_bits(p: &Psww18Params) -> usize {
    Layout::new(p).bobs_bits()
}

/// Words of triples the circuit uses.
pub fn triple_words(p: &Psww18Params) -> usize {
    let l = Layout::new(p);
    (l.ell as usize - 1) * l.table.div_ceil(64)
        + (l.width as usize - 1) * l.stash.div_ceil(64)
        + l.slots.div_ceil(64)
}

/// Evaluates the circuit on shares of both inputs: a share of one bit per bin of L, then
/// R, then per stash slot.
pub fn evaluate(gmw: &mut Gmw, p: &Psww18Params, alice: &Shared, bob: &Shared) -> Result<Shared> {
    let l = Layout::new(p);
    let equal = |plane: &dyn Fn(&Shared, u32) -> Shared, bits: u32| -> Vec<Shared> {
        (0..bits)
            .map(|j| gmw.xnor(&plane(alice, j), &plane(bob, j)))
            .collect()
    };
    let table = equal(&|x, j| l.table_plane(x, j), l.ell);
    let stash = equal(&|x, j| l.stash_plane(x, j), l.width);
    let mut eq = gmw.and_all(vec![table, stash])?.into_iter();
    let (table, stash) = (eq.next().flatten(), eq.next().flatten());
    let bins = table.expect("ℓ ≥ 1").xor_groups(2);
    let valid = bob.slice(l.alices_bits(), l.slots);
    let stash = match stash {
        Some(eq) if p.n_a > 0 => {
            let found = eq.xor_groups(p.n_a as usize);
            gmw.and(&[(&found, &valid)])?.remove(0)
        }
        _ => Shared::zeros(l.slots),
    };
    Ok(Shared::concat(&[&bins, &stash]))
}
