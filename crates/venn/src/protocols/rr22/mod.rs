//! VOLE-based PSI, semi-honest (Raghuraman–Rindal, CCS 2022, Fig. 4, "fast" mode): the
//! field's traffic record. Offline, a silent VOLE of length m (the OKVS's): the sender S
//! gets Δ and B, the receiver R gets A and C = B + A·Δ. Online, R sends a fresh seed r,
//! encodes its items into an OKVS P with Decode(P, x) = H^B(x) under r and sends
//! A' = A + P; S sends, shuffled, H^o(Decode(B', y) + Δ·H^B(y)) for its items y with
//! B' = B + Δ·A' = C + Δ·P, each cut to v = λ + log2(n_S·n_R) bits; R keeps the x with
//! H^o(Decode(C, x)) among them. For y ∉ X, Decode(P, y) + H^B(y) ≠ 0 and Δ masks it.
//! The OKVS goes bin by bin: R sends each bin of A' as it solves it, and S makes that bin
//! of B' and reads its items there as it comes.
//!
//! Departures from the authors' code, each the secure reading (rr22.md §1.1): the answer is
//! shuffled (volePSI sends it in S's input order, which tells R the order of S's matches);
//! H^B and H^o are keyed by the session id; the OKVS fails with probability 2^-40 over all
//! its bins together, not per bin.
//!
//! `rr22-m`, against malicious parties (RR22 §4 "Malicious instantiation", after RS21):
//! the VOLE with both its checks and KOS15 ([`crate::vole::Adversary::Malicious`]), a
//! coin-tossed w in the output hash and 128-bit answers ([`malicious`]); and, against a
//! receiver that would fit its OKVS to a pool of hashed items, H^B and the OKVS's rows
//! keyed by a salt the sender sends first in the online phase, with the whole of A' due
//! within one deadline of it ([`overfitting`]).

mod malicious;
pub(super) mod overfitting;

use super::matching::{match_values, receiver_indices, send_permuted, sender_matches};
use super::{
    output_bits, Accepts, AnyParty, Config, Context, Options, Output, OutputKind, ParamTable,
    Parameters, Party, ProtocolInfo, RoleInfo, Security, Sizes, TypedProtocol,
};
use crate::crypto::Block;
use crate::items::Items;
use crate::net::Writer;
use crate::okvs;
use crate::oprf::payloads::{self, PadKey, Repeated};
use crate::oprf::{self, Hashes};
use crate::session::{Role, ShareSent};
use crate::state::{StateReader, StateWriter};
use crate::vole::{self, Adversary, Shape, VoleReceiver, VoleSender};
use crate::{Error, Result, STATISTICAL_SECURITY};
use std::time::{Duration, Instant};

/// What an rr22-m sender says when the receiver's OKVS (m blocks) missed its deadline.
fn late_upload(m: usize, limit: Duration) -> Error {
    Error::Deadline(format!(
        "the receiver's OKVS ({:.1} MB) did not arrive within {:.1} s of the salt that starts \
         it; rr22-m bounds a cheating receiver's extra answers by this time (a slow link: \
         raise it with --upload-deadline)",
        (m * 16) as f64 / 1e6,
        limit.as_secs_f64()
    ))
}

/// RR22's PSI, against semi-honest (`rr22`) or malicious (`rr22-m`) parties.
pub(super) struct Rr22 {
    adversary: Adversary,
}

impl Rr22 {
    /// `rr22`.
    pub(super) const SEMI_HONEST: Rr22 = Rr22 {
        adversary: Adversary::SemiHonest,
    };
    /// `rr22-m`.
    pub(super) const MALICIOUS: Rr22 = Rr22 {
        adversary: Adversary::Malicious,
    };
}

/// Its sender (holds Δ; learns nothing, or the intersection with `--both`).
struct Rr22Sender(Adversary);
/// Its receiver (learns the intersection).
struct Rr22Receiver(Adversary);

