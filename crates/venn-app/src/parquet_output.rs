//! The output of a Parquet input: a Parquet file with the input's schema and the rows the
//! output holds, copied from the input column by column (values, nulls, nesting and all),
//! then the columns a join adds: `matched` (a required boolean, for a `left` join) and
//! the peer's columns (optional UTF-8 strings, null where the peer lacks the key).
//!
//! Written a row group at a time: the rows of each of the input's row groups are
//! gathered as they come (by position, ascending; a row repeated for each output row of
//! it), then copied in one pass over that row group's pages, so that memory holds one
//! row group's added values, never the file. The input's key-value metadata is kept but
//! for what describes its columns to Arrow and pandas (`ARROW:schema`, `pandas`), which
//! the added columns would contradict. Pages are compressed with Snappy.

use crate::columns::MATCHED_COLUMN;
use crate::input::parquet_file::ParquetFile;
use crate::input::source::RowBatch;
use parquet::basic::{Compression, LogicalType, Repetition, Type as PhysicalType};
use parquet::column::reader::{ColumnReader, ColumnReaderImpl};
use parquet::column::writer::{
    get_column_writer, get_typed_column_writer_mut, ColumnCloseResult, ColumnWriter,
    ColumnWriterImpl,
};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DataType};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{WriterProperties, WriterPropertiesPtr};
use parquet::file::reader::FileReader;
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use parquet::schema::types::{ColumnDescPtr, Type};
use rayon::prelude::*;
use std::io::{self, Write};
use std::sync::Arc;

/// Records copied from a column at a time.
const BATCH: usize = 1 << 13;

/// The key-value metadata that describes a file's columns to other libraries, dropped
/// from an output that adds columns.
const COLUMN_METADATA: &[&str] = &["ARROW:schema", "pandas"];

/// A Parquet output being written.
pub(crate) struct ParquetOutput {
    input: ParquetFile,
    /// The file's bytes not yet handed to the destination (a row group's at most).
    writer: SerializedFileWriter<Vec<u8>>,
    /// How its columns are encoded (Snappy, the input's metadata).
    properties: WriterPropertiesPtr,
    /// The threads a row group's columns are encoded on, if more than one.
    pool: Option<rayon::ThreadPool>,
    /// Whether a `matched` column is added.
    flagged: bool,
    /// The peer's columns added, by name.
    columns: Vec<String>,
    /// The input's row group whose rows are being gathered, and its rows' positions.
    group: usize,
    group_rows: std::ops::Range<usize>,
    /// The gathered rows: their positions in the row group, their `matched` flags, and
    /// the peer's values (each column's non-null values, and a definition level a row).
    selected: Vec<usize>,
    flags: Vec<bool>,
    values: Vec<PeerValues>,
    present: Vec<Vec<i16>>,
}

/// A column's values from the peer for a row group, in one buffer (an allocation a value
/// would cost more than the writing): their bytes one after another, and where each ends.
#[derive(Clone, Default)]
struct PeerValues {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl PeerValues {
    /// The values as the writer takes them, each a slice of one shared buffer; empties
    /// `self`.
    fn take(&mut self) -> Vec<ByteArray> {
        let bytes = bytes::Bytes::from(std::mem::take(&mut self.bytes));
        let mut start = 0;
        let values = (self.ends.iter())
            .map(|&end| ByteArray::from(bytes.slice(std::mem::replace(&mut start, end)..end)))
            .collect();
        self.ends.clear();
        values
    }
}

/// A Parquet error as an I/O error of the output.
fn failed(e: ParquetError) -> io::Error {
    io::Error::other(format!("writing Parquet: {e}"))
}

/// Refused rows or columns.
fn refused(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, why)
}

/// A column of a row group of the output.
#[derive(Clone, Copy)]
enum Column {
    /// The input's leaf column of this index, its rows copied.
    Copied(usize),
    /// `matched`.
    Matched,
    /// The peer's column of this index among those added.
    Peer(usize),
}

/// A column chunk encoded apart, to be appended to its row group: its bytes and what
/// closing its writer recorded of them (offsets from the bytes' start).
type Encoded = (bytes::Bytes, ColumnCloseResult);

