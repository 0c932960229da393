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

use std::io::Read;
use std::ops::Range;
use std::path::Path;
use venn::session::run_plan::KeyForm;
use venn::util::memory::{advise_huge_pages, with_huge_capacity};
use venn::{Error, Items, Result};

pub mod footprint;
pub mod fuzz;
pub mod memory;
mod scan;
pub mod segments;
pub mod source;

use source::{InputSource, RowBatch, RowCounts};

/// Input file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Format {
    /// CSV with a header row.
    Csv,
    /// One key per line.
    Lines,
}

/// How keys are taken from the input.
#[derive(Clone, Debug)]
pub struct KeyOptions {
    /// `--format`: CSV or a key a line.
    pub format: Format,
    /// CSV columns making up the key (default: the first column). With several, the key
    /// is their values together, each prefixed by its length.
    pub columns: Vec<String>,
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

impl KeyOptions {
    /// What these options do to a key's bytes ([`KeyForm`]): one column unless several
    /// are named (a file of lines, or keys given in memory, have one).
    pub fn form(&self) -> KeyForm {
        KeyForm {
            trim: self.trim,
            lowercase: self.lowercase,
            columns: self.columns.len().clamp(1, u16::MAX as usize) as u16,
        }
    }
}

/// The largest value a row may carry: with fewer than 2^32 rows their sum stays below
/// 2^64, where a sum over the intersection is taken.
pub const MAX_VALUE: u64 = u32::MAX as u64;

/// A kept row: the index of its key among `Input::keys`, and its bytes in the file (line
/// ending included, if it had one).
#[derive(Clone, Debug)]
pub struct Row {
    /// The index of its key in `Input::keys`.
    pub key: u32,
    /// Its bytes in the file, the line ending included.
    pub bytes: Range<usize>,
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
}

impl Input {
    /// The bytes of a row or the header, as they are in the file.
    pub fn bytes(&self, range: &Range<usize>) -> &[u8] {
        &self.data[range.clone()]
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
            kept: self.rows.len() as u64,
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
        for row in self.rows.iter().filter(|r| member[r.key as usize]) {
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
}

/// Normalises `raw` as `opts` asks, into `out` when it changes, and returns the key.
fn normalise<'a>(raw: &'a [u8], opts: &KeyOptions, out: &'a mut Vec<u8>) -> &'a [u8] {
    let mut key = raw;
    if opts.trim {
        key = key.trim_ascii();
        if !key.is_ascii() {
            if let Ok(s) = std::str::from_utf8(key) {
                key = s.trim().as_bytes();
            }
        }
    }
    if !opts.lowercase {
        return key;
    }
    out.clear();
    match std::str::from_utf8(key) {
        Ok(s) if !s.is_ascii() => out.extend_from_slice(s.to_lowercase().as_bytes()),
        _ => out.extend(key.iter().map(u8::to_ascii_lowercase)),
    }
    out
}

/// Collects rows and their keys; the keys are deduplicated once all are in.
struct Builder<'a> {
    opts: &'a KeyOptions,
    /// The key of each row in `rows`, repeats included (until `finish`).
    keys: Items,
    /// The values of each row in `rows`, row by row, if the rows carry values.
    values: Option<Vec<u64>>,
    rows: Vec<Row>,
    skipped_empty: usize,
    scratch: Vec<u8>,
    field_scratch: Vec<u8>,
}

impl<'a> Builder<'a> {
    /// Room for `expected_rows` rows whose keys take about `key_bytes` bytes in all (more
    /// is taken as needed: lower-cased text that lengthens).
    fn new(opts: &'a KeyOptions, expected_rows: usize, key_bytes: usize) -> Self {
        Builder {
            opts,
            keys: Items::with_capacity(expected_rows, key_bytes),
            values: (!opts.value_columns.is_empty())
                .then(|| with_huge_capacity(expected_rows * opts.value_columns.len())),
            rows: with_huge_capacity(expected_rows),
            skipped_empty: 0,
            scratch: Vec::new(),
            field_scratch: Vec::new(),
        }
    }

