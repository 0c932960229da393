//! Which of a party's rows its output holds, and what is added to them (`--join`): the
//! matched rows (`inner`, the default), all rows with a `matched` column (`left`), or the
//! rows whose key the peer lacks (`difference`); the peer's revealed columns are appended
//! to each matched row ([`crate::columns`]), left empty on a `left` join's unmatched rows.
//!
//! Every kind is a function of the party's own rows and the intersection it learns, so
//! none reveals more than `inner` does.
//!
//! With `--both`, `--align` has both parties write their matched rows in one order
//! ([`AlignedRows`]): by a keyed hash of each matched key under the digest of both run
//! plans. Both hold exactly the matched keys (normalised alike: the plans check it) and
//! the digest, so they derive the same order, and it tells neither anything beyond the
//! intersection (it is not either party's input order). `--align outer` then adds the
//! sender's unmatched rows and the receiver's, each side writing placeholders where the
//! other has rows: the peer's count of unmatched rows is its announced size less the
//! intersection, which both know already.

use crate::columns::{push_field, Layout};
use crate::input::source::{InputSource, MatchedRows, RowBatch};
use std::io;
use venn::session::run_plan::Align;
use venn::session::Role;
use venn::{Error, Result};

/// Bytes of output rows handed to the sink at a time.
const BATCH_BYTES: usize = 1 << 16;

/// The name of the column a `left` join adds.
pub const MATCHED_COLUMN: &str = "matched";

/// Which rows an output holds (`--join`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum JoinKind {
    /// The rows whose key the peer has.
    #[default]
    Inner,
    /// Every row, with whether the peer has its key.
    Left,
    /// The rows whose key the peer lacks.
    Difference,
}

impl JoinKind {
    /// The kinds, as `--join` names them.
    pub const NAMES: &'static [&'static str] = &["inner", "left", "difference"];

    /// The kind `--join` names.
    pub fn parse(name: &str) -> Result<JoinKind> {
        match name {
            "inner" => Ok(JoinKind::Inner),
            "left" => Ok(JoinKind::Left),
            "difference" => Ok(JoinKind::Difference),
            _ => Err(Error::Usage(format!(
                "--join is one of {}, not '{name}'",
                JoinKind::NAMES.join(", ")
            ))),
        }
    }

    /// Whether a row the peer has (`matched`), or lacks, is output.
    pub fn keeps(self, matched: bool) -> bool {
        match self {
            JoinKind::Inner => matched,
            JoinKind::Left => true,
            JoinKind::Difference => !matched,
        }
    }
}

/// How an output row is made from an input row of a CSV file (or a file of lines, when
/// nothing is added): the `matched` flag of a `left` join, then the peer's columns.
pub struct Shape<'a> {
    /// Which rows are output.
    pub kind: JoinKind,
    /// The peer's columns, named as asked, if it revealed any.
    pub columns: Option<&'a Layout>,
    /// The input's delimiter, which the added fields take.
    pub delimiter: u8,
}

impl Shape<'_> {
    /// Whether rows are output as they are in the input (nothing added).
    pub fn as_they_are(&self) -> bool {
        self.kind != JoinKind::Left && self.columns.is_none()
    }

    /// Appends the header row with the added columns' names.
    pub fn header(&self, out: &mut Vec<u8>, header: &[u8]) {
        let flag = (self.kind == JoinKind::Left).then_some(MATCHED_COLUMN.as_bytes());
        let names =
            (self.columns.into_iter()).flat_map(|l| l.columns.iter().map(|(n, _)| n.as_bytes()));
        self.append(out, header, flag.into_iter().chain(names));
    }

    /// Appends `row` (as it is in the file) with the added fields: whether it matched (a
    /// `left` join) and the peer's `values` (empty where it did not match).
    pub fn row(&self, out: &mut Vec<u8>, row: &[u8], matched: bool, values: &[&[u8]]) {
        let flag: Option<&[u8]> = (self.kind == JoinKind::Left).then_some(match matched {
            true => b"true",
            false => b"false",
        });
        let empty = self.columns.map_or(0, |l| l.columns.len()) * usize::from(!matched);
        let fields = values
            .iter()
            .copied()
            .chain(std::iter::repeat_n(&b""[..], empty));
        self.append(out, row, flag.into_iter().chain(fields));
    }

    /// Appends `row` with `fields` added before its line ending.
    fn append<'f>(&self, out: &mut Vec<u8>, row: &[u8], fields: impl Iterator<Item = &'f [u8]>) {
        let content = row.strip_suffix(b"\n").unwrap_or(row);
        let content = content.strip_suffix(b"\r").unwrap_or(content);
        out.extend_from_slice(content);
        for field in fields {
            out.push(self.delimiter);
            push_field(out, field, self.delimiter);
        }
        out.extend_from_slice(&row[content.len()..]);
    }
}

