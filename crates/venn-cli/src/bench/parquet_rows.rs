//! `--files`' Parquet files: the CSV files' rows as Parquet (the key and the region as
//! strings, the amount an INT64, in row groups of 2^20 rows, Snappy-compressed), and a
//! Parquet output read back as the text of the CSV rows it holds, to be checked against
//! the expected CSV output byte for byte.

use crate::failure::{Failure, Result};
use parquet::basic::{Compression, Type as PhysicalType};
use parquet::column::reader::get_typed_column_reader;
use parquet::data_type::{ByteArray, ByteArrayType, DataType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::Arc;

/// The files' schema: the CSV files' columns.
const SCHEMA: &str = "message rows { required binary key (STRING); required int64 amount; \
                      required binary region (STRING); }";

/// The CSV files' header row.
const HEADER: &str = "key,amount,region";

/// Rows a row group.
const GROUP: usize = 1 << 20;

/// A Parquet error as the benchmark's.
fn failed(what: &Path, e: parquet::errors::ParquetError) -> Failure {
    Failure::Bench(format!("{}: {e}", what.display()))
}

/// One row group's columns.
#[derive(Default)]
struct Columns {
    keys: Vec<ByteArray>,
    amounts: Vec<i64>,
    regions: Vec<ByteArray>,
}

/// Writes the rows of the CSV file `csv` (as [`super::files::make_files`] writes them) to
/// the Parquet file `parquet`.
pub(super) fn from_csv(csv: &Path, parquet: &Path) -> Result<()> {
    let schema = Arc::new(parse_message_type(SCHEMA).map_err(|e| failed(parquet, e))?);
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(GROUP))
        .build();
    let file = std::fs::File::create(parquet)?;
    let mut writer = SerializedFileWriter::new(file, schema, Arc::new(properties))
        .map_err(|e| failed(parquet, e))?;
    let mut lines = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(csv)?).lines();
    if lines.next().transpose()?.as_deref() != Some(HEADER) {
        return Err(Failure::Bench(format!(
            "{}: not the bench's rows",
            csv.display()
        )));
    }
    let mut group = Columns::default();
    loop {
        let line = lines.next().transpose()?;
        if let Some(line) = &line {
            let mut fields = line.split(',');
            let (Some(key), Some(amount), Some(region), None) =
                (fields.next(), fields.next(), fields.next(), fields.next())
            else {
                return Err(Failure::Bench(format!("{}: '{line}'", csv.display())));
            };
            let amount = (amount.parse())
                .map_err(|_| Failure::Bench(format!("{}: '{line}'", csv.display())))?;
            group.keys.push(ByteArray::from(key));
            group.amounts.push(amount);
            group.regions.push(ByteArray::from(region));
        }
        if group.keys.len() == GROUP || (line.is_none() && !group.keys.is_empty()) {
            let mut rows = writer.next_row_group().map_err(|e| failed(parquet, e))?;
            for c in 0..3 {
                let mut column = (rows.next_column().map_err(|e| failed(parquet, e))?)
                    .ok_or_else(|| Failure::Bench("a column is missing".into()))?;
                let written = match c {
                    0 => column
                        .typed::<ByteArrayType>()
                        .write_batch(&group.keys, None, None),
                    1 => column
                        .typed::<Int64Type>()
                        .write_batch(&group.amounts, None, None),
                    _ => column
                        .typed::<ByteArrayType>()
                        .write_batch(&group.regions, None, None),
                };
                written.map_err(|e| failed(parquet, e))?;
                column.close().map_err(|e| failed(parquet, e))?;
            }
            rows.close().map_err(|e| failed(parquet, e))?;
            group = Columns::default();
        }
        if line.is_none() {
            break;
        }
    }
    writer.close().map_err(|e| failed(parquet, e))?;
    Ok(())
}

/// The rows of the Parquet file at `path` (of the bench's schema) as a CSV file of them
/// holds them, header first.
pub(super) fn as_csv(path: &Path) -> Result<Vec<u8>> {
    let reader =
        SerializedFileReader::new(std::fs::File::open(path)?).map_err(|e| failed(path, e))?;
    let types: Vec<PhysicalType> = (reader.metadata().file_metadata().schema_descr().columns())
        .iter()
        .map(|c| c.physical_type())
        .collect();
    if types
        != [
            PhysicalType::BYTE_ARRAY,
            PhysicalType::INT64,
            PhysicalType::BYTE_ARRAY,
        ]
    {
        return Err(Failure::Bench(format!(
            "{}: columns of types {types:?}, not the bench's",
            path.display()
        )));
    }
    let mut out = format!("{HEADER}\n").into_bytes();
    for g in 0..reader.num_row_groups() {
        let group = reader.get_row_group(g).map_err(|e| failed(path, e))?;
        let rows = group.metadata().num_rows() as usize;
        let column = |c: usize| group.get_column_reader(c).map_err(|e| failed(path, e));
        let read =
            |c| -> Result<Vec<ByteArray>> { read_all::<ByteArrayType>(path, column(c)?, rows) };
        let (keys, regions) = (read(0)?, read(2)?);
        let amounts = read_all::<Int64Type>(path, column(1)?, rows)?;
        for ((key, amount), region) in keys.iter().zip(&amounts).zip(&regions) {
            out.extend_from_slice(key.data());
            write!(out, ",{amount},")?;
            out.extend_from_slice(region.data());
            out.push(b'\n');
        }
    }
    Ok(out)
}

/// The `rows` values of a required column of type `T`.
fn read_all<T: DataType>(
    path: &Path,
    column: parquet::column::reader::ColumnReader,
    rows: usize,
) -> Result<Vec<T::T>> {
    let mut values = Vec::with_capacity(rows);
    let mut reader = get_typed_column_reader::<T>(column);
    let (read, _, _) =
        (reader.read_records(rows, None, None, &mut values)).map_err(|e| failed(path, e))?;
    if read != rows {
        return Err(Failure::Bench(format!(
            "{}: {read} values of a column of {rows} rows",
            path.display()
        )));
    }
    Ok(values)
}
