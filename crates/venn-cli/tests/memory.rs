//! Issue 32: each protocol's memory model — the figure a party's `--max-memory` is held to
//! before anything is allocated ([`venn::memory_needed`]) — bounds what its parties really
//! use. `venn bench` measures each party's peak RSS in its own process beside the model's
//! figure, for every protocol and variant at 2^12 and 2^15: a model that grows slower than
//! the protocol (a constant per item for an n·log n sorting network) falls behind here
//! before it lets a hostile peer's announced size past `--max-memory` at 2^24. (At 2^16
//! the test took two minutes; larger sets are `venn bench`'s, BENCHMARKS.md.)

use crate::common::*;

#[test]
fn every_partys_peak_is_within_its_memory_model() {
    let names: Vec<&str> = (venn::protocols::registry().iter())
        .map(|p| p.info().name)
        .collect();
    let bench = |protocols: &str, more: &[&str]| {
        let o = venn()
            .args(["bench", "--protocol", protocols, "--log2n", "12,15"])
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
                    "{} at 2^{}: the {role} peaked at {rss:.0} MiB, its model says {model:.0}",
                    r["protocol"], r["log2n"]
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
