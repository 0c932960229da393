//! RR17 dual execution and encode-commit against a cheating party on the real runner (spec
//! `rr17-de.md` §9): rows of an OT extension that do not each encode one value are caught by
//! the OOS16 check. (Cheats the session's transcript check would also catch — altered
//! values, commitments or tuples — are tested against the protocol code directly, in the
//! protocols' own modules.)

mod common;

use common::{sets, tampered_pair_traffic};
use venn::protocols::{find, Sizes};
use venn::Error;

/// A named entry of a protocol's parameter table at 4096 items a side.
fn param(protocol: &str, name: &str) -> usize {
    let sizes = Sizes {
        sender: 4096,
        receiver: 4096,
    };
    let table = find(protocol).unwrap().params(sizes).unwrap().table();
    let value = table
        .0
        .iter()
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.parse());
    value
        .unwrap_or_else(|| panic!("{protocol} has no {name}"))
        .unwrap()
}

/// A party whose OT-extension corrections do not each encode one value (64 bits of one row
/// flipped, as it could send them) is caught by the OOS16 consistency check of the other,
/// which stops before anything depends on those rows (for Bob: before any output; for
/// Alice: before any comparison value or commitment is sent). Spec §9 items 1, 9 and 20.
#[test]
fn corrections_that_encode_no_value_are_caught() {
    let (s, r) = sets(4096, 4096, 1000, 14);
    // A full frame of corrections: 4096 rows of 64 bytes.
    const FRAME: usize = 4096 * 64;
    // (protocol, whether Alice is the cheat): in encode-commit only Bob encodes.
    for (name, alice_cheats) in [("rr17-de", true), ("rr17-de", false), ("rr17-ec", false)] {
        let p = find(name).unwrap();
        let mut done = false;
        let (sr, rr, sent) = tampered_pair_traffic(p, &s, &r, false, !alice_cheats, |_, f| {
            if !done && f.len() == FRAME {
                f[1000..1008].iter_mut().for_each(|b| *b ^= 0xFF);
                done = true;
            }
            true
        });
        assert!(done, "{name}: a frame of corrections went by");
        let (victim, cheat) = if alice_cheats { (rr, sr) } else { (sr, rr) };
        match victim {
            Err(Error::CheatingDetected(why)) => assert!(why.contains("OOS16"), "{why}"),
            other => panic!(
                "{name}, alice cheats: {alice_cheats}: {:?}",
                other.map(|r| r.output)
            ),
        }
        assert!(cheat.is_err(), "{name}: the cheat got an answer");
        if !alice_cheats {
            // Alice sent nothing that depends on Bob's rows: her values or tuples (at least
            // 4096 · 28 · 10 bytes) would be over 1 MB beside her coin toss and seed OTs
            // (about 30 kB) and, in dual execution, her own corrections (m·μ_A rows of 64
            // bytes).
            let own_rows = match name {
                "rr17-de" => param(name, "ots_B") * 64,
                _ => 0,
            };
            assert!(
                (sent.sent as usize) < own_rows + 100_000,
                "{name}: Alice sent {} bytes after a failed check",
                sent.sent
            );
        }
    }
}
