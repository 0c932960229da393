//! `--align` on a file split into buckets: the matched rows in the order both parties
//! derive (each key's keyed hash, the order [`AlignedRows`] gives an input read whole, so
//! that a party read whole and one split line up), then for `outer` the unmatched rows as
//! [`AlignedRows`] writes them.
//!
//! [`AlignedRows`]: crate::join::AlignedRows
//!
//! A file too large for memory is sorted by distribution: one pass over the file makes
//! each matched row's output (its line, the peer's values) and appends it, after its
//! hash, to one of a power of two of part files in the split's directory, chosen by the
//! hash's top bits; each part, a uniform share of the rows, is then read whole, sorted by
//! hash and written, in part order. A part holds about a segment's worth of rows (the
//! memory the split was made for), so memory holds one part at a time.

use crate::buckets::SplitRows;
use crate::input::source::{MatchedRows, RowBatch};
use crate::join::{ensure_line_end, placeholder, Alignment, Batches};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use venn::session::run_plan::Align;
use venn::{Error, Result};

/// The most part files (each has a write buffer while the rows are distributed): as many
/// as the split's bucket files, whose writers its memory counts.
const MAX_PARTS: u64 = 1 << 8;

/// What a row takes beside its output: its hash and length in a part file, and its
/// entry (hash and place) while its part is sorted.
const ROW_OVERHEAD: u64 = 36 + 32;

/// The aligned output rows of a split file (CSV or lines: one row a key, checked when it
/// was split): its matched rows as [`SplitRows`] makes them, in the order of `alignment`.
pub struct AlignedSplitRows<'a> {
    /// The split file's rows and how they are made.
    pub rows: &'a SplitRows<'a>,
    /// How both parties order them.
    pub alignment: Alignment,
}

impl MatchedRows for AlignedSplitRows<'_> {
    fn each_batch(&self, each: &mut dyn FnMut(RowBatch) -> std::io::Result<()>) -> Result<usize> {
        let mut batches = Batches::new(each);
        let header = self.rows.split.header();
        if let Some(h) = header {
            batches.header(|out| self.rows.shape.header(out, h))?;
        }
        let mut parts = Parts::new(self.rows.split.scratch(), self.parts()?)?;
        let (mut record, mut text) = (Vec::new(), Vec::new());
        self.each_row(|number, line, key| {
            if !self.rows.matches.has(number) {
                return Ok(());
            }
            let mut values = Vec::new();
            if let Some(layout) = self.rows.shape.columns {
                // Aligned rows' keys are distinct (a split input's repeats are refused).
                let n = self.rows.matches.records_of(number, &mut record)?;
                if n != 1 {
                    return Err(Error::protocol(
                        "one record of the peer's for each matched row",
                        format!("{n}"),
                    ));
                }
                layout.decode(&record, &mut values)?;
            }
            text.clear();
            (self.rows.shape).row(&mut text, &ensure_line_end(line), true, &values);
            parts.push(&self.alignment.hash(key), &text)
        })?;
        let mut count = parts.write_sorted(&mut batches)?;
        if self.alignment.align == Align::Outer {
            let placeholder = placeholder(&self.rows.shape, header.unwrap_or_default());
            let ours = |batches: &mut Batches| -> Result<usize> {
                let mut count = 0;
                self.each_row(|number, line, _| {
                    if !self.rows.matches.has(number) {
                        let line = ensure_line_end(line);
                        batches.row(|out| self.rows.shape.row(out, &line, false, &[]))?;
                        count += 1;
                    }
                    Ok(())
                })?;
                Ok(count)
            };
            let matched = count as u64;
            count += (self.alignment).unmatched(&mut batches, matched, &placeholder, ours)?;
        }
        batches.finish()?;
        Ok(count)
    }
}