impl ParquetOutput {
    /// An output of `input`'s rows, with a `matched` column if `flagged` and the peer's
    /// `columns`, each row group's columns encoded on up to `threads` threads; refused if
    /// an added column's name is taken ([`ParquetFile::check_added`]).
    pub(crate) fn new(
        input: &ParquetFile,
        flagged: bool,
        columns: &[(String, u16)],
        threads: usize,
    ) -> io::Result<ParquetOutput> {
        let meta = input.reader().metadata().file_metadata();
        let root = meta.schema();
        let mut fields = root.get_fields().to_vec();
        let flag = flagged.then(|| {
            Type::primitive_type_builder(MATCHED_COLUMN, PhysicalType::BOOLEAN)
                .with_repetition(Repetition::REQUIRED)
                .build()
        });
        let peer = columns.iter().map(|(name, _)| {
            Type::primitive_type_builder(name, PhysicalType::BYTE_ARRAY)
                .with_repetition(Repetition::OPTIONAL)
                .with_logical_type(Some(LogicalType::String))
                .build()
        });
        (input.check_added(flagged, columns.iter().map(|(name, _)| name.as_str())))
            .map_err(|e| refused(e.to_string()))?;
        for added in flag.into_iter().chain(peer) {
            fields.push(Arc::new(added.map_err(failed)?));
        }
        let schema = Type::group_type_builder(root.name())
            .with_fields(fields)
            .build()
            .map_err(failed)?;
        let kept: Vec<KeyValue> = (meta.key_value_metadata().into_iter().flatten())
            .filter(|kv| !COLUMN_METADATA.contains(&kv.key.as_str()))
            .cloned()
            .collect();
        let properties = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_key_value_metadata((!kept.is_empty()).then_some(kept))
            .build();
        let properties = Arc::new(properties);
        let writer = SerializedFileWriter::new(Vec::new(), Arc::new(schema), properties.clone())
            .map_err(failed)?;
        let pool = match threads > 1 {
            true => Some(
                (rayon::ThreadPoolBuilder::new().num_threads(threads).build()).map_err(|e| {
                    io::Error::other(format!("cannot start {threads} threads: {e}"))
                })?,
            ),
            false => None,
        };
        let first = input.reader().metadata().row_groups().first();
        Ok(ParquetOutput {
            input: input.clone(),
            writer,
            properties,
            pool,
            flagged,
            columns: columns.iter().map(|(n, _)| n.clone()).collect(),
            group: 0,
            group_rows: 0..first.map_or(0, |g| g.num_rows().max(0) as usize),
            selected: Vec::new(),
            flags: Vec::new(),
            values: vec![PeerValues::default(); columns.len()],
            present: vec![Vec::new(); columns.len()],
        })
    }

    /// Takes a batch of the input's rows (each written to `out` once its row group is
    /// complete); refuses a text file's.
    pub(crate) fn add(&mut self, out: &mut dyn Write, batch: RowBatch) -> io::Result<()> {
        match batch {
            RowBatch::Positions(positions) => {
                for &position in positions {
                    self.row(out, position, true, &[])?;
                }
                Ok(())
            }
            RowBatch::Joined {
                position,
                matched,
                values,
            } => self.row(out, position, matched, values),
            RowBatch::Header(_) | RowBatch::Text(_) | RowBatch::Table { .. } => Err(refused(
                "a Parquet output holds the rows of one Parquet input".into(),
            )),
        }
    }

    /// Gathers the row at `position`, with whether the peer has its key and the peer's
    /// `values` (none where it does not).
    fn row(
        &mut self,
        out: &mut dyn Write,
        position: usize,
        matched: bool,
        values: &[&[u8]],
    ) -> io::Result<()> {
        if position < self.group_rows.start {
            return Err(refused(format!(
                "row {position} of the output comes after row {}",
                self.group_rows.start
            )));
        }
        while position >= self.group_rows.end {
            self.write_group(out)?;
            self.group += 1;
            let groups = self.input.reader().metadata().row_groups();
            let Some(next) = groups.get(self.group) else {
                return Err(refused(format!(
                    "'{}' has no row {position}: it changed while venn ran",
                    self.input.path().display()
                )));
            };
            let end = self.group_rows.end + next.num_rows().max(0) as usize;
            self.group_rows = self.group_rows.end..end;
        }
        self.selected.push(position - self.group_rows.start);
        self.flags.push(matched);
        if values.is_empty() && matched && !self.columns.is_empty() {
            return Err(refused("a matched row without the peer's values".into()));
        }
        for (c, (kept, present)) in self.values.iter_mut().zip(&mut self.present).enumerate() {
            match values.get(c) {
                Some(value) => {
                    std::str::from_utf8(value).map_err(|_| {
                        refused(format!(
                            "the peer's value in its column '{}' is not UTF-8 text, which a \
                             Parquet output's string column holds",
                            self.columns[c]
                        ))
                    })?;
                    kept.bytes.extend_from_slice(value);
                    kept.ends.push(kept.bytes.len());
                    present.push(1);
                }
                None => present.push(0),
            }
        }
        Ok(())
    }