static INFO: ProtocolInfo = ProtocolInfo {
    name: "rr22",
    paper: "Raghuraman–Rindal, Blazing Fast PSI from Improved OKVS and Subfield VOLE (CCS \
            2022), Fig. 4, fast mode: silent VOLE over GF(2^128) (BCGIKRS19, ExConv codes of \
            RRT23) and the clustered 3H-GCT OKVS",
    security: Security::SemiHonest,
    leakage: "The receiver learns the intersection and the sender's set size; the sender \
              learns the receiver's set size (and the intersection with --both). The \
              sender's answer is shuffled, so the receiver learns nothing of its order.",
    both_allowed: true,
    roles: &[
        RoleInfo {
            role: Role::Sender,
            security: Security::SemiHonest,
            output: OutputKind::Nothing,
            // The VOLE's noise and B, B' over the receiver's OKVS (m ≈ 1.36·n_R).
            peer_item_bytes: 160,
            own_item_bytes: 96,
        },
        RoleInfo {
            role: Role::Receiver,
            security: Security::SemiHonest,
            output: OutputKind::Indices,
            peer_item_bytes: 16,
            // The VOLE's noise pairs, A and C, the OKVS and its rows, the match table.
            own_item_bytes: 384,
        },
    ],
};

static INFO_M: ProtocolInfo = ProtocolInfo {
    name: "rr22-m",
    paper: "Raghuraman–Rindal, Blazing Fast PSI from Improved OKVS and Subfield VOLE (CCS \
            2022), §4 malicious instantiation (after Rindal–Schoppmann, Eurocrypt 2021): \
            silent VOLE with Ferret's check (YWL+20) and a base-VOLE check (WYKW21), KOS15 \
            OTs, a coin-tossed output hash",
    security: Security::Malicious,
    leakage: "The receiver learns the intersection and the sender's set size; the sender \
              learns the receiver's set size (and the intersection with --both). A cheating \
              receiver can get answers for more items than it declared: up to the OKVS's \
              size m ≈ 1.35·n_R by encoding a larger set, and somewhat more by fitting the \
              OKVS to a pool of hashed items (\"overfitting\", Han–Kim–Lee–Son, Asiacrypt \
              2024). Its hashing must follow the sender's fresh salt and end within the \
              upload deadline (upload_deadline below: the default, 30 s plus m·16 bytes at \
              10 MB/s; the sender sets it with --upload-deadline). cheating_receiver is the \
              most that buys a receiver computing 2^40 hashes a second (Venn's own union \
              bound; the attacks known gain about 0.5% of m for 2^44 work). The extra items \
              are whichever the search finds, not of the receiver's choosing; the work \
              cannot be reused across sessions, and more sessions are visible to the \
              sender. With --both it may withhold items from the sender's output, never \
              add any.",
    both_allowed: true,
    roles: &[
        RoleInfo {
            role: Role::Sender,
            security: Security::Malicious,
            output: OutputKind::Nothing,
            peer_item_bytes: 160,
            own_item_bytes: 128,
        },
        RoleInfo {
            role: Role::Receiver,
            security: Security::Malicious,
            output: OutputKind::Indices,
            peer_item_bytes: 16,
            own_item_bytes: 384,
        },
    ],
};

/// What rr22's records reveal ([`TypedProtocol::records_leakage`]).
const RECORDS_LEAKAGE: &str = "The receiver learns, beside the intersection, the sender's \
    record of each item it matched and the records' width: every sender record is sent, \
    padded to that width under its item's OPRF value, so the unmatched ones stay \
    pseudorandom to it; the sender learns nothing more. Where the sender's keys have \
    several rows, each row's record goes, so the receiver learns too the number of rows of \
    each matched key and the sender's rows in all. With --both and the receiver's records, \
    the sender learns the receiver's records of each matched item, one for each of its \
    rows.";

/// What rr22-m's records reveal: rr22's, and what a cheating receiver gets.
const RECORDS_LEAKAGE_M: &str = "The receiver learns, beside the intersection, the \
    sender's record of each item it matched and the records' width: every sender record is \
    sent, padded to that width under its item's OPRF value, so the unmatched ones stay \
    pseudorandom to it; the sender learns nothing more. Where the sender's keys have \
    several rows, each row's record goes, so the receiver learns too the number of rows of \
    each matched key and the sender's rows in all. With --both and the receiver's records, \
    the sender learns the receiver's records of each matched item, one for each of its \
    rows. A cheating \
    receiver reads a record only where it gets an answer, so the bound on its extra \
    answers (cheating_receiver) bounds its extra records.";

/// rr22's and rr22-m's configuration: the width of the record each sender item carries to
/// the receiver, if any, and of the record each receiver item carries to the sender (with
/// `--both`), if any ([`oprf::payloads`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Rr22Config {
    payload: Option<u32>,
    receiver_payload: Option<u32>,
}

