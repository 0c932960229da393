//! Splitting a quote-free body into lines and fields, eight bytes at a time: each 64-bit
//! word gives a mask of its line breaks and separators (an exact zero-byte test, no
//! false positives), and only those bytes are visited. One pass over the data, without
//! the per-call cost of a search per line and per field, which dominates for rows of a
//! few dozen bytes.

use std::ops::Range;
use venn::Result;

const ONES: u64 = 0x0101_0101_0101_0101;
const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;

/// The high bit of each byte of `word` that equals `byte`.
fn equal_bytes(word: u64, byte: u8) -> u64 {
    let x = word ^ (ONES * byte as u64);
    // A byte's high bit survives iff the byte is zero: adding 0x7F to its low seven bits
    // sets the high bit unless they are all zero (and cannot carry into the next byte).
    !(((x & LOW7) + LOW7) | x | LOW7)
}

/// Calls `f(line, seps)` for each line of `data[from..]`: its range (with its `\n`, if it
/// has one) and the positions in `data` of the `sep` bytes in it (none with `sep: None`).
pub(super) fn for_each_line(
    data: &[u8],
    from: usize,
    sep: Option<u8>,
    mut f: impl FnMut(Range<usize>, &[usize]) -> Result<()>,
) -> Result<()> {
    // Without a separator, line breaks are searched for twice over (harmlessly).
    let sep_byte = sep.unwrap_or(b'\n');
    let mut seps = Vec::new();
    let mut start = from;
    let mut visit = |at: usize, is_break: bool| -> Result<()> {
        if is_break {
            f(start..at + 1, &seps)?;
            seps.clear();
            start = at + 1;
        } else {
            seps.push(at);
        }
        Ok(())
    };
    let body = &data[from.min(data.len())..];
    let mut words = body.chunks_exact(8);
    let mut base = from;
    for word in &mut words {
        let w = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        let breaks = equal_bytes(w, b'\n');
        let mut hits = breaks | equal_bytes(w, sep_byte);
        while hits != 0 {
            let bit = hits & hits.wrapping_neg();
            hits ^= bit;
            visit(base + bit.trailing_zeros() as usize / 8, breaks & bit != 0)?;
        }
        base += 8;
    }
    for (i, &c) in words.remainder().iter().enumerate() {
        if c == b'\n' || c == sep_byte {
            visit(base + i, c == b'\n')?;
        }
    }
    if start < data.len() {
        f(start..data.len(), &seps)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines and separators as a plain byte loop finds them.
    fn reference(data: &[u8], from: usize, sep: u8) -> Vec<(Range<usize>, Vec<usize>)> {
        let mut out = Vec::new();
        let (mut start, mut seps) = (from, Vec::new());
        for (i, &c) in data.iter().enumerate().skip(from) {
            if c == b'\n' {
                out.push((start..i + 1, std::mem::take(&mut seps)));
                start = i + 1;
            } else if c == sep {
                seps.push(i);
            }
        }
        if start < data.len() {
            out.push((start..data.len(), seps));
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn finds_what_a_byte_loop_finds(
            data in proptest::collection::vec(proptest::sample::select(
                vec![b'\n', b',', b'\r', b'a', 0, 0x80, 0xFF, 0x0B, 0x2D]), 0..100),
            from in 0usize..10,
        ) {
            let from = from.min(data.len());
            let mut seen = Vec::new();
            for_each_line(&data, from, Some(b','), |line, seps| {
                seen.push((line, seps.to_vec()));
                Ok(())
            }).unwrap();
            proptest::prop_assert_eq!(&seen, &reference(&data, from, b','));
            let mut lines = Vec::new();
            for_each_line(&data, from, None, |line, seps| {
                assert!(seps.is_empty());
                lines.push(line);
                Ok(())
            }).unwrap();
            let expected: Vec<_> = reference(&data, from, b'\n').into_iter().map(|l| l.0).collect();
            proptest::prop_assert_eq!(lines, expected);
        }
    }
}
