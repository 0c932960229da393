//! Hash tables for PSI: elements grouped by bucket in parallel, three-way cuckoo hashing with a stash (the receiver's side of
//! KKRT16 Fig. 3), Bloom-filter hashing, simple hashing with phasing (RR17 dual execution),
//! the tables that match the sender's values against the receiver's (whole, or by
//! partitions for a partitioned join), and the
//! encode-commit receiver's tag multimap.

mod bloom;
mod buckets;
mod cuckoo;
mod match_table;
mod partitions;
pub mod simple_hash;
mod tag_table;

pub use bloom::{bloom_bits, BloomHash};
pub use buckets::Buckets;
pub use cuckoo::{
    cuckoo_insert, pssz15_stash_size, stashless_bins, stashless_expansion, CuckooHash, CuckooTable,
    HASHES, SMALLEST_STASHLESS,
};
pub use match_table::MatchTable;
pub use partitions::Partitions;
pub use tag_table::TagTable;
