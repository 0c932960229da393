//! Entry point of the `csv_input` fuzz target (and of the replay of its corpus in
//! the test below): the input reader on arbitrary bytes under options picked by
//! the first byte. Besides "no panic", it checks what every parse must satisfy, and that the
//! hand-written fast path agrees with the `csv` crate on every body the fast path takes.

use super::builder::Builder;
use super::csv_file::{csv_header, csv_plain_body, csv_quoted_body, uses_fast_path};
use super::{parse_input, Format, Input, KeyOptions};

/// Options from one byte: format, normalisation, which columns make the key, whether
/// column c holds values — or, where two columns are named, whether a record matches on
/// any of them (`--match-any`, which takes no values) — and (CSV) whether fields are
/// separated by semicolons.
fn options(pick: u8) -> KeyOptions {
    const COLUMNS: [&[&str]; 4] = [&[], &["b"], &["a", "b"], &["b", "a"]];
    let columns = COLUMNS[(pick >> 4) as usize % COLUMNS.len()];
    let any = pick & 64 != 0 && columns.len() == 2;
    KeyOptions {
        format: if pick & 1 == 0 {
            Format::Csv
        } else {
            Format::Lines
        },
        columns: columns.iter().map(|c| c.to_string()).collect(),
        trim: pick & 2 != 0,
        lowercase: pick & 4 != 0,
        skip_empty: pick & 8 != 0,
        value_columns: match pick & 64 != 0 && !any {
            true => vec!["c".to_string()],
            false => Vec::new(),
        },
        delimiter: match pick & 129 {
            128 => b';',
            _ => b',',
        },
        reveal_columns: Vec::new(),
        match_any: any,
    }
}

/// What a parse must satisfy: rows in file order, inside the file and apart; every key
/// index valid; every distinct key counted once; a value per key where asked for.
fn check(input: &Input, len: usize, values: bool) {
    assert_eq!(
        input.keys.values().map(<[u64]>::len),
        values.then_some(input.keys.len())
    );
    let mut end = input.header.as_ref().map_or(0, |h| h.end);
    // A record's rows (with --match-any, one an identifier) share its bytes.
    for record in super::records(&input.rows) {
        let bytes = &record[0].bytes;
        assert!(bytes.start >= end && bytes.end <= len, "records apart");
        for row in record {
            assert_eq!(&row.bytes, bytes, "a record's rows are its bytes");
            assert!((row.key as usize) < input.keys.len());
        }
        end = bytes.end;
    }
    assert_eq!(input.rows.len() - input.duplicates, input.keys.len());
}

/// Parses `data` under options from its first byte.
pub fn csv_input(data: &[u8]) {
    let Some((&pick, data)) = data.split_first() else {
        return;
    };
    let opts = options(pick);
    let parsed = parse_input(data.to_vec(), &opts);
    if let Ok(input) = &parsed {
        check(input, data.len(), !opts.value_columns.is_empty());
    }
    // The differential check: a body the fast path took, through the csv crate too.
    let data = data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(data);
    if opts.format != Format::Csv {
        return;
    }
    let Ok(h) = csv_header(data, &opts) else {
        return;
    };
    if !uses_fast_path(&data[h.end..]) {
        return;
    }
    let outcome = |quoted: bool| {
        let mut b = Builder::new(&opts, 16, 0);
        let result = if quoted {
            csv_quoted_body(data, &h, &mut b)
        } else {
            csv_plain_body(data, &h, &mut b)
        };
        result
            .and_then(|()| b.finish(Vec::new(), None))
            .map(|input| {
                let keys: Vec<&[u8]> = (0..input.keys.len()).map(|i| input.keys.get(i)).collect();
                let rows: Vec<(u32, std::ops::Range<usize>)> = input
                    .rows
                    .iter()
                    .map(|r| (r.key, r.bytes.clone()))
                    .collect();
                (
                    keys.iter().map(|k| k.to_vec()).collect::<Vec<_>>(),
                    input.keys.values().map(<[u64]>::to_vec),
                    rows,
                    input.duplicates,
                    input.skipped_empty,
                )
            })
    };
    match (outcome(false), outcome(true)) {
        (Ok(plain), Ok(quoted)) => assert_eq!(plain, quoted, "the two CSV paths disagree"),
        (Err(plain), Err(quoted)) => assert_eq!(plain.to_string(), quoted.to_string()),
        (plain, quoted) => panic!("the two CSV paths disagree: {plain:?} / {quoted:?}"),
    }
}

#[cfg(test)]
mod tests {
    /// Replays the committed corpus of the `csv_input` fuzz target on stable (as
    /// `crates/venn/tests/fuzz_corpus.rs` does the protocols').
    #[test]
    fn csv_input_corpus() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/csv_input");
        let mut n = 0;
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            let data = std::fs::read(&f).unwrap();
            let caught = std::panic::catch_unwind(|| super::csv_input(&data));
            assert!(caught.is_ok(), "{} fails", f.display());
            n += 1;
        }
        assert!(n > 0, "the csv_input corpus is empty");
    }
}
