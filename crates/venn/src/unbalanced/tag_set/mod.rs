//! `ub-cache`'s tag set: the τ-bit tags of the server's items under the OPRF key, sorted
//! and Golomb–Rice coded, the compact set a client downloads once and then looks its
//! queries' tags up in (Kales et al., USENIX Security 2019, ship the server's OPRF values to
//! the client; a sorted, Rice-coded set is smaller than their cuckoo filter at the same
//! false-positive rate and has exact deletes, an order-independent content and a digest).
//!
//! τ = min(128, 40 + ⌈log₂ m_max⌉ + ⌈log₂ n_max⌉): a non-member matches one of n tags
//! with probability ≈ n/2^τ, at most 2^-40 over a query of m_max items. The gaps between
//! sorted tags (the first from 0) are coded with Rice parameter r = max(0, τ − ⌈log₂ n⌉):
//! the quotient in unary (ones, then a zero), the r low bits as they are — about
//! τ − log₂ n + 1.5 bits a tag whatever n. A block index (the last tag of each block of
//! 256 and the bit offset after it, rebuilt by the client) lets a lookup decode one block.
//!
//! The digest is BLAKE3 of τ, the count and the coded bits: the set's content, since the
//! coding is a function of the sorted tags. (The spec's reading proposed an additive sum
//! of hashes, updated in O(1) by deltas; a sum mod 2^256 of chosen elements falls to
//! generalised-birthday attacks, so the set is hashed whole — 0.1 s at 2^24 tags.)

mod bits;

use crate::{Error, Result};
use bits::{Reader, Writer};

/// Tags a block of the index covers.
const BLOCK: usize = 256;

/// The statistical parameter of a query's false positives: at most 2^-40 a query.
const FALSE_POSITIVE_BITS: u32 = 40;

/// τ for a server set of up to `n_max` items and queries of up to `m_max`.
pub fn tag_bits(n_max: u64, m_max: u64) -> u8 {
    let log = |x: u64| u64::BITS - x.max(1).saturating_sub(1).leading_zeros();
    (FALSE_POSITIVE_BITS + log(n_max) + log(m_max)).min(128) as u8
}

/// The most bytes the wire form of a set of `len` tags of τ bits takes: the head, and
/// at most r + 1 bits a tag for the Rice remainders and the quotients' stops, plus the
/// quotients' ones, which sum to at most 2^τ >> r ≤ 2·len + 2 (r = τ − ⌈log₂ len⌉; a
/// smaller r only where len > 2^τ, when that sum is at most len). What a client bounds a
/// download by before it allocates.
pub fn max_wire_len(len: u64, tau: u8) -> u64 {
    let bits = len.saturating_mul(u64::from(tau) + 3).saturating_add(2);
    (WIRE_HEAD as u64).saturating_add(bits.div_ceil(8))
}

/// About the bytes the wire form of a set of `len` random tags of τ bits takes: the
/// Rice remainders and stops, r + 1 bits a tag, and the quotients' ones — the gaps sum to
/// about 2^τ, each quotient drops its gap's remainder (about (2^r − 1)/2), so about
/// (2^τ − len·(2^r − 1)/2) / 2^r. What `venn params` shows a download as.
pub fn expected_wire_len(len: u64, tau: u8) -> u64 {
    let (r, n) = (rice(tau, len), len as f64);
    let scale = 2f64.powi(-i32::from(r));
    let ones = (2f64.powi(i32::from(tau) - i32::from(r)) - n * (1.0 - scale) / 2.0).max(0.0);
    let bits = n * (f64::from(r) + 1.0) + ones.min(n * 2.0 + 2.0);
    WIRE_HEAD as u64 + (bits / 8.0).ceil() as u64
}

/// The τ-bit tag of an OPRF output: the top τ bits of its bytes 48..64 (the part kept
/// for `ub-cache`; the rest of the output keys other things).
pub fn tag_of(output: &[u8; 64], tau: u8) -> u128 {
    let part = u128::from_be_bytes(output[48..].try_into().expect("16 bytes"));
    part.checked_shr(128 - u32::from(tau)).unwrap_or(0)
}

