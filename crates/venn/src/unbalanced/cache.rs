//! `ub-cache`, the OPRF-cache mode (Kales et al., USENIX Security 2019): the server
//! publishes the τ-bit tags of F_k(y) for its whole set once ([`TagSet`]), a client
//! downloads them and checks their digest, and each query is one OPRF round in the
//! verifiable mode ([`super::oprf_round`]) after which the client looks its items' tags up
//! locally — the server learns the query's padded size, nothing of its result. A
//! labeled dataset ships its items' labels too, each sealed under its item's OPRF value
//! ([`super::labels`]), in a table beside the tags ([`LabelTable`]) kept up to date by
//! label deltas as the tags are by theirs.
//!
//! Who learns what: the client learns X ∩ Y (and, at most 2^-40 a query, a false
//! positive), the server's set size exactly, and the tags of every server item (useless
//! without k: each candidate costs an OPRF evaluation, which the server limits); the
//! server learns the padded count of each query and when it comes.

/// Where the mode comes from.
pub const PAPER: &str = "Kales, Rechberger, Schneider, Senker, Weinert: Mobile Private Contact \
    Discovery at Scale (USENIX Security 2019), the server's OPRF tags shipped to clients; the \
    OPRF RFC 9497's ristretto255-SHA512 in its verifiable mode";

/// Its security model.
pub const SECURITY: &str = "malicious client (it gets only OPRF evaluations, counted and \
    limited; the tags are useless without the key), semi-honest server for privacy with \
    every answer proven under the published key (a DLEQ proof) and every download checked \
    against the published digest; ristretto255 (≈ 126-bit), τ-bit tags with false \
    positives ≤ 2^-40 a query";

/// Who learns what.
pub const LEAKAGE: &str = "The client learns which of its keys the dataset holds (a non-member \
    matches with probability ≤ 2^-40 a query), the dataset's exact size and how many keys \
    each update adds and removes, and — until the key is rotated — whether any key it ever \
    queried is added or removed later (its tags follow the set). In a labeled dataset it \
    learns its matched keys' labels, the label room ℓ, how many keys each update relabels \
    and — until the key is rotated — the current label of any key it ever queried (a \
    label opens only under its key's OPRF value: a non-member's opens none). The server \
    learns when a client queries and how many keys, padded to 1, 16, 256, 4,096 or a multiple, never which \
    keys or whether they matched";

use super::label_table::{LabelDelta, LabelTable};
use super::labels::{label_key, open, seal, MAX_LABEL};
use super::oprf_round::{answer, padded_count, Query, Refusal};
use super::tag_set::{tag_bits, tag_of, TagSet};
use crate::crypto::oprf::{Mode, ServerKey};
use crate::crypto::Prg;
use crate::net::{Reader, Writer};
use crate::{Error, Result};
use rayon::prelude::*;
use std::time::{Duration, Instant};

/// The largest query cap a dataset may have: 256 rounds' worth of 4,096 items (a request
/// of 32 MiB).
pub const MAX_QUERY: u32 = 1 << 20;

/// What a server publishes of a dataset, for its clients to check what they download and
/// the answers they get.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Descriptor {
    /// The key's epoch, named in every OPRF round.
    pub epoch: u32,
    /// The tag set's version: one more with each published update.
    pub version: u64,
    /// The key's public half: every answer is proven under it.
    pub public: [u8; 32],
    /// How many tags the set holds.
    pub len: u64,
    /// The tags' bits, τ.
    pub tau: u8,
    /// The tag set's digest.
    pub digest: [u8; 32],
    /// The most items a query may hold, padding included.
    pub max_query: u32,
    /// ℓ, the most bytes an item's label takes, if the dataset's items carry labels
    /// ([`LabelTable`]).
    pub labels: Option<u8>,
}

/// A dataset's server: its key, its tags, how large a query it answers.
#[derive(Clone)]
pub struct CacheServer {
    key: ServerKey,
    epoch: u32,
    version: u64,
    tags: TagSet,
    max_items: u64,
    max_query: u32,
    labels: Option<u8>,
    /// The key before the last rotation, and until when requests of its epoch are still
    /// answered (queries in flight when the key changed).
    previous: Option<(ServerKey, u32, Instant)>,
}

/// What changed between two versions of a tag set: the tags added and those removed,
/// each a sorted, Rice-coded set (about τ − log₂(changes) + 1.5 bits a change).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delta {
    /// The version it applies to.
    pub from: u64,
    /// The version it makes.
    pub to: u64,
    adds: TagSet,
    removes: TagSet,
}

impl Delta {
    /// Its wire form: `from`, `to` (u64 each), the adds' and the removes' wire forms each
    /// after its length (u64).
    pub fn to_bytes(&self) -> Vec<u8> {
        let (adds, removes) = (self.adds.wire(), self.removes.wire());
        (Writer::new().u64(self.from).u64(self.to))
            .u64(adds.len() as u64)
            .bytes(adds)
            .u64(removes.len() as u64)
            .bytes(removes)
            .0
    }