    /// Adds the row `bytes` (line `line`) whose key is `key` (already normalised) and
    /// whose values are `values`, if the rows carry values.
    fn add_key(
        &mut self,
        line: u64,
        key: &[u8],
        values: Values,
        bytes: Range<usize>,
    ) -> Result<()> {
        if key.is_empty() {
            if self.opts.skip_empty {
                self.skipped_empty += 1;
                return Ok(());
            }
            return Err(Error::Input {
                line,
                reason: "empty key (--skip-empty, in Python skip_empty=True, skips such rows)"
                    .into(),
            });
        }
        let index = match u32::try_from(self.rows.len()) {
            Ok(i) if i < u32::MAX - 1 => i,
            _ => {
                return Err(Error::Input {
                    line,
                    reason: "more rows than can be read at once (use --bucket-rows)".into(),
                })
            }
        };
        if let Some(kept) = &mut self.values {
            let refused = |shown: String| Error::Input {
                line,
                reason: format!("the value '{shown}' is not an integer from 0 to {MAX_VALUE}"),
            };
            match values {
                Values::Fields(fields) => {
                    for field in fields {
                        let value = parse_value(field)
                            .ok_or_else(|| refused(String::from_utf8_lossy(field).into()))?;
                        kept.push(value);
                    }
                }
                Values::Numbers(numbers) => {
                    if let Some(v) = numbers.iter().find(|&&v| v > MAX_VALUE) {
                        return Err(refused(v.to_string()));
                    }
                    kept.extend_from_slice(numbers);
                }
            }
        }
        self.keys.push(key);
        self.rows.push(Row { key: index, bytes });
        Ok(())
    }

    /// Adds a row whose key is made of `fields` (raw), normalising each, and whose values
    /// are `values`.
    fn add_fields(
        &mut self,
        line: u64,
        fields: &[&[u8]],
        values: Values,
        bytes: Range<usize>,
    ) -> Result<()> {
        let (mut key_buf, mut field_buf) = (
            std::mem::take(&mut self.scratch),
            std::mem::take(&mut self.field_scratch),
        );
        let result = match fields {
            [one] => {
                let key = normalise(one, self.opts, &mut key_buf);
                self.add_key(line, key, values, bytes)
            }
            _ => {
                key_buf.clear();
                let mut all_empty = true;
                for f in fields {
                    let v = normalise(f, self.opts, &mut field_buf);
                    all_empty &= v.is_empty();
                    key_buf.extend_from_slice(&(v.len() as u32).to_le_bytes());
                    key_buf.extend_from_slice(v);
                }
                let key = if all_empty { &[][..] } else { &key_buf[..] };
                self.add_key(line, key, values, bytes)
            }
        };
        (self.scratch, self.field_scratch) = (key_buf, field_buf);
        result
    }

    /// The input, with each distinct key once (in order of first appearance) and the
    /// values of its rows added.
    fn finish(mut self, data: Vec<u8>, header: Option<Range<usize>>) -> Input {
        if let Some(values) = self.values.take() {
            let (keys, columns) = (
                std::mem::take(&mut self.keys),
                self.opts.value_columns.len(),
            );
            self.keys = (keys.with_value_columns(values, columns)).expect("the values of each row");
        }
        let distinct = self.keys.deduplicate();
        for row in &mut self.rows {
            row.key = distinct[row.key as usize];
        }
        Input {
            data,
            header,
            duplicates: self.rows.len() - self.keys.len(),
            rows: self.rows,
            keys: self.keys,
            skipped_empty: self.skipped_empty,
            form: self.opts.form(),
        }
    }
}

/// A row's values, as the rows carry them (none: they carry no values).
#[derive(Clone, Copy)]
enum Values<'a> {
    /// Fields of a file, one a value column.
    Fields(&'a [&'a [u8]]),
    /// Numbers given in memory, one a value column.
    Numbers(&'a [u64]),
}

/// A row's value: an unsigned decimal integer up to [`MAX_VALUE`], white space around it
/// ignored.
fn parse_value(field: &[u8]) -> Option<u64> {
    let digits = field.trim_ascii();
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value = digits.iter().try_fold(0u64, |v, &d| {
        v.checked_mul(10)?.checked_add((d - b'0') as u64)
    })?;
    (value <= MAX_VALUE).then_some(value)
}

/// A line's content without its line ending.
fn content<'a>(data: &'a [u8], line: &Range<usize>) -> &'a [u8] {
    let l = &data[line.clone()];
    let l = l.strip_suffix(b"\n").unwrap_or(l);
    l.strip_suffix(b"\r").unwrap_or(l)
}

