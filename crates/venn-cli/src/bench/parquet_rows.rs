//! `--files`' Parquet files: the CSV files' rows as Parquet (the key and the region as
//! strings, the amount an INT64, in row groups of 2^20 rows, Snappy-compressed; the
//! columns named as the CSV file's header names them), and a Parquet output read back as
//! the text of the CSV rows it holds (with the columns a join adds: `matched` as
//! `true`/`false`, a null empty), to be checked against the expected CSV output byte for
//! byte.

use crate::failure::{Failure, Result};
use parquet::basic::Compression;
use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::Arc;

/// The files' schema: the CSV file's three columns (a key, an amount, a region) under the
/// names of its `header`, which must be plain names.
fn schema(header: &str) -> Option<String> {
    let names: Vec<&str> = header.split(',').collect();
    let plain = |n: &&str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric());
    let [key, amount, region] = names[..] else {
        return None;
    };
    names.iter().all(plain).then(|| {
        format!(
            "message rows {{ required binary {key} (STRING); required int64 {amount}; \
             required binary {region} (STRING); }}"
        )
    })
}

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
    let mut lines = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(csv)?).lines();
    let header = lines.next().transpose()?.unwrap_or_default();
    let Some(schema) = schema(&header) else {
        return Err(Failure::Bench(format!(
            "{}: not the bench's rows",
            csv.display()
        )));
    };
    let schema = Arc::new(parse_message_type(&schema).map_err(|e| failed(parquet, e))?);
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(GROUP))
        .build();
    let file = std::fs::File::create(parquet)?;
    let mut writer = SerializedFileWriter::new(file, schema, Arc::new(properties))
        .map_err(|e| failed(parquet, e))?;
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

/// The rows of the Parquet file at `path` as a CSV file of them holds them, header first:
/// text and integers as they are, booleans `true`/`false`, a null empty (the bench's
/// values need no quoting).
pub(super) fn as_csv(path: &Path) -> Result<Vec<u8>> {
    use parquet::record::Field;
    let reader =
        SerializedFileReader::new(std::fs::File::open(path)?).map_err(|e| failed(path, e))?;
    let schema = reader.metadata().file_metadata().schema_descr();
    let names: Vec<&str> = (schema.root_schema().get_fields().iter())
        .map(|f| f.name())
        .collect();
    let mut out = format!("{}\n", names.join(",")).into_bytes();
    for row in reader.get_row_iter(None).map_err(|e| failed(path, e))? {
        let row = row.map_err(|e| failed(path, e))?;
        for (i, (_, field)) in row.get_column_iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match field {
                Field::Str(s) => out.extend_from_slice(s.as_bytes()),
                Field::Long(n) => write!(out, "{n}")?,
                Field::Bool(b) => write!(out, "{b}")?,
                Field::Null => {}
                other => {
                    return Err(Failure::Bench(format!(
                        "{}: a value {other} of a type the bench does not write",
                        path.display()
                    )))
                }
            }
        }
        out.push(b'\n');
    }
    Ok(out)
}
