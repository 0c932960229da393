//! A Parquet file as a party's input: its keys read whole (the `parquet_file` module's
//! reader), and its matched rows handed on by position after the file itself, for an
//! output that copies them from it.

use super::parquet_file::{read_segments, ParquetFile};
use super::source::Positioned;
use super::{Input, KeyOptions};
use std::path::Path;
use venn::Result;

/// A Parquet file read for its keys: an [`Input`] without a text buffer, each row's span
/// the empty range at its position in the file, and the file, open, for the output.
pub struct ParquetInput {
    file: ParquetFile,
    input: Input,
}

impl ParquetInput {
    /// Reads the keys (and values and revealed columns) `opts` names from the Parquet
    /// file at `path`.
    pub fn read(path: &Path, opts: &KeyOptions) -> Result<ParquetInput> {
        let file = ParquetFile::open(path)?;
        let mut whole = None;
        read_segments(&file, opts, u64::MAX, |input, _| {
            whole = Some(input);
            Ok(())
        })?;
        let input = whole.expect("one segment holds every row");
        Ok(ParquetInput { file, input })
    }
}

/// The file first ([`super::source::RowBatch::Table`], nothing added), then its matched
/// rows by position.
impl Positioned for ParquetInput {
    fn input(&self) -> &Input {
        &self.input
    }

    fn file(&self) -> Option<&ParquetFile> {
        Some(&self.file)
    }
}
