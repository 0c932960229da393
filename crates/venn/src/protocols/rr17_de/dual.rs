//! RR17 dual-execution PSI (Rindal–Rosulek, "Malicious-secure private set intersection via
//! dual execution", CCS 2017, Fig. 4 with the §6.2 aggregation), generic over how
//! F_encode is realised ([`Realisation`]): here in the random-oracle model by OOS16 over
//! BCH-(511, 76, 171) ([`crate::ot::oos16`], protocol `rr17-de`), in
//! [`super::standard`] in the standard model (`rr17-de-sm`).
//!
//! Offline: the hashing seed by coin tossing; the base OTs of both directions — direction A
//! (the sender is the F_encode sender; the receiver encodes its slots) and direction B
//! (the receiver is the F_encode sender; the sender encodes its own). For OOS16, 512 KOS15
//! random OTs per direction seed the two extensions.
//!
//! Online: each party turns its items into words — in the random-oracle model by hashing
//! them to ℓ_h-bit values (keyed by the session and the seed) — phases them into m bins and
//! puts each at a uniformly random unused slot of μ (zero words in the rest). Each encodes
//! its slots in its own direction while it takes the other's in the other (the sender its
//! own in B, the receiver its own in A, a batch of each in turn), and each verifies the
//! other's proof before anything depends on those rows. Only then does the sender send, for
//! each item x and each j ∈ [μ_B], `⟦x'⟧ᴬ_{b,j} ⊕ ⟦x'⟧ᴮ_{b,p}` (its slot p) — as a set,
//! partition by partition ([`super::join`]); the receiver outputs each y for which some
//! `⟦y'⟧ᴬ_{b,p} ⊕ ⟦y'⟧ᴮ_{b,j}`, j ∈ [μ_A], is among them. The values have
//! ℓ = λ + log2(n_A·μ_B) + log2(n_B·μ_A) bits (Fig. 4's λ + 2 log(nμ) for unequal sizes,
//! spec §4.9), so a value the sender makes up without encoding matches any of the
//! receiver's with probability ≤ 2^-λ.
//!
//! Only the receiver learns the intersection: a receiver who also returned values could
//! make the sender learn X ∩ Y' for any Y' ⊆ Y of its choice (§6.7), so `--both` is
//! refused.

use super::join::{ReceiversValues, SendersValues};
use super::params::Rr17DeParams;
use super::{toss_seed, Domains};
use crate::crypto::{Block, Prg};
use crate::items::Items;
use crate::net::Channel;
use crate::ot::oos16::{OosReceiverSeeds, OosSenderSeeds};
use crate::ot::{MasnyRindal, ReceiverSeeds, SenderSeeds};
use crate::protocols::{
    AnyParty, Config, Context, Output, Parameters, Party, ProtocolInfo, Sizes, TypedProtocol,
};
use crate::session::Role;
use crate::state::{StateReader, StateWriter};
use crate::tables::simple_hash::SlotTable;
use crate::Result;
use std::marker::PhantomData;

/// RR17 dual-execution PSI with F_encode realised by `R`.
pub(crate) struct DualExecution<R>(PhantomData<fn() -> R>);

impl<R> DualExecution<R> {
    pub(crate) const NEW: Self = DualExecution(PhantomData);
}

impl<R: Realisation> TypedProtocol for DualExecution<R> {
    type Config = <R as Configured>::Config;

    fn info(&self) -> &'static ProtocolInfo {
        R::INFO
    }

    fn params(&self, sizes: Sizes, config: R::Config) -> Result<Box<dyn Parameters>> {
        Ok(Box::new(R::params(sizes, config)?))
    }

    fn check_items(&self, config: R::Config, items: &Items) -> Result<()> {
        R::check_items(config, items)
    }

    fn party(&self, role: Role) -> &'static dyn AnyParty {
        match role {
            Role::Sender => &DeSender::<R>::NEW,
            Role::Receiver => &DeReceiver::<R>::NEW,
        }
    }
}

/// The options a realisation takes: the bins, and σ in the standard model (a trait apart
/// from [`Realisation`] because the protocol's configuration, public to the registry, names
/// it).
pub(crate) trait Configured {
    /// Its options.
    type Config: Config;
}

