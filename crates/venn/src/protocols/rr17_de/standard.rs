//! RR17 dual execution in the standard model (`rr17-de-sm`, §4 "In the standard model",
//! §7, spec §2.3, §3.4 and §4.8): the dual execution of [`super::dual`] with F_encode
//! realised by σ' chosen-message 1-out-of-2 OTs per instance and a PRF, on items that are
//! σ-bit integers (σ = 32 or 64, `--sigma`).
//!
//! **Items.** Each item must be an integer below 2^σ written in decimal, without sign or
//! leading zeros, so that distinct items are distinct integers; anything else is refused
//! before the session starts. Hashing to a smaller domain would need a random oracle to
//! extract a cheating party's items (§7), so there is none: x is phased directly,
//! `phase(x) = ((h(⌊x/m⌋) + x mod m) mod m, ⌊x/m⌋)` with `h(z) = AES_k(z) mod m` keyed by
//! the coin-tossed seed (§3.2 with the sign of phase⁻¹ corrected, spec E3): the word an
//! instance encodes is the representative `z < 2^σ'`, σ' = σ − ⌊log₂ m⌋ (spec E5).
//!
//! **F_encode** (§4): for an instance whose receiver holds the word c, the sender draws
//! 2σ' random κ-bit keys `m[i, b]`; in σ' OTs the receiver, choosing the bits `c_i`, gets
//! `m[i, c_i]` and outputs `⊕_i PRF(m[i, c_i], c)`; the sender encodes any c' as
//! `⊕_i PRF(m[i, c'_i], c')`. The OTs are KOS15 (its correlation check runs before the
//! sender uses its rows) with *chosen* messages: the sender sends
//! `m[i, b] ⊕ H(j, q_j ⊕ b·Δ)` for both b (32 bytes per OT). Random-message OTs would
//! save that traffic but need a programmable random oracle (footnote 1); like Fig. 6's
//! "(CRH)" label, the masking hash H is a correlation-robust hash (spec E19: KOS15 itself
//! is proven in the random-oracle model). PRF(k, c) = AES-128_k(c): a fresh key per OT,
//! so no domain is needed. There is no OOS16 consistency check: the KOS15 check covers
//! the OTs, and any keys a cheating sender chooses define a valid encoding function.
//!
//! **Online, not offline (a departure from spec §2.3's recipe).** The spec suggests the
//! Beaver-style precomputation libOTe uses: random-choice OTs and the masked keys offline,
//! then the correction bits `d = c ⊕ r` online. Venn runs the OTs on the actual choice bits
//! once the items are known: the same OTs, messages and checks, one round fewer and no
//! correction bits — but `venn precompute` keeps only the base OTs and the hashing seed, so
//! a precomputed run saves little of this protocol's time. (The masked keys, 32 bytes per
//! OT, would also make a precomputed state of several GB at 2^20.)

use super::dual::{directions, Configured, DeState, DualExecution, Realisation};
use super::params::Rr17DeParams;
use super::{Domains, Hashing};
use crate::crypto::{encrypt_under_keys, pack_rows, Aes, Block};
use crate::items::Items;
use crate::net::Channel;
use crate::ot::{KosReceiving, KosSender, KosSending, ReceiverSeeds, SenderSeeds};
use crate::protocols::{
    Accepts, Bins, Config, Context, Options, OutputKind, ProtocolInfo, RoleInfo, Security, Sizes,
};
use crate::session::Role;
use crate::tables::simple_hash::SlotTable;
use crate::{Error, Result};
use std::ops::Range;

/// RR17 dual-execution PSI in the standard model, on σ-bit integers (`rr17-de-sm`).
pub(crate) type Rr17DeSm = DualExecution<Standard>;

/// The item lengths it runs on (§7: "PSI over strings of length 32 and 64 bits").
const SIGMAS: &[u32] = &[32, 64];

/// OTs whose masked messages go in one frame (at most 2 MiB; frames hold whole
/// instances).
const FRAME_OTS: usize = 1 << 16;

