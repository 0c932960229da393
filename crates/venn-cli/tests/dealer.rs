//! kbm23's offline phases other than OT through the real binary: `venn dealer` with
//! `--offline dealer` on integer and hashed keys, over TLS with every link pinned, and each
//! way the dealer can be missing or misconfigured, each a clean error; and `--offline bfv`.

use crate::common::*;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};

/// Starts `venn dealer` on an ephemeral port; returns it and its address.
fn spawn_dealer(extra: &[&str]) -> (Child, String) {
    let mut child = venn()
        .args(["dealer", "--listen", "127.0.0.1:0", "--timeout", "30"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn venn dealer");
    let mut first = String::new();
    BufReader::new(child.stdout.as_mut().expect("stdout"))
        .read_line(&mut first)
        .expect("a line");
    let addr = first
        .trim()
        .strip_prefix("listening ")
        .unwrap_or_else(|| panic!("the dealer printed '{first}'"))
        .to_string();
    (child, addr)
}

/// Integer keys 0..n step `step`, as a CSV column.
fn integers(dir: &Path, name: &str, keys: impl Iterator<Item = u32>) -> String {
    let body: String = keys.map(|k| format!("{k}\n")).collect();
    let path = write(dir, name, &format!("id\n{body}"));
    path.to_str().unwrap().to_string()
}

#[test]
fn dealt_tuples_give_the_intersection_on_integer_and_hashed_keys() {
    let dir = tmp();
    let s = integers(dir.path(), "s.csv", (0..3000).map(|k| k * 3));
    let r = integers(dir.path(), "r.csv", (0..2000).map(|k| k * 5));
    let want: String = (0..2000u32)
        .map(|k| k * 5)
        .filter(|k| k % 3 == 0 && *k < 9000)
        .map(|k| format!("{k}\n"))
        .collect();
    let (mut dealer, addr) = spawn_dealer(&["--sessions", "2"]);
    for sigma in [&["--sigma", "32"][..], &[]] {
        let out = dir.path().join(format!("out{}.csv", sigma.len()));
        let common = [
            &[
                "--protocol",
                "kbm23",
                "--offline",
                "dealer",
                "--dealer",
                &addr,
            ][..],
            sigma,
        ]
        .concat();
        let (so, ro) = run_pair(
            &[
                &common[..],
                &["--input", &r, "--output", out.to_str().unwrap()],
            ]
            .concat(),
            &[&common[..], &["--input", &s]].concat(),
        );
        assert_success(&[&so, &ro]);
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            format!("id\n{want}")
        );
    }
    assert!(
        dealer.wait().unwrap().success(),
        "the dealer stops after two sessions"
    );
}

fn as_str(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn every_link_can_be_pinned_and_a_wrong_dealer_is_refused() {
    let dir = tmp();
    let (ca, ka, fa) = keygen(dir.path(), "a");
    let (cb, kb, fb) = keygen(dir.path(), "b");
    let (cd, kd, fd) = keygen(dir.path(), "d");
    let s = integers(dir.path(), "s.csv", 10..60);
    let r = integers(dir.path(), "r.csv", 50..90);
    let out = dir.path().join("out.csv");
    let pins = format!("{fa},{fb}");
    let dealer_tls = [
        "--tls-cert",
        &cd,
        "--tls-key",
        &kd,
        "--peer-fingerprint",
        &pins,
    ];
    let (mut dealer, addr) = spawn_dealer(&[&["--sessions", "1"][..], &dealer_tls].concat());
    let party = |cert: &str, key: &str, peer: &str, dealer_fp: &str| -> Vec<String> {
        [
            "--protocol",
            "kbm23",
            "--sigma",
            "32",
            "--offline",
            "dealer",
            "--dealer",
            &addr,
            "--tls-cert",
            cert,
            "--tls-key",
            key,
            "--peer-fingerprint",
            peer,
            "--dealer-fingerprint",
            dealer_fp,
            // Room for a loaded test machine: the refusal below needs no wait.
            "--timeout",
            "30",
        ]
        .map(String::from)
        .to_vec()
    };
    let recv = [party(&cb, &kb, &fa, &fd), vec!["--input".into(), r.clone()]].concat();
    let recv = [recv, vec!["--output".into(), out.to_str().unwrap().into()]].concat();
    let send = [party(&ca, &ka, &fb, &fd), vec!["--input".into(), s.clone()]].concat();
    let (so, ro) = run_pair(&as_str(&recv), &as_str(&send));
    assert_success(&[&so, &ro]);
    let want: String = (50..60).map(|k| format!("{k}\n")).collect();
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        format!("id\n{want}")
    );
    assert!(dealer.wait().unwrap().success());

    // A dealer whose certificate is not the pinned one is refused, and nothing written.
    let (mut dealer, addr2) = spawn_dealer(&dealer_tls);
    let swap = |v: Vec<String>| -> Vec<String> {
        v.into_iter()
            .map(|a| {
                if a == addr {
                    addr2.clone()
                } else if a == fd {
                    fa.clone()
                } else {
                    a
                }
            })
            .collect()
    };
    let _ = std::fs::remove_file(&out);
    let (so, ro) = run_pair(&as_str(&swap(recv)), &as_str(&swap(send)));
    for o in [&so, &ro] {
        assert_clean_failure(o, "certificate");
    }
    assert!(!out.exists(), "no output from a refused dealer");
    dealer.kill().unwrap();
    dealer.wait().unwrap();
}

#[test]
fn a_missing_dealer_or_a_dealer_for_the_wrong_protocol_is_a_clean_error() {
    let dir = tmp();
    let s = integers(dir.path(), "s.csv", 0..10);
    let r = integers(dir.path(), "r.csv", 5..15);
    let out = dir.path().join("out.csv");
    let out = out.to_str().unwrap();
    let run = |args: &[&str]| {
        venn()
            .args([
                "receive",
                "--connect",
                "127.0.0.1:9",
                "--input",
                &r,
                "--output",
                out,
            ])
            .args(args)
            .output()
            .unwrap()
    };
    assert_clean_failure(
        &run(&["--protocol", "kbm23", "--offline", "dealer"]),
        "--dealer",
    );
    assert_clean_failure(
        &run(&["--protocol", "kbm23", "--dealer", "127.0.0.1:9"]),
        "--offline dealer",
    );
    assert_clean_failure(
        &run(&[
            "--protocol",
            "kkrt16",
            "--offline",
            "dealer",
            "--dealer",
            "127.0.0.1:9",
        ]),
        "--offline dealer",
    );
    // Both parties agree, but no dealer answers: each gives up within its --timeout.
    let args = [
        "--protocol",
        "kbm23",
        "--offline",
        "dealer",
        "--dealer",
        "127.0.0.1:9",
        "--timeout",
        "3",
    ];
    let (so, ro) = within(std::time::Duration::from_secs(30), || {
        run_pair(
            &[&args[..], &["--input", &r, "--output", out]].concat(),
            &[&args[..], &["--input", &s]].concat(),
        )
    });
    for o in [&so, &ro] {
        assert!(!o.status.success(), "{}", stderr(o));
        assert!(!stderr(o).contains("panicked"), "{}", stderr(o));
    }
    assert!(!Path::new(out).exists(), "nothing written without tuples");
}

#[test]
fn bfv_tuples_give_the_intersection_and_hashed_keys_are_refused() {
    let dir = tmp();
    let s = integers(dir.path(), "s.csv", (0..400).map(|k| k * 2));
    let r = integers(dir.path(), "r.csv", (0..300).map(|k| k * 3));
    let out = dir.path().join("out.csv");
    let bfv = ["--protocol", "kbm23", "--sigma", "32", "--offline", "bfv"];
    let (so, ro) = run_pair(
        &[
            &bfv[..],
            &["--input", &r, "--output", out.to_str().unwrap()],
        ]
        .concat(),
        &[&bfv[..], &["--input", &s]].concat(),
    );
    assert_success(&[&so, &ro]);
    let want: String = (0..300u32)
        .map(|k| k * 3)
        .filter(|k| k % 2 == 0 && *k < 800)
        .map(|k| format!("{k}\n"))
        .collect();
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        format!("id\n{want}")
    );
    let hashed = venn()
        .args(["receive", "--connect", "127.0.0.1:9", "--protocol", "kbm23"])
        .args([
            "--offline",
            "bfv",
            "--input",
            &r,
            "--output",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_clean_failure(&hashed, "--sigma 32");
}
