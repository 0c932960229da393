//! Which of a party's rows its output holds, and what is added to them (`--join`): the
//! matched rows (`inner`, the default), all rows with a `matched` column (`left`), or the
//! rows whose key the peer lacks (`difference`); the peer's revealed columns are appended
//! to each matched row ([`crate::columns`]), left empty on a `left` join's unmatched rows.
//!
//! Every kind is a function of the party's own rows and the intersection it learns, so
//! none reveals more than `inner` does.
//!
//! With `--match-any` a record has a key for each of its non-empty identifiers: it is
//! matched when the peer has any of them, output once (with a `matched_on` column naming
//! those the peer has), and the peer's columns are those of the peer's rows of the first
//! identifier, in the order `--match-any` names them, that matched.
//!
//! With `--both`, `--align` has both parties write their matched rows in one order
//! ([`AlignedRows`]): by a keyed hash of each matched key under the digest of both run
//! plans. Both hold exactly the matched keys (normalised alike: the plans check it) and
//! the digest, so they derive the same order, and it tells neither anything beyond the
//! intersection (it is not either party's input order). `--align outer` then adds the
//! sender's unmatched rows and the receiver's, each side writing placeholders where the
//! other has rows: the peer's count of unmatched rows is its announced size less the
//! intersection, which both know already.

use crate::columns::{push_field, Layout, MATCHED_COLUMN, MATCHED_ON_COLUMN};
use crate::input::source::{InputSource, MatchedRows, RowBatch};
use std::io;
use std::ops::Range;
use venn::session::run_plan::Align;
use venn::session::Role;
use venn::{Error, Result};

/// Bytes of output rows handed to the sink at a time.
const BATCH_BYTES: usize = 1 << 16;

/// What each way of writing a party's output reveals beside the intersection, a line
/// each (`venn params`, for a protocol whose output is the intersection, and
/// docs/protocols.md).
pub const OUTPUT_LEAKAGE: &[(&str, &str)] = &[
    (
        "--join inner",
        "the rows whose key the peer has: the intersection, nothing more",
    ),
    (
        "--join left",
        "every row, with whether the peer has its key: the intersection, nothing more",
    ),
    (
        "--join difference",
        "the rows whose key the peer lacks: the intersection's complement, nothing more",
    ),
    (
        "--align inner",
        "both write the matched rows in one order, a keyed hash of each key under the \
         digest of both run plans: nothing more (it is neither party's input order)",
    ),
    (
        "--align outer",
        "then each side's unmatched rows and placeholders for the peer's: the peer's count \
         of unmatched rows, its announced size less the intersection, which each knew",
    ),
    (
        "--match-any",
        "for each of a party's identifier values, whether the peer has it under the same \
         identifier (as one PSI per identifier tells), and the peer's number of identifier \
         values in all (not each identifier's); nothing of which of the peer's identifiers \
         make one record",
    ),
];

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
/// nothing is added): the `matched` flag of a `left` join, the `matched_on` column of
/// `--match-any`, then the peer's columns.
pub struct Shape<'a> {
    /// Which rows are output.
    pub kind: JoinKind,
    /// The peer's columns, named as asked, if it revealed any.
    pub columns: Option<&'a Layout>,
    /// The input's delimiter, which the added fields take.
    pub delimiter: u8,
    /// With `--match-any` (and a join that outputs matched records), the identifiers'
    /// names, for the `matched_on` column.
    pub identifiers: Option<&'a [String]>,
}

