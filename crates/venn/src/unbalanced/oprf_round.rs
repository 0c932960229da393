//! The OPRF round every unbalanced query starts with: the client sends its items blinded,
//! the server answers under the dataset's key of the named epoch (in the verifiable mode
//! with a proof against the key it published), the client unblinds.
//!
//! Messages (integers little-endian): a request is `epoch: u32 ‖ count: u32 ‖ count
//! elements`; a response is `epoch: u32 ‖ count: u32 ‖ count elements ‖ proof` (the
//! proof's 64 bytes in the verifiable mode only). Each length is checked against the
//! count, and the count against the server's cap, before anything is allocated; every
//! element is read as RFC 9497 says (canonical, not the identity). A server never answers
//! part of a request.
//!
//! What the server learns of a query is its count: clients pad theirs with random items
//! up to the next of a few sizes ([`padded_count`]), so that only the size class shows;
//! the padding counts against the client's limit like any item.

use crate::crypto::oprf::{
    read_elements, Blinded, Elements, Mode, ServerKey, ELEMENT_BYTES, OUTPUT_BYTES, PROOF_BYTES,
};
use crate::crypto::Prg;
use crate::{Error, Result};

/// The bytes before a message's elements: the epoch and the count.
const HEAD: usize = 8;

/// The sizes a client's query is padded to (the last one and its multiples beyond it).
pub const PADDED_SIZES: [u32; 4] = [1, 16, 256, 4096];

/// The count a query of `items` items is sent as: the next of [`PADDED_SIZES`], or
/// beyond the last the next multiple of it.
pub fn padded_count(items: u32) -> u32 {
    let last = PADDED_SIZES[PADDED_SIZES.len() - 1];
    match PADDED_SIZES.iter().find(|&&size| size >= items) {
        Some(&size) => size,
        None => items.div_ceil(last).saturating_mul(last),
    }
}

/// Why a server refuses a request: what the client can act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The dataset's key is of another epoch now: sync, then ask again.
    EpochChanged {
        /// The epoch the server answers under.
        current: u32,
    },
    /// More elements than the server answers at once.
    TooManyItems {
        /// The most a request may hold.
        max: u32,
    },
    /// The client has used its evaluations for now.
    RateLimited {
        /// Seconds until the request would be answered.
        retry_after: u64,
    },
    /// The request is not a request.
    Malformed(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::EpochChanged { current } => write!(
                f,
                "the dataset's key changed (epoch {current} now): sync and query again"
            ),
            Refusal::TooManyItems { max } => {
                write!(f, "a query holds at most {max} items (padding included)")
            }
            Refusal::RateLimited { retry_after } => write!(
                f,
                "this client's OPRF evaluations are used up for now: retry in {retry_after} s"
            ),
            Refusal::Malformed(why) => write!(f, "a malformed OPRF request: {why}"),
        }
    }
}

impl From<Refusal> for Error {
    fn from(refusal: Refusal) -> Error {
        Error::Protocol {
            expected: "an answered OPRF request".into(),
            got: refusal.to_string(),
        }
    }
}

/// The epoch and count at the head of a message, checked: the count at most `max`
/// (else [`Refusal::TooManyItems`]), the body exactly its elements and `extra` bytes.
fn head(bytes: &[u8], max: u32, extra: usize) -> std::result::Result<(u32, u32), Refusal> {
    let (Some(epoch), Some(count)) = (bytes.get(..4), bytes.get(4..HEAD)) else {
        let short = format!("{} bytes, shorter than its head", bytes.len());
        return Err(Refusal::Malformed(short));
    };
    let epoch = u32::from_le_bytes(epoch.try_into().expect("4 bytes"));
    let count = u32::from_le_bytes(count.try_into().expect("4 bytes"));
    if count > max {
        return Err(Refusal::TooManyItems { max });
    }
    let body = count as usize * ELEMENT_BYTES + extra;
    if bytes.len() - HEAD != body {
        let unlike = format!("{count} elements announced in {} bytes", bytes.len() - HEAD);
        return Err(Refusal::Malformed(unlike));
    }
    Ok((epoch, count))
}

/// A message: the head, then the elements, then `tail`.
fn message(epoch: u32, elements: &Elements, tail: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEAD + elements.len() * ELEMENT_BYTES + tail.len());
    out.extend_from_slice(&epoch.to_le_bytes());
    out.extend_from_slice(&(elements.len() as u32).to_le_bytes());
    for e in elements.encoded() {
        out.extend_from_slice(e);
    }
    out.extend_from_slice(tail);
    out
}

/// A client's side of the round: its items blinded, for the key of `epoch`.
pub struct Query {
    epoch: u32,
    blinded: Blinded,
}

impl Query {
    /// Blinds `items` (padding them first is the caller's: [`padded_count`]) for the
    /// dataset's key of `epoch`.
    pub fn new(mode: Mode, epoch: u32, items: &[&[u8]], prg: &mut Prg) -> Result<Query> {
        if u32::try_from(items.len()).is_err() {
            return Err(Error::Usage("a query of more than 2^32 items".into()));
        }
        Ok(Query {
            epoch,
            blinded: Blinded::new(mode, items, prg)?,
        })
    }

    /// The request to send.
    pub fn request(&self) -> Vec<u8> {
        message(self.epoch, &self.blinded.elements, &[])
    }