/// Reads and parses `path`.
pub fn read_input(path: &Path, opts: &KeyOptions) -> Result<Input> {
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
        Format::Lines => {
            if !opts.value_columns.is_empty() {
                return Err(Error::Usage(
                    "values (--value-column) are read from a CSV file (--format csv)".into(),
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
                b.add_fields(number, &[content(&data, &line)], Values::Fields(&[]), line)
            })?;
            Ok(b.finish(data, None))
        }
        Format::Csv => {
            let h = csv_header(&data, opts)?;
            let body = &data[h.end..];
            if uses_fast_path(body) {
                csv_plain_body(&data, &h, &mut b)?;
            } else {
                csv_quoted_body(&data, &h, &mut b)?;
            }
            Ok(b.finish(data, Some(0..h.end)))
        }
    }
}

/// Whether a CSV body can be split by hand: the fast path splits at `\n` only, so quotes,
/// and a `\r` that ends a line on its own (old Mac files), go to the csv crate.
fn uses_fast_path(body: &[u8]) -> bool {
    let bare_cr = memchr::memchr_iter(b'\r', body).any(|i| body.get(i + 1) != Some(&b'\n'));
    memchr::memchr(b'"', body).is_none() && !bare_cr
}

/// The header row of a CSV file: where it ends (the body starts), how many fields it
/// has, which of them make up the key, and which hold the values.
struct Header {
    end: usize,
    width: usize,
    columns: Vec<usize>,
    values: Vec<usize>,
}

