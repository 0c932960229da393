//! Transposition of 128×128 bit matrices, block-wise (Eklundh's recursive swap), never
//! bit by bit.

use super::Block;

/// Transposes the 128×128 bit matrix `m` in place: afterwards bit `c` of row `r` is what
/// bit `r` of row `c` was.
///
/// Seven rounds; round `j` swaps the off-diagonal `j×j` sub-blocks of every `2j×2j` block
/// with one masked shift-xor per row pair.
pub fn transpose128(m: &mut [Block; 128]) {
    const MASKS: [(usize, Block); 7] = [
        (64, 0x0000_0000_0000_0000_ffff_ffff_ffff_ffff),
        (32, 0x0000_0000_ffff_ffff_0000_0000_ffff_ffff),
        (16, 0x0000_ffff_0000_ffff_0000_ffff_0000_ffff),
        (8, 0x00ff_00ff_00ff_00ff_00ff_00ff_00ff_00ff),
        (4, 0x0f0f_0f0f_0f0f_0f0f_0f0f_0f0f_0f0f_0f0f),
        (2, 0x3333_3333_3333_3333_3333_3333_3333_3333),
        (1, 0x5555_5555_5555_5555_5555_5555_5555_5555),
    ];
    for (j, mask) in MASKS {
        let mut i = 0;
        while i < 128 {
            for r in i..i + j {
                let t = ((m[r] >> j) ^ m[r + j]) & mask;
                m[r + j] ^= t;
                m[r] ^= t << j;
            }
            i += 2 * j;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Prg;

    #[test]
    fn matches_bitwise_transpose() {
        let mut prg = Prg::from_seed(7);
        let mut m = [0 as Block; 128];
        prg.fill_blocks(&mut m);
        let orig = m;
        transpose128(&mut m);
        for r in 0..128 {
            for c in 0..128 {
                assert_eq!((m[r] >> c) & 1, (orig[c] >> r) & 1, "bit ({r},{c})");
            }
        }
        transpose128(&mut m);
        assert_eq!(m, orig, "transpose is an involution");
    }
}
