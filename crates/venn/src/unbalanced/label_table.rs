//! `ub-cache`'s labels as a client holds them: each server item's sealed label
//! ([`super::labels`]) beside its τ-bit tag, sorted by tag — a table the client looks a
//! matched tag's label up in, and brings up to date with [`LabelDelta`]s (the labels set
//! and the tags removed since a version) as it does its tag set.
//!
//! Its wire form is τ, ℓ (the dataset's label length), the count (u64) and the entries,
//! each the tag in ⌈τ/8⌉ big-endian bytes and the sealed label ([`sealed_len`] of ℓ):
//! fixed-width entries, strictly ascending by tag, so that a lookup is a binary search
//! over the bytes as received. A table is consistent with its tag set when it holds
//! exactly the set's tags ([`LabelTable::has_tags_of`]): what a client checks after
//! every download and every delta, beside the set's digest. The labels' contents are
//! the server's to give; their check value ([`super::labels::open`]) catches any one
//! altered.

use super::labels::{sealed_len, MAX_LABEL};
use super::tag_set::TagSet;
use crate::net::{Reader, Writer};
use crate::{Error, Result};
use std::collections::BTreeMap;

/// The bytes of a table's wire form before its entries: τ, ℓ, the count.
const HEAD: usize = 1 + 1 + 8;

/// The bytes of a τ-bit tag in an entry.
fn tag_bytes(tau: u8) -> usize {
    usize::from(tau).div_ceil(8)
}

/// The bytes of an entry of a table of τ-bit tags and ℓ-byte labels.
fn entry_bytes(tau: u8, len: u8) -> usize {
    tag_bytes(tau) + sealed_len(usize::from(len))
}

/// The bytes of the wire form of a table of `count` entries of τ-bit tags and ℓ-byte
/// labels: what a client bounds a download by before it allocates.
pub fn table_wire_len(count: u64, tau: u8, len: u8) -> u64 {
    (HEAD as u64).saturating_add(count.saturating_mul(entry_bytes(tau, len) as u64))
}

/// A dataset's sealed labels, sorted by tag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelTable {
    tau: u8,
    len: u8,
    count: u64,
    wire: Vec<u8>,
}

/// Refuses τ and ℓ out of range.
fn check_widths(tau: u8, len: u8) -> Result<()> {
    match (1..=128).contains(&tau) && usize::from(len) <= MAX_LABEL {
        true => Ok(()),
        false => Err(Error::protocol(
            format!(
                "a label table of tags of 1 to 128 bits and labels of at most {MAX_LABEL} bytes"
            ),
            format!("{tau}-bit tags, {len}-byte labels"),
        )),
    }
}

impl LabelTable {
    /// The table of `entries` (tag, sealed label) of τ-bit tags and ℓ-byte labels, sorted
    /// here: refused if a tag has more bits, a sealed label is not of ℓ's size, or two
    /// entries share a tag.
    pub fn new(tau: u8, len: u8, mut entries: Vec<(u128, Vec<u8>)>) -> Result<LabelTable> {
        check_widths(tau, len)?;
        entries.sort_unstable_by_key(|(tag, _)| *tag);
        let sealed = sealed_len(usize::from(len));
        let tb = tag_bytes(tau);
        let mut w = Writer::new().u8(tau).u8(len).u64(entries.len() as u64);
        w.0.reserve(entries.len() * entry_bytes(tau, len));
        let mut previous = None;
        for (tag, label) in &entries {
            if tag.checked_shr(u32::from(tau)).unwrap_or(0) != 0
                || label.len() != sealed
                || previous >= Some(*tag)
            {
                return Err(Error::Usage(format!(
                    "a label table's entry for the tag {tag:#x}: a tag of more than {tau} \
                     bits, a sealed label not of {sealed} bytes, or a tag twice"
                )));
            }
            previous = Some(*tag);
            w = w.bytes(&tag.to_be_bytes()[16 - tb..]).bytes(label);
        }
        Ok(LabelTable {
            tau,
            len,
            count: entries.len() as u64,
            wire: w.0,
        })
    }