/// OTs of a direction per segment (see [`Realisation::encode_both`]): the sender's rows of
/// a segment take 32 MiB. Each segment costs two round trips (its check, then its keys),
/// 2 × 53 of them at n = 2^20 and σ = 32. Unit tests use small segments, so that every
/// test run crosses several and leaves one direction to finish alone.
const SEGMENT_OTS: usize = if cfg!(test) { 1 << 12 } else { 1 << 21 };

/// The instances of one frame of masked keys, for σ' OTs per instance.
fn frame_instances(per: usize) -> usize {
    (FRAME_OTS / per).max(1)
}

static INFO: ProtocolInfo = ProtocolInfo {
    name: "rr17-de-sm",
    paper: "Rindal, Rosulek: Malicious-Secure Private Set Intersection via Dual Execution \
            (CCS 2017), Fig. 4 with §6.2, F_encode from chosen-message KOS15 OTs and a PRF \
            (§4, standard model), items of σ = 32 or 64 bits (§7)",
    security: Security::Malicious,
    leakage: "The receiver learns the intersection; the sender learns nothing. Both learn the \
              other's set size. Items are integers below 2^σ (--sigma 32|64). Secure against \
              a malicious party with no random oracle on the items (the paper's \
              standard-model protocol: PRF = AES, chosen-message OTs; the OT extension is \
              KOS15 with a correlation-robust hash, as in the paper's Fig. 6 \"(CRH)\", \
              although KOS15's own proof uses a random oracle), with the paper's \
              relaxation: a cheating party's set may hold up to m·μ items.",
    both_allowed: false,
    roles: &[
        RoleInfo {
            role: Role::Sender,
            security: Security::Malicious,
            output: OutputKind::Nothing,
            // The KOS15 rows are held a segment at a time (32 MiB, whatever n): little
            // grows with the peer's set.
            peer_item_bytes: 100,
            // Its slot words, outputs and μ_B values of 16 bytes (as in rr17-de).
            own_item_bytes: 1000,
        },
        RoleInfo {
            role: Role::Receiver,
            security: Security::Malicious,
            output: OutputKind::Indices,
            peer_item_bytes: 100,
            // μ_A join entries per item, slot words and outputs (as in rr17-de).
            own_item_bytes: 1000,
        },
    ],
};

/// What `rr17-de-sm` takes: the bins (`--bins`) and σ (`--sigma`, which it needs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SmConfig {
    /// RR17's bins.
    pub bins: Bins,
    /// The bit length of the integers.
    pub sigma: u32,
}

impl Config for SmConfig {
    const ACCEPTS: Accepts = Accepts {
        bins: true,
        sigma: SIGMAS,
        any_items: false,
        ..Accepts::NOTHING
    };

    /// The run refuses a missing σ by name before any protocol code runs.
    fn from_options(options: &Options) -> Result<Self> {
        let sigma = (options.sigma.filter(|s| SIGMAS.contains(s)))
            .ok_or_else(|| Error::Usage("rr17-de-sm needs --sigma 32 or 64".into()))?;
        Ok(SmConfig {
            bins: options.bins,
            sigma,
        })
    }

    fn options(&self) -> Options {
        Options {
            bins: self.bins,
            sigma: Some(self.sigma),
            ..Options::default()
        }
    }
}

/// `phase_{h,m}(x) = ((h(⌊x/m⌋) + x mod m) mod m, ⌊x/m⌋)` (§3.2; a bijection between
/// integers and (bin, representative) pairs, see [`unphase`]).
fn phase(x: u64, m: u64, h: &Aes) -> (usize, Block) {
    let z = x / m;
    let bin = ((h.encrypt(Block::from(z)).as_u128() % u128::from(m)) as u64 + x % m) % m;
    (bin as usize, Block::from(z))
}

/// `phase⁻¹_{h,m}(b, z) = z·m + ((b − h(z)) mod m)` (the paper prints `+ h(z)`: E3).
#[cfg(test)]
fn unphase(bin: usize, z: Block, m: u64, h: &Aes) -> u64 {
    let hz = (h.encrypt(z).as_u128() % u128::from(m)) as u64;
    z.low_u64() * m + (bin as u64 + m - hz) % m
}

/// The standard-model realisation of F_encode.
pub(crate) struct Standard;

