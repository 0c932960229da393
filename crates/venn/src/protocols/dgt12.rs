//! DGT12 PSI-CA (De Cristofaro, Gasti, Tsudik, "Fast and Private Computation of
//! Cardinality of Set Intersection and Union", CANS 2012): the Diffie–Hellman protocol
//! for the size of the intersection, in its semi-honest random-oracle form, over
//! Ristretto255 — the baseline PSWW18's slides compare the circuit with (spec C.3).
//!
//! With `H` a hash onto the group and `H'` a hash to v = λ + log2(n_s·n_r) bits, the
//! receiver (the paper's client) holds `c_1..c_n`, the sender (the server) `s_1..s_m`:
//! 1. the receiver picks a key `R_c` and sends `a_i = R_c·H(c_i)`;
//! 2. the sender picks `R_s` and returns `R_s·a_i` for every `i` **in a fresh random
//!    order**, then the tags `t_j = H'(R_s·H(s_j))` of its items, **also shuffled**;
//! 3. the receiver removes its key, `R_c⁻¹·R_s·a_i = R_s·H(c_i)`, and outputs how many of
//!    their `H'` values are among the tags.
//!
//! The first shuffle hides which of the receiver's items matched, the second which of the
//! sender's (its input order could mean something); the receiver learns the count alone.
//!
//! Each party exponentiates every item twice. The sender hashes and keys its own items
//! while the receiver blinds, one chunk of each in turn, and keys the receiver's points a
//! chunk at a time as the receiver unblinds the previous chunk, so the two overlap. Every
//! `k·P` is computed as `(k/2)·P` and encoded by one batched doubling-and-compression per
//! chunk (one field inversion a chunk, not one a point).

use super::matching::{receive_matches, send_values};
use super::{
    no_offline_state, output_bits, AnyParty, Context, Output, OutputBits, OutputKind, Parameters,
    Party, ProtocolInfo, RoleInfo, Security, Sizes, TypedProtocol,
};
use crate::crypto::group::{decode_point, hash_to_point, random_scalar};
use crate::crypto::{Block, RandomOracle};
use crate::items::Items;
use crate::session::Role;
use crate::tables::MatchTable;
use crate::Result;
use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use rayon::prelude::*;

/// DGT12's semi-honest DH PSI-CA.
pub(super) struct Dgt12;
/// The paper's server.
struct Sender;
/// The paper's client.
struct Receiver;

static INFO: ProtocolInfo = ProtocolInfo {
    name: "dgt12-ca",
    paper: "De Cristofaro, Gasti, Tsudik: Fast and Private Computation of Cardinality of Set \
            Intersection and Union (CANS 2012), the DH-based PSI-CA in the random-oracle \
            model; the baseline of PSWW18's slides",
    security: Security::SemiHonest,
    leakage: "The receiver learns the size of the intersection; the sender learns nothing. \
              Neither learns which items are common: the sender returns the receiver's \
              blinded items and its own tags each in a fresh random order. Both learn the \
              other's set size. Secure only if both parties follow the protocol (DDH in \
              Ristretto255, the hashes as random oracles): a sender that skips the \
              shuffles tells the receiver which of its items are common. Tags of \
              λ + log2(n_s·n_r) bits: a false match in a run has probability at most 2^-40.",
    both_allowed: false,
    roles: &[
        RoleInfo {
            role: Role::Sender,
            security: Security::SemiHonest,
            output: OutputKind::Nothing,
            peer_item_bytes: 96,
            own_item_bytes: 128,
        },
        RoleInfo {
            role: Role::Receiver,
            security: Security::SemiHonest,
            output: OutputKind::Count,
            peer_item_bytes: 64,
            own_item_bytes: 256,
        },
    ],
};

/// Points per frame.
const CHUNK: usize = 1024;
const POINT: usize = 32;
/// Points keyed per batched compression.
const BATCH: usize = 256;

/// `H(x)`, in this session.
fn item_point(sid: &[u8; 32], item: &[u8]) -> RistrettoPoint {
    hash_to_point("venn/dgt12/item", &[sid, item])
}

/// `k/2`: a point times it, doubled, is the point times `k` ([`times`]).
fn half(k: &Scalar) -> Scalar {
    k * Scalar::from(2u8).invert()
}

/// The encodings of `k·P` for `points`, from `half_k = k/2`: each `(k/2)·P`, then one
/// doubling-and-compression per batch.
fn times(half_k: &Scalar, points: &[RistrettoPoint]) -> Vec<[u8; POINT]> {
    points
        .par_chunks(BATCH)
        .flat_map_iter(|batch| {
            let halves: Vec<RistrettoPoint> = batch.iter().map(|p| half_k * p).collect();
            RistrettoPoint::double_and_compress_batch(&halves)
                .into_iter()
                .map(|c| c.to_bytes())
        })
        .collect()
}

/// `H'` of encoded points, cut to `v` bits.
fn tags(ro: &RandomOracle, encoded: &[[u8; POINT]], v: usize) -> Vec<Block> {
    encoded
        .par_iter()
        .with_min_len(BATCH)
        .map(|e| ro.hash_block(e) & Block::low_ones(v))
        .collect()
}

/// Decodes a frame of points from the peer.
fn decode_points(frame: &[u8]) -> Result<Vec<RistrettoPoint>> {
    frame
        .par_chunks(POINT)
        .with_min_len(BATCH)
        .map(decode_point)
        .collect()
}

