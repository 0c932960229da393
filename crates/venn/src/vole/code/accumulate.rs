//! The code's first step: the parity half accumulated (each position added into the 24
//! its coefficients pick and the 25th), serially, on blocks and on bits.

use super::rows::Rows;
use super::{wide, Symbol, ACCUMULATOR};
use crate::crypto::Block;

/// Each position, in order, added into the following ones its 24 coefficient bits pick,
/// and into the 25th after it (all cyclically); the same for the `x.len()` bits of `bits`,
/// if given, under the same coefficients. The vector window ([`wide`]) takes the positions
/// while its registers fit in `x`; the loop below the rest (the wrap), or all of them on
/// other CPUs (the bits then by [`accumulate_bits`]).
pub(super) fn accumulate<T: Symbol>(x: &mut [T], bits: Option<&mut [u64]>, seed: Block) {
    let mut rows = Rows::new(seed);
    let len = x.len();
    let (done, mut bits) = wide::accumulate(T::blocks_mut(x), T::BLOCKS, &mut rows, bits);
    if done == 0 {
        // No window ran: the bits by their own word window, under rows of their own draw.
        if let Some(bits) = bits.take() {
            accumulate_bits(bits, len, seed);
        }
    }
    let full = len.saturating_sub(ACCUMULATOR + 1);
    for i in done..len {
        let xi = x[i];
        let row = rows.next();
        if i < full {
            // No wrap: the 25 positions after i lie in the slice.
            let next = &mut x[i + 1..i + 2 + ACCUMULATOR];
            let mut set = row;
            while set != 0 {
                next[set.trailing_zeros() as usize] ^= xi;
                set &= set - 1;
            }
            next[ACCUMULATOR] ^= xi;
        } else {
            for k in 0..ACCUMULATOR {
                if (row >> k) & 1 == 1 {
                    x[(i + 1 + k) % len] ^= xi;
                }
            }
            x[(i + 1 + ACCUMULATOR) % len] ^= xi;
        }
        // The positions past the window: their bits by the definition.
        if let Some(bits) = bits.as_deref_mut() {
            add_bit(bits, len, i, row | 1 << ACCUMULATOR);
        }
    }
}

/// [`accumulate`] on the `len` bits of `x`. While a position's 25 targets lie ahead of it
/// (no wrap), two words sit in a register and each position adds its row under a mask of
/// its own bit, branch-free; the rest by the definition.
pub(super) fn accumulate_bits(x: &mut [u64], len: usize, seed: Block) {
    let mut rows = Rows::new(seed);
    // Whole words whose every position's targets end before `len`: the last position of
    // word w reaches 64w + 63 + 25 < len, inside word w + 1.
    let words = (len.saturating_sub(ACCUMULATOR + 1) / 64).min(x.len().saturating_sub(1));
    if words > 0 {
        // The window's two words: position o of `lo` is the one being added.
        let (mut lo, mut hi) = (x[0], x[1]);
        let mut word_rows = [0; 64];
        for w in 0..words {
            word_rows
                .iter_mut()
                .for_each(|r| *r = rows.next() | 1 << ACCUMULATOR);
            for (o, &row) in word_rows.iter().enumerate() {
                let row = u128::from(row) << (o + 1);
                // All ones if the bit at o is set (its bit moved to the top, then spread):
                // the loop's critical path is this, an AND and an XOR.
                let mask = ((lo << (63 - o)) as i64 >> 63) as u64;
                lo ^= row as u64 & mask;
                hi ^= (row >> 64) as u64 & mask;
            }
            x[w] = lo;
            x[w + 1] = hi;
            (lo, hi) = (hi, x.get(w + 2).copied().unwrap_or(0));
        }
    }
    for i in 64 * words..len {
        add_bit(x, len, i, rows.next() | 1 << ACCUMULATOR);
    }
}

/// Bit `i` of the `len` bits of `x`, if set, added into the positions its `row` (with the
/// 25th's bit) picks after it, cyclically: the accumulator's definition, for the few
/// positions no window takes.
fn add_bit(x: &mut [u64], len: usize, i: usize, row: u64) {
    if (x[i / 64] >> (i % 64)) & 1 == 1 {
        for k in (0..=ACCUMULATOR).filter(|k| (row >> k) & 1 == 1) {
            let j = (i + 1 + k) % len;
            x[j / 64] ^= 1 << (j % 64);
        }
    }
}
