//! A CSV file's header row and body: a body without quotes split by hand (at disk
//! speed), one with quotes by the `csv` crate, both giving the same rows and line numbers.

use super::builder::{Builder, Values};
use super::{content, delimiter_name, scan, KeyOptions};
use venn::{Error, Result};

/// Whether a CSV body can be split by hand: the fast path splits at `\n` only, so quotes,
/// and a `\r` that ends a line on its own (old Mac files), go to the csv crate.
pub(super) fn uses_fast_path(body: &[u8]) -> bool {
    let bare_cr = memchr::memchr_iter(b'\r', body).any(|i| body.get(i + 1) != Some(&b'\n'));
    memchr::memchr(b'"', body).is_none() && !bare_cr
}

/// The header row of a CSV file: where it ends (the body starts), how many fields it
/// has, which of them make up the key, and which hold the values.
pub(super) struct Header {
    pub(super) end: usize,
    width: usize,
    columns: Vec<usize>,
    values: Vec<usize>,
    /// The revealed columns, in the order named.
    reveals: Vec<usize>,
}

/// Parses the header row.
pub(super) fn csv_header(data: &[u8], opts: &KeyOptions) -> Result<Header> {
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
    super::check_value_columns(&columns, &values, &opts.value_columns)?;
    let reveals = (opts.reveal_columns.iter())
        .map(|c| column(&c.name))
        .collect::<Result<_>>()?;
    Ok(Header {
        end: body,
        width: header.len(),
        columns,
        values,
        reveals,
    })
}

/// A body with no quote character: split at line breaks and commas.
pub(super) fn csv_plain_body(data: &[u8], h: &Header, b: &mut Builder) -> Result<()> {
    let (body, width) = (h.end, h.width);
    let mut key: Vec<&[u8]> = Vec::with_capacity(h.columns.len());
    let mut values: Vec<&[u8]> = Vec::with_capacity(h.values.len());
    let mut revealed: Vec<&[u8]> = Vec::with_capacity(h.reveals.len());
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
        revealed.clear();
        revealed.extend(h.reveals.iter().map(|&c| field(c)));
        b.add_fields(number, &key, Values::Fields(&values), &revealed, line)
    })
}

/// The line breaks in `data[from..to]`: each `\n`, and each `\r` not followed by one.
pub(super) fn line_breaks(data: &[u8], from: usize, to: usize) -> u64 {
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
pub(super) fn csv_quoted_body(data: &[u8], h: &Header, b: &mut Builder) -> Result<()> {
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
        let revealed: Vec<&[u8]> = h.reveals.iter().map(|&c| &record[c]).collect();
        b.add_fields(
            line,
            &fields,
            Values::Fields(&values),
            &revealed,
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
