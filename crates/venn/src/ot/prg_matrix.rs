//! A bit matrix whose columns are PRG streams, produced row by row: the shape of every
//! IKNP-style OT extension (column `i` is `G(seed_i)`; the protocols need its rows).

use crate::crypto::{transpose128, Aes, Block};

/// `seeds.len()` columns of pseudorandom bits, read out 128 rows at a time.
pub struct PrgMatrix {
    columns: Vec<Aes>,
    counter: u128,
    scratch: Vec<Block>,
}

impl PrgMatrix {
    /// One column per seed (AES-CTR under that seed).
    pub fn new(seeds: &[Block]) -> Self {
        PrgMatrix {
            columns: seeds.iter().map(|&s| Aes::new(s)).collect(),
            counter: 0,
            scratch: Vec::new(),
        }
    }

    /// The number of 128-bit blocks one row occupies.
    pub fn row_blocks(&self) -> usize {
        self.columns.len().div_ceil(128)
    }

    /// Writes the next `rows` rows (a multiple of 128) into `out`, row-major with
    /// [`PrgMatrix::row_blocks`] blocks per row; bits past the last column are zero.
    pub fn next_rows(&mut self, rows: usize, out: &mut [Block]) {
        assert_eq!(rows % 128, 0);
        let w = self.row_blocks();
        assert_eq!(out.len(), rows * w);
        let per_col = rows / 128;
        self.scratch.resize(self.columns.len() * per_col, 0);
        for (c, aes) in self.columns.iter().enumerate() {
            let col = &mut self.scratch[c * per_col..(c + 1) * per_col];
            for (t, b) in col.iter_mut().enumerate() {
                *b = self.counter + t as u128;
            }
            aes.encrypt_blocks(col);
        }
        self.counter += per_col as u128;
        let mut m = [0 as Block; 128];
        for rb in 0..per_col {
            for g in 0..w {
                for (i, row) in m.iter_mut().enumerate() {
                    let c = g * 128 + i;
                    *row = if c < self.columns.len() {
                        self.scratch[c * per_col + rb]
                    } else {
                        0
                    };
                }
                transpose128(&mut m);
                for (i, &row) in m.iter().enumerate() {
                    out[(rb * 128 + i) * w + g] = row;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_transposed_columns() {
        let seeds = [11, 22, 33];
        let mut m = PrgMatrix::new(&seeds);
        let mut rows = vec![0; 256];
        m.next_rows(256, &mut rows);
        for (c, &s) in seeds.iter().enumerate() {
            let aes = Aes::new(s);
            let col = [aes.encrypt(0), aes.encrypt(1)];
            for r in 0..256 {
                assert_eq!((rows[r] >> c) & 1, (col[r / 128] >> (r % 128)) & 1);
            }
        }
        assert!(
            rows.iter().all(|r| r >> 3 == 0),
            "bits past the columns are zero"
        );
    }
}