/// The F_encode sender's side of one direction: its keys `m[j, b]` = AES_key(2j + b) for
/// OT j, regenerated when needed; σ' OTs per instance.
pub(super) struct Keys {
    aes: Aes,
    per_instance: usize,
}

/// Buffers of the PRF calls of a bin (or a frame), made in one batch.
#[derive(Default)]
pub(super) struct PrfBatch {
    keys: Vec<Block>,
    inputs: Vec<Block>,
    outputs: Vec<Block>,
}

impl PrfBatch {
    /// Prepares `per` calls for each of `words` (word k is the input of calls
    /// `k·per..(k + 1)·per`) and returns their keys, to be filled in.
    fn prepare(&mut self, per: usize, words: impl Iterator<Item = Block>) -> &mut [Block] {
        self.inputs.clear();
        for c in words {
            self.inputs.extend(std::iter::repeat_n(c, per));
        }
        self.keys.resize(self.inputs.len(), Block::ZERO);
        &mut self.keys
    }

    /// Runs the prepared calls and appends the XOR of each `per` consecutive outputs (one
    /// encoding each) to `out`.
    fn sums(&mut self, per: usize, out: &mut Vec<Block>) {
        self.outputs.resize(self.keys.len(), Block::ZERO);
        encrypt_under_keys(&self.keys, &self.inputs, &mut self.outputs);
        out.extend(
            self.outputs
                .chunks_exact(per)
                .map(|prfs| prfs.iter().fold(Block::ZERO, |acc, v| acc ^ v)),
        );
    }
}

/// The OT choices of this party's slots `instances` (the bits of each slot's word, 0 in a
/// dummy slot), and the OTs of the slots that hold an item (only their messages are
/// needed), numbered from the first slot's first OT.
fn own_choices(
    slots: &SlotTable,
    words: &[Block],
    per: usize,
    instances: Range<usize>,
) -> (Vec<bool>, Vec<u32>) {
    let word_at = |slot: usize| {
        slots
            .item_at(slot)
            .map_or(Block::ZERO, |x| words[x as usize])
    };
    let first = instances.start;
    let choices = (0..instances.len() * per)
        .map(|j| word_at(first + j / per).bit(j % per))
        .collect();
    let held = instances.filter(|&s| slots.item_at(s).is_some());
    let keep = held
        .flat_map(|s| ((s - first) * per..(s - first + 1) * per).map(|j| j as u32))
        .collect();
    (choices, keep)
}

/// The chosen-message OTs' sender in one direction: sends the key pairs `m[j, b]` masked
/// by `H(j, q_j ⊕ b·Δ)`, a frame at a time, segment by segment, each segment's KOS15
/// check passed before its first frame.
struct KeySending {
    keys: Keys,
    /// The current segment's OTs, OT `first + i` in row `i`.
    kos: Option<KosSender>,
    first: usize,
    /// The first OT not yet sent.
    next: usize,
    buffers: [Vec<Block>; 3],
    js: Vec<u32>,
    frame: Vec<u8>,
}

impl KeySending {
    fn new(keys: Keys) -> Self {
        KeySending {
            keys,
            kos: None,
            first: 0,
            next: 0,
            buffers: Default::default(),
            js: Vec::new(),
            frame: Vec::new(),
        }
    }

    /// The next segment's OTs, from the OT after the last segment's.
    fn segment(&mut self, kos: KosSender) {
        self.first = self.next;
        self.kos = Some(kos);
    }

    fn done(&self) -> bool {
        self.kos
            .as_ref()
            .is_none_or(|kos| self.next >= self.first + kos.len())
    }

    fn send_frame(&mut self, chan: &mut dyn Channel) -> Result<()> {
        let per = self.keys.per_instance;
        let kos = self.kos.as_ref().expect("a segment");
        let (first, from) = (self.next, self.next - self.first);
        let len = (kos.len() - from).min(frame_instances(per) * per);
        let [h0, h1, m] = &mut self.buffers;
        self.js.clear();
        self.js.extend(from as u32..(from + len) as u32);
        h0.clear();
        h1.clear();
        kos.messages(&self.js, false, h0);
        kos.messages(&self.js, true, h1);
        m.clear();
        m.extend((2 * first..2 * (first + len)).map(|c| Block::from(c as u64)));
        self.keys.aes.encrypt_blocks(m);
        for ((pair, a), b) in m.chunks_exact_mut(2).zip(h0.iter()).zip(h1.iter()) {
            pair[0] ^= a;
            pair[1] ^= b;
        }
        pack_rows(m, 1, 16, &mut self.frame);
        self.next = first + len;
        chan.send(&self.frame)
    }
}

