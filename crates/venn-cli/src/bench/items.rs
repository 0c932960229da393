//! A benchmark party's synthetic set: random keys (or σ-bit integers, and a sum's values
//! or the sender's records) drawn from the run's seed, half of them shared with the
//! peer's, so that the intersection is known without the peer's set.

use super::records::{bench_records, records_right};
use venn::crypto::{Aes, Block};
use venn::protocols::{Options, Output, Protocol, Sizes};
use venn::session::Role;
use venn::Items;

/// The room a benchmark key takes: 16 random bytes, or a σ-bit integer's decimal digits
/// (at most 20, for σ ≤ 64).
const KEY_BYTES: usize = 16;
const INTEGER_BYTES: usize = 20;

/// What a benchmark party's input holds ([`Items::memory`]) with `n` items of its own,
/// known before they are made: the room [`bench_items`] or [`bench_integers`] take for
/// them, the values of a sum's sender ([`bench_values`]) and the sender's records
/// ([`bench_records`]). `venn plan` counts it beside the protocol's memory model, as
/// `venn bench` does.
pub(crate) fn bench_input_memory(
    protocol: &dyn Protocol,
    options: Options,
    role: Role,
    n: u64,
) -> u64 {
    let key = match options.sigma {
        Some(_) => INTEGER_BYTES,
        None => KEY_BYTES,
    };
    let values = match role {
        Role::Sender if protocol.accepts().value_columns > 0 => std::mem::size_of::<u64>(),
        _ => 0,
    };
    let records = match role {
        Role::Sender => options.payload.unwrap_or(0) as usize,
        Role::Receiver => 0,
    };
    n * (key + std::mem::size_of::<usize>() + values + records) as u64
}

/// Item `i` of a party's benchmark set: receiver items at even, sender items at odd
/// positions are shared (`shared(i / 2)`); the rest are the party's own.
pub(super) fn bench_items(seed: Block, role: Role, n: usize) -> Items {
    let aes = Aes::new(seed);
    let shared_parity = match role {
        Role::Receiver => 0,
        Role::Sender => 1,
    };
    let own_tag: u64 = match role {
        Role::Receiver => 2,
        Role::Sender => 1,
    };
    let mut items = Items::with_capacity(n, KEY_BYTES * n);
    let mut buf = vec![Block::ZERO; 4096];
    for first in (0..n).step_by(buf.len()) {
        let count = (n - first).min(buf.len());
        for (j, b) in buf[..count].iter_mut().enumerate() {
            let i = (first + j) as u64;
            *b = if i % 2 == shared_parity {
                Block::from(i / 2)
            } else {
                Block::from_halves(i, own_tag)
            };
        }
        aes.encrypt_blocks(&mut buf[..count]);
        for b in &buf[..count] {
            items.push(&b.to_le_bytes());
        }
    }
    items
}

/// [`bench_items`] for a protocol on σ-bit integers: item `i` is the decimal integer
/// `π(3k)` for shared item k and `π(3i + 1)` (receiver) or `π(3i + 2)` (sender) for its own,
/// π a bijection of the σ-bit integers drawn from `seed` (odd multipliers and an
/// xor-shift, so the items spread over the whole range).
pub(super) fn bench_integers(seed: Block, role: Role, n: usize, sigma: u32) -> Items {
    let mask = if sigma >= 64 {
        u64::MAX
    } else {
        (1 << sigma) - 1
    };
    let aes = Aes::new(seed);
    let [a, b, c] = [1u64, 2, 3].map(|k| aes.encrypt(Block::from(k)).low_u64() | 1);
    let pi = |v: u64| {
        let x = v.wrapping_mul(a).wrapping_add(b) & mask;
        let x = (x ^ (x >> (sigma / 2))) & mask;
        x.wrapping_mul(c) & mask
    };
    let (shared_parity, own) = match role {
        Role::Receiver => (0, 1),
        Role::Sender => (1, 2),
    };
    let mut items = Items::with_capacity(n, INTEGER_BYTES * n);
    for i in 0..n as u64 {
        let v = if i % 2 == shared_parity {
            3 * (i / 2)
        } else {
            3 * i + own
        };
        items.push(pi(v).to_string().as_bytes());
    }
    items
}

/// The value of the sender's benchmark item `i` (below 2^32), for a protocol that sums
/// values over the intersection.
fn bench_value(aes: &Aes, i: usize) -> u64 {
    aes.encrypt(Block::from(i as u64)).low_u64() as u32 as u64
}

/// Values for the sender's benchmark items (a fresh one per item).
fn bench_values(seed: Block, n: usize) -> Vec<u64> {
    let aes = Aes::new(seed ^ VALUE_KEY);
    (0..n).map(|i| bench_value(&aes, i)).collect()
}

/// The sum (mod 2^64) of the sender's values over an intersection of `count` items: its
/// odd items are the shared ones, the first `count` of them in the receiver's set.
fn bench_sum(seed: Block, count: usize) -> u64 {
    let aes = Aes::new(seed ^ VALUE_KEY);
    (0..count).fold(0u64, |s, k| s.wrapping_add(bench_value(&aes, 2 * k + 1)))
}

/// The size of the intersection of the benchmark sets of `sizes`: the shared items at the
/// receiver's even positions and the sender's odd ones that both sets reach.
fn bench_intersection(sizes: Sizes) -> usize {
    (sizes.receiver.div_ceil(2)).min(sizes.sender / 2) as usize
}