impl Config for Rr22Config {
    const ACCEPTS: Accepts = Accepts {
        payload: true,
        ..Accepts::NOTHING
    };

    fn from_options(options: &Options) -> Result<Self> {
        for role in [Role::Sender, Role::Receiver] {
            match options.records(role) {
                Some(w) if !(1..=payloads::MAX_WIDTH as u32).contains(&w) => {
                    return Err(Error::Usage(format!(
                        "a record of the {}'s columns takes 1 to {} bytes, not {w}",
                        role.name(),
                        payloads::MAX_WIDTH
                    )))
                }
                _ => {}
            }
        }
        Ok(Rr22Config {
            payload: options.payload,
            receiver_payload: options.receiver_payload,
        })
    }

    fn options(&self) -> Options {
        Options {
            payload: self.payload,
            receiver_payload: self.receiver_payload,
            ..Options::default()
        }
    }
}

/// RR22's dimensions for one pair of set sizes.
struct Rr22Params {
    okvs: okvs::Params,
    out_bits: usize,
    adversary: Adversary,
    n_receiver: u64,
}

impl Rr22Params {
    fn new(sizes: Sizes, adversary: Adversary) -> Result<Rr22Params> {
        let okvs = okvs::Params::new(sizes.receiver, STATISTICAL_SECURITY as u32)?;
        Ok(Rr22Params {
            okvs,
            out_bits: match adversary {
                Adversary::SemiHonest => output_bits(sizes),
                // Whole: a truncated answer could match several of a cheating sender's
                // queries, and the simulator could not extract its set (rr22.md §1.2).
                Adversary::Malicious => 128,
            },
            adversary,
            n_receiver: sizes.receiver,
        })
    }
}

impl Rr22Params {
    /// rr22-m's default deadline for the receiver's OKVS and the most items a cheating
    /// receiver gets answers for within it (overfitting.rs).
    fn overfitting_bound(&self) -> [(&'static str, String); 2] {
        let m = self.okvs.len();
        let deadline = overfitting::upload_deadline(m);
        let (bound, _) = overfitting::ceiling_within(m as u64, deadline);
        let per_item = bound * m as f64 / self.n_receiver.max(1) as f64;
        [
            (
                "upload_deadline",
                format!("{:.0} s", deadline.as_secs_f64()),
            ),
            (
                "cheating_receiver",
                format!("≤{bound:.2}·m={per_item:.2}·n_R"),
            ),
        ]
    }
}

impl Parameters for Rr22Params {
    fn encode(&self) -> Vec<u8> {
        oprf::write_dimensions(Writer::new(), &self.okvs)
            .u64(self.out_bits as u64)
            .0
    }

    fn table(&self) -> ParamTable {
        let (o, vole) = (&self.okvs, Shape::new(self.okvs.len()));
        ParamTable(
            vec![
                ("m", o.len().to_string()),
                ("bins", o.bins.to_string()),
                ("bin_keys", o.bin_keys.to_string()),
                ("m'", o.sparse.to_string()),
                ("g", o.dense.to_string()),
                ("okvs_failure", format!("2^-{}", o.lambda)),
                ("t", vole.trees.to_string()),
                ("h", vole.depth.to_string()),
                ("v", self.out_bits.to_string()),
            ]
            .into_iter()
            .chain(
                match self.adversary {
                    Adversary::SemiHonest => None,
                    Adversary::Malicious => Some(self.overfitting_bound()),
                }
                .into_iter()
                .flatten(),
            )
            .collect(),
        )
    }
}

impl TypedProtocol for Rr22 {
    type Config = Rr22Config;

    fn info(&self) -> &'static ProtocolInfo {
        match self.adversary {
            Adversary::SemiHonest => &INFO,
            Adversary::Malicious => &INFO_M,
        }
    }

    fn accepts(&self) -> Accepts {
        Accepts {
            upload_deadline: self.adversary == Adversary::Malicious,
            ..Rr22Config::ACCEPTS
        }
    }

