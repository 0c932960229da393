//! Runs split into hash buckets (`--bucket-rows`, or automatically for a large input):
//! whichever side buckets, and however finely, the output is the rows one run over
//! everything gives, byte for byte and in input order.

use crate::common::*;
use std::fmt::Write as _;
use std::path::Path;

/// Two CSV files sharing every third key, with duplicates, quoted fields (one with a line
/// break) and CRLF line ends.
fn inputs(dir: &Path, n: usize) -> (String, String) {
    let (mut s, mut r) = (String::from("id,v\r\n"), String::from("id,w\r\n"));
    for i in 0..n {
        writeln!(s, "k{},{i}\r", i * 3).unwrap();
        writeln!(r, "k{},\"r{i}\nnext line\"\r", i * 2).unwrap();
    }
    s.push_str("k0,dup\r\n");
    r.push_str("\"k6\",quoted dup\r\n");
    let s_path = write(dir, "s.csv", &s);
    let r_path = write(dir, "r.csv", &r);
    (
        s_path.to_str().unwrap().into(),
        r_path.to_str().unwrap().into(),
    )
}

fn receive_rows(
    dir: &Path,
    s: &str,
    r: &str,
    sender: &[&str],
    receiver: &[&str],
    tag: &str,
) -> String {
    let out = dir.join(format!("out-{tag}.csv"));
    let out_s = out.to_str().unwrap();
    let recv = [&["--input", r, "--output", out_s][..], receiver].concat();
    let send = [&["--input", s][..], sender].concat();
    let (so, ro) = run_pair(&recv, &send);
    assert_success(&[&so, &ro]);
    // The sender's one repeated key is counted however its file was read.
    assert!(
        stderr(&so).contains("1 rows repeat"),
        "{tag}: {}",
        stderr(&so)
    );
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn bucketed_runs_give_the_rows_of_one_run() {
    let dir = tmp();
    let (s, r) = inputs(dir.path(), 1500);
    let whole = receive_rows(dir.path(), &s, &r, &[], &[], "whole");
    assert_eq!(
        whole.matches("\r\n").count(),
        1 + 500 + 1,
        "header, shared keys, duplicate"
    );
    for (sender, receiver, tag) in [
        (&["--bucket-rows", "200"][..], &[][..], "sender"),
        (&[][..], &["--bucket-rows", "300"][..], "receiver"),
        (
            &["--bucket-rows", "100"][..],
            &["--bucket-rows", "700"][..],
            "both",
        ),
        // Split on disk, but into one bucket: an ordinary run against a whole read.
        (&["--bucket-rows", "100000"][..], &[][..], "one bucket"),
    ] {
        let got = receive_rows(dir.path(), &s, &r, sender, receiver, tag);
        assert!(got == whole, "bucketed by the {tag} differs from one run");
    }
}

#[test]
fn both_parties_learn_the_rows_of_lines_files_in_buckets() {
    let dir = tmp();
    let s: String = (0..600).map(|i| format!("x{}\n", i * 5)).collect();
    let r: String = (0..600).map(|i| format!("x{}\n", i * 3)).collect();
    let (s, r) = (
        write(dir.path(), "s.txt", &s),
        write(dir.path(), "r.txt", &r),
    );
    let (so_path, ro_path) = (dir.path().join("so"), dir.path().join("ro"));
    let bucket_dir = dir.path().join("buckets");
    std::fs::create_dir(&bucket_dir).unwrap();
    let common = ["--format", "lines", "--both"];
    let recv = [
        &common[..],
        &[
            "--input",
            r.to_str().unwrap(),
            "--output",
            ro_path.to_str().unwrap(),
        ],
        &["--bucket-rows", "64"],
    ]
    .concat();
    let send = [
        &common[..],
        &[
            "--input",
            s.to_str().unwrap(),
            "--output",
            so_path.to_str().unwrap(),
        ],
        // A sender that learns rows (--both) and splits its file, in a directory of ours.
        &[
            "--bucket-rows",
            "50",
            "--bucket-dir",
            bucket_dir.to_str().unwrap(),
        ],
    ]
    .concat();
    let (so, ro) = run_pair(&recv, &send);
    assert_success(&[&so, &ro]);
    assert_eq!(
        std::fs::read_dir(&bucket_dir).unwrap().count(),
        0,
        "bucket files are removed"
    );
    let want_r: String = (0..600)
        .map(|i| i * 3)
        .filter(|v| v % 5 == 0)
        .map(|v| format!("x{v}\n"))
        .collect();
    let want_s: String = (0..600)
        .map(|i| i * 5)
        .filter(|v| v % 3 == 0 && *v < 1800)
        .map(|v| format!("x{v}\n"))
        .collect();
    assert_eq!(std::fs::read_to_string(ro_path).unwrap(), want_r);
    assert_eq!(std::fs::read_to_string(so_path).unwrap(), want_s);
}

#[test]
fn a_file_too_large_for_max_memory_is_bucketed_by_itself() {
    let dir = tmp();
    // About 11 MB: over an eighth of a 80 MiB budget.
    let mut r = String::from("k\n");
    for i in 0..500_000u64 {
        writeln!(r, "key-{:016x}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).unwrap();
    }
    let r = write(dir.path(), "r.csv", &r);
    let s: String = (0..2000u64)
        .map(|i| {
            format!(
                "key-{:016x}\n",
                (i * 250).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            )
        })
        .collect();
    let s = write(dir.path(), "s.csv", &format!("k\n{s}"));
    let out = dir.path().join("out.csv");
    let stats = dir.path().join("stats.json");
    let recv = [
        "--input",
        r.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--max-memory",
        "80M",
        "--stats-json",
        stats.to_str().unwrap(),
    ];
    let (so, ro) = run_pair(&recv, &["--input", s.to_str().unwrap()]);
    assert_success(&[&so, &ro]);
    assert!(
        stderr(&ro).contains("intersection size 2000"),
        "{}",
        stderr(&ro)
    );
    assert_eq!(std::fs::read_to_string(out).unwrap().lines().count(), 2001);
    let stats = std::fs::read_to_string(stats).unwrap();
    assert!(
        stats.contains("\"intersection\": 2000") && stats.contains("\"intersection_size\": null"),
        "{stats}"
    );
}

#[test]
fn bucket_files_go_where_asked() {
    let dir = tmp();
    let s = write(dir.path(), "s.txt", "a\nb\nc\n");
    let missing = dir.path().join("no such dir");
    let out = venn()
        .args(["send", "--format", "lines", "--bucket-rows", "1"])
        .args(["--input", s.to_str().unwrap()])
        .args(["--bucket-dir", missing.to_str().unwrap()])
        .args(["--connect", "127.0.0.1:9", "--timeout", "5"])
        .output()
        .unwrap();
    assert_clean_failure(&out, "no such dir");
}

/// A count learned bucket by bucket would tell the receiver how the common keys fall into
/// the buckets: a protocol whose output is not the intersection itself is refused there.
#[test]
fn a_count_is_never_computed_bucket_by_bucket() {
    let dir = tmp();
    let (s, r) = inputs(dir.path(), 300);
    let count = ["--protocol", "psww18-ca", "--plaintext"];
    let (so, ro) = run_pair(
        &[&["--input", &r][..], &count, &["--bucket-rows", "100"]].concat(),
        &[&["--input", &s][..], &count].concat(),
    );
    for o in [&so, &ro] {
        assert_clean_failure(o, "cannot run bucket by bucket");
    }
    // Read whole, the same run gives the count.
    let (so, ro) = run_pair(
        &[&["--input", &r][..], &count].concat(),
        &[&["--input", &s][..], &count].concat(),
    );
    assert_success(&[&so, &ro]);
    assert!(String::from_utf8_lossy(&ro.stdout).contains("\"intersection_size\":100"));
}
