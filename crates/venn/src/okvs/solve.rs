//! One bin's system solved (RR22 Fig. 1, §3.3): greedy peeling of the sparse rows into a
//! triangular part and a small gap, the gap solved on the dense columns, then
//! back-substitution.
//!
//! Peeling pops a sparse column of least weight (counting only rows not yet placed): its
//! first unplaced row becomes the column's pivot, its other unplaced rows join the gap.
//! Each pivot row's other columns are popped later or never (were one popped earlier, the
//! row would have been placed then), so in pop order the pivot rows are triangular. A gap
//! row minus the pivot rows that cancel its sparse part (taken in pop order) is an equation
//! on the dense columns only; those equations are solved by Gauss–Jordan (over GF(2^128)
//! for field rows, GF(2) for binary ones: [`super::dense`]), then the pivots are set in
//! reverse pop order. Columns never popped stay 0.
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

use super::dense::{Row, Value};
use super::unsolvable;
use crate::crypto::Prg;
use crate::Result;
use std::collections::BTreeSet;

const NONE: u32 = u32::MAX;

/// A bin's rows and the solver's working space, kept from bin to bin on a thread so that no
/// bin allocates.
pub(super) struct Solver<R: Row> {
    /// Each row's three distinct sparse columns.
    cols: Vec<[u32; 3]>,
    /// Each row's dense part.
    ds: Vec<R>,
    /// Per sparse column: [its weight (unplaced rows), the XOR of their indices].
    columns: Vec<[u32; 2]>,
    /// Columns that had weight 1 when last looked at.
    ready: Vec<u32>,
    /// The pivots in pop order.
    pivots: Vec<Pivot>,
    /// The values less each row's dense part, when the dense columns are not all 0.
    adjusted: Vec<R::Value>,
}

impl<R: Row> Default for Solver<R> {
    fn default() -> Self {
        Solver {
            cols: Vec::new(),
            ds: Vec::new(),
            columns: Vec::new(),
            ready: Vec::new(),
            pivots: Vec::new(),
            adjusted: Vec::new(),
        }
    }
}

impl<R: Row> Solver<R> {
    /// Room for a bin of `n` rows, to be filled: (columns, dense parts).
    pub(super) fn rows(&mut self, n: usize) -> (&mut [[u32; 3]], &mut [R]) {
        self.cols.resize(n, [0; 3]);
        self.ds.resize(n, R::default());
        (&mut self.cols, &mut self.ds)
    }

    /// The rows [`Solver::rows`] was filled with: (columns, dense parts).
    pub(super) fn filled(&self) -> (&[[u32; 3]], &[R]) {
        (&self.cols, &self.ds)
    }

    /// Solves the bin whose rows [`Solver::rows`] holds: `out` (the bin's m' sparse then g
    /// dense columns, zeroed) receives P with Decode(P, row_i) = values[i] for every row.
    /// With `fill`, every column the system leaves free — sparse columns no pivot has,
    /// dense ones no gap equation needs — is drawn from it instead of left 0 (RR22 Fig. 1
    /// step 5: P is then uniform among the encodings of these values).
    pub(super) fn solve(
        &mut self,
        values: &[R::Value],
        sparse: usize,
        out: &mut [R::Value],
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
            R::Value::fill(prg, sparse_out);
            R::Value::fill(prg, dense_out);
            for p in &self.pivots {
                sparse_out[p.col as usize] = R::Value::default();
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
                R::solve(equations, dense_out)?;
            }
            self.adjusted.clear();
            self.adjusted.extend_from_slice(values);
            R::add_evaluations(&self.ds, dense_out, &mut self.adjusted);
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
        values: &[R::Value],
        pivot_of: &[u32],
        dense: usize,
        sparse_out: &[R::Value],
    ) -> (R::Coefficients, R::Value) {
        let mut coefficients = R::zero(dense);
        let mut value = R::Value::default();
        let mut add = |row: u32, left: &mut BTreeSet<u32>| {
            self.ds[row as usize].add_to(&mut coefficients);
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
    use super::super::dense::{BitRow, FieldRow};
    use super::*;
    use crate::crypto::Block;

    /// Decode(P, row) for a row of `solver` (RR22 Fig. 1).
    fn decode<R: Row>(solver: &Solver<R>, row: usize, p: &[R::Value], sparse: usize) -> R::Value {
        let mut v = [R::Value::default()];
        R::add_evaluations(&solver.ds[row..row + 1], &p[sparse..], &mut v);
        solver.cols[row]
            .iter()
            .fold(v[0], |acc, &c| acc ^ p[c as usize])
    }

    /// A system with a 2-core: all four triples of columns 0–3 (each of those columns of
    /// weight 3, so no weight-1 column there), behind rows that peel. The general greedy
    /// must take over, leave two gap rows, and the dense columns solve them — over
    /// GF(2^128) with field rows, over GF(2) with binary ones (on two dense columns).
    #[test]
    fn a_two_core_goes_to_the_gap_and_is_solved() {
        two_core_solved::<FieldRow>(|prg| prg.block(), |prg| prg.block());
        two_core_solved::<BitRow<u64>>(|prg| BitRow::from_bits(prg.u64() & 3), |prg| prg.u64());
    }

    fn two_core_solved<R: Row>(row: impl Fn(&mut Prg) -> R, value: impl Fn(&mut Prg) -> R::Value) {
        let zero = R::Value::default();
        let mut prg = Prg::from_seed(Block::from(3));
        let mut solver = Solver::<R>::default();
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
        ds.iter_mut().for_each(|d| *d = row(&mut prg));
        let values: Vec<R::Value> = (0..rows.len()).map(|_| value(&mut prg)).collect();
        let mut p = vec![zero; sparse + dense];
        solver.solve(&values, sparse, &mut p, None).unwrap();
        assert!(
            p[sparse..].iter().all(|&x| x != zero),
            "the gap used the dense part"
        );
        for (i, &v) in values.iter().enumerate() {
            assert_eq!(decode(&solver, i, &p, sparse), v, "row {i}");
        }
        // With one dense column the two gap rows do not fit.
        let mut p = vec![zero; sparse + 1];
        assert!(solver.solve(&values, sparse, &mut p, None).is_err());
        // Filled, with more dense columns than gap rows: the free sparse columns the gap
        // rows meet and the dense columns they leave free are random, and every row still
        // decodes to its value.
        for seed in [1, 2] {
            let mut p = vec![zero; sparse + 4];
            let fill = &mut Prg::from_seed(Block::from(seed));
            solver.solve(&values, sparse, &mut p, Some(fill)).unwrap();
            assert!(p.iter().all(|&x| x != zero), "{p:?}");
            for (i, &v) in values.iter().enumerate() {
                assert_eq!(decode(&solver, i, &p, sparse), v, "row {i}, fill {seed}");
            }
        }
    }
}
