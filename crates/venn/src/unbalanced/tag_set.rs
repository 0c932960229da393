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

use crate::{Error, Result};

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

/// BLAKE3 of a set's wire form (its head, then `bits`), hashed in place.
fn digest_of(head: &[u8; WIRE_HEAD], bits: &[u8]) -> [u8; 32] {
    *blake3::Hasher::new()
        .update(head)
        .update(bits)
        .finalize()
        .as_bytes()
}

/// A sorted multiset of τ-bit tags, Rice-coded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TagSet {
    tau: u8,
    rice: u8,
    len: u64,
    /// The coded gaps, most significant bit first, `bit_len` of them.
    bits: Vec<u8>,
    bit_len: u64,
    /// The last tag of each whole block of [`BLOCK`] tags, and the bit offset after it.
    index: Vec<(u128, u64)>,
    /// Its digest, computed once ([`TagSet::digest`]).
    digest: [u8; 32],
}

/// The Rice parameter for `len` tags of τ bits (below 128, so that shifts by it hold).
fn rice(tau: u8, len: u64) -> u8 {
    let log = u64::BITS - len.max(1).saturating_sub(1).leading_zeros();
    u32::from(tau).saturating_sub(log).min(127) as u8
}

/// Bits written most significant first, into 64-bit words.
#[derive(Default)]
struct Writer {
    words: Vec<u64>,
    len: u64,
}

impl Writer {
    /// The low `count` bits of `value` (at most 64), high first.
    fn put(&mut self, value: u64, count: u32) {
        if count == 0 {
            return;
        }
        let offset = (self.len % 64) as u32;
        if offset == 0 {
            self.words.push(0);
        }
        let value = value & (u64::MAX >> (64 - count));
        let (free, last) = (64 - offset, self.words.len() - 1);
        if count <= free {
            self.words[last] |= value << (free - count);
        } else {
            self.words[last] |= value >> (count - free);
            self.words.push(value << (64 - (count - free)));
        }
        self.len += u64::from(count);
    }

    /// `quotient` ones, then a zero.
    fn unary(&mut self, quotient: u128) {
        let mut left = quotient;
        while left >= 64 {
            self.put(u64::MAX, 64);
            left -= 64;
        }
        self.put(u64::MAX, left as u32);
        self.put(0, 1);
    }

    /// The low `count` bits of `value` (at most 127), high first.
    fn bits(&mut self, value: u128, count: u8) {
        let count = u32::from(count);
        if count > 64 {
            self.put((value >> 64) as u64, count - 64);
            self.put(value as u64, 64);
        } else {
            self.put(value as u64, count);
        }
    }

    /// The bytes written, the last one's unused bits zero.
    fn into_bytes(self) -> Vec<u8> {
        let mut bytes: Vec<u8> = self.words.iter().flat_map(|w| w.to_be_bytes()).collect();
        bytes.truncate(self.len.div_ceil(8) as usize);
        bytes
    }
}

/// Bits read from `at`, most significant first, never past `len`.
struct Reader<'a> {
    bytes: &'a [u8],
    len: u64,
    at: u64,
}

