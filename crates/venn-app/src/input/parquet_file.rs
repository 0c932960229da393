//! A Parquet input: its keys, values and revealed columns read by name, row group by row
//! group and a batch of rows at a time, each cell as the text a CSV export holds
//! (the `cells` module), so that the keys are taken exactly as from that CSV file (trimmed,
//! lower-cased, several columns joined, empty ones refused or skipped alike). Only the
//! columns named are read; the matched rows are handed back by position, after the file
//! itself (`RowBatch::Table`), for an output that copies them from it
//! ([`super::parquet_input`]).

use super::builder::{Builder, Values};
use super::cells::{CellReader, TextForm, Texts};
use super::footprint::Footprint;
use super::segments::Segment;
use super::{Input, KeyOptions};
use parquet::basic::{Encoding, Repetition};
use parquet::file::reader::{FileReader, SerializedFileReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use venn::{Error, Result};

/// Rows read from each column at a time, and positions handed on in a batch.
pub(super) const BATCH: usize = 1 << 13;

/// DELTA_BYTE_ARRAY values counted a call ([`ParquetFile::value_bytes`]).
const DELTA_VALUES: usize = 64;

/// An open Parquet file: its footer read (schema, row groups), its pages read as asked.
/// A clone reads the same open file, and so may a reader on another thread.
#[derive(Clone)]
pub struct ParquetFile {
    path: PathBuf,
    reader: Arc<SerializedFileReader<AtOffsets>>,
}

/// A file read at offsets (`pread`), never moving a shared position: the `parquet`
/// crate reads a `File` through clones that share one, so two threads reading column
/// chunks at once (a Parquet output's columns, copied on the run's threads) would each
/// seek the other's reads away.
pub struct AtOffsets {
    file: Arc<std::fs::File>,
    len: u64,
}

/// An [`AtOffsets`] file read on from `at`.
pub struct FromOffset {
    file: Arc<std::fs::File>,
    at: u64,
}

impl std::io::Read for FromOffset {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let read = self.file.read_at(buf, self.at)?;
        self.at += read as u64;
        Ok(read)
    }
}

impl parquet::file::reader::Length for AtOffsets {
    fn len(&self) -> u64 {
        self.len
    }
}

impl parquet::file::reader::ChunkReader for AtOffsets {
    type T = std::io::BufReader<FromOffset>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(std::io::BufReader::new(FromOffset {
            file: self.file.clone(),
            at: start,
        }))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        use std::io::Read;
        let past = start
            .checked_add(length as u64)
            .filter(|&end| end <= self.len);
        if past.is_none() {
            return Err(parquet::errors::ParquetError::EOF(format!(
                "{length} bytes at {start} are past the file's {} bytes",
                self.len
            )));
        }
        // Read into spare capacity rather than over zeros first: every page goes by here.
        let mut buffer = Vec::with_capacity(length);
        let mut from = FromOffset {
            file: self.file.clone(),
            at: start,
        };
        (&mut from).take(length as u64).read_to_end(&mut buffer)?;
        if buffer.len() != length {
            return Err(parquet::errors::ParquetError::EOF(format!(
                "{length} bytes at {start}, {} read",
                buffer.len()
            )));
        }
        Ok(buffer.into())
    }
}