/// Separates the values' key from the items'.
const VALUE_KEY: Block = Block::from_u128(0x5641_4c55_4553);

/// A party's benchmark input: its items (keys, or σ-bit integers with `options.sigma`),
/// with values if it is the sender of a protocol that sums them, and records of
/// `options.payload` bytes if it is the sender of a run that carries them.
pub(super) fn bench_input(
    protocol: &dyn Protocol,
    options: Options,
    seed: Block,
    role: Role,
    n: usize,
) -> venn::Result<Items> {
    let items = match options.sigma {
        Some(sigma) => bench_integers(seed, role, n, sigma),
        None => bench_items(seed, role, n),
    };
    let items = match role {
        Role::Sender if protocol.accepts().value_columns > 0 => {
            items.with_values(bench_values(seed, n))?
        }
        _ => items,
    };
    match (role, options.payload) {
        (Role::Sender, Some(width)) => {
            let width = width as usize;
            items.with_records(bench_records(seed, n, width), width)
        }
        _ => Ok(items),
    }
}

/// What the receiver learned, checked against what its set and the peer's share.
pub(super) struct Verdict {
    /// The intersection's size, as the output tells it (none for an output without one).
    pub intersection: Option<usize>,
    /// Whether the output is exactly right (none for an output that cannot be checked).
    pub verified: Option<bool>,
}

/// Verify: the receiver's first even items are the intersection — its indices or their
/// number, for a sum the sender's values over them, and for a run with records of
/// `payload` bytes the sender's record of each, byte for byte.
pub(super) fn verify(output: &Output, sizes: Sizes, seed: Block, payload: Option<u32>) -> Verdict {
    let shared = bench_intersection(sizes);
    let indices_right =
        |ix: &[usize]| ix.len() == shared && ix.iter().enumerate().all(|(k, &i)| i == 2 * k);
    let (intersection, verified) = match output {
        Output::Indices(ix) => (Some(ix.len()), Some(payload.is_none() && indices_right(ix))),
        Output::Records {
            indices,
            records,
            width,
            rows,
        } => (
            Some(indices.len()),
            Some(
                indices_right(indices)
                    && rows.iter().all(|&r| r == 1)
                    && payload.is_some_and(|p| records_right(seed, shared, p, records, *width)),
            ),
        ),
        Output::Count(c) => (Some(*c as usize), Some(*c as usize == shared)),
        Output::Sum { count, sums } => (
            Some(*count as usize),
            Some(*count as usize == shared && sums[..] == [bench_sum(seed, shared)]),
        ),
        _ => (None, None),
    };
    Verdict {
        intersection,
        verified,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use venn::protocols::find;

    /// What `venn plan` counts for a benchmark party's input is what its items hold: keys,
    /// σ-bit integers, a sum's sender's values and the sender's records.
    #[test]
    fn the_input_memory_is_known_before_the_items_are_made() {
        let seed = Block::from(7);
        let n = 1000;
        for (name, sigma, payload) in [
            ("rr22", None, None),
            ("kbm23", Some(32), None),
            ("rr22-sum", None, None),
            ("rr22", None, Some(36)),
        ] {
            let p = find(name).unwrap();
            let options = Options {
                sigma,
                payload,
                ..Options::default()
            };
            for role in [Role::Sender, Role::Receiver] {
                let items = bench_input(p, options, seed, role, n).unwrap();
                let known = bench_input_memory(p, options, role, n as u64);
                assert_eq!(known, items.memory(), "{name} {role:?}");
            }
        }
    }

    /// A receiver's output with records verifies only with the sender's record of each
    /// match, where the run carries records: one byte changed, or records where none were
    /// asked for (or none where they were), fail the run.
    #[test]
    fn the_receiver_checks_the_record_of_each_match() {
        let (seed, width) = (Block::from(3), 36);
        let sizes = Sizes {
            sender: 100,
            receiver: 64,
        };
        let options = Options {
            payload: Some(width as u32),
            ..Options::default()
        };
        let sender = bench_input(find("rr22").unwrap(), options, seed, Role::Sender, 100).unwrap();
        let (all, _) = sender.records().unwrap();
        let shared = bench_intersection(sizes);
        let indices: Vec<usize> = (0..shared).map(|k| 2 * k).collect();
        let records: Vec<u8> = (0..shared)
            .flat_map(|k| &all[(2 * k + 1) * width..(2 * k + 2) * width])
            .copied()
            .collect();
        let output = |records: Vec<u8>| Output::Records {
            rows: vec![1; indices.len()],
            indices: indices.clone(),
            records,
            width,
        };
        let verified = |output: &Output, payload| verify(output, sizes, seed, payload).verified;
        assert_eq!(verified(&output(records.clone()), Some(36)), Some(true));
        let mut wrong = records.clone();
        wrong[width * 5 + 7] ^= 0x80;
        assert_eq!(verified(&output(wrong), Some(36)), Some(false));
        assert_eq!(verified(&output(records), None), Some(false));
        let bare = Output::Indices(indices.clone());
        assert_eq!(verified(&bare, Some(36)), Some(false));
        assert_eq!(verified(&bare, None), Some(true));
    }
}