impl Reader<'_> {
    /// The 64 bits from `at` on (zeros past the bytes).
    fn window(&self) -> u64 {
        let byte = (self.at / 8) as usize;
        let mut buf = [0u8; 16];
        let end = (byte + 9).min(self.bytes.len());
        if byte < end {
            buf[..end - byte].copy_from_slice(&self.bytes[byte..end]);
        }
        ((u128::from_be_bytes(buf) << (self.at % 8)) >> 64) as u64
    }

    /// The next `count` bits (at most 127), if there are as many before `len`.
    fn take(&mut self, count: u8) -> Option<u128> {
        if self.len - self.at < u64::from(count) {
            return None;
        }
        let (mut value, mut left) = (0u128, u32::from(count));
        while left > 0 {
            let k = left.min(64);
            value = value << k | u128::from(self.window() >> (64 - k));
            self.at += u64::from(k);
            left -= k;
        }
        Some(value)
    }

    /// A gap coded with Rice parameter `rice`, if it is below `limit`: the unary
    /// quotient read a window at a time.
    fn gap(&mut self, rice: u8, limit: u128) -> Option<u128> {
        let most = limit >> rice;
        let mut quotient = 0u128;
        loop {
            let available = (self.len - self.at).min(64);
            if available == 0 {
                return None;
            }
            let ones = u64::from((!self.window()).leading_zeros());
            if ones < available {
                quotient += u128::from(ones);
                self.at += ones + 1;
                break;
            }
            quotient += u128::from(available);
            self.at += available;
            if quotient > most {
                return None;
            }
        }
        if quotient > most {
            return None;
        }
        Some(quotient << rice | self.take(rice)?)
    }
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
        let mut encoder = Encoder::new(tau, tags.len() as u64);
        tags.into_iter().for_each(|tag| encoder.push(tag));
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

    /// Its tags, ascending, decoded from `block`'s start on.
    fn tags_of_block(&self, block: usize) -> impl Iterator<Item = u128> + '_ {
        let (mut previous, at) = match block {
            0 => (0, 0),
            b => self.index[b - 1],
        };
        let mut reader = Reader {
            bytes: &self.bits,
            len: self.bit_len,
            at,
        };
        let limit = 1u128.checked_shl(u32::from(self.tau)).unwrap_or(u128::MAX);
        let left = self.len as usize - block * BLOCK;
        (0..left).map_while(move |_| {
            previous += reader.gap(self.rice, limit)?;
            Some(previous)
        })
    }

    /// Its tags, ascending.
    pub fn tags(&self) -> impl Iterator<Item = u128> + '_ {
        self.tags_of_block(0)
    }

    /// Whether it holds `tag`: the one block that may hold it decoded.
    pub fn contains(&self, tag: u128) -> bool {
        // Every block before this one ends below `tag`.
        let block = self.index.partition_point(|&(last, _)| last < tag);
        self.tags_of_block(block)
            .take(BLOCK)
            .take_while(|&t| t <= tag)
            .any(|t| t == tag)
    }

    /// Its wire form: τ, the count (u64), the coded bits' count (u64), the bits.
    pub fn to_bytes(&self) -> Vec<u8> {
        let (head, bits) = self.wire();
        [&head[..], bits].concat()
    }

    /// Its wire form in two parts, the head and the bits as held: what a server sends
    /// without a copy of the set.
    pub fn wire(&self) -> ([u8; WIRE_HEAD], &[u8]) {
        (wire_head(self.tau, self.len, self.bit_len), &self.bits)
    }

    /// Reads a tag set received from a server, of at most `max_len` tags: refused unless
    /// every length agrees, every tag decodes below 2^τ in order, and the bits end where
    /// the last tag does (one coding of a set only). The index is rebuilt.
    pub fn from_bytes(bytes: &[u8], max_len: u64) -> Result<TagSet> {
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
        let set = TagSet {
            tau,
            rice: rice(tau, len),
            len,
            bits: body.to_vec(),
            bit_len,
            index: Vec::new(),
            digest: digest_of(&wire_head(tau, len, bit_len), body),
        };
        let (mut index, mut reader) = (
            Vec::new(),
            Reader {
                bytes: &set.bits,
                len: bit_len,
                at: 0,
            },
        );
        let limit = 1u128.checked_shl(u32::from(tau)).unwrap_or(u128::MAX);
        let mut tag = 0u128;
        for i in 0..len {
            let gap = reader
                .gap(set.rice, limit)
                .ok_or_else(|| malformed(format!("tag {i} does not decode")))?;
            tag = match tag.checked_add(gap) {
                Some(t) if t < limit || tau == 128 => t,
                _ => return Err(malformed(format!("tag {i} has more than {tau} bits"))),
            };
            if (i as usize + 1).is_multiple_of(BLOCK) {
                index.push((tag, reader.at));
            }
        }
        if reader.at != bit_len {
            return Err(malformed(format!(
                "{} bits after the last tag",
                bit_len - reader.at
            )));
        }
        Ok(TagSet { index, ..set })
    }

    /// Its digest: BLAKE3 of τ, the count and the coded bits (the wire form).
    pub fn digest(&self) -> [u8; 32] {
        self.digest
    }

    /// The set with `removes` taken out (a tag once for each time it is named, refused if
    /// it holds it fewer times) and `adds` put in: an update's delta applied, in one pass
    /// over the three sorted sets, coded as it goes.
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
        let mut encoder = Encoder::new(self.tau, len);
        let (mut removes, mut adds) = (removes.tags().peekable(), adds.tags().peekable());
        for tag in self.tags() {
            if removes.next_if_eq(&tag).is_some() {
                continue;
            }
            if removes.peek().is_some_and(|&r| r < tag) {
                return Err(lacking());
            }
            while let Some(add) = adds.next_if(|&a| a <= tag) {
                encoder.push(add);
            }
            encoder.push(tag);
        }
        if removes.next().is_some() {
            return Err(lacking());
        }
        adds.for_each(|add| encoder.push(add));
        encoder.finish()
    }
}

/// A set coded as its tags come, in ascending order: the gaps, the block index.
struct Encoder {
    tau: u8,
    rice: u8,
    len: u64,
    writer: Writer,
    index: Vec<(u128, u64)>,
    previous: u128,
    count: u64,
}

impl Encoder {
    /// The coder of a set of `len` tags of τ bits.
    fn new(tau: u8, len: u64) -> Encoder {
        Encoder {
            tau,
            rice: rice(tau, len),
            len,
            writer: Writer::default(),
            index: Vec::new(),
            previous: 0,
            count: 0,
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
        if self.count.is_multiple_of(BLOCK as u64) {
            self.index.push((tag, self.writer.len));
        }
    }

    /// The set, if exactly its `len` tags were pushed.
    fn finish(self) -> Result<TagSet> {
        if self.count != self.len {
            return Err(Error::protocol(
                format!("a set of {} tags", self.len),
                format!("{} tags", self.count),
            ));
        }
        let (bit_len, bits) = (self.writer.len, self.writer.into_bytes());
        Ok(TagSet {
            tau: self.tau,
            rice: self.rice,
            len: self.len,
            digest: digest_of(&wire_head(self.tau, self.len, bit_len), &bits),
            bits,
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
            let wire = set.to_bytes();
            assert!(
                wire.len() as u64 <= max_wire_len(n as u64, tau),
                "n {n} τ {tau}"
            );
            if n >= 4096 {
                let expected = expected_wire_len(n as u64, tau) as f64;
                let ratio = wire.len() as f64 / expected;
                assert!((0.97..1.03).contains(&ratio), "n {n} τ {tau}: {ratio}");
            }
            let read = TagSet::from_bytes(&wire, n as u64).unwrap();
            assert_eq!(read, set);
            assert_eq!(read.digest(), set.digest());
            assert_eq!(set.digest(), *blake3::hash(&wire).as_bytes());
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
        let bytes = set.to_bytes();
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
            bits: vec![0xff; 4],
            bit_len: 32,
            index: Vec::new(),
            digest: [0; 32],
        };
        assert!(TagSet::from_bytes(&ones.to_bytes(), 1).is_err());
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
}