    /// Reads a table received from a server, of at most `max_count` entries: refused
    /// unless its length is its count's and its tags are below 2^τ, strictly ascending.
    pub fn from_bytes(bytes: Vec<u8>, max_count: u64) -> Result<LabelTable> {
        let mut r = Reader::new(&bytes, "a label table");
        let (tau, len, count) = (r.u8()?, r.u8()?, r.u64()?);
        check_widths(tau, len)?;
        if count > max_count || table_wire_len(count, tau, len) != bytes.len() as u64 {
            return Err(Error::protocol(
                format!("a label table of at most {max_count} entries, as long as its count"),
                format!("{count} entries in {} bytes", bytes.len()),
            ));
        }
        let table = LabelTable {
            tau,
            len,
            count,
            wire: bytes,
        };
        let high = tau.div_ceil(8) * 8 - tau;
        let top_clear = |t: &[u8]| t[0].checked_shr(8 - u32::from(high)).unwrap_or(0) == 0;
        let ordered = (0..count as usize).all(|i| {
            let tag = table.tag_at(i);
            top_clear(tag) && (i == 0 || table.tag_at(i - 1) < tag)
        });
        match ordered {
            true => Ok(table),
            false => Err(Error::protocol(
                format!("a label table of {tau}-bit tags in ascending order"),
                "a tag out of order or too wide",
            )),
        }
    }

    /// How many entries it holds.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// τ.
    pub fn tau(&self) -> u8 {
        self.tau
    }

    /// ℓ, the most bytes a label takes.
    pub fn label_len(&self) -> u8 {
        self.len
    }

    /// Its wire form as held (no copy).
    pub fn wire(&self) -> &[u8] {
        &self.wire
    }

    /// Entry `i`'s bytes.
    fn entry(&self, i: usize) -> &[u8] {
        let size = entry_bytes(self.tau, self.len);
        &self.wire[HEAD + i * size..HEAD + (i + 1) * size]
    }

    /// Entry `i`'s tag, as its big-endian bytes (ordered as the tags are).
    fn tag_at(&self, i: usize) -> &[u8] {
        &self.entry(i)[..tag_bytes(self.tau)]
    }

    /// The big-endian bytes of `tag` as an entry holds it.
    fn tag_key(&self, tag: u128) -> Vec<u8> {
        tag.to_be_bytes()[16 - tag_bytes(self.tau)..].to_vec()
    }

    /// Entry `i`'s tag and sealed label.
    fn tag_and_label(&self, i: usize) -> (u128, &[u8]) {
        let (tag, sealed) = self.entry(i).split_at(tag_bytes(self.tau));
        let mut full = [0u8; 16];
        full[16 - tag.len()..].copy_from_slice(tag);
        (u128::from_be_bytes(full), sealed)
    }

