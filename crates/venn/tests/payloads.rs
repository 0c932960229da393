//! PSI with payloads on rr22 and rr22-m: each sender item's record reaches the receiver for
//! the items it matched, and only those (`oprf/payloads.rs` tests the pads themselves);
//! with `--both`, each receiver item's record reaches the sender for the items it matched,
//! one direction or both in one run.

use crate::common::{assert_output, run_pair_with, sets, test_options, truth};
use std::time::Duration;
use venn::net::mem_pair;
use venn::protocols::{find, Options, Output, Protocol, Sizes};
use venn::session::Role;
use venn::{run, Error, Items, Report, RunOptions};

#[test]
fn each_side_gets_the_peers_record_of_each_matched_item() {
    // (the sender's record width, the receiver's, --both)
    let runs = [
        (Some(1), None, false),
        (Some(48), None, true),
        (Some(300), None, false),
        (None, Some(1), true),
        (None, Some(48), true),
        (None, Some(300), true),
        (Some(48), Some(300), true),
        (Some(300), Some(1), true),
    ];
    for name in ["rr22", "rr22-m"] {
        let p = find(name).unwrap();
        for (k, &(payload, receiver_payload, both)) in runs.iter().enumerate() {
            let options = Options {
                payload,
                receiver_payload,
                ..test_options(p)
            };
            let (s, r) = sets(700, 500, 200, k as u128);
            let what = format!("{name} widths {payload:?} {receiver_payload:?} both {both}");
            let (sr, rr) = run_pair_with(p, options, &s, &r, both);
            let (sr, rr) = (sr.expect(&what), rr.expect(&what));
            assert_output(&rr, &r, &truth(&r, &s), &what);
            assert_eq!(
                has_records(&rr),
                payload.is_some(),
                "{what}: the receiver's"
            );
            match both {
                true => assert_output(&sr, &s, &truth(&s, &r), &what),
                false => assert_eq!(sr.output, Output::Nothing, "{what}"),
            }
            assert_eq!(
                has_records(&sr),
                receiver_payload.is_some(),
                "{what}: the sender's"
            );
        }
    }
}

fn has_records(r: &Report) -> bool {
    matches!(r.output, Output::Records { .. })
}

/// Both parties of `p` with `options` on the items as given; (sender, receiver). Each
/// closes its end when it returns, so a party that refuses before the handshake does not
/// leave the other waiting.
fn run_items(
    p: &'static dyn Protocol,
    options: Options,
    both: bool,
    s: &Items,
    r: &Items,
) -> (venn::Result<Report>, venn::Result<Report>) {
    let run_with = |role| RunOptions {
        options,
        ..crate::common::options(p, role, both)
    };
    let (mut a, mut b) = mem_pair(Duration::from_secs(30));
    std::thread::scope(|scope| {
        let t = scope.spawn(move || run(&mut b, r, &run_with(Role::Receiver)));
        let sr = run(&mut a, s, &run_with(Role::Sender));
        drop(a);
        (sr, t.join().unwrap())
    })
}

/// The message of a usage error.
fn usage(result: &venn::Result<Report>) -> &str {
    match result {
        Err(Error::Usage(m)) => m,
        other => panic!("not a usage error: {:?}", other.as_ref().map(|r| &r.output)),
    }
}

/// `items` with a record of `width` bytes each (zeros).
fn with_records(items: &Items, width: usize) -> Items {
    (items.clone())
        .with_records(vec![0; items.len() * width], width)
        .unwrap()
}

#[test]
fn records_are_refused_by_a_protocol_without_them_and_need_both_sides() {
    let (s, r) = sets(50, 50, 10, 3);
    let kkrt16 = find("kkrt16").unwrap();
    let with = Options {
        payload: Some(16),
        ..test_options(kkrt16)
    };
    let (sr, _) = run_pair_with(kkrt16, with, &s, &r, false);
    assert!(usage(&sr).contains("cannot carry the sender's"), "{sr:?}");
    let theirs = Options {
        receiver_payload: Some(16),
        ..test_options(kkrt16)
    };
    let (_, rr) = run_pair_with(kkrt16, theirs, &s, &r, true);
    assert!(usage(&rr).contains("cannot carry the receiver's"), "{rr:?}");
    // A sender whose items carry no records, in a run that says they do; a receiver whose
    // items carry records the run does not.
    let rr22 = find("rr22").unwrap();
    let o = Options {
        payload: Some(16),
        ..test_options(rr22)
    };
    let (sr, _) = run_items(rr22, o, false, &s, &r);
    assert!(usage(&sr).contains("sender's items have none"), "{sr:?}");
    let (_, rr) = run_items(rr22, o, true, &with_records(&s, 16), &with_records(&r, 8));
    assert_eq!(
        usage(&rr),
        "the receiver's items carry records of 8 bytes, the run none"
    );
}

#[test]
fn the_receivers_records_go_only_with_both_and_within_the_widths() {
    let (s, r) = sets(50, 50, 10, 4);
    for name in ["rr22", "rr22-m"] {
        let p = find(name).unwrap();
        let o = Options {
            receiver_payload: Some(16),
            ..test_options(p)
        };
        let (sr, rr) = run_items(p, o, false, &s, &with_records(&r, 16));
        for result in [&sr, &rr] {
            assert_eq!(
                usage(result),
                "the receiver's records go to the sender only with --both"
            );
        }
        let sizes = Sizes {
            sender: 50,
            receiver: 50,
        };
        for width in [0, (1 << 16) + 1] {
            let o = Options {
                receiver_payload: Some(width),
                ..test_options(p)
            };
            let Err(Error::Usage(m)) = p.params(sizes, o) else {
                panic!("{name}: width {width} accepted")
            };
            assert!(
                m.starts_with("a record of the receiver's columns takes 1 to 65536 bytes"),
                "{m}"
            );
            assert_eq!(p.memory(Role::Sender, sizes, o), u64::MAX);
        }
    }
}
