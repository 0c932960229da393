//! Reading a party's input file: CSV with a header row (default; its fields separated by
//! commas, or by another [`KeyOptions::delimiter`]) or plain lines; keys are
//! normalised only when asked, empty keys are refused unless skipped, and duplicate keys
//! are run once while all their rows are kept for the output. A CSV file may give each
//! row a value (`--value-column`, for a sum over the intersection): the values of a
//! repeated key's rows are added.
//!
//! At disk speed: the file is read into one buffer and rows are byte ranges in it (its
//! [`source::InputSource`] hands the matched ones back as they are, nothing copied). A CSV body without any quote character is split by
//! hand; one with quotes goes through the `csv` crate, which handles quoting and embedded
//! line breaks. Duplicates are found with a table of key indices under a fast hash that is
//! keyed afresh each run (so a crafted file cannot make it slow).

use crate::columns::{Layout, Revealed};
use std::io::Read;
use std::ops::Range;
use std::path::Path;
use venn::session::run_plan::KeyForm;
use venn::util::memory::advise_huge_pages;
use venn::{Error, Items, Result};

mod builder;
mod cells;
mod csv_file;
pub mod footprint;
pub mod fuzz;
pub mod memory;
pub mod parquet_file;
pub mod parquet_input;
mod scan;
pub mod segments;
pub mod source;

use builder::{Builder, Values};
use csv_file::{csv_header, csv_plain_body, csv_quoted_body, line_breaks, uses_fast_path};
use source::{InputSource, RowBatch, RowCounts};

/// Input file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Format {
    /// CSV with a header row.
    Csv,
    /// One key per line.
    Lines,
    /// A Parquet file: its columns by name ([`parquet_file`]).
    Parquet,
}

impl Format {
    /// The format of an input `--format` does not name: Parquet for a file named
    /// `*.parquet` (in any case), CSV otherwise.
    pub fn of_path(path: &Path) -> Format {
        match path.extension() {
            Some(e) if e.eq_ignore_ascii_case("parquet") => Format::Parquet,
            _ => Format::Csv,
        }
    }
}

/// How keys are taken from the input.
#[derive(Clone, Debug)]
pub struct KeyOptions {
    /// `--format`: CSV or a key a line.
    pub format: Format,
    /// CSV columns making up the key (default: the first column). With several, the key
    /// is their values together, each prefixed by its length; with `match_any`, they are
    /// the identifiers a record matches on, any one of them.
    pub columns: Vec<String>,
    /// `--match-any`: a record matches when any one of its `columns` (its identifiers)
    /// equals the same identifier of a peer's record. Each non-empty identifier is an item
    /// of its own, prefixed by its number in `columns` (so that an e-mail never matches a
    /// phone number); a record whose identifiers are all empty has an empty key.
    pub match_any: bool,
    /// `--trim`: white space around a key is dropped.
    pub trim: bool,
    /// `--lowercase`: keys are lower-cased before they are compared.
    pub lowercase: bool,
    /// `--skip-empty`: a row with an empty key is skipped instead of failing the run.
    pub skip_empty: bool,
    /// The CSV columns holding each row's values (none: the rows carry no values).
    pub value_columns: Vec<String>,
    /// The byte between CSV fields ([`parse_delimiter`]): a comma, or what spreadsheets
    /// save where the comma is the decimal mark (a semicolon), a tab or a bar. Rows are
    /// output as they are, so the output keeps it.
    pub delimiter: u8,
    /// `--reveal-columns`: the CSV columns whose values go to the peer with each matched
    /// key (each row's, where a key has several).
    pub reveal_columns: Vec<Revealed>,
}

/// The field separators a CSV input may have, as `--delimiter` and Python's `delimiter=`
/// name them: a comma, a semicolon, a bar, or a tab (`tab`, `\t` as typed, or the
/// character itself). Others are refused: a quote or a line break cannot separate fields,
/// and a letter or digit would split keys.
pub fn parse_delimiter(text: &str) -> Result<u8> {
    match text {
        "," => Ok(b','),
        ";" => Ok(b';'),
        "|" => Ok(b'|'),
        "tab" | "\\t" | "\t" => Ok(b'\t'),
        _ => Err(Error::Usage(format!(
            "the delimiter is one of , ; | and tab (or \\t), not '{}'",
            text.escape_debug()
        ))),
    }
}

