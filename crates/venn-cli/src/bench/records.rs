//! The records a benchmark sender's items carry (PSI with payloads, `--payload`): drawn
//! from the run's seed item by item, so that the receiver remakes those of its matches —
//! and checks each byte of them — without the sender's set.

use venn::crypto::{Aes, Block};
use venn::Error;

/// A `--payload` row of `venn bench`: records of this many bytes on each sender item, or
/// `none` for a run without records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PayloadRow(pub Option<u32>);

impl PayloadRow {
    /// `none`, or a width in bytes (the protocol refuses one it cannot carry).
    pub(crate) fn parse(s: &str) -> venn::Result<Self> {
        match s {
            "none" => Ok(PayloadRow(None)),
            _ => s.parse().map(|w| PayloadRow(Some(w))).map_err(|_| {
                Error::Usage(format!(
                    "--payload wants record widths in bytes or 'none', got '{s}'"
                ))
            }),
        }
    }
}

/// Separates the records' key from the items' and the values'.
const RECORD_KEY: Block = Block::from_u128(0x0052_4543_4f52_4453);

/// Records made by one call of the AES (a few hundred blocks or more: its batched path).
const BATCH: usize = 1024;

/// Appends to `out` the records of the sender's items `ids` (at most [`BATCH`]), `width`
/// bytes each: item i's is the first `width` bytes of AES_k(i, 0) ‖ AES_k(i, 1) ‖ …, under
/// the key `aes` made from the seed.
fn append_records(aes: &Aes, ids: impl Iterator<Item = u64>, width: usize, out: &mut Vec<u8>) {
    let per = width.div_ceil(16) as u64;
    let mut blocks: Vec<Block> = ids
        .flat_map(|i| (0..per).map(move |j| Block::from_halves(i, j)))
        .collect();
    aes.encrypt_blocks(&mut blocks);
    for record in blocks.chunks(per as usize) {
        out.extend(record.iter().flat_map(|b| b.to_le_bytes()).take(width));
    }
}

/// The records of the sender's `n` benchmark items, `width` bytes each, item by item (as
/// [`venn::Items::with_records`] takes them): exactly `n · width` bytes of room.
pub(super) fn bench_records(seed: Block, n: usize, width: usize) -> Vec<u8> {
    let aes = Aes::new(seed ^ RECORD_KEY);
    let mut records = Vec::with_capacity(n * width);
    for first in (0..n).step_by(BATCH) {
        let count = (n - first).min(BATCH);
        append_records(
            &aes,
            (first..first + count).map(|i| i as u64),
            width,
            &mut records,
        );
    }
    records
}

/// Whether `records` (`width` bytes each) are exactly the records of the sender's items
/// `2k + 1` for k below `shared`, in order — the receiver's matches of the benchmark sets
/// ([`super::items`]) — each of `payload` bytes: a record of another width, a byte wrong,
/// or one record too many or too few is not.
pub(super) fn records_right(
    seed: Block,
    shared: usize,
    payload: u32,
    records: &[u8],
    width: usize,
) -> bool {
    if width != payload as usize || width == 0 || records.len() != shared * width {
        return false;
    }
    let aes = Aes::new(seed ^ RECORD_KEY);
    let mut made = Vec::with_capacity(BATCH * width);
    records.chunks(BATCH * width).enumerate().all(|(c, got)| {
        let first = (c * BATCH) as u64;
        let count = (got.len() / width) as u64;
        made.clear();
        append_records(
            &aes,
            (first..first + count).map(|k| 2 * k + 1),
            width,
            &mut made,
        );
        made == got
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The receiver's records, as the protocol should give them for `shared` matches: the
    /// sender's records of items 1, 3, 5, …
    fn matched(seed: Block, shared: usize, width: usize) -> Vec<u8> {
        let all = bench_records(seed, 2 * shared, width);
        all.chunks(width)
            .skip(1)
            .step_by(2)
            .flatten()
            .copied()
            .collect()
    }

    /// The sender's records are checked byte by byte: a byte changed in any record, a
    /// record missing or extra, records cut to a narrower width (their prefixes) or the
    /// records of another seed all fail, across more than one batch.
    #[test]
    fn only_the_senders_exact_records_verify() {
        let (seed, width) = (Block::from(9), 36);
        let shared = BATCH + 3;
        let right = matched(seed, shared, width);
        assert_eq!(bench_records(seed, 10, width).capacity(), 10 * width);
        let check = |records: &[u8], shared: usize, width: usize| {
            records_right(seed, shared, 36, records, width)
        };
        assert!(check(&right, shared, width));
        assert!(check(&[], 0, width), "no match, no record");
        for at in [0, 35, BATCH * width + 17, right.len() - 1] {
            let mut wrong = right.clone();
            wrong[at] ^= 1;
            assert!(!check(&wrong, shared, width), "byte {at}");
        }
        assert!(
            !check(&right[..right.len() - width], shared, width),
            "one too few"
        );
        assert!(
            !check(&right[width..], shared - 1, width),
            "the first missing"
        );
        assert!(!check(&right, shared - 1, width), "one too many");
        let narrow = matched(seed, shared, width - 1);
        let mut cut = right.chunks(width).zip(narrow.chunks(width - 1));
        assert!(
            cut.all(|(r, n)| r.starts_with(n)),
            "cut records are prefixes"
        );
        assert!(!check(&narrow, shared, width - 1), "a narrower width");
        assert!(!records_right(Block::from(10), shared, 36, &right, width));
    }

    #[test]
    fn payload_rows_are_widths_or_none() {
        assert_eq!(PayloadRow::parse("none").unwrap(), PayloadRow(None));
        assert_eq!(PayloadRow::parse("36").unwrap(), PayloadRow(Some(36)));
        let err = PayloadRow::parse("36b").unwrap_err().to_string();
        assert!(err.contains("--payload wants record widths"), "{err}");
    }
}
