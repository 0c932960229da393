//! What an OKVS stores and the dense part of its rows (RR22 §2, Fig. 1, Lemma 2.1): values
//! in GF(2^128) with the "field row" (d, d^2, …, d^g), or values of any width (words of
//! bits, added by XOR) with a binary dense part of g + λ' random bits — a gap of at most g
//! rows then has full rank except with probability 2^-λ' (Lemma 2.1), with no field
//! arithmetic on the values.

use super::params::MAX_BIT_COLUMNS;
use super::rows::{RowHasher, BATCH};
use super::unsolvable;
use crate::crypto::{gf128, Block, Prg};
use crate::Result;
use std::fmt::Debug;
use std::marker::PhantomData;
use std::ops::{BitXor, BitXorAssign};

/// A value an OKVS stores: bits added by XOR.
pub trait Value:
    Copy
    + Default
    + PartialEq
    + Debug
    + BitXor<Output = Self>
    + BitXorAssign
    + bytemuck::Zeroable
    + Send
    + Sync
    + 'static
{
    /// `out` drawn from `prg`.
    fn fill(prg: &mut Prg, out: &mut [Self]);
}

impl Value for Block {
    fn fill(prg: &mut Prg, out: &mut [Block]) {
        prg.fill_blocks(out);
    }
}

impl Value for u64 {
    fn fill(prg: &mut Prg, out: &mut [u64]) {
        out.iter_mut().for_each(|x| *x = prg.u64());
    }
}

/// A row's dense part, and how a bin's gap is solved on the dense columns.
pub trait Row: Copy + Default + Send + Sync + 'static {
    /// What the OKVS stores.
    type Value: Value;
    /// A gap equation's coefficients on the dense columns.
    type Coefficients: Clone;

    /// The rows of `keys` (at most `BATCH`) under `hasher`: their three sparse columns
    /// into `cols` and their dense parts, over `dense` columns, into `rows`.
    fn hash(
        hasher: &RowHasher,
        keys: &[Block],
        cols: &mut [[u32; 3]],
        rows: &mut [Self],
        dense: usize,
    );

    /// `out[i] +=` row i's dense part against the dense columns `dense`.
    fn add_evaluations(rows: &[Self], dense: &[Self::Value], out: &mut [Self::Value]);

    /// The coefficients of no row, over `dense` columns.
    fn zero(dense: usize) -> Self::Coefficients;

    /// `to +=` this row's dense part.
    fn add_to(&self, to: &mut Self::Coefficients);

    /// Solves the gap's equations (coefficients, value) on the dense columns `out`; the
    /// columns no equation needs keep what `out` holds (0, or random when filled).
    fn solve(
        equations: Vec<(Self::Coefficients, Self::Value)>,
        out: &mut [Self::Value],
    ) -> Result<()>;
}

/// RR22's field row (d, d^2, …, d^g), kept as its d (from the key's row hash): values in
/// GF(2^128).
pub type FieldRow = Block;

impl Row for FieldRow {
    type Value = Block;
    type Coefficients = Vec<Block>;

    fn hash(
        hasher: &RowHasher,
        keys: &[Block],
        cols: &mut [[u32; 3]],
        rows: &mut [Block],
        _: usize,
    ) {
        hasher.rows(keys, cols, rows);
    }

    fn add_evaluations(rows: &[Block], dense: &[Block], out: &mut [Block]) {
        gf128::add_evaluations(rows, dense, out);
    }

    fn zero(dense: usize) -> Vec<Block> {
        vec![Block::ZERO; dense]
    }

    fn add_to(&self, to: &mut Vec<Block>) {
        let mut power = *self;
        for c in to.iter_mut() {
            *c ^= power;
            power *= *self;
        }
    }