impl std::fmt::Debug for ParquetFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetFile")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl ParquetFile {
    /// Opens `path` and reads its footer; a file that is not Parquet, or whose footer
    /// does not parse, is refused.
    pub fn open(path: &Path) -> Result<ParquetFile> {
        let file = std::fs::File::open(path).map_err(Error::file("open input", path))?;
        let len = (file.metadata().map_err(Error::file("open input", path))?).len();
        let file = AtOffsets {
            file: Arc::new(file),
            len,
        };
        let reader = SerializedFileReader::new(file).map_err(|e| malformed(path, e))?;
        Ok(ParquetFile {
            path: path.to_path_buf(),
            reader: Arc::new(reader),
        })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its reader: the footer, and the row groups' pages.
    pub fn reader(&self) -> &SerializedFileReader<AtOffsets> {
        &self.reader
    }

    /// How many rows its footer says it holds.
    pub fn rows(&self) -> u64 {
        self.reader.metadata().file_metadata().num_rows().max(0) as u64
    }

    /// The names of its top-level columns, as a list for a message.
    fn names(&self) -> String {
        let root = self.reader.metadata().file_metadata().schema_descr();
        (root.root_schema().get_fields().iter())
            .map(|f| f.name().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Refuses an output of this file's rows that adds columns named as one it has, or
    /// as each other: a `matched` column (if `matched`, a `left` join's) and the peer's
    /// `columns`.
    pub fn check_added<'a>(
        &self,
        matched: bool,
        columns: impl IntoIterator<Item = &'a str>,
    ) -> Result<()> {
        let root = self.reader.metadata().file_metadata().schema_descr();
        let mut names: Vec<&str> = (root.root_schema().get_fields().iter())
            .map(|f| f.name())
            .collect();
        let flag = matched.then_some(crate::columns::MATCHED_COLUMN);
        for name in flag.into_iter().chain(columns) {
            if names.contains(&name) {
                return Err(Error::Usage(format!(
                    "the output of '{}' would have two columns named '{name}' (the input's \
                     columns, `matched` for --join left, and --peer-columns)",
                    self.path.display()
                )));
            }
            names.push(name);
        }
        Ok(())
    }

    /// The leaf index and text form of the top-level column `name`, which must hold one
    /// value a row (not a list, map or struct) of a type with one text form.
    fn column(&self, name: &str) -> Result<(usize, TextForm)> {
        let schema = self.reader.metadata().file_metadata().schema_descr();
        let Some(field) = (schema.root_schema().get_fields().iter()).find(|f| f.name() == name)
        else {
            return Err(Error::Usage(format!(
                "'{}' has no column named '{name}' (columns: {})",
                self.path.display(),
                self.names()
            )));
        };
        let nested = !field.is_primitive()
            || (field.get_basic_info().has_repetition()
                && field.get_basic_info().repetition() == Repetition::REPEATED);
        if nested {
            return Err(Error::Usage(format!(
                "the column '{name}' of '{}' is nested (a list, map or struct): a key, value \
                 or revealed column holds one value a row",
                self.path.display()
            )));
        }
        let leaf = (schema.columns().iter())
            .position(|c| c.path().parts() == [name])
            .expect("a primitive top-level field is a leaf column");
        let form = TextForm::of(&schema.column(leaf)).map_err(|why| {
            Error::Usage(format!(
                "the column '{name}' of '{}' is {why}",
                self.path.display()
            ))
        })?;
        Ok((leaf, form))
    }

    /// The bytes the text of `leaves`' cells takes, from the footer: a bounded type's
    /// widest text for each row, a byte array's unencoded size where the writer recorded
    /// it (its pages' uncompressed size where not: a plain value is its bytes and a length
    /// there, a dictionary-encoded one a few bits, a shared prefix its length, which
    /// [`Self::hidden_text`] adds for).
    fn text_bytes(&self, leaves: &[(usize, TextForm)]) -> u64 {
        let meta = self.reader.metadata();
        let schema = meta.file_metadata().schema_descr();
        let rows = self.rows();
        let mut total = 0u64;
        for &(leaf, form) in leaves {
            total = total.saturating_add(match form.widest(&schema.column(leaf)) {
                Some(width) => width.saturating_mul(rows),
                None => (meta.row_groups().iter())
                    .map(|g| {
                        let chunk = g.column(leaf);
                        (chunk.unencoded_byte_array_data_bytes())
                            .unwrap_or(chunk.uncompressed_size())
                            .max(0) as u64
                    })
                    .fold(0u64, u64::saturating_add),
            });
        }
        total
    }

    /// What the text of `leaves`' byte arrays may take beyond [`Self::text_bytes`], for
    /// each column chunk with no unencoded size recorded: encoded as DELTA_BYTE_ARRAY
    /// (each value a suffix of the one before, a shared prefix stored as its length), its
    /// values' bytes, read and counted; else, if its first page is a dictionary (whatever
    /// the footer says of one), its rows times the dictionary's longest value. With
    /// `text_bytes`, an upper bound on the text however the writer encoded it, as long as
    /// the footer names DELTA_BYTE_ARRAY where the pages use it. A file whose pages do not
    /// read is refused.
    fn hidden_text(&self, leaves: &[(usize, TextForm)]) -> Result<u64> {
        let meta = self.reader.metadata();
        let schema = meta.file_metadata().schema_descr();
        let mut total = 0u64;
        for &(leaf, form) in leaves {
            if form.widest(&schema.column(leaf)).is_some() {
                continue;
            }
            for (g, group) in meta.row_groups().iter().enumerate() {
                let chunk = group.column(leaf);
                if chunk.unencoded_byte_array_data_bytes().is_some() {
                    continue;
                }
                let hidden = match chunk.encodings().any(|e| e == Encoding::DELTA_BYTE_ARRAY) {
                    true => self.value_bytes(g, leaf)?,
                    false => {
                        let longest = self.longest_in_dictionary(g, leaf)?.unwrap_or(0);
                        longest.saturating_mul(group.num_rows().max(0) as u64)
                    }
                };
                total = total.saturating_add(hidden);
            }
        }
        Ok(total)
    }

    /// The bytes of the values of row group `g`'s column chunk of `leaf` (a byte array
    /// column), read [`DELTA_VALUES`] at a time: the parquet crate makes each
    /// DELTA_BYTE_ARRAY value whole, up to a page's bytes from a prefix length each, so
    /// a call's values are bounded by that many pages, not by a batch of rows.
    fn value_bytes(&self, g: usize, leaf: usize) -> Result<u64> {
        use parquet::column::reader::ColumnReader;
        let (path, group) = (&self.path, self.row_group(g)?);
        let optional = (group.metadata().schema_descr().column(leaf)).max_def_level() > 0;
        let ColumnReader::ByteArrayColumnReader(mut reader) = group
            .get_column_reader(leaf)
            .map_err(|e| malformed(path, e))?
        else {
            return Err(unreadable(
                path,
                "a byte array column of another type".into(),
            ));
        };
        let (mut values, mut levels, mut total) = (Vec::new(), Vec::new(), 0u64);
        loop {
            values.clear();
            levels.clear();
            let levels = optional.then_some(&mut levels);
            let (rows, _, _) = (reader.read_records(DELTA_VALUES, levels, None, &mut values))
                .map_err(|e| malformed(path, e))?;
            if rows == 0 {
                return Ok(total);
            }
            total = values
                .iter()
                .fold(total, |t, v| t.saturating_add(v.len() as u64));
        }
    }

    /// An upper bound on the bytes the text of `leaves`' cells takes: what decides
    /// whether a file is read whole, and how many rows a segment holds.
    fn text_bound(&self, leaves: &[(usize, TextForm)]) -> Result<u64> {
        Ok(self
            .text_bytes(leaves)
            .saturating_add(self.hidden_text(leaves)?))
    }

    /// Its row group `g`'s reader.
    fn row_group(&self, g: usize) -> Result<Box<dyn parquet::file::reader::RowGroupReader + '_>> {
        (self.reader.get_row_group(g)).map_err(|e| malformed(&self.path, e))
    }

    /// The longest value in the dictionary of row group `g`'s column chunk of `leaf` (a
    /// byte array column), if its first page is a dictionary: read, it holds each value
    /// after its 4-byte length.
    fn longest_in_dictionary(&self, g: usize, leaf: usize) -> Result<Option<u64>> {
        use parquet::column::page::Page;
        let (path, group) = (&self.path, self.row_group(g)?);
        let mut pages = (group.get_column_page_reader(leaf)).map_err(|e| malformed(path, e))?;
        let Some(Page::DictionaryPage {
            buf, num_values, ..
        }) = pages.get_next_page().map_err(|e| malformed(path, e))?
        else {
            return Ok(None);
        };
        let (mut at, mut longest) = (0usize, 0u64);
        for _ in 0..num_values {
            let len = (buf.get(at..at + 4))
                .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
                .filter(|&len| len <= buf.len() - at - 4)
                .ok_or_else(|| unreadable(path, "a dictionary value past its page".into()))?;
            longest = longest.max(len as u64);
            at += 4 + len;
        }
        Ok(Some(longest))
    }
}

