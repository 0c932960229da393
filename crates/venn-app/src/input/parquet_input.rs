//! A Parquet file as a party's input: its keys read whole (the `parquet_file` module's
//! reader), and its matched rows handed on by position after the file itself, for an
//! output that copies them from it.

use super::parquet_file::{read_segments, ParquetFile, BATCH};
use super::source::{InputSource, RowBatch, RowCounts};
use super::{Input, KeyOptions, Row};
use crate::columns::Layout;
use std::path::Path;
use venn::session::run_plan::KeyForm;
use venn::{Items, Result};

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

/// The file first ([`RowBatch::Table`], nothing added), then its matched rows by
/// position.
impl InputSource for ParquetInput {
    fn keys(&self) -> &Items {
        &self.input.keys
    }

    fn form(&self) -> KeyForm {
        self.input.form
    }

    fn counts(&self) -> RowCounts {
        self.input.counts()
    }

    fn memory(&self) -> u64 {
        self.input.memory()
    }

    fn matched_rows(
        &self,
        member: &[bool],
        each: &mut dyn FnMut(RowBatch) -> std::io::Result<()>,
    ) -> std::io::Result<usize> {
        each(RowBatch::Table {
            file: &self.file,
            matched: false,
            columns: &[],
        })?;
        let (mut batch, mut count) = (Vec::with_capacity(BATCH), 0);
        for position in self.input.positions(member) {
            batch.push(position);
            if batch.len() == BATCH {
                each(RowBatch::Positions(&batch))?;
                count += BATCH;
                batch.clear();
            }
        }
        if !batch.is_empty() {
            each(RowBatch::Positions(&batch))?;
        }
        Ok(count + batch.len())
    }

    fn layout(&self) -> Option<&Layout> {
        self.input.layout.as_ref()
    }

    fn header(&self) -> Option<&[u8]> {
        None
    }

    fn table(&self) -> Option<&ParquetFile> {
        Some(&self.file)
    }

    fn each_record(
        &self,
        each: &mut dyn FnMut(&[Row], RowBatch) -> std::io::Result<()>,
    ) -> std::io::Result<usize> {
        self.input.each_of_records(false, each)
    }
}