/// The bytes of a set's wire form before its bits.
pub const WIRE_HEAD: usize = 17;

/// A set's wire form before its bits: τ, the count (u64), the coded bits' count (u64).
fn wire_head(tau: u8, len: u64, bit_len: u64) -> [u8; WIRE_HEAD] {
    let mut head = [0u8; WIRE_HEAD];
    head[0] = tau;
    head[1..9].copy_from_slice(&len.to_le_bytes());
    head[9..].copy_from_slice(&bit_len.to_le_bytes());
    head
}

/// BLAKE3 of a set's wire form.
fn digest_of(wire: &[u8]) -> [u8; 32] {
    *blake3::hash(wire).as_bytes()
}

/// The end of a block of the index: the block's last tag, the bit offset after it, the
/// tags up to it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Mark {
    last: u128,
    bit: u64,
    count: u64,
}

/// The bytes of a [`Mark`] in [`TagSet::index_bytes`].
const MARK_BYTES: usize = 32;

/// A sorted multiset of τ-bit tags, Rice-coded.
#[derive(Clone, Debug)]
pub struct TagSet {
    tau: u8,
    rice: u8,
    len: u64,
    /// Its wire form: the head, then the coded gaps, most significant bit first,
    /// `bit_len` of them.
    wire: Vec<u8>,
    bit_len: u64,
    /// The end of each block, the last one's included: blocks of [`BLOCK`] tags as a set
    /// is coded whole, of [`BLOCK`]/2 to [`BLOCK`] where a change re-coded them
    /// ([`TagSet::changed`]); lookups decode one block. Not part of the wire form (a
    /// client builds its own).
    index: Vec<Mark>,
    /// Its digest, computed once ([`TagSet::digest`]).
    digest: [u8; 32],
}

/// Sets are equal when they hold the same tags: their wire forms are equal (their
/// indexes may differ).
impl PartialEq for TagSet {
    fn eq(&self, other: &TagSet) -> bool {
        self.wire == other.wire
    }
}

impl Eq for TagSet {}

/// The Rice parameter for `len` tags of τ bits (below 128, so that shifts by it hold).
fn rice(tau: u8, len: u64) -> u8 {
    let log = u64::BITS - len.max(1).saturating_sub(1).leading_zeros();
    u32::from(tau).saturating_sub(log).min(127) as u8
}

/// 2^τ, the bound every tag is below (saturated at τ = 128).
fn limit(tau: u8) -> u128 {
    1u128.checked_shl(u32::from(tau)).unwrap_or(u128::MAX)
}

/// A wire form's head, checked: τ, the count (at most `max_len`), the coded bits' count
/// (which the body's length and its last byte's unused bits agree with).
fn read_head(bytes: &[u8], max_len: u64) -> Result<(u8, u64, u64)> {
    let malformed = |why: String| Error::protocol("a tag set", why);
    if bytes.len() < WIRE_HEAD {
        return Err(malformed(format!("{} bytes", bytes.len())));
    }
    let tau = bytes[0];
    let len = u64::from_le_bytes(bytes[1..9].try_into().expect("8 bytes"));
    let bit_len = u64::from_le_bytes(bytes[9..WIRE_HEAD].try_into().expect("8 bytes"));
    let body = &bytes[WIRE_HEAD..];
    if !(1..=128).contains(&tau) || len > max_len {
        return Err(malformed(format!("{len} tags of {tau} bits")));
    }
    // The last byte's unused bits zero: one wire form for one set.
    let unused = match bit_len % 8 {
        0 => 0,
        used => body.last().map_or(0, |b| b & (0xffu8 >> used)),
    };
    if bit_len.div_ceil(8) != body.len() as u64 || bit_len < len || unused != 0 {
        return Err(malformed(format!("{bit_len} bits in {} bytes", body.len())));
    }
    Ok((tau, len, bit_len))
}