    /// Its tags, ascending.
    pub fn tags(&self) -> impl Iterator<Item = u128> + '_ {
        self.entries().map(|(tag, _)| tag)
    }

    /// Its entries, each a tag and its sealed label, ascending by tag.
    pub fn entries(&self) -> impl Iterator<Item = (u128, &[u8])> + '_ {
        (0..self.count as usize).map(|i| self.tag_and_label(i))
    }

    /// The sealed label of `tag`, if the table holds it.
    pub fn get(&self, tag: u128) -> Option<&[u8]> {
        let key = self.tag_key(tag);
        let (mut low, mut high) = (0, self.count as usize);
        while low < high {
            let mid = (low + high) / 2;
            match self.tag_at(mid).cmp(&key[..]) {
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid,
                std::cmp::Ordering::Equal => return Some(self.tag_and_label(mid).1),
            }
        }
        None
    }

    /// Whether it holds exactly the tags of `set`.
    pub fn has_tags_of(&self, set: &TagSet) -> bool {
        set.tau() == self.tau && set.len() == self.count && set.tags().eq(self.tags())
    }

    /// Refuses `delta` unless its tags and labels are of this table's widths.
    fn check_widths_of(&self, delta: &LabelDelta) -> Result<()> {
        let set = &delta.set;
        match set.tau == self.tau && set.len == self.len && delta.removes.tau() == self.tau {
            true => Ok(()),
            false => Err(Error::protocol(
                format!(
                    "a label delta of {}-bit tags, {}-byte labels",
                    self.tau, self.len
                ),
                format!("{}-bit tags, {}-byte labels", set.tau, set.len),
            )),
        }
    }

    /// The table with `delta` applied: its removed tags taken out (each must be held),
    /// then its labels set (a held tag's replaced, a new one's added). Refused, changing
    /// nothing, where the widths differ, a removed tag is not held or is also set.
    pub fn changed(&self, delta: &LabelDelta) -> Result<LabelTable> {
        self.check_widths_of(delta)?;
        let (set, removes) = (&delta.set, &delta.removes);
        let bad = || Error::protocol("a label delta removing held tags only", "another tag");
        let (mut removes, mut sets) = (
            removes.tags().peekable(),
            (0..set.count as usize).peekable(),
        );
        let mut out = Vec::with_capacity(self.wire.len() + set.wire.len());
        out.extend_from_slice(&self.wire[..HEAD]);
        let mut count = 0u64;
        let mut push = |out: &mut Vec<u8>, entry: &[u8]| {
            out.extend_from_slice(entry);
            count += 1;
        };
        for i in 0..self.count as usize {
            let (tag, _) = self.tag_and_label(i);
            while let Some(j) = sets.next_if(|&j| set.tag_and_label(j).0 < tag) {
                if removes.peek() == Some(&set.tag_and_label(j).0) {
                    return Err(bad());
                }
                push(&mut out, set.entry(j));
            }
            if removes.peek().is_some_and(|&r| r < tag) {
                return Err(bad());
            }
            let removed = removes.next_if_eq(&tag).is_some();
            match sets.next_if(|&j| set.tag_and_label(j).0 == tag) {
                Some(_) if removed => return Err(bad()),
                Some(j) => push(&mut out, set.entry(j)),
                None if removed => {}
                None => push(&mut out, self.entry(i)),
            }
        }
        if removes.next().is_some() {
            return Err(bad());
        }
        sets.for_each(|j| push(&mut out, set.entry(j)));
        out[2..HEAD].copy_from_slice(&count.to_le_bytes());
        Ok(LabelTable {
            tau: self.tau,
            len: self.len,
            count,
            wire: out,
        })
    }
}

impl LabelTable {
    /// This table, of version `from`, after `deltas` (wire forms), which must go on from
    /// version to version and end at `to`. The deltas are composed into one net change
    /// first (a tag's last word wins; a removal must find the tag held by the table or
    /// an earlier delta), then applied in one pass: one copy of the table however many
    /// deltas there are.
    pub fn after(&self, from: u64, deltas: &[Vec<u8>], to: u64) -> Result<LabelTable> {
        let bad = || Error::protocol("label deltas removing held tags only", "another tag");
        let mut version = from;
        let mut net: BTreeMap<u128, Option<Vec<u8>>> = BTreeMap::new();
        for delta in deltas {
            // A delta's parts are bounded by its bytes (each count is checked against
            // its length).
            let delta = LabelDelta::from_bytes(delta, u64::MAX)?;
            if delta.from != version || version.checked_add(1) != Some(delta.to) {
                return Err(Error::protocol(
                    format!("a label delta from version {version}"),
                    format!("versions {} to {}", delta.from, delta.to),
                ));
            }
            self.check_widths_of(&delta)?;
            let (set, removes) = (&delta.set, &delta.removes);
            for tag in removes.tags() {
                let held = match net.get(&tag) {
                    Some(label) => label.is_some(),
                    None => self.get(tag).is_some(),
                };
                if !held || set.get(tag).is_some() {
                    return Err(bad());
                }
                net.insert(tag, None);
            }
            for (tag, sealed) in set.entries() {
                net.insert(tag, Some(sealed.to_vec()));
            }
            version = delta.to;
        }
        if version != to {
            return Err(Error::protocol(
                format!("label deltas to version {to}"),
                format!("deltas to version {version}"),
            ));
        }
        let mut set = Vec::new();
        let mut removes = Vec::new();
        for (tag, label) in net {
            match label {
                Some(sealed) => set.push((tag, sealed)),
                None if self.get(tag).is_some() => removes.push(tag),
                None => {}
            }
        }
        let set = LabelTable::new(self.tau, self.len, set)?;
        let net = LabelDelta::new(from, to, set, TagSet::new(self.tau, removes)?);
        self.changed(&net)
    }
}

