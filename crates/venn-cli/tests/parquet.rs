//! Parquet inputs and outputs through the binary: a Parquet party and a CSV party holding
//! the same table match the same keys (dates, nulls, several key columns, `--trim`,
//! `--lowercase`, `--skip-empty`); revealed columns read from Parquet cells; a Parquet
//! input's output read back with its schema kept, the join's columns added and its row
//! groups and repeated keys copied, whole or bucket by bucket; files that are not Parquet,
//! and columns that cannot be keys, refused in one clean line.

use crate::common::*;
use parquet::basic::{Compression, Repetition};
use parquet::column::writer::ColumnWriterImpl;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DataType, DoubleType};
use parquet::data_type::{Int32Type, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A column's cells, row by row (`None`: null).
enum Cells {
    Text(Vec<Option<&'static str>>),
    Date(Vec<Option<i32>>),
    Int(Vec<Option<i32>>),
    Long(Vec<Option<i64>>),
    Bool(Vec<Option<bool>>),
    Double(Vec<Option<f64>>),
}

/// The sender's table: a key of an e-mail (to trim and lower-case) and a date of birth,
/// a row whose key is empty, and columns to reveal (a null among them).
fn sender_columns() -> (&'static str, Vec<Cells>) {
    let schema = "message s { optional binary email (STRING); optional int32 dob (DATE); \
                  required int64 id; optional binary segment (STRING); optional int32 score; \
                  required boolean vip; optional double weight; }";
    let columns = vec![
        Cells::Text(vec![
            Some("Ada@X.org "),
            Some("bob@x.org"),
            Some("cy@x.org"),
            None,
            Some("dee@x.org"),
        ]),
        Cells::Date(vec![Some(7306), Some(5659), None, None, Some(11687)]),
        Cells::Long(vec![Some(1), Some(2), Some(3), Some(4), Some(5)]),
        Cells::Text(vec![
            Some("sports"),
            None,
            Some("ünïcode"),
            Some("none"),
            Some("never"),
        ]),
        Cells::Int(vec![Some(7), None, Some(12), Some(0), Some(1)]),
        Cells::Bool(vec![
            Some(true),
            Some(false),
            Some(true),
            Some(false),
            Some(false),
        ]),
        Cells::Double(vec![Some(0.5), Some(1.0), Some(2.0), Some(3.0), Some(4.0)]),
    ];
    (schema, columns)
}

/// The sender's table as a CSV export of it holds it.
const SENDER_CSV: &str = "email,dob,id,segment,score,vip,weight\n\
Ada@X.org ,1990-01-02,1,sports,7,true,0.5\n\
bob@x.org,1985-06-30,2,,,false,1.0\n\
cy@x.org,,3,ünïcode,12,true,2.0\n\
,,4,none,0,false,3.0\n\
dee@x.org,2001-12-31,5,never,1,false,4.0\n";

/// The receiver's table: cy (no date, twice), ada and bob match; zed is the sender's
/// nowhere, and dee's date differs.
fn receiver_columns() -> (&'static str, Vec<Cells>) {
    let schema = "message r { required int64 id; optional binary email (STRING); \
                  optional int32 dob (DATE); }";
    let columns = vec![
        Cells::Long((10..16).map(Some).collect()),
        Cells::Text(vec![
            Some("cy@x.org"),
            Some("ada@x.org"),
            Some("zed@x.org"),
            Some("bob@x.org"),
            Some("dee@x.org"),
            Some("cy@x.org"),
        ]),
        Cells::Date(vec![
            None,
            Some(7306),
            Some(10843),
            Some(5659),
            Some(11686),
            None,
        ]),
    ];
    (schema, columns)
}

/// The receiver's table as a CSV export of it holds it.
const RECEIVER_CSV: &str = "id,email,dob\n\
10,cy@x.org,\n\
11,ada@x.org,1990-01-02\n\
12,zed@x.org,1999-09-09\n\
13,bob@x.org,1985-06-30\n\
14,dee@x.org,2001-12-30\n\
15,cy@x.org,\n";

/// The receiver's rows, as the Parquet reader shows them.
const RECEIVER_ROWS: [&str; 6] = [
    "{id: 10, email: \"cy@x.org\", dob: null",
    "{id: 11, email: \"ada@x.org\", dob: 1990-01-02",
    "{id: 12, email: \"zed@x.org\", dob: 1999-09-09",
    "{id: 13, email: \"bob@x.org\", dob: 1985-06-30",
    "{id: 14, email: \"dee@x.org\", dob: 2001-12-30",
    "{id: 15, email: \"cy@x.org\", dob: null",
];

/// How both parties take their keys.
const KEYS: [&str; 5] = [
    "--column",
    "email,dob",
    "--trim",
    "--lowercase",
    "--skip-empty",
];

/// Writes `columns` under `schema` to a Parquet file, `group` rows a row group.
fn write_parquet(path: &Path, schema: &str, columns: &[Cells], group: usize) {
    let schema = Arc::new(parse_message_type(schema).unwrap());
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut writer = SerializedFileWriter::new(file, schema.clone(), Arc::new(properties)).unwrap();
    let rows = match &columns[0] {
        Cells::Text(v) => v.len(),
        Cells::Long(v) => v.len(),
        _ => unreachable!("the tables lead with text or longs"),
    };
    for start in (0..rows).step_by(group) {
        let range = start..(start + group).min(rows);
        let mut rows = writer.next_row_group().unwrap();
        for (field, cells) in schema.get_fields().iter().zip(columns) {
            let optional = field.get_basic_info().repetition() == Repetition::OPTIONAL;
            let mut column = rows.next_column().unwrap().unwrap();
            let r = range.clone();
            match cells {
                Cells::Text(v) => {
                    put::<ByteArrayType, _>(column.typed(), &v[r], optional, ByteArray::from)
                }
                Cells::Date(v) | Cells::Int(v) => {
                    put::<Int32Type, _>(column.typed(), &v[r], optional, |d| d)
                }
                Cells::Long(v) => put::<Int64Type, _>(column.typed(), &v[r], optional, |l| l),
                Cells::Bool(v) => put::<BoolType, _>(column.typed(), &v[r], optional, |b| b),
                Cells::Double(v) => put::<DoubleType, _>(column.typed(), &v[r], optional, |d| d),
            }
            column.close().unwrap();
        }
        rows.close().unwrap();
    }
    writer.close().unwrap();
}

/// Writes one row group's `cells` of a column through `writer`.
fn put<T: DataType, V: Copy>(
    writer: &mut ColumnWriterImpl<'_, T>,
    cells: &[Option<V>],
    optional: bool,
    value: impl Fn(V) -> T::T,
) {
    let levels: Vec<i16> = cells.iter().map(|c| i16::from(c.is_some())).collect();
    let values: Vec<T::T> = cells.iter().flatten().map(|&v| value(v)).collect();
    (writer.write_batch(&values, optional.then_some(&levels[..]), None)).unwrap();
}

/// A Parquet file's schema, a line a top-level column (repetition, type, name), and its
/// rows as the Parquet reader shows them.
fn read_parquet(path: &Path) -> (Vec<String>, Vec<String>) {
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let schema = reader.metadata().file_metadata().schema_descr();
    let columns = (schema.columns().iter())
        .map(|c| {
            let logical = c.logical_type_ref().map(|l| format!(" {l:?}"));
            let repetition = c.self_type().get_basic_info().repetition();
            let kind = c.physical_type();
            format!(
                "{repetition} {kind}{} {}",
                logical.unwrap_or_default(),
                c.name()
            )
        })
        .collect();
    let rows = (reader.get_row_iter(None).unwrap())
        .map(|row| row.unwrap().to_string())
        .collect();
    (columns, rows)
}

/// Both tables, as CSV and as Parquet (the receiver's in row groups of two rows).
struct Tables {
    dir: tempfile::TempDir,
}

impl Tables {
    fn new() -> Tables {
        let dir = tmp();
        let (schema, columns) = sender_columns();
        write_parquet(&dir.path().join("s.parquet"), schema, &columns, 3);
        let (schema, columns) = receiver_columns();
        write_parquet(&dir.path().join("r.parquet"), schema, &columns, 2);
        write(dir.path(), "s.csv", SENDER_CSV);
        write(dir.path(), "r.csv", RECEIVER_CSV);
        Tables { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn arg(&self, name: &str) -> String {
        self.path(name).to_str().unwrap().to_string()
    }
}

/// The receiver's matched rows, as the output holds them (CSV, or Parquet read back).
fn matched_rows(out: &Path) -> Vec<String> {
    if out.extension().is_some_and(|e| e == "parquet") {
        return read_parquet(out).1;
    }
    let text = std::fs::read_to_string(out).unwrap();
    text.lines().map(String::from).collect()
}

/// Each of a CSV and a Parquet party against the other (and two Parquet parties) match
/// the same keys: the receiver's output is its matched rows, a Parquet receiver's in a
/// Parquet file of its own schema.
#[test]
fn parquet_and_csv_parties_match_the_same_keys() {
    let t = Tables::new();
    let parquet_rows: Vec<String> = [0, 1, 3, 5]
        .iter()
        .map(|&i| format!("{}}}", RECEIVER_ROWS[i]))
        .collect();
    let csv_rows = [
        "id,email,dob",
        "10,cy@x.org,",
        "11,ada@x.org,1990-01-02",
        "13,bob@x.org,1985-06-30",
        "15,cy@x.org,",
    ];
    for (receiver, sender) in [
        ("r.csv", "s.parquet"),
        ("r.parquet", "s.csv"),
        ("r.parquet", "s.parquet"),
    ] {
        let out = t.arg(if receiver.ends_with("csv") {
            "out.csv"
        } else {
            "out.parquet"
        });
        let (r, s) = (t.arg(receiver), t.arg(sender));
        let (so, ro) = run_pair(
            &[&["--input", &r, "--output", &out][..], &KEYS].concat(),
            &[&["--input", &s][..], &KEYS].concat(),
        );
        assert_success(&[&so, &ro]);
        let rows = matched_rows(Path::new(&out));
        match receiver.ends_with("csv") {
            true => assert_eq!(rows, csv_rows, "{receiver} against {sender}"),
            false => assert_eq!(rows, parquet_rows, "{receiver} against {sender}"),
        }
        if receiver.ends_with("parquet") {
            let (schema, _) = read_parquet(Path::new(&out));
            assert_eq!(
                schema,
                read_parquet(&t.path(receiver)).0,
                "the schema is kept"
            );
        }
    }
}

/// Columns revealed from Parquet cells reach a CSV receiver as the CSV sender's do; a
/// Parquet receiver's `left` join keeps every row (its two row groups and a repeated key
/// copied), adds `matched` and the sender's columns as strings, null where unmatched
/// (its columns encoded on two threads).
#[test]
fn revealed_parquet_columns_join_csv_and_parquet_outputs() {
    let t = Tables::new();
    let joined = [
        "id,email,dob,segment,score,vip",
        "10,cy@x.org,,ünïcode,12,true",
        "11,ada@x.org,1990-01-02,sports,7,true",
        "13,bob@x.org,1985-06-30,,,false",
        "15,cy@x.org,,ünïcode,12,true",
    ];
    for sender in ["s.csv", "s.parquet"] {
        let (r, s, out) = (t.arg("r.csv"), t.arg(sender), t.arg("out.csv"));
        let (so, ro) = run_pair(
            &[
                &["--input", &r, "--output", &out][..],
                &["--peer-columns", "segment,score,vip"],
                &KEYS,
            ]
            .concat(),
            &[
                &["--input", &s, "--reveal-columns", "segment,score,vip"][..],
                &KEYS,
            ]
            .concat(),
        );
        assert_success(&[&so, &ro]);
        assert_eq!(matched_rows(Path::new(&out)), joined, "from {sender}");
    }
    let (r, s, out) = (t.arg("r.parquet"), t.arg("s.parquet"), t.arg("out.parquet"));
    let (so, ro) = run_pair(
        &[
            &["--input", &r, "--output", &out, "--join", "left"][..],
            &["--peer-columns", "segment,score,vip"],
            &KEYS,
            &["--protocol", "rr22-m", "--threads", "2"],
        ]
        .concat(),
        &[
            &["--input", &s, "--reveal-columns", "segment,score,vip"][..],
            &KEYS,
            &["--protocol", "rr22-m"],
        ]
        .concat(),
    );
    assert_success(&[&so, &ro]);
    let (schema, rows) = read_parquet(Path::new(&out));
    let mut expected = read_parquet(&t.path("r.parquet")).0;
    expected.push("REQUIRED BOOLEAN matched".into());
    for name in ["segment", "score", "vip"] {
        expected.push(format!("OPTIONAL BYTE_ARRAY String {name}"));
    }
    assert_eq!(schema, expected);
    let added = [
        "matched: true, segment: \"ünïcode\", score: \"12\", vip: \"true\"}",
        "matched: true, segment: \"sports\", score: \"7\", vip: \"true\"}",
        "matched: false, segment: null, score: null, vip: null}",
        "matched: true, segment: \"\", score: \"\", vip: \"false\"}",
        "matched: false, segment: null, score: null, vip: null}",
        "matched: true, segment: \"ünïcode\", score: \"12\", vip: \"true\"}",
    ];
    let expected: Vec<String> = (RECEIVER_ROWS.iter().zip(added))
        .map(|(row, added)| format!("{row}, {added}"))
        .collect();
    assert_eq!(rows, expected);
}

/// A Parquet input split into buckets (`--bucket-rows`) gives the rows a whole run
/// gives, for `inner` and `difference`, copied from the file by position; the sender
/// sees it announce its rows (6), as a split input does, not its distinct keys (5).
#[test]
fn a_parquet_input_runs_bucket_by_bucket() {
    let t = Tables::new();
    for (join, rows) in [("inner", [0, 1, 3, 5].as_slice()), ("difference", &[2, 4])] {
        let (r, s, out) = (t.arg("r.parquet"), t.arg("s.csv"), t.arg("out.parquet"));
        let stats = t.arg("s.json");
        let (so, ro) = run_pair(
            &[
                &["--input", &r, "--output", &out, "--join", join][..],
                &["--bucket-rows", "2"],
                &KEYS,
            ]
            .concat(),
            &[&["--input", &s, "--stats-json", &stats][..], &KEYS].concat(),
        );
        assert_success(&[&so, &ro]);
        let stats = std::fs::read_to_string(&stats).unwrap();
        assert!(stats.contains("\"peer_items\": 6"), "{stats}");
        let expected: Vec<String> = rows
            .iter()
            .map(|&i| format!("{}}}", RECEIVER_ROWS[i]))
            .collect();
        assert_eq!(matched_rows(Path::new(&out)), expected, "{join}");
    }
}

/// A file that is not Parquet (garbage, a truncated file, CSV named as Parquet), a key
/// column without one text form, a column that is not there, and an output that would
/// add a column the input has are each refused in one line, before the peer is reached.
#[test]
fn what_cannot_be_read_as_parquet_is_refused_cleanly() {
    let t = Tables::new();
    let whole = std::fs::read(t.path("s.parquet")).unwrap();
    std::fs::write(t.path("cut.parquet"), &whole[..whole.len() / 2]).unwrap();
    write(t.dir.path(), "junk.parquet", "email\nada@x.org\n");
    let send = |input: &str, extra: &[&str]| {
        venn()
            .args(["send", "--input", input])
            .args(extra)
            .args(["--connect", "127.0.0.1:9", "--timeout", "2"])
            .output()
            .unwrap()
    };
    let cases: [(String, &[&str], &str); 5] = [
        (t.arg("junk.parquet"), &[], "cannot read Parquet input"),
        (t.arg("cut.parquet"), &[], "cannot read Parquet input"),
        (
            t.arg("s.csv"),
            &["--format", "parquet"],
            "cannot read Parquet input",
        ),
        (
            t.arg("s.parquet"),
            &["--column", "weight"],
            "no one text form in CSV",
        ),
        (
            t.arg("s.parquet"),
            &["--column", "nope"],
            "has no column named 'nope'",
        ),
    ];
    for (input, extra, refusal) in cases {
        assert_clean_failure(&send(&input, extra), refusal);
    }
    let out = t.arg("out.parquet");
    let taken = venn()
        .args(["receive", "--input", &t.arg("r.parquet"), "--output", &out])
        .args(["--peer-columns", "segment,id", "--connect", "127.0.0.1:9"])
        .output()
        .unwrap();
    assert_clean_failure(&taken, "would have two columns named 'id'");
}

/// `--match-any` on a Parquet input: a record matched on any of its identifiers once, the
/// output's `matched_on` (and a `left` join's `matched`) added as columns, null where the
/// record did not match; the partner's columns from the first identifier that matched.
#[test]
fn a_parquet_input_matches_on_any_identifier() {
    let dir = tmp();
    let schema = "message r { required int64 id; optional binary email (STRING); \
                  optional binary phone (STRING); }";
    let columns = vec![
        Cells::Long(vec![Some(1), Some(2), Some(3)]),
        Cells::Text(vec![Some("ada@x.org"), None, Some("cy@x.org")]),
        Cells::Text(vec![Some("555-0100"), Some("555-0199"), None]),
    ];
    let input = dir.path().join("r.parquet");
    write_parquet(&input, schema, &columns, 2);
    let sender = write(
        dir.path(),
        "s.csv",
        "email,phone,ward\nada@x.org,555-0100,B\nx@y.org,555-0199,C\n",
    );
    let out = dir.path().join("out.parquet");
    let any = ["--match-any", "email,phone"];
    let (so, ro) = run_pair(
        &[
            &["--input", input.to_str().unwrap(), "--output"][..],
            &[
                out.to_str().unwrap(),
                "--peer-columns",
                "ward",
                "--join",
                "left",
            ],
            &any,
        ]
        .concat(),
        &[
            &[
                "--input",
                sender.to_str().unwrap(),
                "--reveal-columns",
                "ward",
            ][..],
            &any,
        ]
        .concat(),
    );
    assert_success(&[&so, &ro]);
    let (schema, rows) = read_parquet(&out);
    assert_eq!(
        schema[3..],
        [
            "REQUIRED BOOLEAN matched",
            "OPTIONAL BYTE_ARRAY String matched_on",
            "OPTIONAL BYTE_ARRAY String ward"
        ]
    );
    assert_eq!(
        rows,
        [
            "{id: 1, email: \"ada@x.org\", phone: \"555-0100\", matched: true, matched_on: \
             \"email|phone\", ward: \"B\"}",
            "{id: 2, email: null, phone: \"555-0199\", matched: true, matched_on: \"phone\", \
             ward: \"C\"}",
            "{id: 3, email: \"cy@x.org\", phone: null, matched: false, matched_on: null, \
             ward: null}",
        ]
    );
}