    fn records_leakage(&self) -> Option<&'static str> {
        Some(match self.adversary {
            Adversary::SemiHonest => RECORDS_LEAKAGE,
            Adversary::Malicious => RECORDS_LEAKAGE_M,
        })
    }

    fn params(&self, sizes: Sizes, _: Rr22Config) -> Result<Box<dyn Parameters>> {
        Ok(Box::new(Rr22Params::new(sizes, self.adversary)?))
    }

    /// The per-item model, and for a party that gets the peer's records its matches'
    /// (at most one for each of its items), with their indices and places.
    fn memory(&self, role: Role, sizes: Sizes, config: Rr22Config) -> u64 {
        let (width, own) = match role {
            Role::Receiver => (config.payload, sizes.receiver),
            Role::Sender => (config.receiver_payload, sizes.sender),
        };
        let records = width.map_or(0, |w| own.saturating_mul(w as u64 + 16));
        self.info().role(role).memory(sizes).saturating_add(records)
    }

    fn party(&self, role: Role) -> &'static dyn AnyParty {
        match (role, self.adversary) {
            (Role::Sender, Adversary::SemiHonest) => &Rr22Sender(Adversary::SemiHonest),
            (Role::Sender, Adversary::Malicious) => &Rr22Sender(Adversary::Malicious),
            (Role::Receiver, Adversary::SemiHonest) => &Rr22Receiver(Adversary::SemiHonest),
            (Role::Receiver, Adversary::Malicious) => &Rr22Receiver(Adversary::Malicious),
        }
    }
}

/// The records this party's `items` carry to the peer, if the run carries any: checked
/// against the run's options (as [`crate::run`] did before the handshake), so of the
/// agreed width.
fn own_records<'a>(ctx: &Context, items: &'a Items) -> Result<Option<Own<'a>>> {
    (ctx.session.options).check_records(ctx.session.role, items)?;
    Ok(items.records().map(|first| Own {
        first,
        repeats: items.repeated_records(),
    }))
}

/// A party's own records: each item's first row's, of their width, and its repeated
/// rows' ([`Items::repeated_records`]).
#[derive(Clone, Copy)]
struct Own<'a> {
    first: (&'a [u8], usize),
    repeats: (&'a [u32], &'a [u8]),
}

/// The most repeated rows the peer may send: the rows it may bring less its items.
fn most_repeats(ctx: &Context) -> u64 {
    let peer = match ctx.session.role {
        Role::Sender => ctx.session.n_receiver,
        Role::Receiver => ctx.session.n_sender,
    };
    ctx.max_peer_rows.saturating_sub(peer)
}

/// The sender's records after its answers, in their order `perm`, under `key`: each
/// item's first row's, then its repeated rows' ([`payloads::send_repeats`]).
fn send_records(
    ctx: &mut Context,
    key: PadKey,
    perm: &[u32],
    (x, v): (&[Block], &[Block]),
    own: Own,
) -> Result<()> {
    if ctx.in_buckets && !own.repeats.0.is_empty() {
        return Err(Error::Usage(
            "a sender's repeated rows go after the last bucket of a run in buckets \
             (venn::later_rows), not in a bucket's session"
                .into(),
        ));
    }
    ctx.phase("send records", false);
    let (records, width) = own.first;
    payloads::send(ctx.peer, key, perm, x, v, records, width)?;
    let n_r = ctx.session.n_receiver;
    payloads::send_repeats(ctx.peer, key, &mut ctx.prg, (x, v), own.repeats, width, n_r)?;
    ctx.keep_pad_seeds(|| key.seeds(x, v));
    Ok(())
}

/// The receiver's records for its `matches` (own entry, sender position) under `key`,
/// where the run carries records of `width` bytes: made with its item blocks `x` and
/// OPRF values `v` ([`payloads::receive`], [`payloads::receive_repeats`]).
fn receive_records(
    ctx: &mut Context,
    key: PadKey,
    width: Option<usize>,
    matches: &[(u32, u32)],
    (x, v): (&[Block], &[Block]),
) -> Result<Option<(Vec<u8>, Repeated, usize)>> {
    let Some(width) = width else { return Ok(None) };
    ctx.phase("receive records", false);
    let n_s = ctx.session.n_sender as usize;
    let first = payloads::receive(ctx.peer, key, n_s, width, matches, x, v)?;
    let (most, n_r) = (most_repeats(ctx), ctx.session.n_receiver);
    let repeats = payloads::receive_repeats(ctx.peer, key, most, n_r, width, matches, (x, v))?;
    ctx.keep_pad_seeds(|| key.seeds(x, v));
    Ok(Some((first, repeats, width)))
}

