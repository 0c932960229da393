//! `ub-fhe`'s dataset as a server keeps and serves it: the database of its items under
//! its OPRF key — each item its value's [`item_hash`], its label sealed under the value's
//! [`label_key`] ([`entries`]) — kept as bytes between runs and changed by deltas of
//! such entries ([`FheDelta`]), which a publisher makes from what its store changed and a
//! server applies to the database it loaded: neither the key nor the items are needed to
//! bring a database up to date.

use super::database::{Change, Database};
use super::messages::{answer_to_bytes, max_key_bytes, request_from_bytes};
use super::params::FheSet;
use super::plaintexts::PlaintextBudget;
use super::query::answer;
use super::session::item_hash;
use crate::crypto::{Block, Prg};
use crate::he::params::tensor;
use crate::he::wire::wire_len;
use crate::net::{Reader, Writer};
use crate::unbalanced::labels::{label_key, seal, sealed_len};
use crate::{Error, Result};
use fhe::bfv::BfvParameters;
use std::sync::Arc;

/// An item as a database holds it: its hash, and its sealed label where the dataset's
/// items carry labels.
pub type Entry = (u128, Option<Vec<u8>>);

/// The entries of the items whose OPRF values are `outputs`, with their `labels` (one
/// each, in order, of at most ℓ bytes) where the items carry labels: each sealed under
/// its item's value with a fresh nonce from `prg`.
pub fn entries(
    outputs: &[[u8; 64]],
    labels: Option<(&[&[u8]], u8)>,
    prg: &mut Prg,
) -> Result<Vec<Entry>> {
    match labels {
        None => Ok(outputs.iter().map(|out| (item_hash(out), None)).collect()),
        Some((labels, _)) if labels.len() != outputs.len() => Err(Error::Usage(format!(
            "{} labels for {} items",
            labels.len(),
            outputs.len()
        ))),
        Some((labels, len)) => (outputs.iter().zip(labels))
            .map(|(out, label)| {
                let sealed = seal(&label_key(out), label, usize::from(len), prg)?;
                Ok((item_hash(out), Some(sealed)))
            })
            .collect(),
    }
}

/// A dataset's `ub-fhe` database, as a server answers from it.
#[derive(Clone)]
pub struct FheDataset {
    db: Database,
    par: Arc<BfvParameters>,
    seed: Block,
    label_len: Option<u8>,
    version: u64,
}

impl FheDataset {
    /// The database of `set` (locations by `seed`) holding `entries` (distinct; sealed
    /// labels exactly where `label_len`, ℓ, says the items carry them), at version 0.
    /// Built on the current rayon pool.
    pub fn build(
        set: FheSet,
        seed: Block,
        entries: &[Entry],
        label_len: Option<u8>,
    ) -> Result<FheDataset> {
        let par = checked(&set, entries.len() as u64)?;
        let hashes: Vec<u128> = entries.iter().map(|(h, _)| *h).collect();
        let sealed: Option<Vec<&[u8]>> = match label_len {
            None => None,
            Some(_) => Some(
                (entries.iter())
                    .map(|(_, l)| {
                        l.as_deref()
                            .ok_or_else(|| Error::Usage("a label for every item".into()))
                    })
                    .collect::<Result<_>>()?,
            ),
        };
        let labels = (sealed.as_deref()).zip(label_len.map(|len| sealed_len(usize::from(len))));
        let db = Database::build(set, seed, &hashes, labels)?;
        Ok(FheDataset {
            db,
            par,
            seed,
            label_len,
            version: 0,
        })
    }

    /// The database of `set` (locations by `seed`, labels of ℓ = `label_len`) at
    /// `version`, from its bytes ([`FheDataset::to_bytes`]): refused unless they read.
    pub fn from_bytes(
        set: FheSet,
        seed: Block,
        label_len: Option<u8>,
        version: u64,
        bytes: &[u8],
    ) -> Result<FheDataset> {
        let sealed = label_len.map(|len| sealed_len(usize::from(len)));
        let db = Database::from_bytes(set, seed, sealed, bytes)?;
        let par = checked(db.set(), db.len())?;
        Ok(FheDataset {
            db,
            par,
            seed,
            label_len,
            version,
        })
    }

    /// It and its clones to come keeping plaintexts between queries within `budget`
    /// (`None`: keeping none; a dataset built or read keeps none).
    pub fn keeping_plaintexts(mut self, budget: Option<Arc<PlaintextBudget>>) -> FheDataset {
        self.db.keep_plaintexts(budget);
        self
    }

    /// Makes the plaintexts its queries take, while its budget has room and `stop` says
    /// not to stop ([`Database::warm`]).
    pub fn warm(&self, stop: &dyn Fn() -> bool) -> Result<()> {
        self.db.warm(&*tensor(&self.par)?, stop)
    }

