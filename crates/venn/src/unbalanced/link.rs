//! `ub-cache` over a link: what a client and a dataset's server say to each other, in the
//! order they say it, independent of how the link is made (TCP, TLS, in memory).
//!
//! 1. The client opens with [`HELLO`]; the server answers with the dataset's
//!    [`Description`]: the published [`Descriptor`], how the dataset's keys were taken
//!    ([`KeyForm`], which the client's must match for equal keys to match), and which
//!    query modes it serves — `ub-cache` (its tags published) and `ub-fhe` (an
//!    [`FheOffer`] for each of its databases, one a query cap).
//! 2. Then any of, one at a time: a sync (`S`, the epoch and version the client holds, if
//!    any), answered with the versions' deltas (`D`) when the server still has them all for
//!    the client's epoch, else the whole tag set (`F`); an OPRF request (`O`, as
//!    [`super::oprf_round`] writes it), answered (`A`) or refused (`R`, a [`Refusal`]);
//!    a `ub-fhe` query (`Q` and the offer it takes), refused (`R`) or let go ahead (`G`),
//!    then the request as a large part ([`super::fhe::session`]) and its answer (`A`,
//!    then the answer as a large part) — a query needs an OPRF round answered in its
//!    session (each allows one for each of the smallest offer's caps its padded count
//!    holds) and costs the
//!    client's allowance [`FHE_QUERY_EVALUATIONS`], so the server's work is bounded by
//!    what it limits; the end (`E`).
//!
//! Large parts (a tag set, a delta) go as their length (u64) and then frames of at most
//! [`CHUNK`] bytes; the client bounds each length by what the description announced
//! ([`max_wire_len`]) and by what its user allows before it allocates anything. A session
//! answers from one published state throughout: an update published meanwhile is seen by
//! the next session.

use super::cache::{CacheClient, CacheServer, Descriptor, Lookup, MAX_QUERY};
#[cfg(feature = "bfv")]
use super::fhe::dataset::FheDataset;
#[cfg(feature = "bfv")]
use super::fhe::session::{set_named, FheQuery};
use super::label_table::{table_wire_len, LabelDelta, LabelTable};
use super::labels::MAX_LABEL;
use super::oprf_round::{padded_count, requested, Refusal};
use super::tag_set::{max_wire_len, tag_bits};
use crate::crypto::Prg;
use crate::net::{Channel, Reader, Writer};
use crate::session::run_plan::KeyForm;
use crate::{Error, Result};
#[cfg(feature = "bfv")]
use std::sync::Arc;

/// A client's first frame.
pub const HELLO: [u8; 8] = *b"venn-ub4";

/// How many opening bytes [`looks_like_hello`] needs: the frame's length and [`HELLO`].
pub const HELLO_PREFIX: usize = 4 + HELLO.len();

/// The most bytes of a large part in one frame.
pub const CHUNK: usize = 1 << 20;

/// The most deltas a sync answers with; a client further behind gets the whole set.
pub const MAX_DELTAS: usize = 64;

/// The most requests one session answers: a client with more opens another. Of them at
/// most two syncs: one, and one for the whole set where deltas did not apply.
pub const MAX_REQUESTS: usize = 1024;

/// The most label deltas a server keeps after its whole table: past them it writes the
/// table again.
pub const MAX_LABEL_DELTAS: usize = 1024;

/// The most bytes of a description's frame: its fixed fields, then the modes (at most
/// [`MAX_FHE_OFFERS`] `ub-fhe` offers, each a set's name of at most [`MAX_SET_NAME`]
/// bytes, a seed and a bundle count).
const MAX_DESCRIPTION_BYTES: usize =
    1 + 4 + 8 + 32 + 8 + 1 + 32 + 4 + 5 + 2 + 1 + 1 + MAX_FHE_OFFERS * (1 + MAX_SET_NAME + 16 + 4);

/// The most `ub-fhe` databases a dataset offers (one a query cap).
pub const MAX_FHE_OFFERS: usize = 4;

/// The most bytes of a `ub-fhe` set's name.
const MAX_SET_NAME: usize = 32;

/// The bytes of the head of a sync answer's label part: whole (`L`) or from the client's
/// table (`l`), the deltas' count (u32), the version they start from (u64).
const LABEL_HEAD: usize = 1 + 4 + 8;

/// The bytes of a refusal's frame, at most: kind, code, a number, a reason.
const MAX_REFUSAL_BYTES: usize = 1 + 1 + 8 + 2 + 1024;

/// Whether a connection's opening bytes can be a client's hello: what a server checks
/// before it takes a connection without TLS.
pub fn looks_like_hello(first: &[u8]) -> bool {
    first.len() >= HELLO_PREFIX
        && u32::from_le_bytes(first[..4].try_into().expect("4 bytes")) as usize == HELLO.len()
        && first[4..HELLO_PREFIX] == HELLO
}

/// What a server tells a client of its dataset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Description {
    /// The published tag set and key.
    pub cache: Descriptor,
    /// How the dataset's keys were taken from its rows.
    pub form: KeyForm,
    /// Whether its tags are published: it serves `ub-cache`.
    pub tags: bool,
    /// Its `ub-fhe` databases, one a query cap, the smallest cap first (none where it
    /// does not serve `ub-fhe`).
    pub fhe: Vec<FheOffer>,
}

/// What a server tells a client of one of its `ub-fhe` databases.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FheOffer {
    /// The parameter set's name: a client takes only one of Venn's checked sets.
    pub set: String,
    /// The seed choosing the items' locations.
    pub seed: [u8; 16],
    /// The most bundles an index holds: what bounds an answer.
    pub bundles: u32,
}

impl Description {
    /// Its frame.
    pub fn to_bytes(&self) -> Vec<u8> {
        let d = &self.cache;
        let w = Writer::new()
            .u8(b'D')
            .u32(d.epoch)
            .u64(d.version)
            .bytes(&d.public)
            .u64(d.len)
            .u8(d.tau)
            .bytes(&d.digest)
            .u32(d.max_query)
            .u8(self.form.trim as u8)
            .u8(self.form.lowercase as u8)
            .u16(self.form.columns)
            .u8(self.form.any as u8)
            .u8(d.labels.is_some() as u8)
            .u8(d.labels.unwrap_or(0))
            .u8(self.tags as u8);
        let w = w.u8(self.fhe.len() as u8);
        (self.fhe.iter())
            .fold(w, |w, offer| {
                (w.str8(&offer.set)).bytes(&offer.seed).u32(offer.bundles)
            })
            .0
    }

