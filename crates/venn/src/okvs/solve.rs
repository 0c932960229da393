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
//!
//! The peeling runs in two phases that together make exactly those pops. While a column of
//! weight 1 is left, the least weight is 1 and a pop places that column's one row and no
//! gap; which weight-1 column goes first does not matter (what is left when none is, the
//! hypergraph's 2-core, is the same whatever the order). This phase needs only each
//! column's weight and the XOR of its unplaced rows' indices (which is the row when the
//! weight is 1): two words a column, no lists, as in XOR-filter construction. Past RR22's
//! threshold (e ≈ 1.27 > 1.2218, Lemma 3.5) the 2-core is almost always empty; when it is
//! not, the general greedy (columns bucketed by weight, with their row lists) takes the
//! 2-core's rows on from there, so the gap and thus the failure bound are those of
//! RR22's algorithm.

use crate::crypto::{gf128, Block, Prg};
use crate::{Error, Result};
use std::collections::BTreeSet;

const NONE: u32 = u32::MAX;

/// A bin's rows and the solver's working space, kept from bin to bin on a thread so that no
/// bin allocates.
#[derive(Default)]
pub(super) struct Solver {
    /// Each row's three distinct sparse columns.
    cols: Vec<[u32; 3]>,
    /// Each row's dense coefficient d: its dense part is (d, d^2, …, d^g).
    ds: Vec<Block>,
    /// Per sparse column: [its weight (unplaced rows), the XOR of their indices].
    columns: Vec<[u32; 2]>,
    /// Columns that had weight 1 when last looked at.
    ready: Vec<u32>,
    /// The pivots in pop order.
    pivots: Vec<Pivot>,
    /// The values less each row's dense part, when the dense columns are not all 0.
    adjusted: Vec<Block>,
}

impl Solver {
    /// Room for a bin of `n` rows, to be filled: (columns, dense coefficients).
    pub fn rows(&mut self, n: usize) -> (&mut [[u32; 3]], &mut [Block]) {
        self.cols.resize(n, [0; 3]);
        self.ds.resize(n, 0);
        (&mut self.cols, &mut self.ds)
    }

    /// The rows [`Solver::rows`] was filled with: (columns, dense coefficients).
    pub fn filled(&self) -> (&[[u32; 3]], &[Block]) {
        (&self.cols, &self.ds)
    }

    /// Solves the bin whose rows [`Solver::rows`] holds: `out` (the bin's m' sparse then g
    /// dense columns, zeroed) receives P with Decode(P, row_i) = values[i] for every row.
    /// With `fill`, every column the system leaves free — sparse columns no pivot has,
    /// dense ones no gap equation needs — is drawn from it instead of left 0 (RR22 Fig. 1
    /// step 5: P is then uniform among the encodings of these values).
    pub fn solve(
        &mut self,
        values: &[Block],
        sparse: usize,
        out: &mut [Block],
        fill: Option<&mut Prg>,
    ) -> Result<()> {
        assert_eq!(values.len(), self.cols.len());
        let dense = out.len() - sparse;
        self.peel_outside_core(sparse);
        let gaps = if self.pivots.len() < self.cols.len() {
            peel_core(&self.cols, sparse, &mut self.pivots)
        } else {
            Vec::new()
        };
        if gaps.len() > dense {
            return Err(unsolvable(format!(
                "{} rows left after peeling, for {dense} dense columns",
                gaps.len()
            )));
        }
        let (sparse_out, dense_out) = out.split_at_mut(sparse);
        let filled = fill.is_some();
        if let Some(prg) = fill {
            // Every column random, then the pivots' own back to 0 (back-substitution adds
            // all three of a pivot row's columns).
            prg.fill_blocks(sparse_out);
            prg.fill_blocks(dense_out);
            for p in &self.pivots {
                sparse_out[p.col as usize] = 0;
            }
        }
        let values = if gaps.is_empty() && !filled {
            // No equation on the dense columns: they stay 0, and so does every row's
            // dense part.
            values
        } else {
            if !gaps.is_empty() {
                let mut pivot_of = vec![NONE; sparse];
                for (i, p) in self.pivots.iter().enumerate() {
                    pivot_of[p.col as usize] = i as u32;
                }
                let equations = gaps
                    .iter()
                    .map(|&g| self.gap_equation(g, values, &pivot_of, dense, sparse_out))
                    .collect();
                solve_dense(equations, dense_out)?;
            }
            self.adjusted.clear();
            self.adjusted.extend_from_slice(values);
            gf128::add_evaluations(&self.ds, dense_out, &mut self.adjusted);
            &self.adjusted
        };
        // In reverse pop order each pivot row's other columns are already set (or never
        // will be: 0), and its own column is still 0, so adding all three is adding the
        // other two.
        for p in self.pivots.iter().rev() {
            let [a, b, c] = p.cols.map(|c| sparse_out[c as usize]);
            sparse_out[p.col as usize] = values[p.row as usize] ^ a ^ b ^ c;
        }
        Ok(())
    }