/// The chosen-message OTs' receiver in one direction: takes the masked keys a frame at a
/// time, segment by segment, unmasks `m[j, c_j] = mask_{j, c_j} ⊕ H(j, t_j)` for the slots
/// that hold its items (`pads`: the segment's `H(j, t_j)` of those slots, in order, j the
/// direction's OT index) and sets `own[x]` to the encoding of item x's word in its slot.
struct KeyReceiving<'a> {
    pads: Vec<Block>,
    /// The pads used so far.
    used: usize,
    slots: &'a SlotTable,
    words: &'a [Block],
    per: usize,
    own: Vec<Block>,
    /// The first instance not yet received, and the end of the segment.
    next: usize,
    end: usize,
    frame: Vec<u8>,
    batch: PrfBatch,
    encodings: Vec<Block>,
}

impl<'a> KeyReceiving<'a> {
    fn new(slots: &'a SlotTable, words: &'a [Block], per: usize) -> Self {
        KeyReceiving {
            pads: Vec::new(),
            used: 0,
            slots,
            words,
            per,
            own: vec![Block::ZERO; slots.slot_of.len()],
            next: 0,
            end: 0,
            frame: Vec::new(),
            batch: PrfBatch::default(),
            encodings: Vec::new(),
        }
    }

    /// The next segment: its instances up to `end`, and its pads.
    fn segment(&mut self, end: usize, pads: Vec<Block>) {
        (self.end, self.pads, self.used) = (end, pads, 0);
    }

    fn done(&self) -> bool {
        self.next >= self.end
    }

    fn receive_frame(&mut self, chan: &mut dyn Channel) -> Result<()> {
        let (slots, words, per) = (self.slots, self.words, self.per);
        let first = self.next;
        let count = (self.end - first).min(frame_instances(per));
        chan.recv_exact_into(&mut self.frame, 32 * per * count, "chosen-message OT keys")?;
        let held = (first..first + count).filter_map(|s| slots.item_at(s).map(|x| (s, x)));
        let keys = self
            .batch
            .prepare(per, held.clone().map(|(_, x)| words[x as usize]));
        let pads = self.pads[self.used * per..].chunks_exact(per);
        for ((keys, pads), (s, x)) in keys.chunks_exact_mut(per).zip(pads).zip(held.clone()) {
            let c = words[x as usize];
            for (i, (key, pad)) in keys.iter_mut().zip(pads).enumerate() {
                let at = 32 * ((s - first) * per + i) + 16 * usize::from(c.bit(i));
                let mask =
                    Block::from_le_bytes(self.frame[at..at + 16].try_into().expect("16 bytes"));
                *key = mask ^ pad;
            }
            self.used += 1;
        }
        self.encodings.clear();
        self.batch.sums(per, &mut self.encodings);
        for ((_, x), e) in held.zip(&self.encodings) {
            self.own[x as usize] = *e;
        }
        self.next = first + count;
        Ok(())
    }
}

/// The instances of one segment of a direction's OTs (see [`Realisation::encode_both`]
/// below): about [`SEGMENT_OTS`] OTs, whole instances.
fn segment_instances(per: usize) -> usize {
    (SEGMENT_OTS / per).max(1)
}

