//! Replays the committed fuzz corpora (`fuzz/corpus/<target>/`) through the fuzz entry
//! points on stable: every crash a campaign found (added to the corpus once fixed) stays a
//! regression test, beside the frames' and the handshake's whole corpora and a sample of
//! each protocol's ([`sampled`]); `cargo fuzz` runs the whole of them.

use crate::common::each_on_all_cores;
use std::path::PathBuf;

/// Of a protocol's corpus, evenly spaced files replayed besides every crash (at most so
/// many): each input is a whole two-party run, and the campaigns' 5,300 kept inputs of the
/// eighteen protocols, replayed whole, were the suite's longest test (140 s of its 250 on 2
/// cores). psww18's runs cost 7–10× any other protocol's (its tables are sized for at least
/// 2^14 items, so each run makes about 3 M triples): fewer of them.
fn sampled(target: &str) -> usize {
    match target {
        "psww18-ca" | "psww18-sum" => 24,
        _ => 96,
    }
}

/// Runs `entry` on the files of the corpus of `target` — all of them, or with `most` every
/// crash (`crash-*`, added once fixed) and an evenly spaced sample of the rest — on every
/// core (each protocol input is a whole run of two parties); returns how many there were.
fn replay(target: &str, most: Option<usize>, entry: impl Fn(&[u8]) + Sync) -> usize {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    if let Some(most) = most {
        let crash = |f: &PathBuf| {
            f.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("crash-"))
        };
        let (crashes, kept): (Vec<PathBuf>, Vec<PathBuf>) = files.into_iter().partition(crash);
        let step = kept.len().div_ceil(most).max(1);
        files = crashes
            .into_iter()
            .chain(kept.into_iter().step_by(step))
            .collect();
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
    replay("frames", None, venn::fuzz::frames);
}

#[test]
fn handshake_corpus() {
    replay("handshake", None, venn::fuzz::handshake);
}

#[test]
fn protocol_message_corpora() {
    for p in venn::protocols::registry() {
        let name = p.info().name;
        replay(name, Some(sampled(name)), |data| {
            venn::fuzz::tampered_run(name, data)
        });
    }
}