/// How a dual execution realises F_encode (Fig. 2) and turns items into bins and words:
/// [`Rom`](super::rom::Rom) (OOS16, items hashed by a random oracle) or the standard model
/// ([`super::standard::Standard`]: chosen-message OTs on σ-bit integers).
pub(super) trait Realisation: Configured + Sized + Sync + Send + 'static {
    /// The protocol's registry entry.
    const INFO: &'static ProtocolInfo;
    /// The label of the hashing seed's coin toss.
    const SEED_TOSS: &'static str;
    /// The seeds of the direction in which this party is the F_encode sender.
    type SendingSeeds: DirectionSeeds;
    /// The seeds of the direction in which it encodes its own slots.
    type EncodingSeeds: DirectionSeeds;
    /// One direction's F_encode sender, once the peer has encoded its slots in it.
    type Sending: Sync;
    /// Buffers [`Realisation::encode_bin`] reuses.
    type Scratch: Default;

    /// The parameters for `sizes` and `config`.
    fn params(sizes: Sizes, config: Self::Config) -> Result<Rr17DeParams>;
    /// Refuses items it cannot run on with `config` ([`TypedProtocol::check_items`]).
    fn check_items(_config: Self::Config, _items: &Items) -> Result<()> {
        Ok(())
    }
    /// Each item's bin and word (Fig. 4 step 2), with the coin-tossed `seed`.
    fn phased(
        d: &Domains,
        p: &Rr17DeParams,
        seed: Block,
        items: &Items,
    ) -> Result<(Vec<usize>, Vec<Block>)>;
    /// Fig. 4 step 3 for this party (`role`): encodes its slots (item `x`'s word
    /// `words[x]`, 0 in a dummy slot) in its own direction ([`directions`]), where it is
    /// the F_encode receiver, and takes the peer's encodings in the other ([`Rr17DeParams::peer_instances`]),
    /// where it is the sender, checking them before anything depends on them. Returns the
    /// encoding of each item's own slot, in item order, and the peer's instances.
    fn encode_both(
        ctx: &mut Context,
        p: &Rr17DeParams,
        d: &Domains,
        state: &DeState<Self>,
        role: Role,
        slots: &SlotTable,
        words: &[Block],
    ) -> Result<(Vec<Block>, Self::Sending)>;
    /// Appends the encoding of each of `words` in each instance `first..first + count`:
    /// `out[j·words.len() + k]` is word k in instance `first + j`.
    fn encode_bin(
        sending: &Self::Sending,
        first: usize,
        count: usize,
        words: &[Block],
        scratch: &mut Self::Scratch,
        out: &mut Vec<Block>,
    );
    /// Frees what `sending` holds for the instances from `from` on, which are not encoded
    /// again (the values loops run from the last bin down to free a direction's rows as
    /// they are used).
    fn release(sending: &mut Self::Sending, from: usize);
}

/// The seeds of one direction, as both realisations' kinds of seeds are made, saved
/// and read back.
pub(super) trait DirectionSeeds: Sized + Send + 'static {
    /// Runs the seed OTs of the direction named by `sid`.
    fn new(chan: &mut dyn Channel, prg: &mut Prg, sid: &[u8; 32]) -> Result<Self>;
    fn save(&self, out: &mut StateWriter) -> Result<()>;
    fn load(input: &mut StateReader) -> Result<Self>;
}

/// Implements [`DirectionSeeds`] for seeds with `new(chan, prg, sid)`, `save`, `load`.
macro_rules! direction_seeds {
    ($($seeds:ty => $new:path),*) => {$(
        impl DirectionSeeds for $seeds {
            fn new(chan: &mut dyn Channel, prg: &mut Prg, sid: &[u8; 32]) -> Result<Self> {
                $new(chan, prg, sid)
            }
            fn save(&self, out: &mut StateWriter) -> Result<()> {
                <$seeds>::save(self, out)
            }
            fn load(input: &mut StateReader) -> Result<Self> {
                <$seeds>::load(input)
            }
        }
    )*};
}

direction_seeds!(
    OosSenderSeeds => OosSenderSeeds::new,
    OosReceiverSeeds => OosReceiverSeeds::new,
    SenderSeeds => SenderSeeds::new::<MasnyRindal>,
    ReceiverSeeds => ReceiverSeeds::new::<MasnyRindal>
);

/// Bins whose rows are freed at once as the values loops go down.
const RELEASE_BINS: usize = 1 << 12;

