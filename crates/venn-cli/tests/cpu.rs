//! `VENN_CPU` through the binary: the paths of a CPU without AVX-512 (or without AVX2, or
//! any x86 extension) give the same answer as the default's, and a level that is none is
//! refused at start-up.

use crate::common::*;

/// The receiver's output of `protocol` on two small overlapping files, both parties at
/// `level` (`None`: the default).
fn output_at(protocol: &str, level: Option<&str>) -> String {
    let dir = tmp();
    let rows = |range: std::ops::Range<u32>| -> String {
        range.map(|i| format!("key {i},{}\n", i * 7)).collect()
    };
    let s = write(dir.path(), "s.csv", &format!("id,v\n{}", rows(0..700)));
    let r = write(dir.path(), "r.csv", &format!("id,v\n{}", rows(500..1300)));
    let out = dir.path().join("out.csv");
    let env: Vec<(&str, &str)> = level.iter().map(|l| ("VENN_CPU", *l)).collect();
    let (so, ro) = run_pair_with(
        &env,
        &[
            "--protocol",
            protocol,
            "--input",
            r.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ],
        &["--protocol", protocol, "--input", s.to_str().unwrap()],
    );
    assert_success(&[&so, &ro]);
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn capped_levels_give_the_default_runs_output() {
    for protocol in ["rr22", "kkrt16"] {
        let default = output_at(protocol, None);
        assert_eq!(
            default.lines().count(),
            1 + 200,
            "{protocol}: header and 200 rows"
        );
        for level in ["avx2", "portable"] {
            assert_eq!(
                output_at(protocol, Some(level)),
                default,
                "{protocol} at {level}"
            );
        }
    }
}

#[test]
fn a_level_that_is_none_is_refused_at_start_up() {
    let o = venn()
        .env("VENN_CPU", "avx-512")
        .args(["params", "--log2n", "8"])
        .output()
        .unwrap();
    assert_clean_failure(&o, "VENN_CPU=\"avx-512\" is not a level");
    assert!(o.stdout.is_empty(), "nothing ran");
}

#[test]
fn bench_says_which_level_it_ran_at() {
    let o = venn()
        .env("VENN_CPU", "aesni")
        .args(["bench", "--protocol", "kkrt16", "--log2n", "6", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let cpu = v["cpu"].as_str().unwrap();
    let allowed = cpu.split(';').next().unwrap();
    assert!(allowed.starts_with("aesni (VENN_CPU): "), "{cpu}");
    for wider in ["avx", "vaes", "vpclmulqdq", "sha"] {
        assert!(!allowed.contains(wider), "{cpu}");
    }
    assert_eq!(v["rows"][0]["verified"], true);
}