/// What changed in a label table between two versions: the labels set (new items', and
/// relabelled ones') and the tags removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelDelta {
    /// The version it applies to.
    pub from: u64,
    /// The version it makes.
    pub to: u64,
    set: LabelTable,
    removes: TagSet,
}

impl LabelDelta {
    /// The delta from version `from` to `to` setting the labels of `set` and removing
    /// the tags of `removes`.
    pub fn new(from: u64, to: u64, set: LabelTable, removes: TagSet) -> LabelDelta {
        LabelDelta {
            from,
            to,
            set,
            removes,
        }
    }

    /// Its wire form: `from`, `to` (u64 each), the labels set's and the removed tags'
    /// wire forms each after its length (u64).
    pub fn to_bytes(&self) -> Vec<u8> {
        let (set, removes) = (self.set.wire(), self.removes.wire());
        (Writer::new().u64(self.from).u64(self.to))
            .u64(set.len() as u64)
            .bytes(set)
            .u64(removes.len() as u64)
            .bytes(removes)
            .0
    }

    /// Reads a delta of at most `max_count` changes each way: refused unless its parts
    /// read exactly.
    pub fn from_bytes(bytes: &[u8], max_count: u64) -> Result<LabelDelta> {
        let mut r = Reader::new(bytes, "a label delta");
        let (from, to) = (r.u64()?, r.u64()?);
        let part = |r: &mut Reader| {
            let len = usize::try_from(r.u64()?).unwrap_or(usize::MAX);
            r.bytes(len).map(<[u8]>::to_vec)
        };
        let set = LabelTable::from_bytes(part(&mut r)?, max_count)?;
        let removes = TagSet::from_bytes(&part(&mut r)?, max_count)?;
        r.finish()?;
        Ok(LabelDelta {
            from,
            to,
            set,
            removes,
        })
    }