/// A Parquet file that does not read, for `why`.
fn unreadable(path: &Path, why: String) -> Error {
    Error::file("read Parquet input", path)(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        why,
    ))
}

/// A file refused as Parquet: its footer or pages do not parse.
fn malformed(path: &Path, e: parquet::errors::ParquetError) -> Error {
    unreadable(path, e.to_string())
}

/// Where a Parquet input's key, value and revealed columns are (leaf indices).
struct Named {
    keys: Vec<usize>,
    values: Vec<usize>,
    reveals: Vec<usize>,
    /// Each column read, once, with its text form.
    read: Vec<(usize, TextForm)>,
}

impl Named {
    /// The columns `opts` names in `file` (the key: the first column unless named),
    /// checked as a CSV header's are.
    fn find(file: &ParquetFile, opts: &KeyOptions) -> Result<Named> {
        let mut read: Vec<(usize, TextForm)> = Vec::new();
        let mut find = |name: &str| -> Result<usize> {
            let (leaf, form) = file.column(name)?;
            if !read.iter().any(|&(l, _)| l == leaf) {
                read.push((leaf, form));
            }
            Ok(leaf)
        };
        let keys = match opts.columns.is_empty() {
            true => {
                let schema = file.reader.metadata().file_metadata().schema_descr();
                let first = (schema.root_schema().get_fields().first())
                    .map(|f| f.name().to_string())
                    .ok_or_else(|| {
                        Error::Usage(format!("'{}' has no columns", file.path.display()))
                    })?;
                vec![find(&first)?]
            }
            false => (opts.columns.iter())
                .map(|c| find(c))
                .collect::<Result<_>>()?,
        };
        let values: Vec<usize> = (opts.value_columns.iter())
            .map(|c| find(c))
            .collect::<Result<_>>()?;
        super::check_value_columns(&keys, &values, &opts.value_columns)?;
        let reveals = (opts.reveal_columns.iter())
            .map(|c| find(&c.name))
            .collect::<Result<_>>()?;
        Ok(Named {
            keys,
            values,
            reveals,
            read,
        })
    }

