//! What reading an input file takes in memory, known before any of it is read, so that
//! `--max-memory` counts the input beside the protocol and a file too large to read is
//! refused (or split) first. The figures follow what the reader allocates
//! ([`super::read_input`]): the file's bytes; the keys' bytes and an end for each; a
//! [`Row`] and the values for each row; and, while duplicates are found
//! ([`venn::Items::deduplicate`]), a hash and an index per row and a table of twice the
//! rows' slots (a power of two). Rows end at line breaks, which one pass through a small
//! buffer counts first: the reader takes room for exactly that many rows, and keys never
//! take more than the file's bytes, but for two cases counted apart — several key columns
//! (each value gets a 4-byte length) and lower-casing (a character may lengthen by half,
//! `Ⱥ` to `ⱥ`, and the keys' buffer then doubles).

use super::{KeyOptions, Row};
use std::io::Read;
use std::path::Path;
use venn::{Error, Result};

/// What a file read whole takes in memory, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// The file's size.
    pub size: u64,
    /// The most rows it may hold (its line breaks, plus one).
    pub rows: u64,
    /// The most its keys' bytes may be.
    pub key_bytes: u64,
    /// The peak while it is read and its duplicate keys are found.
    pub reading: u64,
    /// What it holds once read, while the protocol runs ([`super::Input::memory`] is at
    /// most this).
    pub held: u64,
}

/// The bytes several key columns add: a 4-byte length for each value of each row (with
/// `--match-any`, the identifier's number: a byte).
pub(crate) fn length_prefixes(opts: &KeyOptions, rows: u64) -> u64 {
    match opts.columns.len() {
        0 | 1 => 0,
        columns if opts.match_any => columns as u64 * rows,
        columns => 4 * columns as u64 * rows,
    }
}

/// The most rows run for `lines` rows of a file: one each, or with `--match-any` one for
/// each identifier.
pub(crate) fn keyed_rows(opts: &KeyOptions, lines: u64) -> u64 {
    match opts.match_any {
        true => lines.saturating_mul(opts.columns.len().max(1) as u64),
        false => lines,
    }
}

impl Footprint {
    /// The footprint of a file of `size` bytes and at most `rows` rows.
    pub fn of(size: u64, rows: u64, opts: &KeyOptions) -> Footprint {
        const WORD: u64 = 8;
        // The room the reader takes for the keys; lower-cased ones may outgrow it: it
        // doubles, and until the old buffer is freed both are held.
        let room = size + length_prefixes(opts, rows);
        let (key_bytes, keys_held, keys_peak) = match opts.lowercase {
            false => (room, room, room),
            true => (room + room / 2, 2 * room, 3 * room),
        };
        let per_row = std::mem::size_of::<Row>() as u64 // the row
            + WORD // its key's end
            + WORD * opts.value_columns.len() as u64; // its values
        let keyed = keyed_rows(opts, rows);
        let kept = (size + 1) + keyed * per_row;
        let table = WORD * (2 * keyed).next_power_of_two().max(16);
        let deduplicating = keyed * (WORD + 4) + table;
        Footprint {
            size,
            rows,
            key_bytes,
            reading: kept + keys_peak + deduplicating,
            held: kept + keys_held,
        }
    }

    /// The footprint of the file at `path`, from its size and its line breaks (`\n`, and a
    /// `\r` not followed by one), counted in one pass that holds nothing of it.
    pub fn of_file(path: &Path, opts: &KeyOptions) -> Result<Footprint> {
        let mut file = std::fs::File::open(path).map_err(Error::file("open input", path))?;
        let mut buf = vec![0u8; 1 << 20];
        let (mut size, mut breaks, mut after_cr) = (0u64, 0u64, false);
        loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::file("read input", path)(e)),
            };
            let chunk = &buf[..n];
            // A `\r` that ended the last chunk is a break of its own unless `\n` follows.
            if after_cr && chunk[0] != b'\n' {
                breaks += 1;
            }
            breaks += memchr::memchr_iter(b'\n', chunk).count() as u64;
            breaks += memchr::memchr_iter(b'\r', &chunk[..n - 1])
                .filter(|&i| chunk[i + 1] != b'\n')
                .count() as u64;
            after_cr = chunk[n - 1] == b'\r';
            size += n as u64;
        }
        breaks += after_cr as u64;
        Ok(Footprint::of(size, breaks + 1, opts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::read_input;

    fn opts(columns: &[&str], lowercase: bool, values: &[&str]) -> KeyOptions {
        KeyOptions {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            lowercase,
            skip_empty: true,
            value_columns: values.iter().map(|c| c.to_string()).collect(),
            ..KeyOptions::default()
        }
    }

    /// What a file read whole holds is never more than its footprint says, whatever makes
    /// its keys longer than its bytes or its rows more than its `\n`s; and the line breaks
    /// are counted across the buffer's chunks.
    #[test]
    fn a_file_read_whole_holds_no_more_than_its_footprint() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.csv");
        let mut long = String::from("a,b,v\n");
        for i in 0..100_000 {
            long.push_str(&format!("{i},Ⱥ{i},{}\r\n", i % 7));
        }
        let cases = [
            ("k\nx\ny\n", opts(&[], false, &[])),
            ("k,v\rx,1\ry,2\rz,3\r", opts(&[], false, &[])),
            ("a,b\n1,2\n3,4\n5,6\n", opts(&["a", "b"], false, &[])),
            ("k\nȺȺȺȺ\nȾȾ\nİİ\n", opts(&[], true, &[])),
            (long.as_str(), opts(&["a", "b"], true, &["v"])),
        ];
        for (text, o) in &cases {
            std::fs::write(&path, text).unwrap();
            let f = Footprint::of_file(&path, o).unwrap();
            assert_eq!(f.size, text.len() as u64);
            let breaks = text.matches('\n').count() + text.matches('\r').count()
                - text.matches("\r\n").count();
            assert_eq!(f.rows, breaks as u64 + 1, "{text:?}");
            let input = read_input(&path, o).unwrap();
            assert!(
                input.memory() <= f.held && f.held <= f.reading,
                "{:?}: holds {}, footprint {f:?}",
                &text[..text.len().min(40)],
                input.memory()
            );
        }
    }
}