/// Output rows, made a row at a time into batches of about 64 KiB and handed on.
pub struct Batches<'e> {
    out: Vec<u8>,
    each: &'e mut dyn FnMut(RowBatch) -> io::Result<()>,
}

impl<'e> Batches<'e> {
    /// Batches handed to `each`.
    pub fn new(each: &'e mut dyn FnMut(RowBatch) -> io::Result<()>) -> Self {
        Batches {
            out: Vec::with_capacity(BATCH_BYTES + 1024),
            each,
        }
    }

    /// Hands on the header `make` writes.
    pub fn header(&mut self, make: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        make(&mut self.out);
        (self.each)(RowBatch::Header(&self.out))?;
        self.out.clear();
        Ok(())
    }

    /// Adds the row `make` writes, handing on a full batch.
    pub fn row(&mut self, make: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        make(&mut self.out);
        if self.out.len() >= BATCH_BYTES {
            (self.each)(RowBatch::Text(&self.out))?;
            self.out.clear();
        }
        Ok(())
    }

    /// Hands on `batch` as it is, after the rows made so far.
    pub fn pass(&mut self, batch: RowBatch) -> io::Result<()> {
        if !self.out.is_empty() {
            (self.each)(RowBatch::Text(&self.out))?;
            self.out.clear();
        }
        (self.each)(batch)
    }

    /// Hands on what is left.
    pub fn finish(mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            (self.each)(RowBatch::Text(&self.out))?;
            self.out.clear();
        }
        Ok(())
    }
}

/// The output rows of a source held whole: its rows as the join [`Shape`] keeps and
/// makes them, with the peer's record for each matched key.
pub struct JoinedRows<'a> {
    /// Where the keys and their rows come from.
    pub source: &'a dyn InputSource,
    /// The matched keys, as indices into the source's keys.
    pub intersection: &'a [usize],
    /// The peer's record for each matched key, in the order of `intersection` (none
    /// without columns).
    pub records: &'a [u8],
    /// What is output, and how.
    pub shape: Shape<'a>,
}

impl MatchedRows for JoinedRows<'_> {
    fn each_batch(&self, each: &mut dyn FnMut(RowBatch) -> io::Result<()>) -> Result<usize> {
        let keys = self.source.keys().len();
        // Every record is read before anything is written: a bad one fails the run whole.
        let values = values_by_key(keys, self.intersection, self.records, self.shape.columns)?;
        let mut batches = Batches::new(each);
        if let Some(header) = self.source.header() {
            (batches.header(|out| self.shape.header(out, header))).map_err(Error::Io)?;
        }
        // A Parquet file's rows go by position, each with what is added to it.
        let table = self.source.table();
        if let Some(file) = table {
            (batches.pass(RowBatch::Table {
                file,
                matched: self.shape.kind == JoinKind::Left,
                columns: self.shape.columns.map_or(&[][..], |l| l.columns.as_slice()),
            }))
            .map_err(Error::Io)?;
        }
        let member: Vec<bool> = values
            .iter()
            .map(|v| self.shape.kind.keeps(v.is_some()))
            .collect();
        let count = (self.source)
            .each_row(&member, &mut |key, row| {
                let found = values[key].as_deref();
                match row {
                    RowBatch::Text(row) => batches.row(|out| {
                        self.shape
                            .row(out, row, found.is_some(), found.unwrap_or_default())
                    }),
                    RowBatch::Positions(&[position]) if table.is_some() => {
                        batches.pass(RowBatch::Joined {
                            position,
                            matched: found.is_some(),
                            values: found.unwrap_or_default(),
                        })
                    }
                    _ => Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "keys given in memory have no rows to add columns to",
                    )),
                }
            })
            .map_err(Error::Io)?;
        batches.finish().map_err(Error::Io)?;
        Ok(count)
    }
}

