//! Keys given in memory (the Python package's, `venn.ray`'s lanes, a Thunder client's):
//! one row a key, in the order given, normalised and deduplicated as a file's keys are; the
//! matched rows are handed back as their positions in the list given.

use super::builder::{Builder, Values};
use super::parquet_file::ParquetFile;
use super::source::{members, Positioned};
use super::{Input, KeyOptions};
use venn::{Error, Result};

/// Keys given in memory, read: an [`Input`] without a file, each row's span the empty
/// range at its position in the list given.
pub struct KeysInMemory {
    input: Input,
}

impl KeysInMemory {
    /// Keys given in memory, one row each in this order (with `columns` values each, row
    /// by row, if given), normalised and deduplicated as a file's keys are: the input of a
    /// party whose rows are not in a file. Each row's span is the
    /// empty range at its position.
    pub fn new<K: AsRef<[u8]>>(
        keys: &[K],
        values: Option<(&[u64], usize)>,
        opts: &KeyOptions,
    ) -> Result<KeysInMemory> {
        KeysInMemory::revealing(keys, values, &[] as &[&[K]], opts)
    }

    /// [`new`](Self::new) with columns to reveal: those `opts` names (`reveal_columns`)
    /// hold `revealed`, a value a key for each, in that order.
    pub fn revealing<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        keys: &[K],
        values: Option<(&[u64], usize)>,
        revealed: &[&[V]],
        opts: &KeyOptions,
    ) -> Result<KeysInMemory> {
        let columns = values.map_or(0, |(_, c)| c);
        if columns > venn::protocols::MAX_VALUE_COLUMNS {
            return Err(Error::Usage(format!(
                "at most {} value columns, not {columns}",
                venn::protocols::MAX_VALUE_COLUMNS
            )));
        }
        if opts.match_any {
            return Err(Error::Usage(
                "--match-any matches a file's records on their identifier columns; keys given \
                 in memory are one a record"
                    .into(),
            ));
        }
        if revealed.len() != opts.reveal_columns.len()
            || revealed.iter().any(|column| column.len() != keys.len())
        {
            return Err(Error::Usage(
                "a value for every key in each revealed column".into(),
            ));
        }
        if values.is_some_and(|(v, c)| c == 0 || v.len() != keys.len() * c) {
            return Err(Error::Usage(
                "the same number of values for every key".into(),
            ));
        }
        let opts = KeyOptions {
            value_columns: (0..columns).map(|c| format!("value {c}")).collect(),
            ..opts.clone()
        };
        let bytes = keys.iter().map(|k| k.as_ref().len()).sum();
        let mut b = Builder::new(&opts, keys.len(), bytes);
        let mut cells = Vec::with_capacity(revealed.len());
        for (i, key) in keys.iter().enumerate() {
            let row = values.map_or(&[][..], |(v, c)| &v[i * c..(i + 1) * c]);
            cells.clear();
            cells.extend(revealed.iter().map(|column| column[i].as_ref()));
            b.add_fields(
                i as u64 + 1,
                &[key.as_ref()],
                Values::Numbers(row),
                &cells,
                i..i,
            )
            .map_err(|e| match e {
                Error::Input { line, reason } => {
                    Error::Usage(format!("the key at position {}: {reason}", line - 1))
                }
                e => e,
            })?;
        }
        Ok(KeysInMemory {
            input: b.finish(Vec::new(), None)?,
        })
    }

    /// The positions in the list given of the keys that `intersection` names (indices
    /// into the keys), ascending (skipped empty keys are never named).
    pub fn matched_positions(&self, intersection: &[usize]) -> Vec<usize> {
        let keyed = self.matched_keys(intersection);
        keyed.into_iter().map(|(position, _)| position).collect()
    }

    /// The positions in the list given of the keys that `intersection` names, ascending,
    /// each with its key's index.
    pub fn matched_keys(&self, intersection: &[usize]) -> Vec<(usize, usize)> {
        let member = members(self.input.keys.len(), intersection);
        self.input.positions(&member).collect()
    }
}