impl<'a> Shape<'a> {
    /// Keys given in memory: an inner join, with the peer's columns (laid out as
    /// `columns`) if it revealed any.
    pub fn of_keys(columns: Option<&'a Layout>) -> Shape<'a> {
        Shape {
            kind: JoinKind::Inner,
            columns,
            delimiter: b',',
            identifiers: None,
        }
    }

    /// Whether rows are output as they are in the input (nothing added).
    pub fn as_they_are(&self) -> bool {
        self.kind != JoinKind::Left && self.columns.is_none() && self.identifiers.is_none()
    }

    /// The columns added after a `left` join's `matched` flag, as a Parquet output adds
    /// them (named, with their widths): `matched_on`, then the peer's.
    pub fn added(&self) -> Vec<(String, u16)> {
        let on = (self.identifiers.iter()).map(|names| {
            let width = names.iter().map(|n| n.len() + 1).sum::<usize>();
            (
                MATCHED_ON_COLUMN.to_string(),
                width.min(u16::MAX as usize) as u16,
            )
        });
        let peer = self.columns.iter().flat_map(|l| l.columns.iter().cloned());
        on.chain(peer).collect()
    }

    /// The `matched_on` field of a record the peer has the `identifiers` of (their numbers,
    /// in order): their names, joined by `|`, in `out` (nothing without `--match-any`).
    pub fn matched_on(&self, identifiers: impl Iterator<Item = u16>, out: &mut Vec<u8>) {
        out.clear();
        let Some(names) = self.identifiers else {
            return;
        };
        for i in identifiers {
            if !out.is_empty() {
                out.push(b'|');
            }
            out.extend_from_slice(names[i as usize].as_bytes());
        }
    }

    /// Appends the header row with the added columns' names.
    pub fn header(&self, out: &mut Vec<u8>, header: &[u8]) {
        let flag = (self.kind == JoinKind::Left).then_some(MATCHED_COLUMN.as_bytes());
        let on = self.identifiers.map(|_| MATCHED_ON_COLUMN.as_bytes());
        let names =
            (self.columns.into_iter()).flat_map(|l| l.columns.iter().map(|(n, _)| n.as_bytes()));
        self.append(out, header, flag.into_iter().chain(on).chain(names));
    }

    /// Appends `row` (as it is in the file) with the added fields: whether it matched (a
    /// `left` join), then `values`: `matched_on`'s and the peer's (all empty where it did
    /// not match).
    pub fn row(&self, out: &mut Vec<u8>, row: &[u8], matched: bool, values: &[&[u8]]) {
        let flag: Option<&[u8]> = (self.kind == JoinKind::Left).then_some(match matched {
            true => b"true",
            false => b"false",
        });
        let added = self.columns.map_or(0, |l| l.columns.len()) + self.identifiers.map_or(0, |_| 1);
        let empty = added * usize::from(!matched);
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
/// makes them, a matched row once for each of the peer's rows of its key when the peer
/// revealed columns (the relational join: many rows a key on both sides give every pair).
pub struct JoinedRows<'a> {
    /// Where the keys and their rows come from.
    pub source: &'a dyn InputSource,
    /// The matched keys, as indices into the source's keys.
    pub intersection: &'a [usize],
    /// The peer's records, key by key in the order of `intersection` (none without
    /// columns).
    pub records: &'a [u8],
    /// How many of the peer's rows (records) each matched key has, in the same order.
    pub rows: &'a [u32],
    /// What is output, and how.
    pub shape: Shape<'a>,
}

impl MatchedRows for JoinedRows<'_> {
    fn each_batch(&self, each: &mut dyn FnMut(RowBatch) -> io::Result<()>) -> Result<usize> {
        let keys = self.source.keys().len();
        // Every record is read before anything is written: a bad one fails the run whole.
        let peer = PeerRecords::new(
            keys,
            self.intersection,
            (self.records, self.rows),
            self.shape.columns,
        )?;
        let mut batches = Batches::new(each);
        if let Some(header) = self.source.header() {
            (batches.header(|out| self.shape.header(out, header))).map_err(Error::Io)?;
        }
        // A Parquet file's rows go by position, each with what is added to it.
        let table = self.source.table();
        let added = self.shape.added();
        if let Some(file) = table {
            (batches.pass(RowBatch::Table {
                file,
                matched: self.shape.kind == JoinKind::Left,
                columns: &added,
            }))
            .map_err(Error::Io)?;
        }
        let (mut count, mut values, mut on) = (0, Vec::new(), Vec::new());
        (self.source)
            .each_record(&mut |rows, row| {
                // The first of its keys the peer has (its identifiers in order).
                let first = rows.iter().find(|r| peer.has(r.key as usize));
                if !self.shape.kind.keeps(first.is_some()) {
                    return Ok(());
                }
                // The row once for each of the peer's rows of that key, or once unmatched.
                let mut emit = |matched: bool, values: &[&[u8]]| match row {
                    RowBatch::Text(row) => {
                        batches.row(|out| self.shape.row(out, row, matched, values))
                    }
                    // A Parquet file's row, or a key given in memory, by position.
                    RowBatch::Positions(&[position]) => batches.pass(RowBatch::Joined {
                        position,
                        matched,
                        values,
                    }),
                    _ => Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "a row by position comes one at a time",
                    )),
                };
                let Some(first) = first else {
                    count += 1;
                    return emit(false, &[]);
                };
                let has = rows.iter().filter(|r| peer.has(r.key as usize));
                self.shape.matched_on(has.map(|r| r.identifier), &mut on);
                for r in peer.rows_of(first.key as usize) {
                    peer.values(r, &mut values);
                    match self.shape.identifiers {
                        Some(_) => {
                            let fields: Vec<&[u8]> = std::iter::once(&on[..])
                                .chain(values.iter().copied())
                                .collect();
                            emit(true, &fields)?
                        }
                        None => emit(true, &values)?,
                    }
                    count += 1;
                }
                Ok(())
            })
            .map_err(Error::Io)?;
        batches.finish().map_err(Error::Io)?;
        Ok(count)
    }
}