/// One segment of both directions: `mine` the instances of this party's slots it
/// encodes now (as the OT receiver), `theirs` the peer's (as the OT sender); either may be
/// empty once a direction is done.
#[allow(clippy::too_many_arguments)]
fn encode_segment(
    ctx: &mut Context,
    d: &Domains,
    state: &DeState<Standard>,
    role: Role,
    k: usize,
    (mine, theirs): (Range<usize>, Range<usize>),
    receiving: &mut KeyReceiving,
    sending: &mut KeySending,
) -> Result<()> {
    let per = receiving.per;
    let (own_direction, peer_direction) = directions(role);
    let (chan, prg) = (&mut *ctx.peer, &mut ctx.prg);
    let (receiver, sender) = (
        state.encoding.segment(k as u64),
        state.sending.segment(k as u64),
    );
    let sid = |direction: &str| d.direction_sid(&format!("{direction}, segment {k}"));
    let mut kos_receiving = if mine.is_empty() {
        None
    } else {
        let (choices, keep) = own_choices(receiving.slots, receiving.words, per, mine.clone());
        let (first, sid) = ((mine.start * per) as u64, sid(own_direction));
        Some(KosReceiving::start(
            chan, &receiver, choices, first, prg, &sid, keep,
        )?)
    };
    let mut kos_sending = if theirs.is_empty() {
        None
    } else {
        let (ots, first) = (theirs.len() * per, (theirs.start * per) as u64);
        let sid = sid(peer_direction);
        Some(KosSending::start(chan, &sender, ots, first, &sid, false)?)
    };
    let done = |r: &Option<KosReceiving>, s: &Option<KosSending>| {
        r.as_ref().is_none_or(|r| r.done()) && s.as_ref().is_none_or(|s| s.done())
    };
    while !done(&kos_receiving, &kos_sending) {
        if let Some(r) = kos_receiving.as_mut().filter(|r| !r.done()) {
            r.send_batch(chan)?;
        }
        if let Some(s) = kos_sending.as_mut().filter(|s| !s.done()) {
            s.receive_batch(chan)?;
        }
    }
    let challenge = kos_sending.map(|s| s.challenge(chan, prg)).transpose()?;
    if let Some(r) = kos_receiving {
        receiving.segment(mine.end, r.answer_check(chan)?.into_kept_messages());
    }
    // The peer's check holds before any key of the segment is sent.
    if let Some(c) = challenge {
        sending.segment(c.verify(chan)?);
    }
    while !sending.done() || !receiving.done() {
        if !sending.done() {
            sending.send_frame(chan)?;
        }
        if !receiving.done() {
            receiving.receive_frame(chan)?;
        }
    }
    // The segment's rows and pads are spent: at most one segment's are held.
    sending.kos = None;
    receiving.pads = Vec::new();
    Ok(())
}

impl Configured for Standard {
    type Config = SmConfig;
}

impl Realisation for Standard {
    const INFO: &'static ProtocolInfo = &INFO;
    const SEED_TOSS: &'static str = "rr17-de-sm hashing seed";
    type SendingSeeds = SenderSeeds;
    type EncodingSeeds = ReceiverSeeds;
    type Sending = Keys;
    /// The key pairs of a bin's instances, and its PRF calls.
    type Scratch = (Vec<Block>, PrfBatch);

    fn params(sizes: Sizes, config: SmConfig) -> Result<Rr17DeParams> {
        let SmConfig { bins, sigma } = config;
        let hashing = Hashing::of_bits(sizes, bins, |_| sigma);
        let most = hashing.n_a.max(hashing.n_b);
        if sigma < 64 && most > 1 << sigma {
            return Err(Error::Usage(format!(
                "{most} distinct {sigma}-bit integers cannot exist (--sigma)"
            )));
        }
        Rr17DeParams::new(INFO.name, hashing, Some(sigma))
    }

    fn check_items(config: SmConfig, items: &Items) -> Result<()> {
        items.check_integers(INFO.name, Some(config.sigma))
    }

    fn phased(
        _: &Domains,
        p: &Rr17DeParams,
        seed: Block,
        items: &Items,
    ) -> Result<(Vec<usize>, Vec<Block>)> {
        let sigma = p.sigma.expect("standard-model parameters have σ");
        // The seed is uniform and used for nothing else: it keys h directly.
        let h = Aes::new(seed);
        let m = p.hashing.m;
        Ok(items
            .integers(sigma)?
            .into_iter()
            .map(|x| phase(x, m, &h))
            .unzip())
    }