impl TagSet {
    /// The set of `tags` (each below 2^τ), sorted and coded.
    pub fn new(tau: u8, mut tags: Vec<u128>) -> Result<TagSet> {
        if !(1..=128).contains(&tau) {
            return Err(Error::Usage(format!("tags of {tau} bits: 1 to 128")));
        }
        if let Some(big) = tags
            .iter()
            .find(|&&t| t.checked_shr(u32::from(tau)).unwrap_or(0) != 0)
        {
            return Err(Error::Usage(format!(
                "the tag {big:#x} has more than {tau} bits"
            )));
        }
        tags.sort_unstable();
        let mut encoder = Encoder::new(tau, tags.len() as u64, 0);
        tags.chunks(BLOCK)
            .for_each(|block| encoder.push_block(block));
        encoder.finish()
    }

    /// How many tags it holds.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// τ.
    pub fn tau(&self) -> u8 {
        self.tau
    }

    /// The coded gaps.
    fn bits(&self) -> &[u8] {
        &self.wire[WIRE_HEAD..]
    }

    /// The tags from the mark `start` on (the set's start: the default), `count` of them,
    /// ascending.
    fn decode(&self, start: Mark, count: u64) -> impl Iterator<Item = u128> + '_ {
        let mut reader = Reader {
            bytes: self.bits(),
            len: self.bit_len,
            at: start.bit,
        };
        let (limit, mut previous) = (limit(self.tau), start.last);
        (0..count).map_while(move |_| {
            previous = previous.checked_add(reader.gap(self.rice, limit)?)?;
            Some(previous)
        })
    }

    /// Where block `block` starts.
    fn block_start(&self, block: usize) -> Mark {
        match block {
            0 => Mark::default(),
            b => self.index[b - 1],
        }
    }

    /// Its tags, ascending.
    pub fn tags(&self) -> impl Iterator<Item = u128> + '_ {
        self.decode(Mark::default(), self.len)
    }

    /// Whether it holds `tag`: the one block that may hold it decoded.
    pub fn contains(&self, tag: u128) -> bool {
        // Every block before this one ends below `tag`.
        let block = self.index.partition_point(|m| m.last < tag);
        let Some(end) = self.index.get(block) else {
            return false;
        };
        let start = self.block_start(block);
        self.decode(start, end.count - start.count)
            .take_while(|&t| t <= tag)
            .any(|t| t == tag)
    }

    /// Its wire form as held — τ, the count (u64), the coded bits' count (u64), the
    /// bits: what a server sends or writes without a copy.
    pub fn wire(&self) -> &[u8] {
        &self.wire
    }

    /// Reads a tag set received from a server, of at most `max_len` tags: refused unless
    /// every length agrees, every tag decodes below 2^τ in order, and the bits end where
    /// the last tag does (one coding of a set only). The index is rebuilt.
    pub fn from_bytes(bytes: &[u8], max_len: u64) -> Result<TagSet> {
        let malformed = |why: String| Error::protocol("a tag set", why);
        let (tau, len, bit_len) = read_head(bytes, max_len)?;
        let body = &bytes[WIRE_HEAD..];
        let mut reader = Reader {
            bytes: body,
            len: bit_len,
            at: 0,
        };
        // Decoded as it is coded: the same gaps, the same index (nothing written).
        let mut encoder = Encoder::new(tau, len, 0);
        let limit = limit(tau);
        let mut tag = 0u128;
        for i in 0..len {
            let gap = reader
                .gap(encoder.rice, limit)
                .ok_or_else(|| malformed(format!("tag {i} does not decode")))?;
            tag = match tag.checked_add(gap) {
                Some(t) if t < limit || tau == 128 => t,
                _ => return Err(malformed(format!("tag {i} has more than {tau} bits"))),
            };
            encoder.count += 1;
            encoder.previous = tag;
            if encoder.count.is_multiple_of(BLOCK as u64) {
                encoder.mark_at(reader.at);
            }
        }
        if reader.at != bit_len {
            return Err(malformed(format!(
                "{} bits after the last tag",
                bit_len - reader.at
            )));
        }
        encoder.mark_at(bit_len);
        Ok(TagSet {
            tau,
            rice: encoder.rice,
            len,
            wire: bytes.to_vec(),
            bit_len,
            index: encoder.index,
            digest: digest_of(bytes),
        })
    }

    /// Its index, for [`TagSet::from_trusted`]: each block's last tag (u128), the bit
    /// after it and the tags up to it (u64 each), little-endian.
    pub fn index_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.index.len() * MARK_BYTES);
        for m in &self.index {
            bytes.extend_from_slice(&m.last.to_le_bytes());
            bytes.extend_from_slice(&m.bit.to_le_bytes());
            bytes.extend_from_slice(&m.count.to_le_bytes());
        }
        bytes
    }

    /// A set from its wire form and its index as [`TagSet::wire`] and
    /// [`TagSet::index_bytes`] gave them, without decoding it: for files whose hashes the
    /// caller checks (a server's own published set), where decoding 2^24 tags would
    /// take a quarter of a second. The head and the index must agree (marks in order,
    /// within the bits, the last at the set's end); the tags are not checked.
    pub fn from_trusted(wire: Vec<u8>, index: &[u8]) -> Result<TagSet> {
        let (tau, len, bit_len) = read_head(&wire, u64::MAX)?;
        let bad = |why: &str| Error::State(format!("a tag set's index: {why}"));
        if !index.len().is_multiple_of(MARK_BYTES) {
            return Err(bad("not whole marks"));
        }
        let index: Vec<Mark> = (index.chunks_exact(MARK_BYTES))
            .map(|m| Mark {
                last: u128::from_le_bytes(m[..16].try_into().expect("16 bytes")),
                bit: u64::from_le_bytes(m[16..24].try_into().expect("8 bytes")),
                count: u64::from_le_bytes(m[24..].try_into().expect("8 bytes")),
            })
            .collect();
        let in_order = (index.windows(2))
            .all(|w| w[0].last <= w[1].last && w[0].bit < w[1].bit && w[0].count < w[1].count);
        let first = index.first().is_none_or(|m| m.count > 0);
        let last = index.last().copied().unwrap_or_default();
        if !in_order || !first || (last.bit, last.count) != (bit_len, len) {
            return Err(bad("it does not fit the set"));
        }
        Ok(TagSet {
            tau,
            rice: rice(tau, len),
            len,
            digest: digest_of(&wire),
            wire,
            bit_len,
            index,
        })
    }

    /// Its digest: BLAKE3 of τ, the count and the coded bits (the wire form).
    pub fn digest(&self) -> [u8; 32] {
        self.digest
    }

    /// The set with `removes` taken out (a tag once for each time it is named, refused if
    /// it holds it fewer times) and `adds` put in: an update's delta applied. Only the
    /// blocks a change falls in (and, where the last tag before it changed or it shrank
    /// below half a block, the block after) are decoded and coded again, as blocks of
    /// 128 to 512 tags; the bits of the others are carried over as they
    /// are, so a change costs a copy of the bits plus what it touched (unless the count
    /// crosses a power of two: the Rice parameter changes and every gap is coded
    /// again).
    pub fn changed(&self, adds: &TagSet, removes: &TagSet) -> Result<TagSet> {
        if adds.tau != self.tau || removes.tau != self.tau {
            return Err(Error::protocol(
                format!("a delta of {}-bit tags", self.tau),
                format!("{} and {} bits", adds.tau, removes.tau),
            ));
        }
        let lacking = || Error::protocol("a delta removing tags the set holds", "a tag it lacks");
        let len = (self.len.checked_sub(removes.len))
            .and_then(|kept| kept.checked_add(adds.len))
            .ok_or_else(lacking)?;
        let mut encoder = Encoder::new(self.tau, len, self.bit_len);
        let carry = encoder.rice == self.rice;
        let (mut removes, mut adds) = (removes.tags().peekable(), adds.tags().peekable());
        // Tags coded again, not yet in a block.
        let mut run = Vec::new();
        let mut start = Mark::default();
        for (i, &end) in self.index.iter().enumerate() {
            // Tags added past the set's end join its last block.
            let last = i + 1 == self.index.len();
            let untouched = removes.peek().is_none_or(|&r| r > end.last)
                && adds.peek().is_none_or(|&a| a > end.last && !last);
            // Carried over only where the gaps are the same: from the same tag before.
            if carry && untouched && run.is_empty() && encoder.previous == start.last {
                encoder.carry(self.bits(), start, end);
            } else {
                for tag in self.decode(start, end.count - start.count) {
                    if removes.next_if_eq(&tag).is_some() {
                        continue;
                    }
                    if removes.peek().is_some_and(|&r| r < tag) {
                        return Err(lacking());
                    }
                    run.extend(std::iter::from_fn(|| adds.next_if(|&a| a <= tag)));
                    run.push(tag);
                }
                if run.len() >= BLOCK / 2 {
                    encoder.push_blocks(&run);
                    run.clear();
                }
            }
            start = end;
        }
        if removes.next().is_some() {
            return Err(lacking());
        }
        run.extend(adds);
        encoder.push_blocks(&run);
        encoder.finish()
    }
}

