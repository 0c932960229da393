//! Cryptographic building blocks: 128-bit blocks, fixed-key AES, the AES-CTR PRG,
//! correlation-robust hashing, the random oracle, a polynomial universal hash, bit-matrix
//! transposition, and Ristretto255 with RFC 9497's oblivious PRF.

mod aes;
mod aes_many_keys;
mod blake3_lanes;
mod block;
mod cr_hash;
pub mod gf128;
pub mod group;
#[cfg(target_arch = "x86_64")]
pub(crate) mod lanes;
pub mod oprf;
mod poly_hash;
mod prg;
mod random_oracle;
mod sha256_lanes;
mod transpose;

pub use self::aes::Aes;
pub use aes_many_keys::encrypt_under_keys;
pub use block::{pack_rows, row_mask, unpack_row, Block, UNPACK_SLACK};
pub use cr_hash::{tccr_hash, tccr_hash_with};
pub use poly_hash::PolyHash;
pub use prg::Prg;
pub use random_oracle::{
    block_of_words, first_block, RandomOracle, Row512, RowDigest, RowHash, WideHash,
};
pub use transpose::transpose128;