    /// The versions a delta's wire form names (its first 16 bytes).
    pub fn versions(bytes: &[u8]) -> Result<(u64, u64)> {
        let mut r = Reader::new(bytes, "a label delta");
        Ok((r.u64()?, r.u64()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::{Block, Prg};
    use std::collections::BTreeMap;

    fn sealed(prg: &mut Prg, len: u8) -> Vec<u8> {
        let mut s = vec![0u8; sealed_len(usize::from(len))];
        prg.fill_bytes(&mut s);
        s
    }

    fn table(tau: u8, len: u8, model: &BTreeMap<u128, Vec<u8>>) -> LabelTable {
        let entries = model.iter().map(|(t, l)| (*t, l.clone())).collect();
        LabelTable::new(tau, len, entries).unwrap()
    }

    /// A table through random deltas is the model's at every step, reads back from its
    /// wire form, finds each label and no other tag, and matches the tag set of the
    /// model's tags only.
    #[test]
    fn tables_follow_their_deltas() {
        let mut prg = Prg::from_seed(Block::from(41));
        for (tau, len) in [(44u8, 0u8), (61, 8), (128, 64), (3, 1)] {
            let limit = match tau {
                128 => u128::MAX,
                t => (1u128 << t) - 1,
            };
            let random_tag = |prg: &mut Prg| {
                let mut b = [0u8; 16];
                prg.fill_bytes(&mut b);
                u128::from_le_bytes(b) & limit
            };
            let mut model = BTreeMap::new();
            let mut held = table(tau, len, &model);
            for step in 0..12u64 {
                let mut set = BTreeMap::new();
                let mut removes = Vec::new();
                for tag in model.keys().copied().collect::<Vec<_>>() {
                    match prg.u64() % 8 {
                        0 => removes.push(tag),
                        1 => _ = set.insert(tag, sealed(&mut prg, len)),
                        _ => {}
                    }
                }
                for _ in 0..prg.u64() % 40 {
                    let tag = random_tag(&mut prg);
                    if !model.contains_key(&tag) {
                        set.insert(tag, sealed(&mut prg, len));
                    }
                }
                let delta = LabelDelta::new(
                    step,
                    step + 1,
                    table(tau, len, &set),
                    TagSet::new(tau, removes.clone()).unwrap(),
                );
                let wire = delta.to_bytes();
                assert_eq!(LabelDelta::versions(&wire).unwrap(), (step, step + 1));
                let delta = LabelDelta::from_bytes(&wire, 1 << 20).unwrap();
                held = held.changed(&delta).unwrap();
                removes.iter().for_each(|t| _ = model.remove(t));
                model.extend(set);
                assert_eq!(held, table(tau, len, &model), "τ {tau}, step {step}");
                let read = LabelTable::from_bytes(held.wire().to_vec(), model.len() as u64);
                assert_eq!(read.unwrap(), held);
                for (tag, label) in &model {
                    assert_eq!(held.get(*tag), Some(&label[..]));
                }
                let stranger = random_tag(&mut prg);
                if !model.contains_key(&stranger) {
                    assert_eq!(held.get(stranger), None);
                }
                let tags: Vec<u128> = model.keys().copied().collect();
                assert!(held.has_tags_of(&TagSet::new(tau, tags.clone()).unwrap()));
                if let Some((&first, _)) = model.first_key_value() {
                    let fewer = TagSet::new(tau, tags[1..].to_vec()).unwrap();
                    assert!(!held.has_tags_of(&fewer), "{first:#x} left out");
                }
            }
        }
    }

    /// Deltas removing a tag the table lacks, or setting one they remove, are refused;
    /// so are tables out of order, too wide, of another length than their count, or
    /// over the count allowed.
    #[test]
    fn malformed_tables_and_deltas_are_refused() {
        let mut prg = Prg::from_seed(Block::from(42));
        let (tau, len) = (20u8, 4u8);
        let model: BTreeMap<u128, Vec<u8>> =
            [(5, sealed(&mut prg, len)), (9, sealed(&mut prg, len))].into();
        let held = table(tau, len, &model);
        let delta = |set: &[u128], removes: &[u128], prg: &mut Prg| {
            let set = set.iter().map(|&t| (t, sealed(prg, len))).collect();
            LabelDelta::new(
                0,
                1,
                table(tau, len, &set),
                TagSet::new(tau, removes.to_vec()).unwrap(),
            )
        };
        assert!(
            held.changed(&delta(&[], &[6], &mut prg)).is_err(),
            "not held"
        );
        assert!(
            held.changed(&delta(&[], &[10], &mut prg)).is_err(),
            "past the end"
        );
        assert!(
            held.changed(&delta(&[5], &[5], &mut prg)).is_err(),
            "set and removed"
        );
        assert!(held.changed(&delta(&[7], &[9], &mut prg)).is_ok());
        let wide = LabelDelta::new(
            0,
            1,
            table(21, len, &BTreeMap::new()),
            TagSet::new(tau, vec![]).unwrap(),
        );
        assert!(held.changed(&wide).is_err(), "another τ");

        assert!(LabelTable::new(tau, len, vec![(1 << 20, sealed(&mut prg, len))]).is_err());
        assert!(LabelTable::new(tau, len, vec![(1, vec![0; 3])]).is_err());
        assert!(LabelTable::new(tau, 65, vec![]).is_err());
        let wire = held.wire().to_vec();
        assert!(
            LabelTable::from_bytes(wire.clone(), 1).is_err(),
            "over the count"
        );
        assert!(LabelTable::from_bytes(wire[..wire.len() - 1].to_vec(), 9).is_err());
        let entry = entry_bytes(tau, len);
        let mut swapped = wire.clone();
        swapped[HEAD..HEAD + entry].copy_from_slice(&wire[HEAD + entry..]);
        swapped[HEAD + entry..].copy_from_slice(&wire[HEAD..HEAD + entry]);
        assert!(LabelTable::from_bytes(swapped, 9).is_err(), "out of order");
        let mut twice = wire.clone();
        twice[HEAD + entry..HEAD + entry + 3].copy_from_slice(&wire[HEAD..HEAD + 3]);
        assert!(LabelTable::from_bytes(twice, 9).is_err(), "a tag twice");
        let mut wide = wire.clone();
        wide[HEAD] |= 0x10;
        assert!(LabelTable::from_bytes(wide, 9).is_err(), "a 21st bit");
        assert!(LabelTable::from_bytes(wire, 9).is_ok());
        let cut = delta(&[7], &[], &mut prg).to_bytes();
        assert!(LabelDelta::from_bytes(&cut[..cut.len() - 1], 9).is_err());
    }
}
