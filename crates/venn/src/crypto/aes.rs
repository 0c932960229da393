//! AES-128 on [`Block`]s through the RustCrypto `aes` crate (AES-NI chosen at run time).
//!
//! Always encrypt in batches: the crate pipelines eight blocks per call through AES-NI,
//! so per-block calls in a hot loop cost several times more.

use super::Block;
use ::aes::cipher::{BlockEncrypt, KeyInit};

/// An expanded AES-128 key.
#[derive(Clone)]
pub struct Aes(::aes::Aes128);

impl Aes {
    /// Expands `key`.
    pub fn new(key: Block) -> Self {
        Aes(::aes::Aes128::new(&key.to_le_bytes().into()))
    }

    /// The fixed public key used for fixed-key-AES hashing (the π of GKWY20).
    pub fn fixed() -> &'static Aes {
        static FIXED: std::sync::OnceLock<Aes> = std::sync::OnceLock::new();
        FIXED.get_or_init(|| Aes::new(0x5665_6e6e_2066_6978_6564_2d6b_6579_2121))
    }

    /// Encrypts `blocks` in place.
    #[inline]
    pub fn encrypt_blocks(&self, blocks: &mut [Block]) {
        // SAFETY: `aes::Block` is `GenericArray<u8, U16>`, a transparent wrapper of
        // `[u8; 16]`: same size as `u128`, and its alignment (1) is weaker. On a
        // little-endian machine the bytes are the block's wire encoding.
        let view = unsafe {
            std::slice::from_raw_parts_mut(blocks.as_mut_ptr().cast::<::aes::Block>(), blocks.len())
        };
        self.0.encrypt_blocks(view);
    }

    /// Writes the encryptions of `input` to `output` (same length).
    #[inline]
    pub fn encrypt_blocks_to(&self, input: &[Block], output: &mut [Block]) {
        assert_eq!(input.len(), output.len());
        // SAFETY: as in `encrypt_blocks`.
        let (i, o) = unsafe {
            (
                std::slice::from_raw_parts(input.as_ptr().cast::<::aes::Block>(), input.len()),
                std::slice::from_raw_parts_mut(
                    output.as_mut_ptr().cast::<::aes::Block>(),
                    output.len(),
                ),
            )
        };
        self.0.encrypt_blocks_b2b(i, o).expect("equal lengths");
    }

    /// Encrypts one block. Avoid in hot loops; see the module docs.
    #[inline]
    pub fn encrypt(&self, block: Block) -> Block {
        let mut b = [block];
        self.encrypt_blocks(&mut b);
        b[0]
    }
}
