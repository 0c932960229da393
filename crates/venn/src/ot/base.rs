//! Base OTs secure against malicious parties in the random-oracle model: the
//! Masny–Rindal "endemic OT" (CCS 2019, Fig. 7) over Ristretto255.
//!
//! Receiver with choice `b`: `A = a·G`, random `R_{1-b}`, `R_b = A − H(R_{1-b})`; sends
//! `(R_0, R_1)`. Sender: `B = b'·G`; `m_i = KDF(b'·(R_i + H(R_{1-i})))`; sends `B`.
//! Receiver: `m_b = KDF(a·B)`. Each OT has its own keys; every hash binds the session id
//! and the OT index.

use crate::crypto::group::{decode_point, hash_to_point, random_point, random_scalar};
use crate::crypto::{Block, Prg, RandomOracle};
use crate::net::Channel;
use crate::Result;
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use rayon::prelude::*;

/// The number of base OTs (κ).
pub const BASE_OTS: usize = 128;

/// A base-OT protocol: the few public-key OTs that seed an OT extension.
pub trait BaseOt {
    /// The receiver of `choices.len()` OTs; returns `m_{b_i}` for each.
    fn receive(
        chan: &mut dyn Channel,
        choices: &[bool],
        prg: &mut Prg,
        sid: &[u8; 32],
    ) -> Result<Vec<Block>>;

    /// The sender of `count` OTs; returns `(m_0, m_1)` for each.
    fn send(
        chan: &mut dyn Channel,
        count: usize,
        prg: &mut Prg,
        sid: &[u8; 32],
    ) -> Result<Vec<[Block; 2]>>;
}

/// The Masny–Rindal endemic OT of this module.
pub struct MasnyRindal;

impl BaseOt for MasnyRindal {
    fn receive(
        chan: &mut dyn Channel,
        choices: &[bool],
        prg: &mut Prg,
        sid: &[u8; 32],
    ) -> Result<Vec<Block>> {
        base_ot_receive(chan, choices, prg, sid)
    }

    fn send(
        chan: &mut dyn Channel,
        count: usize,
        prg: &mut Prg,
        sid: &[u8; 32],
    ) -> Result<Vec<[Block; 2]>> {
        base_ot_send(chan, count, prg, sid)
    }
}

/// The hash onto the group, `H(sid, i, P)`.
fn hash_to_group(sid: &[u8; 32], i: usize, p: &CompressedRistretto) -> RistrettoPoint {
    hash_to_point(
        "venn/mr19/hash-to-group",
        &[sid, &(i as u64).to_le_bytes(), p.as_bytes()],
    )
}

fn kdf(ro: &RandomOracle, i: usize, p: &RistrettoPoint) -> Block {
    ro.hash_block(&[&(i as u64).to_le_bytes()[..], p.compress().as_bytes()].concat())
}

/// The receiver of `choices.len()` base OTs; returns `m_{b_i}` for each. The randomness
/// is drawn in order; the group operations run on the rayon pool.
fn base_ot_receive(
    chan: &mut dyn Channel,
    choices: &[bool],
    prg: &mut Prg,
    sid: &[u8; 32],
) -> Result<Vec<Block>> {
    let draws: Vec<(Scalar, RistrettoPoint)> = choices
        .iter()
        .map(|_| (random_scalar(prg), random_point(prg)))
        .collect();
    let points: Vec<[u8; 64]> = draws
        .par_iter()
        .zip(choices)
        .enumerate()
        .map(|(i, ((a, other), &b))| {
            let big_a = RistrettoPoint::mul_base(a);
            let other = other.compress();
            let mine = (big_a - hash_to_group(sid, i, &other)).compress();
            let (r0, r1) = if b { (other, mine) } else { (mine, other) };
            let mut both = [0; 64];
            both[..32].copy_from_slice(r0.as_bytes());
            both[32..].copy_from_slice(r1.as_bytes());
            both
        })
        .collect();
    chan.send(&points.concat())?;
    let reply = chan.recv_exact(32 * choices.len(), "base-OT sender points")?;
    let ro = RandomOracle::new("venn/mr19/kdf", sid);
    draws
        .par_iter()
        .zip(reply.par_chunks_exact(32))
        .enumerate()
        .map(|(i, ((a, _), b))| Ok(kdf(&ro, i, &(a * decode_point(b)?))))
        .collect()
}

/// The sender of `count` base OTs; returns `(m_0, m_1)` for each. The randomness is
/// drawn in order; the group operations run on the rayon pool.
fn base_ot_send(
    chan: &mut dyn Channel,
    count: usize,
    prg: &mut Prg,
    sid: &[u8; 32],
) -> Result<Vec<[Block; 2]>> {
    let msg = chan.recv_exact(64 * count, "base-OT receiver points")?;
    let ro = RandomOracle::new("venn/mr19/kdf", sid);
    let secrets: Vec<Scalar> = (0..count).map(|_| random_scalar(prg)).collect();
    let ots: Vec<([u8; 32], [Block; 2])> = msg
        .par_chunks_exact(64)
        .zip(&secrets)
        .enumerate()
        .map(|(i, (pair, b))| {
            let (c0, c1) = (&pair[..32], &pair[32..]);
            let (r0, r1) = (decode_point(c0)?, decode_point(c1)?);
            // Ristretto's encodings are canonical (decoding refuses any other), so the
            // bytes received are the points' encodings.
            let encoding = |c: &[u8]| CompressedRistretto(c.try_into().expect("32 bytes"));
            let (c0, c1) = (encoding(c0), encoding(c1));
            let big_b = RistrettoPoint::mul_base(b).compress().to_bytes();
            let k0 = b * (r0 + hash_to_group(sid, i, &c1));
            let k1 = b * (r1 + hash_to_group(sid, i, &c0));
            Ok((big_b, [kdf(&ro, i, &k0), kdf(&ro, i, &k1)]))
        })
        .collect::<Result<_>>()?;
    let reply: Vec<u8> = ots.iter().flat_map(|(big_b, _)| *big_b).collect();
    chan.send(&reply)?;
    Ok(ots.into_iter().map(|(_, m)| m).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::mem_pair;
    use std::time::Duration;

    #[test]
    fn receiver_gets_exactly_the_chosen_message() {
        let (mut a, mut b) = mem_pair(Duration::from_secs(10));
        let sid = [3u8; 32];
        let mut prg = Prg::from_seed(Block::from(1));
        let choices: Vec<bool> = (0..BASE_OTS).map(|_| prg.u64() & 1 == 1).collect();
        let c2 = choices.clone();
        let t = std::thread::spawn(move || {
            base_ot_receive(&mut b, &c2, &mut Prg::from_seed(Block::from(2)), &sid).unwrap()
        });
        let sent =
            base_ot_send(&mut a, BASE_OTS, &mut Prg::from_seed(Block::from(3)), &sid).unwrap();
        let got = t.join().unwrap();
        for i in 0..BASE_OTS {
            let c = choices[i] as usize;
            assert_eq!(got[i], sent[i][c]);
            assert_ne!(got[i], sent[i][1 - c]);
        }
    }

    #[test]
    fn invalid_points_are_rejected() {
        let (mut a, mut b) = mem_pair(Duration::from_secs(10));
        b.send(&[0xff; 64 * 4]).unwrap();
        let err =
            base_ot_send(&mut a, 4, &mut Prg::from_seed(Block::from(3)), &[0; 32]).unwrap_err();
        assert!(matches!(err, crate::Error::Protocol { .. }), "{err}");
    }
}