/// Frames of [`CHUNK`] points for `n` items: the range of each.
fn chunks(n: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    (0..n).step_by(CHUNK).map(move |s| s..(s + CHUNK).min(n))
}

impl TypedProtocol for Dgt12 {
    type Config = ();

    fn info(&self) -> &'static ProtocolInfo {
        &INFO
    }

    fn params(&self, sizes: Sizes, _: ()) -> Result<Box<dyn Parameters>> {
        Ok(Box::new(OutputBits(output_bits(sizes))))
    }

    fn party(&self, role: Role) -> &'static dyn AnyParty {
        match role {
            Role::Sender => &Sender,
            Role::Receiver => &Receiver,
        }
    }
}

impl Party for Sender {
    no_offline_state!();

    /// Tags its items (shuffled) while receiving the receiver's points, a chunk of each
    /// in turn; keys the receiver's points in a random order; sends the tags.
    fn online(&self, ctx: &mut Context, _: (), items: &Items) -> Result<Output> {
        let (sid, v) = (ctx.session.id, output_bits(ctx.session.sized));
        let (n_s, n_r) = (items.len(), ctx.session.n_receiver as usize);
        let ro = RandomOracle::new("venn/dgt12/tag", &sid);
        let key = half(&random_scalar(&mut ctx.prg));
        let order = ctx.prg.permutation(n_s);

        ctx.phase("tags and receiver's points", false);
        let (mut own, mut theirs) = (chunks(n_s), chunks(n_r));
        let mut tagged: Vec<Block> = Vec::with_capacity(n_s);
        let mut received: Vec<u8> = Vec::with_capacity(n_r * POINT);
        let mut frame = Vec::new();
        loop {
            let (mine, peers) = (own.next(), theirs.next());
            if mine.is_none() && peers.is_none() {
                break;
            }
            if let Some(range) = mine {
                let points: Vec<RistrettoPoint> = order[range]
                    .par_iter()
                    .with_min_len(BATCH)
                    .map(|&i| item_point(&sid, items.get(i as usize)))
                    .collect();
                tagged.extend(tags(&ro, &times(&key, &points), v));
            }
            if let Some(range) = peers {
                let what = "the receiver's blinded items";
                ctx.peer
                    .recv_exact_into(&mut frame, range.len() * POINT, what)?;
                received.extend_from_slice(&frame);
            }
        }

        ctx.phase("key the receiver's items", false);
        let shuffle = ctx.prg.permutation(n_r);
        for range in chunks(n_r) {
            let points: Vec<RistrettoPoint> = shuffle[range]
                .par_iter()
                .with_min_len(BATCH)
                .map(|&i| decode_point(&received[i as usize * POINT..][..POINT]))
                .collect::<Result<_>>()?;
            ctx.peer.send(times(&key, &points).as_flattened())?;
        }

        ctx.phase("send tags", false);
        send_values(ctx.peer, n_s, 1, v / 8, |first, values| {
            values.copy_from_slice(&tagged[first..first + values.len()])
        })?;
        Ok(Output::Nothing)
    }
}

impl Party for Receiver {
    no_offline_state!();

    /// Blinds its items, unblinds what comes back into a table, counts the sender's tags
    /// found there.
    fn online(&self, ctx: &mut Context, _: (), items: &Items) -> Result<Output> {
        let (sid, v) = (ctx.session.id, output_bits(ctx.session.sized));
        let (n_r, n_s) = (items.len(), ctx.session.n_sender as usize);
        let ro = RandomOracle::new("venn/dgt12/tag", &sid);
        let secret = random_scalar(&mut ctx.prg);
        let (key, unkey) = (half(&secret), half(&secret.invert()));

        ctx.phase("blind", false);
        for range in chunks(n_r) {
            let points: Vec<RistrettoPoint> = range
                .into_par_iter()
                .with_min_len(BATCH)
                .map(|i| item_point(&sid, items.get(i)))
                .collect();
            ctx.peer.send(times(&key, &points).as_flattened())?;
        }

        ctx.phase("unblind", false);
        let mut own_tags = Vec::with_capacity(n_r);
        let mut frame = Vec::new();
        for range in chunks(n_r) {
            let what = "the sender's keyed items";
            ctx.peer
                .recv_exact_into(&mut frame, range.len() * POINT, what)?;
            own_tags.extend(tags(&ro, &times(&unkey, &decode_points(&frame)?), v));
        }
        let table = MatchTable::build(n_r, n_r, |i| (own_tags[i], 0, i as u32));

        ctx.phase("count", false);
        let matches = receive_matches(ctx.peer, n_s, 1, v / 8, &table)?;
        Ok(Output::Count(matches.len() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Prg;

    #[test]
    fn keyed_points_are_encoded_as_the_point_times_the_key() {
        let mut prg = Prg::from_seed(Block::from(5));
        let k = random_scalar(&mut prg);
        let points: Vec<RistrettoPoint> = (0..BATCH + 3)
            .map(|i| item_point(&[7; 32], &i.to_le_bytes()))
            .collect();
        let encoded = times(&half(&k), &points);
        for (p, e) in points.iter().zip(&encoded) {
            assert_eq!((k * p).compress().to_bytes(), *e);
        }
        // Removing the key gives the unkeyed point back.
        let back = times(
            &half(&k.invert()),
            &decode_points(encoded.as_flattened()).unwrap(),
        );
        assert_eq!(back[BATCH + 1], points[BATCH + 1].compress().to_bytes());
    }
}