/// A set coded as its tags come, in ascending order (or as runs of another set's bits):
/// the gaps, the block index.
struct Encoder {
    tau: u8,
    rice: u8,
    len: u64,
    writer: Writer,
    index: Vec<Mark>,
    previous: u128,
    count: u64,
}

impl Encoder {
    /// The coder of a set of `len` tags of τ bits (about `bits` bits of them).
    fn new(tau: u8, len: u64, bits: u64) -> Encoder {
        Encoder {
            tau,
            rice: rice(tau, len),
            len,
            writer: Writer::new(WIRE_HEAD, bits),
            index: Vec::new(),
            previous: 0,
            count: 0,
        }
    }

    /// The tags since the last mark.
    fn pending(&self) -> u64 {
        self.count - self.index.last().map_or(0, |m| m.count)
    }

    /// Ends a block after the last tag, at bit `bit`, if it holds any.
    fn mark_at(&mut self, bit: u64) {
        if self.pending() > 0 {
            let (last, count) = (self.previous, self.count);
            self.index.push(Mark { last, bit, count });
        }
    }

    /// The next tag, at least the last one; one beyond `len` is counted, not coded (and
    /// [`Encoder::finish`] refuses the set).
    fn push(&mut self, tag: u128) {
        debug_assert!(tag >= self.previous);
        if self.count == self.len {
            self.count += 1;
            return;
        }
        let gap = tag - self.previous;
        self.writer.unary(gap >> self.rice);
        self.writer.bits(gap, self.rice);
        self.previous = tag;
        self.count += 1;
    }