/// How the user names `delimiter` (`--delimiter`'s value).
fn delimiter_name(delimiter: u8) -> String {
    match delimiter {
        b'\t' => "tab".into(),
        d => format!("'{}'", d as char),
    }
}

impl Default for KeyOptions {
    /// The command line's: CSV, the key in the first column, fields between commas, the
    /// keys compared as they are, no values.
    fn default() -> Self {
        KeyOptions {
            format: Format::Csv,
            columns: Vec::new(),
            trim: false,
            lowercase: false,
            skip_empty: false,
            value_columns: Vec::new(),
            delimiter: b',',
            reveal_columns: Vec::new(),
            match_any: false,
        }
    }
}

impl KeyOptions {
    /// What these options do to a key's bytes ([`KeyForm`]): one column unless several
    /// are named (a file of lines, or keys given in memory, have one).
    pub fn form(&self) -> KeyForm {
        KeyForm {
            trim: self.trim,
            lowercase: self.lowercase,
            columns: self.columns.len().clamp(1, u16::MAX as usize) as u16,
            any: self.match_any,
        }
    }
}

/// The most identifiers `--match-any` names: each makes an item of every record that has
/// it, so the sets grow with them.
pub const MAX_IDENTIFIERS: usize = 16;

/// The largest value a row may carry: with fewer than 2^32 rows their sum stays below
/// 2^64, where a sum over the intersection is taken.
pub const MAX_VALUE: u64 = u32::MAX as u64;

/// A kept row: the index of its key among `Input::keys`, and its bytes in the file (line
/// ending included, if it had one). With `--match-any`, a record has a row for each of
/// its non-empty identifiers, one after the other, with the same bytes ([`records`]).
#[derive(Clone, Debug)]
pub struct Row {
    /// The index of its key in `Input::keys`.
    pub key: u32,
    /// Which identifier of `--match-any` its key is (its number in the columns named; 0
    /// without `--match-any`).
    pub identifier: u16,
    /// Its bytes in the file, the line ending included (the empty range at its position
    /// for keys in memory and a Parquet file's rows).
    pub bytes: Range<usize>,
}

/// `rows` record by record: each record's rows (one, or with `--match-any` one for each
/// of its non-empty identifiers), which share their bytes.
pub fn records(rows: &[Row]) -> impl Iterator<Item = &[Row]> {
    rows.chunk_by(|a, b| a.bytes.start == b.bytes.start)
}

/// Whether any of a record's `rows` has a key `member` flags.
pub fn any_member(rows: &[Row], member: &[bool]) -> bool {
    rows.iter().any(|r| member[r.key as usize])
}

/// A parsed input file.
pub struct Input {
    /// The file, without a leading byte-order mark.
    data: Vec<u8>,
    /// The CSV header row's bytes, if any.
    pub header: Option<Range<usize>>,
    /// Every kept row, in file order.
    pub rows: Vec<Row>,
    /// The distinct keys, in order of first appearance.
    pub keys: Items,
    /// Rows whose key had already appeared.
    pub duplicates: usize,
    /// Rows skipped for an empty key.
    pub skipped_empty: usize,
    /// How the keys were taken: what the run plan tells the peer.
    pub form: KeyForm,
    /// The records of the revealed columns, if any: each key carries its first row's, its
    /// later rows' are set aside beside them ([`Items::repeated_records`]).
    pub layout: Option<Layout>,
}

impl Input {
    /// The bytes of a row or the header, as they are in the file.
    pub fn bytes(&self, range: &Range<usize>) -> &[u8] {
        &self.data[range.clone()]
    }