    /// Reads a delta of at most `max_len` changes each way: refused unless its parts read
    /// exactly.
    pub fn from_bytes(bytes: &[u8], max_len: u64) -> Result<Delta> {
        let mut r = Reader::new(bytes, "a tag set's delta");
        let (from, to) = (r.u64()?, r.u64()?);
        let part = |r: &mut Reader| {
            let len = usize::try_from(r.u64()?).unwrap_or(usize::MAX);
            TagSet::from_bytes(r.bytes(len)?, max_len)
        };
        let (adds, removes) = (part(&mut r)?, part(&mut r)?);
        r.finish()?;
        Ok(Delta {
            from,
            to,
            adds,
            removes,
        })
    }
}

impl CacheServer {
    /// The server of `items` under `key` (the verifiable mode's) of `epoch`, answering
    /// queries of up to `max_query` items (a padded size: [`padded_count`]); its tags
    /// sized for a set of up to `max_items`.
    /// The items are evaluated on the current rayon pool's threads.
    pub fn new(
        key: ServerKey,
        epoch: u32,
        items: &[&[u8]],
        max_items: u64,
        max_query: u32,
    ) -> Result<CacheServer> {
        let made = CacheServer::made(key, epoch, items, None, max_items, max_query)?;
        Ok(made.0)
    }

    /// The server of `items` carrying `labels` (one each, in their order, of at most ℓ =
    /// `label_len` bytes), as [`CacheServer::new`], and the table of their labels, each
    /// sealed under its item's OPRF value ([`super::labels`]).
    pub fn labeled(
        key: ServerKey,
        epoch: u32,
        items: &[&[u8]],
        labels: &[&[u8]],
        label_len: u8,
        max_items: u64,
        max_query: u32,
    ) -> Result<(CacheServer, LabelTable)> {
        if labels.len() != items.len() {
            return Err(Error::Usage(format!(
                "{} labels for {} items",
                labels.len(),
                items.len()
            )));
        }
        let labels = Some((labels, label_len));
        let (server, table) = CacheServer::made(key, epoch, items, labels, max_items, max_query)?;
        Ok((server, table.expect("a labeled server's table")))
    }

    /// The server of `items` (with their labels, if `labels`), and their label table.
    fn made(
        key: ServerKey,
        epoch: u32,
        items: &[&[u8]],
        labels: Option<(&[&[u8]], u8)>,
        max_items: u64,
        max_query: u32,
    ) -> Result<(CacheServer, Option<LabelTable>)> {
        // Before any key is evaluated: the set may take minutes.
        let label_len = labels.map(|(_, len)| len);
        check_settings(&key, max_query, label_len)?;
        let tau = tag_bits(max_items.max(items.len() as u64), u64::from(max_query));
        let (tags, table) = evaluated(&key, items, labels, tau)?;
        let server = CacheServer::restore(key, epoch, 0, tags, label_len, max_items, max_query)?;
        Ok((server, table))
    }

    /// The server of a tag set published before (read back by [`TagSet::from_bytes`],
    /// or [`TagSet::from_trusted`] from the server's own files): version `version` of
    /// the key `key` of `epoch`, its items' labels `labels` bytes long at most if they
    /// carry labels. Refused unless its key is a VOPRF key, its cap a padded size, ℓ at
    /// most [`MAX_LABEL`], and τ what [`CacheServer::new`] would choose for these sizes.
    pub fn restore(
        key: ServerKey,
        epoch: u32,
        version: u64,
        tags: TagSet,
        labels: Option<u8>,
        max_items: u64,
        max_query: u32,
    ) -> Result<CacheServer> {
        check_settings(&key, max_query, labels)?;
        let tau = tag_bits(max_items.max(tags.len()), u64::from(max_query));
        if tags.tau() != tau {
            return Err(Error::State(format!(
                "a stored tag set of {}-bit tags where this dataset's are {tau} bits",
                tags.tau()
            )));
        }
        Ok(CacheServer {
            key,
            epoch,
            version,
            tags,
            max_items,
            max_query,
            labels,
            previous: None,
        })
    }

    /// This server, after the key `old` of epoch `old_epoch`: it still answers requests
    /// of its epoch for `grace`, the queries in flight when the key changed.
    pub fn succeeding(mut self, old: ServerKey, old_epoch: u32, grace: Duration) -> CacheServer {
        self.previous = Some((old, old_epoch, Instant::now() + grace));
        self
    }

    /// Rotates to `key` (the next epoch) over `items`, the set as it stands: a new tag
    /// set every client downloads whole. The old key answers requests of its epoch for
    /// `grace` more; after that they are refused as [`Refusal::EpochChanged`]. On a
    /// suspected leak of the key or the set, and on a schedule: a client learns the
    /// membership changes of every item it ever evaluated until the key changes. A
    /// labeled dataset's labels are sealed again with its set ([`CacheServer::labeled`]):
    /// refused here.
    pub fn rotate(&mut self, key: ServerKey, items: &[&[u8]], grace: Duration) -> Result<()> {
        if self.labels.is_some() {
            return Err(Error::Usage(
                "a labeled dataset rotates its key with its labels".into(),
            ));
        }
        let epoch = self
            .epoch
            .checked_add(1)
            .ok_or_else(|| Error::Usage("the key's epochs are used up (2^32 rotations)".into()))?;
        let next = CacheServer::new(key, epoch, items, self.max_items, self.max_query)?;
        *self = next.succeeding(self.key.clone(), self.epoch, grace);
        Ok(())
    }