/// The peer's values for each key of `source` it matched: `None` for a key it did not,
/// checked against `records` (one per key of `intersection`, in its order) where the peer
/// revealed columns.
fn values_by_key<'r>(
    keys: usize,
    intersection: &[usize],
    records: &'r [u8],
    columns: Option<&Layout>,
) -> Result<Vec<Option<Vec<&'r [u8]>>>> {
    let mut values = vec![None; keys];
    match columns {
        Some(layout) => {
            let width = layout.width();
            if records.len() != intersection.len() * width {
                return Err(Error::protocol(
                    format!("{} records of {width} bytes", intersection.len()),
                    format!("{} bytes", records.len()),
                ));
            }
            for (&key, record) in intersection.iter().zip(records.chunks(width)) {
                values[key] = Some(layout.decode(record)?);
            }
        }
        None => {
            for &key in intersection {
                values[key] = Some(Vec::new());
            }
        }
    }
    Ok(values)
}

/// The rows of a source held whole in the order both parties derive (`--align`): the
/// matched rows by the keyed hash of their keys, then, for `outer`, the sender's
/// unmatched rows and the receiver's (ours as they are, in input order; the peer's as
/// placeholders: a quoted empty first field and empty others). One row a key (the party
/// refuses repeated keys before it runs).
pub struct AlignedRows<'a> {
    /// Where the keys and their rows come from.
    pub source: &'a dyn InputSource,
    /// The matched keys, as indices into the source's keys.
    pub intersection: &'a [usize],
    /// The peer's record for each matched key, as [`JoinedRows::records`].
    pub records: &'a [u8],
    /// How rows are made (an `inner` join, the peer's columns if any).
    pub shape: Shape<'a>,
    /// Inner or outer.
    pub align: Align,
    /// The key of the hash that orders the matched keys: the run plans' digest.
    pub key: [u8; 32],
    /// Our role: which unmatched rows come first (the sender's).
    pub role: Role,
    /// The peer's distinct keys, as it announced them.
    pub peer_keys: u64,
}

impl MatchedRows for AlignedRows<'_> {
    fn each_batch(&self, each: &mut dyn FnMut(RowBatch) -> io::Result<()>) -> Result<usize> {
        let keys = self.source.keys();
        let values = values_by_key(
            keys.len(),
            self.intersection,
            self.records,
            self.shape.columns,
        )?;
        let mut order: Vec<([u8; 32], usize)> = (self.intersection.iter())
            .map(|&k| (*blake3::keyed_hash(&self.key, keys.get(k)).as_bytes(), k))
            .collect();
        order.sort_unstable();
        // Each matched key's row, copied out of the source (one a key).
        let (mut held, mut at) = (Vec::new(), vec![0..0; keys.len()]);
        let matched: Vec<bool> = values.iter().map(Option::is_some).collect();
        (self.source)
            .each_row(&matched, &mut |key, row| match row {
                RowBatch::Text(row) => {
                    at[key] = held.len()..held.len() + row.len();
                    held.extend_from_slice(row);
                    Ok(())
                }
                _ => Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "keys given in memory have no rows to align",
                )),
            })
            .map_err(Error::Io)?;
        let mut batches = Batches::new(each);
        let header = self.source.header();
        if let Some(header) = header {
            (batches.header(|out| self.shape.header(out, header))).map_err(Error::Io)?;
        }
        let mut count = 0;
        for (_, key) in &order {
            let row = &held[at[*key].clone()];
            let found = values[*key].as_deref().unwrap_or_default();
            (batches.row(|out| {
                self.shape
                    .row(out, ensure_line_end(row).as_ref(), true, found)
            }))
            .map_err(Error::Io)?;
            count += 1;
        }
        if self.align == Align::Outer {
            let placeholders = self
                .peer_keys
                .saturating_sub(self.intersection.len() as u64);
            let placeholder = self.placeholder(header.unwrap_or_default());
            let ours = |batches: &mut Batches| -> Result<usize> {
                let unmatched: Vec<bool> = matched.iter().map(|m| !m).collect();
                (self.source)
                    .each_row(&unmatched, &mut |_, row| match row {
                        RowBatch::Text(row) => batches.row(|out| {
                            self.shape
                                .row(out, ensure_line_end(row).as_ref(), false, &[])
                        }),
                        _ => Ok(()),
                    })
                    .map_err(Error::Io)
            };
            let theirs = |batches: &mut Batches| -> Result<usize> {
                for _ in 0..placeholders {
                    (batches.row(|out| out.extend_from_slice(&placeholder))).map_err(Error::Io)?;
                }
                Ok(placeholders as usize)
            };
            count += match self.role {
                Role::Sender => ours(&mut batches)? + theirs(&mut batches)?,
                Role::Receiver => theirs(&mut batches)? + ours(&mut batches)?,
            };
        }
        batches.finish().map_err(Error::Io)?;
        Ok(count)
    }
}

