//! `rr22-m` against a cheating party on the real runner (RR22 §4 malicious instantiation;
//! rr22.md §1.2, §3.6): each cheat is played by rewriting the cheater's frames as it could
//! send them, and is caught by the check meant for it before the cheater is answered.

use crate::common::{
    options, param, sets, tampered_pair_traffic, tampered_pair_with, test_options,
};
use std::time::Duration;
use venn::net::mem_pair;
use venn::protocols::find;
use venn::session::Role;
use venn::{Error, Report, RunOptions};

const N: usize = 4096;

/// rr22-m's VOLE dimensions at N items a side: (trees t, depth h).
fn shape() -> (usize, usize) {
    (
        param("rr22-m", N as u64, "t"),
        param("rr22-m", N as u64, "h"),
    )
}

/// The checked party's verdict must name `check`, and the cheater must get no output.
fn assert_caught(victim: venn::Result<Report>, cheat: venn::Result<Report>, check: &str) {
    match victim {
        Err(Error::CheatingDetected(why)) => assert!(why.contains(check), "{why}"),
        other => panic!(
            "not caught by the {check} check: {:?}",
            other.map(|r| r.output)
        ),
    }
    assert!(cheat.is_err(), "the cheat got an answer");
}

/// The sender sent no answers: its offline messages (base OTs, about 15 kB, and the PPRF
/// messages) come to far less than those and its N answers of 16 bytes.
fn assert_unanswered(sent: u64) {
    let (t, h) = shape();
    assert!(
        (sent as usize) < 16 * t * (2 * h + 1) + 16 * N,
        "the sender sent {sent} bytes"
    );
}

/// Runs rr22-m at N a side with `tamper` on the sender's incoming (the receiver cheats) or
/// outgoing frames; returns both results and the bytes the sender sent.
fn run(
    receiver_cheats: bool,
    tamper: impl FnMut(usize, &mut Vec<u8>) -> bool + Send,
) -> (venn::Result<Report>, venn::Result<Report>, u64) {
    let (s, r) = sets(N, N, 1000, 22);
    let p = find("rr22-m").unwrap();
    let (sr, rr, traffic) =
        tampered_pair_traffic(p, test_options(p), &s, &r, false, receiver_cheats, tamper);
    (sr, rr, traffic.sent)
}

/// A base-VOLE receiver with inconsistent noise: y in its first OT with the sender's Δ
/// bits, y + 1 in every other (d_j gets X^j added for j ≥ 1). The sender's correlation is
/// then off by Δ + Δ_0, so the base-VOLE check fails unless Δ ∈ {0, 1}.
#[test]
fn a_receiver_with_inconsistent_base_vole_noise_is_caught() {
    let (t, _) = shape();
    // The rows d_j, one frame of t + 2 blocks each, in order of j.
    let row = 16 * (t + 2);
    let mut j = 0;
    let (sr, rr, sent) = run(true, |_, f| {
        if f.len() == row {
            if j > 0 {
                f[j / 8] ^= 1 << (j % 8);
            }
            j += 1;
        }
        true
    });
    assert_eq!(j, 128, "every row went by");
    assert_caught(sr, rr, "base-VOLE");
    assert_unanswered(sent);
}

/// The trees of the sender's first PPRF message: it sends them a group at a time, the last
/// group (the rest of the trees after whole groups) first.
fn first_trees() -> usize {
    let t = shape().0;
    t - (t - 1) / venn::internals::vole::TREES_A_MESSAGE * venn::internals::vole::TREES_A_MESSAGE
}

/// The length of the sender's first PPRF message: one frame of its trees' level sums,
/// then their corrections γ, a block each.
fn pprf_len() -> usize {
    let (_, h) = shape();
    16 * first_trees() * (2 * h + 1)
}

/// The sender's first PPRF message with a bit flipped in each of its `blocks`: the
/// receiver's Ferret check must catch it.
fn assert_pprf_cheat_caught(blocks: &[usize]) {
    let len = pprf_len();
    let mut done = false;
    let (sr, rr, _) = run(false, |_, f| {
        if f.len() == len && !done {
            blocks.iter().for_each(|b| f[16 * b] ^= 1);
            done = true;
        }
        true
    });
    assert!(done, "the PPRF message went by");
    assert_caught(rr, sr, "Ferret");
}

/// A sender whose tree does not match its Δ: the correction γ of tree 0 altered, so that
/// the receiver's c_α = b_α + y·Δ + e — the tree built for Δ + e/y.
#[test]
fn a_sender_with_an_inconsistent_delta_is_caught() {
    let (_, h) = shape();
    assert_pprf_cheat_caught(&[2 * h * first_trees()]);
}

/// A PPRF sender cheating on a leaf: both of tree 0's last-level sums altered, so the
/// leaf beside the receiver's point (and with it the point's value) is not the sender's.
#[test]
fn a_pprf_sender_cheating_on_a_leaf_is_caught() {
    let (_, h) = shape();
    assert_pprf_cheat_caught(&[2 * (h - 1), 2 * (h - 1) + 1]);
}

/// A receiver that encodes more than its announced items into an OKVS larger than the
/// announced one (here 64 more slots of A'): the sender takes exactly the m blocks the
/// announced size gives and refuses the rest before it answers. (Within the announced
/// length, a receiver can make more than m keys decode only by fitting the OKVS to a pool
/// of hashed items, which the upload deadline bounds: the test below.)
#[test]
fn a_receiver_encoding_more_than_its_announced_items_is_refused() {
    let m = param("rr22-m", N as u64, "m");
    let mut done = false;
    let (sr, rr, sent) = run(true, |_, f| {
        if f.len() == 16 * m {
            f.extend_from_slice(&[7; 16 * 64]);
            done = true;
        }
        true
    });
    assert!(done, "A' went by");
    let e = sr.unwrap_err();
    assert!(matches!(e, Error::Protocol { .. }), "{e}");
    assert!(rr.is_err());
    assert_unanswered(sent);
}

