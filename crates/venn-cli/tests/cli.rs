//! The `venn` binary end to end: two OS processes over TCP on real files.

use crate::common::*;
use std::collections::HashSet;

/// A CSV with a key column and a payload column; `keys` in order.
fn csv(keys: &[String]) -> String {
    let mut s = String::from("id,payload\n");
    for (i, k) in keys.iter().enumerate() {
        s += &format!("{},row {i}\n", quote(k));
    }
    s
}

fn quote(k: &str) -> String {
    format!("\"{}\"", k.replace('"', "\"\""))
}

fn keys(prefix: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("{prefix}{i}@example.org")).collect()
}

/// Runs the default protocol on two key lists; returns the keys in the receiver's output, in
/// order.
fn intersect(sender: &[String], receiver: &[String], extra: &[&str]) -> Vec<String> {
    let dir = tmp();
    let s = write(dir.path(), "s.csv", &csv(sender));
    let r = write(dir.path(), "r.csv", &csv(receiver));
    let out = dir.path().join("out.csv");
    let (so, ro) = run_pair(
        &[
            &[
                "--input",
                r.to_str().unwrap(),
                "--output",
                out.to_str().unwrap(),
            ],
            extra,
        ]
        .concat(),
        &[&["--input", s.to_str().unwrap()], extra].concat(),
    );
    assert_success(&[&so, &ro]);
    let mut rdr = csv::Reader::from_path(&out).unwrap();
    assert_eq!(rdr.headers().unwrap(), vec!["id", "payload"]);
    rdr.records().map(|r| r.unwrap()[0].to_string()).collect()
}

fn expected(sender: &[String], receiver: &[String]) -> Vec<String> {
    let s: HashSet<&String> = sender.iter().collect();
    receiver.iter().filter(|k| s.contains(k)).cloned().collect()
}

#[test]
fn random_sets_give_exactly_the_intersection_in_input_order() {
    let s: Vec<String> = [keys("a", 0..1500), keys("shared", 0..700)].concat();
    let mut r: Vec<String> = [keys("shared", 0..700), keys("b", 0..900)].concat();
    r.reverse();
    assert_eq!(intersect(&s, &r, &[]), expected(&s, &r));
}

#[test]
fn empty_disjoint_identical_and_unbalanced_sets() {
    let a = keys("x", 0..300);
    assert_eq!(intersect(&[], &a, &[]), Vec::<String>::new());
    assert_eq!(intersect(&a, &[], &[]), Vec::<String>::new());
    assert_eq!(intersect(&a, &keys("y", 0..300), &[]), Vec::<String>::new());
    assert_eq!(intersect(&a, &a, &[]), a);
    let big = keys("u", 0..4096);
    let small: Vec<String> = [keys("u", 100..108), keys("v", 0..8)].concat();
    assert_eq!(intersect(&big, &small, &[]), expected(&big, &small));
    assert_eq!(intersect(&small, &big, &[]), expected(&small, &big));
}

/// The test builds register `example` (`crates/venn/src/protocols/example.rs`) by its
/// module and one registry line: the tool runs it as any other, and every registry-driven
/// test (here `memory.rs`'s through `venn bench`; in the library's suite all of them)
/// includes it — the proof that adding a protocol takes no more.
#[test]
fn a_protocol_added_by_its_module_and_registry_line_runs_through_the_tool() {
    assert!(venn::protocols::registry()
        .iter()
        .any(|p| p.info().name == "example"));
    let s: Vec<String> = [keys("a", 0..200), keys("shared", 0..50)].concat();
    let r: Vec<String> = [keys("shared", 0..50), keys("b", 0..100)].concat();
    let insecure = ["--protocol", "example", "--insecure"];
    assert_eq!(intersect(&s, &r, &insecure), expected(&s, &r));
}

#[test]
fn long_unicode_and_quoted_keys() {
    let weird: Vec<String> = vec![
        "x".repeat(1000),
        "y".repeat(999) + "é",
        "grüße, \"quoted\"".into(),
        "line\nbreak".into(),
        "日本語のキー".into(),
        "🙂".into(),
        " leading and trailing ".into(),
        "a".into(),
    ];
    let s: Vec<String> = [weird.clone(), keys("s", 0..50)].concat();
    let r: Vec<String> = [keys("r", 0..50), weird[..5].to_vec(), vec!["b".into()]].concat();
    assert_eq!(intersect(&s, &r, &[]), expected(&s, &r));
}

#[test]
fn both_parties_learn_the_output_with_both() {
    let dir = tmp();
    let s = write(
        dir.path(),
        "s.csv",
        &csv(&[keys("k", 0..40), keys("s", 0..10)].concat()),
    );
    let r = write(
        dir.path(),
        "r.csv",
        &csv(&[keys("r", 0..5), keys("k", 30..60)].concat()),
    );
    let (so_path, ro_path) = (dir.path().join("so.csv"), dir.path().join("ro.csv"));
    let (so, ro) = run_pair(
        &[
            "--both",
            "--input",
            r.to_str().unwrap(),
            "--output",
            ro_path.to_str().unwrap(),
        ],
        &[
            "--both",
            "--input",
            s.to_str().unwrap(),
            "--output",
            so_path.to_str().unwrap(),
        ],
    );
    assert_success(&[&so, &ro]);
    let rows = |p: &std::path::Path| std::fs::read_to_string(p).unwrap().lines().count() - 1;
    assert_eq!(rows(&so_path), 10);
    assert_eq!(rows(&ro_path), 10);
}

#[test]
fn normalisation_duplicates_columns_and_line_format() {
    let dir = tmp();
    let s = write(
        dir.path(),
        "s.csv",
        "name,email\nA, Ada@Example.org \nB,bob@example.org\n",
    );
    let r = write(
        dir.path(),
        "r.csv",
        "email,note\nada@example.org,first\nzed@example.org,x\nADA@example.org,second\n",
    );
    let out = dir.path().join("out.csv");
    let (so, ro) = run_pair(
        &[
            "--input",
            r.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "--lowercase",
            "--trim",
        ],
        &[
            "--input",
            s.to_str().unwrap(),
            "--column",
            "email",
            "--lowercase",
            "--trim",
        ],
    );
    assert_success(&[&so, &ro]);
    assert!(
        stderr(&ro).contains("1 rows repeat an earlier key"),
        "{}",
        stderr(&ro)
    );
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "email,note\nada@example.org,first\nADA@example.org,second\n"
    );
    // Byte-exact comparison without the flags: nothing matches.
    let (_, ro) = run_pair(
        &[
            "--input",
            r.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ],
        &["--input", s.to_str().unwrap(), "--column", "email"],
    );
    assert!(ro.status.success());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "email,note\n");
    // Plain lines.
    let s = write(dir.path(), "s.txt", "one\ntwo\nthree\n");
    let r = write(dir.path(), "r.txt", "three\r\nfour\none");
    let (so, ro) = run_pair(
        &[
            "--format",
            "lines",
            "--input",
            r.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ],
        &["--format", "lines", "--input", s.to_str().unwrap()],
    );
    assert_success(&[&so, &ro]);
    // Rows are written as they are in the file (its line endings kept; a missing final
    // line ending added).
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "three\r\none\n");
}