    /// Inserts and deletes items, publishing the next version, and returns the delta
    /// from the last (and, for a labeled dataset, its labels' delta). `inserts` must be
    /// new to the set and `deletes` in it — the store of items decides which operations
    /// change membership; a delete whose tag the set lacks is refused, and nothing
    /// changes. A labeled dataset's update comes with `labels` (the inserts' and the
    /// relabelled items'), an unlabeled one's without.
    pub fn update(
        &mut self,
        inserts: &[&[u8]],
        deletes: &[&[u8]],
        labels: Option<UpdateLabels<'_>>,
    ) -> Result<(Delta, Option<LabelDelta>)> {
        let tau = self.tags.tau();
        let (adds, table) = match (labels, self.labels) {
            (None, None) => (evaluated(&self.key, inserts, None, tau)?.0, None),
            (Some(labels), Some(len)) if labels.inserts.len() == inserts.len() => {
                let (adds, added) =
                    evaluated(&self.key, inserts, Some((labels.inserts, len)), tau)?;
                let (items, new): (Vec<&[u8]>, Vec<&[u8]>) =
                    labels.relabels.iter().copied().unzip();
                // An item relabelled twice, or relabelled and deleted, would make a delta
                // no client (nor the publisher's own table) can apply.
                let mut relabelled = std::collections::HashSet::with_capacity(items.len());
                let deleted: std::collections::HashSet<&[u8]> = deletes.iter().copied().collect();
                if let Some(item) =
                    (items.iter()).find(|i| deleted.contains(*i) || !relabelled.insert(**i))
                {
                    return Err(Error::Usage(format!(
                        "the item {:?} is relabelled twice, or relabelled and deleted",
                        String::from_utf8_lossy(item)
                    )));
                }
                let (held, relabelled) = evaluated(&self.key, &items, Some((&new, len)), tau)?;
                if held.tags().any(|tag| !self.tags.contains(tag)) {
                    return Err(Error::Usage("a relabel of an item the set lacks".into()));
                }
                let (added, relabelled) = (added.expect("labels"), relabelled.expect("labels"));
                let set = (added.entries().chain(relabelled.entries()))
                    .map(|(tag, sealed)| (tag, sealed.to_vec()));
                (adds, Some(LabelTable::new(tau, len, set.collect())?))
            }
            _ => {
                return Err(Error::Usage(
                    "labels with an update of a labeled dataset only, one an insert".into(),
                ))
            }
        };
        let removes = evaluated(&self.key, deletes, None, tau)?.0;
        self.tags = self.tags.changed(&adds, &removes)?;
        self.version += 1;
        let (from, to) = (self.version - 1, self.version);
        let labels = table.map(|set| LabelDelta::new(from, to, set, removes.clone()));
        let delta = Delta {
            from,
            to,
            adds,
            removes,
        };
        Ok((delta, labels))
    }

    /// What it publishes.
    pub fn describe(&self) -> Descriptor {
        Descriptor {
            epoch: self.epoch,
            version: self.version,
            public: self.key.public(),
            len: self.tags.len(),
            tau: self.tags.tau(),
            digest: self.tags.digest(),
            max_query: self.max_query,
            labels: self.labels,
        }
    }

    /// The tag set's wire form as held, for a client to download (no copy).
    pub fn tags(&self) -> &[u8] {
        self.tags.wire()
    }

    /// The tag set's index ([`TagSet::index_bytes`]), kept beside its wire form so that
    /// the set is read back without decoding ([`TagSet::from_trusted`]).
    pub fn tags_index(&self) -> Vec<u8> {
        self.tags.index_bytes()
    }

    /// Its answer to an OPRF `request`, or why not: under the current key, or under the
    /// previous one for a request of its epoch within the grace period of a rotation.
    pub fn oprf(&self, request: &[u8], prg: &mut Prg) -> std::result::Result<Vec<u8>, Refusal> {
        if let Some((key, epoch, until)) = &self.previous {
            let asked = (request.get(..4)).map(|e| u32::from_le_bytes(e.try_into().expect("4")));
            if asked == Some(*epoch) && Instant::now() < *until {
                return answer(key, *epoch, request, self.max_query, prg);
            }
        }
        answer(&self.key, self.epoch, request, self.max_query, prg)
    }
}

/// Labels with an update of a labeled dataset.
#[derive(Clone, Copy, Debug)]
pub struct UpdateLabels<'a> {
    /// The inserts' labels, in their order.
    pub inserts: &'a [&'a [u8]],
    /// Items the set holds, each with its new label.
    pub relabels: &'a [(&'a [u8], &'a [u8])],
}

