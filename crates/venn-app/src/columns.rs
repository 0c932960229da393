//! The partner's columns for matched rows (PSI with payloads), as the tool reads and
//! writes them. A sender names the columns it reveals (`--reveal-columns segment,score:32`),
//! the receiver those it asks for (`--peer-columns segment,score`); the run plan carries
//! both ([`venn::session::run_plan::Columns`]) and refuses a run where they differ.
//!
//! Each revealed row travels as one fixed-width record ([`Layout`]): per column, the
//! value's length (two bytes) and the value, zero-padded to the column's width — the width
//! given (`score:32`), or the longest value of the column rounded up to 16 bytes. Every
//! record of a run has the same width, which the peer learns (and so, without a width
//! given, the longest value's length to 16 bytes); the values' own lengths stay inside
//! the padded records.

use venn::session::run_plan::Columns;
use venn::{Error, Result};

/// The name of the column a `left` join adds (whether the peer has the row's key).
pub const MATCHED_COLUMN: &str = "matched";

/// The name of the column `--match-any` adds to a matched record: which of its
/// identifiers the peer has, as `--match-any` names them, joined by `|`.
pub const MATCHED_ON_COLUMN: &str = "matched_on";

/// Values are padded to a multiple of this many bytes where no width is given.
const PAD_TO: usize = 16;

/// A column a party reveals, as `--reveal-columns` names it: `name`, or `name:WIDTH` for
/// values padded to `WIDTH` bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revealed {
    /// The column's name in the input's header.
    pub name: String,
    /// The bytes its values are padded to; `None`: the longest value's length, rounded up
    /// to 16.
    pub width: Option<u16>,
}

impl Revealed {
    /// Reads `name` or `name:WIDTH` (a name may itself hold `:` where what follows the
    /// last one is not a number).
    pub fn parse(text: &str) -> Result<Revealed> {
        let (name, width) = match text.rsplit_once(':') {
            Some((name, digits))
                if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) =>
            {
                let width = digits
                    .parse::<u16>()
                    .ok()
                    .filter(|&w| w > 0)
                    .ok_or_else(|| {
                        Error::Usage(format!(
                            "the width of the column '{name}' is 1 to {} bytes, not {digits}",
                            u16::MAX
                        ))
                    })?;
                (name, Some(width))
            }
            _ => (text, None),
        };
        if name.is_empty() {
            return Err(Error::Usage(format!("'{text}' names no column")));
        }
        Ok(Revealed {
            name: name.into(),
            width,
        })
    }
}

/// Reads `--reveal-columns`' list, refusing a column named twice.
pub fn parse_revealed(list: &[String]) -> Result<Vec<Revealed>> {
    let columns: Vec<Revealed> = list
        .iter()
        .map(|t| Revealed::parse(t))
        .collect::<Result<_>>()?;
    for (i, c) in columns.iter().enumerate() {
        if columns[..i].iter().any(|d| d.name == c.name) {
            return Err(Error::Usage(format!(
                "the column '{}' is revealed twice",
                c.name
            )));
        }
    }
    Ok(columns)
}

/// The width a column's values are padded to when none is given: the longest value's
/// length rounded up to 16 bytes (16 for a column of empty values).
pub fn padded_width(longest: usize) -> usize {
    longest.max(1).div_ceil(PAD_TO) * PAD_TO
}

/// The record of a revealed row: its columns in order, each a two-byte length and the
/// value padded to the column's width.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Each column's name and width, in order.
    pub columns: Vec<(String, u16)>,
}

impl Layout {
    /// The layout of records carrying `columns` (names and widths), refused where a run
    /// could not carry it ([`Columns::new`]).
    pub fn new(columns: Vec<(String, u16)>) -> Result<Layout> {
        Columns::new(columns.clone(), Vec::new())?;
        Ok(Layout { columns })
    }

    /// A record's bytes.
    pub fn width(&self) -> usize {
        self.columns.iter().map(|(_, w)| 2 + *w as usize).sum()
    }

    /// Writes `values` (one per column, each within its column's width) as a record
    /// into `out` ([`width`](Self::width) bytes).
    pub fn encode(&self, values: &[&[u8]], out: &mut [u8]) {
        self.encode_each(values.iter().copied(), out)
    }

