//! The batched OPPRF of RS21 (Rindal–Schoppmann, Eurocrypt 2021, §4) with RR22's OKVS
//! (RR22 §5; volePSI's `RsOpprf`; rr22.md §5 step 3): the receiver R holds one key per
//! bin of its cuckoo table and learns, at each, the value the sender S programmed at that
//! key — or, at a key S did not program, a value uniform to R.
//!
//! Both run the OPRF ([`super`]) on R's keys. S evaluates F at each of its keys k
//! and encodes the hint P2 with Decode(P2, k) = w_k ⊕ H^o(F(k)) in a binary OKVS under a
//! fresh seed of its own, every free column random (the randomized encoding of RR22 Fig. 1
//! step 5: P2 is then uniform among the encodings of these pairs, and as the masks are
//! pseudorandom to R, uniform to R); R takes o = Decode(P2, x) ⊕ H^o(F(x)), which is w_k
//! at x = k. At any other x, F(x) is pseudorandom to S and R alike, so o is too.
//!
//! The values are cut to what the circuit reads ([`Programmed`]): a tag of ℓ_k bits, and
//! for sums a 64-bit payload, sent as so many whole bytes a column; a value of more than
//! 128 bits is masked with a second hash, H^o(F(x) ⊕ 1). Further 64-bit payloads (a sum's
//! other value columns) go in hints of their own, each masked with a hash of its own,
//! H^o(F(x) ⊕ (2 + c)) for column c from 0.

use crate::crypto::{Block, Prg};
use crate::framework::Context;
use crate::okvs::{self, BinnedKeys, Okvs, Value};
use crate::oprf::{self, Hashes};
use crate::util::memory::huge_zeroed;
use crate::vole::VoleReceiver;
use crate::{Result, STATISTICAL_SECURITY};
use rayon::prelude::*;

/// What the OPPRF programs at a key: a tag (its low `tag_bytes` bytes sent), and for a
/// wider value a 64-bit payload beside it.
pub(crate) trait Programmed: Value {
    /// Hashes of F(x) its mask takes: 1, or 2 for a value of more than 128 bits.
    const MASK_BLOCKS: usize;
    /// Whether it has a payload.
    const PAYLOAD: bool;
    /// A value of this tag and payload (a type with no payload drops it).
    fn new(tag: u128, payload: u64) -> Self;
    /// Its tag.
    fn tag(self) -> u128;
    /// Its payload.
    fn payload(self) -> u64;
    /// A mask of its width from [`Programmed::MASK_BLOCKS`] hashes.
    fn mask(h: &[Block]) -> Self;
}

/// A tag of up to 64 bits alone (a count).
impl Programmed for u64 {
    const MASK_BLOCKS: usize = 1;
    const PAYLOAD: bool = false;
    fn new(tag: u128, _: u64) -> u64 {
        tag as u64
    }
    fn tag(self) -> u128 {
        self as u128
    }
    fn payload(self) -> u64 {
        0
    }
    fn mask(h: &[Block]) -> u64 {
        h[0].low_u64()
    }
}

/// A tag of up to 128 bits alone (a count of more than 2^24 bins).
impl Programmed for Block {
    const MASK_BLOCKS: usize = 1;
    const PAYLOAD: bool = false;
    fn new(tag: u128, _: u64) -> Block {
        Block::from_u128(tag)
    }
    fn tag(self) -> u128 {
        self.as_u128()
    }
    fn payload(self) -> u64 {
        0
    }
    fn mask(h: &[Block]) -> Block {
        h[0]
    }
}

/// A tag of up to 128 bits and a 64-bit payload (a sum): words 0–1 and 2.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(crate) struct Tagged([u64; 3]);

// SAFETY: three u64s, for which all zeros is a valid value.
unsafe impl bytemuck::Zeroable for Tagged {}

impl std::ops::BitXor for Tagged {
    type Output = Tagged;
    fn bitxor(mut self, other: Tagged) -> Tagged {
        self ^= other;
        self
    }
}

impl std::ops::BitXorAssign for Tagged {
    fn bitxor_assign(&mut self, other: Tagged) {
        self.0.iter_mut().zip(other.0).for_each(|(a, b)| *a ^= b);
    }
}

impl Value for Tagged {
    fn fill(prg: &mut Prg, out: &mut [Tagged]) {
        for v in out {
            *v = Tagged([prg.u64(), prg.u64(), prg.u64()]);
        }
    }
}