    /// Both directions at once, like OOS16's [`crate::ot::oos16::both_ways`], in
    /// segments of about [`SEGMENT_OTS`] OTs: in each, the KOS15 extensions of both a
    /// batch of each in turn, both correlation checks, then the masked keys of both a
    /// frame of each in turn. The peer's rows are used for nothing before their check has
    /// passed (the keys this party sends are masked by them only after), and this party's
    /// choices were fixed before any of the peer's rows arrived.
    ///
    /// **Segments.** A party holds its KOS15 sender rows until their check passes: 16
    /// bytes for each of the peer's m·μ·σ' OTs, 1.7 GB at n = 2^20 and σ = 32, 5.5 GB at
    /// σ = 64. So each direction runs several KOS15 random-OT extensions, each with its own
    /// check, on the one set of base OTs (one Δ) — KOS15's correlated-OT functionality
    /// initialised once and extended repeatedly, each extension leaking to a cheating
    /// receiver only what its guesses about Δ reveal. Segment k has fresh column streams
    /// (the base seeds' PRG at a counter no row uses, [`SenderSeeds::segment`]), its own
    /// coin-tossed check seed under its own session id, κ + λ padding OTs of its own, and
    /// its OTs numbered on from the last segment's in the output hash, so no two OTs under
    /// Δ share a tweak.
    ///
    /// What the repetition costs: a cheating receiver gets one chance per check, so the
    /// soundness error adds up over the checks (2 × 53 at n = 2^20 and σ = 32: about 7
    /// bits off a per-check bound near 2^-128), and it learns whether its guesses in one
    /// segment were right before it guesses in the next — but any failed check aborts
    /// the run, and each new bit of Δ it guesses still halves its chance of passing. An
    /// abort in segment k comes after the keys of the segments before it were sent; that is
    /// harmless under security with abort, since neither the keys nor Δ depend on any
    /// party's items.
    fn encode_both(
        ctx: &mut Context,
        p: &Rr17DeParams,
        d: &Domains,
        state: &DeState<Self>,
        role: Role,
        slots: &SlotTable,
        words: &[Block],
    ) -> Result<(Vec<Block>, Keys)> {
        let per = p.hashing.word_bits() as usize;
        let keys = Keys {
            aes: Aes::new(ctx.prg.block()),
            per_instance: per,
        };
        let (mut sending, mut receiving) =
            (KeySending::new(keys), KeyReceiving::new(slots, words, per));
        let (own, peer) = (slots.len(), p.peer_instances(role));
        let step = segment_instances(per);
        for k in 0..own.max(peer).div_ceil(step) {
            let range = |n: usize| (k * step).min(n)..((k + 1) * step).min(n);
            let ranges = (range(own), range(peer));
            encode_segment(ctx, d, state, role, k, ranges, &mut receiving, &mut sending)?;
        }
        Ok((receiving.own, sending.keys))
    }

    /// `⊕_i PRF(m[i, c_i], c)` for each word c in each instance (PRF(k, c) = AES_k(c)).
    fn encode_bin(
        keys: &Keys,
        first: usize,
        count: usize,
        words: &[Block],
        (pairs, batch): &mut (Vec<Block>, PrfBatch),
        out: &mut Vec<Block>,
    ) {
        let per = keys.per_instance;
        // m[j, b] for the instances' OTs j: pairs[2·(instance − first)·σ' + 2i + b].
        let ots = first * per..(first + count) * per;
        pairs.clear();
        pairs.extend((2 * ots.start..2 * ots.end).map(|c| Block::from(c as u64)));
        keys.aes.encrypt_blocks(pairs);
        let all = (0..count).flat_map(|_| words.iter().copied());
        let keys = batch.prepare(per, all);
        for (instance, keys) in keys.chunks_exact_mut(per * words.len()).enumerate() {
            let pairs = &pairs[2 * instance * per..2 * (instance + 1) * per];
            for (keys, &c) in keys.chunks_exact_mut(per).zip(words) {
                for (i, (key, pair)) in keys.iter_mut().zip(pairs.chunks_exact(2)).enumerate() {
                    *key = pair[usize::from(c.bit(i))];
                }
            }
        }
        batch.sums(per, out);
    }

    /// The keys are regenerated for each bin: nothing is held.
    fn release(_: &mut Keys, _: usize) {}
}