    /// The positions of the records with a key `member` flags, ascending, each with its
    /// first row's key (an index into the keys), where each row's span is the empty
    /// range at its position (keys in memory, a Parquet file's rows).
    pub(crate) fn positions<'a>(
        &'a self,
        member: &'a [bool],
    ) -> impl Iterator<Item = (usize, usize)> + 'a {
        records(&self.rows)
            .filter(|r| any_member(r, member))
            .map(|r| (r[0].bytes.start, r[0].key as usize))
    }

    /// Hands each record to `each` by its rows and its content: its bytes
    /// ([`RowBatch::Text`], `text`) or its position ([`RowBatch::Positions`]); returns
    /// how many.
    pub(crate) fn each_of_records(
        &self,
        text: bool,
        each: &mut dyn FnMut(&[Row], RowBatch) -> std::io::Result<()>,
    ) -> std::io::Result<usize> {
        let mut count = 0;
        for rows in records(&self.rows) {
            let span = &rows[0].bytes;
            match text {
                true => each(rows, RowBatch::Text(self.bytes(span)))?,
                false => each(rows, RowBatch::Positions(&[span.start]))?,
            }
            count += 1;
        }
        Ok(count)
    }

    /// The memory the input holds, in bytes: the room its file's bytes, rows and keys take
    /// (at least what they use), as `--max-memory` counts it while the protocol runs.
    pub fn memory(&self) -> u64 {
        (self.data.capacity() + self.rows.capacity() * std::mem::size_of::<Row>()) as u64
            + self.keys.memory()
    }
}

/// A file read whole (CSV or lines): its rows are byte ranges in its one buffer, handed
/// back as they are, rows that follow each other in the file as one batch.
impl InputSource for Input {
    fn keys(&self) -> &Items {
        &self.keys
    }

    fn form(&self) -> KeyForm {
        self.form
    }

    fn counts(&self) -> RowCounts {
        RowCounts {
            kept: match self.form.any {
                true => records(&self.rows).count() as u64,
                false => self.rows.len() as u64,
            },
            duplicates: self.duplicates as u64,
            skipped_empty: self.skipped_empty as u64,
        }
    }

    fn memory(&self) -> u64 {
        Input::memory(self)
    }

    fn matched_rows(
        &self,
        member: &[bool],
        each: &mut dyn FnMut(RowBatch) -> std::io::Result<()>,
    ) -> std::io::Result<usize> {
        if let Some(header) = &self.header {
            each(RowBatch::Header(self.bytes(header)))?;
        }
        let mut count = 0;
        let mut run = 0..0;
        for row in records(&self.rows).filter(|r| any_member(r, member)) {
            let row = &row[0];
            count += 1;
            if row.bytes.start == run.end && self.bytes(&run).ends_with(b"\n") {
                run.end = row.bytes.end;
                continue;
            }
            if !run.is_empty() {
                each(RowBatch::Text(self.bytes(&run)))?;
            }
            run = row.bytes.clone();
        }
        if !run.is_empty() {
            each(RowBatch::Text(self.bytes(&run)))?;
        }
        Ok(count)
    }

    fn layout(&self) -> Option<&Layout> {
        self.layout.as_ref()
    }

    fn header(&self) -> Option<&[u8]> {
        self.header.as_ref().map(|h| self.bytes(h))
    }

    fn each_record(
        &self,
        each: &mut dyn FnMut(&[Row], RowBatch) -> std::io::Result<()>,
    ) -> std::io::Result<usize> {
        self.each_of_records(true, each)
    }
}

/// Refuses value columns (`values`, where the columns `names` name were found) that are
/// also key columns (`keys`), or named twice: a CSV header's and a Parquet file's alike.
fn check_value_columns(keys: &[usize], values: &[usize], names: &[String]) -> Result<()> {
    for (i, (&v, name)) in values.iter().zip(names).enumerate() {
        if keys.contains(&v) {
            return Err(Error::Usage(format!(
                "the value column '{name}' is also a key column"
            )));
        }
        if values[..i].contains(&v) {
            return Err(Error::Usage(format!(
                "the value column '{name}' is named twice"
            )));
        }
    }
    Ok(())
}

/// A line's content without its line ending.
fn content<'a>(data: &'a [u8], line: &Range<usize>) -> &'a [u8] {
    let l = &data[line.clone()];
    let l = l.strip_suffix(b"\n").unwrap_or(l);
    l.strip_suffix(b"\r").unwrap_or(l)
}