/// The peer's rows of each key of a source, as the records it revealed carry them: for a
/// matched key, which records are its (one where the peer revealed no columns: the row
/// is output once, nothing added).
struct PeerRecords<'r> {
    /// For each key, its records' range (by record); empty where the peer lacks the key.
    at: Vec<Range<u32>>,
    records: &'r [u8],
    layout: Option<&'r Layout>,
}

impl<'r> PeerRecords<'r> {
    /// Each of `keys` keys' records, from the `records` and the numbers of `rows` for each
    /// key of the `intersection` in order (where the peer revealed columns in `layout`):
    /// every record checked against the layout, and their number against the rows.
    fn new(
        keys: usize,
        intersection: &[usize],
        (records, rows): (&'r [u8], &[u32]),
        layout: Option<&'r Layout>,
    ) -> Result<Self> {
        let mut at = vec![0..0; keys];
        let Some(layout) = layout else {
            for &key in intersection {
                at[key] = 0..1;
            }
            return Ok(PeerRecords {
                at,
                records,
                layout,
            });
        };
        let width = layout.width();
        let all: u64 = rows.iter().map(|&r| r as u64).sum();
        if rows.len() != intersection.len() || records.len() as u64 != all * width as u64 {
            return Err(Error::protocol(
                format!(
                    "{all} records of {width} bytes for {} keys",
                    intersection.len()
                ),
                format!("{} bytes for {} keys", records.len(), rows.len()),
            ));
        }
        let mut first = 0u32;
        for (&key, &n) in intersection.iter().zip(rows) {
            at[key] = first..first + n;
            first += n;
        }
        let mut values = Vec::new();
        for record in records.chunks_exact(width) {
            layout.decode(record, &mut values)?;
        }
        Ok(PeerRecords {
            at,
            records,
            layout: Some(layout),
        })
    }

    /// Whether the peer has `key`.
    fn has(&self, key: usize) -> bool {
        !self.at[key].is_empty()
    }

    /// The peer's rows of `key`: its records' numbers.
    fn rows_of(&self, key: usize) -> Range<u32> {
        self.at[key].clone()
    }

    /// The values of record `r` in place of what `values` held (none without columns).
    fn values(&self, r: u32, values: &mut Vec<&'r [u8]>) {
        values.clear();
        if let Some(layout) = self.layout {
            let width = layout.width();
            let record = &self.records[r as usize * width..(r as usize + 1) * width];
            layout
                .decode(record, values)
                .expect("each record was checked");
        }
    }
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
    /// How many of the peer's rows each matched key has, as [`JoinedRows::rows`]: one
    /// each (the peer refuses repeated keys with `--align` too).
    pub rows: &'a [u32],
    /// How rows are made (an `inner` join, the peer's columns if any).
    pub shape: Shape<'a>,
    /// How both parties order them.
    pub alignment: Alignment,
}

/// How both parties order an aligned output (`--align`).
#[derive(Clone, Copy, Debug)]
pub struct Alignment {
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
        if self.shape.columns.is_some() && self.rows.iter().any(|&r| r != 1) {
            return Err(Error::protocol(
                "one row of the peer's for each matched key with --align",
                "several",
            ));
        }
        let peer = PeerRecords::new(
            keys.len(),
            self.intersection,
            (self.records, self.rows),
            self.shape.columns,
        )?;
        let mut order: Vec<([u8; 32], usize)> = (self.intersection.iter())
            .map(|&k| (self.alignment.hash(keys.get(k)), k))
            .collect();
        order.sort_unstable();
        // Each matched key's row, copied out of the source (one a key).
        let (mut held, mut at) = (Vec::new(), vec![0..0; keys.len()]);
        let matched: Vec<bool> = (0..keys.len()).map(|k| peer.has(k)).collect();
        (self.source)
            .each_record(&mut |rows, row| match row {
                _ if !matched[rows[0].key as usize] => Ok(()),
                RowBatch::Text(row) => {
                    let key = rows[0].key as usize;
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
        let (mut count, mut values) = (0, Vec::new());
        for &(_, key) in &order {
            let row = &held[at[key].clone()];
            peer.values(peer.rows_of(key).start, &mut values);
            (batches.row(|out| {
                self.shape
                    .row(out, ensure_line_end(row).as_ref(), true, &values)
            }))
            .map_err(Error::Io)?;
            count += 1;
        }
        if self.alignment.align == Align::Outer {
            let placeholder = placeholder(&self.shape, header.unwrap_or_default());
            let ours = |batches: &mut Batches| -> Result<usize> {
                let mut count = 0;
                (self.source)
                    .each_record(&mut |rows, row| match row {
                        _ if matched[rows[0].key as usize] => Ok(()),
                        RowBatch::Text(row) => {
                            count += 1;
                            batches.row(|out| {
                                self.shape
                                    .row(out, ensure_line_end(row).as_ref(), false, &[])
                            })
                        }
                        _ => Ok(()),
                    })
                    .map_err(Error::Io)?;
                Ok(count)
            };
            let matched = self.intersection.len() as u64;
            count += (self.alignment).unmatched(&mut batches, matched, &placeholder, ours)?;
        }
        batches.finish().map_err(Error::Io)?;
        Ok(count)
    }
}

impl Alignment {
    /// The hash that orders aligned rows: each matched key's, keyed by the run plans'
    /// digest (both parties derive it; it is neither input's order).
    pub(crate) fn hash(&self, key: &[u8]) -> [u8; 32] {
        *blake3::keyed_hash(&self.key, key).as_bytes()
    }

    /// `--align outer`'s rows after the `matched` ones: the sender's unmatched rows, then
    /// the receiver's — ours as `ours` writes them (returning how many), the peer's as
    /// `placeholder` rows, one for each of its keys not matched. Returns how many rows
    /// were written.
    pub(crate) fn unmatched(
        &self,
        batches: &mut Batches,
        matched: u64,
        placeholder: &[u8],
        ours: impl FnOnce(&mut Batches) -> Result<usize>,
    ) -> Result<usize> {
        let placeholders = self.peer_keys.saturating_sub(matched);
        let theirs = |batches: &mut Batches| -> Result<usize> {
            for _ in 0..placeholders {
                (batches.row(|out| out.extend_from_slice(placeholder))).map_err(Error::Io)?;
            }
            Ok(placeholders as usize)
        };
        Ok(match self.role {
            Role::Sender => ours(batches)? + theirs(batches)?,
            Role::Receiver => theirs(batches)? + ours(batches)?,
        })
    }
}

/// A placeholder row as wide as an output of `shape` under `header`: a quoted empty
/// first field (so that a CSV reader does not skip it as a blank line), the others empty.
pub(crate) fn placeholder(shape: &Shape, header: &[u8]) -> Vec<u8> {
    let fields = csv::ReaderBuilder::new()
        .has_headers(false)
        .delimiter(shape.delimiter)
        .from_reader(header)
        .byte_records()
        .next()
        .and_then(|r| r.ok())
        .map_or(1, |r| r.len())
        + shape.columns.map_or(0, |l| l.columns.len());
    let mut row = b"\"\"".to_vec();
    row.extend(std::iter::repeat_n(shape.delimiter, fields - 1));
    row.push(b'\n');
    row
}

/// `row` with a line break at its end (the file's last row may have none, and in an
/// aligned output it need not stay last).
pub(crate) fn ensure_line_end(row: &[u8]) -> std::borrow::Cow<'_, [u8]> {
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
                rows: &[1],
                shape: Shape {
                    kind,
                    columns,
                    delimiter: b',',
                    identifiers: None,
                },
            };
            let out = dir.path().join("out.csv");
            crate::sink::write_rows(&out, &rows, 1).unwrap();
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

