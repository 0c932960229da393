//! `ub-cache`, the OPRF-cache mode (Kales et al., USENIX Security 2019): the server
//! publishes the τ-bit tags of F_k(y) for its whole set once ([`TagSet`]), a client
//! downloads them and checks their digest, and each query is one OPRF round in the
//! verifiable mode ([`super::oprf_round`]) after which the client looks its items' tags up
//! locally — the server learns the query's padded size, nothing of its result.
//!
//! Who learns what: the client learns X ∩ Y (and, at most 2^-40 a query, a false
//! positive), the server's set size exactly, and the tags of every server item (useless
//! without k: each candidate costs an OPRF evaluation, which the server limits); the
//! server learns the padded count of each query and when it comes.

use super::oprf_round::{answer, padded_count, Query, Refusal};
use super::tag_set::{tag_bits, tag_of, TagSet};
use crate::crypto::oprf::{Mode, ServerKey};
use crate::crypto::Prg;
use crate::{Error, Result};
use rayon::prelude::*;

/// What a server publishes of a dataset, for its clients to check what they download and
/// the answers they get.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Descriptor {
    /// The key's epoch, named in every OPRF round.
    pub epoch: u32,
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
}

/// A dataset's server: its key, its tags, how large a query it answers.
pub struct CacheServer {
    key: ServerKey,
    epoch: u32,
    tags: TagSet,
    max_query: u32,
}

impl CacheServer {
    /// The server of `items` under `key` (the verifiable mode's) of `epoch`, answering
    /// queries of up to `max_query` items; its tags sized for a set of up to `max_items`.
    /// The items are evaluated on the current rayon pool's threads.
    pub fn new(
        key: ServerKey,
        epoch: u32,
        items: &[&[u8]],
        max_items: u64,
        max_query: u32,
    ) -> Result<CacheServer> {
        if key.mode() != Mode::Voprf {
            return Err(Error::Usage(
                "ub-cache answers in the verifiable mode: its key is a VOPRF key".into(),
            ));
        }
        let tau = tag_bits(max_items.max(items.len() as u64), u64::from(max_query));
        let tags = items
            .par_iter()
            .map(|item| Ok(tag_of(&key.evaluate(item)?, tau)))
            .collect::<Result<Vec<u128>>>()?;
        Ok(CacheServer {
            key,
            epoch,
            tags: TagSet::new(tau, tags)?,
            max_query,
        })
    }

    /// What it publishes.
    pub fn describe(&self) -> Descriptor {
        Descriptor {
            epoch: self.epoch,
            public: self.key.public(),
            len: self.tags.len(),
            tau: self.tags.tau(),
            digest: self.tags.digest(),
            max_query: self.max_query,
        }
    }

    /// The tag set's wire form, for a client to download.
    pub fn tags(&self) -> Vec<u8> {
        self.tags.to_bytes()
    }

    /// Its answer to an OPRF `request`, or why not.
    pub fn oprf(&self, request: &[u8], prg: &mut Prg) -> std::result::Result<Vec<u8>, Refusal> {
        answer(&self.key, self.epoch, request, self.max_query, prg)
    }
}

/// A client holding a dataset's tags, checked against what the server published.
pub struct CacheClient {
    descriptor: Descriptor,
    tags: TagSet,
}

impl CacheClient {
    /// The client of the dataset `descriptor` describes, from the tag set `tags`
    /// downloaded: refused unless it reads and is the set described (count, τ, digest).
    pub fn new(descriptor: Descriptor, tags: &[u8]) -> Result<CacheClient> {
        let set = TagSet::from_bytes(tags, descriptor.len)?;
        if set.len() != descriptor.len
            || set.tau() != descriptor.tau
            || set.digest() != descriptor.digest
        {
            return Err(Error::protocol(
                "the tag set the dataset published",
                "another set (its count, width or digest differs)",
            ));
        }
        Ok(CacheClient {
            descriptor,
            tags: set,
        })
    }

    /// Starts a lookup of `items`: padded with random items to [`padded_count`], blinded.
    pub fn lookup(&self, items: &[&[u8]], prg: &mut Prg) -> Result<Lookup> {
        let real = items.len();
        let count = u32::try_from(real)
            .map(padded_count)
            .ok()
            .filter(|&c| c <= self.descriptor.max_query)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "a query of {real} items: the dataset answers at most {} at once",
                    self.descriptor.max_query
                ))
            })?;
        let mut padded: Vec<Vec<u8>> = items.iter().map(|i| i.to_vec()).collect();
        padded.resize_with(count as usize, || {
            let mut dummy = vec![0u8; 32];
            prg.fill_bytes(&mut dummy);
            dummy
        });
        let refs: Vec<&[u8]> = padded.iter().map(Vec::as_slice).collect();
        let query = Query::new(Mode::Voprf, self.descriptor.epoch, &refs, prg)?;
        Ok(Lookup {
            query,
            padded,
            real,
        })
    }

    /// Whether each item of `lookup` is in the server's set, from the server's
    /// `response` (its proof checked against the published key).
    pub fn finish(&self, lookup: &Lookup, response: &[u8]) -> Result<Vec<bool>> {
        let refs: Vec<&[u8]> = lookup.padded.iter().map(Vec::as_slice).collect();
        let outputs = lookup
            .query
            .finish(&refs, response, Some(&self.descriptor.public))?;
        Ok((outputs.iter().take(lookup.real))
            .map(|out| self.tags.contains(tag_of(out, self.descriptor.tau)))
            .collect())
    }
}

/// A lookup under way: the request to send, and what reading its answer takes.
pub struct Lookup {
    query: Query,
    padded: Vec<Vec<u8>>,
    real: usize,
}

impl Lookup {
    /// The OPRF request to send.
    pub fn request(&self) -> Vec<u8> {
        self.query.request()
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
        let client = CacheClient::new(server.describe(), &server.tags()).unwrap();
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
                let found = client.finish(&lookup, &response).unwrap();
                let expected: Vec<bool> = items.iter().map(|i| members.contains(i)).collect();
                assert_eq!(found, expected, "m {m}, shared {shared}");
            }
        }
    }

    /// A client refuses a tag set other than the one described, a query above the
    /// dataset's cap, and answers under another key; a server refuses a base-mode key.
    #[test]
    fn what_does_not_match_the_description_is_refused() {
        let mut prg = Prg::from_seed(Block::from(22));
        let items: Vec<&[u8]> = vec![b"a", b"b", b"c"];
        let server = CacheServer::new(key(2), 1, &items, 16, 16).unwrap();
        let mut described = server.describe();
        described.digest[0] ^= 1;
        assert!(CacheClient::new(described, &server.tags()).is_err());
        let other = CacheServer::new(key(3), 1, &[b"a"], 16, 16).unwrap();
        assert!(CacheClient::new(server.describe(), &other.tags()).is_err());
        let client = CacheClient::new(server.describe(), &server.tags()).unwrap();
        let many: Vec<&[u8]> = vec![b"x"; 17];
        assert!(client.lookup(&many, &mut prg).is_err());
        // Answers from another key (the same tags, another VOPRF key) fail their proof.
        let lookup = client.lookup(&[b"a"], &mut prg).unwrap();
        let impostor = CacheServer::new(key(4), 1, &items, 16, 16).unwrap();
        let response = impostor.oprf(&lookup.request(), &mut prg).unwrap();
        assert!(matches!(
            client.finish(&lookup, &response),
            Err(Error::CheatingDetected(_))
        ));
        let base = ServerKey::random(Mode::Oprf, &mut prg);
        assert!(CacheServer::new(base, 1, &items, 16, 16).is_err());
    }
}