    /// Writes the gathered rows of the current row group as a row group of the output
    /// (none if no row of it is output), and hands the file's bytes so far to `out`. Its
    /// columns are independent: with a pool, each is encoded apart on its threads, then
    /// appended in order.
    fn write_group(&mut self, out: &mut dyn Write) -> io::Result<()> {
        if self.selected.is_empty() {
            return Ok(());
        }
        let peer: Vec<(Vec<ByteArray>, Vec<i16>)> = (self.values.iter_mut())
            .zip(&mut self.present)
            .map(|(values, present)| (values.take(), std::mem::take(present)))
            .collect();
        let schema = self
            .input
            .reader()
            .metadata()
            .file_metadata()
            .schema_descr();
        let columns: Vec<Column> = (0..schema.num_columns())
            .map(Column::Copied)
            .chain(self.flagged.then_some(Column::Matched))
            .chain((0..peer.len()).map(Column::Peer))
            .collect();
        let output = self.writer.schema_descr();
        let descrs: Vec<ColumnDescPtr> = (0..output.num_columns())
            .map(|i| output.column(i))
            .collect();
        let rows = Rows {
            input: &self.input,
            group: self.group,
            selected: &self.selected,
            flags: &self.flags,
            peer: &peer,
        };
        let mut group = self.writer.next_row_group().map_err(failed)?;
        match &self.pool {
            // On one thread, each column straight into the row group.
            None => {
                for &column in &columns {
                    let mut to = (group.next_column().map_err(failed)?).ok_or_else(|| {
                        failed(ParquetError::General("a column is missing".into()))
                    })?;
                    rows.write(column, to.untyped()).map_err(failed)?;
                    to.close().map_err(failed)?;
                }
            }
            Some(pool) => {
                let encode = |(&column, descr): (&Column, &ColumnDescPtr)| {
                    encoded(descr.clone(), &self.properties, |w| rows.write(column, w))
                };
                let encoded: Result<Vec<Encoded>, ParquetError> =
                    pool.install(|| columns.par_iter().zip(&descrs).map(encode).collect());
                for (bytes, close) in encoded.map_err(failed)? {
                    group.append_column(&bytes, close).map_err(failed)?;
                }
            }
        }
        group.close().map_err(failed)?;
        self.selected.clear();
        self.flags.clear();
        self.writer.flush()?;
        let bytes = self.writer.inner_mut();
        out.write_all(bytes)?;
        bytes.clear();
        Ok(())
    }

    /// Writes the last rows gathered and the footer to `out`.
    pub(crate) fn finish(mut self, out: &mut dyn Write) -> io::Result<()> {
        self.write_group(out)?;
        let rest = self.writer.into_inner().map_err(failed)?;
        out.write_all(&rest)
    }
}

/// A row group's gathered rows, as its columns' writers take them.
struct Rows<'a> {
    input: &'a ParquetFile,
    /// The input's row group they are of.
    group: usize,
    /// Their positions in it, `matched` flags, and the peer's values and definition
    /// levels of each added column.
    selected: &'a [usize],
    flags: &'a [bool],
    peer: &'a [(Vec<ByteArray>, Vec<i16>)],
}

impl Rows<'_> {
    /// Writes their values of `column` to `to`.
    fn write(&self, column: Column, to: &mut ColumnWriter<'_>) -> Result<(), ParquetError> {
        match column {
            Column::Copied(leaf) => {
                let reader = self.input.reader();
                let from = reader.get_row_group(self.group)?.get_column_reader(leaf)?;
                let descr = reader
                    .metadata()
                    .file_metadata()
                    .schema_descr()
                    .column(leaf);
                let levels = (descr.max_def_level(), descr.max_rep_level());
                copy_column(from, to, self.selected, levels)
            }
            Column::Matched => {
                let to = get_typed_column_writer_mut::<BoolType>(to);
                to.write_batch(self.flags, None, None).map(|_| ())
            }
            Column::Peer(c) => {
                let (values, present) = &self.peer[c];
                let to = get_typed_column_writer_mut::<ByteArrayType>(to);
                to.write_batch(values, Some(present), None).map(|_| ())
            }
        }
    }
}