/// Parties that take their keys differently are refused, each naming both settings: a
/// receiver lower-casing and trimming against a sender that does neither would find only
/// the keys already in that form, and say nothing. `--allow-key-mismatch` runs anyway,
/// with a warning.
#[test]
fn parties_that_normalise_keys_differently_are_refused() {
    let dir = tmp();
    let s = write(
        dir.path(),
        "s.csv",
        "email\nada@example.org\n Bob@example.org\nCY@example.org\n",
    );
    let r = write(
        dir.path(),
        "r.csv",
        "email\nada@example.org\nbob@example.org\ncy@example.org\n",
    );
    let out = dir.path().join("out.csv");
    let receiver = |extra: &[&'static str]| -> Vec<&str> {
        let base = [
            "--input",
            r.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ];
        [&base[..], &["--lowercase", "--trim"], extra].concat()
    };
    let sender = |extra: &[&'static str]| -> Vec<&str> {
        [&["--input", s.to_str().unwrap()][..], extra].concat()
    };
    let (so, ro) = run_pair(&receiver(&[]), &sender(&[]));
    for (o, ours, peer) in [
        (&ro, "trim, lowercase", "no trim, no lowercase"),
        (&so, "no trim, no lowercase", "trim, lowercase"),
    ] {
        assert_clean_failure(o, "take their keys differently");
        let line = format!("ours with {ours}, 1 key column, the peer's with {peer}, 1 key column");
        assert!(stderr(o).contains(&line), "{}", stderr(o));
    }
    assert!(!out.exists(), "a refused run writes nothing");
    // Alike on both sides: all three rows.
    let (so, ro) = run_pair(&receiver(&[]), &sender(&["--lowercase", "--trim"]));
    assert_success(&[&so, &ro]);
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 4);
    // Allowed: the run goes ahead, warned, and finds what byte equality gives.
    let allow = ["--allow-key-mismatch"];
    let (so, ro) = run_pair(&receiver(&allow), &sender(&allow));
    assert_success(&[&so, &ro]);
    assert!(
        stderr(&ro).contains("warning: the parties take their keys"),
        "{}",
        stderr(&ro)
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 2);
}