/// The receiver's records of its `matched` entries, in that order, if it has records (a
/// run with them has `--both`): after the positions or tags that name them to the sender.
fn send_own_records(ctx: &mut Context, own: Option<Own>, matched: &[usize]) -> Result<()> {
    let Some(own) = own else {
        return Ok(());
    };
    ctx.phase("send records", false);
    payloads::send_revealed(ctx.peer, matched, own.first, own.repeats)
}

/// The sender's output with `--both`: its items the receiver `matched` (in the order it
/// named them), sorted, each with the receiver's records where the run carries records
/// of `width` bytes that way.
fn sender_with_records(
    ctx: &mut Context,
    matched: Vec<usize>,
    width: Option<u32>,
) -> Result<Output> {
    match width {
        None => {
            let mut matched = matched;
            matched.sort_unstable();
            Ok(Output::Indices(matched))
        }
        Some(width) => {
            ctx.phase("receive records", false);
            let most = most_repeats(ctx);
            payloads::receive_revealed(ctx.peer, matched, width as usize, most)
        }
    }
}

/// The receiver's output: its `indices`, with the records read for them if any.
fn with_records(indices: Vec<usize>, records: Option<(Vec<u8>, Repeated, usize)>) -> Output {
    match records {
        None => Output::Indices(indices),
        Some((first, repeats, width)) => payloads::with_repeats(indices, first, repeats, width),
    }
}

impl Party for Rr22Sender {
    type State = VoleSender;

    fn offline(&self, ctx: &mut Context) -> Result<VoleSender> {
        let p = Rr22Params::new(ctx.session.sized, self.0)?;
        ctx.phase("silent VOLE", true);
        vole::send(
            ctx.peer,
            &mut ctx.prg,
            &ctx.session.id,
            p.okvs.len(),
            self.0,
        )
    }

    fn online(&self, ctx: &mut Context, state: VoleSender, items: &Items) -> Result<Output> {
        let p = Rr22Params::new(ctx.session.sized, self.0)?;
        let VoleSender { delta, b } = state;
        let (toss, salt) = match self.0 {
            Adversary::SemiHonest => (None, None),
            Adversary::Malicious => {
                let (toss, salt) = malicious::commit(ctx)?;
                (Some(toss), Some(salt))
            }
        };
        // The receiver's time to fit its OKVS runs from the salt (overfitting.rs).
        let deadline = salt.map(|_| {
            let limit = (ctx.upload_deadline).unwrap_or(overfitting::upload_deadline(p.okvs.len()));
            (Instant::now() + limit, limit)
        });
        ctx.peer.set_deadline(deadline.map(|d| d.0));
        let hashes = Hashes::new(&ctx.session.id, salt);
        let okvs = oprf::receive_seed(ctx, p.okvs, salt);
        ctx.phase("evaluate", false);
        let keys = hashes.keys(items);
        let values =
            okvs.and_then(|okvs| oprf::evaluate(ctx, &hashes.h_b, &okvs, (delta, &b), &keys));
        ctx.peer.set_deadline(None);
        let mut values = values.map_err(|e| match (e, deadline) {
            (Error::Deadline(_), Some((_, limit))) => late_upload(p.okvs.len(), limit),
            (e, _) => e,
        })?;
        drop(b);
        // Opened only now that A' (so P) is fixed (rr22.md §1.2 item 2).
        let w = toss.map(|t| t.open(ctx.peer)).transpose()?;
        let records = own_records(ctx, items)?;
        let theirs = ctx.config::<Rr22Config>()?.receiver_payload;
        match w {
            None => {
                // F(y), for the records' pads, kept beside H^o(F(y)).
                let (answers, oprf_values) = match records {
                    Some(_) => (Hashes::hashed(&hashes.h_o, &values), Some(values)),
                    None => {
                        Hashes::hash(&hashes.h_o, &mut values);
                        (values, None)
                    }
                };
                ctx.phase("send values", false);
                let perm = send_permuted(ctx, &answers, p.out_bits)?;
                drop(answers);
                if let (Some(own), Some(v)) = (records, &oprf_values) {
                    let key = PadKey::of_session(&ctx.session.id);
                    send_records(ctx, key, &perm, (&keys, v), own)?;
                }
                if !ctx.session.both {
                    return Ok(Output::Nothing);
                }
                let matched = sender_matches(ctx, &perm)?;
                sender_with_records(ctx, matched, theirs)
            }
            Some(w) => malicious::send(ctx, w, &keys, &values, (records, theirs)),
        }
    }

