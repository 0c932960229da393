//! One bin's system solved (RR22 Fig. 1, §3.3): greedy peeling of the sparse rows into a
//! triangular part and a small gap, the gap solved on the dense columns, then
//! back-substitution.
//!
//! Peeling pops a sparse column of least weight (counting only rows not yet placed): its
//! first unplaced row becomes the column's pivot, its other unplaced rows join the gap.
//! Each pivot row's other columns are popped later or never (were one popped earlier, the
//! row would have been placed then), so in pop order the pivot rows are triangular. A gap
//! row minus the pivot rows that cancel its sparse part (taken in pop order) is an equation
//! on the dense columns only; those equations are solved by Gauss–Jordan over GF(2^128),
//! then the pivots are set in reverse pop order. Columns never popped stay 0.

use super::rows::Row;
use crate::crypto::{gf128, Block};
use crate::{Error, Result};
use std::collections::BTreeSet;

const NONE: u32 = u32::MAX;

/// Solves one bin: `out` (the bin's m' sparse then g dense columns, zeroed) receives P with
/// Decode(P, row_i) = values[i] for every row.
pub(super) fn solve(
    rows: &[Row],
    values: &[Block],
    sparse: usize,
    out: &mut [Block],
) -> Result<()> {
    let dense = out.len() - sparse;
    let peeled = peel(rows, sparse);
    if peeled.gaps.len() > dense {
        return Err(unsolvable(format!(
            "{} rows left after peeling, for {dense} dense columns",
            peeled.gaps.len()
        )));
    }
    let (sparse_out, dense_out) = out.split_at_mut(sparse);
    let equations: Vec<(Vec<Block>, Block)> = peeled
        .gaps
        .iter()
        .map(|&g| gap_equation(g, rows, values, &peeled, dense))
        .collect();
    solve_dense(equations, dense_out)?;
    for &(col, row) in peeled.pivots.iter().rev() {
        let r = &rows[row as usize];
        let mut v = values[row as usize] ^ dense_value(r.d, dense_out);
        for &c in &r.cols {
            if c != col {
                v ^= sparse_out[c as usize];
            }
        }
        sparse_out[col as usize] = v;
    }
    Ok(())
}

/// Σ_j d^j · D[j−1] (j = 1..g): a row's dense part against the dense columns, by Horner.
#[inline]
pub(super) fn dense_value(d: Block, dense: &[Block]) -> Block {
    let mut acc = 0;
    for &x in dense.iter().rev() {
        acc = gf128::mul(acc ^ x, d);
    }
    acc
}

fn unsolvable(why: String) -> Error {
    Error::Params(format!(
        "the OKVS could not be encoded ({why}): a duplicate key, or the 2^-40 failure"
    ))
}

/// The peeling's result: pivots (column, row) in pop order, the gap rows, and each
/// column's place in the pivot order.
struct Peeled {
    pivots: Vec<(u32, u32)>,
    gaps: Vec<u32>,
    pivot_of: Vec<u32>,
}

/// Greedy peeling (RR22 Fig. 1 steps 2–4) with columns bucketed by weight in doubly linked
/// lists.
fn peel(rows: &[Row], sparse: usize) -> Peeled {
    // Column → rows, as compressed lists.
    let mut start = vec![0u32; sparse + 1];
    for r in rows {
        for &c in &r.cols {
            start[c as usize + 1] += 1;
        }
    }
    for c in 0..sparse {
        start[c + 1] += start[c];
    }
    let mut weight: Vec<u32> = (0..sparse).map(|c| start[c + 1] - start[c]).collect();
    let mut fill = start.clone();
    let mut members = vec![0u32; 3 * rows.len()];
    for (i, r) in rows.iter().enumerate() {
        for &c in &r.cols {
            members[fill[c as usize] as usize] = i as u32;
            fill[c as usize] += 1;
        }
    }
    let most = weight.iter().copied().max().unwrap_or(0) as usize;
    let mut buckets = Buckets::new(sparse, most);
    for (c, &w) in weight.iter().enumerate() {
        if w > 0 {
            buckets.insert(c as u32, w);
        }
    }
    let mut placed = vec![false; rows.len()];
    let mut pivot_of = vec![NONE; sparse];
    let (mut pivots, mut gaps) = (Vec::with_capacity(rows.len()), Vec::new());
    while let Some(col) = buckets.pop_least() {
        let c = col as usize;
        weight[c] = 0;
        let mut pivot = true;
        for &row in &members[start[c] as usize..start[c + 1] as usize] {
            if placed[row as usize] {
                continue;
            }
            placed[row as usize] = true;
            if pivot {
                pivot_of[c] = pivots.len() as u32;
                pivots.push((col, row));
                pivot = false;
            } else {
                gaps.push(row);
            }
            for &other in &rows[row as usize].cols {
                let o = other as usize;
                if other != col && weight[o] > 0 {
                    buckets.remove(other, weight[o]);
                    weight[o] -= 1;
                    if weight[o] > 0 {
                        buckets.insert(other, weight[o]);
                    }
                }
            }
        }
    }
    Peeled {
        pivots,
        gaps,
        pivot_of,
    }
}

