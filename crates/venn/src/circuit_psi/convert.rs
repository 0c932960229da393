//! From the circuit's shared bits to a count or a sum (spec B.3, the [R] alternative to a
//! Hamming-weight circuit): additive shares mod 2^k of `Σ_i (m_A,i ⊕ m_B,i)·v_i`, with
//! `v_i` known to the sender, from one random OT per bit made offline — one round and k + 1
//! bits a bit online, where the slides' Hamming-weight circuit spends about one AND gate a
//! bit and ~log² depth. For a count `v_i = 1` (k = 32 or 64); for a sum with its count
//! `v_i = 2^64·w_i + 1` in k = 128 bits, `w_i` the value of the item the sender placed in
//! slot i: the low half adds up the count (below 2^64, so it never carries into the high
//! half) and the high half the sum of the values mod 2^64.
//!
//! Roles: the spec's Alice (subscript A: m_A, s_A) is Venn's receiver and its Bob
//! (subscript B: m_B, s_B) Venn's sender, whatever their roles in the circuit.
//!
//! **Derandomised correlated OT.** Offline, the sender holds random `(r_0, r_1)` and the
//! receiver a random choice c with `r_c`. Online the receiver sends `e = m_A ⊕ c`; the
//! sender relabels `y_0 = r_e`, `y_1 = r_{1⊕e}` (so the receiver holds `y_{m_A}`), sends
//! `τ = y_1 − y_0 − Δ` with `Δ = (1 − 2·m_B)·v`, and keeps `m_B·v − y_0`. The receiver
//! takes `y_{m_A} − m_A·τ = y_0 + m_A·Δ`. The two add to
//! `(m_A + m_B − 2·m_A·m_B)·v = (m_A ⊕ m_B)·v`. The sender sees e, uniform for a uniform c;
//! the receiver sees τ, uniform because it lacks the other `y`.
//!
//! **Several value columns** (rr22-sum): the receiver's corrections e go once; each column
//! is a pass of its own over the same OTs, the first riding with the count in 128 bits,
//! every other in 64: pass 0 with the OTs' messages as made, pass j > 0 with
//! H(j·2^40 + i, r) of OT i's r (the tweakable hash of the triples), so that no two passes
//! share a message (one message used twice would give the receiver the difference of the
//! sender's two values, as τ does for one).
//!
//! **Threshold.** Only whether the count reaches T: each party inputs its share to a GMW
//! circuit — the receiver `s_A − T`, the sender `s_B` — that computes the top bit of their
//! k-bit sum by a ripple carry (k − 1 AND gates, one exchange each), which is set exactly
//! when the count is below T (the count and T stay below 2^(k−1)). The receiver alone
//! learns the bit.

use crate::crypto::{tccr_hash, Block, Prg};
use crate::gmw::{Gmw, Shared};
use crate::net::Channel;
use crate::state::{exactly, StateReader, StateWriter};
use crate::{Error, Result};

/// Bits of the ring a count of `outputs` bits is taken in: 32 while they fit below 2^31,
/// else 64.
pub(super) fn counting_bits(outputs: u64) -> u32 {
    if outputs < 1 << 31 {
        32
    } else {
        64
    }
}

/// Bits of the ring a sum and its count are taken in.
pub(super) const SUM_BITS: u32 = 128;

/// Bits of the ring of a sum's pass for value column `column`: the first rides with the
/// count ([`SUM_BITS`]), each other alone in 64.
pub(super) fn sum_pass_bits(column: usize) -> u32 {
    match column {
        0 => SUM_BITS,
        _ => 64,
    }
}

fn mask(bits: u32) -> u128 {
    u128::MAX >> (128 - bits)
}

/// The sender's random OTs: both messages of each.
pub(crate) struct SendersOts(Vec<[Block; 2]>);

/// The receiver's random OTs: its choice and message of each.
pub(crate) struct ReceiversOts {
    choices: Vec<bool>,
    messages: Vec<Block>,
}

impl SendersOts {
    /// The messages of random OTs this party sent.
    pub(crate) fn new(sent: Vec<[Block; 2]>) -> Self {
        SendersOts(sent)
    }

    /// Writes them (for a precomputed state).
    pub(crate) fn save(&self, out: &mut StateWriter) -> Result<()> {
        out.blocks(self.0.as_flattened())
    }

    /// Reads what [`SendersOts::save`] wrote: `count` OTs.
    pub(crate) fn load(input: &mut StateReader, count: usize) -> Result<Self> {
        let blocks = exactly(input.blocks(2 * count, "OT messages")?, 2 * count)?;
        Ok(SendersOts(
            blocks.chunks_exact(2).map(|w| [w[0], w[1]]).collect(),
        ))
    }
}

