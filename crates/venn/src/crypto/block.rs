//! The 128-bit block every hot loop works on.

#[cfg(not(target_endian = "little"))]
compile_error!("Venn's wire format and AES batching assume a little-endian machine");

/// A 128-bit block. Bit `i` is `(b >> i) & 1`; on the wire it is 16 little-endian bytes.
pub type Block = u128;

/// Reads a block from up to 16 little-endian bytes (missing high bytes are zero).
#[inline]
pub fn block_from_le(bytes: &[u8]) -> Block {
    debug_assert!(bytes.len() <= 16);
    let mut b = [0u8; 16];
    b[..bytes.len()].copy_from_slice(bytes);
    u128::from_le_bytes(b)
}
