//! RR22's oblivious PRF from a VOLE (Fig. 4 steps 3–5; after RS21): the receiver R, with
//! its VOLE's A and C = B + A·Δ, sends a fresh OKVS seed, encodes the OKVS P with
//! Decode(P, x) = H^B(x) at its keys and sends A' = A + P, bin by bin as it is solved; it
//! then holds F(x) = Decode(C, x) for each of its keys. The sender S, with Δ and B, makes
//! B' = B + Δ·A' = C + Δ·P as A' comes and can evaluate F(y) = Decode(B', y) + Δ·H^B(y)
//! at any y: for y = x the two agree, and for any other y the difference
//! Δ·(Decode(P, y) + H^B(y)) is masked by Δ. The PSI (`rr22`, `rr22-m`) hashes F once more
//! (H^o) and compares; the circuit PSI's OPPRF ([`opprf`]) masks its hint with it.
//!
//! A building block between the framework (it runs in a protocol's [`Context`]) and the
//! protocols: rr22 and rr22-m use the OPRF, rr22-ca and rr22-sum the OPPRF.

pub(crate) mod opprf;
pub(crate) mod payloads;

use crate::crypto::{gf128, Aes, Block, RandomOracle};
use crate::framework::Context;
use crate::items::{BlockEncoder, Items};
use crate::net::Writer;
use crate::okvs::{self, BinnedKeys, Okvs};
use crate::util::memory::huge_zeroed;
use crate::vole::{Shape, VoleReceiver};
use crate::Result;
use rayon::prelude::*;

/// Blocks worked on at a time through a buffer on the stack (for hashing, enough to keep
/// the AES pipeline full).
const CHUNK: usize = 256;

/// The run's hashes, keyed by its session: items to blocks, H^B (the values the OKVS
/// encodes) and H^o (the values compared), each a fixed-key hash AES_k(x) + x.
pub(crate) struct Hashes {
    items: BlockEncoder,
    pub h_b: Aes,
    pub h_o: Aes,
}

impl Hashes {
    /// The hashes of session `sid`; H^B and H^o keyed by the sender's online `salt` too
    /// where it sends one (`rr22-m`, against a receiver that would hash a pool of items
    /// before fitting its OKVS: rr22's `overfitting.rs`).
    pub(crate) fn new(sid: &[u8; 32], salt: Option<Block>) -> Hashes {
        let salt = salt.map(Block::to_le_bytes);
        let key = |what: &str| {
            let oracle = RandomOracle::new("venn/rr22/hash key", sid);
            match &salt {
                None => oracle.hash_block(what.as_bytes()),
                Some(salt) => block_of(oracle.hash(&[what.as_bytes(), salt])),
            }
        };
        Hashes {
            items: BlockEncoder::new("venn/rr22/item", sid),
            h_b: Aes::new(key("H^B")),
            h_o: Aes::new(key("H^o")),
        }
    }

    /// The items as blocks.
    pub(crate) fn keys(&self, items: &Items) -> Vec<Block> {
        self.items.encode_all(items, Block::ONES)
    }

    /// AES_k(x) + x for each of `x`, in place, on the rayon pool.
    pub(crate) fn hash(aes: &Aes, x: &mut [Block]) {
        x.par_chunks_mut(CHUNK).with_min_len(16).for_each(|c| {
            let mut h = [Block::ZERO; CHUNK];
            let h = &mut h[..c.len()];
            Hashes::hash_to(aes, c, h);
            c.copy_from_slice(h);
        });
    }

    /// AES_k(x) + x for each of `x`, as a new vector (`x` kept: a run with records pads
    /// them under the OPRF values themselves), on the rayon pool: one pass where a copy
    /// and [`Hashes::hash`] in place take two.
    pub(crate) fn hashed(aes: &Aes, x: &[Block]) -> Vec<Block> {
        let mut out: Vec<Block> = huge_zeroed(x.len());
        (out.par_chunks_mut(CHUNK).with_min_len(16))
            .zip(x.par_chunks(CHUNK).with_min_len(16))
            .for_each(|(out, x)| Hashes::hash_to(aes, x, out));
        out
    }

    /// AES_k(x) + x for each of `x`, into `out`.
    pub(crate) fn hash_to(aes: &Aes, x: &[Block], out: &mut [Block]) {
        aes.encrypt_blocks_to(x, out);
        out.iter_mut().zip(x).for_each(|(h, x)| *h ^= x);
    }
}

/// Appends the OPRF's dimensions to a parameter encoding (the handshake's): those of its
/// OKVS `okvs`, and the shape of the silent VOLE of the OKVS's length.
pub(crate) fn write_dimensions(w: Writer, okvs: &okvs::Params) -> Writer {
    let vole = Shape::new(okvs.len());
    w.u64(okvs.bins)
        .u64(okvs.bin_keys)
        .u64(okvs.sparse)
        .u64(okvs.dense)
        .u64(vole.trees as u64)
        .u64(vole.depth as u64)
}

/// The first 128 bits of a digest.
fn block_of(digest: [u8; 32]) -> Block {
    Block::from_le_bytes(digest[..16].try_into().expect("16 bytes"))
}