impl ReceiversOts {
    /// The choices and messages of random OTs this party received in.
    pub(crate) fn new(choices: Vec<bool>, messages: Vec<Block>) -> Self {
        assert_eq!(choices.len(), messages.len());
        ReceiversOts { choices, messages }
    }

    /// Writes them (for a precomputed state).
    pub(crate) fn save(&self, out: &mut StateWriter) -> Result<()> {
        out.bits(&self.choices)?;
        out.blocks(&self.messages)
    }

    /// Reads what [`ReceiversOts::save`] wrote: `count` OTs.
    pub(crate) fn load(input: &mut StateReader, count: usize) -> Result<Self> {
        Ok(ReceiversOts {
            choices: exactly(input.bits(count, "OT choices")?, count)?,
            messages: exactly(input.blocks(count, "OT messages")?, count)?,
        })
    }
}

/// Outputs whose corrections τ go in one frame.
const FRAME_OUTPUTS: usize = 1 << 16;
/// Outputs whose choice corrections e go in one frame (8 MiB).
const FRAME_CHOICES: usize = 1 << 26;

/// The sender's side: its share of `Σ (m_A ⊕ m_B)·v_i mod 2^bits`, `m_B` its share of the
/// bits.
pub(super) fn senders_share(
    chan: &mut dyn Channel,
    ots: &SendersOts,
    m_b: &Shared,
    value: impl Fn(usize) -> u128,
    bits: u32,
) -> Result<u128> {
    let e = receive_corrections(chan, ots, m_b.len())?;
    senders_pass(chan, ots, &e, m_b, value, bits, 0)
}

/// The receiver's side: its share, `m_A` its share of the bits.
pub(super) fn receivers_share(
    chan: &mut dyn Channel,
    ots: &ReceiversOts,
    m_a: &Shared,
    bits: u32,
) -> Result<u128> {
    send_corrections(chan, ots, m_a)?;
    receivers_pass(chan, ots, m_a, bits, 0)
}

/// The receiver's choice corrections e = m_A ⊕ c, sent once for every pass over the same
/// bits.
pub(super) fn send_corrections(
    chan: &mut dyn Channel,
    ots: &ReceiversOts,
    m_a: &Shared,
) -> Result<()> {
    let n = m_a.len();
    assert_eq!(ots.choices.len(), n, "one OT per bit");
    let e = Shared::from_bools((0..n).map(|i| m_a.get(i) ^ ots.choices[i]));
    let e_bytes: Vec<u8> = e
        .words()
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .take(n.div_ceil(8))
        .collect();
    for frame in e_bytes.chunks(FRAME_CHOICES / 8) {
        chan.send(frame)?;
    }
    Ok(())
}

/// The sender's end of [`send_corrections`]: the `n` corrections, bit i of byte i / 8.
pub(super) fn receive_corrections(
    chan: &mut dyn Channel,
    ots: &SendersOts,
    n: usize,
) -> Result<Vec<u8>> {
    assert_eq!(ots.0.len(), n, "one OT per bit");
    let mut e = Vec::with_capacity(n.div_ceil(8));
    let mut frame = Vec::new();
    for first in (0..n).step_by(FRAME_CHOICES) {
        let bytes = FRAME_CHOICES.min(n - first).div_ceil(8);
        chan.recv_exact_into(&mut frame, bytes, "choice corrections")?;
        e.extend_from_slice(&frame);
    }
    if !n.is_multiple_of(8) && e[n / 8] >> (n % 8) != 0 {
        return Err(Error::protocol(
            "zero bits past the last correction",
            "bits set",
        ));
    }
    Ok(e)
}

/// The OTs' messages for pass `pass` over them, OT `first` on: as made for pass 0; for pass
/// j > 0, each message m of OT i hashed to H(j·2^40 + i, m), so that every pass has
/// messages of its own (a message used in two passes would give the receiver the difference
/// of the sender's two values).
fn pass_messages(pass: u64, first: usize, messages: &mut [Block]) {
    if pass > 0 {
        tccr_hash(pass << 40 | first as u64, messages);
    }
}