    /// The peer's several rows of a key give a matched row once for each of them, in the
    /// peer's order (pandas' merge of duplicates on both sides); a `left` join's unmatched
    /// row still once; records that do not add up to the rows counted are refused.
    #[test]
    fn a_key_with_several_peer_rows_gives_a_row_for_each() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("in.csv");
        std::fs::write(&csv, "k,n\na,1\nb,2\na,3\n").unwrap();
        let input = read_input(&csv, &KeyOptions::default()).unwrap();
        let layout = Layout::new(vec![("seg".into(), 4)]).unwrap();
        let mut records = vec![0u8; 3 * layout.width()];
        for (value, record) in [&b"p"[..], b"q", b"r"].iter().zip(records.chunks_mut(6)) {
            layout.encode(&[value], record);
        }
        let joined = |kind, rows: &[u32]| {
            let rows = JoinedRows {
                source: &input,
                intersection: &[0, 1],
                records: &records,
                rows,
                shape: Shape {
                    kind,
                    columns: Some(&layout),
                    delimiter: b',',
                    identifiers: None,
                },
            };
            let out = dir.path().join("out.csv");
            crate::sink::write_rows(&out, &rows, 1).map(|_| std::fs::read_to_string(&out).unwrap())
        };
        assert_eq!(
            joined(JoinKind::Inner, &[2, 1]).unwrap(),
            "k,n,seg\na,1,p\na,1,q\nb,2,r\na,3,p\na,3,q\n"
        );
        assert_eq!(
            joined(JoinKind::Left, &[1, 2]).unwrap(),
            "k,n,matched,seg\na,1,true,p\nb,2,true,q\nb,2,true,r\na,3,true,p\n"
        );
        assert!(
            joined(JoinKind::Inner, &[1, 1]).is_err(),
            "a record left over"
        );
        assert!(
            joined(JoinKind::Inner, &[2, 2]).is_err(),
            "a record missing"
        );
    }