impl AlignedSplitRows<'_> {
    /// Calls `f` on each row of the split file, read again — its number, its line and
    /// its key — then refuses a file that changed since it was split.
    fn each_row(&self, mut f: impl FnMut(u64, &[u8], &[u8]) -> Result<()>) -> Result<()> {
        let (split, mut seen) = (self.rows.split, 0);
        split.each_segment(self.rows.input, self.rows.opts, |s| {
            seen = s.rows_before + s.input.rows.len() as u64;
            for (number, row) in (s.rows_before..).zip(&s.input.rows) {
                f(
                    number,
                    s.input.bytes(&row.bytes),
                    s.input.keys.get(row.key as usize),
                )?;
            }
            Ok(())
        })?;
        split.check_rows(self.rows.input, seen)
    }

    /// How many parts the matched rows go to: a power of two, each part about a
    /// segment's worth (the memory the file was split in) of the file's bytes, the peer's
    /// values and [`ROW_OVERHEAD`] a row — were every row matched. Refused if that takes
    /// more than [`MAX_PARTS`].
    fn parts(&self) -> Result<u64> {
        let size = std::fs::metadata(self.rows.input).map_or(0, |m| m.len());
        let values = self.rows.shape.columns.map_or(0, |l| l.width() as u64);
        let per_row = values.saturating_add(ROW_OVERHEAD);
        let bytes = size.saturating_add(self.rows.split.rows.saturating_mul(per_row));
        let segment = self.rows.split.segment_bytes().max(1) as u64;
        let parts = bytes.div_ceil(segment).next_power_of_two().max(1);
        match parts <= MAX_PARTS {
            true => Ok(parts),
            false => Err(Error::Usage(format!(
                "--align sorts a split file's matched rows in at most {MAX_PARTS} parts of {} \
                 MB (a segment, from --max-memory), and '{}' would need {parts}: raise \
                 --max-memory",
                segment >> 20,
                self.rows.input.display()
            ))),
        }
    }
}

/// The part files the matched rows are distributed to: each entry a row's hash, its
/// output's length (four bytes) and its output.
struct Parts {
    paths: Vec<PathBuf>,
    files: Vec<BufWriter<std::fs::File>>,
    /// The hash's top bits that choose a part.
    log2: u32,
}

impl Parts {
    /// `count` (a power of two) new part files in `dir`.
    fn new(dir: &Path, count: u64) -> Result<Parts> {
        let paths: Vec<PathBuf> = (0..count)
            .map(|p| dir.join(format!("{p:04}.aligned")))
            .collect();
        let files = (paths.iter())
            .map(|p| {
                let file = std::fs::File::create(p).map_err(Error::file("write", p))?;
                Ok(BufWriter::with_capacity(1 << 14, file))
            })
            .collect::<Result<_>>()?;
        Ok(Parts {
            paths,
            files,
            log2: count.trailing_zeros(),
        })
    }

    /// Appends the output `text` of a row whose hash is `hash` to its part.
    fn push(&mut self, hash: &[u8; 32], text: &[u8]) -> Result<()> {
        let top = u64::from_be_bytes(hash[..8].try_into().expect("8 bytes"));
        let part = top.checked_shr(64 - self.log2).unwrap_or(0) as usize;
        let len = u32::try_from(text.len())
            .map_err(|_| Error::Usage("an output row longer than 4 GiB".into()))?;
        let file = &mut self.files[part];
        let write = |file: &mut BufWriter<_>| -> std::io::Result<()> {
            file.write_all(hash)?;
            file.write_all(&len.to_le_bytes())?;
            file.write_all(text)
        };
        write(file).map_err(Error::file("write", &self.paths[part]))
    }

    /// Writes every part's rows to `batches`, part by part, each sorted by hash; removes
    /// the parts. Returns how many rows.
    fn write_sorted(self, batches: &mut Batches) -> Result<usize> {
        let mut count = 0;
        for (file, path) in self.files.into_iter().zip(&self.paths) {
            (file.into_inner().map_err(|e| e.into_error())).map_err(Error::file("write", path))?;
            let read = || -> std::io::Result<Vec<u8>> {
                let mut file = std::fs::File::open(path)?;
                let mut bytes = Vec::with_capacity(file.metadata()?.len() as usize);
                file.read_to_end(&mut bytes)?;
                Ok(bytes)
            };
            let bytes = read().map_err(Error::file("read", path))?;
            std::fs::remove_file(path).map_err(Error::file("remove", path))?;
            // Each entry: its hash, and where its output is.
            let mut entries: Vec<(&[u8], std::ops::Range<usize>)> = Vec::new();
            let mut at = 0;
            while at < bytes.len() {
                let torn = || Error::Usage(format!("'{}' is torn", path.display()));
                let head = bytes.get(at..at + 36).ok_or_else(torn)?;
                let len = u32::from_le_bytes(head[32..].try_into().expect("4 bytes")) as usize;
                let end = (at + 36).checked_add(len).filter(|&e| e <= bytes.len());
                let end = end.ok_or_else(torn)?;
                entries.push((&head[..32], at + 36..end));
                at = end;
            }
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            for (_, text) in &entries {
                batches.row(|out| out.extend_from_slice(&bytes[text.clone()]))?;
            }
            count += entries.len();
        }
        Ok(count)
    }
}