    /// Where the column `leaf` is among those read.
    fn slot(&self, leaf: usize) -> usize {
        (self.read.iter())
            .position(|&(l, _)| l == leaf)
            .expect("every named column is read")
    }
}

/// What reading a Parquet file whole takes in memory, from its footer: its rows, and the
/// text of the columns `opts` reads in place of a text file's bytes.
pub fn footprint(path: &Path, opts: &KeyOptions) -> Result<Footprint> {
    let file = ParquetFile::open(path)?;
    let named = Named::find(&file, opts)?;
    let size = std::fs::metadata(path)
        .map_err(Error::file("open input", path))?
        .len();
    Ok(Footprint {
        size,
        ..Footprint::of(file.text_bound(&named.read)?, file.rows(), opts)
    })
}

/// Reads the columns `opts` names from `file`, row group by row group and a batch of
/// rows at a time, handing `each` the rows read as an [`Input`] (each row's span the empty
/// range at its position in the file) every `per` rows of the file and at its end (once,
/// for a file of no rows), with the number of rows kept before them.
pub(super) fn read_segments(
    file: &ParquetFile,
    opts: &KeyOptions,
    per: u64,
    mut each: impl FnMut(Input, u64) -> Result<()>,
) -> Result<()> {
    let path = file.path();
    let named = Named::find(file, opts)?;
    let rows = file.rows();
    // Room for a segment's rows and their text (the footprint, checked before, bounds
    // what the footer may claim); no more rows than a run reads at once.
    let expected = rows.min(per).min(u32::MAX as u64);
    let text = file.text_bytes(&named.read) / rows.max(1) * expected;
    let room = text.saturating_add(super::footprint::length_prefixes(opts, expected));
    let builder = || Builder::new(opts, expected as usize, room as usize);
    let at_row = |row: usize, why: String| unreadable(path, format!("row {}: {why}", row + 1));
    let mut texts: Vec<Texts> = named.read.iter().map(|_| Texts::default()).collect();
    let (mut b, mut in_segment, mut kept_before) = (builder(), 0u64, 0u64);
    let mut position = 0usize;
    let schema = file.reader.metadata().file_metadata().schema_descr();
    for g in 0..file.reader.num_row_groups() {
        let group = file.row_group(g)?;
        let mut readers = (named.read.iter())
            .map(|&(leaf, form)| {
                let optional = schema.column(leaf).max_def_level() > 0;
                let reader = group
                    .get_column_reader(leaf)
                    .map_err(|e| malformed(path, e))?;
                CellReader::new(reader, form, optional).map_err(|why| at_row(position, why))
            })
            .collect::<Result<Vec<_>>>()?;
        let in_group = group.metadata().num_rows().max(0) as u64;
        let mut read = 0;
        while read < in_group {
            let want = (BATCH as u64).min(in_group - read).min(per - in_segment) as usize;
            for (reader, out) in readers.iter_mut().zip(&mut texts) {
                let got = reader
                    .read(want, out)
                    .map_err(|why| at_row(position, why))?;
                if got != want {
                    return Err(at_row(
                        position + got,
                        format!("its row group holds {in_group} rows, but a column ends here"),
                    ));
                }
            }
            let (mut key, mut values, mut revealed) = (Vec::new(), Vec::new(), Vec::new());
            for i in 0..want {
                let cell = |leaf: &usize| texts[named.slot(*leaf)].get(i);
                key.clear();
                key.extend(named.keys.iter().map(cell));
                values.clear();
                values.extend(named.values.iter().map(cell));
                revealed.clear();
                revealed.extend(named.reveals.iter().map(cell));
                let line = position as u64 + 1;
                (b.add_fields(
                    line,
                    &key,
                    Values::Fields(&values),
                    &revealed,
                    position..position,
                ))
                .map_err(|e| match e {
                    Error::Input { reason, .. } => at_row(position, reason),
                    e => e,
                })?;
                position += 1;
            }
            (read, in_segment) = (read + want as u64, in_segment + want as u64);
            if in_segment == per {
                let input = std::mem::replace(&mut b, builder()).finish(Vec::new(), None)?;
                let kept = input.rows.len() as u64;
                each(input, kept_before)?;
                (in_segment, kept_before) = (0, kept_before + kept);
            }
        }
    }
    if in_segment > 0 || position == 0 {
        each(b.finish(Vec::new(), None)?, kept_before)?;
    }
    Ok(())
}