    fn save(&self, state: &VoleSender, out: &mut StateWriter) -> Result<()> {
        state.save(out)
    }

    fn load(&self, sizes: Sizes, input: &mut StateReader) -> Result<VoleSender> {
        VoleSender::load(input, Rr22Params::new(sizes, self.0)?.okvs.len())
    }
}

/// The receiver's OPRF outputs ([`Rr22Receiver::evaluate`]).
struct Evaluated {
    /// Its items' blocks.
    keys: Vec<Block>,
    /// F(x) = Decode(C, x) at each of them.
    values: Vec<Block>,
    hashes: Hashes,
    /// rr22-m's toss of w, its share sent.
    toss: Option<ShareSent>,
}

impl Rr22Receiver {
    /// The online phase up to F(x) at `items`: the OKVS P of H^B(x), with `then(keys,
    /// values)` applied to the values before they are encoded (the honest receiver does
    /// nothing there; tests play cheating receivers with it), sent as A'; in rr22-m after
    /// S's salt, and with the share of w after A'.
    fn evaluate(
        &self,
        ctx: &mut Context,
        p: &Rr22Params,
        state: VoleReceiver,
        items: &Items,
        then: impl Fn(&[Block], &mut [Block]) + Sync,
    ) -> Result<Evaluated> {
        ctx.phase("encode and send the OKVS", false);
        // rr22-m: S's salt before anything of the OKVS (overfitting.rs).
        let (toss, salt) = match self.0 {
            Adversary::SemiHonest => (None, None),
            Adversary::Malicious => {
                let (toss, salt) = malicious::reply(ctx)?;
                (Some(toss), Some(salt))
            }
        };
        let hashes = Hashes::new(&ctx.session.id, salt);
        let okvs = oprf::send_seed(ctx, p.okvs, salt)?;
        let keys = hashes.keys(items);
        let binned = okvs.bin(&keys);
        let values = oprf::receive_then(ctx, &hashes.h_b, &binned, state, then)?;
        drop(binned);
        // w_r goes with A', after it.
        let toss = toss
            .map(|t| t.send_share(ctx.peer, &mut ctx.prg))
            .transpose()?;
        Ok(Evaluated {
            keys,
            values,
            hashes,
            toss,
        })
    }
}

impl Party for Rr22Receiver {
    type State = VoleReceiver;

    fn offline(&self, ctx: &mut Context) -> Result<VoleReceiver> {
        let p = Rr22Params::new(ctx.session.sized, self.0)?;
        ctx.phase("silent VOLE", true);
        vole::receive(
            ctx.peer,
            &mut ctx.prg,
            &ctx.session.id,
            p.okvs.len(),
            self.0,
        )
    }

    fn online(&self, ctx: &mut Context, state: VoleReceiver, items: &Items) -> Result<Output> {
        let p = Rr22Params::new(ctx.session.sized, self.0)?;
        let Evaluated {
            keys,
            mut values,
            hashes,
            toss,
        } = self.evaluate(ctx, &p, state, items, |_, _| {})?;
        ctx.phase("match values", false);
        let width = ctx.config::<Rr22Config>()?.payload.map(|w| w as usize);
        let own = own_records(ctx, items)?;
        match toss {
            None => {
                // F(x), for the records' pads, kept beside H^o(F(x)).
                let (answers, oprf) = match width {
                    Some(_) => (Hashes::hashed(&hashes.h_o, &values), values),
                    None => {
                        Hashes::hash(&hashes.h_o, &mut values);
                        (values, Vec::new())
                    }
                };
                let matches = match_values(ctx, &answers, p.out_bits)?;
                drop(answers);
                let key = PadKey::of_session(&ctx.session.id);
                let records = receive_records(ctx, key, width, &matches, (&keys, &oprf))?;
                let indices = receiver_indices(ctx, &matches)?;
                send_own_records(ctx, own, &indices)?;
                Ok(with_records(indices, records))
            }
            Some(toss) => {
                let w = toss.receive_opening(ctx.peer)?;
                malicious::receive(ctx, w, &keys, &values, (width, own))
            }
        }
    }

    fn save(&self, state: &VoleReceiver, out: &mut StateWriter) -> Result<()> {
        state.save(out)
    }

    fn load(&self, sizes: Sizes, input: &mut StateReader) -> Result<VoleReceiver> {
        VoleReceiver::load(input, Rr22Params::new(sizes, self.0)?.okvs.len())
    }
}