/// A sender that opens its share of the output key w to another value than it committed
/// to (so as to pick w after seeing A'): the receiver refuses before matching anything.
#[test]
fn a_sender_changing_its_output_key_share_is_caught() {
    let len = pprf_len();
    // After the PPRF message: the Ferret answer (32 bytes), the commitment (32), the salt
    // (16), the opening (16).
    let (mut pprf_seen, mut sixteens, mut done) = (false, 0, false);
    let (sr, rr, _) = run(false, |_, f| {
        pprf_seen |= f.len() == len;
        if pprf_seen && f.len() == 16 {
            sixteens += 1;
            if sixteens == 2 {
                f[0] ^= 1;
                done = true;
            }
        }
        true
    });
    assert!(done, "the opening went by");
    assert_caught(rr, sr, "commitment");
}

/// A receiver that spends longer over its OKVS than the sender's upload deadline — as one
/// fitting it to a large pool of items hashed under the salt would (the protocol module's
/// overfitting tests) — is refused, the deadline named, before it is answered. The
/// receiver's seed, its first frame of the online phase, is held back past the deadline.
#[test]
fn a_receiver_uploading_its_okvs_after_the_deadline_is_refused() {
    let (s, r) = sets(N, N, 1000, 22);
    let p = find("rr22-m").unwrap();
    let deadline = |limit| {
        move |role| RunOptions {
            upload_deadline: (role == Role::Sender).then_some(limit),
            ..options(p, role, false)
        }
    };
    // The frames the sender receives: the offline phase's, the barrier's empty one, then
    // the seed.
    let (mut online, mut held) = (false, false);
    let late = deadline(Duration::from_millis(300));
    let (sr, rr, traffic) = tampered_pair_with(late, &s, &r, true, |_, f| {
        if online && !held {
            std::thread::sleep(Duration::from_millis(600));
            held = true;
        }
        online |= f.is_empty();
        true
    });
    assert!(held, "the seed went by");
    match sr {
        Err(Error::Deadline(why)) => {
            assert!(
                why.contains("did not arrive within 0.3 s") && why.contains("--upload-deadline"),
                "{why}"
            )
        }
        other => panic!("a late OKVS was taken: {:?}", other.map(|r| r.output)),
    }
    match rr {
        Err(Error::PeerAborted(why)) => assert!(why.contains("deadline"), "{why}"),
        other => panic!("{:?}", other.map(|r| r.output)),
    }
    assert_unanswered(traffic.sent);
    // In time (a deadline no loaded test machine misses), the same run answers.
    let in_time = deadline(Duration::from_secs(20));
    let (sr, rr, _) = tampered_pair_with(in_time, &s, &r, true, |_, _| true);
    assert!(sr.is_ok(), "{:?}", sr.err());
    assert!(rr.unwrap().output.indices().unwrap().len() >= 1000);
}

/// The deadline is the rr22-m sender's to set: a receiver, or a sender of a protocol
/// without one, is refused before it reaches its peer.
#[test]
fn only_an_rr22_m_sender_takes_an_upload_deadline() {
    let (s, _) = sets(16, 16, 4, 1);
    for (name, role) in [("rr22-m", Role::Receiver), ("rr22", Role::Sender)] {
        let (mut a, _b) = mem_pair(Duration::from_secs(1));
        let o = RunOptions {
            upload_deadline: Some(Duration::from_secs(10)),
            ..options(find(name).unwrap(), role, false)
        };
        match venn::run(&mut a, &s, &o) {
            Err(Error::Usage(why)) => assert!(why.contains("--upload-deadline"), "{why}"),
            other => panic!("{name} {role:?}: {:?}", other.map(|r| r.output)),
        }
    }
}

/// In a bucket of a run in buckets a sender sends each item's first record only (its
/// later rows go after the last bucket, where each bucket's count of them cannot tell the
/// receiver how they fall into the buckets): one that sends later rows in the bucket's
/// session is refused by the receiver, before any is read, and a sender told it is in
/// a bucket refuses to carry them there.
#[test]
fn later_rows_inside_a_bucket_are_refused() {
    use venn::later_rows::InBuckets;
    for name in ["rr22", "rr22-m"] {
        let p = find(name).unwrap();
        let (s, r) = sets(64, 64, 32, 5);
        let width = 8;
        let s = s.with_records(vec![7; 64 * width], width).unwrap();
        let s = s
            .with_repeated_records(vec![0, 3], vec![9; 2 * width])
            .unwrap();
        let chosen = venn::protocols::Options {
            payload: Some(width as u32),
            ..test_options(p)
        };
        let in_buckets = Some(InBuckets { peer_rows: 1000 });
        for sender_in_buckets in [None, in_buckets] {
            let (mut a, mut b) = mem_pair(Duration::from_secs(20));
            let opts = |role, in_buckets| RunOptions {
                options: chosen,
                in_buckets,
                ..options(p, role, false)
            };
            let (sr, rr) = std::thread::scope(|scope| {
                let sender =
                    scope.spawn(|| venn::run(&mut a, &s, &opts(Role::Sender, sender_in_buckets)));
                let receiver = venn::run(&mut b, &r, &opts(Role::Receiver, in_buckets));
                (sender.join().unwrap(), receiver)
            });
            let why = match sender_in_buckets {
                None => rr.err().map(|e| e.to_string()),
                Some(_) => sr.err().map(|e| e.to_string()),
            };
            let why = why.unwrap_or_else(|| panic!("{name}: later rows in a bucket ran"));
            assert!(why.contains("repeated rows"), "{name}: {why}");
        }
    }
}
