//! `ub-fhe` in a session, the client's side: a query of its items' OPRF values, and what
//! it reads from the answer (the server's is [`super::dataset`]).
//!
//! A query follows an OPRF round in the same session ([`super::super::link`]): the
//! database holds each item as its OPRF value's [`item_hash`] (with its label sealed under
//! the value's [`label_key`]), so a client can ask only of items whose values it was given
//! — evaluations the server counts and limits — and a label opens only under its own
//! item's value (a false positive's opens none). The set is named by the server and
//! taken by the client only from Venn's own checked [`sets`].

use super::messages::{answer_from_bytes, request_to_bytes};
use super::params::{sets, FheSet};
use super::query::{query, Pending};
use crate::crypto::{Block, Prg};
use crate::he::wire::{wire_len, Kind};
use crate::unbalanced::labels::{label_key, open, sealed_len, MAX_LABEL};
use crate::{Error, Result};
use fhe::bfv::BfvParameters;
use std::sync::Arc;

/// An item's 128-bit hash in the database: bytes 0..16 of its OPRF value, apart from its
/// label key's (16..48) and its tag's (48..64).
pub fn item_hash(output: &[u8; 64]) -> u128 {
    u128::from_le_bytes(output[..16].try_into().expect("16 bytes"))
}

/// The set named `name`, of Venn's.
pub fn set_named(name: &str) -> Result<FheSet> {
    (sets().into_iter().find(|s| s.name == name)).ok_or_else(|| {
        Error::protocol(
            "one of Venn's ub-fhe parameter sets",
            format!("the set {name:?}"),
        )
    })
}

/// A client's query under way: what reading its answer takes.
pub struct FheQuery {
    set: FheSet,
    par: Arc<BfvParameters>,
    pending: Pending,
    /// The items' hashes as asked: sorted, each once (the pending query's order).
    hashes: Vec<u128>,
    outputs: Vec<[u8; 64]>,
    bundles: u32,
    label_len: Option<u8>,
}

impl FheQuery {
    /// The query of the items whose OPRF values are `outputs` (at most the set's cap) of
    /// the database a server described — its set's name `set`, its location seed `seed`,
    /// at most `bundles` bundles an index, labels of ℓ = `label_len` bytes if its items
    /// carry any — and its request's bytes.
    pub fn new(
        (set, seed, bundles): (&str, [u8; 16], u32),
        label_len: Option<u8>,
        outputs: &[[u8; 64]],
        prg: &mut Prg,
    ) -> Result<(FheQuery, Vec<u8>)> {
        let set = set_named(set)?;
        // A database of the set's most items holds at most this many bundles an index
        // (with overwhelming probability; twice for room): what bounds the answer read.
        let most = set.bundles_for(set.max_items).saturating_mul(2);
        if u64::from(bundles) > most {
            return Err(Error::protocol(
                format!("at most {most} bundles an index in the set {}", set.name),
                format!("{bundles} bundles"),
            ));
        }
        if label_len.is_some_and(|len| usize::from(len) > MAX_LABEL) {
            return Err(Error::protocol(
                format!("labels of at most {MAX_LABEL} bytes"),
                format!("{label_len:?}"),
            ));
        }
        let par = set.bfv.build()?;
        let mut hashes: Vec<u128> = outputs.iter().map(item_hash).collect();
        // An item asked twice is placed once.
        hashes.sort_unstable();
        hashes.dedup();
        let seed = Block::from_le_bytes(seed);
        let (pending, request) = query(&set, &par, seed, &hashes, prg)?;
        let bytes = request_to_bytes(&request, &set, &par)?;
        let query = FheQuery {
            pending,
            hashes,
            outputs: outputs.to_vec(),
            bundles,
            label_len,
            set,
            par,
        };
        Ok((query, bytes))
    }

    /// The most bytes of an answer: every index's bundles, each its result and label
    /// parts, each after its length.
    pub fn max_answer(&self) -> Result<u64> {
        let ct = 4 + wire_len(&self.par, self.par.max_level(), self.kind())? as u64;
        let parts = 1 + self.parts() as u64;
        let per_index = 4 + u64::from(self.bundles) * parts * ct;
        Ok(u64::from(self.set.indices) * per_index)
    }

    fn kind(&self) -> Kind {
        Kind::Compact {
            keep: super::messages::answer_bits(&self.par),
        }
    }

    /// The label parts of a bundle.
    fn parts(&self) -> usize {
        self.set.label_parts(self.sealed_len())
    }

    /// The bytes of a sealed label (0 unlabeled).
    fn sealed_len(&self) -> usize {
        self.label_len.map_or(0, |len| sealed_len(usize::from(len)))
    }

    /// Which of the query's items the database holds, each with its label (empty where
    /// its items carry none), from the answer's `bytes`: refused unless they read. A
    /// match whose label does not open under its item's value is a false positive's: no
    /// match.
    pub fn finish(&self, bytes: &[u8]) -> Result<Vec<Option<Vec<u8>>>> {
        let answer = answer_from_bytes(bytes, &self.set, &self.par, self.parts(), self.bundles)?;
        let found = self
            .pending
            .matches(&self.set, &answer, self.sealed_len())?;
        (self.outputs.iter())
            .map(|out| {
                let at = (self.hashes)
                    .binary_search(&item_hash(out))
                    .expect("each item asked");
                match (&found[at], self.label_len) {
                    (None, _) => Ok(None),
                    (Some(_), None) => Ok(Some(Vec::new())),
                    (Some(sealed), Some(len)) => open(&label_key(out), sealed, usize::from(len)),
                }
            })
            .collect()
    }
}
