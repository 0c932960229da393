//! Rows and their keys collected as a file (or memory) gives them: keys normalised, empty
//! ones refused or skipped, values checked, the values of revealed columns kept; the keys
//! deduplicated once all are in, each with the record of its first row's revealed values
//! and its later rows' set aside beside them (all go to the peer: [`venn::Items::repeated_records`]).

use super::{Input, KeyOptions, Row, MAX_VALUE};
use crate::columns::{padded_width, Layout};
use std::ops::Range;
use venn::util::memory::with_huge_capacity;
use venn::{Error, Items, Result};

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
pub(super) struct Builder<'a> {
    pub(super) opts: &'a KeyOptions,
    /// The key of each row in `rows`, repeats included (until `finish`).
    keys: Items,
    /// The values of each row in `rows`, row by row, if the rows carry values.
    values: Option<Vec<u64>>,
    /// The values of the revealed columns of each row in `rows`, if any are revealed.
    revealed: Option<Cells>,
    rows: Vec<Row>,
    skipped_empty: usize,
    scratch: Vec<u8>,
    field_scratch: Vec<u8>,
}

impl<'a> Builder<'a> {
    /// Room for `expected_rows` rows (with `--match-any`, their identifiers' rows) whose
    /// keys take about `key_bytes` bytes in all (more is taken as needed: lower-cased text
    /// that lengthens).
    pub(super) fn new(opts: &'a KeyOptions, expected_rows: usize, key_bytes: usize) -> Self {
        let expected_rows = super::footprint::keyed_rows(opts, expected_rows as u64) as usize;
        Builder {
            opts,
            keys: Items::with_capacity(expected_rows, key_bytes),
            values: (!opts.value_columns.is_empty())
                .then(|| with_huge_capacity(expected_rows * opts.value_columns.len())),
            revealed: (!opts.reveal_columns.is_empty()).then(|| Cells {
                bytes: Vec::new(),
                ends: with_huge_capacity(expected_rows * opts.reveal_columns.len()),
                longest: vec![0; opts.reveal_columns.len()],
            }),
            rows: with_huge_capacity(expected_rows),
            skipped_empty: 0,
            scratch: Vec::new(),
            field_scratch: Vec::new(),
        }
    }

