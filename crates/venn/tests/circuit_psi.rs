//! The circuit-PSI protocols (PSWW18's cardinality and sum, HEK12's sorting network) beyond
//! the registry-wide tests: their options (the stash, `--threshold`), the sender's values,
//! and precomputed states.

use crate::common::{fit_sigma, online, options, precompute, run_pair_with, sets, with};
use std::time::Duration;
use venn::net::mem_pair;
use venn::protocols::{find, Options, Output, Stash};
use venn::session::Role;
use venn::{Error, Items, RunOptions};

#[test]
fn thresholds_and_stashes_give_the_right_answer() {
    let (s, r) = sets(900, 700, 321, 5);
    for (name, sigma, stash) in [
        ("psww18-ca", Some(32), Stash::Separate),
        ("psww18-ca", None, Stash::Combined),
        ("hek12-ca", Some(32), Stash::Combined),
        ("hek12-ca", None, Stash::Combined),
        ("rr22-ca", None, Stash::Combined),
    ] {
        let p = find(name).unwrap();
        let count = Options {
            sigma,
            stash,
            ..Options::default()
        };
        let (_, rr) = run_pair_with(p, count, &s, &r, false);
        assert_eq!(rr.unwrap().output, Output::Count(321), "{name} {stash:?}");
        for (threshold, reached) in [
            (0, true),
            (320, true),
            (321, true),
            (322, false),
            (u64::MAX, false),
        ] {
            let o = Options {
                threshold: Some(threshold),
                ..count
            };
            let (sr, rr) = run_pair_with(p, o, &s, &r, false);
            assert_eq!(sr.unwrap().output, Output::Nothing);
            assert_eq!(
                rr.unwrap().output,
                Output::Threshold { threshold, reached },
                "{name} {stash:?}, T = {threshold}"
            );
        }
    }
}