/// Parses the header row.
fn csv_header(data: &[u8], opts: &KeyOptions) -> Result<Header> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .delimiter(opts.delimiter)
        .from_reader(data);
    let header = reader.byte_headers().map_err(csv_error)?.clone();
    let body = past_line_end(data, (reader.position().byte() as usize).min(data.len()));
    if header.is_empty() {
        return Err(Error::Input {
            line: 1,
            reason: "the CSV file has no header row".into(),
        });
    }
    let column = |name: &String| {
        header
            .iter()
            .position(|h| h == name.as_bytes())
            .ok_or_else(|| Error::Input {
                line: 1,
                reason: format!(
                    "no column named '{name}' (columns: {}){}",
                    header_list(&header),
                    delimiter_hint(&header, opts.delimiter)
                ),
            })
    };
    let columns = if opts.columns.is_empty() {
        vec![0]
    } else {
        opts.columns.iter().map(column).collect::<Result<_>>()?
    };
    let values: Vec<usize> = opts
        .value_columns
        .iter()
        .map(column)
        .collect::<Result<_>>()?;
    for (i, &v) in values.iter().enumerate() {
        let name = String::from_utf8_lossy(&header[v]);
        if columns.contains(&v) {
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
    Ok(Header {
        end: body,
        width: header.len(),
        columns,
        values,
    })
}

/// A body with no quote character: split at line breaks and commas.
fn csv_plain_body(data: &[u8], h: &Header, b: &mut Builder) -> Result<()> {
    let (body, width) = (h.end, h.width);
    let mut key: Vec<&[u8]> = Vec::with_capacity(h.columns.len());
    let mut values: Vec<&[u8]> = Vec::with_capacity(h.values.len());
    // The header may span lines (a quoted name with a line break, a bare CR ending).
    let mut number = line_breaks(data, 0, body);
    scan::for_each_line(data, body, Some(b.opts.delimiter), |line, commas| {
        number += 1;
        let text = content(data, &line);
        if text.is_empty() {
            return Ok(());
        }
        if commas.len() + 1 != width {
            return Err(Error::Input {
                line: number,
                reason: format!(
                    "malformed CSV: {} fields where the header has {width}",
                    commas.len() + 1
                ),
            });
        }
        // Commas lie before the line's ending (a `\r` is only ever right before `\n`).
        let text_end = line.start + text.len();
        let field = |c: usize| {
            let start = if c == 0 {
                line.start
            } else {
                commas[c - 1] + 1
            };
            &data[start..commas.get(c).copied().unwrap_or(text_end)]
        };
        key.clear();
        key.extend(h.columns.iter().map(|&c| field(c)));
        values.clear();
        values.extend(h.values.iter().map(|&c| field(c)));
        b.add_fields(number, &key, Values::Fields(&values), line)
    })
}

/// The line breaks in `data[from..to]`: each `\n`, and each `\r` not followed by one.
fn line_breaks(data: &[u8], from: usize, to: usize) -> u64 {
    let part = &data[from..to];
    let lf = memchr::memchr_iter(b'\n', part).count();
    let bare_cr = memchr::memchr_iter(b'\r', part)
        .filter(|&i| data.get(from + i + 1) != Some(&b'\n'))
        .count();
    (lf + bare_cr) as u64
}

/// Where a line ending that starts at `at` ends (a `\r` the `csv` reader stopped at may
/// be followed by its `\n`).
fn past_line_end(data: &[u8], at: usize) -> usize {
    if at > 0 && data[at - 1] == b'\r' && data.get(at) == Some(&b'\n') {
        at + 1
    } else {
        at
    }
}

/// A body with quotes: the `csv` crate parses it; rows keep their original bytes.
fn csv_quoted_body(data: &[u8], h: &Header, b: &mut Builder) -> Result<()> {
    // Row widths are checked against the header below, not against the first row. The
    // reader starts at the header, not the body: the csv crate drops a byte-order mark at
    // the start of what it reads, and one at the start of the first row is part of a key.
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .delimiter(b.opts.delimiter)
        .from_reader(data);
    reader.byte_headers().map_err(csv_error)?;
    let mut record = csv::ByteRecord::new();
    let (mut line, mut counted) = (1, 0);
    let mut key: Vec<Vec<u8>> = Vec::with_capacity(h.columns.len());
    while reader.read_byte_record(&mut record).map_err(csv_error)? {
        let pos = record
            .position()
            .expect("records read from a reader have a position");
        // The reported start may include the ends of earlier (blank) lines.
        let mut start = pos.byte() as usize;
        while matches!(data.get(start), Some(b'\r' | b'\n')) {
            start += 1;
        }
        // Lines as the fast path counts them (the csv crate does not count a bare CR).
        line += line_breaks(data, counted, start);
        counted = start;
        if record.len() != h.width {
            return Err(Error::Input {
                line,
                reason: format!(
                    "malformed CSV: {} fields where the header has {}",
                    record.len(),
                    h.width
                ),
            });
        }
        let end = past_line_end(data, reader.position().byte() as usize);
        key.clear();
        key.extend(h.columns.iter().map(|&c| record[c].to_vec()));
        let fields: Vec<&[u8]> = key.iter().map(Vec::as_slice).collect();
        let values: Vec<&[u8]> = h.values.iter().map(|&c| &record[c]).collect();
        b.add_fields(
            line,
            &fields,
            Values::Fields(&values),
            start..end.max(start),
        )?;
    }
    Ok(())
}

/// Where a header of one field holds another delimiter than the one read with (a file
/// separated by semicolons read as comma-separated), how to read it.
fn delimiter_hint(header: &csv::ByteRecord, delimiter: u8) -> String {
    let (Some(only), 1) = (header.get(0), header.len()) else {
        return String::new();
    };
    match [b';', b'\t', b'|', b',']
        .into_iter()
        .find(|&d| d != delimiter && only.contains(&d))
    {
        Some(d) => format!(
            "; if its fields are separated by {0}, pass --delimiter {0} (Python: \
             delimiter=)",
            delimiter_name(d)
        ),
        None => String::new(),
    }
}

fn header_list(header: &csv::ByteRecord) -> String {
    let names: Vec<String> = header
        .iter()
        .map(|h| String::from_utf8_lossy(h).into_owned())
        .collect();
    names.join(", ")
}

fn csv_error(e: csv::Error) -> Error {
    let line = e.position().map_or(0, |p| p.line());
    Error::Input {
        line,
        reason: format!("malformed CSV: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(format: Format, columns: &[&str]) -> KeyOptions {
        KeyOptions {
            format,
            columns: columns.iter().map(|c| c.to_string()).collect(),
            trim: true,
            lowercase: true,
            skip_empty: false,
            value_columns: Vec::new(),
            delimiter: b',',
        }
    }

    fn read(text: &str, o: &KeyOptions) -> Input {
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
}