/// This party's items in bin `b` (its slots `b·μ_own ..`, each kept with its slot).
fn bin_items(slots: &SlotTable, b: usize) -> impl Iterator<Item = (usize, u32)> + '_ {
    (b * slots.mu..(b + 1) * slots.mu)
        .filter_map(|slot| slots.item_at(slot).map(|x| (x as usize, slot as u32)))
}

/// Reused buffers for [`encode_bin`].
struct BinScratch<R: Realisation> {
    /// The bin's items of this party, each with its slot.
    items: Vec<(usize, u32)>,
    words: Vec<Block>,
    /// `encodings[j·items.len() + k]`: item k in the peer's row j of the bin.
    encodings: Vec<Block>,
    realisation: R::Scratch,
}

impl<R: Realisation> Default for BinScratch<R> {
    fn default() -> Self {
        BinScratch {
            items: Vec::new(),
            words: Vec::new(),
            encodings: Vec::new(),
            realisation: R::Scratch::default(),
        }
    }
}

/// This party's `items` of bin `b` (each with its slot), each encoded in every one of the
/// peer's `mu_peer` instances of the bin (where this party is the F_encode sender).
fn encode_bin<R: Realisation>(
    items: impl Iterator<Item = (usize, u32)>,
    words: &[Block],
    sending: &R::Sending,
    b: usize,
    mu_peer: usize,
    s: &mut BinScratch<R>,
) {
    s.items.clear();
    s.items.extend(items);
    s.words.clear();
    s.words.extend(s.items.iter().map(|&(x, _)| words[x]));
    s.encodings.clear();
    if !s.items.is_empty() {
        let (words, scratch) = (&s.words, &mut s.realisation);
        R::encode_bin(
            sending,
            b * mu_peer,
            mu_peer,
            words,
            scratch,
            &mut s.encodings,
        );
    }
}

/// The directions of a party: the one where it encodes its own slots, and the peer's. In A
/// sender is the F_encode sender and the receiver encodes its slots; in B the other way
/// round.
pub(super) fn directions(role: Role) -> (&'static str, &'static str) {
    match role {
        Role::Sender => ("B", "A"),
        Role::Receiver => ("A", "B"),
    }
}

/// What both parties keep from the offline phase: the hashing seed and the seeds of both
/// directions.
pub(super) struct DeState<R: Realisation> {
    seed: Block,
    pub(super) sending: R::SendingSeeds,
    pub(super) encoding: R::EncodingSeeds,
}

/// Fig. 4 step 1 and the seed OTs of both directions, A first: in A the sender is the
/// F_encode sender and the receiver encodes its slots, in B the other way round.
fn offline<R: Realisation>(ctx: &mut Context, role: Role) -> Result<DeState<R>> {
    let d = Domains::new(R::INFO.name, ctx);
    ctx.phase("coin tossing and seed OTs", true);
    let seed = toss_seed(ctx, role, R::SEED_TOSS)?;
    let (sid_a, sid_b) = (d.direction_sid("A"), d.direction_sid("B"));
    let (chan, prg) = (&mut *ctx.peer, &mut ctx.prg);
    let (sending, encoding) = match role {
        Role::Sender => {
            let sending = R::SendingSeeds::new(chan, prg, &sid_a)?;
            (sending, R::EncodingSeeds::new(chan, prg, &sid_b)?)
        }
        Role::Receiver => {
            let encoding = R::EncodingSeeds::new(chan, prg, &sid_a)?;
            (R::SendingSeeds::new(chan, prg, &sid_b)?, encoding)
        }
    };
    Ok(DeState {
        seed,
        sending,
        encoding,
    })
}

fn save_state<R: Realisation>(state: &DeState<R>, out: &mut StateWriter) -> Result<()> {
    out.block(state.seed)?;
    state.sending.save(out)?;
    state.encoding.save(out)
}

fn load_state<R: Realisation>(input: &mut StateReader) -> Result<DeState<R>> {
    Ok(DeState {
        seed: input.block()?,
        sending: R::SendingSeeds::load(input)?,
        encoding: R::EncodingSeeds::load(input)?,
    })
}

