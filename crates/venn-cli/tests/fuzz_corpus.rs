//! Replays the committed corpus of the `csv_input` fuzz target on stable (see
//! `crates/venn/tests/fuzz_corpus.rs`).

use std::path::PathBuf;

#[test]
fn csv_input_corpus() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/csv_input");
    let mut n = 0;
    for f in std::fs::read_dir(&dir).unwrap() {
        let f = f.unwrap().path();
        let data = std::fs::read(&f).unwrap();
        let caught = std::panic::catch_unwind(|| venn_cli::input::fuzz::csv_input(&data));
        assert!(caught.is_ok(), "{} fails", f.display());
        n += 1;
    }
    assert!(n > 0, "the csv_input corpus is empty");
}