/// The OKVS's seed from R's `r` and, where S sent one, its `salt`: RO(r, salt), so that
/// neither party alone picks the rows, and none can be computed before the salt is known.
pub(crate) fn okvs_seed(r: Block, salt: Option<Block>) -> Block {
    match salt {
        None => r,
        Some(salt) => block_of(
            RandomOracle::new("venn/rr22/okvs seed", &[])
                .hash(&[&r.to_le_bytes(), &salt.to_le_bytes()]),
        ),
    }
}

/// R's first step: a fresh seed r, drawn once the keys are fixed (RR22 §2 footnote 2: no
/// one can choose keys that make the OKVS fail), sent so that S can bin its keys and
/// compute Δ·H^B while R encodes; the OKVS of dimensions `params` under it and S's `salt`.
pub(crate) fn send_seed(
    ctx: &mut Context,
    params: okvs::Params,
    salt: Option<Block>,
) -> Result<Okvs> {
    let r = ctx.prg.block();
    ctx.peer.send_blocks(&[r])?;
    Ok(Okvs::new(params, okvs_seed(r, salt)))
}

/// S's first step: the OKVS under the seed R sends and S's own `salt`.
pub(crate) fn receive_seed(
    ctx: &mut Context,
    params: okvs::Params,
    salt: Option<Block>,
) -> Result<Okvs> {
    let mut r = Vec::new();
    ctx.peer.recv_blocks(1, &mut r, "the OKVS seed")?;
    Ok(Okvs::new(params, okvs_seed(r[0], salt)))
}

/// R's side: A' = A + P sent bin by bin as P is solved (S reads each as it comes), P
/// encoding H^B (under `h_b`) of the keys, a bin at a time; returns F(x) = Decode(C, x)
/// for each key, from the rows the encoding found, in the order the keys were given to
/// [`Okvs::bin`].
pub(crate) fn receive(
    ctx: &mut Context,
    h_b: &Aes,
    binned: &BinnedKeys,
    vole: VoleReceiver,
) -> Result<Vec<Block>> {
    receive_then(ctx, h_b, binned, vole, |_, _| {})
}

/// [`receive`], with `then(keys, values)` applied to the values P is to encode at each
/// run of keys before it is solved (tests play cheating receivers with it: an OKVS that
/// encodes something else at some keys, or nothing of H^B at all).
pub(crate) fn receive_then(
    ctx: &mut Context,
    h_b: &Aes,
    binned: &BinnedKeys,
    vole: VoleReceiver,
    then: impl Fn(&[Block], &mut [Block]) + Sync,
) -> Result<Vec<Block>> {
    let VoleReceiver { pairs } = vole;
    binned.encode_streaming(
        |range, out| {
            let keys = &binned.keys()[range];
            Hashes::hash_to(h_b, keys, out);
            then(keys, out);
        },
        &pairs,
        |pair| pair.1,
        |columns, p| {
            p.iter_mut()
                .zip(&pairs[columns])
                .for_each(|(p, pair)| *p ^= pair.0)
        },
        |_, a_prime| ctx.peer.send_blocks(a_prime),
    )
}

/// S's side, with its VOLE's Δ and B: F(y) = Decode(B', y) + Δ·H^B(y) for each of `keys`,
/// B' = B + Δ·A' made a bin at a time as A' comes, and each bin of it read at once, in
/// the cache; Δ·H^B(y) computed while R encodes.
pub(crate) fn evaluate(
    ctx: &mut Context,
    h_b: &Aes,
    okvs: &Okvs,
    (delta, b): (Block, &[Block]),
    keys: &[Block],
) -> Result<Vec<Block>> {
    let binned = okvs.bin(keys);
    let mut values = huge_zeroed(keys.len());
    values
        .par_chunks_mut(CHUNK)
        .zip(keys.par_chunks(CHUNK))
        .for_each(|(values, keys)| {
            let mut h = [Block::ZERO; CHUNK];
            let h = &mut h[..keys.len()];
            Hashes::hash_to(h_b, keys, h);
            gf128::add_evaluations(h, &[delta], values);
        });
    let mut on_b_prime = huge_zeroed(keys.len());
    let bin_len = okvs.params().bin_len();
    binned.decode_streaming(
        |len, bin| ctx.peer.recv_blocks(len, bin, "A'"),
        // Bin i of A' becomes bin i of B' = B + Δ·A', a chunk at a time.
        |i, bin| {
            let b = &b[i * bin_len..(i + 1) * bin_len];
            for (a, b) in bin.chunks_mut(CHUNK).zip(b.chunks(CHUNK)) {
                let mut b_prime = [Block::ZERO; CHUNK];
                let b_prime = &mut b_prime[..a.len()];
                b_prime.copy_from_slice(b);
                gf128::add_evaluations(a, &[delta], b_prime);
                a.copy_from_slice(b_prime);
            }
        },
        &mut on_b_prime,
    )?;
    drop(binned);
    values
        .par_iter_mut()
        .zip(&on_b_prime)
        .for_each(|(v, d)| *v ^= d);
    Ok(values)
}