    /// Gauss–Jordan over GF(2^128).
    fn solve(mut equations: Vec<(Vec<Block>, Block)>, out: &mut [Block]) -> Result<()> {
        let dense = out.len();
        let mut pivot_cols = Vec::with_capacity(equations.len());
        for i in 0..equations.len() {
            let col = (0..dense)
                .find(|&c| equations[i].0[c] != Block::ZERO)
                .ok_or_else(|| unsolvable("two rows alike".into()))?;
            let inv = gf128::inverse(equations[i].0[col]).expect("nonzero");
            let (row, value) = &mut equations[i];
            for x in row.iter_mut() {
                *x *= inv;
            }
            *value *= inv;
            let (pivot_row, pivot_value) = equations[i].clone();
            for (j, (row, value)) in equations.iter_mut().enumerate() {
                let f = row[col];
                if j != i && f != Block::ZERO {
                    for (x, &p) in row.iter_mut().zip(&pivot_row) {
                        *x ^= f * p;
                    }
                    *value ^= f * pivot_value;
                }
            }
            pivot_cols.push(col);
        }
        // In reduced form each equation has its pivot column and free ones only.
        let free: Vec<usize> = (0..dense).filter(|c| !pivot_cols.contains(c)).collect();
        for (&col, (row, value)) in pivot_cols.iter().zip(&equations) {
            out[col] = free.iter().fold(*value, |v, &f| v ^ (row[f] * out[f]));
        }
        Ok(())
    }
}

/// A binary dense part: bit j set where the row has dense column j (at most 64 columns),
/// from a hash of the key of its own. Values of any [`Value`] type.
#[derive(Clone, Copy, Debug)]
pub struct BitRow<V>(u64, PhantomData<V>);

impl<V> BitRow<V> {
    /// The row with dense columns `bits`.
    #[cfg(test)]
    pub(super) fn from_bits(bits: u64) -> Self {
        BitRow(bits, PhantomData)
    }
}

impl<V> Default for BitRow<V> {
    fn default() -> Self {
        BitRow(0, PhantomData)
    }
}

impl<V: Value> Row for BitRow<V> {
    type Value = V;
    type Coefficients = u64;

    fn hash(
        hasher: &RowHasher,
        keys: &[Block],
        cols: &mut [[u32; 3]],
        rows: &mut [Self],
        dense: usize,
    ) {
        let mut ds = [Block::ZERO; BATCH];
        let ds = &mut ds[..keys.len()];
        hasher.rows(keys, cols, ds);
        hasher.dense_bits(keys, ds);
        let mask = match dense {
            0 => 0,
            d => u64::MAX >> (MAX_BIT_COLUMNS - d),
        };
        for (r, d) in rows.iter_mut().zip(ds) {
            *r = BitRow((*d).low_u64() & mask, PhantomData);
        }
    }

    fn add_evaluations(rows: &[Self], dense: &[V], out: &mut [V]) {
        for (o, r) in out.iter_mut().zip(rows) {
            let mut bits = r.0;
            while bits != 0 {
                *o ^= dense[bits.trailing_zeros() as usize];
                bits &= bits - 1;
            }
        }
    }

    fn zero(_: usize) -> u64 {
        0
    }

    fn add_to(&self, to: &mut u64) {
        *to ^= self.0;
    }

    /// Gauss–Jordan over GF(2), an equation's coefficients one word.
    fn solve(mut equations: Vec<(u64, V)>, out: &mut [V]) -> Result<()> {
        let mut pivot_cols = Vec::with_capacity(equations.len());
        for i in 0..equations.len() {
            let (row, value) = equations[i];
            if row == 0 {
                return Err(unsolvable("the gap's dense bits are dependent".into()));
            }
            let col = row.trailing_zeros();
            for (j, e) in equations.iter_mut().enumerate() {
                if j != i && (e.0 >> col) & 1 == 1 {
                    e.0 ^= row;
                    e.1 ^= value;
                }
            }
            pivot_cols.push(col);
        }
        let pivots = pivot_cols.iter().fold(0u64, |m, &c| m | 1 << c);
        for (&col, &(row, value)) in pivot_cols.iter().zip(&equations) {
            let mut free = row & !pivots;
            let mut v = value;
            while free != 0 {
                v ^= out[free.trailing_zeros() as usize];
                free &= free - 1;
            }
            out[col as usize] = v;
        }
        Ok(())
    }
}
