//! `venn precompute` and `venn send/receive --state` through the binary: five protocols'
//! online phase from a precomputed state ([`PROTOCOLS`]), and every way a state can be
//! misused.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Output;

const PROTOCOLS: [&str; 5] = ["kkrt16", "rr17-bloom", "dkt10", "dcw13", "naive"];

fn keys(prefix: &str, range: std::ops::Range<usize>) -> String {
    let rows: String = range.map(|i| format!("{prefix}{i}\n")).collect();
    format!("key\n{rows}")
}

/// Both parties of `venn precompute` for `protocol`, with the receiver's and the sender's
/// state files and maxima.
fn precompute(protocol: &str, states: [&Path; 2], max: [usize; 2]) -> (Output, Output) {
    let common = |role: &str, state: &Path, max: usize| -> Vec<String> {
        let mut v: Vec<String> = [
            "precompute",
            "--protocol",
            protocol,
            "--role",
            role,
            "--timeout",
            "20",
            "--max-items",
            &max.to_string(),
            "--state",
            state.to_str().unwrap(),
        ]
        .map(String::from)
        .to_vec();
        if protocol == "naive" {
            v.push("--insecure".into());
        }
        v
    };
    let r = common("receiver", states[0], max[0]);
    let r: Vec<&str> = r.iter().map(String::as_str).collect();
    let (child, addr) = spawn_listening(&r);
    let s = venn()
        .args(common("sender", states[1], max[1]))
        .args(["--connect", &addr])
        .output()
        .unwrap();
    (wait_listening(child), s)
}

/// The online run of `protocol` from the given states.
fn online(protocol: &str, dir: &Path, states: [&Path; 2], sets: [&str; 2]) -> (Output, Output) {
    let r_in = write(dir, "r.csv", sets[0]);
    let s_in = write(dir, "s.csv", sets[1]);
    let out = dir.join("out.csv");
    let insecure: &[&str] = if protocol == "naive" {
        &["--insecure"]
    } else {
        &[]
    };
    let base = ["--protocol", protocol, "--timeout", "20"];
    let (s, r) = run_pair(
        &[
            &base[..],
            insecure,
            &[
                "--input",
                r_in.to_str().unwrap(),
                "--output",
                out.to_str().unwrap(),
                "--state",
                states[0].to_str().unwrap(),
            ],
        ]
        .concat(),
        &[
            &base[..],
            insecure,
            &[
                "--input",
                s_in.to_str().unwrap(),
                "--state",
                states[1].to_str().unwrap(),
            ],
        ]
        .concat(),
    );
    (r, s)
}

/// One party alone with a state that must be refused before any peer is contacted.
fn alone(role: &str, protocol: &str, dir: &Path, state: &Path) -> Output {
    let input = write(dir, "alone.csv", &keys("k", 0..11));
    // Only the receiver learns rows (a sender's --output is refused).
    let out = dir.join("alone-out.csv");
    let output = ["--output", out.to_str().unwrap()];
    let output = if role == "receive" { &output[..] } else { &[] };
    within(std::time::Duration::from_secs(10), || {
        venn()
            .args([role, "--protocol", protocol, "--connect", "127.0.0.1:9"])
            .args(["--timeout", "5", "--input", input.to_str().unwrap()])
            .args(output)
            .args(["--state", state.to_str().unwrap()])
            .output()
            .unwrap()
    })
}

fn paths(dir: &Path, tag: &str) -> [PathBuf; 2] {
    [
        dir.join(format!("{tag}-r.state")),
        dir.join(format!("{tag}-s.state")),
    ]
}

#[test]
fn protocols_run_online_from_a_precomputed_state() {
    for p in PROTOCOLS {
        let dir = tmp();
        let [r, s] = paths(dir.path(), "a");
        let (pr, ps) = precompute(p, [&r, &s], [300, 200]);
        assert_success(&[&pr, &ps]);
        assert!(stderr(&pr).contains("single use"), "{}", stderr(&pr));
        use std::os::unix::fs::PermissionsExt;
        for f in [&r, &s] {
            let mode = std::fs::metadata(f).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{p}: state files are owner-only");
        }
        // Fewer items than precomputed for: 250 and 150 of the 300 and 200.
        let (or, os) = online(
            p,
            dir.path(),
            [&r, &s],
            [&keys("k", 0..250), &keys("k", 100..250)],
        );
        assert_success(&[&or, &os]);
        let rows = std::fs::read_to_string(dir.path().join("out.csv")).unwrap();
        assert_eq!(rows.lines().count(), 1 + 150, "{p}: {}", stderr(&or));
        assert!(!r.exists() && !s.exists(), "{p}: states are used up");
    }
}

