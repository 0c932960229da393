//! A Parquet column's cells as the text a CSV export of the same table holds, so that a
//! party reading Parquet and one reading that CSV take equal keys (and reveal equal
//! values): booleans `true`/`false`, integers in decimal (an unsigned one as unsigned),
//! dates `YYYY-MM-DD`, decimals with their scale's digits after the point (`-1.50`),
//! UUIDs in their hyphenated lower-case form, strings and other byte arrays as their bytes
//! (a string's UTF-8), and a null as the empty field. Types without one text that every
//! exporter writes alike (floating point, timestamps, times, INT96) are refused, naming the
//! column: cast such a column to a string or an integer first.
//!
//! The types and their encodings are the Parquet format's (apache/parquet-format,
//! `LogicalTypes.md`): a logical type first, the legacy converted type where a file has
//! only that.

use parquet::basic::{ConvertedType, LogicalType, Type as PhysicalType};
use parquet::column::reader::{ColumnReader, ColumnReaderImpl};
use parquet::data_type::{
    BoolType, ByteArray, ByteArrayType, DataType, FixedLenByteArray, FixedLenByteArrayType,
    Int32Type, Int64Type,
};
use parquet::schema::types::ColumnDescriptor;
use std::io::Write as _;

/// How a column's values become text, beside what their physical type says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TextForm {
    /// As the physical type has it: `true`/`false`, a signed integer, a byte array's bytes.
    Plain,
    /// An integer stored in a signed type but unsigned (`INT(n, false)`, `UINT_n`).
    Unsigned,
    /// Days since 1970-01-01, as `YYYY-MM-DD`.
    Date,
    /// An unscaled integer (a big-endian two's-complement byte array, or an INT32/INT64)
    /// with this many digits after the decimal point.
    Decimal(u32),
    /// Sixteen bytes, as `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    Uuid,
}

/// The most digits after the point a decimal may have: an unscaled value of 16 bytes has
/// at most 39 digits.
const MAX_SCALE: i32 = 38;

impl TextForm {
    /// The text form of `column`'s values, or why it has none (a sentence naming its type).
    pub(crate) fn of(column: &ColumnDescriptor) -> Result<TextForm, String> {
        let physical = column.physical_type();
        let logical = column.logical_type_ref();
        let converted = column.converted_type();
        let decimal = || match column.type_scale() {
            s @ 0..=MAX_SCALE => Ok(TextForm::Decimal(s as u32)),
            s => Err(format!("a decimal of scale {s}, beyond {MAX_SCALE}")),
        };
        let refused = |what: String| {
            Err(format!(
                "{what}, which has no one text form in CSV (cast it to a string or an integer)"
            ))
        };
        use PhysicalType as P;
        match (physical, logical) {
            (P::BOOLEAN, _) => Ok(TextForm::Plain),
            (P::INT32 | P::INT64, Some(LogicalType::Integer(i))) => match i.is_signed {
                true => Ok(TextForm::Plain),
                false => Ok(TextForm::Unsigned),
            },
            (P::INT32, Some(LogicalType::Date)) => Ok(TextForm::Date),
            (P::INT32 | P::INT64 | P::BYTE_ARRAY | P::FIXED_LEN_BYTE_ARRAY, _)
                if matches!(logical, Some(LogicalType::Decimal(_)))
                    || converted == ConvertedType::DECIMAL =>
            {
                decimal()
            }
            (P::FIXED_LEN_BYTE_ARRAY, Some(LogicalType::Uuid)) if column.type_length() == 16 => {
                Ok(TextForm::Uuid)
            }
            (P::BYTE_ARRAY, Some(LogicalType::String | LogicalType::Enum))
            | (P::BYTE_ARRAY, Some(LogicalType::Json | LogicalType::Bson)) => Ok(TextForm::Plain),
            (P::INT32 | P::INT64 | P::BYTE_ARRAY | P::FIXED_LEN_BYTE_ARRAY, None) => {
                match converted {
                    ConvertedType::NONE
                    | ConvertedType::INT_8
                    | ConvertedType::INT_16
                    | ConvertedType::INT_32
                    | ConvertedType::INT_64
                    | ConvertedType::UTF8
                    | ConvertedType::ENUM
                    | ConvertedType::JSON
                    | ConvertedType::BSON => Ok(TextForm::Plain),
                    ConvertedType::UINT_8
                    | ConvertedType::UINT_16
                    | ConvertedType::UINT_32
                    | ConvertedType::UINT_64 => Ok(TextForm::Unsigned),
                    ConvertedType::DATE if physical == P::INT32 => Ok(TextForm::Date),
                    other => refused(format!("{physical} annotated {other}")),
                }
            }
            (_, Some(logical)) => refused(format!("{physical} annotated {logical:?}")),
            (_, None) => refused(format!("{physical}")),
        }
    }