    /// `tags`, the next ones, as one block of the index.
    fn push_block(&mut self, tags: &[u128]) {
        tags.iter().for_each(|&tag| self.push(tag));
        self.mark_at(self.writer.len);
    }

    /// `tags`, the next ones, as one block of the index if they are at most 2·[`BLOCK`],
    /// else as blocks of about equal size, each at least 2/3 of a block.
    fn push_blocks(&mut self, tags: &[u128]) {
        if tags.len() <= 2 * BLOCK {
            return self.push_block(tags);
        }
        let parts = tags.len().div_ceil(BLOCK);
        let mut rest = tags;
        for part in (1..=parts).rev() {
            let (block, after) = rest.split_at(rest.len() / part);
            self.push_block(block);
            rest = after;
        }
    }

    /// The block of `bits` (another set's, coded with the same parameter) from `start`
    /// to `end`, carried over as it is: its tags follow the one it followed there.
    fn carry(&mut self, bits: &[u8], start: Mark, end: Mark) {
        let count = end.count - start.count;
        if self.count + count > self.len {
            self.count += count;
            return;
        }
        self.writer.append(bits, start.bit, end.bit);
        self.previous = end.last;
        self.count += count;
        self.mark_at(self.writer.len);
    }

    /// The set, if exactly its `len` tags were pushed.
    fn finish(mut self) -> Result<TagSet> {
        if self.count != self.len {
            return Err(Error::protocol(
                format!("a set of {} tags", self.len),
                format!("{} tags", self.count),
            ));
        }
        self.mark_at(self.writer.len);
        let (bit_len, mut wire) = (self.writer.len, self.writer.into_bytes());
        wire[..WIRE_HEAD].copy_from_slice(&wire_head(self.tau, self.len, bit_len));
        Ok(TagSet {
            tau: self.tau,
            rice: self.rice,
            len: self.len,
            digest: digest_of(&wire),
            wire,
            bit_len,
            index: self.index,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::{Block, Prg};
    use std::collections::HashSet;

    fn random_tags(prg: &mut Prg, n: usize, tau: u8) -> Vec<u128> {
        (0..n)
            .map(|_| {
                let mut b = [0u8; 16];
                prg.fill_bytes(&mut b);
                u128::from_le_bytes(b)
                    .checked_shr(128 - u32::from(tau))
                    .unwrap_or(0)
            })
            .collect()
    }

    /// τ as the false-positive bound asks; a tag is the output's top bits.
    #[test]
    fn tags_are_wide_enough_for_the_false_positive_bound() {
        assert_eq!(tag_bits(1 << 20, 1), 60);
        assert_eq!(tag_bits(1 << 24, 4096), 76);
        assert_eq!(tag_bits(u64::MAX, u64::MAX), 128);
        let mut out = [0u8; 64];
        out[48] = 0b1010_0000;
        assert_eq!(tag_of(&out, 3), 0b101);
        assert_eq!(tag_of(&out, 128) >> 120, 0b1010_0000);
    }

    /// Sets of many sizes and widths (duplicates, 0 and 2^τ − 1 included) hold exactly
    /// their tags, look up as a `HashSet` does, survive their wire form byte for byte
    /// (within [`max_wire_len`]), and take about τ − log₂ n + 1.5 bits a tag.
    #[test]
    fn a_set_holds_exactly_its_tags() {
        let mut prg = Prg::from_seed(Block::from(11));
        for (n, tau) in [
            (0, 40),
            (1, 40),
            (5, 128),
            (255, 40),
            (256, 40),
            (257, 127),
            (4096, 52),
            (20_000, 60),
            (9000, 16),
        ] {
            let mut tags = random_tags(&mut prg, n, tau);
            if n > 2 {
                tags[0] = 0;
                tags[1] = tags[2];
                tags[2] = u128::MAX >> (128 - tau);
            }
            let set = TagSet::new(tau, tags.clone()).unwrap();
            let mut sorted = tags.clone();
            sorted.sort_unstable();
            assert_eq!(set.tags().collect::<Vec<_>>(), sorted, "n {n} τ {tau}");
            let members: HashSet<u128> = tags.iter().copied().collect();
            for probe in random_tags(&mut prg, 2000, tau)
                .into_iter()
                .chain(tags.iter().copied())
            {
                assert_eq!(
                    set.contains(probe),
                    members.contains(&probe),
                    "n {n} τ {tau}"
                );
            }
            let wire = set.wire();
            assert!(
                wire.len() as u64 <= max_wire_len(n as u64, tau),
                "n {n} τ {tau}"
            );
            if n >= 4096 {
                let expected = expected_wire_len(n as u64, tau) as f64;
                let ratio = wire.len() as f64 / expected;
                assert!((0.97..1.03).contains(&ratio), "n {n} τ {tau}: {ratio}");
            }
            let read = TagSet::from_bytes(wire, n as u64).unwrap();
            assert_eq!(read, set);
            assert_eq!(read.digest(), set.digest());
            assert_eq!(set.digest(), *blake3::hash(wire).as_bytes());
            if n >= 4096 {
                let per_tag = set.bit_len as f64 / n as f64;
                let expected = f64::from(tau) - (n as f64).log2() + 1.5;
                assert!(
                    (per_tag - expected).abs() < 1.5,
                    "{per_tag} bits a tag, {expected}"
                );
            }
        }
    }

    /// At τ = 16 a non-member matches at about n/2^16.
    #[test]
    fn false_positives_are_n_over_two_to_tau() {
        let mut prg = Prg::from_seed(Block::from(12));
        let set = TagSet::new(16, random_tags(&mut prg, 2000, 16)).unwrap();
        let probes = 200_000;
        let hits = (random_tags(&mut prg, probes, 16).into_iter())
            .filter(|&t| set.contains(t))
            .count() as f64;
        let rate = hits / probes as f64;
        let distinct = set.tags().collect::<HashSet<_>>().len() as f64;
        let expected = distinct / 65536.0;
        assert!(
            (rate - expected).abs() < 0.15 * expected,
            "{rate} against {expected}"
        );
    }

    /// A received set is refused unless it decodes exactly: more tags than allowed, a
    /// truncated or padded body, a count its bits do not hold, a tag past 2^τ, τ out of
    /// range; another set's digest differs.
    #[test]
    fn malformed_sets_are_refused() {
        let mut prg = Prg::from_seed(Block::from(13));
        let set = TagSet::new(40, random_tags(&mut prg, 5000, 40)).unwrap();
        let bytes = set.wire().to_vec();
        assert!(TagSet::from_bytes(&bytes, 4999).is_err(), "over the cap");
        assert!(TagSet::from_bytes(&bytes[..bytes.len() - 1], 5000).is_err());
        assert!(TagSet::from_bytes(&[bytes.as_slice(), &[0]].concat(), 5000).is_err());
        assert!(TagSet::from_bytes(&bytes[..10], 5000).is_err());
        let mut more = bytes.clone();
        more[1..9].copy_from_slice(&5001u64.to_le_bytes());
        assert!(
            TagSet::from_bytes(&more, 6000).is_err(),
            "a count the bits lack"
        );
        let mut fewer = bytes.clone();
        fewer[1..9].copy_from_slice(&4999u64.to_le_bytes());
        assert!(
            TagSet::from_bytes(&fewer, 6000).is_err(),
            "bits after the last tag"
        );
        for tau in [0u8, 129] {
            let mut wide = bytes.clone();
            wide[0] = tau;
            assert!(TagSet::from_bytes(&wide, 6000).is_err());
        }
        // One tag of all ones in unary: its quotient passes 2^τ.
        let ones = TagSet {
            tau: 4,
            rice: 4,
            len: 1,
            wire: [&wire_head(4, 1, 32)[..], &[0xff; 4]].concat(),
            bit_len: 32,
            index: Vec::new(),
            digest: [0; 32],
        };
        assert!(TagSet::from_bytes(ones.wire(), 1).is_err());
        assert!(TagSet::new(8, vec![256]).is_err(), "a tag wider than τ");
        let other = TagSet::new(40, random_tags(&mut prg, 5000, 40)).unwrap();
        assert_ne!(other.digest(), set.digest());
        // A delta removing a tag the set lacks is refused, at any length.
        let five = TagSet::new(8, vec![5]).unwrap();
        let none = TagSet::new(8, vec![]).unwrap();
        for (adds, removes) in [(vec![], vec![7]), (vec![9], vec![7]), (vec![], vec![5, 5])] {
            let (adds, removes) = (
                TagSet::new(8, adds).unwrap(),
                TagSet::new(8, removes).unwrap(),
            );
            assert!(five.changed(&adds, &removes).is_err());
        }
        assert_eq!(five.changed(&none, &five).unwrap(), none);
    }

    /// Each mark of `set`'s index is where its block's tags end: their last tag, the bit
    /// after it, their count; the last mark is the set's end.
    fn assert_index_is_exact(set: &TagSet) {
        let mut start = Mark::default();
        for &mark in &set.index {
            let mut reader = Reader {
                bytes: set.bits(),
                len: set.bit_len,
                at: start.bit,
            };
            let mut tag = start.last;
            for _ in start.count..mark.count {
                tag += reader.gap(set.rice, limit(set.tau)).unwrap();
            }
            assert_eq!((tag, reader.at), (mark.last, mark.bit), "{mark:?}");
            start = mark;
        }
        assert_eq!((start.count, start.bit), (set.len, set.bit_len));
    }

    /// Changes spliced into a set give the set coded whole from its tags, through many
    /// rounds of scattered and clustered inserts and deletes (duplicates, the ends of the
    /// range, a count crossing a power of two), with every lookup right and every block
    /// but the last holding half a block to two; the index survives `from_trusted`.
    #[test]
    fn changes_spliced_in_are_the_set_coded_whole() {
        let mut prg = Prg::from_seed(Block::from(14));
        let tau = 40;
        let mut tags = random_tags(&mut prg, 3000, tau);
        let mut set = TagSet::new(tau, tags.clone()).unwrap();
        // One tag in: one block coded again (two at most), the rest carried.
        let one = TagSet::new(tau, random_tags(&mut prg, 1, tau)).unwrap();
        let none = TagSet::new(tau, Vec::new()).unwrap();
        let changed = set.changed(&one, &none).unwrap();
        let kept = (changed.index.iter())
            .filter(|m| set.index.iter().any(|o| o.last == m.last))
            .count();
        assert!(kept + 2 >= set.index.len(), "{kept} of {}", set.index.len());
        for round in 0..40 {
            let mut removes = Vec::new();
            for _ in 0..(round % 7) * 9 {
                let i = prg.below(tags.len() as u64) as usize;
                removes.push(tags.swap_remove(i));
            }
            if round % 5 == 1 {
                // A run of neighbours: whole blocks emptied.
                tags.sort_unstable();
                let at = prg.below(tags.len() as u64 - 700) as usize;
                removes.extend(tags.drain(at..at + 600));
            }
            let mut adds = random_tags(&mut prg, (round % 4) * 20, tau);
            if round % 6 == 2 {
                // A cluster between two tags and an existing tag twice: a block grows.
                let base = tags[0];
                adds.extend((0..500).map(|k| base.saturating_sub(k) & ((1 << tau) - 1)));
                adds.push(tags[1]);
            }
            if round == 30 {
                // Past 4096 tags: another Rice parameter.
                adds.extend(random_tags(&mut prg, 2000, tau));
            }
            if round % 9 == 4 {
                adds.extend([0, (1u128 << tau) - 1]);
            }
            tags.extend(&adds);
            let changed = set
                .changed(
                    &TagSet::new(tau, adds).unwrap(),
                    &TagSet::new(tau, removes).unwrap(),
                )
                .unwrap();
            let whole = TagSet::new(tau, tags.clone()).unwrap();
            assert_eq!(changed, whole, "round {round}");
            assert_eq!(changed.digest(), whole.digest());
            assert_index_is_exact(&changed);
            for probe in tags
                .iter()
                .take(300)
                .copied()
                .chain(random_tags(&mut prg, 300, tau))
            {
                assert_eq!(
                    changed.contains(probe),
                    whole.contains(probe),
                    "round {round}"
                );
            }
            let sizes: Vec<u64> = (changed.index.iter())
                .scan(0, |before, m| {
                    Some(m.count - std::mem::replace(before, m.count))
                })
                .collect();
            let (body, _) = sizes.split_at(sizes.len() - 1);
            assert!(
                body.iter()
                    .all(|&s| s >= BLOCK as u64 / 2 && s <= 2 * BLOCK as u64),
                "round {round}: blocks of {sizes:?}"
            );
            let trusted =
                TagSet::from_trusted(changed.wire().to_vec(), &changed.index_bytes()).unwrap();
            assert_eq!(trusted.index, changed.index);
            assert_eq!(trusted, changed);
            set = changed;
        }
    }

    /// An index that does not fit its set is refused (its tags are the caller's to trust).
    #[test]
    fn an_index_that_does_not_fit_is_refused() {
        let mut prg = Prg::from_seed(Block::from(15));
        let set = TagSet::new(40, random_tags(&mut prg, 1000, 40)).unwrap();
        let (wire, index) = (set.wire().to_vec(), set.index_bytes());
        assert!(TagSet::from_trusted(wire.clone(), &index).is_ok());
        assert!(TagSet::from_trusted(wire.clone(), &index[..index.len() - 1]).is_err());
        assert!(TagSet::from_trusted(wire.clone(), &index[..index.len() - MARK_BYTES]).is_err());
        let mut swapped = index.clone();
        swapped[..MARK_BYTES].copy_from_slice(&index[MARK_BYTES..2 * MARK_BYTES]);
        assert!(TagSet::from_trusted(wire.clone(), &swapped).is_err());
        assert!(TagSet::from_trusted(wire[..wire.len() - 1].to_vec(), &index).is_err());
        let empty = TagSet::new(40, Vec::new()).unwrap();
        let read = TagSet::from_trusted(empty.wire().to_vec(), &empty.index_bytes()).unwrap();
        assert_eq!(read, empty);
        assert!(!read.contains(0));
    }
}
