//! `--max-memory` as a ceiling for the whole process.
//!
//! Each protocol's memory model — the figure a party's `--max-memory` is held to
//! before anything is allocated ([`venn::memory_needed`]) — bounds what its parties really
//! use. `venn bench` measures each party's peak RSS in its own process beside the model's
//! figure, for every protocol and variant at 2^12 and 2^14: a model that grows slower than
//! the protocol (a constant per item for an n·log n sorting network) falls behind here
//! before it lets a hostile peer's announced size past `--max-memory` at 2^24. (At 2^15
//! the test took three and a half minutes on a 2-core machine without AVX-512, the
//! longest of the suite; larger sets are `venn bench`'s, BENCHMARKS.md.)
//!
//! The input counts too: a sender of 10^7 short keys under `--max-memory 1000M` peaked at
//! 1,316 MiB (its model counted the protocol alone, not the file read, its rows and keys),
//! and under 900M was refused only once reading had taken 883 MiB. Through the real binary
//! (its peak as the kernel counts it), a file that cannot be read within the budget is
//! refused before it is read, and a run accepted under a budget stays within it.

use crate::common::*;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

#[test]
fn every_partys_peak_is_within_its_memory_model() {
    let names: Vec<&str> = (venn::protocols::registry().iter())
        .map(|p| p.info().name)
        .collect();
    let bench = |protocols: &str, more: &[&str]| {
        let o = venn()
            .args(["bench", "--protocol", protocols, "--log2n", "12,14"])
            .args(["--json", "--timeout", "120"])
            .args(more)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["rows"].as_array().unwrap().clone()
    };
    let rows = bench(&names.join(","), &["--offline", "ot,bfv,dealer"]);
    // The GMW circuits' triples from IKNP (`--offline iknp`) hold a chunk's rows instead
    // of silent OT's noise: once, on HEK12's circuit.
    let iknp = bench("hek12-ca", &["--offline", "iknp", "--sigma", "32"]);
    assert_eq!(iknp.len(), 2, "{iknp:?}");
    let mut over = Vec::new();
    for r in rows.iter().chain(&iknp) {
        assert_eq!(r["verified"], true, "{r}");
        for role in ["sender", "receiver"] {
            let rss = r[format!("peak_rss_{role}_mib")].as_f64().unwrap();
            let model = r[format!("memory_model_{role}_mib")].as_f64().unwrap();
            if rss > model {
                over.push(format!(
                    "{} at {}:{}: the {role} peaked at {rss:.0} MiB, its model says {model:.0}",
                    r["protocol"], r["n_sender"], r["n_receiver"]
                ));
            }
        }
    }
    assert!(over.is_empty(), "{}", over.join("\n"));
    let variants = rows.len() / 2;
    assert!(
        variants > names.len(),
        "every protocol, some with variants: {variants}"
    );
}

/// `n` distinct keys of seven hex digits, a line each (the shortest rows, so the most
/// memory per byte of file: the rows and keys outweigh the file).
fn short_keys(n: u32, step: u32) -> String {
    let mut text = String::with_capacity(8 * n as usize + 2);
    text.push_str("k\n");
    for i in (0..n).map(|i| i * step) {
        writeln!(text, "{:07x}", i.wrapping_mul(0x9E37_79B1) & 0x0FFF_FFFF).unwrap();
    }
    text
}

/// 2 M keys take about 150 MiB to read (their rows, keys and the table that finds
/// duplicates): a count cannot run bucket by bucket, so under 100M the file is refused
/// before it is read — at once, the figure and the flag named, the process never near
/// the size of the file's rows.
#[test]
fn an_input_too_large_to_read_within_max_memory_is_refused_before_it_is_read() {
    let dir = tmp();
    let input = write(dir.path(), "big.csv", &short_keys(2_000_000, 1));
    let started = Instant::now();
    let (o, peak) = output_and_peak(
        venn()
            .args(["send", "--protocol", "rr22-ca", "--input"])
            .arg(&input)
            .args(["--max-memory", "100M", "--connect", "127.0.0.1:9"])
            .args(["--timeout", "5"]),
    );
    assert_clean_failure(&o, "more than the 0.10 GiB allowed (--max-memory)");
    assert!(stderr(&o).contains("reading '"), "{}", stderr(&o));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(peak < 40 << 20, "peaked at {} MiB", peak >> 20);
}

/// A sender of 3 M short keys under `--max-memory 345M`: its model (96 bytes a key and
/// the base) came to 339 MiB, so the run was accepted, and it peaked near 390 MiB with the
/// input read whole. Now the input counts: the run is accepted (here in buckets) and the
/// process stays within the budget, with the whole intersection found.
#[test]
fn a_run_accepted_under_max_memory_peaks_within_it() {
    let dir = tmp();
    let sender = write(dir.path(), "s.csv", &short_keys(3_000_000, 1));
    let receiver = write(dir.path(), "r.csv", &short_keys(2000, 7));
    let out = dir.path().join("out.csv");
    let (r, addr) = spawn_listening(&[
        "receive",
        "--input",
        receiver.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ]);
    let budget = 345u64 << 20;
    let (s, peak) = output_and_peak(venn().args(["send", "--input"]).arg(&sender).args([
        "--max-memory",
        "345M",
        "--connect",
        &addr,
    ]));
    let r = wait_listening(r);
    assert_success(&[&s, &r]);
    assert!(stderr(&r).contains("2000 rows written"), "{}", stderr(&r));
    assert!(
        peak <= budget,
        "accepted under {} MiB, peaked at {} MiB",
        budget >> 20,
        peak >> 20
    );
}

/// A sender of 2^17 keys against a receiver of 1000, under a `--max-memory` its model
/// accepts: KKRT16's, PSSZ15's and RR17's senders worked on a small receiver's rows (or
/// filter) all at once and peaked past it (KKRT16 about 160 MiB, its model 115); each
/// now stays within what it was allowed, with the intersection found.
#[test]
fn a_sender_against_a_small_receiver_peaks_within_max_memory() {
    let dir = tmp();
    let sender = write(dir.path(), "s.csv", &short_keys(1 << 17, 1));
    let receiver = write(dir.path(), "r.csv", &short_keys(1000, 7));
    for (protocol, budget) in [("kkrt16", 140u64), ("pssz15", 150), ("rr17-bloom", 190)] {
        let out = dir.path().join(format!("{protocol}.csv"));
        let (r, addr) = spawn_listening(&[
            "receive",
            "--protocol",
            protocol,
            "--input",
            receiver.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ]);
        let max = format!("{budget}M");
        let (s, peak) = output_and_peak(
            venn()
                .args(["send", "--protocol", protocol, "--input"])
                .arg(&sender)
                .args(["--max-memory", &max, "--connect", &addr]),
        );
        let r = wait_listening(r);
        assert_success(&[&s, &r]);
        assert!(stderr(&r).contains("1000 rows written"), "{}", stderr(&r));
        assert!(
            peak <= budget << 20,
            "{protocol}: accepted under {budget} MiB, peaked at {} MiB",
            peak >> 20
        );
    }
}