    /// Its database's bytes (its version is the caller's to keep).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.db.to_bytes()
    }

    /// Its version: one more with each delta applied.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The dataset after `deltas`, in order: each from the version before. Refused where
    /// a delta does not follow, changes an item it does not hold as it says, or inserts
    /// one it holds (the dataset it was is then gone: apply to a clone to keep it — a
    /// clone shares the database's columns until a delta changes them).
    pub fn apply(mut self, deltas: &[FheDelta]) -> Result<FheDataset> {
        for delta in deltas {
            if delta.from != self.version || delta.from.checked_add(1) != Some(delta.to) {
                return Err(Error::State(format!(
                    "a ub-fhe delta from version {} to {} applied at version {}",
                    delta.from, delta.to, self.version
                )));
            }
            let changes: Vec<Change> = (delta.removes.iter().map(|&h| Change::Remove(h)))
                .chain((delta.relabels.iter()).map(|(h, label)| Change::Relabel(*h, label)))
                .chain(
                    (delta.inserts.iter()).map(|(h, label)| Change::Insert(*h, label.as_deref())),
                )
                .collect();
            self.db.apply(&changes)?;
            self.version = delta.to;
        }
        checked(self.db.set(), self.db.len())?;
        Ok(self)
    }

    /// How many items it holds.
    pub fn len(&self) -> u64 {
        self.db.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.db.is_empty()
    }

    /// ℓ, where its items carry labels.
    pub fn label_len(&self) -> Option<u8> {
        self.label_len
    }

    /// Its parameter set.
    pub fn set(&self) -> &FheSet {
        self.db.set()
    }

    /// The seed choosing its items' locations.
    pub fn seed(&self) -> [u8; 16] {
        self.seed.to_le_bytes()
    }

    /// The most bundles an index holds: what bounds an answer.
    pub fn most_bundles(&self) -> u32 {
        let indices = 0..self.db.set().indices;
        indices
            .map(|i| self.db.bundles(i) as u32)
            .max()
            .unwrap_or(0)
    }

    /// The most items a query may hold: its set's cap.
    pub fn max_query(&self) -> u32 {
        self.db.set().max_query
    }

    /// The most bytes of a request it reads.
    pub fn max_request(&self) -> Result<u64> {
        max_request(self.db.set(), &self.par)
    }

    /// Its answer's bytes to the request `bytes`, evaluated on the current rayon pool:
    /// refused unless the request reads ([`request_from_bytes`]).
    pub fn answer(&self, bytes: &[u8]) -> Result<Vec<u8>> {
        let request = request_from_bytes(bytes, self.db.set(), &self.par)?;
        answer_to_bytes(&answer(&self.db, &self.par, &request)?, &self.par)
    }
}

/// The most bytes of a request of `set`: its ciphertexts and a relinearisation key where
/// the set needs one, each after its length.
fn max_request(set: &FheSet, par: &BfvParameters) -> Result<u64> {
    let cts = set.indices as usize * set.sources.len() * (4 + wire_len(par, 0, set.query_kind())?);
    let key = match set.relinearises() {
        true => max_key_bytes(par),
        false => 0,
    };
    Ok((5 + cts + 4 + key) as u64)
}

/// `set`'s BFV parameters, refused unless the set checks and holds `items`.
fn checked(set: &FheSet, items: u64) -> Result<Arc<BfvParameters>> {
    set.check()?;
    if items > set.max_items {
        return Err(Error::Usage(format!(
            "{items} items: the ub-fhe set {} holds at most {}",
            set.name, set.max_items
        )));
    }
    set.bfv.build()
}

/// What changed in a database between two versions: the items removed, those relabelled
/// (with their new sealed labels) and those inserted — applied in that order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FheDelta {
    /// The version it applies to.
    pub from: u64,
    /// The version it makes.
    pub to: u64,
    /// The items removed.
    pub removes: Vec<u128>,
    /// The items given new labels.
    pub relabels: Vec<(u128, Vec<u8>)>,
    /// The items inserted.
    pub inserts: Vec<Entry>,
}

