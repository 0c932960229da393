//! Splitting a slice into consecutive pieces of known lengths, so that each piece can go to
//! its own parallel task (the pieces are disjoint, so no task needs to share memory).

/// `v` cut into consecutive pieces of the given lengths (which must not add up to more
/// than `v.len()`; anything past them is left out).
pub(crate) fn split_lengths<T>(
    v: &mut [T],
    lengths: impl IntoIterator<Item = usize>,
) -> Vec<&mut [T]> {
    let mut rest = v;
    lengths
        .into_iter()
        .map(|n| {
            let (here, after) = std::mem::take(&mut rest).split_at_mut(n);
            rest = after;
            here
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn pieces_are_consecutive_and_of_the_given_lengths() {
        let mut v: Vec<u32> = (0..10).collect();
        let pieces = super::split_lengths(&mut v, [3, 0, 4]);
        assert_eq!(pieces.len(), 3);
        assert_eq!(pieces[0], [0, 1, 2]);
        assert!(pieces[1].is_empty());
        assert_eq!(pieces[2], [3, 4, 5, 6]);
    }
}
