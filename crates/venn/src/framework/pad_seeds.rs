//! What a run in buckets keeps of each item for its repeated keys' later rows, which go
//! after the last bucket in one stream ([`crate::later_rows`]): the item's block and its
//! OPRF value with the session's pad key folded in, from which the later rows' tags and
//! pads are made as the run itself would have made them.

use crate::crypto::Block;

/// A session that is one bucket of a run in buckets: each party keeps its items' pad
/// seeds ([`PadSeeds`]) for the later rows that go after the last bucket, and a sender's
/// items carry none of their own (they would tell the peer how many hash into the bucket).
#[derive(Clone, Copy, Debug)]
pub struct InBuckets {
    /// The peer's rows over the whole run less the repeated rows it sent in earlier
    /// buckets: what bounds the repeated rows it sends in this one (the receiver's own,
    /// revealed to the sender with `--both`, go bucket by bucket: their number is of
    /// matched items, whose rows the sender gets anyway).
    pub peer_rows: u64,
}

/// Items' pad seeds: for item i, its block x_i and F(x_i) ⊕ w_p (the run's pad key
/// folded into its OPRF value). Secret as the OPRF values are: they never leave the
/// party, and the type shows no more than their number.
#[derive(Clone, Default)]
pub struct PadSeeds {
    pub(crate) x: Vec<Block>,
    pub(crate) v: Vec<Block>,
}

impl PadSeeds {
    /// Seeds of the items with blocks `x` and OPRF values `v`, under pad key `key`.
    pub(crate) fn new(key: Block, x: &[Block], v: &[Block]) -> Self {
        PadSeeds {
            x: x.to_vec(),
            v: v.iter().map(|&v| v ^ key).collect(),
        }
    }

    /// How many items' seeds.
    pub fn len(&self) -> usize {
        self.x.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }

    /// Appends item `i`'s seed of `other`.
    pub fn push_from(&mut self, other: &PadSeeds, i: usize) {
        self.x.push(other.x[i]);
        self.v.push(other.v[i]);
    }

    /// The seeds as bytes (32 an item), to hand to another process of the same party
    /// (a run's lanes to its coordinator): they are as secret as the OPRF values.
    pub fn to_bytes(&self) -> Vec<u8> {
        (self.x.iter().zip(&self.v))
            .flat_map(|(x, v)| [x.to_le_bytes(), v.to_le_bytes()])
            .flatten()
            .collect()
    }

    /// Seeds [`PadSeeds::to_bytes`] made; `None` for a length not of whole seeds.
    pub fn from_bytes(bytes: &[u8]) -> Option<PadSeeds> {
        if !bytes.len().is_multiple_of(32) {
            return None;
        }
        let block = |b: &[u8]| Block::from_le_bytes(b.try_into().expect("16 bytes"));
        let (x, v) = (bytes.chunks_exact(32))
            .map(|s| (block(&s[..16]), block(&s[16..])))
            .unzip();
        Some(PadSeeds { x, v })
    }

    /// The memory the seeds hold, in bytes.
    pub fn memory(&self) -> u64 {
        16 * (self.x.capacity() + self.v.capacity()) as u64
    }
}

impl std::fmt::Debug for PadSeeds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PadSeeds({} items)", self.len())
    }
}