    /// Pops weight-1 columns, each placing its one row as its pivot, until none is left.
    fn peel_outside_core(&mut self, sparse: usize) {
        let columns = &mut self.columns;
        columns.clear();
        columns.resize(sparse, [0, 0]);
        for (row, cols) in self.cols.iter().enumerate() {
            for &c in cols {
                let column = &mut columns[c as usize];
                column[0] += 1;
                column[1] ^= row as u32;
            }
        }
        // A queue of columns to pop: each joins it at most once, with weight 1 at the start
        // or when its weight drops to 1 (weights only fall).
        let ready = &mut self.ready;
        ready.clear();
        ready.resize(sparse + 1, 0);
        let mut joined = 0;
        for (c, column) in columns.iter().enumerate() {
            ready[joined] = c as u32;
            joined += usize::from(column[0] == 1);
        }
        let pivots = &mut self.pivots;
        pivots.clear();
        pivots.resize(self.cols.len() + 1, Pivot::default());
        let (mut popped, mut placed) = (0, 0);
        // Without branches on the weights (which no predictor guesses): a column emptied
        // since it joined (its row placed through another column) is popped with every
        // update masked out; its weight is 0 and its XOR too, so its "row" 0 is harmless.
        while popped < joined {
            let col = ready[popped];
            popped += 1;
            let [weight, row] = columns[col as usize];
            let live = u32::from(weight == 1);
            let cols = self.cols[row as usize];
            pivots[placed] = Pivot { col, row, cols };
            placed += live as usize;
            for c in cols {
                let column = &mut columns[c as usize];
                column[0] -= live;
                column[1] ^= row & live.wrapping_neg();
                ready[joined] = c;
                joined += (live & u32::from(column[0] == 1)) as usize;
            }
        }
        pivots.truncate(placed);
    }

    /// A gap row minus the pivot rows that cancel its sparse part: (its dense row, its
    /// value less the free sparse columns it meets, as `sparse_out` holds them: 0, or
    /// random when filled).
    fn gap_equation(
        &self,
        gap: u32,
        values: &[Block],
        pivot_of: &[u32],
        dense: usize,
        sparse_out: &[Block],
    ) -> (Vec<Block>, Block) {
        let mut coefficients = vec![0; dense];
        let mut value = 0;
        let mut add = |row: u32, left: &mut BTreeSet<u32>| {
            let d = self.ds[row as usize];
            let mut power = d;
            for c in coefficients.iter_mut() {
                *c ^= power;
                power = gf128::mul(power, d);
            }
            value ^= values[row as usize];
            for &c in &self.cols[row as usize] {
                // A column never popped is free: its value (0 unless filled) moves to the
                // right-hand side.
                let p = pivot_of[c as usize];
                if p == NONE {
                    value ^= sparse_out[c as usize];
                } else if !left.remove(&p) {
                    left.insert(p);
                }
            }
        };
        let mut left = BTreeSet::new();
        add(gap, &mut left);
        // The first pivot left is cancelled by its own row, whose other columns come later.
        while let Some(&p) = left.first() {
            add(self.pivots[p as usize].row, &mut left);
        }
        (coefficients, value)
    }
}

/// A pivot: its column, and its row with the row's columns (copied here so that
/// back-substitution reads the pivots in order instead of the rows at random).
#[derive(Clone, Copy, Default)]
struct Pivot {
    col: u32,
    row: u32,
    cols: [u32; 3],
}

fn unsolvable(why: String) -> Error {
    Error::Params(format!(
        "the OKVS could not be encoded ({why}): a duplicate key, or the 2^-40 failure"
    ))
}