/// Fig. 4 step 2: the parameters, and `items` hashed, phased and placed in m bins of μ
/// slots (`mu_a` for the sender, `mu_b` for the receiver). Returns the parameters, the
/// slots and each item's word.
fn place<R: Realisation>(
    ctx: &mut Context,
    seed: Block,
    items: &Items,
    role: Role,
) -> Result<(Rr17DeParams, Domains, SlotTable, Vec<Block>)> {
    let p = R::params(ctx.session.sized, ctx.config()?)?;
    let d = Domains::new(R::INFO.name, ctx);
    ctx.phase("hashing and encoding", false);
    let (bins, words) = R::phased(&d, &p, seed, items)?;
    let mu = match role {
        Role::Sender => p.mu_a,
        Role::Receiver => p.mu_b,
    };
    let slots = SlotTable::place(&bins, p.hashing.m as usize, mu, &mut ctx.prg)?;
    Ok((p, d, slots, words))
}

/// The sender's online step (Fig. 4 steps 2–5). A test plays a cheating sender through the
/// last two arguments: `valued` (if given) replaces its items where its values are computed
/// (item k's values then combine its direction-A encodings with the direction-B encoding of
/// `items[k]`), and `then(values)` may change each item's μ_B values before they are sent.
fn sender<R: Realisation>(
    ctx: &mut Context,
    state: DeState<R>,
    items: &Items,
    valued: Option<&Items>,
    mut then: impl FnMut(&mut [Block]),
) -> Result<()> {
    let (p, d, slots, words) = place::<R>(ctx, state.seed, items, Role::Sender)?;
    // Its slots in direction B, the receiver's in A (its proof checked before anything
    // depends on them).
    let (own, mut sending) = R::encode_both(ctx, &p, &d, &state, Role::Sender, &slots, &words)?;
    let (slots, words) = match valued {
        Some(valued) => {
            let (bins, words) = R::phased(&d, &p, state.seed, valued)?;
            let m = p.hashing.m as usize;
            (SlotTable::place(&bins, m, p.mu_a, &mut ctx.prg)?, words)
        }
        None => (slots, words),
    };
    ctx.phase("comparison values", false);
    // Each item's μ_B values (value j for the receiver's slot j of the bin), computed bin
    // by bin from the last (the rows read once and freed as it goes: its values take their
    // place) while the receiver computes its own; sent by partition ([`join`]).
    let (mu, bytes) = (p.mu_b, p.value_bytes);
    let mut values = SendersValues::new(p.partition_bits(), items.len() * mu);
    let mut bin = BinScratch::<R>::default();
    let mut item = vec![Block::ZERO; mu];
    for b in (0..p.hashing.m as usize).rev() {
        if b % RELEASE_BINS == 0 {
            R::release(&mut sending, (b + 1) * mu);
        }
        encode_bin(bin_items(&slots, b), &words, &sending, b, mu, &mut bin);
        let k = bin.items.len();
        for (i, &(x, _)) in bin.items.iter().enumerate() {
            for (j, v) in item.iter_mut().enumerate() {
                *v = bin.encodings[j * k + i] ^ own[x];
            }
            then(&mut item);
            for &v in &item {
                values.push(v & Block::low_ones(8 * bytes));
            }
        }
    }
    drop(sending);
    values.send(ctx.peer, bytes, &mut ctx.prg)
}