/// Refuses a key not of the verifiable mode, a query cap that is not a padded size, and
/// labels longer than [`MAX_LABEL`].
fn check_settings(key: &ServerKey, max_query: u32, labels: Option<u8>) -> Result<()> {
    if labels.is_some_and(|len| usize::from(len) > MAX_LABEL) {
        return Err(Error::Usage(format!(
            "labels of up to {MAX_LABEL} bytes, not {}",
            labels.unwrap_or_default()
        )));
    }
    if key.mode() != Mode::Voprf {
        return Err(Error::Usage(
            "ub-cache answers in the verifiable mode: its key is a VOPRF key".into(),
        ));
    }
    if padded_count(max_query) != max_query || max_query > MAX_QUERY {
        return Err(Error::Usage(format!(
            "a query cap of {max_query}: queries are padded to 1, 16, 256 or 4,096 items \
             (or multiples of 4,096), so the cap is one of those, at most {MAX_QUERY}"
        )));
    }
    Ok(())
}

/// The set of `items`' τ-bit tags under `key`, evaluated on the current rayon pool, and
/// with `labels` (one an item, of at most ℓ bytes) their table: each label sealed under
/// its item's OPRF value, with a fresh nonce.
fn evaluated(
    key: &ServerKey,
    items: &[&[u8]],
    labels: Option<(&[&[u8]], u8)>,
    tau: u8,
) -> Result<(TagSet, Option<LabelTable>)> {
    const SLICE: usize = 1 << 16;
    let mut tags = Vec::with_capacity(items.len());
    let mut entries = Vec::with_capacity(labels.map_or(0, |_| items.len()));
    let mut prg = Prg::from_entropy();
    // A bounded slice at a time: only the tags (and sealed labels) of all are kept.
    for (s, slice) in items.chunks(SLICE).enumerate() {
        let outputs = key.evaluate_all(slice)?;
        tags.extend(outputs.iter().map(|out| tag_of(out, tau)));
        if let Some((labels, len)) = labels {
            for (out, label) in outputs.iter().zip(&labels[s * SLICE..]) {
                let sealed = seal(&label_key(out), label, usize::from(len), &mut prg)?;
                entries.push((tag_of(out, tau), sealed));
            }
        }
    }
    let table = labels
        .map(|(_, len)| LabelTable::new(tau, len, entries))
        .transpose()?;
    Ok((TagSet::new(tau, tags)?, table))
}

/// A client holding a dataset's tags (and its labels, if its items carry them), checked
/// against what the server published.
pub struct CacheClient {
    descriptor: Descriptor,
    tags: TagSet,
    labels: Option<LabelTable>,
}

impl CacheClient {
    /// The client of the dataset `descriptor` describes, from the tag set `tags` and
    /// label table `labels` downloaded: refused unless the set reads and is the set
    /// described (count, τ, digest), and the table is there exactly where the dataset's
    /// items carry labels, of their length and holding the set's tags.
    pub fn new(
        descriptor: Descriptor,
        tags: &[u8],
        labels: Option<LabelTable>,
    ) -> Result<CacheClient> {
        let tags = TagSet::from_bytes(tags, descriptor.len)?;
        CacheClient::held(descriptor, tags, labels)
    }

    /// The client of `tags` and `labels`, refused unless they are what `descriptor`
    /// describes.
    fn held(
        descriptor: Descriptor,
        tags: TagSet,
        labels: Option<LabelTable>,
    ) -> Result<CacheClient> {
        if tags.len() != descriptor.len
            || tags.tau() != descriptor.tau
            || tags.digest() != descriptor.digest
        {
            return Err(Error::protocol(
                format!(
                    "the tag set of version {} the dataset published",
                    descriptor.version
                ),
                "another set (its count, width or digest differs)",
            ));
        }
        let labels_agree = match (&labels, descriptor.labels) {
            (None, None) => true,
            (Some(table), Some(len)) => table.label_len() == len && table.has_tags_of(&tags),
            _ => false,
        };
        if !labels_agree {
            return Err(Error::protocol(
                "the labels of the set the dataset published",
                "a table of other tags or widths, or labels where none are published",
            ));
        }
        Ok(CacheClient {
            descriptor,
            tags,
            labels,
        })
    }

    /// What the server published of the set this client holds.
    pub fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    /// The tag set's wire form, as downloaded (for a client to keep between runs; no
    /// copy).
    pub fn tags(&self) -> &[u8] {
        self.tags.wire()
    }

    /// The label table, where the dataset's items carry labels.
    pub fn labels(&self) -> Option<&LabelTable> {
        self.labels.as_ref()
    }

