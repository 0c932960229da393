//! A secret known only to the two parties of a session: ephemeral Diffie–Hellman over
//! Ristretto255, bound to the session id.
//!
//! `venn precompute` stores it in both state files, and the online run that continues
//! them keys its session id with it (see the handshake): only the party that took part in
//! the precomputation can then start that run, so a stranger cannot use up a state, and
//! the online transcript confirmation is authenticated. Over an unauthenticated link, a
//! party in the middle of the precomputation itself could still learn the secret; an
//! authenticated channel (TLS) closes that.

use crate::crypto::group::{decode_point, random_scalar};
use crate::crypto::Prg;
use crate::net::Channel;
use crate::{Error, Result};
use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::traits::IsIdentity;

/// Runs the exchange on `chan`; both parties get the same 32-byte secret.
pub fn agree_secret(chan: &mut dyn Channel, sid: &[u8; 32], prg: &mut Prg) -> Result<[u8; 32]> {
    let a = random_scalar(prg);
    let mine = RistrettoPoint::mul_base(&a).compress();
    chan.send(mine.as_bytes())?;
    let msg = chan.recv_exact(32, "key-agreement point")?;
    let theirs = decode_point(&msg)?;
    if theirs.is_identity() {
        return Err(Error::protocol("a key-agreement point", "the identity"));
    }
    let shared = (a * theirs).compress();
    // The two public points in a fixed order, so both sides hash the same bytes.
    let (lo, hi) = if mine.as_bytes()[..] < msg[..] {
        (&mine.as_bytes()[..], &msg[..])
    } else {
        (&msg[..], &mine.as_bytes()[..])
    };
    let mut h = blake3::Hasher::new_derive_key("venn/precompute-secret");
    for part in [&sid[..], lo, hi, shared.as_bytes()] {
        h.update(part);
    }
    Ok(*h.finalize().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::mem_pair;
    use std::time::Duration;

    #[test]
    fn both_parties_agree_and_sessions_differ() {
        let run = |sid: [u8; 32]| {
            let (mut a, mut b) = mem_pair(Duration::from_secs(5));
            std::thread::scope(|s| {
                let t = s.spawn(|| agree_secret(&mut b, &sid, &mut Prg::from_entropy()));
                let x = agree_secret(&mut a, &sid, &mut Prg::from_entropy()).unwrap();
                (x, t.join().unwrap().unwrap())
            })
        };
        let (x, y) = run([1; 32]);
        assert_eq!(x, y);
        let (z, _) = run([1; 32]);
        assert_ne!(x, z, "fresh keys each time");
    }
}