impl FheDelta {
    /// Its bytes: the versions, then each part's count (u64) and entries (hash, then the
    /// sealed label where there is one).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new().u64(self.from).u64(self.to);
        w = w.u64(self.removes.len() as u64);
        for hash in &self.removes {
            w = w.bytes(&hash.to_le_bytes());
        }
        w = w.u64(self.relabels.len() as u64);
        for (hash, label) in &self.relabels {
            w = w.bytes(&hash.to_le_bytes()).bytes(label);
        }
        w = w.u64(self.inserts.len() as u64);
        for (hash, label) in &self.inserts {
            w = w
                .bytes(&hash.to_le_bytes())
                .bytes(label.as_deref().unwrap_or_default());
        }
        w.0
    }

    /// Reads a delta of a dataset whose sealed labels take `sealed` bytes (0 unlabeled):
    /// refused unless it reads exactly.
    pub fn from_bytes(bytes: &[u8], sealed: usize) -> Result<FheDelta> {
        let mut r = Reader::new(bytes, "a ub-fhe delta");
        let mut delta = FheDelta {
            from: r.u64()?,
            to: r.u64()?,
            ..FheDelta::default()
        };
        // Each count bounded by the bytes left before anything is allocated.
        let count = |r: &mut Reader, each: usize| -> Result<usize> {
            let n = usize::try_from(r.u64()?).unwrap_or(usize::MAX);
            match n.checked_mul(each).is_some_and(|b| b <= bytes.len()) {
                true => Ok(n),
                false => Err(Error::protocol("a ub-fhe delta", format!("{n} entries"))),
            }
        };
        for _ in 0..count(&mut r, 16)? {
            delta.removes.push(u128::from_le_bytes(r.array()?));
        }
        for _ in 0..count(&mut r, 16 + sealed)? {
            let hash = u128::from_le_bytes(r.array()?);
            delta.relabels.push((hash, r.bytes(sealed)?.to_vec()));
        }
        for _ in 0..count(&mut r, 16 + sealed)? {
            let hash = u128::from_le_bytes(r.array()?);
            let label = r.bytes(sealed)?;
            delta
                .inserts
                .push((hash, (sealed > 0).then(|| label.to_vec())));
        }
        r.finish()?;
        Ok(delta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unbalanced::fhe::query::tests::small_set;

    fn entry(i: u8, labeled: bool) -> Entry {
        let label = labeled.then(|| vec![i; sealed_len(4)]);
        (u128::from(i) << 64 | 0x5eed, label)
    }

    /// A database's bytes read back to the same database, after deltas too; a delta's
    /// bytes read back to the delta; deltas apply only in order, and only to items held
    /// as they say; damaged bytes are refused.
    #[test]
    fn datasets_and_deltas_cross_as_bytes() {
        for labeled in [false, true] {
            let len = labeled.then_some(4);
            let seed = Block::from(8);
            let first: Vec<Entry> = (0..200).map(|i| entry(i, labeled)).collect();
            let built = FheDataset::build(small_set(), seed, &first, len).unwrap();
            let bytes = built.to_bytes();
            let read = FheDataset::from_bytes(small_set(), seed, len, 0, &bytes).unwrap();
            assert_eq!(read.to_bytes(), bytes);

            let delta = FheDelta {
                from: 0,
                to: 1,
                removes: (0..50).map(|i| entry(i, labeled).0).collect(),
                relabels: match labeled {
                    true => vec![(entry(60, true).0, vec![9; sealed_len(4)])],
                    false => vec![],
                },
                inserts: (200..=255).map(|i| entry(i, labeled)).collect(),
            };
            let sealed = len.map_or(0, |l| sealed_len(usize::from(l)));
            let wire = delta.to_bytes();
            assert_eq!(FheDelta::from_bytes(&wire, sealed).unwrap(), delta);
            assert!(FheDelta::from_bytes(&wire[..wire.len() - 1], sealed).is_err());
            let after = read.clone().apply(std::slice::from_ref(&delta)).unwrap();
            assert_eq!((after.len(), after.version()), (206, 1));
            let bytes = after.to_bytes();
            let back = FheDataset::from_bytes(small_set(), seed, len, 1, &bytes).unwrap();
            assert_eq!(back.to_bytes(), bytes);

            assert!(
                after.clone().apply(std::slice::from_ref(&delta)).is_err(),
                "from version 0"
            );
            let again = FheDelta {
                from: 1,
                to: 2,
                ..delta.clone()
            };
            let inserts_again = FheDelta {
                from: 1,
                to: 2,
                removes: vec![],
                relabels: vec![],
                inserts: vec![entry(200, labeled)],
            };
            let refused = after.clone().apply(&[inserts_again]);
            assert!(refused.is_err(), "inserts what is held");
            assert!(after.apply(&[again]).is_err(), "removes what is gone");
            assert!(FheDataset::from_bytes(small_set(), seed, len, 0, &bytes[1..]).is_err());
            let other = (!labeled).then_some(4);
            assert!(FheDataset::from_bytes(small_set(), seed, other, 0, &bytes).is_err());
            // The last coefficient (a polynomial's top) made t.
            let mut damaged = bytes.clone();
            let at = damaged.len() - 4;
            damaged[at..].copy_from_slice(&65537u32.to_le_bytes());
            assert!(FheDataset::from_bytes(small_set(), seed, len, 0, &damaged).is_err());
            // Read under another seed, its items sit away from their locations.
            assert!(FheDataset::from_bytes(small_set(), Block::from(9), len, 0, &bytes).is_err());
        }
    }
}