/// The receiver's online step (Fig. 4 steps 2–6): each match as (its item, the position
/// among the sender's values of the value that matched it), sorted by its item.
fn receiver<R: Realisation>(
    ctx: &mut Context,
    state: DeState<R>,
    items: &Items,
) -> Result<Vec<(u32, u32)>> {
    let (p, d, slots, words) = place::<R>(ctx, state.seed, items, Role::Receiver)?;
    // Its slots in direction A, the sender's in B (its proof checked before anything
    // depends on them).
    let (own, mut sending) = R::encode_both(ctx, &p, &d, &state, Role::Receiver, &slots, &words)?;
    ctx.phase("comparison values", false);
    // Bin by bin from the last, the rows freed as they are read (its values, kept, confirm
    // a fingerprint hit). Entry r·μ_A + j: the r-th item in that order, `order[r]`, against
    // the sender's instance j of its bin — numbered as computed, so that what is kept by
    // entry is written in order, its pages touched as the rows go.
    let bytes = p.value_bytes;
    let mut values = ReceiversValues::new(p.partition_bits(), items.len() * p.mu_a, bytes);
    let mut order = Vec::with_capacity(items.len());
    let mut bin = BinScratch::<R>::default();
    for b in (0..p.hashing.m as usize).rev() {
        if b % RELEASE_BINS == 0 {
            R::release(&mut sending, (b + 1) * p.mu_a);
        }
        encode_bin(bin_items(&slots, b), &words, &sending, b, p.mu_a, &mut bin);
        let k = bin.items.len();
        for (i, &(y, _)) in bin.items.iter().enumerate() {
            order.push(y as u32);
            for j in 0..p.mu_a {
                let value = (own[y] ^ bin.encodings[j * k + i]) & Block::low_ones(8 * bytes);
                values.push(value);
            }
        }
    }
    drop((own, sending));
    let n_a = ctx.session.n_sender as usize;
    let matches = values.join(ctx.peer, n_a * p.mu_b)?;
    let mut found: Vec<(u32, u32)> = matches
        .iter()
        .map(|&(e, at)| (order[e as usize / p.mu_a], at))
        .collect();
    found.sort_unstable();
    found.dedup_by_key(|f| f.0);
    Ok(found)
}

/// The sender of a dual execution realised by `R`.
pub(super) struct DeSender<R>(PhantomData<fn() -> R>);
/// The receiver.
pub(super) struct DeReceiver<R>(PhantomData<fn() -> R>);

impl<R> DeSender<R> {
    pub(super) const NEW: Self = DeSender(PhantomData);
}

impl<R> DeReceiver<R> {
    pub(super) const NEW: Self = DeReceiver(PhantomData);
}

impl<R: Realisation> Party for DeSender<R> {
    type State = DeState<R>;

    fn offline(&self, ctx: &mut Context) -> Result<Self::State> {
        offline::<R>(ctx, Role::Sender)
    }

    fn online(&self, ctx: &mut Context, state: Self::State, items: &Items) -> Result<Output> {
        sender::<R>(ctx, state, items, None, |_| {})?;
        Ok(Output::Nothing)
    }

    fn save(&self, state: &Self::State, out: &mut StateWriter) -> Result<()> {
        save_state::<R>(state, out)
    }

    fn load(&self, _: Sizes, input: &mut StateReader) -> Result<Self::State> {
        load_state::<R>(input)
    }
}

impl<R: Realisation> Party for DeReceiver<R> {
    type State = DeState<R>;

    fn offline(&self, ctx: &mut Context) -> Result<Self::State> {
        offline::<R>(ctx, Role::Receiver)
    }

    fn online(&self, ctx: &mut Context, state: Self::State, items: &Items) -> Result<Output> {
        let found = receiver::<R>(ctx, state, items)?;
        Ok(Output::Indices(
            found.iter().map(|&(y, _)| y as usize).collect(),
        ))
    }

    fn save(&self, state: &Self::State, out: &mut StateWriter) -> Result<()> {
        save_state::<R>(state, out)
    }

    fn load(&self, _: Sizes, input: &mut StateReader) -> Result<Self::State> {
        load_state::<R>(input)
    }
}

/// A cheating sender against an honest receiver (spec §9, items 6, 11–13), in both
/// realisations.
#[cfg(test)]
mod tests {
    use super::super::rom::Rom;
    use super::super::standard::{SmConfig, Standard};
    use super::super::test_parties::{run, sets};
    use super::*;
    use crate::crypto::Prg;
    use crate::protocols::Bins;

    const N: usize = 1000;
    const SHARED: usize = 300;
    const SIZES: Sizes = Sizes {
        sender: N as u64,
        receiver: N as u64,
    };

    /// How each realisation runs the tests: its configuration and its items.
    trait UnderTest: Realisation {
        const CONFIG: Self::Config;
        /// `items` as the realisation takes them.
        fn items(items: &Items) -> Items;
    }

    impl UnderTest for Rom {
        const CONFIG: Bins = Bins::Lan;
        fn items(items: &Items) -> Items {
            items.clone()
        }
    }

    impl UnderTest for Standard {
        const CONFIG: SmConfig = SmConfig {
            bins: Bins::Lan,
            sigma: 64,
        };
        fn items(items: &Items) -> Items {
            super::super::test_parties::integers(items)
        }
    }

