//! Reading a file too large for memory: in segments of whole rows, each parsed as a whole
//! file would be ([`parse_input`](super::parse_input)), so every row is split and normalised exactly as in a
//! file read at once.
//!
//! A segment ends after a line break that ends a row: for CSV, one with an even number of
//! quote characters since the segment began (RFC 4180 escapes a quote by doubling it, so a
//! line break inside a quoted field always follows an odd number of them). CSV segments
//! after the first are parsed behind a copy of the header row.

use super::{parse_bytes, Format, Input, KeyOptions};
use std::io::Read;
use std::path::Path;
use venn::{Error, Result};

/// Where the last row-ending line break in `buf` is (the index after it), if any. For CSV
/// this follows the csv crate's reading of quotes: a quote opens a quoted field only at the
/// start of a field (after the `delimiter` or a line break); inside one, `""` is a quote
/// and a lone `"` closes it; anywhere else a quote is an ordinary character.
fn last_row_end(buf: &[u8], format: Format, delimiter: u8) -> Option<usize> {
    match format {
        // A Parquet file is never read as text ([`for_each_segment`] refuses it).
        Format::Lines | Format::Parquet => memchr::memrchr(b'\n', buf).map(|i| i + 1),
        Format::Csv => {
            let (mut quoted, mut field_start, mut end) = (false, true, None);
            let mut i = 0;
            while i < buf.len() {
                let c = buf[i];
                if quoted {
                    if c == b'"' {
                        if buf.get(i + 1) == Some(&b'"') {
                            i += 1;
                        } else {
                            quoted = false;
                        }
                    }
                } else {
                    match c {
                        b'"' if field_start => quoted = true,
                        b'\n' => end = Some(i + 1),
                        _ => {}
                    }
                    field_start = c == delimiter || matches!(c, b'\n' | b'\r');
                    if quoted {
                        field_start = false;
                    }
                }
                i += 1;
            }
            end
        }
    }
}

/// A parsed segment: its rows, and the number of the file's first line in it.
pub struct Segment<'a> {
    /// The segment's rows and keys, as a file of its own.
    pub input: &'a Input,
    /// How many rows (kept, as in [`Input::rows`]) came before this segment.
    pub rows_before: u64,
}

/// Reads `path` in segments of about `size` bytes of whole rows and calls `f` on each, in
/// file order. Returns the CSV header row's bytes, if any.
pub fn for_each_segment(
    path: &Path,
    opts: &KeyOptions,
    size: usize,
    mut f: impl FnMut(Segment) -> Result<()>,
) -> Result<Option<Vec<u8>>> {
    if opts.format == Format::Parquet {
        return Err(super::parquet_elsewhere());
    }
    let mut file = std::fs::File::open(path).map_err(Error::file("open input", path))?;
    // No larger a buffer than the file needs.
    let len = file
        .metadata()
        .map_err(Error::file("open input", path))?
        .len();
    let size = size.min(usize::try_from(len).unwrap_or(usize::MAX).saturating_add(1));
    let mut header: Option<Vec<u8>> = None;
    let mut buf: Vec<u8> = Vec::with_capacity(size + (1 << 16));
    let (mut rows_before, mut lines_before) = (0u64, 0u64);
    let mut eof = false;
    let mut first = true;
    while !eof || !buf.is_empty() {
        // Fill up to `size`, or more while no whole row is in the buffer.
        // Grows geometrically while no whole row fits.
        let want = size.max(buf.len() + (buf.len() / 2).max(size.clamp(1, 1 << 16)));
        while buf.len() < want && !eof {
            let at = buf.len();
            buf.resize(want, 0);
            let n = file
                .read(&mut buf[at..])
                .map_err(Error::file("read input", path))?;
            buf.truncate(at + n);
            eof = n == 0;
        }
        let cut = if eof {
            buf.len()
        } else {
            match last_row_end(&buf, opts.format, opts.delimiter) {
                Some(cut) => cut,
                None => continue,
            }
        };
        let rest = buf.split_off(cut);
        let lines = memchr::memchr_iter(b'\n', &buf).count() as u64;
        let (data, shift) = match (&header, opts.format) {
            (Some(h), Format::Csv) => ([h.as_slice(), &buf].concat(), 1),
            _ => (std::mem::take(&mut buf), 0),
        };
        let input = parse_bytes(data, opts, first).map_err(|e| match e {
            Error::Input { line, reason } => Error::Input {
                line: line + lines_before - shift,
                reason,
            },
            e => e,
        })?;
        if first && opts.format == Format::Csv {
            header = input.header.as_ref().map(|h| input.bytes(h).to_vec());
        }
        first = false;
        f(Segment {
            input: &input,
            rows_before,
        })?;
        rows_before += input.rows.len() as u64;
        lines_before += lines;
        buf = rest;
    }
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::read_input;

    fn opts(format: Format) -> KeyOptions {
        KeyOptions {
            format,
            columns: vec![],
            trim: true,
            skip_empty: true,
            ..KeyOptions::default()
        }
    }

    /// Each row's bytes and key.
    type Rows = Vec<(Vec<u8>, Vec<u8>)>;

    /// Rows as the whole-file reader and the segmented one see them.
    fn both(text: &str, opts: &KeyOptions, size: usize) -> (Rows, Rows) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("in");
        std::fs::write(&p, text).unwrap();
        let rows = |input: &Input| -> Rows {
            input
                .rows
                .iter()
                .map(|r| {
                    (
                        input.bytes(&r.bytes).to_vec(),
                        input.keys.get(r.key as usize).to_vec(),
                    )
                })
                .collect()
        };
        let whole = rows(&read_input(&p, opts).unwrap());
        let mut parts = Vec::new();
        let mut count = 0;
        for_each_segment(&p, opts, size, |s| {
            assert_eq!(s.rows_before, count);
            count += s.input.rows.len() as u64;
            parts.extend(rows(s.input));
            Ok(())
        })
        .unwrap();
        (whole, parts)
    }

    #[test]
    fn segments_see_the_rows_a_whole_read_sees() {
        // Quotes inside a field are ordinary characters: they must not flip the cut rule.
        let csv = "k,v\n\"a\nb\",1\nf,5\" screen\nc,\"x\"\"\n\"\n\"ab\"c\"d,4\n\nd,2\r\ne,3";
        let lines = "\u{feff}a\nb\r\n\nc\n\u{feff}d\ne";
        // A quote after a semicolon opens a field where semicolons separate them.
        let semicolons = "k;v\nx;\"a\nb\"\nf;5\" screen\nc;\"x\"\"\n\"\nd;2";
        let by_semicolons = KeyOptions {
            delimiter: b';',
            columns: vec!["v".into()],
            ..opts(Format::Csv)
        };
        for size in [1, 2, 3, 5, 8, 13, 1000] {
            let (whole, parts) = both(csv, &opts(Format::Csv), size);
            assert_eq!(whole, parts, "csv, segments of {size}");
            let (whole, parts) = both(lines, &opts(Format::Lines), size);
            assert_eq!(whole, parts, "lines, segments of {size}");
            let (whole, parts) = both(semicolons, &by_semicolons, size);
            assert_eq!(whole, parts, "semicolons, segments of {size}");
        }
    }

    #[test]
    fn errors_name_the_line_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("in");
        std::fs::write(&p, "k,v\na,1\nb,2\nc\nd,4\n").unwrap();
        for size in [4, 6, 100] {
            let e = for_each_segment(&p, &opts(Format::Csv), size, |_| Ok(()))
                .err()
                .unwrap();
            assert!(e.to_string().contains("line 4"), "segments of {size}: {e}");
        }
    }
}
