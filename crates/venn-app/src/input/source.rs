//! What a party's run needs of its input, whatever holds it ([`InputSource`]), and the
//! matched rows handed back once the run is over ([`MatchedRows`], in [`RowBatch`]es).
//!
//! The protocol reads the distinct keys in one store ([`Items`]), never a key at a time
//! through the trait; the matched rows come back in batches: a text file's consecutive rows
//! as one slice of its buffer (as they are in the file, nothing copied), keys given in
//! memory as their positions, a Parquet file's as its positions after the file itself. A
//! new source (a database cursor, a dataset shard) is one impl; a new form of rows one [`RowBatch`] variant, which each sink takes or
//! refuses.

use super::parquet_file::ParquetFile;
use super::{Input, Row};
use crate::columns::Layout;
use std::io;
use venn::session::run_plan::KeyForm;
use venn::{Error, Items, Result};

/// What a party's run needs of its input.
pub trait InputSource {
    /// The distinct keys, in order of first appearance, with the values of their rows.
    fn keys(&self) -> &Items;
    /// How the keys were taken: what the run plan tells the peer.
    fn form(&self) -> KeyForm;
    /// How many rows it has, and which of them were not run.
    fn counts(&self) -> RowCounts;
    /// The memory it holds, in bytes, as `--max-memory` counts it while the protocol runs.
    fn memory(&self) -> u64;
    /// Hands the rows of the keys `member` flags (one flag per key of
    /// [`keys`](Self::keys)) to `each`, in input order and in batches; returns how many
    /// rows. Fails only where `each` does.
    fn matched_rows(
        &self,
        member: &[bool],
        each: &mut dyn FnMut(RowBatch) -> io::Result<()>,
    ) -> io::Result<usize>;
    /// The columns it reveals to the peer, as records of its keys carry them, if any.
    fn layout(&self) -> Option<&Layout>;
    /// A text file's header row, as it is in the file.
    fn header(&self) -> Option<&[u8]>;
    /// A Parquet file, whose rows are handed back by position: an output copies them from
    /// it (none for other sources).
    fn table(&self) -> Option<&ParquetFile> {
        None
    }
    /// Hands each record to `each` alone, with its rows (one a key it has: one, or with
    /// `--match-any` one for each of its non-empty identifiers), in input order; returns
    /// how many records. Fails only where `each` does.
    fn each_record(
        &self,
        each: &mut dyn FnMut(&[Row], RowBatch) -> io::Result<()>,
    ) -> io::Result<usize>;
}

/// A source whose rows are handed back by position, not as text: keys given in memory,
/// or a Parquet file's rows (after the file itself, for an output that copies them). Its
/// [`InputSource`] is the [`Input`] it holds, its matched rows' positions in batches.
pub trait Positioned {
    /// The keys and rows, each row's span the empty range at its position.
    fn input(&self) -> &Input;
    /// The Parquet file the rows are copied from, if they are a file's.
    fn file(&self) -> Option<&ParquetFile>;
}

/// Positions a batch of matched rows holds, at most.
pub(crate) const POSITIONS: usize = 1 << 12;

impl<T: Positioned> InputSource for T {
    fn keys(&self) -> &Items {
        &self.input().keys
    }

    fn form(&self) -> KeyForm {
        self.input().form
    }

    fn counts(&self) -> RowCounts {
        self.input().counts()
    }

    fn memory(&self) -> u64 {
        self.input().memory()
    }

    fn matched_rows(
        &self,
        member: &[bool],
        each: &mut dyn FnMut(RowBatch) -> io::Result<()>,
    ) -> io::Result<usize> {
        if let Some(file) = self.file() {
            each(RowBatch::Table {
                file,
                matched: false,
                columns: &[],
            })?;
        }
        let (mut batch, mut count) = (Vec::with_capacity(POSITIONS), 0);
        for (position, _) in self.input().positions(member) {
            batch.push(position);
            if batch.len() == POSITIONS {
                each(RowBatch::Positions(&batch))?;
                count += POSITIONS;
                batch.clear();
            }
        }
        if !batch.is_empty() {
            each(RowBatch::Positions(&batch))?;
        }
        Ok(count + batch.len())
    }

    fn layout(&self) -> Option<&Layout> {
        self.input().layout.as_ref()
    }

    fn header(&self) -> Option<&[u8]> {
        None
    }

    fn table(&self) -> Option<&ParquetFile> {
        self.file()
    }

    fn each_record(
        &self,
        each: &mut dyn FnMut(&[Row], RowBatch) -> io::Result<()>,
    ) -> io::Result<usize> {
        self.input().each_of_records(false, each)
    }
}

/// A source's rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowCounts {
    /// Rows kept (not skipped), repeats included (with `--match-any`, records).
    pub kept: u64,
    /// Kept rows whose key had already appeared (run once, output with the others; with
    /// `--match-any`, identifiers whose value an earlier record had).
    pub duplicates: u64,
    /// Rows skipped for an empty key (with `--match-any`, records whose identifiers are
    /// all empty).
    pub skipped_empty: u64,
}

/// Matched rows, in input order, as their source holds them.
#[derive(Clone, Copy, Debug)]
pub enum RowBatch<'a> {
    /// A text file's header row, as it is in the file (before any row).
    Header(&'a [u8]),
    /// Rows of a text file that follow each other in it, as they are there: each ends
    /// with its line break but perhaps the file's last.
    Text(&'a [u8]),
    /// Positions (0-based, ascending) of rows given in memory, or of the rows of the
    /// [`Table`](Self::Table) handed on before them.
    Positions(&'a [usize]),
    /// A Parquet file, before any of its rows (which follow by position, as
    /// [`Positions`](Self::Positions) or [`Joined`](Self::Joined)), and the columns a
    /// join adds to each of them.
    Table {
        /// The file the rows are copied from.
        file: &'a ParquetFile,
        /// Whether a `matched` column is added (a `left` join).
        matched: bool,
        /// The peer's columns added, as named, with their widths.
        columns: &'a [(String, u16)],
    },
    /// A row of the [`Table`](Self::Table) handed on before it, by position (ascending,
    /// repeated for a row output more than once), with what a join adds to it.
    Joined {
        /// The row's position in the file (0-based).
        position: usize,
        /// Whether the peer has its key.
        matched: bool,
        /// The peer's values for its key (none where it does not have it).
        values: &'a [&'a [u8]],
    },
}

/// The matched rows of a finished run, fetched as a sink takes them.
pub trait MatchedRows {
    /// Hands every matched row to `each`, in input order and in batches; returns how many
    /// rows. An error of `each` comes back as [`Error::Io`], unchanged.
    fn each_batch(&self, each: &mut dyn FnMut(RowBatch) -> io::Result<()>) -> Result<usize>;
}

/// The rows of the keys a run matched in a source held whole: those of `source`'s keys
/// that `intersection` names (indices into its keys).
pub struct Matching<'a> {
    /// Where the keys and their rows come from.
    pub source: &'a dyn InputSource,
    /// The matched keys, as indices into the source's keys.
    pub intersection: &'a [usize],
}

impl MatchedRows for Matching<'_> {
    fn each_batch(&self, each: &mut dyn FnMut(RowBatch) -> io::Result<()>) -> Result<usize> {
        let member = members(self.source.keys().len(), self.intersection);
        self.source.matched_rows(&member, each).map_err(Error::Io)
    }
}

/// Which of `keys` keys `intersection` names, as a flag per key.
pub fn members(keys: usize, intersection: &[usize]) -> Vec<bool> {
    let mut member = vec![false; keys];
    for &i in intersection {
        member[i] = true;
    }
    member
}