/// A gap row minus the pivot rows that cancel its sparse part: (its dense row, its value).
fn gap_equation(
    gap: u32,
    rows: &[Row],
    values: &[Block],
    peeled: &Peeled,
    dense: usize,
) -> (Vec<Block>, Block) {
    let mut coefficients = vec![0; dense];
    let mut value = 0;
    let mut add = |row: u32, left: &mut BTreeSet<u32>| {
        let r = &rows[row as usize];
        let mut power = r.d;
        for c in coefficients.iter_mut() {
            *c ^= power;
            power = gf128::mul(power, r.d);
        }
        value ^= values[row as usize];
        for &c in &r.cols {
            // Columns never popped hold 0 and drop out.
            let p = peeled.pivot_of[c as usize];
            if p != NONE && !left.remove(&p) {
                left.insert(p);
            }
        }
    };
    let mut left = BTreeSet::new();
    add(gap, &mut left);
    // The first pivot left is cancelled by its own row, whose other columns come later.
    while let Some(&p) = left.first() {
        add(peeled.pivots[p as usize].1, &mut left);
    }
    (coefficients, value)
}

/// Solves the gap's equations on the dense columns by Gauss–Jordan; dense columns that no
/// pivot needs stay 0.
fn solve_dense(mut equations: Vec<(Vec<Block>, Block)>, out: &mut [Block]) -> Result<()> {
    let dense = out.len();
    let mut pivot_cols = Vec::with_capacity(equations.len());
    for i in 0..equations.len() {
        let col = (0..dense)
            .find(|&c| equations[i].0[c] != 0)
            .ok_or_else(|| unsolvable("two rows alike".into()))?;
        let inv = gf128::inverse(equations[i].0[col]).expect("nonzero");
        let (row, value) = &mut equations[i];
        for x in row.iter_mut() {
            *x = gf128::mul(*x, inv);
        }
        *value = gf128::mul(*value, inv);
        let (pivot_row, pivot_value) = equations[i].clone();
        for (j, (row, value)) in equations.iter_mut().enumerate() {
            let f = row[col];
            if j != i && f != 0 {
                for (x, &p) in row.iter_mut().zip(&pivot_row) {
                    *x ^= gf128::mul(f, p);
                }
                *value ^= gf128::mul(f, pivot_value);
            }
        }
        pivot_cols.push(col);
    }
    for (col, (_, value)) in pivot_cols.into_iter().zip(equations) {
        out[col] = value;
    }
    Ok(())
}

/// Columns by weight: a doubly linked list per weight, and the least nonempty weight.
struct Buckets {
    head: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
    least: usize,
}

impl Buckets {
    fn new(columns: usize, most: usize) -> Buckets {
        Buckets {
            head: vec![NONE; most + 1],
            next: vec![NONE; columns],
            prev: vec![NONE; columns],
            least: 1,
        }
    }

    fn insert(&mut self, c: u32, w: u32) {
        let h = self.head[w as usize];
        self.next[c as usize] = h;
        self.prev[c as usize] = NONE;
        if h != NONE {
            self.prev[h as usize] = c;
        }
        self.head[w as usize] = c;
        self.least = self.least.min(w as usize);
    }

    fn remove(&mut self, c: u32, w: u32) {
        let (n, p) = (self.next[c as usize], self.prev[c as usize]);
        if p == NONE {
            self.head[w as usize] = n;
        } else {
            self.next[p as usize] = n;
        }
        if n != NONE {
            self.prev[n as usize] = p;
        }
    }

    /// Takes a column of the least nonzero weight out.
    fn pop_least(&mut self) -> Option<u32> {
        while self.least < self.head.len() && self.head[self.least] == NONE {
            self.least += 1;
        }
        let c = *self.head.get(self.least)?;
        self.remove(c, self.least as u32);
        Some(c)
    }
}