#[test]
fn a_state_is_used_once() {
    let dir = tmp();
    let [r, s] = paths(dir.path(), "a");
    let (pr, ps) = precompute("kkrt16", [&r, &s], [100, 100]);
    assert_success(&[&pr, &ps]);
    let sets = [keys("k", 0..50), keys("k", 25..75)];
    let (or, os) = online("kkrt16", dir.path(), [&r, &s], [&sets[0], &sets[1]]);
    assert_success(&[&or, &os]);
    assert_clean_failure(&alone("receive", "kkrt16", dir.path(), &r), "used up");
    assert_clean_failure(&alone("send", "kkrt16", dir.path(), &s), "used up");
}

#[test]
fn a_state_from_another_precomputation_is_refused() {
    let dir = tmp();
    let [r1, s1] = paths(dir.path(), "one");
    let [r2, s2] = paths(dir.path(), "two");
    for (r, s) in [(&r1, &s1), (&r2, &s2)] {
        let (pr, ps) = precompute("rr17-bloom", [r, s], [100, 100]);
        assert_success(&[&pr, &ps]);
    }
    let sets = [keys("k", 0..50), keys("k", 25..75)];
    let (or, os) = online("rr17-bloom", dir.path(), [&r1, &s2], [&sets[0], &sets[1]]);
    for o in [&or, &os] {
        assert_clean_failure(o, "different precomputation");
    }
    assert!(
        r1.exists() && s2.exists(),
        "a refused session uses nothing up"
    );
    // A state of another protocol, or of the other role.
    let o = alone("receive", "kkrt16", dir.path(), &r1);
    assert_clean_failure(&o, "not a receiver state of 'kkrt16'");
    let o = alone("receive", "rr17-bloom", dir.path(), &s1);
    assert_clean_failure(&o, "holds a sender state");
    // Only one side with a state.
    let out = dir.path().join("o.csv");
    let r_in = write(dir.path(), "r.csv", &sets[0]);
    let s_in = write(dir.path(), "s.csv", &sets[1]);
    let (or, os) = run_pair(
        &[
            "--protocol",
            "rr17-bloom",
            "--timeout",
            "20",
            "--input",
            r_in.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "--state",
            r1.to_str().unwrap(),
        ],
        &[
            "--protocol",
            "rr17-bloom",
            "--timeout",
            "20",
            "--input",
            s_in.to_str().unwrap(),
        ],
    );
    assert_clean_failure(&or, "pass --state on both sides");
    assert_clean_failure(&os, "pass --state on both sides");
    assert!(!out.exists());
}

#[test]
fn inputs_larger_than_precomputed_are_refused() {
    let dir = tmp();
    // 11 items for a sender state made for 10: refused before the peer is contacted.
    let [r, s] = paths(dir.path(), "b");
    let (pr, ps) = precompute("kkrt16", [&r, &s], [100, 10]);
    assert_success(&[&pr, &ps]);
    let o = alone("send", "kkrt16", dir.path(), &s);
    assert_clean_failure(&o, "11 items, more than the 10 this state");
    assert!(s.exists(), "a refused run uses nothing up");
}

#[test]
fn deleted_and_corrupted_states_are_refused() {
    let dir = tmp();
    let [r, s] = paths(dir.path(), "a");
    let (pr, ps) = precompute("dcw13", [&r, &s], [100, 100]);
    assert_success(&[&pr, &ps]);
    let good = std::fs::read(&s).unwrap();
    let mut flipped = good.clone();
    let at = good.len() - 40;
    flipped[at] ^= 1;
    for (bytes, needle) in [
        (&flipped[..], "corrupted"),
        (&good[..good.len() / 2], "truncated"),
        (&b"key\nnot a state\n"[..], "not a venn state file"),
    ] {
        std::fs::write(&s, bytes).unwrap();
        assert_clean_failure(&alone("send", "dcw13", dir.path(), &s), needle);
    }
    std::fs::remove_file(&s).unwrap();
    assert_clean_failure(&alone("send", "dcw13", dir.path(), &s), "does not exist");
    // The receiver's state was never used: with the sender's intact state back, they run.
    std::fs::write(&s, &good).unwrap();
    let (or, os) = online(
        "dcw13",
        dir.path(),
        [&r, &s],
        [&keys("k", 0..50), &keys("k", 25..75)],
    );
    assert_success(&[&or, &os]);
}

#[test]
fn an_existing_file_is_never_overwritten_by_a_state() {
    let dir = tmp();
    let [r, s] = paths(dir.path(), "a");
    std::fs::write(&r, "precious").unwrap();
    let o = venn()
        .args(["precompute", "--role", "receiver", "--max-items", "10"])
        .args(["--state", r.to_str().unwrap(), "--connect", "127.0.0.1:9"])
        .output()
        .unwrap();
    assert_clean_failure(&o, "never overwritten");
    assert_eq!(std::fs::read_to_string(&r).unwrap(), "precious");
    assert!(!s.exists());
}
