//! Where a run's output goes ([`OutputSink`]): a sink receives the output's kind — the
//! intersection's rows (fetched from their source as it takes them), a count, a sum, a
//! threshold's answer, or nothing — and does with it what it is for. The `venn` tool's
//! [`FileOutput`] writes rows as they are in the input file (a Parquet input's as a
//! Parquet file of its schema) and the rest as JSON; the Python package's result is
//! another impl, in its crate. A new output is one impl.

use crate::destination::Destination;
use crate::input::source::{MatchedRows, RowBatch};
use crate::output::Written;
use crate::parquet_output::ParquetOutput;
use std::io::Write;
use std::path::Path;
use venn::protocols::Output;
use venn::{Error, Result};

/// Where a run's output goes.
pub trait OutputSink {
    /// Takes what the run output (once); returns what was written, if anything.
    fn take(&mut self, output: Delivered) -> Result<Option<Written>>;
}

/// What a run output, by kind.
pub enum Delivered<'a> {
    /// The intersection's rows, fetched from their source as the sink takes them, and
    /// how many distinct keys of ours they hold.
    Rows {
        /// The matched rows.
        rows: &'a dyn MatchedRows,
        /// How many distinct keys of ours they hold.
        keys: u64,
    },
    /// The intersection's size.
    Count(u64),
    /// The intersection's size and the sums of the sender's value columns over it.
    Sum {
        /// The intersection's size.
        count: u64,
        /// The sums, one per value column.
        sums: &'a [u64],
    },
    /// Whether the intersection has at least `threshold` items.
    Threshold {
        /// The threshold asked about.
        threshold: u64,
        /// Whether the intersection reached it.
        reached: bool,
    },
    /// Nothing: the party learns nothing.
    Nothing,
}

impl<'a> Delivered<'a> {
    /// The kind of `output`, with `rows` the rows of the keys it names if it names them.
    pub fn of(output: &'a Output, rows: &'a dyn MatchedRows) -> Self {
        match output {
            // With the peer's records, `rows` are the matched rows joined to them.
            Output::Indices(ix) | Output::Records { indices: ix, .. } => Delivered::Rows {
                rows,
                keys: ix.len() as u64,
            },
            Output::Count(c) => Delivered::Count(*c),
            Output::Sum { count, sums } => Delivered::Sum {
                count: *count,
                sums,
            },
            &Output::Threshold { threshold, reached } => {
                Delivered::Threshold { threshold, reached }
            }
            Output::Nothing => Delivered::Nothing,
        }
    }
}

/// The `venn` tool's `--output`: the matched rows as they are in the input file, header
/// first (a Parquet input's in a Parquet file of its schema), written whole
/// ([`Destination`]); a count, a sum or a threshold's answer as a JSON object (on stdout
/// without a file). Rows without a file are not written.
pub struct FileOutput<'a> {
    /// `--output`, if given.
    pub path: Option<&'a Path>,
    /// The threads a Parquet output's columns are encoded on (`--threads`).
    pub threads: usize,
}

impl OutputSink for FileOutput<'_> {
    fn take(&mut self, output: Delivered) -> Result<Option<Written>> {
        let json = match output {
            Delivered::Nothing => return Ok(None),
            Delivered::Rows { rows, .. } => {
                return match self.path {
                    Some(p) => Ok(Some(Written::Rows(write_rows(p, rows, self.threads)?))),
                    None => Ok(None),
                }
            }
            Delivered::Count(c) => serde_json::json!({ "intersection_size": c }),
            // A u64 above 2^53 does not fit a JSON number exactly: written as a decimal
            // string. The sum of each value column, in the sender's order; the first also
            // alone.
            Delivered::Sum { count, sums } => serde_json::json!({
                "intersection_size": count,
                "intersection_sum": sums.first().map(u64::to_string),
                "intersection_sums": sums.iter().map(u64::to_string).collect::<Vec<_>>(),
            }),
            Delivered::Threshold { threshold, reached } => {
                serde_json::json!({ "threshold": threshold, "reached": reached })
            }
        };
        match self.path {
            Some(p) => {
                Destination::of(p, "--output")?.write(|w| {
                    serde_json::to_writer_pretty(&mut *w, &json)?;
                    w.write_all(b"\n")
                })?;
                Ok(Some(Written::Json))
            }
            None => {
                Destination::Stdout.write(|w| writeln!(w, "{json}"))?;
                Ok(None)
            }
        }
    }
}