    /// Each item's F_k(x) from the server's `response` (in the verifiable mode checked
    /// against `public`, the key the dataset published): refused if it answers another
    /// epoch, another count, or does not read.
    pub fn finish(
        &self,
        items: &[&[u8]],
        response: &[u8],
        public: Option<&[u8; 32]>,
    ) -> Result<Vec<[u8; OUTPUT_BYTES]>> {
        let (mode, count) = (self.blinded.mode(), self.blinded.elements.len() as u32);
        let extra = match mode {
            Mode::Oprf => 0,
            Mode::Voprf => PROOF_BYTES,
        };
        let (epoch, got) = head(response, count, extra)
            .map_err(|why| Error::protocol("an OPRF response", why.to_string()))?;
        if epoch != self.epoch || got != count {
            return Err(Error::protocol(
                format!("{count} answers under epoch {}", self.epoch),
                format!("{got} under epoch {epoch}"),
            ));
        }
        let elements_end = HEAD + count as usize * ELEMENT_BYTES;
        let evaluated = read_elements(&response[HEAD..elements_end], count as usize)?;
        let proof: Option<[u8; PROOF_BYTES]> = (mode == Mode::Voprf).then(|| {
            response[elements_end..]
                .try_into()
                .expect("the proof's bytes")
        });
        let proven = match (&proof, public) {
            (Some(proof), Some(public)) => Some((proof, public)),
            (Some(_), None) => {
                return Err(Error::Usage(
                    "the verifiable mode checks answers against the dataset's public key".into(),
                ))
            }
            (None, _) => None,
        };
        self.blinded.finalize(items, &evaluated, proven)
    }
}

/// How many elements `request` asks to be evaluated (its padding included), checked as
/// [`answer`] checks it: what a server counts against the client's evaluations before it
/// answers.
pub fn requested(request: &[u8], max: u32) -> std::result::Result<u32, Refusal> {
    head(request, max, 0).map(|(_, count)| count)
}

/// The server's answer to a `request` under `key` of epoch `epoch`, at most `max` elements
/// at once, or why it is refused (before any element is evaluated).
pub fn answer(
    key: &ServerKey,
    epoch: u32,
    request: &[u8],
    max: u32,
    prg: &mut Prg,
) -> std::result::Result<Vec<u8>, Refusal> {
    let (asked, count) = head(request, max, 0)?;
    if asked != epoch {
        return Err(Refusal::EpochChanged { current: epoch });
    }
    let blinded = read_elements(&request[HEAD..], count as usize)
        .map_err(|e| Refusal::Malformed(e.to_string()))?;
    let (evaluated, proof) = key.blind_evaluate(&blinded, prg);
    Ok(message(
        epoch,
        &evaluated,
        proof.as_ref().map_or(&[][..], |p| &p[..]),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Block;

    fn items(n: usize) -> Vec<Vec<u8>> {
        (0..n).map(|i| format!("item {i}").into_bytes()).collect()
    }

    /// A padded query's outputs are the server's own evaluations of the items, in both
    /// modes; a verifiable answer checks against the published key only.
    #[test]
    fn a_round_gives_the_servers_evaluations() {
        let mut prg = Prg::from_seed(Block::from(3));
        assert_eq!(
            [0, 1, 2, 16, 17, 4096, 4097].map(padded_count),
            [1, 1, 16, 16, 256, 4096, 8192]
        );
        let owned = items(padded_count(10) as usize);
        let items: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        for mode in [Mode::Oprf, Mode::Voprf] {
            let key = ServerKey::random(mode, &mut prg);
            let query = Query::new(mode, 5, &items, &mut prg).unwrap();
            let response = answer(&key, 5, &query.request(), 4096, &mut prg).unwrap();
            let public = key.public();
            let outputs = query.finish(&items, &response, Some(&public)).unwrap();
            for (item, output) in items.iter().zip(&outputs) {
                assert_eq!(*output, key.evaluate(item).unwrap());
            }
            if mode == Mode::Voprf {
                let other = ServerKey::random(mode, &mut prg).public();
                assert!(query.finish(&items, &response, Some(&other)).is_err());
            }
        }
    }

    /// Each malformed or unanswerable request is refused with what the client can act
    /// on, and nothing evaluated: a stale epoch, a count above the cap (also one whose
    /// body could not hold it), a body unlike its count, a bad element.
    #[test]
    fn requests_are_refused_before_any_work() {
        let mut prg = Prg::from_seed(Block::from(4));
        let key = ServerKey::random(Mode::Oprf, &mut prg);
        let owned = items(16);
        let items: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        let request = Query::new(Mode::Oprf, 2, &items, &mut prg)
            .unwrap()
            .request();
        let refused = |request: &[u8], max: u32| {
            let mut prg = Prg::from_seed(Block::from(5));
            answer(&key, 2, request, max, &mut prg).unwrap_err()
        };
        assert!(answer(&key, 3, &request, 16, &mut prg)
            .is_err_and(|r| r == Refusal::EpochChanged { current: 3 }));
        assert_eq!(refused(&request, 15), Refusal::TooManyItems { max: 15 });
        let mut huge = request[..HEAD].to_vec();
        huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(refused(&huge, 4096), Refusal::TooManyItems { max: 4096 });
        for bad in [
            &request[..request.len() - 1],
            &request[..HEAD - 1],
            &[request.as_slice(), &[0]].concat(),
        ] {
            assert!(matches!(refused(bad, 4096), Refusal::Malformed(_)));
        }
        let mut identity = request.clone();
        identity[HEAD..HEAD + 32].fill(0);
        assert!(matches!(refused(&identity, 4096), Refusal::Malformed(_)));
        // A response to another epoch or of another count is refused by the client.
        let query = Query::new(Mode::Oprf, 2, &items, &mut prg).unwrap();
        let response = answer(&key, 2, &query.request(), 16, &mut prg).unwrap();
        let mut stale = response.clone();
        stale[0] ^= 1;
        assert!(query.finish(&items, &stale, None).is_err());
        assert!(query
            .finish(&items, &response[..response.len() - 32], None)
            .is_err());
    }
}