/// Greedy peeling (RR22 Fig. 1 steps 2–4) of the rows that no pivot in `pivots` has (the
/// 2-core), with columns bucketed by weight in doubly linked lists; appends the pivots
/// and returns the gap rows.
fn peel_core(cols: &[[u32; 3]], sparse: usize, pivots: &mut Vec<Pivot>) -> Vec<u32> {
    let mut placed = vec![false; cols.len()];
    for p in pivots.iter() {
        placed[p.row as usize] = true;
    }
    let core: Vec<u32> = (0..cols.len() as u32)
        .filter(|&r| !placed[r as usize])
        .collect();
    // Column → rows of the core, as compressed lists.
    let mut start = vec![0u32; sparse + 1];
    for &r in &core {
        for &c in &cols[r as usize] {
            start[c as usize + 1] += 1;
        }
    }
    for c in 0..sparse {
        start[c + 1] += start[c];
    }
    let mut weight: Vec<u32> = (0..sparse).map(|c| start[c + 1] - start[c]).collect();
    let mut fill = start.clone();
    let mut members = vec![0u32; 3 * core.len()];
    for &r in &core {
        for &c in &cols[r as usize] {
            members[fill[c as usize] as usize] = r;
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
    let mut gaps = Vec::new();
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
                pivots.push(Pivot {
                    col,
                    row,
                    cols: cols[row as usize],
                });
                pivot = false;
            } else {
                gaps.push(row);
            }
            for &other in &cols[row as usize] {
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
    gaps
}

/// Solves the gap's equations on the dense columns by Gauss–Jordan; dense columns that no
/// pivot needs keep what `out` holds (0, or random when filled).
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
    // In reduced form each equation has its pivot column and free ones only.
    let free: Vec<usize> = (0..dense).filter(|c| !pivot_cols.contains(c)).collect();
    for (&col, (row, value)) in pivot_cols.iter().zip(&equations) {
        out[col] = free
            .iter()
            .fold(*value, |v, &f| v ^ gf128::mul(row[f], out[f]));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Prg;

    /// Decode(P, row) for a row of `solver` (RR22 Fig. 1).
    fn decode(solver: &Solver, row: usize, p: &[Block], sparse: usize) -> Block {
        let mut v = [0];
        gf128::add_evaluations(&solver.ds[row..row + 1], &p[sparse..], &mut v);
        solver.cols[row]
            .iter()
            .fold(v[0], |acc, &c| acc ^ p[c as usize])
    }

    /// A system with a 2-core: all four triples of columns 0–3 (each of those columns of
    /// weight 3, so no weight-1 column there), behind rows that peel. The general greedy
    /// must take over, leave two gap rows, and the dense columns solve them.
    #[test]
    fn a_two_core_goes_to_the_gap_and_is_solved() {
        let mut prg = Prg::from_seed(3);
        let mut solver = Solver::default();
        let (sparse, dense) = (12, 2);
        let rows: Vec<[u32; 3]> = vec![
            [0, 1, 2],
            [4, 0, 5],
            [0, 1, 3],
            [0, 2, 3],
            [6, 7, 8],
            [1, 2, 3],
            [8, 9, 10],
            [3, 10, 11],
        ];
        let (cols, ds) = solver.rows(rows.len());
        cols.copy_from_slice(&rows);
        ds.iter_mut().for_each(|d| *d = prg.block());
        let values: Vec<Block> = (0..rows.len()).map(|_| prg.block()).collect();
        let mut p = vec![0; sparse + dense];
        solver.solve(&values, sparse, &mut p, None).unwrap();
        assert!(
            p[sparse..].iter().all(|&x| x != 0),
            "the gap used the dense part"
        );
        for (i, &v) in values.iter().enumerate() {
            assert_eq!(decode(&solver, i, &p, sparse), v, "row {i}");
        }
        // With one dense column the two gap rows do not fit.
        let mut p = vec![0; sparse + 1];
        assert!(solver.solve(&values, sparse, &mut p, None).is_err());
        // Filled, with more dense columns than gap rows: the free sparse columns the gap
        // rows meet and the dense columns they leave free are random, and every row still
        // decodes to its value.
        for seed in [1, 2] {
            let mut p = vec![0; sparse + 4];
            let fill = &mut Prg::from_seed(seed);
            solver.solve(&values, sparse, &mut p, Some(fill)).unwrap();
            assert!(p.iter().all(|&x| x != 0), "{p:?}");
            for (i, &v) in values.iter().enumerate() {
                assert_eq!(decode(&solver, i, &p, sparse), v, "row {i}, fill {seed}");
            }
        }
    }
}