/// The column chunk that `fill` writes to a writer of `descr`, encoded apart.
fn encoded(
    descr: ColumnDescPtr,
    properties: &WriterPropertiesPtr,
    fill: impl FnOnce(&mut ColumnWriter<'_>) -> Result<(), ParquetError>,
) -> Result<Encoded, ParquetError> {
    let mut sink = TrackedWrite::new(Vec::new());
    let close = {
        let pages = Box::new(SerializedPageWriter::new(&mut sink));
        let mut writer = get_column_writer(descr, properties.clone(), pages);
        fill(&mut writer)?;
        writer.close()?
    };
    Ok((bytes::Bytes::from(sink.into_inner()?), close))
}

/// Copies the records `selected` (positions in the row group, ascending, a record
/// repeated as often as it is named) of one leaf column, whose maximum definition and
/// repetition levels are `levels`, from `from` to `to`.
fn copy_column(
    from: ColumnReader,
    to: &mut ColumnWriter<'_>,
    selected: &[usize],
    levels: (i16, i16),
) -> Result<(), ParquetError> {
    use ColumnReader as R;
    use ColumnWriter as W;
    match (from, to) {
        (R::BoolColumnReader(r), W::BoolColumnWriter(w)) => copy_records(r, w, selected, levels),
        (R::Int32ColumnReader(r), W::Int32ColumnWriter(w)) => copy_records(r, w, selected, levels),
        (R::Int64ColumnReader(r), W::Int64ColumnWriter(w)) => copy_records(r, w, selected, levels),
        (R::Int96ColumnReader(r), W::Int96ColumnWriter(w)) => copy_records(r, w, selected, levels),
        (R::FloatColumnReader(r), W::FloatColumnWriter(w)) => copy_records(r, w, selected, levels),
        (R::DoubleColumnReader(r), W::DoubleColumnWriter(w)) => {
            copy_records(r, w, selected, levels)
        }
        (R::ByteArrayColumnReader(r), W::ByteArrayColumnWriter(w)) => {
            copy_records(r, w, selected, levels)
        }
        (R::FixedLenByteArrayColumnReader(r), W::FixedLenByteArrayColumnWriter(w)) => {
            copy_records(r, w, selected, levels)
        }
        _ => Err(ParquetError::General(
            "a column's reader and writer differ in type".into(),
        )),
    }
}

/// [`copy_column`] for a column of type `T`: its records read a batch at a time, each
/// record's levels (a record starts at repetition level 0) and values (one for each
/// level at the maximum definition level) written once for each time it is selected.
fn copy_records<T: DataType>(
    mut from: ColumnReaderImpl<T>,
    to: &mut ColumnWriterImpl<'_, T>,
    selected: &[usize],
    (max_def, max_rep): (i16, i16),
) -> Result<(), ParquetError> {
    let (mut values, mut defs, mut reps) = (Vec::new(), Vec::new(), Vec::new());
    let (mut out_values, mut out_defs, mut out_reps) = (Vec::new(), Vec::new(), Vec::new());
    let mut wanted = selected.iter().copied().peekable();
    let mut record = 0usize;
    while wanted.peek().is_some() {
        values.clear();
        defs.clear();
        reps.clear();
        let (records, _, levels) = from.read_records(
            BATCH,
            (max_def > 0).then_some(&mut defs),
            (max_rep > 0).then_some(&mut reps),
            &mut values,
        )?;
        if records == 0 {
            return Err(ParquetError::General(format!(
                "a column ends at record {record}, before the rows to copy"
            )));
        }
        let valued = |level: usize| max_def == 0 || defs[level] == max_def;
        let (mut level, mut value) = (0, 0);
        for _ in 0..records {
            let (first_level, first_value) = (level, value);
            loop {
                value += usize::from(valued(level));
                level += 1;
                if level == levels || max_rep == 0 || reps[level] == 0 {
                    break;
                }
            }
            let mut times = 0;
            while wanted.next_if_eq(&record).is_some() {
                times += 1;
            }
            for time in 1..=times {
                // The record's values moved out the last time (a byte array's are
                // shared buffers, whose clone and drop cost more than the copy).
                let record_values = &mut values[first_value..value];
                match time == times {
                    true => out_values.extend(record_values.iter_mut().map(std::mem::take)),
                    false => out_values.extend_from_slice(record_values),
                }
                if max_def > 0 {
                    out_defs.extend_from_slice(&defs[first_level..level]);
                }
                if max_rep > 0 {
                    out_reps.extend_from_slice(&reps[first_level..level]);
                }
            }
            record += 1;
        }
        to.write_batch(
            &out_values,
            (max_def > 0).then_some(&out_defs[..]),
            (max_rep > 0).then_some(&out_reps[..]),
        )?;
        out_values.clear();
        out_defs.clear();
        out_reps.clear();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::data_type::{Int32Type, Int64Type};
    use parquet::file::reader::SerializedFileReader;
    use parquet::schema::parser::parse_message_type;

    /// A file of five rows in row groups of three and two: a required column, a list of
    /// optional strings (empty, null, holding a null) and an optional integer.
    fn nested_file(path: &std::path::Path) {
        let schema = "message t { required int64 id; optional group tags (LIST) { repeated group \
                      list { optional binary element (STRING); } } optional int32 n; }";
        let schema = Arc::new(parse_message_type(schema).unwrap());
        let file = std::fs::File::create(path).unwrap();
        let properties = Arc::new(WriterProperties::builder().build());
        let mut writer = SerializedFileWriter::new(file, schema, properties).unwrap();
        // Each row group: ids; the list's values, definition and repetition levels; n's
        // values and definition levels.
        type Group<'a> = (
            &'a [i64],
            &'a [&'a str],
            &'a [i16],
            &'a [i16],
            &'a [i32],
            &'a [i16],
        );
        let groups: [Group; 2] = [
            (
                &[0, 1, 2],
                &["a", "b"],
                &[3, 3, 1, 0],
                &[0, 1, 0, 0],
                &[1, 3],
                &[1, 0, 1],
            ),
            (&[3, 4], &["c", "d"], &[2, 3, 3], &[0, 1, 0], &[5], &[0, 1]),
        ];
        for (ids, tags, tag_defs, tag_reps, ns, n_defs) in groups {
            let mut rows = writer.next_row_group().unwrap();
            let mut column = rows.next_column().unwrap().unwrap();
            (column.typed::<Int64Type>().write_batch(ids, None, None)).unwrap();
            column.close().unwrap();
            let mut column = rows.next_column().unwrap().unwrap();
            let tags: Vec<ByteArray> = tags.iter().map(|&t| ByteArray::from(t)).collect();
            (column.typed::<ByteArrayType>())
                .write_batch(&tags, Some(tag_defs), Some(tag_reps))
                .unwrap();
            column.close().unwrap();
            let mut column = rows.next_column().unwrap().unwrap();
            (column
                .typed::<Int32Type>()
                .write_batch(ns, Some(n_defs), None))
            .unwrap();
            column.close().unwrap();
            rows.close().unwrap();
        }
        writer.close().unwrap();
    }

    /// Rows selected across row groups, one twice, are copied with their nesting and
    /// nulls; `matched` and the peer's column are added (null where unmatched); a row
    /// before one already taken is refused. Alike with the columns encoded on one thread
    /// and on two.
    #[test]
    fn rows_are_copied_with_their_nesting_and_repeats() {
        for threads in [1, 2] {
            copied_on(threads);
        }
    }

    fn copied_on(threads: usize) {
        let dir = tempfile::tempdir().unwrap();
        let (input, output) = (
            dir.path().join("in.parquet"),
            dir.path().join("out.parquet"),
        );
        nested_file(&input);
        let file = ParquetFile::open(&input).unwrap();
        let columns = [("p".to_string(), 16)];
        let mut table = ParquetOutput::new(&file, true, &columns, threads).unwrap();
        let mut out = Vec::new();
        for (position, matched, values) in [
            (0, true, &[&b"x"[..]][..]),
            (0, true, &[b"y"]),
            (2, false, &[]),
            (3, true, &[b""]),
            (4, false, &[]),
        ] {
            let row = RowBatch::Joined {
                position,
                matched,
                values,
            };
            table.add(&mut out, row).unwrap();
        }
        let late = RowBatch::Joined {
            position: 1,
            matched: false,
            values: &[],
        };
        assert!(table.add(&mut out, late).is_err(), "rows come in order");
        table.finish(&mut out).unwrap();
        std::fs::write(&output, &out).unwrap();
        let reader = SerializedFileReader::new(std::fs::File::open(&output).unwrap()).unwrap();
        assert_eq!(reader.num_row_groups(), 2);
        let rows: Vec<String> = (reader.get_row_iter(None).unwrap())
            .map(|r| r.unwrap().to_string())
            .collect();
        assert_eq!(
            rows,
            [
                "{id: 0, tags: [\"a\", \"b\"], n: 1, matched: true, p: \"x\"}",
                "{id: 0, tags: [\"a\", \"b\"], n: 1, matched: true, p: \"y\"}",
                "{id: 2, tags: null, n: 3, matched: false, p: null}",
                "{id: 3, tags: [null, \"c\"], n: null, matched: true, p: \"\"}",
                "{id: 4, tags: [\"d\"], n: 5, matched: false, p: null}",
            ]
        );
        let taken = ParquetOutput::new(&file, false, &[("n".into(), 16)], 1);
        assert!(taken.is_err(), "an added column's name is taken");
    }
}
