//! Replays the committed fuzz corpora (`fuzz/corpus/<target>/`) through the fuzz entry
//! points on stable: every input a campaign kept (of psww18's, a sample: [`SAMPLED`]), and
//! every crash it found (added to the corpus once fixed), stays a regression test.

use crate::common::each_on_all_cores;
use std::path::PathBuf;

/// Corpora replayed in part, a sample of evenly spaced files (at most so many): psww18's,
/// whose runs cost 7–10× any other protocol's (its tables are sized for at least 2^14
/// items, so each run makes about 3 M triples) and whose campaigns found nothing — whole,
/// they were 43% of the replay and kept the test command over its 15 minutes; and rr22's
/// circuit PSI's, each a VOLE and a circuit's triples a run, whose corpora doubled to about
/// 400 files in session 43's campaigns (none found anything) and, whole, added a minute.
const SAMPLED: &[(&str, usize)] = &[
    ("psww18-ca", 64),
    ("psww18-sum", 64),
    ("rr22-ca", 128),
    ("rr22-sum", 128),
];

/// Runs `entry` on every file of the corpus of `target` (or on its sample, [`SAMPLED`]),
/// on every core (each protocol input is a whole run of two parties); returns how many
/// there were.
fn replay(target: &str, entry: impl Fn(&[u8]) + Sync) -> usize {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    if let Some(&(_, most)) = SAMPLED.iter().find(|(t, _)| *t == target) {
        let step = files.len().div_ceil(most);
        files = files.into_iter().step_by(step.max(1)).collect();
    }
    each_on_all_cores(&files, |f| {
        let data = std::fs::read(f).unwrap();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| entry(&data)));
        assert!(caught.is_ok(), "{} fails", f.display());
    });
    assert!(!files.is_empty(), "the {target} corpus is empty");
    files.len()
}

#[test]
fn frame_decoder_corpus() {
    replay("frames", venn::fuzz::frames);
}

#[test]
fn handshake_corpus() {
    replay("handshake", venn::fuzz::handshake);
}

#[test]
fn protocol_message_corpora() {
    for p in venn::protocols::registry() {
        let name = p.info().name;
        replay(name, |data| venn::fuzz::tampered_run(name, data));
    }
}