/// Why a Parquet file is not read as text: `venn send` and `venn receive` read it
/// ([`parquet_file`]), other commands do not.
pub(super) fn parquet_elsewhere() -> Error {
    Error::Usage(
        "a Parquet input is read by `venn send` and `venn receive`; here, give a CSV file or \
         one of lines"
            .into(),
    )
}

/// Reads and parses `path` (a text file: CSV or lines).
pub fn read_input(path: &Path, opts: &KeyOptions) -> Result<Input> {
    if opts.format == Format::Parquet {
        return Err(parquet_elsewhere());
    }
    let mut file = std::fs::File::open(path).map_err(Error::file("open input", path))?;
    let len = file
        .metadata()
        .map_err(Error::file("open input", path))?
        .len();
    // Room for the whole file (plus one byte, to see the end), then read in one go; a
    // file too large for memory is an error, not an abort.
    let mut data = Vec::new();
    data.try_reserve_exact(usize::try_from(len).unwrap_or(usize::MAX).saturating_add(1))
        .map_err(|e| Error::file("read input", path)(std::io::Error::other(e)))?;
    advise_huge_pages(&data);
    file.read_to_end(&mut data)
        .map_err(Error::file("read input", path))?;
    parse_input(data, opts)
}

/// Parses a whole input file's bytes.
pub fn parse_input(data: Vec<u8>, opts: &KeyOptions) -> Result<Input> {
    parse_bytes(data, opts, true)
}

