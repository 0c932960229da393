//! A bit matrix whose columns are PRG streams, produced row by row: the shape of every
//! IKNP-style OT extension (column `i` is `G(seed_i)`; the protocols need its rows).

use crate::crypto::{transpose128, Aes, Block};
use rayon::prelude::*;

/// Rows one task of [`PrgMatrix::par_rows`] produces (a multiple of 128).
pub(super) const TASK_ROWS: usize = 4096;

/// `seeds.len()` columns of pseudorandom bits, read out 128 rows at a time. Row block `b`
/// (rows `128b..128b + 128`) comes from counter `b` of every column's AES-CTR stream, so
/// any range of rows can be produced on its own, in any order, on any thread.
pub struct PrgMatrix {
    columns: Vec<Aes>,
}

impl PrgMatrix {
    /// One column per seed (AES-CTR under that seed).
    pub fn new(seeds: &[Block]) -> Self {
        PrgMatrix {
            columns: seeds.iter().map(|&s| Aes::new(s)).collect(),
        }
    }

    /// The number of 128-bit blocks one row occupies.
    pub fn row_blocks(&self) -> usize {
        self.columns.len().div_ceil(128)
    }

    /// Writes rows `first_row..` into `out` (row-major, [`PrgMatrix::row_blocks`] blocks per
    /// row; `first_row` and the number of rows are multiples of 128); bits past the last
    /// column are zero.
    pub fn rows(&self, first_row: usize, out: &mut [Block]) {
        let columns = self.columns(first_row, out);
        self.transpose(&columns, out);
    }

    /// Writes the rows of the XOR of this matrix and `other` (of as many columns) as
    /// [`PrgMatrix::rows`] would: the columns are XORed before the one transposition.
    pub fn xor_rows(&self, other: &PrgMatrix, first_row: usize, out: &mut [Block]) {
        assert_eq!(self.columns.len(), other.columns.len());
        let mut columns = self.columns(first_row, out);
        for (c, d) in columns.iter_mut().zip(other.columns(first_row, out)) {
            *c ^= d;
        }
        self.transpose(&columns, out);
    }

    /// The blocks of each column for the rows `out` will hold from `first_row`, column by
    /// column.
    fn columns(&self, first_row: usize, out: &[Block]) -> Vec<Block> {
        let w = self.row_blocks();
        assert!(first_row.is_multiple_of(128) && out.len().is_multiple_of(128 * w));
        let per_col = out.len() / w / 128;
        let counter = (first_row / 128) as u128;
        // Written once, counters then ciphertexts (a zeroed allocation first cost a memset
        // of every byte the extensions produce).
        let mut columns = Vec::with_capacity(self.columns.len() * per_col);
        for _ in &self.columns {
            columns.extend((0..per_col).map(|t| Block::from_u128(counter + t as u128)));
        }
        for (col, aes) in columns.chunks_exact_mut(per_col).zip(&self.columns) {
            aes.encrypt_blocks(col);
        }
        columns
    }

    /// Writes the rows of `columns` ([`PrgMatrix::columns`]) into `out`.
    fn transpose(&self, columns: &[Block], out: &mut [Block]) {
        let w = self.row_blocks();
        let per_col = out.len() / w / 128;
        let mut m = [Block::ZERO; 128];
        for rb in 0..per_col {
            for g in 0..w {
                for (i, row) in m.iter_mut().enumerate() {
                    let c = g * 128 + i;
                    *row = if c < self.columns.len() {
                        columns[c * per_col + rb]
                    } else {
                        Block::ZERO
                    };
                }
                transpose128(&mut m);
                for (i, &row) in m.iter().enumerate() {
                    out[(rb * 128 + i) * w + g] = row;
                }
            }
        }
    }

    /// [`PrgMatrix::rows`] in tasks of `TASK_ROWS` rows on the current rayon pool.
    pub fn par_rows(&self, first_row: usize, out: &mut [Block]) {
        let w = self.row_blocks();
        out.par_chunks_mut(TASK_ROWS * w)
            .enumerate()
            .for_each(|(c, rows)| self.rows(first_row + c * TASK_ROWS, rows));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_transposed_columns() {
        let seeds = [11u64, 22, 33].map(Block::from);
        let m = PrgMatrix::new(&seeds);
        let mut rows = vec![Block::ZERO; 256];
        m.rows(0, &mut rows);
        for (c, &s) in seeds.iter().enumerate() {
            let aes = Aes::new(s);
            let col = [aes.encrypt(Block::ZERO), aes.encrypt(Block::ONE)];
            for r in 0..256 {
                assert_eq!(rows[r].bit(c), col[r / 128].bit(r % 128));
            }
        }
        assert!(
            rows.iter().all(|r| r.as_u128() >> 3 == 0),
            "bits past the columns are zero"
        );
    }

    #[test]
    fn any_range_of_rows_matches_the_whole_matrix() {
        let seeds: Vec<Block> = (0..200).map(Block::from).collect();
        let m = PrgMatrix::new(&seeds);
        let w = m.row_blocks();
        let n = 3 * TASK_ROWS + 384;
        let mut whole = vec![Block::ZERO; n * w];
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        pool.install(|| m.par_rows(0, &mut whole));
        let mut part = vec![Block::ZERO; 256 * w];
        m.rows(TASK_ROWS + 128, &mut part);
        assert_eq!(part, whole[(TASK_ROWS + 128) * w..(TASK_ROWS + 384) * w]);
        let mut serial = vec![Block::ZERO; n * w];
        m.rows(0, &mut serial);
        assert_eq!(serial, whole);
    }

    #[test]
    fn xor_rows_are_the_xor_of_the_rows() {
        let seeds = |s: [u64; 4]| s.map(Block::from);
        let (a, b) = (
            PrgMatrix::new(&seeds([1, 2, 3, 4])),
            PrgMatrix::new(&seeds([5, 6, 7, 8])),
        );
        let (mut x, mut y, mut both) = (
            vec![Block::ZERO; 256],
            vec![Block::ZERO; 256],
            vec![Block::ZERO; 256],
        );
        a.rows(128, &mut x);
        b.rows(128, &mut y);
        a.xor_rows(&b, 128, &mut both);
        let expect: Vec<Block> = x.iter().zip(&y).map(|(x, y)| x ^ y).collect();
        assert_eq!(both, expect);
    }
}
