//! The 128-bit block every hot loop works on.

#[cfg(not(target_endian = "little"))]
compile_error!("Venn's wire format and AES batching assume a little-endian machine");

/// A 128-bit block. Bit `i` is `(b >> i) & 1`; on the wire it is 16 little-endian bytes.
pub type Block = u128;

/// Bytes of slack [`unpack_row`] may read past the last row.
pub const UNPACK_SLACK: usize = 64;

/// Writes the first `row_bytes` bytes of each row (`w` blocks a row, `row_bytes ≤ 16·w`)
/// back to back into `out`, with fixed-size block copies only.
pub fn pack_rows(rows: &[Block], w: usize, row_bytes: usize, out: &mut Vec<u8>) {
    assert!(row_bytes <= 16 * w && w > 0);
    let n = rows.len() / w;
    // Every byte is written below: only bytes `out` never held are zeroed (callers reuse
    // their frames).
    out.truncate(n * row_bytes + 16 * w);
    out.resize(n * row_bytes + 16 * w, 0);
    for (r, row) in rows.chunks_exact(w).enumerate() {
        // Each row writes 16·w bytes; the next row overwrites the tail past row_bytes.
        for (i, b) in row.iter().enumerate() {
            let at = r * row_bytes + 16 * i;
            out[at..at + 16].copy_from_slice(&b.to_le_bytes());
        }
    }
    out.truncate(n * row_bytes);
}

/// The masks that keep the first `row_bytes` bytes of a `w`-block row.
pub fn row_mask(w: usize, row_bytes: usize) -> Vec<Block> {
    (0..w)
        .map(|i| {
            let bytes = row_bytes.saturating_sub(16 * i).min(16);
            if bytes == 16 {
                Block::MAX
            } else {
                (1 << (8 * bytes)) - 1
            }
        })
        .collect()
}

/// Reads row `r` written by [`pack_rows`] from `bytes`, which must extend
/// [`UNPACK_SLACK`] bytes past the packed rows; `mask` comes from [`row_mask`].
#[inline]
pub fn unpack_row(bytes: &[u8], r: usize, row_bytes: usize, mask: &[Block], out: &mut [Block]) {
    for (i, (o, m)) in out.iter_mut().zip(mask).enumerate() {
        let at = r * row_bytes + 16 * i;
        *o = u128::from_le_bytes(bytes[at..at + 16].try_into().expect("16 bytes")) & m;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_then_unpack_keeps_exactly_the_row_bytes() {
        let rows: Vec<Block> = (0..12u128)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834))
            .collect();
        // One buffer for every case, as callers reuse theirs: what it held before (other
        // rows, the 0xff slack) must not show through.
        let mut packed = vec![0xaa; 1000];
        for (w, row_bytes) in [(4, 56), (1, 7), (1, 16), (3, 33), (1, 7)] {
            pack_rows(&rows[..rows.len() / w * w], w, row_bytes, &mut packed);
            assert_eq!(packed.len(), rows.len() / w * row_bytes);
            packed.resize(packed.len() + UNPACK_SLACK, 0xff);
            let mask = row_mask(w, row_bytes);
            let mut out = vec![0; w];
            for (r, row) in rows.chunks_exact(w).enumerate() {
                unpack_row(&packed, r, row_bytes, &mask, &mut out);
                let want: Vec<Block> = row.iter().zip(&mask).map(|(b, m)| b & m).collect();
                assert_eq!(out, want, "w={w} row_bytes={row_bytes} row {r}");
            }
        }
    }
}