/// Parses bytes that are a whole file (`file_start`: a byte-order mark may lead them) or a
/// later part of one (where those bytes belong to a key).
fn parse_bytes(mut data: Vec<u8>, opts: &KeyOptions, file_start: bool) -> Result<Input> {
    // A UTF-8 byte-order mark belongs to neither the header nor the first key.
    if file_start && data.starts_with(b"\xEF\xBB\xBF") {
        data.drain(..3);
    }
    // Rows end at line breaks (a CSV row at a bare `\r` too): room for them all, so that
    // nothing grows past what [`footprint`] counts.
    let expected_rows = line_breaks(&data, 0, data.len()) as usize + 1;
    let key_bytes = data.len() + footprint::length_prefixes(opts, expected_rows as u64) as usize;
    let mut b = Builder::new(opts, expected_rows, key_bytes);
    match opts.format {
        Format::Parquet => Err(parquet_elsewhere()),
        Format::Lines => {
            if !opts.value_columns.is_empty() {
                return Err(Error::Usage(
                    "values (--value-column) are read from a CSV file (--format csv)".into(),
                ));
            }
            if !opts.reveal_columns.is_empty() {
                return Err(Error::Usage(
                    "revealed columns (--reveal-columns) are read from a CSV file (--format \
                     csv)"
                        .into(),
                ));
            }
            if opts.delimiter != b',' {
                return Err(Error::Usage(
                    "a delimiter (--delimiter) separates the fields of a CSV file (--format \
                     csv); a file of lines has one key a line"
                        .into(),
                ));
            }
            // No text file of keys holds a NUL byte: a binary file, or UTF-16 text, whose
            // keys would never match the peer's.
            if let Some(at) = memchr::memchr(0, &data) {
                return Err(Error::Input {
                    line: memchr::memchr_iter(b'\n', &data[..at]).count() as u64 + 1,
                    reason: "a NUL byte: not a text file of keys (a binary file, or UTF-16 \
                             text: save it as UTF-8)"
                        .into(),
                });
            }
            let mut number = 0;
            scan::for_each_line(&data, 0, None, |line, _| {
                number += 1;
                b.add_fields(
                    number,
                    &[content(&data, &line)],
                    Values::Fields(&[]),
                    &[],
                    line,
                )
            })?;
            b.finish(data, None)
        }
        Format::Csv => {
            let h = csv_header(&data, opts)?;
            let body = &data[h.end..];
            if uses_fast_path(body) {
                csv_plain_body(&data, &h, &mut b)?;
            } else {
                csv_quoted_body(&data, &h, &mut b)?;
            }
            b.finish(data, Some(0..h.end))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn opts(format: Format, columns: &[&str]) -> KeyOptions {
        KeyOptions {
            format,
            columns: columns.iter().map(|c| c.to_string()).collect(),
            trim: true,
            lowercase: true,
            ..KeyOptions::default()
        }
    }

    pub(super) fn read(text: &str, o: &KeyOptions) -> Input {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("in");
        std::fs::write(&p, text).unwrap();
        read_input(&p, o).unwrap()
    }

    /// Several value columns, in the order named (quoted or not), a repeated key's rows
    /// added column by column; a column named twice, or a key column, is refused.
    #[test]
    fn value_columns_are_read_in_the_order_named() {
        for text in [
            "k,a,b\nx,1,2\ny,3,4\nx,5,6\n",
            "k,a,b\n\"x\",1,2\ny,3,4\nx,5,\"6\"\n",
        ] {
            let o = KeyOptions {
                value_columns: vec!["b".into(), "a".into()],
                ..opts(Format::Csv, &[])
            };
            let input = read(text, &o);
            assert_eq!(input.keys.value_columns(), 2);
            assert_eq!(input.keys.values().unwrap(), [8, 6, 4, 3], "{text:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("in");
        std::fs::write(&p, "k,a\nx,1\n").unwrap();
        for (columns, refusal) in [(["a", "a"], "named twice"), (["a", "k"], "also a key")] {
            let o = KeyOptions {
                value_columns: columns.map(String::from).to_vec(),
                ..opts(Format::Csv, &[])
            };
            let Err(e) = read_input(&p, &o) else {
                panic!("value columns {columns:?} are refused")
            };
            assert!(e.to_string().contains(refusal), "{e}");
        }
    }

    fn rows(input: &Input) -> Vec<String> {
        input
            .rows
            .iter()
            .map(|r| String::from_utf8_lossy(input.bytes(&r.bytes)).into_owned())
            .collect()
    }

    #[test]
    fn plain_and_quoted_csv_give_the_same_keys_and_keep_row_bytes() {
        let plain = "k,v\r\nA ,1\r\nb,2\r\na,3\r\n\r\nc,4";
        let quoted = "k,v\r\n\"A \",1\r\nb,\"2\"\r\na,3\r\n\r\nc,\"x\ny\"";
        for text in [plain, quoted] {
            let input = read(text, &opts(Format::Csv, &[]));
            let keys: Vec<&[u8]> = (0..input.keys.len()).map(|i| input.keys.get(i)).collect();
            assert_eq!(keys, vec![&b"a"[..], b"b", b"c"], "{text:?}");
            assert_eq!(input.duplicates, 1);
            assert_eq!(
                input.rows.iter().map(|r| r.key).collect::<Vec<_>>(),
                [0, 1, 0, 2]
            );
            assert_eq!(input.bytes(input.header.as_ref().unwrap()), b"k,v\r\n");
        }
        assert_eq!(
            rows(&read(plain, &opts(Format::Csv, &[]))),
            ["A ,1\r\n", "b,2\r\n", "a,3\r\n", "c,4"]
        );
        assert_eq!(
            rows(&read(quoted, &opts(Format::Csv, &[]))),
            ["\"A \",1\r\n", "b,\"2\"\r\n", "a,3\r\n", "c,\"x\ny\""]
        );
    }

    #[test]
    fn several_columns_make_one_key_that_cannot_be_confused() {
        let text = "a,b\nx,yz\nxy,z\nx,yz\n";
        let input = read(text, &opts(Format::Csv, &["a", "b"]));
        assert_eq!(input.keys.len(), 2, "x|yz and xy|z differ");
        assert_eq!(input.duplicates, 1);
        let e = read_input(
            &{
                let d = tempfile::tempdir().unwrap().keep();
                let p = d.join("in");
                std::fs::write(&p, text).unwrap();
                p
            },
            &opts(Format::Csv, &["a", "nope"]),
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("no column named 'nope'"), "{e}");
    }

    #[test]
    fn ragged_rows_are_named_on_both_paths() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("in");
        for text in ["a,b\n1,2\n3\n", "a,b\n\"1\",2\n3\n"] {
            std::fs::write(&p, text).unwrap();
            let e = read_input(&p, &opts(Format::Csv, &[])).err().unwrap();
            assert!(
                e.to_string().contains("line 3") && e.to_string().contains("1 fields"),
                "{text:?}: {e}"
            );
        }
    }

    /// Fields separated by semicolons or tabs split as commas do, on both paths (a quoted
    /// field may hold the delimiter); only the delimiters `--delimiter` names are taken, and
    /// a header of one field holding another delimiter tells how to read it.
    #[test]
    fn other_delimiters_split_fields_on_both_paths() {
        for (delimiter, plain, quoted) in [
            (";", "n;k\n1;A \n2;b\n", "n;k\n\"1;x\";\"A \"\n2;b\n"),
            (
                "tab",
                "n\tk\n1\tA \n2\tb\n",
                "n\tk\n\"1\tx\"\t\"A \"\n2\tb\n",
            ),
        ] {
            let o = KeyOptions {
                delimiter: parse_delimiter(delimiter).unwrap(),
                ..opts(Format::Csv, &["k"])
            };
            for text in [plain, quoted] {
                let input = read(text, &o);
                let keys: Vec<&[u8]> = (0..input.keys.len()).map(|i| input.keys.get(i)).collect();
                assert_eq!(keys, [&b"a"[..], b"b"], "{text:?}");
            }
        }
        assert_eq!(parse_delimiter("\\t").unwrap(), b'\t');
        assert_eq!(parse_delimiter("|").unwrap(), b'|');
        for bad in ["\"", "\n", "a", ";;", ""] {
            assert!(parse_delimiter(bad).is_err(), "{bad:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("in");
        std::fs::write(&p, "n;k\n1;a\n").unwrap();
        let e = read_input(&p, &opts(Format::Csv, &["k"])).err().unwrap();
        assert!(
            e.to_string()
                .ends_with("(columns: n;k); if its fields are separated by ';', pass --delimiter ';' (Python: delimiter=)"),
            "{e}"
        );
        let lines = KeyOptions {
            delimiter: b';',
            ..opts(Format::Lines, &[])
        };
        assert!(read_input(&p, &lines).is_err(), "a delimiter is for CSV");
    }

    #[test]
    fn old_mac_line_endings_split_rows() {
        let input = read("k,v\ra,1\rb,2\r", &opts(Format::Csv, &[]));
        assert_eq!(input.keys.len(), 2, "two rows, not one");
    }

    /// With `--match-any` each non-empty identifier of a record is a row of its own (its
    /// key prefixed by the identifier's number, so equal values of two identifiers stay
    /// apart), the record's rows one after the other with its bytes; a record whose
    /// identifiers are all empty is refused, or skipped; the counts are of records.
    #[test]
    fn match_any_makes_a_row_for_each_identifier() {
        let o = KeyOptions {
            match_any: true,
            ..opts(Format::Csv, &["e", "p"])
        };
        let input = read("e,p,n\nA ,x,1\n,X,2\nx,,3\na,y,4\n", &o);
        let keys: Vec<&[u8]> = (0..input.keys.len()).map(|i| input.keys.get(i)).collect();
        assert_eq!(keys, [&b"\x00a"[..], b"\x01x", b"\x00x", b"\x01y"]);
        let rows: Vec<(u32, u16)> = input.rows.iter().map(|r| (r.key, r.identifier)).collect();
        assert_eq!(rows, [(0, 0), (1, 1), (1, 1), (2, 0), (0, 0), (3, 1)]);
        let records: Vec<String> = records(&input.rows)
            .map(|r| String::from_utf8_lossy(input.bytes(&r[0].bytes)).into_owned())
            .collect();
        assert_eq!(records, ["A ,x,1\n", ",X,2\n", "x,,3\n", "a,y,4\n"]);
        let counts = input.counts();
        assert_eq!((counts.kept, counts.duplicates), (4, 2));
        assert_eq!(
            input.form.to_string(),
            "trim, lowercase, any of 2 key columns"
        );
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("in");
        std::fs::write(&p, "e,p\na,b\n , \n").unwrap();
        let e = read_input(&p, &o).err().unwrap().to_string();
        assert!(
            e.contains("line 3") && e.contains("every identifier"),
            "{e}"
        );
        let skip = KeyOptions {
            skip_empty: true,
            ..o.clone()
        };
        let input = read_input(&p, &skip).unwrap();
        assert_eq!((input.counts().kept, input.skipped_empty), (1, 1));
    }
}