    /// The most bytes a value of `column` in this form takes as text, if it is bounded
    /// (byte arrays are not).
    pub(crate) fn widest(self, column: &ColumnDescriptor) -> Option<u64> {
        match (self, column.physical_type()) {
            (TextForm::Date, _) => Some(11),
            (TextForm::Uuid, _) => Some(36),
            (TextForm::Decimal(_), PhysicalType::INT32 | PhysicalType::INT64) => Some(22),
            (TextForm::Decimal(_), PhysicalType::FIXED_LEN_BYTE_ARRAY) => Some(42),
            (_, PhysicalType::BOOLEAN) => Some(5),
            (_, PhysicalType::INT32) => Some(11),
            (_, PhysicalType::INT64) => Some(20),
            (_, PhysicalType::FIXED_LEN_BYTE_ARRAY) => Some(column.type_length().max(0) as u64),
            _ => None,
        }
    }
}

/// A value of a physical type, written as text in a [`TextForm`].
trait Cell {
    /// Appends the value's text to `out`, or says why it has none.
    fn text(&self, form: TextForm, out: &mut Vec<u8>) -> Result<(), String>;
}

impl Cell for bool {
    fn text(&self, _: TextForm, out: &mut Vec<u8>) -> Result<(), String> {
        out.extend_from_slice(if *self { b"true" } else { b"false" });
        Ok(())
    }
}

impl Cell for i32 {
    fn text(&self, form: TextForm, out: &mut Vec<u8>) -> Result<(), String> {
        match form {
            TextForm::Unsigned => integer(*self as u32, out),
            TextForm::Date => date(*self, out)?,
            TextForm::Decimal(scale) => decimal(*self as i128, scale, out),
            TextForm::Plain | TextForm::Uuid => integer(*self, out),
        }
        Ok(())
    }
}

impl Cell for i64 {
    fn text(&self, form: TextForm, out: &mut Vec<u8>) -> Result<(), String> {
        match form {
            TextForm::Unsigned => integer(*self as u64, out),
            TextForm::Decimal(scale) => decimal(*self as i128, scale, out),
            TextForm::Plain | TextForm::Date | TextForm::Uuid => integer(*self, out),
        }
        Ok(())
    }
}

impl Cell for ByteArray {
    fn text(&self, form: TextForm, out: &mut Vec<u8>) -> Result<(), String> {
        bytes(self.data(), form, out)
    }
}

impl Cell for FixedLenByteArray {
    fn text(&self, form: TextForm, out: &mut Vec<u8>) -> Result<(), String> {
        bytes(self.data(), form, out)
    }
}

/// Appends an integer in decimal.
fn integer(value: impl itoa::Integer, out: &mut Vec<u8>) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

/// Appends days since 1970-01-01 as `YYYY-MM-DD`.
fn date(days: i32, out: &mut Vec<u8>) -> Result<(), String> {
    /// The Julian day of 1970-01-01.
    const EPOCH: i32 = 2_440_588;
    let date = days
        .checked_add(EPOCH)
        .and_then(|d| time::Date::from_julian_day(d).ok())
        .ok_or_else(|| format!("the date {days} days from 1970-01-01 is out of range"))?;
    let (year, month, day) = (date.year(), u8::from(date.month()), date.day());
    write!(out, "{year:04}-{month:02}-{day:02}").expect("a Vec takes every write");
    Ok(())
}