impl Positioned for KeysInMemory {
    fn input(&self) -> &Input {
        &self.input
    }

    fn file(&self) -> Option<&ParquetFile> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::source::{InputSource, RowBatch, POSITIONS};
    use crate::input::tests::{opts, read};
    use crate::input::Format;

    /// Keys in memory are normalised and deduplicated as a file's are; the matched rows
    /// are every row of a matched key.
    #[test]
    fn keys_in_memory_are_read_as_a_files_keys() {
        let o = opts(Format::Lines, &[]);
        let keys: [&[u8]; 4] = [b" A@x ", b"b", b"a@X", b"\xff"];
        let input = KeysInMemory::new(&keys, None, &o).unwrap();
        let file = read(" A@x \nb\na@X\n", &o);
        assert_eq!(input.keys().len(), 3);
        for k in 0..2 {
            assert_eq!(input.keys().get(k), file.keys.get(k));
        }
        assert_eq!(input.counts().duplicates, 1);
        assert_eq!(input.matched_positions(&[0]), [0, 2]);
        assert_eq!(input.matched_positions(&[1, 2]), [1, 3]);
        let valued = KeysInMemory::new(&keys, Some((&[1, 2, 3, 4], 1)), &o).unwrap();
        assert_eq!(valued.keys().values().unwrap(), [4, 2, 4]);
        assert!(KeysInMemory::new(&keys, Some((&[1], 1)), &o).is_err());
        let two = KeysInMemory::new(&keys, Some((&[1, 10, 2, 20, 3, 30, 4, 40], 2)), &o).unwrap();
        assert_eq!(two.keys().values().unwrap(), [4, 40, 2, 20, 4, 40]);
        assert_eq!(two.keys().value_columns(), 2);
        assert!(KeysInMemory::new(&keys, Some((&[1, 2, 3], 2)), &o).is_err());
        // No more columns than a sum takes, even with no keys.
        let none: [&[u8]; 0] = [];
        assert!(KeysInMemory::new(&none, Some((&[], 17)), &o).is_err());
        assert!(KeysInMemory::new(&none, Some((&[], 16)), &o).is_ok());
        let empty: [&[u8]; 2] = [b"a", b" "];
        let Err(e) = KeysInMemory::new(&empty, None, &o) else {
            panic!("an empty key is refused")
        };
        assert!(
            e.to_string().contains("the key at position 1: empty key"),
            "an empty key after trimming, named by its position: {e}"
        );
        let skip = KeyOptions {
            skip_empty: true,
            ..o.clone()
        };
        let keys: [&[u8]; 4] = [b" ", b"a", b"", b"a"];
        let input = KeysInMemory::new(&keys, None, &skip).unwrap();
        assert_eq!(
            input.matched_positions(&[0]),
            [1, 3],
            "positions in the list given, skipped keys counted"
        );
    }

    /// The matched rows come back as positions, in batches of at most [`POSITIONS`], all of
    /// them counted.
    #[test]
    fn matched_positions_come_in_batches() {
        let keys: Vec<String> = (0..2 * POSITIONS + 5).map(|k| k.to_string()).collect();
        let input = KeysInMemory::new(&keys, None, &opts(Format::Lines, &[])).unwrap();
        let member = vec![true; keys.len()];
        let (mut sizes, mut all) = (Vec::new(), Vec::new());
        let count = input
            .matched_rows(&member, &mut |batch| {
                let RowBatch::Positions(p) = batch else {
                    panic!("positions, not {batch:?}")
                };
                sizes.push(p.len());
                all.extend_from_slice(p);
                Ok(())
            })
            .unwrap();
        assert_eq!(count, keys.len());
        assert_eq!(sizes, [POSITIONS, POSITIONS, 5]);
        assert!(all.iter().copied().eq(0..keys.len()));
    }
}