    /// With `--match-any` a record is output once whichever of its identifiers matched,
    /// `matched_on` naming them in order, the peer's columns from its rows of the first
    /// that matched; a `left` join's unmatched record once with both empty; a
    /// `difference` the records none of whose identifiers matched.
    #[test]
    fn a_record_matched_on_any_identifier_is_output_once() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("in.csv");
        std::fs::write(&csv, "e,p\na,1\nb,2\n,3\nc,\na,4\n").unwrap();
        let opts = KeyOptions {
            columns: vec!["e".into(), "p".into()],
            match_any: true,
            ..KeyOptions::default()
        };
        let input = read_input(&csv, &opts).unwrap();
        let key = |k: &[u8]| {
            (0..input.keys.len())
                .find(|&i| input.keys.get(i) == k)
                .unwrap()
        };
        // The peer has e=a (two rows: x, y), p=2 (z), p=3 (w) and p=1 (v); not b, c or 4.
        let intersection = [key(b"\x00a"), key(b"\x012"), key(b"\x013"), key(b"\x011")];
        let layout = Layout::new(vec![("seg".into(), 4)]).unwrap();
        let mut records = vec![0u8; 5 * layout.width()];
        let values = [&b"x"[..], b"y", b"z", b"w", b"v"];
        for (value, record) in values.iter().zip(records.chunks_mut(6)) {
            layout.encode(&[value], record);
        }
        let names = ["e".to_string(), "p".to_string()];
        let joined = |kind, columns: Option<&Layout>| {
            let rows = JoinedRows {
                source: &input,
                intersection: &intersection,
                records: if columns.is_some() { &records } else { &[] },
                rows: if columns.is_some() {
                    &[2, 1, 1, 1]
                } else {
                    &[1; 4]
                },
                shape: Shape {
                    kind,
                    columns,
                    delimiter: b',',
                    identifiers: (kind != JoinKind::Difference).then_some(&names[..]),
                },
            };
            let out = dir.path().join("out.csv");
            crate::sink::write_rows(&out, &rows, 1).unwrap();
            std::fs::read_to_string(&out).unwrap()
        };
        assert_eq!(
            joined(JoinKind::Inner, None),
            "e,p,matched_on\na,1,e|p\nb,2,p\n,3,p\na,4,e\n"
        );
        assert_eq!(
            joined(JoinKind::Inner, Some(&layout)),
            "e,p,matched_on,seg\na,1,e|p,x\na,1,e|p,y\nb,2,p,z\n,3,p,w\na,4,e,x\na,4,e,y\n"
        );
        assert_eq!(
            joined(JoinKind::Left, Some(&layout)),
            "e,p,matched,matched_on,seg\na,1,true,e|p,x\na,1,true,e|p,y\nb,2,true,p,z\n\
             ,3,true,p,w\nc,,false,,\na,4,true,e,x\na,4,true,e,y\n"
        );
        assert_eq!(joined(JoinKind::Difference, None), "e,p\nc,\n");
    }
}