/// Appends `unscaled` × 10^-`scale` in decimal, with `scale` digits after the point.
fn decimal(unscaled: i128, scale: u32, out: &mut Vec<u8>) {
    if unscaled < 0 {
        out.push(b'-');
    }
    let digits = unscaled.unsigned_abs().to_string();
    let scale = scale as usize;
    if scale == 0 {
        out.extend_from_slice(digits.as_bytes());
    } else if digits.len() <= scale {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', scale - digits.len()));
        out.extend_from_slice(digits.as_bytes());
    } else {
        let (whole, fraction) = digits.split_at(digits.len() - scale);
        out.extend_from_slice(whole.as_bytes());
        out.push(b'.');
        out.extend_from_slice(fraction.as_bytes());
    }
}

/// Appends a byte array's text: its bytes, or the decimal or UUID it holds.
fn bytes(data: &[u8], form: TextForm, out: &mut Vec<u8>) -> Result<(), String> {
    match form {
        TextForm::Decimal(scale) => {
            if data.len() > 16 {
                return Err(format!(
                    "a decimal of {} bytes, more than the 16 read here",
                    data.len()
                ));
            }
            // Big-endian two's complement, sign-extended to 16 bytes.
            let fill = match data.first() {
                Some(b) if b & 0x80 != 0 => 0xFF,
                _ => 0,
            };
            let mut wide = [fill; 16];
            wide[16 - data.len()..].copy_from_slice(data);
            decimal(i128::from_be_bytes(wide), scale, out);
        }
        TextForm::Uuid => {
            for (i, b) in data.iter().enumerate() {
                if matches!(i, 4 | 6 | 8 | 10) {
                    out.push(b'-');
                }
                write!(out, "{b:02x}").expect("a Vec takes every write");
            }
        }
        TextForm::Plain | TextForm::Unsigned | TextForm::Date => out.extend_from_slice(data),
    }
    Ok(())
}

/// A column's cells as text, a batch of rows at a time: each row's cell ends at its
/// `ends` entry in `bytes` (a null's is empty).
#[derive(Default)]
pub(crate) struct Texts {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Texts {
    /// The `i`th row's cell.
    pub(crate) fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }
}

/// One top-level column of a row group, read as text a batch of rows at a time.
pub(crate) struct CellReader {
    values: Values,
    form: TextForm,
    /// Whether a row may hold a null (the column is optional): then each row has a
    /// definition level, 1 for a value.
    optional: bool,
    levels: Vec<i16>,
}

/// A column's typed reader and the buffer of its values.
enum Values {
    Bool(ColumnReaderImpl<BoolType>, Vec<bool>),
    Int32(ColumnReaderImpl<Int32Type>, Vec<i32>),
    Int64(ColumnReaderImpl<Int64Type>, Vec<i64>),
    Bytes(ColumnReaderImpl<ByteArrayType>, Vec<ByteArray>),
    Fixed(
        ColumnReaderImpl<FixedLenByteArrayType>,
        Vec<FixedLenByteArray>,
    ),
}

impl CellReader {
    /// Reads `reader`'s values (of a non-repeated column, whose text form is `form`, and
    /// which is `optional` or not).
    pub(crate) fn new(
        reader: ColumnReader,
        form: TextForm,
        optional: bool,
    ) -> Result<Self, String> {
        let values = match reader {
            ColumnReader::BoolColumnReader(r) => Values::Bool(r, Vec::new()),
            ColumnReader::Int32ColumnReader(r) => Values::Int32(r, Vec::new()),
            ColumnReader::Int64ColumnReader(r) => Values::Int64(r, Vec::new()),
            ColumnReader::ByteArrayColumnReader(r) => Values::Bytes(r, Vec::new()),
            ColumnReader::FixedLenByteArrayColumnReader(r) => Values::Fixed(r, Vec::new()),
            _ => return Err("a column of a type without one text form".into()),
        };
        Ok(CellReader {
            values,
            form,
            optional,
            levels: Vec::new(),
        })
    }

