//! Repeated keys' later rows in a run in buckets: sent once, after the last bucket, for
//! the whole run.
//!
//! In one run a sender item whose key has several rows carries its first row's record in
//! the answers' order and its later rows after all records, tagged and shuffled (RR22's
//! payloads, docs/protocols.md: the number of later rows in all is what the receiver
//! learns of them beyond its matches'). Bucket by bucket the same stream would tell the
//! receiver how many later rows hash into each bucket — the multiplicities of the keys of
//! each bucket, unmatched ones included. So a bucket's session carries each item's first
//! row only (the sender's items hold no repeats: [`InBuckets`]), each party keeps its
//! items' pad seeds ([`PadSeeds`]: the item's block and its OPRF value with the session's
//! pad key folded in, the sender's of its repeated items, the receiver's of its matches),
//! and after the last bucket the sender sends every bucket's later rows in one shuffled
//! stream ([`send`]), tags and pads made from the seeds exactly as each bucket's session
//! would have made them; the receiver looks up its matches' ([`receive`]).
//!
//! What the receiver learns is what one run would tell it: the later rows' number over
//! the whole run, and the rows of the keys it matched; the sender learns nothing. A tag
//! or pad of an item the receiver did not match is keyed by an OPRF value it does not
//! know, in whichever bucket the item was, so it is pseudorandom to it; in `rr22-m` the
//! pad key of each bucket comes from that bucket's coin toss, opened only after the
//! receiver's OKVS was fixed, as in one run.

use crate::net::Channel;
use crate::oprf::payloads::{self, PadKey};
use crate::{Error, Result, MAX_ITEMS};

pub use crate::framework::{InBuckets, PadSeeds};
pub use crate::oprf::payloads::Repeated;

/// The sender's side: the later rows of the items whose pad `seeds` it kept over the
/// buckets — `of[e]`, the seed row `e` belongs to, and its record (`width` bytes each,
/// in `records`), each item's in the order its rows came — to a receiver that brought
/// `receiver_rows` rows to the run (which sizes the tags: [`receive`]). Returns once the
/// receiver said it read them all (the buckets' sessions confirmed theirs), so that both
/// parties end the run alike.
pub fn send(
    chan: &mut dyn Channel,
    seeds: &PadSeeds,
    (of, records): (&[u32], &[u8]),
    width: usize,
    receiver_rows: u64,
) -> Result<()> {
    if of.len() as u64 > MAX_ITEMS {
        return Err(Error::Usage(format!(
            "{} later rows of repeated keys, more than the {MAX_ITEMS} a run carries",
            of.len()
        )));
    }
    let mut prg = crate::crypto::Prg::from_entropy();
    let items = (&seeds.x[..], &seeds.v[..]);
    let key = PadKey::FOLDED;
    let rows = (of, records);
    payloads::send_repeats(chan, key, &mut prg, items, rows, width, receiver_rows)?;
    chan.recv_exact(0, "the receiver's word that it read the later rows")?;
    Ok(())
}

/// The receiver's side: the later rows of the matched items whose pad `seeds` it kept
/// over the buckets, in their order, each item's in the sender's row order. The sender's
/// number of later rows is refused past `most` (its rows over the run) before anything
/// is allocated for them; `receiver_rows`, the rows it brought to the run, sizes the tags
/// as the sender does. The sender is told once all are read.
pub fn receive(
    chan: &mut dyn Channel,
    seeds: &PadSeeds,
    most: u64,
    receiver_rows: u64,
    width: usize,
) -> Result<Repeated> {
    let matches: Vec<(u32, u32)> = (0..seeds.len() as u32).map(|k| (k, 0)).collect();
    let items = (&seeds.x[..], &seeds.v[..]);
    let (key, most) = (PadKey::FOLDED, most.min(MAX_ITEMS));
    let got = payloads::receive_repeats(chan, key, most, receiver_rows, width, &matches, items)?;
    chan.send(&[])?;
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::{Block, Prg};
    use crate::net::mem_pair;
    use std::time::Duration;

    /// Two buckets' sessions, each under its own pad key: the sender keeps the seeds of
    /// its items with later rows, the receiver its matches' (and one item under a wrong
    /// OPRF value); after both, the receiver reads exactly its matches' later rows, in
    /// row order, from the one stream.
    #[test]
    fn later_rows_of_many_buckets_reach_the_matches_only() {
        let mut prg = Prg::from_seed(Block::from(23u64));
        let width = 20;
        let (mut sent, mut kept) = (PadSeeds::default(), PadSeeds::default());
        let (mut of, mut records) = (Vec::new(), Vec::new());
        // What the receiver should read, match by match.
        let mut expected: Vec<Vec<Vec<u8>>> = Vec::new();
        for bucket in 0..2u8 {
            let key = PadKey::of_session(&[bucket; 32]);
            let n = 50;
            let x: Vec<Block> = (0..n).map(|_| prg.block()).collect();
            let v: Vec<Block> = (0..n).map(|_| prg.block()).collect();
            let (s, r) = (key.seeds(&x, &v), key.seeds(&x, &v));
            // Item i has i % 3 later rows, interleaved; the receiver matched every
            // other item.
            let base = sent.len() as u32;
            let mut rows: Vec<Vec<Vec<u8>>> = vec![Vec::new(); n];
            for i in (0..n).filter(|i| i % 3 > 0) {
                sent.push_from(&s, i);
            }
            let with_rows: Vec<usize> = (0..n).filter(|i| i % 3 > 0).collect();
            for round in 1..3 {
                for (at, &i) in with_rows.iter().enumerate() {
                    if i % 3 >= round {
                        let mut record = vec![0u8; width];
                        prg.fill_bytes(&mut record);
                        of.push(base + at as u32);
                        records.extend_from_slice(&record);
                        rows[i].push(record);
                    }
                }
            }
            for i in (0..n).step_by(2) {
                kept.push_from(&r, i);
                expected.push(std::mem::take(&mut rows[i]));
            }
        }
        // An item the receiver holds under a wrong OPRF value finds nothing.
        let wrong = PadKey::of_session(&[9; 32]).seeds(&sent.x[..1], &sent.v[..1]);
        kept.push_from(&wrong, 0);
        expected.push(Vec::new());
        let (mut a, mut b) = mem_pair(Duration::from_secs(10));
        let receiver_rows = kept.len() as u64;
        let got = std::thread::scope(|scope| {
            scope.spawn(|| send(&mut a, &sent, (&of, &records), width, receiver_rows).unwrap());
            receive(&mut b, &kept, of.len() as u64, receiver_rows, width).unwrap()
        });
        let mut later = got.records.chunks(width);
        for (k, rows) in expected.iter().enumerate() {
            assert_eq!(got.counts[k] as usize, rows.len(), "match {k}");
            for row in rows {
                assert_eq!(later.next(), Some(&row[..]), "match {k}");
            }
        }
        assert_eq!(later.next(), None);
    }
}
