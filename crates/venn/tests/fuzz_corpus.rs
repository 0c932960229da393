//! Replays the committed fuzz corpora (`fuzz/corpus/<target>/`) through the fuzz entry
//! points on stable: every crash a campaign found (added to the corpus once fixed) stays a
//! regression test, beside the frames' and the handshake's whole corpora and a sample of
//! each protocol's ([`sampled`]), or the seeds of a protocol no campaign has reached yet;
//! `cargo fuzz` runs the whole of them.

use crate::common::each_on_all_cores;
use std::path::{Path, PathBuf};

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

fn corpus(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

/// The files of a corpus, sorted; none if it has no directory.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => panic!("{}: {e}", dir.display()),
    };
    files.sort();
    files
}

/// Runs `entry` on the files of the corpus of `target` — all of them, or with `most` every
/// crash (`crash-*`, added once fixed) and an evenly spaced sample of the rest — on every
/// core (each protocol input is a whole run of two parties); returns how many there were.
fn replay(target: &str, most: Option<usize>, entry: impl Fn(&[u8]) + Sync) -> usize {
    let mut files = files(&corpus(target));
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

/// Each registered protocol's corpus, sampled; a protocol no campaign has given one yet
/// runs the inputs seeded from its honest run instead.
#[test]
fn protocol_message_corpora() {
    for p in venn::protocols::registry() {
        let started = std::time::Instant::now();
        let name = p.info().name;
        let run = |data: &[u8]| venn::fuzz::tampered_run(name, data);
        if files(&corpus(name)).is_empty() {
            each_on_all_cores(&venn::fuzz::seeds(name), |seed| run(seed));
        } else {
            replay(name, Some(sampled(name)), run);
        }
        eprintln!("{name}: {:?}", started.elapsed());
    }
}

/// The seeds of a protocol without a corpus reach every frame of its run: one input
/// untouched, then one per frame each party receives, each changing that frame.
#[test]
fn seeds_reach_every_frame_of_an_honest_run() {
    let seeds = venn::fuzz::seeds("kkrt16");
    let changed: Vec<(u8, u8)> = seeds[1..].iter().map(|s| (s[2] & 1, s[2] >> 1)).collect();
    for to in [0, 1] {
        let frames: Vec<u8> = changed.iter().filter(|c| c.0 == to).map(|c| c.1).collect();
        assert!(frames.len() > 2, "{to}: {frames:?}");
        assert_eq!(frames, (0..frames.len() as u8).collect::<Vec<_>>());
    }
    assert_eq!(seeds[0].len(), 2, "the first seed is the untouched run");
    each_on_all_cores(&seeds, |seed| venn::fuzz::tampered_run("kkrt16", seed));
}