    /// Reads the next `rows` rows (fewer at the row group's end) into `out` (cleared
    /// first); returns how many.
    pub(crate) fn read(&mut self, rows: usize, out: &mut Texts) -> Result<usize, String> {
        let (form, optional, levels) = (self.form, self.optional, &mut self.levels);
        match &mut self.values {
            Values::Bool(r, v) => read_texts::<BoolType>(r, v, levels, optional, form, rows, out),
            Values::Int32(r, v) => read_texts::<Int32Type>(r, v, levels, optional, form, rows, out),
            Values::Int64(r, v) => read_texts::<Int64Type>(r, v, levels, optional, form, rows, out),
            Values::Bytes(r, v) => {
                read_texts::<ByteArrayType>(r, v, levels, optional, form, rows, out)
            }
            Values::Fixed(r, v) => {
                read_texts::<FixedLenByteArrayType>(r, v, levels, optional, form, rows, out)
            }
        }
    }
}

/// Reads up to `rows` rows of a non-repeated column through `reader` (its values into
/// `values`, its definition levels into `levels` if it is `optional`), as text in `out`.
fn read_texts<T: DataType>(
    reader: &mut ColumnReaderImpl<T>,
    values: &mut Vec<T::T>,
    levels: &mut Vec<i16>,
    optional: bool,
    form: TextForm,
    rows: usize,
    out: &mut Texts,
) -> Result<usize, String>
where
    T::T: Cell,
{
    values.clear();
    levels.clear();
    out.bytes.clear();
    out.ends.clear();
    let (read, _, _) = reader
        .read_records(rows, optional.then_some(&mut *levels), None, values)
        .map_err(|e| e.to_string())?;
    let (mut next, valued) = (values.iter(), |row: usize| !optional || levels[row] > 0);
    for row in 0..read {
        if valued(row) {
            let value = next.next().ok_or("fewer values than rows")?;
            value.text(form, &mut out.bytes)?;
        }
        out.ends.push(out.bytes.len());
    }
    Ok(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(cell: &impl Cell, form: TextForm) -> String {
        let mut out = Vec::new();
        cell.text(form, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Each form writes what a CSV export of the same value holds.
    #[test]
    fn cells_are_written_as_a_csv_export_writes_them() {
        assert_eq!(text(&true, TextForm::Plain), "true");
        assert_eq!(text(&-42i32, TextForm::Plain), "-42");
        assert_eq!(text(&-1i32, TextForm::Unsigned), "4294967295");
        assert_eq!(text(&-1i64, TextForm::Unsigned), "18446744073709551615");
        assert_eq!(text(&i64::MIN, TextForm::Plain), "-9223372036854775808");
        assert_eq!(text(&0i32, TextForm::Date), "1970-01-01");
        assert_eq!(text(&19_753i32, TextForm::Date), "2024-01-31");
        assert_eq!(text(&-1i32, TextForm::Date), "1969-12-31");
        for (unscaled, scale, shown) in [
            (12345i64, 2, "123.45"),
            (-5, 2, "-0.05"),
            (0, 2, "0.00"),
            (7, 0, "7"),
            (-120, 1, "-12.0"),
        ] {
            assert_eq!(text(&unscaled, TextForm::Decimal(scale)), shown);
            let be = (unscaled as i128).to_be_bytes();
            let short = FixedLenByteArray::from(be[12..].to_vec());
            assert_eq!(text(&short, TextForm::Decimal(scale)), shown);
        }
        let uuid = ByteArray::from((0u8..16).collect::<Vec<_>>());
        assert_eq!(
            text(&uuid, TextForm::Uuid),
            "00010203-0405-0607-0809-0a0b0c0d0e0f"
        );
        assert_eq!(
            text(&ByteArray::from("Ünïcode"), TextForm::Plain),
            "Ünïcode"
        );
        let mut out = Vec::new();
        assert!(i32::MAX.text(TextForm::Date, &mut out).is_err());
        assert!(ByteArray::from(vec![1u8; 17])
            .text(TextForm::Decimal(0), &mut out)
            .is_err());
    }
}