    /// [`encode`](Self::encode) of `values` given one after another.
    pub fn encode_each<'v>(&self, values: impl IntoIterator<Item = &'v [u8]>, out: &mut [u8]) {
        let mut at = 0;
        for ((_, width), value) in self.columns.iter().zip(values) {
            let width = *width as usize;
            assert!(value.len() <= width, "a value within its column's width");
            out[at..at + 2].copy_from_slice(&(value.len() as u16).to_le_bytes());
            out[at + 2..at + 2 + value.len()].copy_from_slice(value);
            out[at + 2 + value.len()..at + 2 + width].fill(0);
            at += 2 + width;
        }
    }

    /// The values of a record the peer sent: each column's, its length checked against the
    /// column's width, in place of what `values` held.
    pub fn decode<'a>(&self, record: &'a [u8], values: &mut Vec<&'a [u8]>) -> Result<()> {
        let mut at = 0;
        values.clear();
        for (name, width) in &self.columns {
            let width = *width as usize;
            let field = &record[at..at + 2 + width];
            let len = u16::from_le_bytes([field[0], field[1]]) as usize;
            if len > width {
                return Err(Error::protocol(
                    format!("a value of the peer's column '{name}' within its {width} bytes"),
                    format!("{len} bytes"),
                ));
            }
            values.push(&field[2..2 + len]);
            at += 2 + width;
        }
        Ok(())
    }
}

/// Appends `value` to a CSV row as one field: quoted (its quotes doubled) where it holds
/// the `delimiter`, a quote or a line break, as it is otherwise.
pub fn push_field(row: &mut Vec<u8>, value: &[u8], delimiter: u8) {
    let needs_quotes = value
        .iter()
        .any(|&b| b == delimiter || matches!(b, b'"' | b'\n' | b'\r'));
    if !needs_quotes {
        row.extend_from_slice(value);
        return;
    }
    row.push(b'"');
    for &b in value {
        if b == b'"' {
            row.push(b'"');
        }
        row.push(b);
    }
    row.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_named_with_or_without_a_width() {
        assert_eq!(
            Revealed::parse("score:32").unwrap(),
            Revealed {
                name: "score".into(),
                width: Some(32)
            }
        );
        assert_eq!(Revealed::parse("a:b").unwrap().name, "a:b");
        assert_eq!(Revealed::parse("t:").unwrap().name, "t:");
        for bad in ["x:0", "x:70000", ":5", ""] {
            assert!(Revealed::parse(bad).is_err(), "{bad}");
        }
        let twice = parse_revealed(&["a".into(), "a:16".into()]).unwrap_err();
        assert!(twice.to_string().contains("revealed twice"), "{twice}");
        assert_eq!(
            [0, 1, 16, 17].map(padded_width),
            [16, 16, 16, 32],
            "rounded up to 16"
        );
    }

    #[test]
    fn records_round_trip_and_a_peers_length_is_checked() {
        let layout = Layout::new(vec![("a".into(), 3), ("b".into(), 16)]).unwrap();
        assert_eq!(layout.width(), 23);
        let mut record = vec![0xAA; 23];
        layout.encode(&[b"xy", b""], &mut record);
        let mut values = vec![&b"left over"[..]];
        layout.decode(&record, &mut values).unwrap();
        assert_eq!(values, [&b"xy"[..], b""]);
        record[0] = 4;
        let err = layout.decode(&record, &mut Vec::new());
        assert!(err.is_err(), "a length past the width");
        assert!(Layout::new(vec![("a".into(), u16::MAX), ("b".into(), 2)]).is_err());
    }

    #[test]
    fn fields_are_quoted_only_when_they_must_be() {
        let mut row = Vec::new();
        for value in [
            &b"plain"[..],
            b"a,b",
            b"say \"hi\"",
            b"two\nlines",
            b"semi;colon",
        ] {
            push_field(&mut row, value, b',');
            row.push(b'|');
        }
        assert_eq!(
            String::from_utf8(row).unwrap(),
            "plain|\"a,b\"|\"say \"\"hi\"\"\"|\"two\nlines\"|semi;colon|"
        );
    }
}