impl AlignedRows<'_> {
    /// A placeholder row as wide as our output's: a quoted empty first field (so that
    /// a CSV reader does not skip it as a blank line), the others empty.
    fn placeholder(&self, header: &[u8]) -> Vec<u8> {
        let fields = csv::ReaderBuilder::new()
            .has_headers(false)
            .delimiter(self.shape.delimiter)
            .from_reader(header)
            .byte_records()
            .next()
            .and_then(|r| r.ok())
            .map_or(1, |r| r.len())
            + self.shape.columns.map_or(0, |l| l.columns.len());
        let mut row = b"\"\"".to_vec();
        row.extend(std::iter::repeat_n(self.shape.delimiter, fields - 1));
        row.push(b'\n');
        row
    }
}

/// `row` with a line break at its end (the file's last row may have none, and in an
/// aligned output it need not stay last).
fn ensure_line_end(row: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    match row.ends_with(b"\n") || row.ends_with(b"\r") {
        true => row.into(),
        false => [row, b"\n"].concat().into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{read_input, KeyOptions};

    /// Each kind over the same rows and intersection: `inner` the matched rows, `left`
    /// every row flagged (the peer's columns empty where unmatched), `difference` the
    /// rest; the header names what is added; CRLF endings and a last row without one kept.
    #[test]
    fn each_kind_keeps_and_shapes_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("in.csv");
        std::fs::write(&csv, "k,n\r\na,1\r\nb,2\r\na,3\r\nc,4").unwrap();
        let input = read_input(&csv, &KeyOptions::default()).unwrap();
        let layout = Layout::new(vec![("seg".into(), 4)]).unwrap();
        let mut record = vec![0u8; layout.width()];
        layout.encode(&[b"x,y"], &mut record);
        let cases = [
            (JoinKind::Inner, None, "k,n\r\na,1\r\na,3\r\n"),
            (JoinKind::Inner, Some(&layout), "k,n,seg\r\na,1,\"x,y\"\r\na,3,\"x,y\"\r\n"),
            (
                JoinKind::Left,
                None,
                "k,n,matched\r\na,1,true\r\nb,2,false\r\na,3,true\r\nc,4,false\n",
            ),
            (
                JoinKind::Left,
                Some(&layout),
                "k,n,matched,seg\r\na,1,true,\"x,y\"\r\nb,2,false,\r\na,3,true,\"x,y\"\r\nc,4,false,\n",
            ),
            (JoinKind::Difference, None, "k,n\r\nb,2\r\nc,4\n"),
        ];
        for (kind, columns, expected) in cases {
            let rows = JoinedRows {
                source: &input,
                intersection: &[0],
                records: if columns.is_some() { &record } else { &[] },
                shape: Shape {
                    kind,
                    columns,
                    delimiter: b',',
                },
            };
            let out = dir.path().join("out.csv");
            crate::sink::write_rows(&out, &rows).unwrap();
            assert_eq!(std::fs::read_to_string(&out).unwrap(), expected, "{kind:?}");
        }
        for kind in JoinKind::NAMES {
            assert_eq!(
                JoinKind::parse(kind).unwrap().keeps(true),
                *kind != "difference"
            );
        }
        assert!(JoinKind::parse("outer").is_err());
    }
}
