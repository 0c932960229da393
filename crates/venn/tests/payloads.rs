//! PSI with payloads on rr22 and rr22-m: each sender item's record reaches the receiver for
//! the items it matched, and only those (`oprf/payloads.rs` tests the pads themselves).

use crate::common::{assert_output, options, run_pair_with, sets, test_options, truth};
use std::time::Duration;
use venn::net::mem_pair;
use venn::protocols::{find, Options};
use venn::session::Role;
use venn::{run, Error, RunOptions};

#[test]
fn the_receiver_gets_each_matched_items_record() {
    for name in ["rr22", "rr22-m"] {
        let p = find(name).unwrap();
        for (width, both) in [(1, false), (48, true), (300, false)] {
            let options = Options {
                payload: Some(width),
                ..test_options(p)
            };
            let (s, r) = sets(700, 500, 200, width as u128);
            let what = format!("{name} width {width} both {both}");
            let (sr, rr) = run_pair_with(p, options, &s, &r, both);
            let (sr, rr) = (sr.expect(&what), rr.expect(&what));
            assert_output(&rr, &r, &truth(&r, &s), &what);
            let sent = sr.output.indices().map(<[usize]>::len);
            assert_eq!(sent, both.then_some(200), "{what}: the sender's output");
        }
    }
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
    assert!(
        matches!(&sr, Err(Error::Usage(m)) if m.contains("cannot carry")),
        "{sr:?}"
    );
    // A sender whose items carry no records, in a run that says they do.
    let rr22 = find("rr22").unwrap();
    let run_with = |role| RunOptions {
        options: Options {
            payload: Some(16),
            ..test_options(rr22)
        },
        ..options(rr22, role, false)
    };
    let (mut a, mut b) = mem_pair(Duration::from_secs(30));
    let (sr, _) = std::thread::scope(|scope| {
        let t = scope.spawn(|| run(&mut b, &r, &run_with(Role::Receiver)));
        (run(&mut a, &s, &run_with(Role::Sender)), t.join().unwrap())
    });
    assert!(
        matches!(&sr, Err(Error::Usage(m)) if m.contains("have none")),
        "{sr:?}"
    );
}
