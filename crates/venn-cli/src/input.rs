//! Reading a party's input file: CSV with a header row (default) or plain lines; keys are
//! normalised only when asked, empty keys are refused unless skipped, and duplicate keys
//! are run once while all their rows are kept for the output.

use std::collections::HashMap;
use std::path::Path;
use venn::{Error, Items, Result};

/// Input file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// CSV with a header row.
    Csv,
    /// One key per line.
    Lines,
}

/// How keys are taken from the input.
#[derive(Clone, Debug)]
pub struct KeyOptions {
    pub format: Format,
    /// CSV column holding the key (default: the first).
    pub column: Option<String>,
    pub trim: bool,
    pub lowercase: bool,
    pub skip_empty: bool,
}

/// One row of the input, as it will be written back out.
pub enum Row {
    Csv(csv::ByteRecord),
    Line(Vec<u8>),
}

/// A parsed input file.
pub struct Input {
    /// The CSV header, if any.
    pub header: Option<csv::ByteRecord>,
    /// Every kept row with the index of its key among `keys`.
    pub rows: Vec<(u32, Row)>,
    /// The distinct keys, in order of first appearance.
    pub keys: Items,
    /// Rows whose key had already appeared.
    pub duplicates: usize,
    /// Rows skipped for an empty key.
    pub skipped_empty: usize,
}

fn normalise(raw: &[u8], opts: &KeyOptions) -> Vec<u8> {
    let mut key = raw;
    if opts.trim {
        key = key.trim_ascii();
        if let Ok(s) = std::str::from_utf8(key) {
            key = s.trim().as_bytes();
        }
    }
    if opts.lowercase {
        match std::str::from_utf8(key) {
            Ok(s) => s.to_lowercase().into_bytes(),
            Err(_) => key.to_ascii_lowercase(),
        }
    } else {
        key.to_vec()
    }
}

struct Builder<'a> {
    opts: &'a KeyOptions,
    index: HashMap<Vec<u8>, u32>,
    input: Input,
}

impl Builder<'_> {
    fn add(&mut self, line: u64, raw: &[u8], row: Row) -> Result<()> {
        let key = normalise(raw, self.opts);
        if key.is_empty() {
            if self.opts.skip_empty {
                self.input.skipped_empty += 1;
                return Ok(());
            }
            return Err(Error::Input {
                line,
                reason: "empty key (pass --skip-empty to skip such rows)".into(),
            });
        }
        let next = self.index.len() as u32;
        let idx = *self.index.entry(key).or_insert_with_key(|k| {
            self.input.keys.push(k);
            next
        });
        if idx != next {
            self.input.duplicates += 1;
        }
        self.input.rows.push((idx, row));
        Ok(())
    }
}

/// Reads and parses `path`.
pub fn read_input(path: &Path, opts: &KeyOptions) -> Result<Input> {
    let file = std::fs::File::open(path).map_err(Error::file("open input", path))?;
    let mut b = Builder {
        opts,
        index: HashMap::new(),
        input: Input {
            header: None,
            rows: Vec::new(),
            keys: Items::new(),
            duplicates: 0,
            skipped_empty: 0,
        },
    };
    match opts.format {
        Format::Csv => {
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(true)
                .from_reader(std::io::BufReader::new(file));
            let header = reader.byte_headers().map_err(csv_error)?.clone();
            let column = match &opts.column {
                None if header.is_empty() => {
                    return Err(Error::Input {
                        line: 1,
                        reason: "the CSV file has no header row".into(),
                    })
                }
                None => 0,
                Some(name) => header
                    .iter()
                    .position(|h| h == name.as_bytes())
                    .ok_or_else(|| Error::Input {
                        line: 1,
                        reason: format!(
                            "no column named '{name}' (columns: {})",
                            header_list(&header)
                        ),
                    })?,
            };
            let mut record = csv::ByteRecord::new();
            while reader.read_byte_record(&mut record).map_err(csv_error)? {
                let line = record.position().map_or(0, |p| p.line());
                let raw = record.get(column).unwrap_or_default().to_vec();
                b.add(line, &raw, Row::Csv(record.clone()))?;
            }
            b.input.header = Some(header);
        }
        Format::Lines => {
            let data = std::fs::read(path).map_err(Error::file("read input", path))?;
            // A UTF-8 byte-order mark is not part of the first key (the CSV reader drops it
            // too).
            let text = data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&data);
            let mut lines: Vec<&[u8]> = text.split(|&c| c == b'\n').collect();
            if lines.last().is_some_and(|l| l.is_empty()) {
                lines.pop();
            }
            for (i, line) in lines.into_iter().enumerate() {
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                b.add(i as u64 + 1, line, Row::Line(line.to_vec()))?;
            }
        }
    }
    Ok(b.input)
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