impl Programmed for Tagged {
    const MASK_BLOCKS: usize = 2;
    const PAYLOAD: bool = true;
    fn new(tag: u128, payload: u64) -> Tagged {
        Tagged([tag as u64, (tag >> 64) as u64, payload])
    }
    fn tag(self) -> u128 {
        self.0[0] as u128 | (self.0[1] as u128) << 64
    }
    fn payload(self) -> u64 {
        self.0[2]
    }
    fn mask(h: &[Block]) -> Tagged {
        Tagged::new(h[0].as_u128(), h[1].low_u64())
    }
}

/// Bytes a value takes on the wire, for tags of `tag_bytes`.
fn wire_bytes<V: Programmed>(tag_bytes: usize) -> usize {
    tag_bytes + if V::PAYLOAD { 8 } else { 0 }
}

/// The masks H^o(F(x)) (and H^o(F(x) ⊕ 1) for a value of two mask blocks) for each of
/// `f`, `V::MASK_BLOCKS` a value.
fn masks<V: Programmed>(hashes: &Hashes, f: Vec<Block>) -> Vec<Block> {
    let mut h = match V::MASK_BLOCKS {
        1 => f,
        _ => f.iter().flat_map(|&f| [f, f ^ Block::ONE]).collect(),
    };
    Hashes::hash(&hashes.h_o, &mut h);
    h
}

/// Values of the hint in one frame.
const FRAME_VALUES: usize = 1 << 16;

/// The hint's dimensions for `keys` keys of the sender's.
pub(crate) fn hint_params(keys: u64) -> Result<okvs::Params> {
    okvs::Params::binary(keys, STATISTICAL_SECURITY as u32)
}

/// The mask of an extra payload column `column` (from 0) at a key with OPRF value F:
/// H^o(F ⊕ (2 + column)), 64 bits (F and F ⊕ 1 mask the tag and first payload).
fn column_masks(hashes: &Hashes, f: &[Block], column: usize) -> Vec<u64> {
    let mut h: Vec<Block> = f
        .par_iter()
        .map(|&f| f ^ Block::from(2 + column as u64))
        .collect();
    Hashes::hash(&hashes.h_o, &mut h);
    h.into_iter().map(|h| h.low_u64()).collect()
}

/// S's side, with its VOLE's Δ and B, after [`oprf::receive_seed`] gave `oprf`: programs
/// `programmed[i]` at `keys[i]` (each key once; masked in place) and sends the hint, then
/// for each of `columns` (a 64-bit value at each key) a hint of its own.
pub(crate) fn send<V: Programmed>(
    ctx: &mut Context,
    hashes: &Hashes,
    oprf: &Okvs,
    vole: (Block, &[Block]),
    keys: &[Block],
    (mut programmed, mut columns): (Vec<V>, Vec<Vec<u64>>),
    tag_bytes: usize,
) -> Result<()> {
    let f = oprf::evaluate(ctx, &hashes.h_b, oprf, vole, keys)?;
    for (c, column) in columns.iter_mut().enumerate() {
        let h = column_masks(hashes, &f, c);
        column.par_iter_mut().zip(h).for_each(|(v, h)| *v ^= h);
    }
    let h = masks::<V>(hashes, f);
    programmed
        .par_iter_mut()
        .zip(h.par_chunks(V::MASK_BLOCKS))
        .for_each(|(v, h)| *v ^= V::mask(h));
    drop(h);
    send_hint(ctx, keys, programmed, tag_bytes)?;
    for column in columns {
        send_hint(ctx, keys, column, 8)?;
    }
    Ok(())
}

/// Encodes `values` (masked) at `keys` in a binary OKVS under a fresh seed and sends the
/// seed and the encoding, `tag_bytes` of each value's tag.
fn send_hint<V: Programmed>(
    ctx: &mut Context,
    keys: &[Block],
    values: Vec<V>,
    tag_bytes: usize,
) -> Result<()> {
    let seed = ctx.prg.block();
    let hint = Okvs::binary(hint_params(keys.len() as u64)?, seed);
    let p2 = hint.encode_random(keys, &values, ctx.prg.block())?;
    drop(values);
    ctx.peer.send_blocks(&[seed])?;
    let bytes = wire_bytes::<V>(tag_bytes);
    let mut frame = Vec::with_capacity(bytes * FRAME_VALUES.min(p2.len()));
    for chunk in p2.chunks(FRAME_VALUES) {
        frame.clear();
        for v in chunk {
            write(*v, tag_bytes, &mut frame);
        }
        ctx.peer.send(&frame)?;
    }
    Ok(())
}