/// Reads the Parquet file at `path` in segments of rows whose text takes about `size`
/// bytes (at least two bytes a row, as [`crate::buckets::segment_bytes`] counts), and
/// calls `f` on each, in file order: a file too large for memory, split into buckets.
pub fn for_each_segment(
    path: &Path,
    opts: &KeyOptions,
    size: usize,
    mut f: impl FnMut(Segment) -> Result<()>,
) -> Result<()> {
    let file = ParquetFile::open(path)?;
    let named = Named::find(&file, opts)?;
    let per_row = (file.text_bound(&named.read)? / file.rows().max(1)).max(2);
    let per = (size as u64 / per_row).max(1);
    read_segments(&file, opts, per, |input, rows_before| {
        f(Segment {
            input: &input,
            rows_before,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Format;
    use parquet::data_type::{ByteArray, ByteArrayType};
    use parquet::file::properties::{EnabledStatistics, WriterProperties};
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;

    /// A column of 20,000 values of 200 bytes and more whose pages hold far fewer bytes —
    /// two values repeated, dictionary-encoded (a few bits a row), or values sharing a
    /// long prefix, DELTA_BYTE_ARRAY-encoded (its length a row) — is counted at its
    /// text's size: its footprint holds every row's value. Written without statistics,
    /// so with no unencoded size recorded, as pyarrow writes files.
    #[test]
    fn text_hidden_by_its_encoding_is_counted_in_full() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.parquet");
        let prefix = "p".repeat(200);
        // Two values repeated (dictionary-encoded), or values sharing a long prefix.
        let value = |encoding: Option<Encoding>, i: usize| match encoding {
            None => ["a", "b"][i % 2].repeat(200),
            Some(_) => format!("{prefix}{i}"),
        };
        for encoding in [None, Some(Encoding::DELTA_BYTE_ARRAY)] {
            let schema = "message t { required binary s (STRING); }";
            let schema = Arc::new(parse_message_type(schema).unwrap());
            let mut properties =
                WriterProperties::builder().set_statistics_enabled(EnabledStatistics::None);
            if let Some(encoding) = encoding {
                properties = (properties.set_dictionary_enabled(false)).set_encoding(encoding);
            }
            let file = std::fs::File::create(&path).unwrap();
            let properties = Arc::new(properties.build());
            let mut writer = SerializedFileWriter::new(file, schema, properties).unwrap();
            let values: Vec<ByteArray> = (0..20_000)
                .map(|i| ByteArray::from(value(encoding, i).as_str()))
                .collect();
            let mut rows = writer.next_row_group().unwrap();
            let mut column = rows.next_column().unwrap().unwrap();
            (column
                .typed::<ByteArrayType>()
                .write_batch(&values, None, None))
            .unwrap();
            column.close().unwrap();
            rows.close().unwrap();
            writer.close().unwrap();
            let opts = KeyOptions {
                format: Format::Parquet,
                columns: vec!["s".into()],
                ..KeyOptions::default()
            };
            let text = 20_000 * 200;
            let read = ParquetFile::open(&path).unwrap();
            let leaves = Named::find(&read, &opts).unwrap().read;
            assert!(
                read.text_bytes(&leaves) < text / 4,
                "{encoding:?}: the pages hide it"
            );
            assert!(
                footprint(&path, &opts).unwrap().key_bytes >= text,
                "{encoding:?}"
            );
        }
    }
}