/// Writes `rows` to `path` (header first, each row as it is in the input file; a Parquet
/// input's as a Parquet file) whole or not at all; returns how many rows. A failure to
/// fetch them (a split file that changed since it was split) is returned as it is, and
/// nothing is written. A Parquet output's columns are encoded on up to `threads` threads.
pub fn write_rows(path: &Path, rows: &dyn MatchedRows, threads: usize) -> Result<usize> {
    let (mut count, mut fetching) = (0, None);
    let written = Destination::of(path, "--output")?.write(|w| {
        let mut table: Option<ParquetOutput> = None;
        let fetched = rows.each_batch(&mut |batch| {
            if let (
                RowBatch::Table {
                    file,
                    matched,
                    columns,
                },
                None,
            ) = (batch, &table)
            {
                table = Some(ParquetOutput::new(file, matched, columns, threads)?);
                return Ok(());
            }
            match &mut table {
                Some(table) => table.add(w, batch),
                None => write_batch(w, batch),
            }
        });
        match fetched {
            Ok(n) => count = n,
            Err(Error::Io(e)) => return Err(e),
            Err(e) => {
                fetching = Some(e);
                return Err(std::io::Error::other("stopped"));
            }
        }
        table.map_or(Ok(()), |table| table.finish(w))
    });
    written.map_err(|e| fetching.take().unwrap_or(e))?;
    Ok(count)
}

/// Writes a batch of a text file's rows as they are, ending the last with a line break if
/// it has none (the header as it is). Rows given in memory have no bytes to write.
fn write_batch(w: &mut dyn Write, batch: RowBatch) -> std::io::Result<()> {
    match batch {
        RowBatch::Header(header) => w.write_all(header),
        RowBatch::Text(rows) => {
            w.write_all(rows)?;
            if rows.is_empty() || rows.ends_with(b"\n") {
                return Ok(());
            }
            w.write_all(b"\n")
        }
        RowBatch::Positions(_) | RowBatch::Joined { .. } | RowBatch::Table { .. } => {
            Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "keys given in memory have no rows to write to a file",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::source::Matching;
    use crate::input::{read_input, KeyOptions};

    #[test]
    fn counts_and_sums_are_written_as_json_and_rows_as_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("in.csv");
        std::fs::write(&csv, "k\na\nb\nc\nb").unwrap();
        let keys = KeyOptions::default();
        let input = read_input(&csv, &keys).unwrap();
        let path = dir.path().join("out.json");
        let mut sink = FileOutput {
            path: Some(&path),
            threads: 1,
        };
        let json = |path: &Path| -> serde_json::Value {
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
        };
        let w = sink.take(Delivered::Count(42)).unwrap();
        assert!(matches!(w, Some(Written::Json)));
        assert_eq!(json(&path)["intersection_size"], 42);
        std::fs::remove_file(&path).unwrap();
        let sums = [u64::MAX, 7];
        sink.take(Delivered::Sum {
            count: 3,
            sums: &sums,
        })
        .unwrap();
        let v = json(&path);
        assert_eq!(v["intersection_sum"], u64::MAX.to_string());
        assert_eq!(v["intersection_sums"][1], "7");
        assert_eq!(v["intersection_size"], 3);
        // Rows as they are, header first; the file's last row gets a line break.
        for (matched, rows, text) in [
            (&[1][..], 2, "k\nb\nb\n"),
            (&[0, 1][..], 3, "k\na\nb\nb\n"),
            (&[][..], 0, "k\n"),
        ] {
            let rows_of = Matching {
                source: &input,
                intersection: matched,
            };
            let keys = matched.len() as u64;
            let w = sink
                .take(Delivered::Rows {
                    rows: &rows_of,
                    keys,
                })
                .unwrap();
            assert!(
                matches!(w, Some(Written::Rows(n)) if n == rows),
                "{matched:?}"
            );
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        }
    }
}