/// The sender's share of pass `pass` (see [`pass_messages`]), after the receiver's
/// corrections `e`.
pub(super) fn senders_pass(
    chan: &mut dyn Channel,
    ots: &SendersOts,
    e: &[u8],
    m_b: &Shared,
    value: impl Fn(usize) -> u128,
    bits: u32,
    pass: u64,
) -> Result<u128> {
    let n = m_b.len();
    assert_eq!(ots.0.len(), n, "one OT per bit");
    let bytes = (bits / 8) as usize;
    let mut tau = Vec::with_capacity(FRAME_OUTPUTS.min(n) * bytes);
    let mut share = 0u128;
    let (mut r0, mut r1) = (Vec::new(), Vec::new());
    for first in (0..n).step_by(FRAME_OUTPUTS) {
        let frame = &ots.0[first..(first + FRAME_OUTPUTS).min(n)];
        for (r, b) in [(&mut r0, 0), (&mut r1, 1)] {
            r.clear();
            r.extend(frame.iter().map(|m| m[b]));
            pass_messages(pass, first, r);
        }
        tau.clear();
        for (i, (&r0, &r1)) in (first..).zip(r0.iter().zip(&r1)) {
            let e = e[i / 8] >> (i % 8) & 1 == 1;
            // The messages as elements of the ring Z_2^128, where the shares add.
            let (y0, y1) = if e { (r1, r0) } else { (r0, r1) };
            let (y0, y1) = (y0.as_u128(), y1.as_u128());
            let v = value(i);
            let m = m_b.get(i);
            let delta = if m { v.wrapping_neg() } else { v };
            let t = y1.wrapping_sub(y0).wrapping_sub(delta) & mask(bits);
            tau.extend_from_slice(&t.to_le_bytes()[..bytes]);
            share = share.wrapping_add(if m { v } else { 0 }).wrapping_sub(y0);
        }
        chan.send(&tau)?;
    }
    Ok(share & mask(bits))
}

/// The receiver's share of pass `pass`, after its corrections went out.
pub(super) fn receivers_pass(
    chan: &mut dyn Channel,
    ots: &ReceiversOts,
    m_a: &Shared,
    bits: u32,
    pass: u64,
) -> Result<u128> {
    let n = m_a.len();
    assert_eq!(ots.choices.len(), n, "one OT per bit");
    let bytes = (bits / 8) as usize;
    let (mut tau, mut messages) = (Vec::new(), Vec::new());
    let mut share = 0u128;
    for first in (0..n).step_by(FRAME_OUTPUTS) {
        let count = FRAME_OUTPUTS.min(n - first);
        chan.recv_exact_into(&mut tau, count * bytes, "OT corrections")?;
        messages.clear();
        messages.extend_from_slice(&ots.messages[first..first + count]);
        pass_messages(pass, first, &mut messages);
        for ((i, t), &y) in (first..).zip(tau.chunks_exact(bytes)).zip(&messages) {
            let mut word = [0u8; 16];
            word[..bytes].copy_from_slice(t);
            let (t, y) = (u128::from_le_bytes(word), y.as_u128());
            let z = if m_a.get(i) { y.wrapping_sub(t) } else { y };
            share = share.wrapping_add(z);
        }
    }
    Ok(share & mask(bits))
}

/// Whether `s_A + s_B mod 2^bits`, a count below 2^(bits − 1), is at least `threshold`:
/// the receiver's side (it learns the answer).
pub(super) fn receiver_reaches(
    gmw: &mut Gmw,
    share: u64,
    threshold: u64,
    bits: u32,
    prg: &mut Prg,
) -> Result<bool> {
    let mine = share.wrapping_sub(threshold) & mask(bits) as u64;
    let a = gmw.share_input(&word_bits(mine, bits), prg)?;
    let b = gmw.peers_input(bits as usize)?;
    let below = top_bit_of_sum(gmw, &a, &b, bits)?;
    let mut theirs = Vec::new();
    gmw.channel()
        .recv_exact_into(&mut theirs, 1, "threshold share")?;
    if theirs[0] > 1 {
        return Err(Error::protocol("a share bit", theirs[0].to_string()));
    }
    Ok(!(below.get(0) ^ (theirs[0] == 1)))
}

/// The sender's side of [`receiver_reaches`].
pub(super) fn sender_reaches(gmw: &mut Gmw, share: u64, bits: u32, prg: &mut Prg) -> Result<()> {
    let a = gmw.peers_input(bits as usize)?;
    let b = gmw.share_input(&word_bits(share, bits), prg)?;
    let below = top_bit_of_sum(gmw, &a, &b, bits)?;
    gmw.channel().send(&[below.get(0) as u8])
}

fn word_bits(w: u64, bits: u32) -> Shared {
    Shared::from_words(vec![w], bits as usize)
}

/// A share of the top bit of `a + b` (shares of two `bits`-bit numbers): the carries by a
/// ripple, `c_{i+1} = c_i ⊕ ((a_i ⊕ c_i) ∧ (b_i ⊕ c_i))`.
fn top_bit_of_sum(gmw: &mut Gmw, a: &Shared, b: &Shared, bits: u32) -> Result<Shared> {
    let bit = |x: &Shared, i: u32| x.slice(i as usize, 1);
    let mut carry = Shared::zeros(1);
    for i in 0..bits - 1 {
        let (x, y) = (bit(a, i).xor(&carry), bit(b, i).xor(&carry));
        let product = gmw.and(&[(&x, &y)])?.remove(0);
        carry = carry.xor(&product);
    }
    let top = bits - 1;
    Ok(bit(a, top).xor(&bit(b, top)).xor(&carry))
}
