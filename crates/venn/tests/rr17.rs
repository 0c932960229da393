//! RR17 dual execution and encode-commit against a cheating party on the real runner (spec
//! `rr17-de.md` §9): rows of an OT extension that do not each encode one value are caught by
//! the OOS16 (or, in the standard model, KOS15) check. (Cheats the session's transcript check would also catch — altered
//! values, commitments or tuples — are tested against the protocol code directly, in the
//! protocols' own modules.)

use crate::common::{
    fit, indices, param, run_pair_with, sets, tampered_pair_traffic, test_options, truth,
};
use venn::protocols::{find, Bins, Options};
use venn::Error;

/// A party whose OT-extension rows do not each encode one value (8 bytes of one row
/// flipped, as it could send them) is caught by the other's consistency check — OOS16's in
/// the random-oracle protocols, KOS15's in the standard model (spec §4.8: it covers the
/// OTs) — which stops before anything depends on those rows (for the receiver: before any
/// output; for the sender: before any comparison value, commitment or masked key is sent).
/// Spec §9 items 1, 9 and 20.
#[test]
fn rows_that_encode_no_value_are_caught() {
    let (s, r) = sets(4096, 4096, 1000, 14);
    // (protocol, whether the sender is the cheat, bytes of a row, the check that catches
    // it): in encode-commit only the receiver encodes.
    let cases = [
        ("rr17-de", true, 64, "OOS16"),
        ("rr17-de", false, 64, "OOS16"),
        ("rr17-ec", false, 64, "OOS16"),
        ("rr17-de-sm", true, 16, "KOS15"),
        ("rr17-de-sm", false, 16, "KOS15"),
    ];
    for (name, sender_cheats, row_bytes, check) in cases {
        let p = find(name).unwrap();
        // A full frame of rows: 4096 of them.
        let frame = 4096 * row_bytes;
        let mut done = false;
        let (sr, rr, sent) =
            tampered_pair_traffic(p, test_options(p), &s, &r, false, !sender_cheats, |_, f| {
                if !done && f.len() == frame {
                    f[1000..1008].iter_mut().for_each(|b| *b ^= 0xFF);
                    done = true;
                }
                true
            });
        assert!(done, "{name}: a frame of rows went by");
        let (victim, cheat) = if sender_cheats { (rr, sr) } else { (sr, rr) };
        match victim {
            Err(Error::CheatingDetected(why)) => assert!(why.contains(check), "{why}"),
            other => panic!(
                "{name}, sender cheats: {sender_cheats}: {:?}",
                other.map(|r| r.output)
            ),
        }
        assert!(cheat.is_err(), "{name}: the cheat got an answer");
        if !sender_cheats {
            // The sender sent nothing that depends on the receiver's rows: its values,
            // tuples or masked keys (at least 4096 · 28 · 10 bytes) would be over 1 MB
            // beside its coin toss and seed OTs (about 30 kB) and, in dual execution, its
            // own rows (one per OT of direction B).
            let own_rows = match name {
                "rr17-ec" => 0,
                _ => param(name, 4096, "ots_B") * row_bytes,
            };
            assert!(
                (sent.sent as usize) < own_rows + 100_000,
                "{name}: the sender sent {} bytes after a failed check",
                sent.sent
            );
        }
    }
}

/// RR17's WAN bins (m = ⌊n/10⌋) give the same intersection as the LAN ones.
#[test]
fn wan_bins_give_the_intersection() {
    let (s, r) = sets(2000, 1500, 400, 16);
    for name in ["rr17-de", "rr17-ec", "rr17-de-sm"] {
        let p = find(name).unwrap();
        let wan = Options {
            bins: Bins::Wan,
            ..test_options(p)
        };
        let (sr, rr) = run_pair_with(p, wan, &s, &r, false);
        sr.unwrap();
        assert_eq!(
            indices(&rr.unwrap()),
            truth(&fit(p, &r), &fit(p, &s)),
            "{name}"
        );
    }
}

/// rr17-de-sm runs each direction's KOS15 extension in segments of about 2^21 OTs (whole
/// slots of σ' OTs), each with its own check before its keys go out. At 2^14 items a side
/// (σ = 64 under the tests' options) each direction has three segments; rows the cheat
/// sends in the second are caught by that segment's check, and the honest party has sent
/// the rows of two segments and the masked keys (32 bytes an OT) of the first only.
#[test]
fn rows_that_encode_no_value_in_a_later_segment_are_caught() {
    let (s, r) = sets(1 << 14, 1 << 14, 1000, 17);
    let p = find("rr17-de-sm").unwrap();
    let param = |name: &str| param("rr17-de-sm", 1 << 14, name);
    let per = param("word_bits");
    let segment = (1 << 21) / per * per;
    assert_eq!(param("ots_B").div_ceil(segment), 3);
    for sender_cheats in [true, false] {
        // Rows go in frames of 4096 (64 KiB); a segment has 513 of them.
        let (mut frames, mut done) = (0, false);
        let (sr, rr, sent) =
            tampered_pair_traffic(p, test_options(p), &s, &r, false, !sender_cheats, |_, f| {
                if f.len() == 4096 * 16 {
                    frames += 1;
                    if frames == 700 {
                        f[1000..1008].iter_mut().for_each(|b| *b ^= 0xFF);
                        done = true;
                    }
                }
                true
            });
        assert!(done, "the second segment's rows went by");
        let (victim, cheat) = if sender_cheats { (rr, sr) } else { (sr, rr) };
        match victim {
            Err(Error::CheatingDetected(why)) => assert!(why.contains("KOS15"), "{why}"),
            other => panic!(
                "sender cheats: {sender_cheats}: {:?}",
                other.map(|r| r.output)
            ),
        }
        assert!(cheat.is_err(), "the cheat got an answer");
        if !sender_cheats {
            // Two segments' rows (16 bytes an OT) and one segment's keys, and the coin
            // tosses, seed OTs and checks.
            let expected = segment * (2 * 16 + 32);
            let sent = sent.sent as usize;
            assert!(
                (expected..expected + 100_000).contains(&sent),
                "the sender sent {sent} bytes, {expected} expected"
            );
        }
    }
}