#[test]
fn empty_keys_are_refused_or_skipped() {
    let dir = tmp();
    let s = write(dir.path(), "s.csv", "k\na\n\"\"\nb\n");
    let out = dir.path().join("out.csv");
    let o = venn()
        .args([
            "send",
            "--connect",
            "127.0.0.1:1",
            "--input",
            s.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_clean_failure(&o, "input line 3: empty key");
    let r = write(dir.path(), "r.csv", "k\nb\nc\n");
    let (so, ro) = run_pair(
        &[
            "--input",
            r.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ],
        &["--input", s.to_str().unwrap(), "--skip-empty"],
    );
    assert_success(&[&so, &ro]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "k\nb\n");
}

#[test]
fn user_errors_are_one_clear_line() {
    let dir = tmp();
    let s = write(dir.path(), "s.csv", "k\na\n");
    let p = s.to_str().unwrap();
    let run = |args: &[&str]| venn().args(args).output().unwrap();
    assert_clean_failure(
        &run(&[
            "send",
            "--protocol",
            "naive",
            "--connect",
            "127.0.0.1:1",
            "--input",
            p,
        ]),
        "INSECURE",
    );
    assert_clean_failure(
        &run(&[
            "send",
            "--protocol",
            "nope",
            "--connect",
            "127.0.0.1:1",
            "--input",
            p,
        ]),
        "unknown protocol 'nope'",
    );
    assert_clean_failure(
        &run(&[
            "send",
            "--column",
            "zzz",
            "--connect",
            "127.0.0.1:1",
            "--input",
            p,
        ]),
        "no column named 'zzz'",
    );
    assert_clean_failure(
        &run(&["receive", "--connect", "127.0.0.1:1", "--input", p]),
        "--output",
    );
    assert_clean_failure(
        &run(&[
            "send",
            "--connect",
            "127.0.0.1:1",
            "--input",
            "/nonexistent.csv",
        ]),
        "cannot open input",
    );
    // Nobody listening: connecting gives up after the timeout.
    let o = within(std::time::Duration::from_secs(10), || {
        run(&[
            "send",
            "--connect",
            "127.0.0.1:9",
            "--timeout",
            "1",
            "--input",
            p,
        ])
    });
    assert_clean_failure(&o, "timed out");
}

#[test]
fn naive_runs_with_insecure_and_says_so() {
    let s: Vec<String> = keys("n", 0..100);
    let r: Vec<String> = keys("n", 50..150);
    assert_eq!(
        intersect(&s, &r, &["--protocol", "naive", "--insecure"]),
        expected(&s, &r)
    );
}

#[test]
fn dkt10_through_the_binary() {
    let s: Vec<String> = keys("d", 0..300);
    let r: Vec<String> = [keys("d", 200..400), keys("e", 0..10)].concat();
    assert_eq!(
        intersect(&s, &r, &["--protocol", "dkt10"]),
        expected(&s, &r)
    );
}

/// kbm23 on ordinary keys (hashed, no `--sigma`) hung at 1,000 rows: each party
/// waited for the other to read what it had sent. At 2^12 a party's offline messages are
/// tens of megabytes, well past what the sockets hold.
#[test]
fn kbm23_on_ordinary_keys_through_the_binary() {
    let s: Vec<String> = [keys("k", 0..2048), keys("s", 0..2048)].concat();
    let r: Vec<String> = [keys("r", 0..2048), keys("k", 0..2048)].concat();
    assert_eq!(
        intersect(&s, &r, &["--protocol", "kbm23"]),
        expected(&s, &r)
    );
}

#[test]
fn rr17_options_through_the_binary() {
    // rr17-de with WAN bins, on any keys.
    let s: Vec<String> = keys("w", 0..400);
    let r: Vec<String> = [keys("w", 300..500), keys("z", 0..20)].concat();
    let wan = ["--protocol", "rr17-de", "--bins", "wan"];
    assert_eq!(intersect(&s, &r, &wan), expected(&s, &r));
    // rr17-de-sm on 32-bit integers, spread up to 2^32 − 1.
    let int = |i: u64| (u32::MAX as u64 - i * 10_007).to_string();
    let s: Vec<String> = (0..300).map(int).collect();
    let r: Vec<String> = (250..400).chain([0]).map(int).collect();
    let sm = ["--protocol", "rr17-de-sm", "--sigma", "32"];
    assert_eq!(intersect(&s, &r, &sm), expected(&s, &r));

    let dir = tmp();
    let ints = write(dir.path(), "ints.csv", "k\n17\n4294967295\n");
    let words = write(dir.path(), "words.csv", "k\n17\n007\n");
    let send = |input: &std::path::Path, extra: &[&str]| {
        let input = input.to_str().unwrap();
        let args = [
            &["send", "--connect", "127.0.0.1:1", "--input", input],
            extra,
        ]
        .concat();
        venn().args(&args).output().unwrap()
    };
    assert_clean_failure(&send(&words, &sm), "key number 2 is not one");
    // Split into buckets, a bad key far down is still refused before the peer is contacted.
    let keys: String = (0..5000).map(|i| format!("{i}\n")).collect();
    let late = write(dir.path(), "late.csv", &format!("k\n{keys}12x\n"));
    let bucketed = [&sm[..], &["--bucket-rows", "500"]].concat();
    assert_clean_failure(&send(&late, &bucketed), "key number 5001 is not one");
    assert_clean_failure(
        &send(&ints, &["--protocol", "rr17-de-sm"]),
        "pass --sigma 32|64",
    );
    assert_clean_failure(
        &send(&ints, &["--protocol", "rr17-de-sm", "--sigma", "16"]),
        "not 16",
    );
    assert_clean_failure(&send(&ints, &["--sigma", "32"]), "no --sigma");
    assert_clean_failure(&send(&ints, &["--bins", "wan"]), "--bins");
    // The parties must pass the same options: each is told which differ.
    let out = dir.path().join("out.csv");
    let (so, ro) = run_pair(
        &[
            "--protocol",
            "rr17-de",
            "--input",
            ints.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ],
        &[
            "--protocol",
            "rr17-de",
            "--bins",
            "wan",
            "--input",
            ints.to_str().unwrap(),
        ],
    );
    for o in [&so, &ro] {
        assert_clean_failure(o, "both must pass the same options");
    }
    assert!(!out.exists());
}

#[test]
fn stats_json_records_the_run() {
    let dir = tmp();
    let s = write(dir.path(), "s.csv", &csv(&keys("k", 0..100)));
    let r = write(dir.path(), "r.csv", &csv(&keys("k", 50..120)));
    let (out, stats) = (dir.path().join("o.csv"), dir.path().join("stats.json"));
    let (so, ro) = run_pair(
        &[
            "--input",
            r.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "--stats-json",
            stats.to_str().unwrap(),
        ],
        &["--input", s.to_str().unwrap()],
    );
    assert_success(&[&so, &ro]);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(v["protocol"], "rr22");
    assert_eq!(v["role"], "receiver");
    assert_eq!(v["items"], 70);
    assert_eq!(v["peer_items"], 100);
    assert_eq!(v["intersection"], 50);
    assert!(v["bytes_sent"].as_u64().unwrap() > 0);
    let summary = stderr(&ro);
    assert!(
        summary.contains("intersection 50 keys, 50 rows written"),
        "{summary}"
    );
}

#[test]
fn demo_and_params_run() {
    let o = venn().arg("demo").output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("GRACE@example.org ,Arlington") && text.contains("ada@example.org,London")
    );
    let o = venn()
        .args(["params", "--protocol", "kkrt16", "--log2n", "8,12,16,20,24"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    for row in [
        "2^8 12 424 56",
        "2^12 6 432 64",
        "2^16 4 440 72",
        "2^20 3 448 80",
        "2^24 2 448 88",
    ] {
        let want: Vec<&str> = row.split(' ').collect();
        assert!(
            text.lines().any(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() >= 5 && f[0] == want[0] && f[2..5] == want[1..4]
            }),
            "Table 2 row {row} missing in:\n{text}"
        );
    }
    assert!(
        text.contains("receiver: semi-honest, learns the intersection;"),
        "roles are listed: {text}"
    );
    assert!(
        !text.contains("with records"),
        "kkrt16 carries none: {text}"
    );
    // Each way of writing the output, a line each, for a protocol that outputs rows.
    for way in [
        "--join inner:",
        "--join left:",
        "--join difference:",
        "--align inner:",
        "--align outer: then each side's unmatched rows",
        "--match-any: for each of a party's identifier values",
    ] {
        assert!(text.contains(&format!("    {way}")), "{way} in: {text}");
    }
    let o = venn()
        .args(["params", "--protocol", "rr22-ca", "--log2n", "8"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&o.stdout).contains("--join"));
    // Thunder (through `venn cloud`): its model, who learns what, and its costs per size.
    let o = venn()
        .args(["params", "--protocol", "thunder", "--log2n", "20"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("security: semi-honest service"), "{text}");
    assert!(text.contains("cannot intersect i with k"), "{text}");
    assert!(text.contains("A pre-token serves one run"), "{text}");
    assert!(
        text.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f == [
                "2^20", "2^20", "96.0", "2097152", "2^-88", "1.1e12", "1048576",
            ]
        }),
        "the 2^20 row: {text}"
    );
    // ub-fhe (through `venn ub`): its model, its sets and the set a dataset takes.
    let o = venn()
        .args(["params", "--protocol", "ub-fhe", "--sizes", "16777216:1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("semi-honest server for the client's privacy"),
        "{text}"
    );
    assert!(text.contains("does not tell its size"), "{text}");
    let row = |want: &[&str]| {
        (text.lines()).any(|l| {
            l.split_whitespace()
                .take(want.len())
                .eq(want.iter().copied())
        })
    };
    assert!(
        row(&["V16M-4096", "19", "3", "6", "4", "782", "26"]),
        "{text}"
    );
    assert!(row(&["2^24", "1", "V16M-1", "14"]), "{text}");
    assert!(row(&["2^24", "4096", "V16M-4096", "52"]), "{text}");
}

/// `venn params` prints RR17's hashing for log2n 8..24 with m = n/4 bins and μ
/// from the recomputed Fig. 5 (spec §3.5: the paper's LAN row belongs to m = n/3), the OT
/// counts m·μ, ℓ_h = 76 + log2 m and, for dual execution, v = λ + 2 log2(nμ) in bytes.
#[test]
fn rr17_params_print_the_recomputed_fig5_bins() {
    // Spec §3.5: μ recomputed for m = n/4 (LAN) and m = ⌊n/10⌋ (WAN).
    let lan = [26u64, 28, 30, 31, 32];
    let wan = [41u64, 43, 45, 47, 49];
    let cases = [
        ("rr17-de", "lan", None),
        ("rr17-ec", "lan", None),
        ("rr17-de", "wan", None),
        ("rr17-ec", "wan", None),
        ("rr17-de-sm", "lan", Some(32)),
        ("rr17-de-sm", "wan", Some(64)),
    ];
    for (protocol, bins, sigma) in cases {
        let mut args = vec!["params", "--protocol", protocol, "--bins", bins];
        let sigma_text = sigma.map(|s: u64| s.to_string());
        if let Some(s) = &sigma_text {
            args.extend(["--sigma", s]);
        }
        args.extend(["--log2n", "8,12,16,20"]);
        let o = venn().args(&args).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let text = String::from_utf8_lossy(&o.stdout);
        let header: Vec<&str> = text
            .lines()
            .find(|l| l.contains("n_sender"))
            .expect("a header")
            .split_whitespace()
            .collect();
        let column = |row: &[&str], name: &str| -> u64 {
            let at = header.iter().position(|h| *h == name).expect(name);
            row[at].parse().unwrap()
        };
        let mus = if bins == "lan" { lan } else { wan };
        let case = format!("{protocol} --bins {bins}");
        for (k, mu) in [8u32, 12, 16, 20].into_iter().zip(mus) {
            let row: Vec<&str> = text
                .lines()
                .map(|l| l.split_whitespace().collect::<Vec<_>>())
                .find(|f| f.first() == Some(&format!("2^{k}").as_str()))
                .unwrap_or_else(|| panic!("{case}: no row 2^{k} in\n{text}"));
            let n = 1u64 << k;
            let m = if bins == "lan" { n / 4 } else { n / 10 };
            assert_eq!(column(&row, "bins"), m, "{case} 2^{k}");
            assert_eq!(column(&row, "mu_receiver"), mu, "{case} 2^{k}");
            // OTs of one instance: one OOS16 OT, or σ' = σ − ⌊log2 m⌋ chosen-message OTs.
            let per = match sigma {
                Some(s) => {
                    assert_eq!(column(&row, "word_bits"), s - m.ilog2() as u64, "{case}");
                    s - m.ilog2() as u64
                }
                None => {
                    assert_eq!(column(&row, "hashed_bits"), 76 + m.ilog2() as u64, "{case}");
                    1
                }
            };
            if protocol == "rr17-ec" {
                assert_eq!(column(&row, "ots"), m * mu, "{case}");
            } else {
                assert_eq!(column(&row, "mu_sender"), mu, "{case}");
                assert_eq!(column(&row, "ots_A"), m * mu * per, "{case}");
                let bits = 40.0 + 2.0 * (n as f64 * mu as f64).log2();
                let v = (bits.ceil() as u64).next_multiple_of(8);
                assert_eq!(column(&row, "v"), v, "{case}");
            }
        }
    }
}

#[test]
fn bench_verifies_every_row_and_replays_each_party_alone() {
    let tmp = tmp();
    let o = venn()
        .env("TMPDIR", tmp.path())
        .args([
            "bench",
            "--protocol",
            "rr17-bloom,kkrt16,naive",
            "--log2n",
            "8",
        ])
        .args(["--threads", "1,2", "--solo", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 6, "3 protocols × 2 thread counts");
    for r in rows {
        assert_eq!(r["verified"], true, "{r}");
        assert_eq!(r["intersection"], 128, "{r}");
        assert!(r["ratio_to_naive"].as_f64().unwrap() > 0.0, "{r}");
    }
    // Each party of each protocol alone at 1 and 2 threads, every replay having repeated
    // the recorded messages exactly (a mismatch fails the whole command).
    let solo = v["solo"].as_array().unwrap();
    assert_eq!(solo.len(), 12);
    for s in solo {
        assert!(!s["phases"].as_array().unwrap().is_empty(), "{s}");
    }
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "the recorded transcripts are removed"
    );
}

/// `venn bench --sizes` runs unequal sets, verified against the intersection both reach,
/// and refuses a set larger than a party takes before making any item of it.
#[test]
fn bench_runs_unequal_sets_and_refuses_sets_too_large() {
    let o = venn()
        .args([
            "bench",
            "--protocol",
            "kkrt16",
            "--sizes",
            "300:2^7",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let row = &v["rows"][0];
    assert_eq!(
        (&row["n_sender"], &row["n_receiver"]),
        (&300.into(), &128.into())
    );
    assert_eq!(
        (&row["verified"], &row["intersection"]),
        (&true.into(), &64.into())
    );
    let o = venn()
        .args(["bench", "--protocol", "naive", "--sizes", "2^40:10"])
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("more than the supported"),
        "{}",
        stderr(&o)
    );
}

/// `venn bench --payload none,36`: rr22 with 36-byte records on the sender's items is a
/// row of its own beside plain rr22 (and naive, which carries none), the receiver having
/// checked the record of each match; the records cost their bytes and little more on the
/// wire, and a width the protocol cannot carry is refused before any run.
#[test]
fn bench_runs_a_payload_row_beside_the_plain_one() {
    let o = venn()
        .args(["bench", "--protocol", "rr22,naive", "--payload", "none,36"])
        .args(["--log2n", "10", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let labels: Vec<&str> = rows
        .iter()
        .map(|r| r["protocol"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["rr22", "rr22/p36", "naive"]);
    for r in rows {
        assert_eq!(
            (&r["verified"], &r["intersection"]),
            (&true.into(), &512.into()),
            "{r}"
        );
    }
    let (plain, with) = (&rows[0], &rows[1]);
    assert_eq!(with["without_records"], "rr22");
    let ratio = with["ratio_to_without_records"].as_f64().unwrap();
    let totals = with["total_s"].as_f64().unwrap() / plain["total_s"].as_f64().unwrap();
    assert!((ratio - totals).abs() < 1e-9, "{ratio} against {totals}");
    let sent = |r: &serde_json::Value| r["mib_sender_to_receiver"].as_f64().unwrap() * 1048576.0;
    let extra = (sent(with) - sent(plain)).round() as u64;
    assert!(
        (36 * 1024..=48 * 1024).contains(&extra),
        "{extra} bytes for 1024 records"
    );

    let o = venn()
        .args([
            "bench",
            "--protocol",
            "rr22",
            "--payload",
            "70000",
            "--log2n",
            "10",
        ])
        .output()
        .unwrap();
    assert_clean_failure(&o, "takes 1 to 65536 bytes, not 70000");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "", "no table begun");
}

/// `venn bench --files` runs both tools end to end and checks each output byte for byte:
/// the shared rows as they are, and with `--join inner` and `left` the sender's columns
/// revealed and appended (every row verified).
#[test]
fn bench_files_verifies_each_join_kind() {
    let tmp = tmp();
    let o = venn()
        .env("TMPDIR", tmp.path())
        .args(["bench", "--files", "--protocol", "rr22", "--log2n", "6"])
        .args(["--join", "none,inner,left", "--file-format", "csv,parquet"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for label in ["rr22 ", "rr22/inner", "rr22/left"] {
        for format in ["csv", "parquet"] {
            let line = (out.lines()).find(|l| l.starts_with(label) && l.contains(format));
            assert!(
                line.is_some_and(|l| l.ends_with("yes")),
                "{label} {format}: {out}"
            );
        }
    }
}

/// `--payload` rows are the protocol benchmark's: `--files` (whose columns are `--join`'s)
/// and `--thunder` refuse it rather than run without it.
#[test]
fn bench_files_and_thunder_refuse_payload_rows() {
    for mode in ["--files", "--thunder"] {
        let o = venn()
            .args(["bench", mode, "--payload", "36", "--log2n", "6"])
            .output()
            .unwrap();
        assert!(!o.status.success(), "{mode}");
        assert!(
            stderr(&o).contains("cannot be used with"),
            "{mode}: {}",
            stderr(&o)
        );
    }
}

/// `venn bench --files` and `--thunder` refuse a size they do not run before running the
/// smaller ones: no table is printed (not even its head), and the refusal is the one the
/// size would meet.
#[test]
fn bench_files_and_thunder_refuse_a_size_before_any_run() {
    for (args, refusal) in [
        (
            &["--files", "--protocol", "naive", "--log2n", "2,31"][..],
            "--files runs 2^2 to 2^30 rows, not 2^31",
        ),
        (
            &["--thunder", "--log2n", "2,25"][..],
            "--thunder runs 2^2 to 2^24 items, not 2^25",
        ),
    ] {
        let tmp = tmp();
        let o = venn()
            .env("TMPDIR", tmp.path())
            .arg("bench")
            .args(args)
            .output()
            .unwrap();
        assert!(!o.status.success(), "{args:?}");
        assert!(stderr(&o).contains(refusal), "{args:?}: {}", stderr(&o));
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "",
            "{args:?}: nothing printed"
        );
    }
}

/// `--solo`'s columns are headed with the thread counts it ran: each bounded to the cores,
/// each once.
#[test]
fn bench_solo_heads_its_columns_with_the_threads_run() {
    let cores = std::thread::available_parallelism().unwrap().get();
    let asked = (8 * cores).to_string();
    let o = venn()
        .args(["bench", "--protocol", "naive", "--log2n", "8", "--solo"])
        .args(["--threads", &format!("1,{asked},{cores}")])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let head = (text.lines())
        .skip_while(|l| !l.starts_with("solo:"))
        .nth(1)
        .unwrap_or_else(|| panic!("no --solo table in\n{text}"));
    let words: Vec<&str> = head.split_whitespace().collect();
    let heads: Vec<&str> = (words.windows(2))
        .filter(|w| w[1] == "thr")
        .map(|w| w[0])
        .collect();
    let mut want = vec!["1".to_string()];
    want.extend((cores > 1).then(|| cores.to_string()));
    assert_eq!(heads, want, "{head}");
}

/// `venn params | head -1`: the reader stops early (while venn still works out the later
/// protocols' tables); venn ends quietly, without a panic.
#[test]
fn printing_into_a_closed_pipe_ends_quietly() {
    use std::io::{BufRead, BufReader};
    let mut child = venn()
        .arg("params")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(!first.is_empty());
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// `psww18-sum`: the receiver learns the number of common keys and the sum of the values
/// the sender's rows with those keys carry (a repeated key's rows all count); `rr22-sum`
/// the sums of several columns at once; values are checked as the file is read, and only
/// the sender of a sum may have them.
#[test]
fn a_sum_over_the_intersection_from_a_value_column() {
    let dir = tmp();
    let s = write(
        dir.path(),
        "s.csv",
        "revenue,customer\n10,ann\n 4294967295 ,bob\n7,ann\n1000,zoe\n0,cat\n",
    );
    let r = write(dir.path(), "r.csv", "customer\nbob\nann\ncat\ndan\n");
    let out = dir.path().join("sum.json");
    let (s, r, out) = (
        s.to_str().unwrap(),
        r.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let sum = ["--protocol", "psww18-sum", "--plaintext"];
    // The circuit's triples from silent OT (the default), and from IKNP.
    for triples in [&[][..], &["--offline", "iknp"]] {
        let sum = [&sum[..], triples].concat();
        let sender = [&sum[..], &["--input", s, "--column", "customer"]].concat();
        let (so, ro) = run_pair(
            &[&sum[..], &["--input", r, "--output", out]].concat(),
            &[&sender[..], &["--value-column", "revenue"]].concat(),
        );
        assert_success(&[&so, &ro]);
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
        assert_eq!(v["intersection_size"], 3, "{triples:?}");
        assert_eq!(v["intersection_sum"], (4294967295u64 + 17).to_string());
    }

    // rr22-sum adds several columns in one run, one sum each, in the order named.
    let s2 = write(
        dir.path(),
        "s2.csv",
        "revenue,customer,units\n10,ann,1\n 4294967295 ,bob,2\n7,ann,3\n1000,zoe,4\n0,cat,5\n",
    );
    let rr22 = ["--protocol", "rr22-sum", "--plaintext"];
    let (so, ro) = run_pair(
        &[&rr22[..], &["--input", r, "--output", out]].concat(),
        &[
            &rr22[..],
            &["--input", s2.to_str().unwrap(), "--column", "customer"],
            &["--value-column", "units,revenue"],
        ]
        .concat(),
    );
    assert_success(&[&so, &ro]);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    assert_eq!(v["intersection_size"], 3);
    let revenue = (4294967295u64 + 17).to_string();
    assert_eq!(v["intersection_sums"], serde_json::json!(["11", revenue]));
    assert_eq!(v["intersection_sum"], "11");

    // A value that is not an integer below 2^32 names its line; no value column, or one on
    // the receiver's side, is refused before the peer is contacted.
    let bad = write(
        dir.path(),
        "bad.csv",
        "customer,revenue\nann,1\nbob,4294967296\n",
    );
    let o = venn()
        .arg("send")
        .args(sum)
        .args([
            "--input",
            bad.to_str().unwrap(),
            "--value-column",
            "revenue",
        ])
        .args(["--connect", "127.0.0.1:9", "--timeout", "5"])
        .output()
        .unwrap();
    assert_clean_failure(&o, "line 3");
    for (role, extra) in [
        ("send", &[][..]),
        ("receive", &["--value-column", "revenue"][..]),
    ] {
        let o = venn()
            .arg(role)
            .args(sum)
            .args(["--input", s, "--column", "customer", "--output", out])
            .args(extra)
            .args(["--connect", "127.0.0.1:9", "--timeout", "5"])
            .output()
            .unwrap();
        assert_clean_failure(&o, "--value-column");
    }
    // psww18-sum adds one column.
    let o = venn()
        .arg("send")
        .args(sum)
        .args(["--input", s2.to_str().unwrap(), "--column", "customer"])
        .args(["--value-column", "revenue,units"])
        .args(["--connect", "127.0.0.1:9", "--timeout", "5"])
        .output()
        .unwrap();
    assert_clean_failure(&o, "one value column");
}

/// `venn params --protocol rr22-m` states what a cheating receiver can get: the default
/// upload deadline for each size and the union bound it buys (overfitting.rs), not the
/// OKVS's size alone; and, as rr22's does, what records reveal, with what the bound
/// means for them.
#[test]
fn rr22_m_params_state_the_bound_on_a_cheating_receiver() {
    let records = "  with records: The receiver learns, beside the intersection, the sender's \
                   record of each item it matched and the records' width: every sender \
                   record is sent, padded to that width under its item's OPRF value, so the \
                   unmatched ones stay pseudorandom to it; the sender learns nothing more. \
                   Where the sender's keys have several rows, each row's record goes, so the \
                   receiver learns too the number of rows of each matched key and the \
                   sender's rows in all. With --both and the receiver's records, the sender \
                   learns the receiver's records of each matched item, one for each of its \
                   rows.";
    let o = venn()
        .args(["params", "--protocol", "rr22", "--log2n", "8"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.lines().any(|l| l == records), "{text}");
    let o = venn()
        .args(["params", "--protocol", "rr22-m", "--log2n", "16,20,24"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("overfitting") && text.contains("--upload-deadline"),
        "{text}"
    );
    let cheating = " A cheating receiver reads a record only where it gets an answer, so the \
                    bound on its extra answers (cheating_receiver) bounds its extra records.";
    assert!(
        text.lines().any(|l| l == format!("{records}{cheating}")),
        "{text}"
    );
    let header: Vec<&str> = (text.lines().find(|l| l.contains("n_sender")))
        .expect("a header")
        .split_whitespace()
        .collect();
    let rows: Vec<Vec<&str>> = (text.lines())
        .filter(|l| l.trim_start().starts_with("2^"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let at = |name| header.iter().position(|h| *h == name).expect(name);
    let (deadline, bound) = (at("upload_deadline"), at("cheating_receiver"));
    // A row's deadline takes two cells ("32 s"), so its bound is one further on.
    assert_eq!(header.len() + 1, rows[0].len(), "{text}");
    let shown: Vec<(&str, &str)> = (rows.iter()).map(|r| (r[deadline], r[bound + 1])).collect();
    assert_eq!(
        shown,
        [
            ("30", "≤1.30·m=1.73·n_R"),
            ("32", "≤1.25·m=1.69·n_R"),
            ("66", "≤1.22·m=1.65·n_R")
        ],
        "{text}"
    );
}

/// A standard output whose reader has gone (`venn … | head`, the reader stopping at
/// once).
fn closed_stdout() -> std::process::Stdio {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer.into()
}

/// Every command that prints ends quietly when its reader has gone — by SIGPIPE, as other
/// tools, without a panic, its temporary directories removed — while a peer that closes
/// its socket stays an error.
#[test]
fn a_closed_standard_output_ends_every_printing_command_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tmp();
    let quiet = |what: &str, o: std::process::Output| {
        let err = stderr(&o);
        assert!(!err.contains("panicked"), "{what}: {err}");
        assert_eq!(o.status.signal(), Some(libc::SIGPIPE), "{what}: {err}");
    };
    let run = |args: &[&str]| {
        venn()
            .env("TMPDIR", dir.path())
            .args(args)
            .stdout(closed_stdout())
            .output()
            .unwrap()
    };
    let at = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    quiet("keygen", run(&["keygen", "--out", &at("keys")]));
    quiet(
        "cloud invite",
        run(&["cloud", "invite", "--data", &at("store")]),
    );
    quiet("demo", run(&["demo"]));
    quiet(
        "bench",
        run(&["bench", "--protocol", "kkrt16", "--log2n", "6"]),
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with("venn-"))
        .collect();
    assert!(left.is_empty(), "temporary directories left: {left:?}");

    // A receiver's rows (`--output -`), and a count printed as JSON.
    let s = write(dir.path(), "s.csv", "k\nb\nc\nd\n");
    let r = write(dir.path(), "r.csv", "k\na\nb\nc\n");
    let (s, r) = (s.to_str().unwrap(), r.to_str().unwrap());
    let count = ["--protocol", "dgt12-ca"];
    for (sender, receiver) in [(&[][..], &["--output", "-"][..]), (&count, &count)] {
        let (s, addr) = spawn_listening(&[&["send", "--input", s], sender].concat());
        let args = [&["receive", "--input", r, "--connect", &addr], receiver].concat();
        quiet(&format!("receive {receiver:?}"), run(&args));
        assert_success(&[&wait_listening(s)]);
    }

    // A peer that closes its socket mid-run is an error, not a death by SIGPIPE.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let peer = std::thread::spawn(move || {
        let (mut socket, _) = listener.accept().unwrap();
        let _ = std::io::Read::read(&mut socket, &mut [0; 64]);
    });
    let o = run(&["send", "--input", s, "--connect", &addr]);
    peer.join().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("venn: error: "), "{}", stderr(&o));
}

/// More threads than cores only take turns (idle pool workers spin): a party runs on the
/// cores it may use and says so, as `venn bench` does; no threads at all is refused, by
/// the cloud's worker too.
#[test]
fn threads_are_bounded_by_the_cores() {
    let cores = std::thread::available_parallelism().unwrap().get();
    let asked = (8 * cores).to_string();
    let dir = tmp();
    let s = write(dir.path(), "s.csv", &csv(&keys("k", 0..50)));
    let r = write(dir.path(), "r.csv", &csv(&keys("k", 25..75)));
    let (out, stats) = (dir.path().join("o.csv"), dir.path().join("stats.json"));
    let (s, r) = (s.to_str().unwrap(), r.to_str().unwrap());
    let threads = ["--threads", &asked];
    let (so, ro) = run_pair(
        &[
            &["--input", r, "--output", out.to_str().unwrap()][..],
            &["--stats-json", stats.to_str().unwrap()],
            &threads,
        ]
        .concat(),
        &[&["--input", s][..], &threads].concat(),
    );
    assert_success(&[&so, &ro]);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(v["threads"], cores);
    let warning = format!("{asked} threads asked for, but this process may use {cores} cores");
    for o in [&so, &ro] {
        assert!(stderr(o).contains(&warning), "{}", stderr(o));
    }

    let o = venn()
        .args(["bench", "--protocol", "kkrt16", "--log2n", "6", "--json"])
        .args(["--threads", &format!("1,{asked}")])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains(&warning), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows: Vec<u64> = (v["rows"].as_array().unwrap().iter())
        .map(|r| r["threads"].as_u64().unwrap())
        .collect();
    let mut want = vec![1];
    want.extend((cores > 1).then_some(cores as u64));
    assert_eq!(rows, want);

    let worker = [
        "--server",
        "http://127.0.0.1:9",
        "--worker-identity",
        "/nonexistent",
    ];
    let refused = [
        &[
            "send",
            "--input",
            s,
            "--connect",
            "127.0.0.1:9",
            "--timeout",
            "1",
        ][..],
        &[&["cloud", "worker"][..], &worker].concat(),
    ];
    for args in refused {
        let o = venn().args(args).args(["--threads", "0"]).output().unwrap();
        assert_clean_failure(&o, "threads must be at least 1");
    }
}

/// A Thunder dataset is one key a row: `--match-any` and `--reveal-columns`, which only a
/// run between two parties has, are not options of upload and result (clap refuses them,
/// naming the flag, before the service is reached) rather than taken and ignored.
#[test]
fn thunder_datasets_refuse_party_options() {
    let dir = tmp();
    let input = write(dir.path(), "d.csv", "email,phone\na,1\n");
    let (input, file) = (input.to_str().unwrap(), dir.path().join("d.key"));
    let file = file.to_str().unwrap();
    let client = [
        "--server",
        "http://127.0.0.1:9",
        "--identity",
        "/nonexistent",
    ];
    let keys = ["--input", input, "--key-file", file];
    for party in [
        ["--match-any", "email,phone"],
        ["--reveal-columns", "phone"],
    ] {
        for command in [
            &["cloud", "upload", "--dataset", "d"][..],
            &[
                "cloud",
                "result",
                "--run",
                "r",
                "--output",
                "/nonexistent/out.csv",
            ],
        ] {
            let o = venn()
                .args(command)
                .args(client)
                .args(keys)
                .args(party)
                .output()
                .unwrap();
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{command:?} {party:?}: {err}");
            assert!(
                err.contains(&format!("unexpected argument '{}'", party[0])),
                "{command:?}: {err}"
            );
        }
    }
}

/// A sender learns nothing without --both: its --output, which would be silently
/// ignored, is refused in one line.
#[test]
fn a_senders_output_without_both_is_refused() {
    let dir = tmp();
    let s = write(dir.path(), "s.csv", "k\na\n");
    let out = dir.path().join("out.csv");
    let o = venn()
        .args(["send", "--input", s.to_str().unwrap()])
        .args(["--output", out.to_str().unwrap()])
        .args(["--connect", "127.0.0.1:9", "--timeout", "1"])
        .output()
        .unwrap();
    assert_clean_failure(&o, "the sender learns nothing without --both");
    assert!(!out.exists());
}

/// A binary file given as lines of keys (here an ELF header) is refused, naming the line
/// of its first NUL byte, rather than run on keys that match nothing.
#[test]
fn a_binary_file_of_lines_is_refused() {
    let dir = tmp();
    let binary = dir.path().join("keys.bin");
    std::fs::write(&binary, b"alice\nbob\n\x7fELF\x02\x01\x01\x00\x00\nzoe\n").unwrap();
    let out = dir.path().join("out.csv");
    let o = venn()
        .args(["receive", "--format", "lines"])
        .args(["--input", binary.to_str().unwrap()])
        .args(["--output", out.to_str().unwrap()])
        .args(["--connect", "127.0.0.1:9", "--timeout", "1"])
        .output()
        .unwrap();
    assert_clean_failure(&o, "input line 3: a NUL byte");
}

/// Files separated by semicolons (as European spreadsheets save CSV) or tabs are read with
/// `--delimiter`, quotes and all; the matching rows are written as they are, with the
/// input's delimiter. A semicolon file read as comma-separated names the way out.
#[test]
fn semicolon_and_tab_separated_files_are_read_with_delimiter() {
    let dir = tmp();
    let s = write(
        dir.path(),
        "s.csv",
        "name;email\nAda;ada@example.org\n\"Turing; Alan\";alan@example.org\nGrace;grace@example.org\n",
    );
    let r = write(
        dir.path(),
        "r.tsv",
        "id\temail\tcity\n1\tgrace@example.org\tArlington\n2\t\"alan@example.org\"\tWilmslow\n3\tbob@example.org\tx\n",
    );
    let out = dir.path().join("out.tsv");
    // Split into buckets on disk too, and written back from the file.
    for (tab, buckets) in [("tab", 0), ("\\t", 1), ("\t", 0)] {
        let buckets = ["--bucket-rows", "1"].repeat(buckets);
        let (so, ro) = run_pair(
            &[
                &[
                    "--input",
                    r.to_str().unwrap(),
                    "--output",
                    out.to_str().unwrap(),
                    "--column",
                    "email",
                    "--delimiter",
                    tab,
                ][..],
                &buckets,
            ]
            .concat(),
            &[
                "--input",
                s.to_str().unwrap(),
                "--column",
                "email",
                "--delimiter",
                ";",
            ],
        );
        assert_success(&[&so, &ro]);
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "id\temail\tcity\n1\tgrace@example.org\tArlington\n2\t\"alan@example.org\"\tWilmslow\n",
            "--delimiter {tab:?}"
        );
    }
    let o = venn()
        .args(["send", "--connect", "127.0.0.1:1", "--column", "email"])
        .args(["--input", s.to_str().unwrap()])
        .output()
        .unwrap();
    assert_clean_failure(&o, "no column named 'email' (columns: name;email");
    assert!(stderr(&o).contains("--delimiter ';'"), "{}", stderr(&o));
    let o = venn()
        .args(["send", "--connect", "127.0.0.1:1", "--delimiter", ":"])
        .args(["--input", s.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("one of"), "{}", stderr(&o));
}

/// A party that cannot connect ends naming the address and why its last attempt failed;
/// one that waits in vain names where it listened.
#[test]
fn giving_up_on_the_peer_names_the_address_and_the_last_error() {
    let dir = tmp();
    let input = write(dir.path(), "in.csv", "k\na\n");
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let o = within(std::time::Duration::from_secs(10), || {
        venn()
            .args(["send", "--connect", &addr, "--timeout", "1"])
            .args(["--input", input.to_str().unwrap()])
            .output()
            .unwrap()
    });
    assert_clean_failure(
        &o,
        &format!("timed out after 1 s connecting to {addr}: connection refused"),
    );
    let (r, bound) = spawn_listening(&[
        "receive",
        "--timeout",
        "1",
        "--input",
        input.to_str().unwrap(),
        "--output",
        dir.path().join("out.csv").to_str().unwrap(),
    ]);
    let o = within(std::time::Duration::from_secs(10), || wait_listening(r));
    assert_clean_failure(
        &o,
        &format!("timed out after 1 s waiting for the peer on {bound}"),
    );
}

/// `venn demo` shows its files' contents and names no file it removes on exit; with
/// `--keep DIR` the sample files and Bob's matches stay in DIR (never replacing a file),
/// for `venn send`/`venn receive` by hand.
#[test]
fn demo_names_only_files_that_stay() {
    let o = venn().arg("demo").output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let named: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || "():".contains(c))
        .filter(|w| w.ends_with(".csv"))
        .collect();
    for path in &named {
        assert!(
            std::path::Path::new(path).exists(),
            "the demo named '{path}', gone after it ended:\n{text}"
        );
    }
    let dir = tmp();
    let keep = dir.path().join("demo");
    let o = venn().args(["demo", "--keep"]).arg(&keep).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let matches = std::fs::read_to_string(keep.join("bob-matches.csv")).unwrap();
    assert_eq!(
        matches.lines().count(),
        4,
        "header and three shared keys: {matches}"
    );
    for file in ["alice.csv", "bob.csv", "bob-matches.csv"] {
        let path = keep.join(file);
        assert!(
            text.contains(path.to_str().unwrap()),
            "{file} named: {text}"
        );
    }
    let again = venn().args(["demo", "--keep"]).arg(&keep).output().unwrap();
    assert_clean_failure(&again, "exists");
    assert_eq!(
        std::fs::read_to_string(keep.join("bob-matches.csv")).unwrap(),
        matches
    );
}

/// docs/protocols.md's table of what each output reveals names every protocol of the
/// registry (but the insecure baseline) in the row of what its receiver learns.
#[test]
fn the_output_table_names_every_protocol() {
    use venn::protocols::{registry, OutputKind, Security};
    use venn::session::Role;
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/protocols.md"),
    )
    .unwrap();
    let row = |label: &str| -> Vec<String> {
        let line = doc
            .lines()
            .find(|l| l.starts_with(&format!("| {label} |")))
            .unwrap_or_else(|| panic!("no row '{label}'"));
        let cell = line.split('|').nth(2).unwrap();
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    };
    for p in registry() {
        let info = p.info();
        if info.security == Security::Insecure {
            continue;
        }
        let label = match info.role(Role::Receiver).output {
            OutputKind::Indices => "the intersection",
            OutputKind::Count => "its size",
            OutputKind::Sum => "a sum and its size",
            other => panic!("{}: no row for {other:?}", info.name),
        };
        let named = row(label).iter().any(|n| match n.strip_suffix('*') {
            Some(prefix) => info.name.starts_with(prefix),
            None => n == info.name,
        });
        assert!(named, "'{}' is missing from the row '{label}'", info.name);
    }
}

/// docs/cli.md's `venn plan` example is what this build prints (refit the cost model,
/// and paste the new output there).
#[test]
fn the_plan_example_in_the_docs_is_this_builds_output() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/cli.md"),
    )
    .unwrap();
    let command = "$ venn plan --n-self 2^20 --n-peer 2^20 --net wan --threat malicious\n";
    let example = doc.split(command).nth(1).expect("the example's command");
    let shown = example.split("\n```").next().unwrap();
    let args = command.trim_start_matches("$ venn ").split_whitespace();
    let o = venn().args(args).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(shown, String::from_utf8_lossy(&o.stdout).trim_end());
}

/// `venn plan` lists only protocols that take the set sizes: kbm23 runs 10^4 against 10^4
/// keys, but 10^4 against 10^7 would need a field of more than 62 bits, which its
/// parameters (and so the handshake) refuse; the plan says why instead of listing it.
#[test]
fn plan_lists_only_protocols_that_take_the_sizes() {
    let plan = |peer: &str| {
        let o = venn()
            .args(["plan", "--n-self", "10000", "--n-peer", peer])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let listed = |out: &str| out.lines().any(|l| l.starts_with("kbm23 "));
    let equal = plan("10000");
    assert!(listed(&equal), "{equal}");
    let unequal = plan("10000000");
    assert!(!listed(&unequal), "{unequal}");
    assert!(
        unequal.contains("not listed: kbm23 on keys hashed to"),
        "{unequal}"
    );
}

/// `venn plan` predicts unequal sets from each set's own part: a receiver of 10^4 keys
/// against a sender's 10^7 sends rr22's OKVS of its own 10^4 (1.07 MB measured), not one
/// of 10^7 (the old reading at the larger set: 207 MiB); and at 10^4 against 10^6, read
/// within the sizes measured, each party's memory model (what `--max-memory` must allow)
/// is not below its predicted peak (KKRT16's and PSSZ15's senders were, at 2.5×).
#[test]
fn plan_predicts_unequal_sets_from_each_sets_part() {
    let plan = |peer: &str| {
        let o = venn()
            .args(["plan", "--n-self", "10000", "--n-peer", peer, "--json"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        plan["candidates"].as_array().unwrap().clone()
    };
    let far = plan("10000000");
    let rr22 = (far.iter())
        .find(|c| c["protocol"] == "rr22" && c["flags"] == "")
        .expect("rr22 listed");
    let mib = |field: &str| rr22[field].as_f64().unwrap() / (1u64 << 20) as f64;
    assert!(
        (0.5..4.0).contains(&mib("receiver_bytes")),
        "receiver → sender: {} MiB",
        mib("receiver_bytes")
    );
    assert!(mib("sender_bytes") > 50.0, "{rr22}");
    let near = plan("1000000");
    let within = |c: &&serde_json::Value| c["extrapolated"] == false;
    assert!(
        near.iter()
            .filter(within)
            .any(|c| c["protocol"] == "kkrt16"),
        "kkrt16 is read within the sizes measured"
    );
    for c in near.iter().filter(within) {
        for role in ["sender", "receiver"] {
            let peak = c[format!("{role}_peak")].as_f64().unwrap();
            let model = c[format!("{role}_memory")].as_f64().unwrap();
            assert!(peak <= 1.05 * model, "{role}'s model below its peak: {c}");
        }
    }
}

/// ARCHITECTURE.md's map names every source file: in its crate's part of the map, a
/// file by its name or its path (below `src/`, or from it), a `mod.rs` by its directory
/// (`name/`). A
/// file added without a line in the map fails here.
#[test]
fn the_architecture_map_names_every_source_file() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let map = doc
        .split("```text\n")
        .nth(1)
        .unwrap()
        .split("\n```")
        .next()
        .unwrap();
    // The map's parts, one a crate, between rules of '─', each opening with the crate's name.
    let parts: Vec<&str> = map.split('─').filter(|p| !p.trim().is_empty()).collect();
    let part = |krate: &str| {
        (parts.iter())
            .find(|p| p.split_whitespace().next() == Some(krate))
            .unwrap_or_else(|| panic!("no part of the map for {krate}"))
    };
    // `name` in `text`, not as the tail of a longer name or path.
    let names = |text: &str, name: &str| {
        text.match_indices(name).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '/')
        })
    };
    fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut missing = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).unwrap() {
        let krate = krate.unwrap().path();
        let name = krate.file_name().unwrap().to_string_lossy().into_owned();
        let src = krate.join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        let text = part(&name);
        for file in files {
            let relative = file
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let file_name = file.file_name().unwrap().to_string_lossy().into_owned();
            let named = match file_name.as_str() {
                "mod.rs" | "lib.rs" | "main.rs" => match file.parent().unwrap() {
                    dir if dir == src => true,
                    dir => names(
                        text,
                        &format!("{}/", dir.file_name().unwrap().to_string_lossy()),
                    ),
                },
                _ => [file_name, relative.clone(), format!("src/{relative}")]
                    .iter()
                    .any(|n| names(text, n)),
            };
            if !named {
                missing.push(format!("{name}: src/{relative}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not in ARCHITECTURE.md's map: {missing:?}"
    );
}