    /// Reads a description's frame: refused unless every field is in range.
    pub fn from_bytes(frame: &[u8]) -> Result<Description> {
        let mut r = Reader::new(frame, "a dataset's description");
        let flag = |b: u8| match b {
            0 | 1 => Ok(b == 1),
            _ => Err(Error::protocol(
                "a dataset's description",
                "a flag not 0 or 1",
            )),
        };
        if r.u8()? != b'D' {
            return Err(Error::protocol(
                "a dataset's description",
                "another message",
            ));
        }
        let mut cache = Descriptor {
            epoch: r.u32()?,
            version: r.u64()?,
            public: r.array()?,
            len: r.u64()?,
            tau: r.u8()?,
            digest: r.array()?,
            max_query: r.u32()?,
            labels: None,
        };
        let form = KeyForm {
            trim: flag(r.u8()?)?,
            lowercase: flag(r.u8()?)?,
            columns: r.u16()?,
            any: flag(r.u8()?)?,
        };
        let (labeled, label_len) = (flag(r.u8()?)?, r.u8()?);
        let tags = flag(r.u8()?)?;
        let offers = usize::from(r.u8()?);
        if offers > MAX_FHE_OFFERS {
            return Err(Error::protocol(
                format!("a dataset's description of at most {MAX_FHE_OFFERS} ub-fhe offers"),
                format!("{offers}"),
            ));
        }
        let fhe = (0..offers)
            .map(|_| {
                Ok(FheOffer {
                    set: r.str8()?,
                    seed: r.array()?,
                    bundles: r.u32()?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        r.finish()?;
        if fhe.iter().any(|o| o.set.len() > MAX_SET_NAME) || (!tags && fhe.is_empty()) {
            return Err(Error::protocol(
                "a dataset's description",
                "a set's name too long, or no query mode",
            ));
        }
        if usize::from(label_len) > MAX_LABEL || (!labeled && label_len != 0) {
            return Err(Error::protocol(
                "a dataset's description",
                format!("labels of {label_len} bytes"),
            ));
        }
        cache.labels = labeled.then_some(label_len);
        let narrow = cache.tau < tag_bits(cache.len, u64::from(cache.max_query));
        if !(1..=128).contains(&cache.tau)
            || narrow
            || !(1..=MAX_QUERY).contains(&cache.max_query)
            || form.columns == 0
        {
            return Err(Error::protocol(
                "a dataset's description",
                format!(
                    "{}-bit tags, queries of {} items, keys of {} columns",
                    cache.tau, cache.max_query, form.columns
                ),
            ));
        }
        Ok(Description {
            cache,
            form,
            tags,
            fhe,
        })
    }
}

/// A published state of a dataset, which sessions answer from: the server (key, tags),
/// the deltas of the versions before it and, where its items carry labels, their table.
pub struct Published {
    server: CacheServer,
    form: KeyForm,
    /// Consecutive deltas (wire forms), the last to the server's version, with the
    /// version each starts from.
    deltas: Vec<(u64, Vec<u8>)>,
    labels: Option<PublishedLabels>,
    /// Whether clients may download the tags (`ub-cache`).
    tags: bool,
    /// The `ub-fhe` databases, one a query cap, the smallest first (none where it does
    /// not serve `ub-fhe`).
    #[cfg(feature = "bfv")]
    fhe: Vec<Arc<FheDataset>>,
}

/// A labeled dataset's published labels: its label table whole at some version, and the
/// deltas from there to the current one — kept to at most half the table's bytes and
/// [`MAX_LABEL_DELTAS`], and the table to at most 2n + 16 entries (n the set's count),
/// by writing it again: what a client bounds its download by.
pub struct PublishedLabels {
    /// The version of the whole table.
    pub version: u64,
    /// The whole table's wire form.
    pub table: Vec<u8>,
    /// The label deltas (wire forms) from its version to the current one, in order.
    pub deltas: Vec<Vec<u8>>,
}

impl Published {
    /// The state of `server`, whose keys are taken as `form`, with the `deltas` (wire
    /// forms, consecutive, the last to the server's version) it keeps for clients behind
    /// and its `labels` (where its items carry them): refused unless the deltas chain
    /// so, and the labels are there exactly where the items carry them, of their widths,
    /// with deltas from their table's version to the server's.
    pub fn new(
        server: CacheServer,
        form: KeyForm,
        deltas: Vec<Vec<u8>>,
        labels: Option<PublishedLabels>,
    ) -> Result<Published> {
        let described = server.describe();
        check_labels(&described, labels.as_ref())?;
        let version = described.version;
        let mut chained = Vec::with_capacity(deltas.len());
        let mut next = version.checked_sub(deltas.len() as u64);
        for delta in deltas {
            let (from, to) = (delta_versions(&delta))?;
            if Some(from) != next || from.checked_add(1) != Some(to) {
                return Err(Error::State(format!(
                    "a kept delta from version {from} to {to} where {next:?} to the next was \
                     due"
                )));
            }
            next = Some(to);
            chained.push((from, delta));
        }
        Ok(Published {
            server,
            form,
            deltas: chained,
            labels,
            tags: true,
            #[cfg(feature = "bfv")]
            fhe: Vec::new(),
        })
    }

    /// This state serving `ub-fhe` too from `datasets` (the same items' databases under
    /// the same key, one a query cap), and `ub-cache` only if `tags`: refused unless
    /// there are 1 to [`MAX_FHE_OFFERS`] of them, their caps rising, each holding as many
    /// items as the set, with labels of the same room.
    #[cfg(feature = "bfv")]
    pub fn with_fhe(mut self, datasets: Vec<Arc<FheDataset>>, tags: bool) -> Result<Published> {
        let described = self.server.describe();
        let rising = datasets
            .windows(2)
            .all(|w| w[0].max_query() < w[1].max_query());
        if datasets.is_empty() || datasets.len() > MAX_FHE_OFFERS || !rising {
            return Err(Error::State(format!(
                "{} ub-fhe databases: 1 to {MAX_FHE_OFFERS}, their query caps rising",
                datasets.len()
            )));
        }
        for dataset in &datasets {
            if dataset.len() != described.len || dataset.label_len() != described.labels {
                return Err(Error::State(format!(
                    "a ub-fhe database of {} items (labels {:?}) for a set of {} (labels {:?})",
                    dataset.len(),
                    dataset.label_len(),
                    described.len,
                    described.labels
                )));
            }
        }
        self.fhe = datasets;
        self.tags = tags;
        Ok(self)
    }

    /// What it describes.
    pub fn description(&self) -> Description {
        #[cfg(feature = "bfv")]
        let fhe = (self.fhe.iter())
            .map(|d| FheOffer {
                set: d.set().name.to_owned(),
                seed: d.seed(),
                bundles: d.most_bundles(),
            })
            .collect();
        #[cfg(not(feature = "bfv"))]
        let fhe = Vec::new();
        let mut cache = self.server.describe();
        if !self.tags {
            // Served in ub-fhe only: its size and digest are not told (a client learns
            // only the size class the bundle count gives).
            (cache.len, cache.digest) = (0, [0; 32]);
        }
        Description {
            cache,
            form: self.form,
            tags: self.tags,
            fhe,
        }
    }

    /// How many `ub-fhe` queries an OPRF round of `count` elements allows: one for each
    /// of the smallest query cap it holds (none without `ub-fhe`).
    fn fhe_queries_for(&self, count: u32) -> u64 {
        #[cfg(feature = "bfv")]
        if let Some(dataset) = self.fhe.first() {
            return u64::from(count.div_ceil(dataset.max_query()));
        }
        let _ = count;
        0
    }

    /// The deltas from `version` of `epoch` to the current one, if all are kept.
    fn deltas_since(&self, epoch: u32, version: u64) -> Option<Vec<&[u8]>> {
        let now = self.server.describe();
        if epoch != now.epoch || version > now.version {
            return None;
        }
        let first = self.deltas.iter().position(|(from, _)| *from == version);
        let deltas: Vec<&[u8]> = match first {
            None if version == now.version => Vec::new(),
            None => return None,
            Some(i) => self.deltas[i..].iter().map(|(_, d)| &d[..]).collect(),
        };
        // Only where they take fewer bytes than the set: what a client bounds them by.
        let bytes: usize = deltas.iter().map(|d| d.len()).sum();
        let whole = self.server.tags().len();
        (deltas.len() <= MAX_DELTAS && bytes <= whole).then_some(deltas)
    }
}

/// Refuses `labels` unless they are there exactly where `described`'s items carry them,
/// their table of its widths, and their deltas chain from the table's version to its.
fn check_labels(described: &Descriptor, labels: Option<&PublishedLabels>) -> Result<()> {
    let Some(labels) = labels else {
        return match described.labels {
            None => Ok(()),
            Some(_) => Err(Error::State(
                "a labeled dataset published without its labels".into(),
            )),
        };
    };
    let head = labels.table.get(..2);
    if described.labels.is_none()
        || head != Some(&[described.tau, described.labels.unwrap_or(0)][..])
    {
        return Err(Error::State(
            "a label table of other widths than its dataset's, or of a dataset without labels"
                .into(),
        ));
    }
    let mut next = labels.version;
    for delta in &labels.deltas {
        let (from, to) = LabelDelta::versions(delta)?;
        if from != next || from.checked_add(1) != Some(to) {
            return Err(Error::State(format!(
                "a kept label delta from version {from} to {to} where {next} to the next was due"
            )));
        }
        next = to;
    }
    match next == described.version && labels.deltas.len() <= MAX_LABEL_DELTAS {
        true => Ok(()),
        false => Err(Error::State(format!(
            "label deltas to version {next} where the set's is {}, or more than {MAX_LABEL_DELTAS}",
            described.version
        ))),
    }
}

/// A delta's versions (its first 16 bytes).
fn delta_versions(delta: &[u8]) -> Result<(u64, u64)> {
    let mut r = Reader::new(delta, "a tag set's delta");
    Ok((r.u64()?, r.u64()?))
}

/// What a session served.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Served {
    /// Syncs answered.
    pub syncs: u64,
    /// OPRF requests answered.
    pub answered: u64,
    /// Elements evaluated, padding included.
    pub evaluated: u64,
    /// Requests refused.
    pub refused: u64,
    /// `ub-fhe` queries answered.
    pub fhe: u64,
}

/// Serves one client's session from `published` on `chan`: `admit` is asked for each
/// OPRF request's element count before anything is evaluated (the client's rate limit),
/// and may refuse it. Ends when the client says so or closes the link between requests;
/// a malformed message ends it with an error (the client is told why).
pub fn serve_session(
    chan: &mut dyn Channel,
    published: &Published,
    admit: &mut dyn FnMut(u32) -> std::result::Result<(), Refusal>,
    prg: &mut Prg,
) -> Result<Served> {
    let hello = chan.recv(HELLO.len())?;
    if hello != HELLO {
        let e = Error::protocol("an unbalanced-PSI client's hello", "another opening");
        chan.abort(&e.to_string());
        return Err(e);
    }
    let description = published.description();
    chan.send(&description.to_bytes())?;
    // Room for a request of the padded size above the cap, so that a client that did
    // not split its items is told so (a refusal) rather than cut off; a larger frame
    // ends the session.
    let over_cap = padded_count(description.cache.max_query.saturating_add(1)) as usize;
    let max_request = 1 + 8 + over_cap * 32;
    let mut served = Served::default();
    // The `ub-fhe` queries the OPRF rounds answered so far allow.
    let mut fhe_allowed = 0u64;
    for _ in 0..MAX_REQUESTS {
        // A client may also end by closing the link between requests.
        let request = match chan.recv(max_request) {
            Err(Error::PeerClosed(_)) => return Ok(served),
            request => request?,
        };
        match request.split_first() {
            Some((b'E', [])) => return Ok(served),
            // A sync, and a second for the whole set where deltas failed.
            Some((b'S', _)) if served.syncs >= 2 => {
                let e = Error::Usage("a third sync in one session".into());
                chan.abort(&e.to_string());
                return Err(e);
            }
            Some((b'S', _)) if !published.tags => {
                let e = Error::Usage("this dataset is served in ub-fhe only: no tags".into());
                chan.abort(&e.to_string());
                return Err(e);
            }
            Some((b'S', body)) => {
                send_sync(chan, published, body)?;
                served.syncs += 1;
            }
            Some((b'O', body)) => {
                let answer = requested(body, description.cache.max_query)
                    .and_then(|count| admit(count).map(|()| count))
                    .and_then(|count| Ok((count, published.server.oprf(body, prg)?)));
                match answer {
                    Ok((count, answer)) => {
                        chan.send(&[&[b'A'][..], &answer].concat())?;
                        served.answered += 1;
                        served.evaluated += u64::from(count);
                        fhe_allowed += published.fhe_queries_for(count);
                    }
                    Err(refusal) => {
                        chan.send(&refusal_frame(&refusal))?;
                        served.refused += 1;
                    }
                }
            }
            Some((b'Q', &[offer])) => {
                let offer = usize::from(offer);
                serve_fhe(chan, published, offer, admit, &mut fhe_allowed, &mut served)?
            }
            _ => {
                let e = Error::protocol("an unbalanced-PSI request", "another message");
                chan.abort(&e.to_string());
                return Err(e);
            }
        }
    }
    let e = Error::Usage(format!("more than {MAX_REQUESTS} requests in one session"));
    chan.abort(&e.to_string());
    Err(e)
}

/// Which of a dataset's `ub-fhe` `offers` a query of `items` keys takes, and its set's
/// cap: the first (the smallest cap) that holds them all, else the last, in queries of
/// its cap. Refused where the dataset serves no `ub-fhe` or names a set not Venn's.
#[cfg(feature = "bfv")]
pub fn fhe_offer_for(offers: &[FheOffer], items: usize) -> Result<(usize, usize)> {
    if offers.is_empty() {
        return Err(Error::Usage(
            "the dataset is not served in ub-fhe (query in ub-cache)".into(),
        ));
    }
    let caps = (offers.iter())
        .map(|o| Ok(set_named(&o.set)?.max_query as usize))
        .collect::<Result<Vec<_>>>()?;
    let number = (caps.iter().position(|&cap| cap >= items)).unwrap_or(caps.len() - 1);
    Ok((number, caps[number]))
}

/// What a `ub-fhe` query costs a client's allowance, in OPRF evaluations, whatever its
/// keys: the server's work does not shrink with them.
pub const FHE_QUERY_EVALUATIONS: u32 = 4096;

/// Answers a `ub-fhe` query of the dataset's database `offer`, if it serves one so
/// numbered, an OPRF round in the session allowed a query (`allowed` more) and `admit`
/// takes [`FHE_QUERY_EVALUATIONS`] from the client's allowance: the client is told to
/// go on (`G`) and sends its request as a large part; else refused (`R`) before it sends
/// anything. A request that does not read ends the session.
fn serve_fhe(
    chan: &mut dyn Channel,
    published: &Published,
    offer: usize,
    admit: &mut dyn FnMut(u32) -> std::result::Result<(), Refusal>,
    allowed: &mut u64,
    served: &mut Served,
) -> Result<()> {
    #[cfg(feature = "bfv")]
    if let Some(dataset) = published.fhe.get(offer) {
        let granted = match *allowed {
            0 => Err(Refusal::Malformed(
                "a ub-fhe query needs an OPRF round in its session first".into(),
            )),
            _ => admit(FHE_QUERY_EVALUATIONS),
        };
        if let Err(refusal) = granted {
            served.refused += 1;
            return chan.send(&refusal_frame(&refusal));
        }
        *allowed -= 1;
        chan.send(b"G")?;
        let request = recv_part(chan, dataset.max_request()?, "a ub-fhe query")?;
        let answer = (dataset.answer(&request)).inspect_err(|e| chan.abort(&e.to_string()))?;
        chan.send(b"A")?;
        send_part(chan, &answer)?;
        served.fhe += 1;
        return Ok(());
    }
    let _ = (published, admit, allowed, served);
    let e = Error::protocol(
        "an unbalanced-PSI request",
        format!("a ub-fhe query of database {offer}, not served here"),
    );
    chan.abort(&e.to_string());
    Err(e)
}

/// Answers a sync request's `body` (whether the client holds a set, its epoch and
/// version): the deltas since, or the whole set.
fn send_sync(chan: &mut dyn Channel, published: &Published, body: &[u8]) -> Result<()> {
    let mut r = Reader::new(body, "a sync request");
    let (holds, epoch, version) = (r.u8()?, r.u32()?, r.u64()?);
    r.finish()?;
    let deltas = match holds {
        0 => None,
        1 => published.deltas_since(epoch, version),
        _ => return Err(Error::protocol("a sync request", "a flag not 0 or 1")),
    };
    match deltas {
        Some(deltas) => {
            chan.send(&Writer::new().u8(b'D').u32(deltas.len() as u32).0)?;
            deltas.into_iter().try_for_each(|d| send_part(chan, d))?;
        }
        _ => {
            chan.send(b"F")?;
            send_part(chan, published.server.tags())?;
        }
    }
    let Some(labels) = &published.labels else {
        return Ok(());
    };
    // From the client's table where it is of this epoch and no older than the whole
    // table's version (the deltas since are all kept), else the whole table.
    let now = published.server.describe();
    let from_held =
        holds == 1 && epoch == now.epoch && (labels.version..=now.version).contains(&version);
    let (kind, from) = match from_held {
        true => (b'l', version),
        false => (b'L', labels.version),
    };
    let deltas = &labels.deltas[(from - labels.version) as usize..];
    chan.send(&Writer::new().u8(kind).u32(deltas.len() as u32).u64(from).0)?;
    if kind == b'L' {
        send_part(chan, &labels.table)?;
    }
    deltas.iter().try_for_each(|d| send_part(chan, d))
}

/// A large part: its length, then its bytes in frames of exactly [`CHUNK`] (the last
/// one shorter), as [`recv_part`] reads them.
fn send_part(chan: &mut dyn Channel, part: &[u8]) -> Result<()> {
    chan.send(&(part.len() as u64).to_le_bytes())?;
    part.chunks(CHUNK).try_for_each(|frame| chan.send(frame))
}

/// Receives a large part of at most `max` bytes (`what` it is, for errors).
fn recv_part(chan: &mut dyn Channel, max: u64, what: &str) -> Result<Vec<u8>> {
    let len = u64::from_le_bytes(
        (chan.recv(8)?.try_into()).map_err(|_| Error::protocol(what, "no length"))?,
    );
    if len > max {
        return Err(Error::protocol(
            format!("{what} of at most {max} bytes"),
            format!("{len} bytes"),
        ));
    }
    let (mut part, mut chunk) = (Vec::new(), Vec::new());
    part.try_reserve_exact(len as usize)
        .map_err(|_| Error::Memory(format!("no room for {what} of {len} bytes")))?;
    while (part.len() as u64) < len {
        let want = (len - part.len() as u64).min(CHUNK as u64) as usize;
        chan.recv_exact_into(&mut chunk, want, what)?;
        part.extend_from_slice(&chunk);
    }
    Ok(part)
}

/// A refusal's frame: `R`, its code, its number, its reason.
fn refusal_frame(refusal: &Refusal) -> Vec<u8> {
    let (code, number, reason) = match refusal {
        Refusal::EpochChanged { current } => (1, u64::from(*current), ""),
        Refusal::TooManyItems { max } => (2, u64::from(*max), ""),
        Refusal::RateLimited { retry_after } => (3, *retry_after, ""),
        Refusal::Malformed(why) => (4, 0, why.as_str()),
    };
    let reason: String = reason.chars().take(256).collect();
    (Writer::new().u8(b'R').u8(code).u64(number).str16(&reason)).0
}

/// Reads a refusal's frame.
fn read_refusal(frame: &[u8]) -> Result<Refusal> {
    let mut r = Reader::new(frame, "a refusal");
    let (_, code, number, reason) = (r.u8()?, r.u8()?, r.u64()?, r.str16()?);
    r.finish()?;
    let small = || u32::try_from(number).map_err(|_| Error::protocol("a refusal", "a number"));
    Ok(match code {
        1 => Refusal::EpochChanged { current: small()? },
        2 => Refusal::TooManyItems { max: small()? },
        3 => Refusal::RateLimited {
            retry_after: number,
        },
        4 => Refusal::Malformed(reason),
        _ => return Err(Error::protocol("a refusal", format!("the code {code}"))),
    })
}

/// The label part of a sync's answer, as read.
struct LabelPart {
    /// The whole table (of version `from`), or none: the client's is meant.
    whole: Option<Vec<u8>>,
    /// The version the deltas start from.
    from: u64,
    /// The label deltas, in order.
    deltas: Vec<Vec<u8>>,
    /// The most entries the table may hold.
    max_count: u64,
}

impl LabelPart {
    /// The label table at the version `now` describes: the whole one received or the
    /// client's (`held`, of version `from`), with the deltas applied.
    fn table(self, held: Option<&CacheClient>, now: &Descriptor) -> Result<LabelTable> {
        let whole;
        let base = match (self.whole, held.and_then(|h| h.labels().map(|l| (h, l)))) {
            (Some(table), _) => {
                whole = LabelTable::from_bytes(table, self.max_count)?;
                &whole
            }
            (None, Some((held, table))) if held.descriptor().version == self.from => table,
            _ => {
                return Err(Error::protocol(
                    "label deltas from the client's table",
                    format!("deltas from version {}", self.from),
                ))
            }
        };
        base.after(self.from, &self.deltas, now.version)
    }
}

/// The tag part of a sync's answer.
enum TagPart {
    /// The whole set's wire form.
    Whole(Vec<u8>),
    /// The deltas from the client's version, in order.
    Deltas(Vec<Vec<u8>>),
}

/// A client's session with a dataset's server.
pub struct Session<'a> {
    chan: &'a mut dyn Channel,
    description: Description,
}

impl<'a> Session<'a> {
    /// Opens a session on `chan`: the hello, then the server's description.
    pub fn open(chan: &'a mut dyn Channel) -> Result<Session<'a>> {
        chan.send(&HELLO)?;
        let description = Description::from_bytes(&chan.recv(MAX_DESCRIPTION_BYTES)?)?;
        Ok(Session { chan, description })
    }

    /// What the server described.
    pub fn description(&self) -> &Description {
        &self.description
    }

    /// The dataset's tag set as published now, from `held` (what the client kept, if
    /// anything) and what the server sends: nothing when `held` is current, else its
    /// deltas or the whole set, each checked against the description. A set of more than
    /// `max_tags` tags is refused before it is downloaded.
    pub fn sync(&mut self, held: Option<CacheClient>, max_tags: u64) -> Result<CacheClient> {
        if !self.description.tags {
            return Err(Error::Usage(
                "the dataset is served in ub-fhe only: its tags are not published (query in \
                 ub-fhe)"
                    .into(),
            ));
        }
        let now = self.description.cache.clone();
        if now.len > max_tags {
            return Err(Error::Memory(format!(
                "the dataset holds {} items, more than the {max_tags} this client takes (raise --max-tags)",
                now.len
            )));
        }
        let held = match held {
            Some(held) if *held.descriptor() == now => return Ok(held),
            // Deltas only to a set of this key: one of another dataset (or another
            // epoch's) is replaced whole.
            held => held.filter(|h| h.descriptor().public == now.public),
        };
        let asked_from = held.is_some();
        let (tags, labels) = self.receive(held.as_ref())?;
        // Every part is read: a failure from here on can fall back to the whole set.
        let labels = labels
            .map(|part| part.table(held.as_ref(), &now))
            .transpose();
        let synced = match (tags, held, labels) {
            (_, _, Err(e)) => Err(e),
            (TagPart::Deltas(deltas), Some(mut held), Ok(labels)) => {
                held.apply(now, &deltas, labels).map(|()| held)
            }
            (TagPart::Whole(tags), _, Ok(labels)) => CacheClient::new(now, &tags, labels),
            (TagPart::Deltas(_), None, _) => unreachable!("deltas are read only to a set held"),
        };
        match synced {
            // Deltas that do not give the published set: the whole set instead (a client
            // is never left holding a set it cannot bring up to date).
            Err(_) if asked_from => self.download(),
            synced => synced,
        }
    }

    /// Asks for the set from `held`'s version (or whole, without one); returns the
    /// answer's head.
    fn ask_sync(&mut self, held: Option<&CacheClient>) -> Result<Vec<u8>> {
        let (holds, epoch, version) = match held {
            Some(h) => (1, h.descriptor().epoch, h.descriptor().version),
            None => (0, 0, 0),
        };
        let request = Writer::new().u8(b'S').u8(holds).u32(epoch).u64(version).0;
        self.chan.send(&request)?;
        self.chan.recv(5)
    }

    /// The answer to a sync from `held`'s version (or whole, without one), read: the tag
    /// set whole or the deltas to it, and the label part where the dataset's items carry
    /// labels.
    fn receive(&mut self, held: Option<&CacheClient>) -> Result<(TagPart, Option<LabelPart>)> {
        let head = self.ask_sync(held)?;
        let now = self.description.cache.clone();
        let max_set = max_wire_len(now.len, now.tau);
        let tags = match (head.split_first(), held) {
            (Some((b'F', [])), _) => TagPart::Whole(recv_part(self.chan, max_set, "a tag set")?),
            (Some((b'D', count)), Some(held)) => {
                let count = u32::from_le_bytes(
                    (count.try_into()).map_err(|_| Error::protocol("a delta count", "no count"))?,
                ) as usize;
                let from = held.descriptor().version;
                if count > MAX_DELTAS || now.version.checked_sub(from) != Some(count as u64) {
                    return Err(Error::protocol(
                        format!("the deltas from version {from} to {}", now.version),
                        format!("{count} deltas"),
                    ));
                }
                // A server sends deltas only where they take fewer bytes than the set.
                TagPart::Deltas(self.receive_parts(count, max_set, "a tag set's deltas")?)
            }
            _ => {
                return Err(Error::protocol(
                    "a tag set or its deltas",
                    "another message",
                ))
            }
        };
        let labels = match now.labels {
            Some(len) => Some(self.receive_labels(&now, len)?),
            None => None,
        };
        Ok((tags, labels))
    }

    /// `count` large parts of at most `max` bytes together.
    fn receive_parts(&mut self, count: usize, max: u64, what: &str) -> Result<Vec<Vec<u8>>> {
        let mut left = max;
        let mut parts = Vec::with_capacity(count);
        for _ in 0..count {
            let part = recv_part(self.chan, left, what)?;
            left -= part.len() as u64;
            parts.push(part);
        }
        Ok(parts)
    }

    /// The label part of a sync's answer (after its tags), read: a whole table of some
    /// version or none (the client's is meant), and the deltas from it. A server keeps a
    /// table of at most 2n + 16 entries (n the set's count) and deltas after it of at most
    /// half its bytes: what bounds what is read.
    fn receive_labels(&mut self, now: &Descriptor, len: u8) -> Result<LabelPart> {
        let head = self.chan.recv(LABEL_HEAD)?;
        let mut r = Reader::new(&head, "the labels' part of a sync");
        let (kind, count, from) = (r.u8()?, r.u32()? as usize, r.u64()?);
        r.finish()?;
        let max_count = now.len.saturating_mul(2).saturating_add(16);
        let mut max = table_wire_len(max_count, now.tau, len).saturating_mul(2);
        if !matches!(kind, b'L' | b'l') || count > MAX_LABEL_DELTAS {
            return Err(Error::protocol(
                format!("a label table or at most {MAX_LABEL_DELTAS} deltas to the client's"),
                format!("the kind {kind}, {count} deltas"),
            ));
        }
        let whole = match kind {
            b'L' => {
                let table = recv_part(self.chan, max, "a label table")?;
                max -= table.len() as u64;
                Some(table)
            }
            _ => None,
        };
        let deltas = self.receive_parts(count, max, "label deltas")?;
        Ok(LabelPart {
            whole,
            from,
            deltas,
            max_count,
        })
    }

    /// The whole set (and label table), asked for anew.
    fn download(&mut self) -> Result<CacheClient> {
        let now = self.description.cache.clone();
        match self.receive(None)? {
            (TagPart::Whole(tags), labels) => {
                let labels = labels.map(|part| part.table(None, &now)).transpose()?;
                CacheClient::new(now, &tags, labels)
            }
            (TagPart::Deltas(_), _) => unreachable!("deltas are read only to a set held"),
        }
    }

    /// Which of `items` the dataset holds, each with its label (empty where the
    /// dataset's items carry none), by `client`'s tag set (synced in this session): one
    /// OPRF round per [`Descriptor::max_query`] items. A refusal (rate limit, a key
    /// changed meanwhile) is an error saying what to do.
    pub fn query(
        &mut self,
        client: &CacheClient,
        items: &[&[u8]],
        prg: &mut Prg,
    ) -> Result<Vec<Option<Vec<u8>>>> {
        let mut found = Vec::with_capacity(items.len());
        for part in items.chunks(client.descriptor().max_query as usize) {
            found.extend(client.matches(&self.evaluate(client.descriptor(), part, prg)?)?);
        }
        Ok(found)
    }

    /// The OPRF values of `items` (at most a query's cap) under the key `descriptor`
    /// published, in one round, each proven: a refusal is an error saying what to do.
    fn evaluate(
        &mut self,
        descriptor: &Descriptor,
        items: &[&[u8]],
        prg: &mut Prg,
    ) -> Result<Vec<[u8; 64]>> {
        let lookup = Lookup::new(descriptor, items, prg)?;
        let request = [&[b'O'][..], &lookup.request()].concat();
        self.chan.send(&request)?;
        let max = (request.len() + 64).max(MAX_REFUSAL_BYTES);
        let answer = self.chan.recv(max)?;
        match answer.split_first() {
            Some((b'A', response)) => lookup.outputs(descriptor, response),
            Some((b'R', _)) => Err(read_refusal(&answer)?.into()),
            _ => Err(Error::protocol("an OPRF answer", "another message")),
        }
    }

    /// Which of `items` the dataset holds, each with its label (empty where its items
    /// carry none), in `ub-fhe`: per OPRF round of at most the dataset's query cap,
    /// `ub-fhe` queries of the database [`fhe_offer_for`] takes, whose answers the client
    /// reads alone — it keeps nothing of the dataset between sessions. A refusal is an
    /// error saying what to do.
    #[cfg(feature = "bfv")]
    pub fn query_fhe(&mut self, items: &[&[u8]], prg: &mut Prg) -> Result<Vec<Option<Vec<u8>>>> {
        let offers = self.description.fhe.clone();
        let now = self.description.cache.clone();
        let mut found = Vec::with_capacity(items.len());
        for part in items.chunks(now.max_query as usize) {
            let (number, cap) = fhe_offer_for(&offers, part.len())?;
            let offer = &offers[number];
            let outputs = self.evaluate(&now, part, prg)?;
            for outputs in outputs.chunks(cap) {
                let described = (offer.set.as_str(), offer.seed, offer.bundles);
                let (query, request) = FheQuery::new(described, now.labels, outputs, prg)?;
                self.chan.send(&[b'Q', number as u8])?;
                let go = self.chan.recv(MAX_REFUSAL_BYTES)?;
                match go.split_first() {
                    Some((b'G', [])) => {}
                    Some((b'R', _)) => return Err(read_refusal(&go)?.into()),
                    _ => return Err(Error::protocol("a ub-fhe go-ahead", "another message")),
                }
                send_part(self.chan, &request)?;
                if self.chan.recv(1)? != b"A" {
                    return Err(Error::protocol("a ub-fhe answer", "another message"));
                }
                let answer = recv_part(self.chan, query.max_answer()?, "a ub-fhe answer")?;
                found.extend(query.finish(&answer)?);
            }
        }
        Ok(found)
    }

    /// Ends the session.
    pub fn close(self) -> Result<()> {
        self.chan.send(b"E")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::oprf::{Mode, ServerKey};
    use crate::crypto::Block;
    use crate::net::{mem_pair, tcp_channel};
    use std::time::Duration;

    const FORM: KeyForm = KeyForm {
        trim: true,
        lowercase: false,
        columns: 1,
        any: false,
    };

    fn names(range: std::ops::Range<u32>) -> Vec<Vec<u8>> {
        range.map(|i| format!("item {i}").into_bytes()).collect()
    }

    fn refs(items: &[Vec<u8>]) -> Vec<&[u8]> {
        items.iter().map(Vec::as_slice).collect()
    }

    /// Which lookups matched.
    fn hits(found: &[Option<Vec<u8>>]) -> Vec<bool> {
        found.iter().map(Option::is_some).collect()
    }

    /// Two ends of a loopback TCP connection.
    fn tcp_pair() -> (Box<dyn Channel>, Box<dyn Channel>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let client = std::thread::spawn(move || std::net::TcpStream::connect(addr).unwrap());
        let (server, _) = listener.accept().unwrap();
        let timeout = Duration::from_secs(20);
        let client = tcp_channel(client.join().unwrap(), timeout).unwrap();
        (
            Box::new(client),
            Box::new(tcp_channel(server, timeout).unwrap()),
        )
    }

    /// Runs one session: `published` served on one end of a TCP link, `client` on the
    /// other; returns the client's result and what the server served.
    fn session<T: Send>(
        published: &Published,
        admit: &mut (dyn FnMut(u32) -> std::result::Result<(), Refusal> + Send),
        client: impl FnOnce(&mut dyn Channel) -> T + Send,
    ) -> (T, Result<Served>) {
        let (mut c, mut s) = tcp_pair();
        std::thread::scope(|scope| {
            let server = scope.spawn(move || {
                let mut prg = Prg::from_seed(Block::from(9));
                serve_session(&mut *s, published, admit, &mut prg)
            });
            let got = client(&mut *c);
            drop(c);
            (got, server.join().unwrap())
        })
    }

    fn server(items: &[Vec<u8>], max_query: u32) -> CacheServer {
        let key = ServerKey::random(Mode::Voprf, &mut Prg::from_seed(Block::from(1)));
        CacheServer::new(key, 0, &refs(items), 1 << 16, max_query).unwrap()
    }

    /// Over TCP: a new client downloads the whole set and its answers are membership
    /// (more items than a query holds take several rounds); after two updates a client
    /// behind gets the two deltas, a current one sends no sync at all, and after a key
    /// rotation the whole new set.
    #[test]
    fn clients_sync_and_query_over_tcp() {
        let held = names(0..3000);
        let mut cache = server(&held, 256);
        let probes = names(2900..3300);
        let expected =
            |members: &dyn Fn(u32) -> bool| -> Vec<bool> { (2900..3300).map(members).collect() };
        let mut ok = |_: u32| Ok(());
        let published = Published::new(cache.clone(), FORM, vec![], None).unwrap();
        let ((client, found), served) = session(&published, &mut ok, |chan| {
            let mut s = Session::open(chan).unwrap();
            assert_eq!(s.description().form, FORM);
            let client = s.sync(None, 1 << 20).unwrap();
            let found = s.query(&client, &refs(&probes), &mut Prg::from_seed(Block::from(2)));
            s.close().unwrap();
            (client, found.unwrap())
        });
        assert_eq!(hits(&found), expected(&|i| i < 3000));
        let served = served.unwrap();
        assert_eq!((served.syncs, served.answered), (1, 2));
        assert_eq!(served.evaluated, 256 * 2, "400 items padded as 256 + 256");

        let (adds, removes) = (names(3000..3100), names(0..2950));
        let mut deltas = vec![cache.update(&refs(&adds), &[], None).unwrap().0.to_bytes()];
        deltas.push(
            cache
                .update(&[], &refs(&removes), None)
                .unwrap()
                .0
                .to_bytes(),
        );
        let published = Published::new(cache.clone(), FORM, deltas, None).unwrap();
        let (client, served) = session(&published, &mut ok, |chan| {
            let mut s = Session::open(chan).unwrap();
            let client = s.sync(Some(client), 1 << 20).unwrap();
            let found = s.query(&client, &refs(&probes), &mut Prg::from_seed(Block::from(3)));
            assert_eq!(
                hits(&found.unwrap()),
                expected(&|i| (2950..3100).contains(&i))
            );
            s.close().unwrap();
            client
        });
        assert_eq!(served.unwrap().syncs, 1);
        assert_eq!(client.descriptor(), &cache.describe());
        let (client, served) = session(&published, &mut ok, |chan| {
            let mut s = Session::open(chan).unwrap();
            let client = s.sync(Some(client), 1 << 20).unwrap();
            s.close().unwrap();
            client
        });
        assert_eq!(served.unwrap().syncs, 0, "a current client asks nothing");

        let key = ServerKey::random(Mode::Voprf, &mut Prg::from_seed(Block::from(4)));
        cache
            .rotate(key, &refs(&names(0..10)), Duration::ZERO)
            .unwrap();
        let published = Published::new(cache.clone(), FORM, vec![], None).unwrap();
        let (found, _) = session(&published, &mut ok, |chan| {
            let mut s = Session::open(chan).unwrap();
            let client = s.sync(Some(client), 1 << 20).unwrap();
            let items = names(5..15);
            s.query(&client, &refs(&items), &mut Prg::from_seed(Block::from(5)))
        });
        assert_eq!(
            hits(&found.unwrap()),
            (5..15).map(|i| i < 10).collect::<Vec<_>>()
        );
    }

    /// Deltas go only where they take fewer bytes than the set, so a client bounds them
    /// by the set: a one-key set whose key was replaced, and a set that grew and shrank
    /// back, reach a client behind as the whole set, and its copy is the server's.
    #[test]
    fn deltas_larger_than_the_set_give_way_to_it() {
        let mut cache = server(&names(0..1), 16);
        let mut ok = |_: u32| Ok(());
        let published = Published::new(cache.clone(), FORM, vec![], None).unwrap();
        let (client, _) = session(&published, &mut ok, |chan| {
            let mut s = Session::open(chan).unwrap();
            s.sync(None, 1 << 20).unwrap()
        });
        let mut deltas = vec![cache.update(&refs(&names(1..2)), &refs(&names(0..1)), None)];
        deltas.push(cache.update(&refs(&names(2..2002)), &[], None));
        deltas.push(cache.update(&[], &refs(&names(2..2002)), None));
        let deltas = deltas
            .into_iter()
            .map(|d| d.unwrap().0.to_bytes())
            .collect();
        let published = Published::new(cache.clone(), FORM, deltas, None).unwrap();
        let (found, served) = session(&published, &mut ok, |chan| {
            let mut s = Session::open(chan).unwrap();
            let client = s.sync(Some(client), 1 << 20).unwrap();
            assert_eq!(client.descriptor(), &cache.describe());
            let items = names(0..3);
            s.query(&client, &refs(&items), &mut Prg::from_seed(Block::from(8)))
        });
        assert_eq!(hits(&found.unwrap()), [false, true, false]);
        assert_eq!(served.unwrap().syncs, 1);
        // A description whose tags are too narrow for its false-positive bound.
        let mut narrow = published.description();
        narrow.cache.tau = 20;
        assert!(Description::from_bytes(&narrow.to_bytes()).is_err());
    }

    /// The server's refusals reach the client as errors saying what to do, and cost the
    /// server nothing: over its rate limit, a query above the cap (a client that does not
    /// split its items), a request of another epoch.
    #[test]
    fn refusals_reach_the_client() {
        let cache = server(&names(0..100), 16);
        let published = Published::new(cache.clone(), FORM, vec![], None).unwrap();
        let mut limited = |_: u32| Err(Refusal::RateLimited { retry_after: 42 });
        let (error, served) = session(&published, &mut limited, |chan| {
            let mut s = Session::open(chan).unwrap();
            let client = s.sync(None, 1 << 20).unwrap();
            let items = names(0..3);
            s.query(&client, &refs(&items), &mut Prg::from_seed(Block::from(6)))
                .unwrap_err()
        });
        assert!(error.to_string().contains("retry in 42 s"), "{error}");
        let served = served.unwrap();
        assert_eq!((served.refused, served.evaluated), (1, 0));

        let mut ok = |_: u32| Ok(());
        let (errors, _) = session(&published, &mut ok, |chan| {
            let mut s = Session::open(chan).unwrap();
            let client = s.sync(None, 1 << 20).unwrap();
            let mut prg = Prg::from_seed(Block::from(7));
            let items = names(0..200);
            let lookup = CacheClient::new(
                Descriptor {
                    max_query: 256,
                    ..client.descriptor().clone()
                },
                client.tags(),
                None,
            )
            .unwrap()
            .lookup(&refs(&items), &mut prg)
            .unwrap();
            let mut refusals = Vec::new();
            for request in [lookup.request(), {
                let mut stale = client
                    .lookup(&refs(&items[..3]), &mut prg)
                    .unwrap()
                    .request();
                stale[0] ^= 1;
                stale
            }] {
                s.chan.send(&[&[b'O'][..], &request].concat()).unwrap();
                let answer = s.chan.recv(MAX_REFUSAL_BYTES).unwrap();
                refusals.push(read_refusal(&answer).unwrap());
            }
            refusals
        });
        assert_eq!(
            errors,
            [
                Refusal::TooManyItems { max: 16 },
                Refusal::EpochChanged { current: 0 }
            ]
        );
    }

    /// A server that lies is caught before its lie costs the client: a set larger than
    /// the client takes is refused before the download, a length above what the
    /// description allows before any allocation, a set unlike the one described by its
    /// digest; a description out of range does not read.
    #[test]
    fn a_lying_server_is_caught() {
        let cache = server(&names(0..500), 16);
        let published = Published::new(cache.clone(), FORM, vec![], None).unwrap();
        let description = published.description();
        // Too large for the client: refused without a request.
        let (error, served) = session(&published, &mut |_| Ok(()), |chan| {
            let mut s = Session::open(chan).unwrap();
            let error = s.sync(None, 499).err().unwrap();
            s.close().unwrap();
            error
        });
        assert!(matches!(error, Error::Memory(_)), "{error}");
        assert_eq!(served.unwrap().syncs, 0);
        // A fake server: its description, then answers the sync as told.
        let fake = |answer: Vec<Vec<u8>>| {
            let (c, s) = mem_pair(Duration::from_secs(5));
            let (mut c, mut s): (Box<dyn Channel>, Box<dyn Channel>) = (Box::new(c), Box::new(s));
            let description = description.to_bytes();
            std::thread::scope(|scope| {
                scope.spawn(move || {
                    let _ = s.recv(64);
                    s.send(&description).unwrap();
                    let _ = s.recv(64);
                    for frame in answer {
                        if s.send(&frame).is_err() {
                            break;
                        }
                    }
                });
                let mut session = Session::open(&mut *c).unwrap();
                session.sync(None, 1 << 20).err().unwrap()
            })
        };
        let huge = fake(vec![b"F".to_vec(), u64::MAX.to_le_bytes().to_vec()]);
        assert!(huge.to_string().contains("bytes"), "{huge}");
        let other = server(&names(1..501), 16).tags().to_vec();
        let len = (other.len() as u64).to_le_bytes().to_vec();
        let swapped = fake(vec![b"F".to_vec(), len, other]);
        assert!(swapped.to_string().contains("digest"), "{swapped}");
        let mut bad = description.to_bytes();
        let tau_at = 1 + 4 + 8 + 32 + 8;
        bad[tau_at] = 0;
        assert!(Description::from_bytes(&bad).is_err());
        assert!(Description::from_bytes(&bad[..bad.len() - 1]).is_err());
    }

    /// A client that does not open with the hello, or sends what is not a request, ends
    /// its session with an error; the hello's opening is recognised on its own.
    #[test]
    fn a_malformed_client_ends_its_session() {
        let cache = server(&names(0..10), 16);
        let published = Published::new(cache.clone(), FORM, vec![], None).unwrap();
        let (_, served) = session(&published, &mut |_| Ok(()), |chan| {
            chan.send(b"venn-ub0").unwrap();
        });
        assert!(served.is_err());
        let (_, served) = session(&published, &mut |_| Ok(()), |chan| {
            let s = Session::open(chan).unwrap();
            s.chan.send(b"X").unwrap();
        });
        assert!(served.is_err());
        let mut opening = (HELLO.len() as u32).to_le_bytes().to_vec();
        opening.extend_from_slice(&HELLO);
        assert!(looks_like_hello(&opening));
        opening[5] ^= 1;
        assert!(!looks_like_hello(&opening));
    }

    /// A labeled dataset's clients get each member's label: whole at first, then by
    /// label deltas from their table, and whole again where their version is older than
    /// the server's table; a label table of other widths is refused when published.
    #[test]
    fn labels_reach_clients_by_table_and_deltas() {
        use super::super::cache::UpdateLabels;
        let key = ServerKey::random(Mode::Voprf, &mut Prg::from_seed(Block::from(1)));
        let held = names(0..500);
        let labels: Vec<Vec<u8>> = (0..500u32).map(|i| i.to_le_bytes().to_vec()).collect();
        let (mut cache, table) =
            CacheServer::labeled(key, 0, &refs(&held), &refs(&labels), 4, 1 << 16, 16).unwrap();
        let probe = |published: &Published,
                     client: Option<CacheClient>,
                     want: &[(u32, Option<u32>)]| {
            let mut ok = |_: u32| Ok(());
            let (client, served) = session(published, &mut ok, |chan| {
                let mut s = Session::open(chan).unwrap();
                let client = s.sync(client, 1 << 20).unwrap();
                let items: Vec<Vec<u8>> = want
                    .iter()
                    .map(|(i, _)| names(*i..*i + 1).remove(0))
                    .collect();
                let found = s.query(&client, &refs(&items), &mut Prg::from_seed(Block::from(3)));
                let expected: Vec<Option<Vec<u8>>> = want
                    .iter()
                    .map(|(_, l)| l.map(|l| l.to_le_bytes().to_vec()))
                    .collect();
                assert_eq!(found.unwrap(), expected);
                client
            });
            assert!(served.is_ok());
            client
        };
        let labels_of = |version, table: &LabelTable, deltas: &[Vec<u8>]| PublishedLabels {
            version,
            table: table.wire().to_vec(),
            deltas: deltas.to_vec(),
        };
        let published =
            Published::new(cache.clone(), FORM, vec![], Some(labels_of(0, &table, &[]))).unwrap();
        let client = probe(&published, None, &[(3, Some(3)), (600, None)]);
        let behind = probe(&published, None, &[(4, Some(4))]);

        // Version 1: 600 in, 3 relabelled 7, 4 out; version 2: 601 in.
        let (mut tag_deltas, mut label_deltas) = (Vec::new(), Vec::new());
        for (insert, relabel, delete) in [(600u32, Some(3u32), Some(4u32)), (601, None, None)] {
            let label = insert.to_le_bytes();
            let seven = 7u32.to_le_bytes();
            let item = names(insert..insert + 1);
            let relabelled = relabel.map(|i| names(i..i + 1)).unwrap_or_default();
            let deleted = delete.map(|i| names(i..i + 1)).unwrap_or_default();
            let relabels: Vec<(&[u8], &[u8])> =
                relabelled.iter().map(|i| (&i[..], &seven[..])).collect();
            let update = UpdateLabels {
                inserts: &[&label],
                relabels: &relabels,
            };
            let (delta, labels) = cache
                .update(&refs(&item), &refs(&deleted), Some(update))
                .unwrap();
            tag_deltas.push(delta.to_bytes());
            label_deltas.push(labels.unwrap().to_bytes());
        }
        let published = Published::new(
            cache.clone(),
            FORM,
            tag_deltas.clone(),
            Some(labels_of(0, &table, &label_deltas)),
        )
        .unwrap();
        let want = [
            (3, Some(7)),
            (4, None),
            (600, Some(600)),
            (601, Some(601)),
            (5, Some(5)),
        ];
        let client = probe(&published, Some(client), &want);
        // The table written again at version 1: a client of version 0 gets it whole.
        let at_one = table.after(0, &label_deltas[..1], 1).unwrap();
        let published = Published::new(
            cache.clone(),
            FORM,
            tag_deltas,
            Some(labels_of(1, &at_one, &label_deltas[1..])),
        )
        .unwrap();
        probe(&published, Some(behind), &want);
        probe(&published, Some(client), &want);
        probe(&published, None, &want);
        // Published labels must be the dataset's: of its widths, to its version.
        let narrow = LabelTable::new(cache.describe().tau, 3, vec![]).unwrap();
        let cases = [
            None,
            Some(labels_of(0, &narrow, &label_deltas)),
            Some(labels_of(0, &table, &label_deltas[..1])),
        ];
        for labels in cases {
            assert!(Published::new(cache.clone(), FORM, vec![], labels).is_err());
        }
    }

    /// A labeled dataset of 600 items under one key, in both modes: its `ub-fhe`
    /// databases (V2M-1 for single keys, V128K-256 for up to 256), and the state serving
    /// them — with its tags where `tags`.
    #[cfg(feature = "bfv")]
    fn fhe_published(tags: bool) -> Published {
        use super::super::fhe::dataset::{entries, FheDataset};
        use super::super::fhe::params::classes;
        let key = ServerKey::random(Mode::Voprf, &mut Prg::from_seed(Block::from(1)));
        let held = names(0..600);
        let labels: Vec<Vec<u8>> = (0..600u32).map(|i| i.to_le_bytes().to_vec()).collect();
        let outputs = key.evaluate_all(&refs(&held)).unwrap();
        let (cache, table) =
            CacheServer::labeled(key, 0, &refs(&held), &refs(&labels), 4, 1 << 16, 256).unwrap();
        let mut prg = Prg::from_seed(Block::from(6));
        let entries = entries(&outputs, Some((&refs(&labels), 4)), &mut prg).unwrap();
        let datasets = (classes(600, 256).unwrap().into_iter())
            .map(|set| {
                Arc::new(FheDataset::build(set, Block::from(77), &entries, Some(4)).unwrap())
            })
            .collect();
        let labels = PublishedLabels {
            version: 0,
            table: table.wire().to_vec(),
            deltas: vec![],
        };
        let published = Published::new(cache, FORM, vec![], Some(labels)).unwrap();
        published.with_fhe(datasets, tags).unwrap()
    }

    /// Over TCP, in `ub-fhe`: a client that downloads nothing learns exactly which of its
    /// items (members, non-members, one asked twice) the dataset holds, with their
    /// labels, from the database of the smallest cap its query fits (151 keys: the
    /// 256-key set; a single key: the single keys' set). A dataset served in `ub-fhe`
    /// only refuses a sync, at the client and, asked anyway, at the server.
    #[cfg(feature = "bfv")]
    #[test]
    fn fhe_queries_find_members_and_labels_over_tcp() {
        let published = fhe_published(false);
        let description = published.description();
        assert!(!description.tags);
        assert_eq!(description.cache.len, 0, "its size not told");
        let sets: Vec<&str> = description.fhe.iter().map(|o| o.set.as_str()).collect();
        assert_eq!(sets, ["V2M-1", "V128K-256"]);
        assert_eq!(fhe_offer_for(&description.fhe, 1).unwrap(), (0, 1));
        assert_eq!(fhe_offer_for(&description.fhe, 2).unwrap(), (1, 256));
        assert_eq!(fhe_offer_for(&description.fhe, 5000).unwrap(), (1, 256));
        assert!(fhe_offer_for(&[], 1).is_err());
        assert_eq!(
            Description::from_bytes(&description.to_bytes()).unwrap(),
            description
        );
        let mut asked = names(550..700);
        asked.push(names(560..561).remove(0));
        let mut taken = Vec::new();
        let mut count = |n: u32| {
            taken.push(n);
            Ok(())
        };
        let (found, served) = session(&published, &mut count, |chan| {
            let mut s = Session::open(chan).unwrap();
            let refused = s.sync(None, 1 << 20).err().unwrap();
            assert!(refused.to_string().contains("ub-fhe only"), "{refused}");
            let mut prg = Prg::from_seed(Block::from(2));
            let found = s.query_fhe(&refs(&asked), &mut prg).unwrap();
            let single = s.query_fhe(&refs(&names(7..8)), &mut prg).unwrap();
            let absent = s.query_fhe(&refs(&names(600..601)), &mut prg).unwrap();
            s.close().unwrap();
            [found, single, absent].concat()
        });
        let expected: Vec<Option<Vec<u8>>> = (550..700u32)
            .chain([560, 7, 600])
            .map(|i| (i < 600).then(|| i.to_le_bytes().to_vec()))
            .collect();
        assert_eq!(found, expected);
        let served = served.unwrap();
        assert_eq!((served.answered, served.fhe, served.syncs), (3, 3, 0));
        let q = FHE_QUERY_EVALUATIONS;
        let one = padded_count(1);
        assert_eq!(
            taken,
            [256, q, one, q, one, q],
            "each OPRF round (151 items padded to 256), then its query"
        );

        let (_, served) = session(&published, &mut |_| Ok(()), |chan| {
            let s = Session::open(chan).unwrap();
            s.chan
                .send(&Writer::new().u8(b'S').u8(0).u32(0).u64(0).0)
                .unwrap();
        });
        assert!(served.unwrap_err().to_string().contains("ub-fhe only"));
    }

    /// A `ub-fhe` query without an OPRF round of its own, or over the client's allowance,
    /// is refused before the client sends it (and costs the server nothing); one that does
    /// not read ends the session; a client takes a set only from Venn's own, an offer of
    /// more bundles than the set can hold is refused, and so is an answer of more bundles
    /// than offered.
    #[cfg(feature = "bfv")]
    #[test]
    fn fhe_queries_without_evaluations_or_malformed_are_refused() {
        use super::super::fhe::session::FheQuery;
        fn of(o: &FheOffer) -> (&str, [u8; 16], u32) {
            (o.set.as_str(), o.seed, o.bundles)
        }
        let published = fhe_published(true);
        let offer = published.description().fhe[1].clone();
        let outputs = [[7u8; 64]];
        let (error, served) = session(&published, &mut |_| Ok(()), |chan| {
            let s = Session::open(chan).unwrap();
            s.chan.send(b"Q\x01").unwrap();
            read_refusal(&s.chan.recv(MAX_REFUSAL_BYTES).unwrap()).unwrap()
        });
        assert!(error.to_string().contains("OPRF round"), "{error}");
        assert_eq!(served.unwrap().refused, 1);
        // A database not offered, or none named: the session ends.
        for query in [&b"Q\x02"[..], b"Q"] {
            let (_, served) = session(&published, &mut |_| Ok(()), |chan| {
                let s = Session::open(chan).unwrap();
                s.chan.send(query).unwrap();
                let _ = s.chan.recv(MAX_REFUSAL_BYTES);
            });
            assert!(served.is_err(), "{query:?}");
        }
        // Over the allowance: the OPRF round fits, the query's evaluations do not.
        let mut small = |n: u32| match n <= 16 {
            true => Ok(()),
            false => Err(Refusal::RateLimited { retry_after: 60 }),
        };
        let (error, served) = session(&published, &mut small, |chan| {
            let mut s = Session::open(chan).unwrap();
            let items = names(0..1);
            s.query_fhe(&refs(&items), &mut Prg::from_seed(Block::from(3)))
                .unwrap_err()
        });
        assert!(error.to_string().contains("60"), "{error}");
        assert_eq!(served.unwrap().fhe, 0);

        let (_, served) = session(&published, &mut |_| Ok(()), |chan| {
            let mut s = Session::open(chan).unwrap();
            let now = s.description().cache.clone();
            let items = names(0..1);
            s.evaluate(&now, &refs(&items), &mut Prg::from_seed(Block::from(4)))
                .unwrap();
            s.chan.send(b"Q\x00").unwrap();
            assert_eq!(s.chan.recv(1).unwrap(), b"G");
            send_part(s.chan, &[1, 0, 0, 0, 5]).unwrap();
        });
        assert!(served.is_err(), "a request that does not read");

        let mut other = offer.clone();
        other.set = "APSI-16M".into();
        let mut prg = Prg::from_seed(Block::from(5));
        assert!(FheQuery::new(of(&other), None, &outputs, &mut prg).is_err());
        let mut many = offer.clone();
        many.bundles = u32::MAX;
        assert!(FheQuery::new(of(&many), None, &outputs, &mut prg).is_err());
        let mut fewer = offer.clone();
        fewer.bundles = 0;
        let (query, _) = FheQuery::new(of(&fewer), Some(4), &outputs, &mut prg).unwrap();
        let (full, _) = FheQuery::new(of(&offer), Some(4), &outputs, &mut prg).unwrap();
        assert!(query.max_answer().unwrap() < full.max_answer().unwrap());
        // An answer with one bundle at the first index where none was described.
        let answer = [1u32.to_le_bytes(), 0u32.to_le_bytes()].concat();
        assert!(query.finish(&answer).is_err());
    }
}