    /// Applies the `deltas` the server published since this client's version, in order,
    /// which must take it to the version of the server's new `descriptor` and give the
    /// set it describes (its digest), with `labels` the dataset's label table at that
    /// version ([`LabelTable::after`]): refused otherwise, and the client keeps what it had.
    pub fn apply(
        &mut self,
        descriptor: Descriptor,
        deltas: &[Vec<u8>],
        labels: Option<LabelTable>,
    ) -> Result<()> {
        let same_key = descriptor.epoch == self.descriptor.epoch
            && descriptor.public == self.descriptor.public;
        let (mut version, mut tags) = (self.descriptor.version, None::<TagSet>);
        for delta in deltas {
            let held = tags.as_ref().unwrap_or(&self.tags);
            let delta = Delta::from_bytes(delta, descriptor.len.max(held.len()))?;
            if !same_key || delta.from != version || version.checked_add(1) != Some(delta.to) {
                return Err(Error::protocol(
                    format!(
                        "a delta from version {version} of the key of epoch {}",
                        self.descriptor.epoch
                    ),
                    format!(
                        "versions {} to {} of epoch {}",
                        delta.from, delta.to, descriptor.epoch
                    ),
                ));
            }
            tags = Some(held.changed(&delta.adds, &delta.removes)?);
            version = delta.to;
        }
        let tags = tags.unwrap_or_else(|| self.tags.clone());
        if version != descriptor.version {
            return Err(Error::protocol(
                format!("deltas to version {}", descriptor.version),
                format!("deltas to version {version}"),
            ));
        }
        *self = CacheClient::held(descriptor, tags, labels)?;
        Ok(())
    }

    /// Starts a lookup of `items` ([`Lookup::new`]).
    pub fn lookup(&self, items: &[&[u8]], prg: &mut Prg) -> Result<Lookup> {
        Lookup::new(&self.descriptor, items, prg)
    }

    /// Which items of `lookup` the server's set holds, each with its label (empty for a
    /// dataset without labels), from the server's `response` (its proof checked against
    /// the published key). A matched tag whose label does not open under the item's key
    /// is a false positive ([`open`]'s check value): no match.
    pub fn finish(&self, lookup: &Lookup, response: &[u8]) -> Result<Vec<Option<Vec<u8>>>> {
        self.matches(&lookup.outputs(&self.descriptor, response)?)
    }

    /// Which of the items whose OPRF values are `outputs` the server's set holds, each
    /// with its label, as [`CacheClient::finish`] says.
    pub fn matches(&self, outputs: &[[u8; 64]]) -> Result<Vec<Option<Vec<u8>>>> {
        (outputs.par_iter())
            .map(|out| {
                let tag = tag_of(out, self.descriptor.tau);
                if !self.tags.contains(tag) {
                    return Ok(None);
                }
                let Some(table) = &self.labels else {
                    return Ok(Some(Vec::new()));
                };
                let sealed = table.get(tag).ok_or_else(|| {
                    Error::State("a held tag without its label (a table checked)".into())
                })?;
                open(&label_key(out), sealed, usize::from(table.label_len()))
            })
            .collect()
    }
}

/// A lookup under way: the request to send, and what reading its answer takes.
pub struct Lookup {
    query: Query,
    padded: Vec<Vec<u8>>,
    real: usize,
}