#[cfg(test)]
mod tests {
    use super::super::dual::{DeReceiver, DeSender};
    use super::super::test_parties::run;
    use super::*;
    use crate::protocols::{Output, Party};

    fn options(sigma: u32) -> Options {
        let bins = Bins::Lan;
        SmConfig { bins, sigma }.options()
    }

    #[test]
    fn phasing_is_a_bijection_on_all_20_bit_integers() {
        // Spec §9 item 25: exhaustively, for a bin count that is not a power of two and
        // one that is; each bin holds exactly the integers its representatives allow.
        let h = Aes::new(Block::from(7));
        for m in [1000u64, 1 << 10] {
            let mut seen = vec![false; ((1 << 20) / m as usize + 1) * m as usize];
            let mut load = vec![0u32; m as usize];
            for x in 0..1u64 << 20 {
                let (bin, z) = phase(x, m, &h);
                assert_eq!(unphase(bin, z, m, &h), x);
                let z = z.as_u128();
                assert!(z < (1 << 20) / u128::from(m) + 1);
                let at = z as usize * m as usize + bin;
                assert!(
                    !std::mem::replace(&mut seen[at], true),
                    "m = {m}: x = {x} collides"
                );
                load[bin] += 1;
            }
            let (least, most) = (load.iter().min().unwrap(), load.iter().max().unwrap());
            assert!(most - least <= 1, "m = {m}: loads {least}..{most}");
        }
    }

    #[test]
    fn phasing_is_inverted_exactly() {
        let h = Aes::new(Block::from(99));
        for m in [1, 3, 1000, 1 << 18, 104_857] {
            let mut seen = std::collections::HashSet::new();
            for x in (0..2000u64).chain([u32::MAX as u64, u64::MAX, u64::MAX - 1]) {
                let (bin, z) = phase(x, m, &h);
                assert!((bin as u64) < m);
                assert!(z.as_u128() <= u128::from(u64::MAX / m));
                assert_eq!(unphase(bin, z, m, &h), x, "m = {m}, x = {x}");
                assert!(seen.insert((bin, z)));
            }
        }
    }

    /// Integers as items: the sender's `n_a`, the receiver's `n_b`; the receiver's first
    /// `shared` are also the sender's (in another order).
    fn integer_sets(n_a: u64, n_b: u64, shared: u64, sigma: u32) -> (Items, Items) {
        let top = if sigma == 64 {
            u64::MAX
        } else {
            (1 << sigma) - 1
        };
        // Spread over the whole range, and a few at its ends.
        let value = |k: u64| top - k.wrapping_mul(0x9e37_79b9_7f4a_7c15) % (top / 2);
        let sender = (0..n_a).map(|i| match i.checked_sub(n_a - shared) {
            Some(k) => value(2 * k),
            None => value(2 * i + 1),
        });
        let receiver = (0..n_b).map(|i| {
            if i < shared {
                value(2 * i)
            } else {
                value(2 * (n_a + i) + 1)
            }
        });
        let text = |x: u64| x.to_string();
        (sender.map(text).collect(), receiver.map(text).collect())
    }

    fn run_sm(sigma: u32, n_a: u64, n_b: u64, shared: u64) -> Vec<usize> {
        let (a, b) = integer_sets(n_a, n_b, shared, sigma);
        let o = options(sigma);
        let (sender, receiver) = run(
            (n_a as usize, n_b as usize),
            o,
            |ctx| {
                let p = DeSender::<Standard>::NEW;
                let state = Party::offline(&p, ctx)?;
                Party::online(&p, ctx, state, &a)
            },
            |ctx| {
                let p = DeReceiver::<Standard>::NEW;
                let state = Party::offline(&p, ctx)?;
                Party::online(&p, ctx, state, &b)
            },
        );
        assert_eq!(sender.unwrap(), Output::Nothing);
        match receiver.unwrap() {
            Output::Indices(ix) => ix,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn receiver_learns_exactly_the_shared_integers() {
        for sigma in [32, 64] {
            assert_eq!(run_sm(sigma, 300, 200, 70), (0..70).collect::<Vec<_>>());
            assert_eq!(run_sm(sigma, 50, 400, 50), (0..50).collect::<Vec<_>>());
        }
    }
}