    /// Adds the row `bytes` (line `line`) whose key is `key` (already normalised) for
    /// identifier `identifier` (0 but with `--match-any`), whose values are `values`, if
    /// the rows carry values, and whose revealed columns hold `revealed`.
    fn add_key(
        &mut self,
        line: u64,
        (key, identifier): (&[u8], u16),
        values: Values,
        revealed: &[&[u8]],
        bytes: Range<usize>,
    ) -> Result<()> {
        if key.is_empty() {
            if self.opts.skip_empty {
                self.skipped_empty += 1;
                return Ok(());
            }
            let what = match self.opts.match_any {
                true => "every identifier (--match-any) empty",
                false => "empty key",
            };
            return Err(Error::Input {
                line,
                reason: format!(
                    "{what} (--skip-empty, in Python skip_empty=True, skips such rows)"
                ),
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
        if let Some(cells) = &mut self.revealed {
            cells.push(line, revealed, self.opts)?;
        }
        self.keys.push(key);
        self.rows.push(Row {
            key: index,
            identifier,
            bytes,
        });
        Ok(())
    }

    /// Adds a row whose key is made of `fields` (raw), normalising each, whose values are
    /// `values` and whose revealed columns hold `revealed` (as they are). With
    /// `--match-any` the fields are its identifiers: a row for each non-empty one, its
    /// key the identifier's number (a byte) and its value, each with the record's
    /// revealed values.
    pub(super) fn add_fields(
        &mut self,
        line: u64,
        fields: &[&[u8]],
        values: Values,
        revealed: &[&[u8]],
        bytes: Range<usize>,
    ) -> Result<()> {
        let (mut key_buf, mut field_buf) = (
            std::mem::take(&mut self.scratch),
            std::mem::take(&mut self.field_scratch),
        );
        let result = match fields {
            _ if self.opts.match_any => {
                let buffers = (&mut key_buf, &mut field_buf);
                self.add_identifiers(line, fields, revealed, bytes, buffers)
            }
            [one] => {
                let key = normalise(one, self.opts, &mut key_buf);
                self.add_key(line, (key, 0), values, revealed, bytes)
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
                self.add_key(line, (key, 0), values, revealed, bytes)
            }
        };
        (self.scratch, self.field_scratch) = (key_buf, field_buf);
        result
    }

    /// Adds a record's rows for `--match-any`: one for each of its non-empty
    /// `identifiers`, or one with an empty key if it has none (keys made in `key`, values
    /// normalised in `value`).
    fn add_identifiers(
        &mut self,
        line: u64,
        identifiers: &[&[u8]],
        revealed: &[&[u8]],
        bytes: Range<usize>,
        (key, value): (&mut Vec<u8>, &mut Vec<u8>),
    ) -> Result<()> {
        let mut added = false;
        for (i, raw) in identifiers.iter().enumerate() {
            let v = normalise(raw, self.opts, value);
            if v.is_empty() {
                continue;
            }
            key.clear();
            key.push(i as u8);
            key.extend_from_slice(v);
            let id = (&key[..], i as u16);
            self.add_key(line, id, Values::Numbers(&[]), revealed, bytes.clone())?;
            added = true;
        }
        match added {
            true => Ok(()),
            false => self.add_key(line, (&[], 0), Values::Numbers(&[]), revealed, bytes),
        }
    }

    /// The input, with each distinct key once (in order of first appearance), the values
    /// of its rows added and the records of its rows' revealed columns (the first's, and
    /// the later rows' set aside: [`Items::repeated_records`]); refused if
    /// the revealed columns' records are wider than a run carries.
    pub(super) fn finish(mut self, data: Vec<u8>, header: Option<Range<usize>>) -> Result<Input> {
        if let Some(values) = self.values.take() {
            let (keys, columns) = (
                std::mem::take(&mut self.keys),
                self.opts.value_columns.len(),
            );
            self.keys = (keys.with_value_columns(values, columns)).expect("the values of each row");
        }
        let layout = match self.revealed.take() {
            Some(cells) => {
                let (layout, records) = cells.records(self.opts)?;
                let keys = std::mem::take(&mut self.keys);
                self.keys = keys.with_records(records, layout.width())?;
                Some(layout)
            }
            None => None,
        };
        let distinct = self.keys.deduplicate();
        for row in &mut self.rows {
            row.key = distinct[row.key as usize];
        }
        Ok(Input {
            data,
            header,
            duplicates: self.rows.len() - self.keys.len(),
            rows: self.rows,
            keys: self.keys,
            skipped_empty: self.skipped_empty,
            form: self.opts.form(),
            layout,
        })
    }
}

/// The values of the revealed columns, row by row and column by column, as they are.
struct Cells {
    bytes: Vec<u8>,
    /// Where each value ends in `bytes`.
    ends: Vec<usize>,
    /// The longest value of each column.
    longest: Vec<usize>,
}

impl Cells {
    /// Keeps a row's `values` (line `line`), each within its column's width if one is
    /// given.
    fn push(&mut self, line: u64, values: &[&[u8]], opts: &KeyOptions) -> Result<()> {
        for ((value, column), longest) in values
            .iter()
            .zip(&opts.reveal_columns)
            .zip(&mut self.longest)
        {
            let most = column.width.unwrap_or(u16::MAX) as usize;
            if value.len() > most {
                return Err(Error::Input {
                    line,
                    reason: format!(
                        "the value of the revealed column '{}' takes {} bytes, more than \
                         its width of {most} (--reveal-columns {}:N widens it)",
                        column.name,
                        value.len(),
                        column.name
                    ),
                });
            }
            *longest = (*longest).max(value.len());
            self.bytes.extend_from_slice(value);
            self.ends.push(self.bytes.len());
        }
        Ok(())
    }

    /// The columns' layout (each width given, or its longest value's padded) and each
    /// row's record in it, row by row.
    fn records(self, opts: &KeyOptions) -> Result<(Layout, Vec<u8>)> {
        let columns = (opts.reveal_columns.iter().zip(&self.longest))
            .map(|(c, &longest)| {
                let width = c.width.map_or(padded_width(longest), usize::from);
                (c.name.clone(), width.min(u16::MAX as usize) as u16)
            })
            .collect();
        let layout = Layout::new(columns)?;
        let (per_row, width) = (opts.reveal_columns.len(), layout.width());
        let rows = self.ends.len() / per_row.max(1);
        let mut records = with_huge_capacity(rows * width);
        records.resize(rows * width, 0);
        let mut start = 0;
        let mut values: Vec<&[u8]> = Vec::with_capacity(per_row);
        for (ends, record) in self.ends.chunks(per_row).zip(records.chunks_mut(width)) {
            values.clear();
            for &end in ends {
                values.push(&self.bytes[start..end]);
                start = end;
            }
            layout.encode(&values, record);
        }
        Ok((layout, records))
    }
}

/// A row's values, as the rows carry them (none: they carry no values).
#[derive(Clone, Copy)]
pub(super) enum Values<'a> {
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