impl Lookup {
    /// Starts a lookup of `items` in the dataset `descriptor` describes: padded with
    /// random items to [`padded_count`], blinded.
    pub fn new(descriptor: &Descriptor, items: &[&[u8]], prg: &mut Prg) -> Result<Lookup> {
        let real = items.len();
        let count = u32::try_from(real)
            .map(padded_count)
            .ok()
            .filter(|&c| c <= descriptor.max_query)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "a query of {real} items: the dataset answers at most {} at once",
                    descriptor.max_query
                ))
            })?;
        let mut padded: Vec<Vec<u8>> = items.iter().map(|i| i.to_vec()).collect();
        padded.resize_with(count as usize, || {
            let mut dummy = vec![0u8; 32];
            prg.fill_bytes(&mut dummy);
            dummy
        });
        let refs: Vec<&[u8]> = padded.iter().map(Vec::as_slice).collect();
        let query = Query::new(Mode::Voprf, descriptor.epoch, &refs, prg)?;
        Ok(Lookup {
            query,
            padded,
            real,
        })
    }

    /// The OPRF request to send.
    pub fn request(&self) -> Vec<u8> {
        self.query.request()
    }

    /// The real items' OPRF values (the padding's dropped) from the server's `response`,
    /// its proof checked against the key `descriptor` published.
    pub fn outputs(&self, descriptor: &Descriptor, response: &[u8]) -> Result<Vec<[u8; 64]>> {
        let refs: Vec<&[u8]> = self.padded.iter().map(Vec::as_slice).collect();
        let mut outputs = (self.query).finish(&refs, response, Some(&descriptor.public))?;
        outputs.truncate(self.real);
        Ok(outputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Block;
    use std::collections::HashSet;

    fn key(seed: u64) -> ServerKey {
        ServerKey::random(Mode::Voprf, &mut Prg::from_seed(Block::from(seed)))
    }

    /// Which lookups matched.
    fn matches(found: Vec<Option<Vec<u8>>>) -> Vec<bool> {
        found.iter().map(Option::is_some).collect()
    }

    /// Lookups equal the plain intersection: 4,096 server items, queries of 1 and 256
    /// items (with repeats) sharing none, one, half or all of theirs, and one of 4,096
    /// sharing half; every request's size is its padded count's, whatever the items.
    #[test]
    fn lookups_are_the_intersection() {
        let mut prg = Prg::from_seed(Block::from(21));
        let server_items: Vec<Vec<u8>> = (0..4096u32)
            .map(|i| format!("server {i}").into_bytes())
            .collect();
        let refs: Vec<&[u8]> = server_items.iter().map(Vec::as_slice).collect();
        let server = CacheServer::new(key(1), 7, &refs, 1 << 12, 4096).unwrap();
        let client = CacheClient::new(server.describe(), server.tags(), None).unwrap();
        let members: HashSet<&[u8]> = refs.iter().copied().collect();
        for m in [1usize, 256, 4096] {
            // The largest query once (a 4,096-item round takes a second or two here).
            let sharing = match m {
                4096 => vec![m / 2],
                _ => vec![0, 1, m / 2, m],
            };
            for shared in sharing {
                let items: Vec<Vec<u8>> = (0..m)
                    .map(|i| match i < shared {
                        true => server_items[(i * 7) % 4096].clone(),
                        false => format!("client {}", i % (m / 2).max(1)).into_bytes(),
                    })
                    .collect();
                let items: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
                let lookup = client.lookup(&items, &mut prg).unwrap();
                let request = lookup.request();
                assert_eq!(request.len(), 8 + 32 * padded_count(m as u32) as usize);
                let response = server.oprf(&request, &mut prg).unwrap();
                let found = matches(client.finish(&lookup, &response).unwrap());
                let expected: Vec<bool> = items.iter().map(|i| members.contains(i)).collect();
                assert_eq!(found, expected, "m {m}, shared {shared}");
            }
        }
    }

    /// A client refuses a tag set other than the one described, a query above the
    /// dataset's cap, and answers under another key; a server refuses a base-mode key,
    /// and a stored set restores only with the sizes it was made for.
    #[test]
    fn what_does_not_match_the_description_is_refused() {
        let mut prg = Prg::from_seed(Block::from(22));
        let items: Vec<&[u8]> = vec![b"a", b"b", b"c"];
        let server = CacheServer::new(key(2), 1, &items, 16, 16).unwrap();
        let mut described = server.describe();
        described.digest[0] ^= 1;
        assert!(CacheClient::new(described, server.tags(), None).is_err());
        let other = CacheServer::new(key(3), 1, &[b"a"], 16, 16).unwrap();
        assert!(CacheClient::new(server.describe(), other.tags(), None).is_err());
        let client = CacheClient::new(server.describe(), server.tags(), None).unwrap();
        let many: Vec<&[u8]> = vec![b"x"; 17];
        assert!(client.lookup(&many, &mut prg).is_err());
        assert!(
            CacheServer::new(key(2), 1, &items, 16, 64).is_err(),
            "not a padded size"
        );
        // Answers from another key (the same tags, another VOPRF key) fail their proof.
        let lookup = client.lookup(&[b"a"], &mut prg).unwrap();
        let impostor = CacheServer::new(key(4), 1, &items, 16, 16).unwrap();
        let response = impostor.oprf(&lookup.request(), &mut prg).unwrap();
        assert!(matches!(
            client.finish(&lookup, &response),
            Err(Error::CheatingDetected(_))
        ));
        let base = ServerKey::random(Mode::Oprf, &mut prg);
        assert!(CacheServer::new(base.clone(), 1, &items, 16, 16).is_err());
        // A stored set restores to the server it was, under its key and sizes only.
        let stored = || TagSet::from_bytes(server.tags(), u64::MAX).unwrap();
        let restored = CacheServer::restore(key(2), 1, 0, stored(), None, 16, 16).unwrap();
        assert_eq!(restored.describe(), server.describe());
        assert!(CacheServer::restore(key(2), 1, 0, stored(), None, 1 << 20, 16).is_err());
        assert!(CacheServer::restore(base, 1, 0, stored(), None, 16, 16).is_err());
    }

    /// Updates interleaved with lookups: after each version the client, applying the
    /// server's delta, looks up as a model set says; a delta skipped, altered or for
    /// another key is refused and leaves the client as it was; a delete of an item the
    /// set lacks is refused and changes nothing.
    #[test]
    fn deltas_keep_a_client_equal_to_the_server() {
        let mut prg = Prg::from_seed(Block::from(23));
        let name = |i: u32| format!("item {i}").into_bytes();
        let first: Vec<Vec<u8>> = (0..500).map(name).collect();
        let refs: Vec<&[u8]> = first.iter().map(Vec::as_slice).collect();
        let mut server = CacheServer::new(key(5), 1, &refs, 1 << 12, 256).unwrap();
        let mut client = CacheClient::new(server.describe(), server.tags(), None).unwrap();
        let mut model: HashSet<u32> = (0..500).collect();
        let mut next = 500u32;
        for round in 0..6u32 {
            // Delete every seventh of the model's items (shifted by the round), insert 40.
            let deletes: Vec<u32> = (model.iter().copied())
                .filter(|i| (i + round) % 7 == 0)
                .collect();
            let inserts: Vec<u32> = (next..next + 40).collect();
            next += 40;
            let (ins, del): (Vec<Vec<u8>>, Vec<Vec<u8>>) = (
                inserts.iter().map(|&i| name(i)).collect(),
                deletes.iter().map(|&i| name(i)).collect(),
            );
            let ins: Vec<&[u8]> = ins.iter().map(Vec::as_slice).collect();
            let del: Vec<&[u8]> = del.iter().map(Vec::as_slice).collect();
            let delta = server.update(&ins, &del, None).unwrap().0.to_bytes();
            model.extend(&inserts);
            deletes.iter().for_each(|i| {
                model.remove(i);
            });
            let described = server.describe();
            if round == 2 {
                let mut altered = delta.clone();
                let last = altered.len() - 1;
                altered[last] ^= 0x40;
                assert!(
                    client
                        .apply(described.clone(), std::slice::from_ref(&altered), None)
                        .is_err(),
                    "altered"
                );
            }
            client
                .apply(described.clone(), std::slice::from_ref(&delta), None)
                .unwrap();
            assert!(
                client
                    .apply(described, std::slice::from_ref(&delta), None)
                    .is_err(),
                "the same delta twice: from an old version"
            );
            let probes: Vec<Vec<u8>> = (0..next + 20).step_by(3).map(name).collect();
            for chunk in probes.chunks(64) {
                let items: Vec<&[u8]> = chunk.iter().map(Vec::as_slice).collect();
                let lookup = client.lookup(&items, &mut prg).unwrap();
                let response = server.oprf(&lookup.request(), &mut prg).unwrap();
                let found = matches(client.finish(&lookup, &response).unwrap());
                let expected: Vec<bool> = (chunk.iter())
                    .map(|item| {
                        let i: u32 = String::from_utf8_lossy(&item[5..]).parse().unwrap();
                        model.contains(&i)
                    })
                    .collect();
                assert_eq!(found, expected, "round {round}");
            }
        }
        let before = server.describe();
        let absent = name(next + 1000);
        assert!(server.update(&[], &[&absent], None).is_err());
        assert_eq!(
            server.describe(),
            before,
            "a refused update changes nothing"
        );
        // A client of an older version cannot take a later delta.
        let mut behind = CacheClient::new(server.describe(), server.tags(), None).unwrap();
        server.update(&[b"one more"], &[], None).unwrap();
        let skipped = server
            .update(&[b"and another"], &[], None)
            .unwrap()
            .0
            .to_bytes();
        assert!(
            behind
                .apply(server.describe(), std::slice::from_ref(&skipped), None)
                .is_err(),
            "a version skipped"
        );
        assert!(Delta::from_bytes(&skipped[..skipped.len() - 1], 1 << 12).is_err());
    }

    /// After a rotation a client of the old key is still answered within the grace
    /// period, then told the epoch changed; synced again, it looks up as before, and the
    /// old key's outputs no longer match.
    #[test]
    fn a_rotated_key_moves_clients_to_the_new_epoch() {
        let mut prg = Prg::from_seed(Block::from(24));
        let items: Vec<&[u8]> = vec![b"a", b"b", b"c"];
        let mut server = CacheServer::new(key(6), 1, &items, 16, 16).unwrap();
        let old = CacheClient::new(server.describe(), server.tags(), None).unwrap();
        let old_tags = server.tags().to_vec();
        server
            .rotate(key(7), &items, Duration::from_secs(600))
            .unwrap();
        assert_eq!(server.describe().epoch, 2);
        assert_ne!(server.tags(), old_tags, "the tags are the new key's");
        let lookup = old.lookup(&[b"a", b"z"], &mut prg).unwrap();
        let response = server.oprf(&lookup.request(), &mut prg).unwrap();
        assert_eq!(
            matches(old.finish(&lookup, &response).unwrap()),
            [true, false],
            "in grace"
        );
        server.rotate(key(8), &items, Duration::ZERO).unwrap();
        let refused = server.oprf(&lookup.request(), &mut prg).unwrap_err();
        assert_eq!(refused, Refusal::EpochChanged { current: 3 });
        let synced = CacheClient::new(server.describe(), server.tags(), None).unwrap();
        let lookup = synced.lookup(&[b"a", b"z"], &mut prg).unwrap();
        let response = server.oprf(&lookup.request(), &mut prg).unwrap();
        assert_eq!(
            matches(synced.finish(&lookup, &response).unwrap()),
            [true, false]
        );
        assert!(
            CacheClient::new(server.describe(), &old_tags, None).is_err(),
            "the old set"
        );
    }

    /// A labeled dataset through inserts, relabels and deletes: each lookup finds the
    /// model's label for a member and nothing for a non-member, and no sealed label of
    /// the table opens under a non-member's key; a client whose table is not the set's,
    /// or lacks labels, is refused.
    #[test]
    fn labels_follow_the_set_and_open_for_members_only() {
        use std::collections::BTreeMap;
        let mut prg = Prg::from_seed(Block::from(25));
        let name = |i: u32| format!("item {i}").into_bytes();
        let label = |i: u32, round: u32| -> Vec<u8> {
            let text = format!("label {i}.{round} ");
            text.bytes().cycle().take(i as usize % 17).collect()
        };
        let mut model: BTreeMap<u32, Vec<u8>> = (0..300).map(|i| (i, label(i, 0))).collect();
        let items: Vec<Vec<u8>> = model.keys().map(|&i| name(i)).collect();
        let labels: Vec<&[u8]> = model.values().map(Vec::as_slice).collect();
        let refs: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
        let (mut server, table) =
            CacheServer::labeled(key(9), 1, &refs, &labels, 16, 1 << 12, 256).unwrap();
        assert_eq!(server.describe().labels, Some(16));
        assert!(
            CacheClient::new(server.describe(), server.tags(), None).is_err(),
            "no table"
        );
        let mut client =
            CacheClient::new(server.describe(), server.tags(), Some(table.clone())).unwrap();
        let mut next = 300u32;
        for round in 1..5u32 {
            let check = |client: &CacheClient, model: &BTreeMap<u32, Vec<u8>>, prg: &mut Prg| {
                let probes: Vec<Vec<u8>> = (0..next + 10).map(name).collect();
                let refs: Vec<&[u8]> = probes.iter().map(Vec::as_slice).collect();
                for (chunk, at) in refs.chunks(256).zip((0..).step_by(256)) {
                    let lookup = client.lookup(chunk, prg).unwrap();
                    let response = server.oprf(&lookup.request(), prg).unwrap();
                    let found = client.finish(&lookup, &response).unwrap();
                    let expected: Vec<Option<Vec<u8>>> = (at..at + chunk.len() as u32)
                        .map(|i| model.get(&i).cloned())
                        .collect();
                    assert_eq!(found, expected, "round {round}");
                }
            };
            check(&client, &model, &mut prg);
            let (ins, del, rel): (Vec<u32>, Vec<u32>, Vec<u32>) = (
                (next..next + 30).collect(),
                model
                    .keys()
                    .copied()
                    .filter(|i| (i + round) % 9 == 0)
                    .collect(),
                model
                    .keys()
                    .copied()
                    .filter(|i| (i + round) % 9 == 4)
                    .collect(),
            );
            next += 30;
            let names = |v: &[u32]| v.iter().map(|&i| name(i)).collect::<Vec<_>>();
            let (ins_n, del_n, rel_n) = (names(&ins), names(&del), names(&rel));
            let ins_l: Vec<Vec<u8>> = ins.iter().map(|&i| label(i, round)).collect();
            let rel_l: Vec<Vec<u8>> = rel.iter().map(|&i| label(i + 1, round)).collect();
            fn refs(v: &[Vec<u8>]) -> Vec<&[u8]> {
                v.iter().map(Vec::as_slice).collect()
            }
            let (ins_r, ins_lr, del_r) = (refs(&ins_n), refs(&ins_l), refs(&del_n));
            let relabels: Vec<(&[u8], &[u8])> = rel_n
                .iter()
                .zip(&rel_l)
                .map(|(i, l)| (&i[..], &l[..]))
                .collect();
            let labels = UpdateLabels {
                inserts: &ins_lr,
                relabels: &relabels,
            };
            assert!(
                server.update(&ins_r, &del_r, None).is_err(),
                "labels missing"
            );
            let (delta, labels) = server.update(&ins_r, &del_r, Some(labels)).unwrap();
            let labels = labels.unwrap().to_bytes();
            let held = client.labels().unwrap();
            let from = client.descriptor().version;
            let table = held.after(from, &[labels], from + 1).unwrap();
            // A table short of one tag.
            let tau = table.tau();
            let first = table.tags().next().unwrap();
            let none = LabelTable::new(tau, 16, vec![]).unwrap();
            let dropped = LabelDelta::new(0, 1, none, TagSet::new(tau, vec![first]).unwrap());
            let wrong = table.changed(&dropped).unwrap();
            let (described, tags) = (client.descriptor().clone(), client.tags());
            let mut refused = CacheClient::new(described, tags, client.labels().cloned()).unwrap();
            let deltas = [delta.to_bytes()];
            assert!(refused
                .apply(server.describe(), &deltas, Some(wrong))
                .is_err());
            client
                .apply(server.describe(), &[delta.to_bytes()], Some(table))
                .unwrap();
            ins.iter()
                .zip(ins_l)
                .for_each(|(&i, l)| _ = model.insert(i, l));
            rel.iter()
                .zip(rel_l)
                .for_each(|(&i, l)| _ = model.insert(i, l));
            del.iter().for_each(|i| _ = model.remove(i));
        }
        // A non-member's OPRF value opens no label of the table.
        let strangers: Vec<Vec<u8>> = (0..16)
            .map(|i| format!("stranger {i}").into_bytes())
            .collect();
        let refs: Vec<&[u8]> = strangers.iter().map(Vec::as_slice).collect();
        let lookup = client.lookup(&refs, &mut prg).unwrap();
        let response = server.oprf(&lookup.request(), &mut prg).unwrap();
        let outputs = (lookup.query)
            .finish(&refs, &response, Some(&client.descriptor().public))
            .unwrap();
        let table = client.labels().unwrap();
        for out in &outputs {
            for (_, sealed) in table.entries() {
                assert_eq!(open(&label_key(out), sealed, 16).unwrap(), None);
            }
        }
    }
}