    /// The receiver's matches (its item, its value's position among the sender's) when the
    /// sender runs [`sender`] with `valued` and `then` (given each item's values).
    fn against_sender<R: UnderTest>(
        valued: Option<&Items>,
        then: impl FnMut(&mut [Block]) + Send,
    ) -> Vec<(u32, u32)> {
        let (a, b) = sets(N, N, SHARED);
        let (a, b) = (R::items(&a), R::items(&b));
        let valued = valued.map(R::items);
        let (sender, receiver) = run(
            (N, N),
            R::CONFIG.options(),
            |ctx| {
                let state = offline::<R>(ctx, Role::Sender)?;
                super::sender::<R>(ctx, state, &a, valued.as_ref(), then)
            },
            |ctx| {
                let state = offline::<R>(ctx, Role::Receiver)?;
                super::receiver::<R>(ctx, state, &b)
            },
        );
        sender.unwrap();
        receiver.unwrap()
    }

    /// The receiver's items in the matches.
    fn items(matches: &[(u32, u32)]) -> Vec<usize> {
        matches.iter().map(|&(y, _)| y as usize).collect()
    }

    fn an_honest_sender_gives_the_intersection_in_a_random_order<R: UnderTest>() {
        let found = against_sender::<R>(None, |_| {});
        assert_eq!(items(&found), (0..SHARED).collect::<Vec<_>>());
        // The sender's shared items are its last SHARED: in input order their values would
        // all come after its other items' (item 6: the order must not leak its input
        // order), in bin order they would follow their bins. The matches must be spread
        // over all of its values.
        let p = R::params(SIZES, R::CONFIG).unwrap();
        let mut at: Vec<usize> = found.iter().map(|&(_, at)| at as usize).collect();
        at.sort_unstable();
        let all = N * p.mu_b;
        assert!(
            at[0] < all / 10 && at[SHARED - 1] > all - all / 10,
            "{at:?}"
        );
    }

    fn a_sender_encoding_other_items_in_its_values_gets_none_of_them<R: UnderTest>() {
        // Item 13 / the "different sets in the two executions": for the first half
        // of the shared items (the receiver's 0..150) its values use another shared item's
        // direction-A encodings than the one it encoded in direction B.
        let (a, _) = sets(N, N, SHARED);
        let half = SHARED / 2;
        let valued: Items = (0..N)
            .map(|i| match i.checked_sub(N - SHARED) {
                Some(k) if k < half => format!("shared {}", (k + 1) % half).into_bytes(),
                _ => a.get(i).to_vec(),
            })
            .collect();
        let found = against_sender::<R>(Some(&valued), |_| {});
        assert_eq!(items(&found), (half..SHARED).collect::<Vec<_>>());
    }

    fn random_values_find_nothing<R: UnderTest>() {
        // Item 11.
        let mut prg = Prg::from_seed(Block::from(9));
        let found = against_sender::<R>(None, |values| prg.fill_blocks(values));
        assert_eq!(found, []);
    }

    fn values_for_one_slot_find_about_one_item_in_mu<R: UnderTest>() {
        // Item 12: the sender keeps only value j = 0 of each item (the rest random). The
        // receiver's item is in a uniformly random slot of its bin, whatever else is there,
        // so each shared item is found with probability 1/μ_B.
        let p = R::params(SIZES, R::CONFIG).unwrap();
        let mut prg = Prg::from_seed(Block::from(10));
        let found = against_sender::<R>(None, |values| prg.fill_blocks(&mut values[1..]));
        let expected = SHARED / p.mu_b;
        assert!(
            found.len() > expected / 3 && found.len() < 3 * expected,
            "{} found, about {expected} expected",
            found.len()
        );
        assert!(found.iter().all(|&(y, _)| (y as usize) < SHARED));
    }

    /// Each test above, for the random-oracle and the standard-model realisation.
    macro_rules! in_both {
        ($($test:ident),*) => {
            mod rom {
                $(#[test] fn $test() { super::$test::<super::Rom>() })*
            }
            mod standard {
                $(#[test] fn $test() { super::$test::<super::Standard>() })*
            }
        };
    }

    in_both!(
        an_honest_sender_gives_the_intersection_in_a_random_order,
        a_sender_encoding_other_items_in_its_values_gets_none_of_them,
        random_values_find_nothing,
        values_for_one_slot_find_about_one_item_in_mu
    );
}