/// R's side: with its keys `binned` under the OPRF's OKVS (from [`oprf::send_seed`]),
/// the value programmed at each of them (where the sender programmed one; in the order
/// the keys were given in), for a sender of `peer_keys` keys; and the values of each of
/// `columns` extra 64-bit columns.
pub(crate) fn receive<V: Programmed>(
    ctx: &mut Context,
    hashes: &Hashes,
    binned: &BinnedKeys,
    vole: VoleReceiver,
    (peer_keys, columns): (u64, usize),
    tag_bytes: usize,
) -> Result<(Vec<V>, Vec<Vec<u64>>)> {
    // F in the order the keys were given in.
    let f = oprf::receive(ctx, &hashes.h_b, binned, vole)?;
    let column_masks: Vec<Vec<u64>> = (0..columns).map(|c| column_masks(hashes, &f, c)).collect();
    let h = masks::<V>(hashes, f);
    let params = hint_params(peer_keys)?;
    let mut o: Vec<V> = receive_hint(ctx, params, binned, tag_bytes)?;
    o.par_iter_mut()
        .zip(h.par_chunks(V::MASK_BLOCKS))
        .for_each(|(o, h)| *o ^= V::mask(h));
    drop(h);
    let columns = (column_masks.into_iter())
        .map(|h| {
            let mut column: Vec<u64> = receive_hint(ctx, params, binned, 8)?;
            column.par_iter_mut().zip(h).for_each(|(v, h)| *v ^= h);
            Ok(column)
        })
        .collect::<Result<_>>()?;
    Ok((o, columns))
}

/// R's end of [`send_hint`]: the hint decoded at its keys, in the order they were given.
fn receive_hint<V: Programmed>(
    ctx: &mut Context,
    params: okvs::Params,
    binned: &BinnedKeys,
    tag_bytes: usize,
) -> Result<Vec<V>> {
    let mut seed = Vec::new();
    ctx.peer.recv_blocks(1, &mut seed, "the hint's seed")?;
    let len = params.len();
    let bytes = wire_bytes::<V>(tag_bytes);
    let mut p2: Vec<V> = huge_zeroed(len);
    let mut frame = Vec::new();
    for chunk in p2.chunks_mut(FRAME_VALUES) {
        ctx.peer
            .recv_exact_into(&mut frame, chunk.len() * bytes, "the hint")?;
        for (v, b) in chunk.iter_mut().zip(frame.chunks_exact(bytes)) {
            *v = read(b, tag_bytes);
        }
    }
    let mut decoded: Vec<V> = huge_zeroed(binned.keys().len());
    Okvs::binary(params, seed[0]).decode(&p2, binned.keys(), &mut decoded);
    drop(p2);
    Ok(binned.unbin(&decoded))
}

/// Appends `v`'s wire form: its tag's low `tag_bytes` bytes, then any payload's 8.
fn write<V: Programmed>(v: V, tag_bytes: usize, out: &mut Vec<u8>) {
    out.extend_from_slice(&v.tag().to_le_bytes()[..tag_bytes]);
    if V::PAYLOAD {
        out.extend_from_slice(&v.payload().to_le_bytes());
    }
}

/// Reads what [`write`] wrote.
fn read<V: Programmed>(bytes: &[u8], tag_bytes: usize) -> V {
    let mut tag = [0u8; 16];
    tag[..tag_bytes].copy_from_slice(&bytes[..tag_bytes]);
    let payload = match V::PAYLOAD {
        true => u64::from_le_bytes(bytes[tag_bytes..].try_into().expect("8 bytes")),
        false => 0,
    };
    V::new(u128::from_le_bytes(tag), payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value goes over the wire as its tag's bytes and any payload, and comes back with
    /// the tag cut to those bytes; a mask covers every bit a value keeps.
    fn wire_round_trip<V: Programmed>(tag_bytes: usize, payload: u64) {
        let tag = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210u128;
        let mut bytes = Vec::new();
        write(V::new(tag, payload), tag_bytes, &mut bytes);
        assert_eq!(bytes.len(), wire_bytes::<V>(tag_bytes));
        let back: V = read(&bytes, tag_bytes);
        let kept = u128::MAX >> (128 - 8 * tag_bytes);
        assert_eq!(back.tag(), tag & kept);
        assert_eq!(back.payload(), if V::PAYLOAD { payload } else { 0 });
        let ones = [Block::ONES; 2];
        let mask = V::mask(&ones[..V::MASK_BLOCKS]);
        assert_eq!(mask.tag() & kept, kept);
        assert_eq!(mask.payload(), if V::PAYLOAD { u64::MAX } else { 0 });
    }

    #[test]
    fn values_cross_the_wire_at_the_tags_width() {
        for tag_bytes in [5, 8] {
            wire_round_trip::<u64>(tag_bytes, 7);
        }
        for tag_bytes in [5, 8, 9, 16] {
            wire_round_trip::<Block>(tag_bytes, 7);
            wire_round_trip::<Tagged>(tag_bytes, u64::MAX - 3);
        }
    }
}