#[test]
fn a_precomputed_state_runs_once_with_the_options_it_was_made_for() {
    let p = find("psww18-ca").unwrap();
    let (s, r) = sets(300, 200, 77, 21);
    let made_for = Options {
        sigma: None,
        stash: Stash::Separate,
        threshold: Some(77),
        ..Options::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let paths = precompute(p, made_for, [400, 250], dir.path());
    // Other options than the state's are refused before anything is used up.
    let other = Options {
        threshold: Some(78),
        ..made_for
    };
    let refused = venn::load_state(&paths[1], &with(p, Role::Receiver, other)).and_then(|st| {
        let (mut x, _y) = mem_pair(Duration::from_secs(1));
        venn::run_online(&mut x, &r, st, &with(p, Role::Receiver, other))
    });
    assert!(refused.is_err());
    let (sr, rr) = online(p, made_for, &paths, &s, &r);
    assert_eq!(sr.unwrap().output, Output::Nothing);
    assert_eq!(
        rr.unwrap().output,
        Output::Threshold {
            threshold: 77,
            reached: true
        }
    );
}

/// HEK12 pads smaller sets to its runs with dummies: a state made for sets of exactly a
/// power of two has no room for them and refuses smaller ones before anything is used.
#[test]
fn a_sorting_network_state_pads_smaller_sets_only_where_it_has_room() {
    let p = find("hek12-ca").unwrap();
    let o = Options::default();
    let dir = tempfile::tempdir().unwrap();
    let (s, r) = sets(200, 120, 45, 30);
    let paths = precompute(p, o, [300, 256], dir.path());
    let (_, rr) = online(p, o, &paths, &s, &r);
    assert_eq!(rr.unwrap().output, Output::Count(45));
    let exact = tempfile::tempdir().unwrap();
    let paths = precompute(p, o, [256, 256], exact.path());
    let (sr, rr) = online(p, o, &paths, &s, &r);
    for e in [sr.unwrap_err(), rr.unwrap_err()] {
        assert!(e.to_string().contains("exactly 256"), "{e}");
    }
}

/// The sums of psww18 and rr22 (and rr22's count), rr22's of several value columns at
/// once, also at sizes where the OKVSs of its OPPRF split into several bins of 2^14 keys
/// (β ≈ 26 000 keys, and three per sender item).
#[test]
fn sums_add_up_the_senders_values_over_the_intersection() {
    for (name, sigma, stash, sizes, columns) in [
        ("psww18-sum", Some(32), Stash::Combined, (900, 700, 321), 1),
        ("psww18-sum", None, Stash::Separate, (900, 700, 321), 1),
        ("rr22-sum", None, Stash::Combined, (900, 700, 321), 1),
        ("rr22-sum", None, Stash::Combined, (900, 700, 321), 16),
        (
            "rr22-sum",
            None,
            Stash::Combined,
            (20_000, 20_000, 7_777),
            3,
        ),
    ] {
        let (s, r) = sets(sizes.0, sizes.1, sizes.2, 8);
        let p = find(name).unwrap();
        let o = Options {
            sigma,
            stash,
            ..Options::default()
        };
        // The largest values a row may carry (column c of row i: 2^32 − 1 − (i mod 3) − c),
        // so that a wrong carry would show, and each column its own.
        let value = |i: usize, c: usize| u32::MAX as u64 - (i % 3 + c) as u64;
        let top: Vec<u64> = (0..s.len())
            .flat_map(|i| (0..columns).map(move |c| value(i, c)))
            .collect();
        let mine: std::collections::HashSet<&[u8]> = (0..r.len()).map(|i| r.get(i)).collect();
        let common: Vec<usize> = (0..s.len()).filter(|&i| mine.contains(s.get(i))).collect();
        let sums: Vec<u64> = (0..columns)
            .map(|c| common.iter().map(|&i| value(i, c)).sum())
            .collect();
        let (fs, fr) = (fit_sigma(sigma, &s), fit_sigma(sigma, &r));
        let valued = fs.with_value_columns(top, columns).unwrap();
        let (mut a, mut b) = mem_pair(Duration::from_secs(30));
        let opts = |role| RunOptions {
            options: o,
            ..options(p, role, false)
        };
        let (sr, rr) = std::thread::scope(|sc| {
            let t = sc.spawn(|| venn::run(&mut b, &fr, &opts(Role::Receiver)));
            (
                venn::run(&mut a, &valued, &opts(Role::Sender)),
                t.join().unwrap(),
            )
        });
        assert_eq!(sr.unwrap().output, Output::Nothing);
        let count = sizes.2 as u64;
        assert_eq!(
            rr.unwrap().output,
            Output::Sum { count, sums },
            "{name} {stash:?}, {columns} columns"
        );
        if name == "rr22-sum" && columns == 1 {
            let ca = find("rr22-ca").unwrap();
            let (_, rr) = run_pair_with(ca, Options::default(), &s, &r, false);
            assert_eq!(rr.unwrap().output, Output::Count(count), "rr22-ca");
        }
    }
}

#[test]
fn values_belong_to_the_sender_of_a_sum_alone() {
    let (s, r) = sets(50, 40, 10, 3);
    let valued = |items: &Items| {
        let values = vec![1; items.len()];
        items.clone().with_values(values).unwrap()
    };
    let refused = |p: &'static str, role: Role, items: &Items| {
        let (mut a, _b) = mem_pair(Duration::from_secs(1));
        let e = venn::run(&mut a, items, &options(find(p).unwrap(), role, false)).unwrap_err();
        assert!(matches!(e, Error::Usage(_)), "{p} {role:?}: {e}");
        e.to_string()
    };
    let e = refused("psww18-sum", Role::Sender, &s);
    assert!(e.contains("--value-column"), "{e}");
    refused("psww18-sum", Role::Receiver, &valued(&r));
    refused("psww18-ca", Role::Sender, &valued(&s));
    refused("rr22-sum", Role::Sender, &s);
    refused("rr22-ca", Role::Sender, &valued(&s));
    refused("kkrt16", Role::Sender, &valued(&s));
    // psww18-sum adds one column; rr22-sum up to 16.
    let columns = |k: usize| {
        s.clone()
            .with_value_columns(vec![1; s.len() * k], k)
            .unwrap()
    };
    let e = refused("psww18-sum", Role::Sender, &columns(2));
    assert!(e.contains("one value column"), "{e}");
    let e = refused("rr22-sum", Role::Sender, &columns(17));
    assert!(e.contains("at most 16"), "{e}");
}
