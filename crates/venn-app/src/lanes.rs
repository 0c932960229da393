//! A bucketed run spread over lanes, for parties whose work runs on a cluster (the Python
//! package's `venn.ray`): the two coordinators agree on a run plan and a number of lanes
//! over their own link; each lane — a worker of each party, on any machine of its
//! cluster, over a TLS link of their own — runs its share of the buckets (bucket c in lane
//! c mod L); the coordinators merge what the lanes learned, in input order.
//!
//! The buckets, their padding and what they reveal are those of [`crate::buckets`]: the
//! output is the one run's over all keys, whichever lane runs a bucket. Each bucket's
//! session is bound to its lane's link, to the plans both coordinators sent, to the
//! coordinators' link and to c — so a lane's session cannot be moved to another run, lane
//! or bucket — and a run succeeds only once both coordinators have confirmed that every
//! lane ran every bucket.

use crate::buckets::{self, padded_size, run_bucket, BucketKeys, Grouped, Repeats};
use crate::columns::Layout;
use crate::input::memory::KeysInMemory;
use crate::input::source::InputSource;
use crate::join::Shape;
use crate::output::Written;
use crate::party::{
    check_key_columns, deliver_keys, peer_layout, refuse_whole_outputs_in_buckets, Link,
};
use crate::sink::OutputSink;
use crate::threads;
use crate::transport::Transport;
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;
use venn::later_rows::{InBuckets, PadSeeds, Repeated};
use venn::net::{Channel, Reader, Writer};
use venn::protocols::{find, Offline, Options, Output, Protocol};
use venn::session::run_plan::{Agreed, Align, Columns, Plan};
use venn::session::{looks_like_hello, Role, HELLO_PREFIX};
use venn::{Error, Items, Result, RunOptions};

/// The most lanes a run may have.
pub const MAX_LANES: usize = 1024;
/// The longest lane address a coordinator accepts from its peer.
const MAX_ADDRESS: usize = 256;
const JOB_MAGIC: &[u8; 8] = b"VENNLANE";

/// One party's coordinator of a run in lanes: holds the input and the link to the peer's
/// coordinator; hands out lane jobs; merges the lanes' results.
pub struct Coordinator {
    chan: Box<dyn Channel>,
    role: Role,
    both: bool,
    listens: bool,
    protocol: &'static dyn Protocol,
    options: Options,
    input: KeysInMemory,
    /// The input's key indices in each bucket, and their later rows.
    grouped: Grouped,
    agreed: Agreed,
    /// The columns the peer reveals (named as we asked), if it reveals any.
    peer: Option<Layout>,
    lanes: usize,
    /// What every bucket's session is bound to besides its lane's link and number.
    binding: [u8; 32],
    max_peer_items: u64,
    max_memory: u64,
    threads: usize,
    upload_deadline: Option<Duration>,
}

/// What the lanes of a run did, summed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Buckets run.
    pub buckets: u64,
    /// Our distinct keys.
    pub n_self: u64,
    /// The peer's rows, as its run plan announced them.
    pub n_peer: u64,
    /// Seconds the lanes' sessions took, summed.
    pub seconds: f64,
    /// Bytes the lanes sent, summed.
    pub bytes_sent: u64,
    /// Bytes the lanes received, summed.
    pub bytes_received: u64,
    /// The matched keys, for a party that learns them.
    pub matched_keys: Option<u64>,
}

impl Coordinator {
    /// Reaches the peer's coordinator as `link` says and agrees on the run: buckets (at
    /// least `lanes`, at most about `bucket_rows` keys each) and lanes (the fewer of the
    /// two parties'), with the columns the input reveals and those asked of the peer
    /// (`peer_columns`). Refused before the peer is contacted: protocols whose receiver
    /// learns only a function of the whole intersection (a count per bucket would tell
    /// more), keys the protocol cannot take, and columns it cannot carry or a party that
    /// learns nothing asks for.
    #[allow(clippy::too_many_arguments)] // The party, its input and the lanes' shape.
    pub fn open(
        link: &Link,
        role: Role,
        both: bool,
        input: KeysInMemory,
        peer_columns: Vec<String>,
        lanes: usize,
        bucket_rows: Option<u64>,
        on_bound: impl FnOnce(SocketAddr),
    ) -> Result<Coordinator> {
        if !(1..=MAX_LANES).contains(&lanes) {
            return Err(Error::Usage(format!("a run has 1 to {MAX_LANES} lanes")));
        }
        let protocol = link.protocol()?;
        // Each lane's worker bounds the count to its own machine's cores.
        threads::check(link.spec.threads)?;
        refuse_whole_outputs_in_buckets(protocol)?;
        if link.dealer.is_some() || link.spec.options.offline != Offline::default() {
            return Err(Error::Usage(
                "a run in lanes takes its offline phase from OT between the lanes (the \
                 default), not from a dealer or BFV"
                    .into(),
            ));
        }
        protocol.check_values(role, input.keys().value_columns())?;
        let reveals = input.layout().map_or_else(Vec::new, |l| l.columns.clone());
        let asks = !peer_columns.is_empty();
        check_key_columns(protocol, (role, both), !reveals.is_empty(), asks)?;
        let mut options = link.spec.options;
        let width = Columns::record_width(&reveals);
        match role {
            Role::Sender => options.payload = width,
            Role::Receiver => options.receiver_payload = width,
        }
        protocol.check_items(options, input.keys())?;
        options.check_records(role, input.keys())?;
        link.check_endpoint()?;
        let rows = input.keys().len() as u64;
        // Enough buckets for every lane, but no more than the rows justify (the peer
        // refuses more).
        let justified = rows.max(1).next_power_of_two().trailing_zeros() as u8;
        let for_lanes = lanes.next_power_of_two().trailing_zeros() as u8;
        let plan = Plan {
            rows,
            log2_buckets: buckets::log2_buckets(rows, bucket_rows)
                .max(for_lanes)
                .min(justified),
            form: input.form(),
            columns: Columns::new(reveals, peer_columns)?,
            align: Align::None,
        };
        let mut chan = link.connect(on_bound, None)?;
        let agreed = link.exchange(&mut *chan, plan, role)?;
        (options.payload, options.receiver_payload) = agreed.record_widths(role);
        let peer = peer_layout(&agreed)?;
        chan.send(&(lanes as u64).to_le_bytes())?;
        let peer_lanes = u64::from_le_bytes(
            (chan.recv(8)?.try_into())
                .map_err(|_| Error::Handshake("the peer's lane count is not 8 bytes".into()))?,
        );
        if !(1..=MAX_LANES as u64).contains(&peer_lanes) {
            return Err(Error::Handshake(format!(
                "the peer asks for {peer_lanes} lanes"
            )));
        }
        let buckets = 1usize << agreed.log2_buckets();
        let lanes = lanes.min(peer_lanes as usize).min(buckets);
        let mut h = blake3::Hasher::new_derive_key("venn 2026-11 lanes of a run");
        h.update(&agreed.digest());
        h.update(&chan.binding().unwrap_or_default());
        h.update(&(lanes as u64).to_le_bytes());
        let grouped = Grouped::new(input.keys(), agreed.log2_buckets());
        Ok(Coordinator {
            chan,
            role,
            both,
            listens: matches!(link.peer, crate::party::PeerAddr::Listen(_)),
            protocol,
            options,
            input,
            grouped,
            binding: *h.finalize().as_bytes(),
            agreed,
            peer,
            lanes,
            max_peer_items: link.spec.max_peer_items,
            max_memory: link.spec.max_memory,
            threads: link.spec.threads,
            upload_deadline: link.spec.upload_deadline,
        })
    }

    /// The lanes agreed on.
    pub fn lanes(&self) -> usize {
        self.lanes
    }

    /// Whether this side's lanes listen (as its coordinator did) and the peer's connect.
    pub fn listens(&self) -> bool {
        self.listens
    }

    /// Lane `lane`'s job: what its worker needs (see [`LaneJob`]), as bytes.
    pub fn job(&self, lane: usize) -> Vec<u8> {
        let log2 = self.agreed.log2_buckets();
        // Bucket c goes to lane c mod L.
        let mine = || {
            (self.grouped.groups.iter().enumerate())
                .skip(lane)
                .step_by(self.lanes)
        };
        let w = Writer::new()
            .bytes(JOB_MAGIC)
            .u8(matches!(self.role, Role::Receiver) as u8)
            .u8(self.both as u8)
            .str8(self.protocol.info().name);
        // Every protocol option, as the handshake carries them.
        let mut w = self
            .options
            .write(w)
            .u64(self.threads as u64)
            .u64(self.max_memory)
            .u64(
                self.max_peer_items
                    .min(padded_size(self.agreed.peer.rows, log2)),
            )
            .u64(padded_size(self.agreed.ours.rows, log2))
            .bytes(&self.binding)
            .u64(self.agreed.peer.rows)
            // Milliseconds; 0, none set.
            .u64(
                self.upload_deadline
                    .map_or(0, |d| d.as_millis().max(1) as u64),
            )
            .u64(mine().count() as u64);
        // Each bucket: its number, its key count and bytes, then its keys' indices in the
        // input and lengths (u32 each: an input has fewer than 2^32 keys, each shorter),
        // then the keys' bytes, then their records if they carry any (each of the width
        // the options give) — laid out to be read back in bulk — and then their later
        // rows (a receiver's) or which of them have later rows (a sender's).
        let keys = self.input.keys();
        let records = keys.records();
        let blobs: Vec<usize> = mine()
            .map(|(_, group)| group.iter().map(|&k| keys.get(k as usize).len()).sum())
            .collect();
        let keys_in = mine().map(|(_, group)| group.len()).sum::<usize>();
        w.0.reserve(blobs.iter().sum::<usize>() + keys_in * 8 + blobs.len() * 24);
        for ((c, group), blob) in mine().zip(blobs) {
            w = w.u64(c as u64).u64(group.len() as u64).u64(blob as u64);
            for &k in group {
                w.0.extend_from_slice(&k.to_le_bytes());
            }
            for &k in group {
                w.0.extend_from_slice(&(keys.get(k as usize).len() as u32).to_le_bytes());
            }
            for &k in group {
                w.0.extend_from_slice(keys.get(k as usize));
            }
            if let Some((records, width)) = records {
                for &k in group {
                    let at = k as usize * width;
                    w.0.extend_from_slice(&records[at..at + width]);
                }
                // A receiver's later rows go in their buckets; a sender's stay here, for
                // the one stream after every lane ran, and its lanes are told only which
                // keys have them, to keep their pad seeds.
                let later = match self.role {
                    Role::Receiver => self.grouped.repeats_of(keys, group),
                    Role::Sender => Repeats {
                        of: self.grouped.repeated_in(group),
                        records: Vec::new(),
                    },
                };
                w = w.u64(later.of.len() as u64);
                (later.of.iter()).for_each(|p| w.0.extend_from_slice(&p.to_le_bytes()));
                w.0.extend_from_slice(&later.records);
            }
        }
        w.0
    }

    /// Sends the peer's coordinator the addresses this side's lanes listen on, in lane order.
    pub fn send_addresses(&mut self, addresses: &[String]) -> Result<()> {
        if addresses.len() != self.lanes || addresses.iter().any(|a| a.len() > MAX_ADDRESS) {
            return Err(Error::Usage(format!(
                "one address (at most {MAX_ADDRESS} bytes) per lane, {} of them",
                self.lanes
            )));
        }
        let frame = addresses.iter().fold(Writer::new(), |w, a| w.str8(a));
        self.chan.send(&frame.0)
    }

    /// The addresses the peer's lanes listen on, in lane order.
    pub fn recv_addresses(&mut self) -> Result<Vec<String>> {
        let frame = self.chan.recv(self.lanes * (MAX_ADDRESS + 1))?;
        let mut r = Reader::new(&frame, "lane addresses");
        let addresses = (0..self.lanes).map(|_| r.str8()).collect::<Result<_>>()?;
        r.finish()?;
        Ok(addresses)
    }

    /// Tells the peer's coordinator, best effort, that this side gives up and why.
    pub fn abort(&mut self, reason: &str) {
        self.chan.abort(reason);
    }

    /// Merges the lanes' results (any order, each lane once), confirms with the peer's
    /// coordinator that both sides' lanes ran every bucket, and hands `sink` what the run
    /// output, as one run over the input would (as [`run_keys`](crate::party::run_keys) does: for a party that learns
    /// the intersection, the matched positions of the input, joined to the peer's rows of
    /// their keys where it reveals columns). Returns what the run did.
    pub fn finish(
        mut self,
        results: &[Vec<u8>],
        sink: &mut dyn OutputSink,
    ) -> Result<(Summary, Option<Written>)> {
        let mut seen = vec![false; self.lanes];
        let mut summary = Summary {
            n_self: self.input.keys().len() as u64,
            n_peer: self.agreed.peer.rows,
            ..Summary::default()
        };
        let mut learned = None;
        let lanes = results
            .iter()
            .map(|bytes| LaneResult::decode(bytes))
            .collect::<Result<Vec<_>>>()?;
        let peer_width = (self.peer.as_ref()).map_or(0, |l| l.width());
        for r in &lanes {
            if r.lane >= self.lanes || std::mem::replace(&mut seen[r.lane], true) {
                return Err(Error::Usage(format!(
                    "a result of lane {} twice or of none",
                    r.lane
                )));
            }
            summary.buckets += r.buckets;
            summary.seconds += r.seconds;
            summary.bytes_sent += r.bytes_sent;
            summary.bytes_received += r.bytes_received;
            if *learned.get_or_insert(r.learned) != r.learned {
                return Err(Error::Usage(
                    "lanes that disagree on what was learned".into(),
                ));
            }
            // Every matched key comes with the peer's records, where it reveals columns.
            if !r.matched.is_empty() && r.width != peer_width {
                return Err(Error::Usage(format!(
                    "a lane's result holds records of {} bytes, the peer's are {peer_width}",
                    r.width
                )));
            }
        }
        let buckets = 1u64 << self.agreed.log2_buckets();
        if seen.contains(&false) || summary.buckets != buckets {
            let why = format!(
                "{} of {} lanes reported, {} of {buckets} buckets run",
                seen.iter().filter(|&&s| s).count(),
                self.lanes,
                summary.buckets
            );
            self.chan.abort(&why);
            return Err(Error::Usage(why));
        }
        // Both coordinators confirm every bucket ran on their side.
        self.chan.send(&buckets.to_le_bytes())?;
        if self.chan.recv(8)? != buckets.to_le_bytes() {
            return Err(Error::Handshake("the peer did not run every bucket".into()));
        }
        let later = self.later_rows(&lanes)?;
        let output = match learned.unwrap_or(false) {
            true => self.merge(&lanes, later)?,
            false => Output::Nothing,
        };
        summary.matched_keys = output.indices().map(|ix| ix.len() as u64);
        let shape = Shape::of_keys(self.peer.as_ref());
        let written = deliver_keys(&self.input, &output, shape, sink)?;
        Ok((summary, written))
    }

    /// After every lane ran, where the sender reveals columns, its keys' later rows in one
    /// stream ([`venn::later_rows`]), from the pad seeds its lanes kept: the sender sends
    /// its own; the receiver returns its matched keys' (ascending) with what it read.
    fn later_rows(&mut self, lanes: &[LaneResult]) -> Result<Option<(Vec<u64>, Repeated)>> {
        let senders = match self.role {
            Role::Sender => &self.agreed.ours.columns.reveals,
            Role::Receiver => &self.agreed.peer.columns.reveals,
        };
        let Some(width) = Columns::record_width(senders) else {
            return Ok(None);
        };
        let width = width as usize;
        // The seeds by key.
        let mut by_key: Vec<(u64, usize, usize)> = (lanes.iter().enumerate())
            .flat_map(|(l, r)| (r.keys_seeded.iter().enumerate()).map(move |(j, &k)| (k, l, j)))
            .collect();
        by_key.sort_unstable();
        if by_key.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(Error::Usage(
                "the lanes' results keep a key's pad seed twice".into(),
            ));
        }
        let mut seeds = PadSeeds::default();
        for &(_, l, j) in &by_key {
            seeds.push_from(&lanes[l].seeds, j);
        }
        let keys: Vec<u64> = by_key.iter().map(|&(k, ..)| k).collect();
        let chan = &mut *self.chan;
        match self.role {
            Role::Sender => {
                let (of, records) = self.input.keys().repeated_records();
                let seed_of = |&k: &u32| {
                    let at = keys.binary_search(&(k as u64)).map(|s| s as u32);
                    at.map_err(|_| Error::Usage("a lane kept no pad seed of a key".into()))
                };
                let of = of.iter().map(seed_of).collect::<Result<Vec<u32>>>()?;
                let receiver_rows = self.agreed.peer.rows;
                venn::later_rows::send(chan, &seeds, (&of, records), width, receiver_rows)?;
                Ok(None)
            }
            Role::Receiver => {
                let most = self.agreed.peer.rows.min(self.max_peer_items);
                let rows = self.agreed.ours.rows;
                let got = venn::later_rows::receive(chan, &seeds, most, rows, width)?;
                Ok(Some((keys, got)))
            }
        }
    }

    /// The output over the input of the `lanes`' results: the matched keys ascending,
    /// with the peer's records of each where it reveals columns, and then their `later`
    /// rows' (each key that has any, ascending, with its rows).
    fn merge(&self, lanes: &[LaneResult], later: Option<(Vec<u64>, Repeated)>) -> Result<Output> {
        let keys = self.input.keys().len();
        // Each matched key: its index, and its records' count and bytes.
        let mut matched: Vec<(usize, u32, &[u8])> = Vec::new();
        for r in lanes {
            let mut at = 0;
            for (i, &key) in r.matched.iter().enumerate() {
                let n = r.rows.get(i).copied().unwrap_or(0);
                let bytes = n as usize * r.width;
                matched.push((key as usize, n, &r.records[at..at + bytes]));
                at += bytes;
            }
        }
        matched.sort_unstable_by_key(|&(key, ..)| key);
        let repeated = matched.windows(2).any(|w| w[0].0 == w[1].0);
        if repeated || matched.last().is_some_and(|&(key, ..)| key >= keys) {
            return Err(Error::Usage(
                "the lanes' results name a key twice, or one past the input".into(),
            ));
        }
        // The peer's repeated rows the lanes got in their buckets (each lane bounded them
        // by the peer's rows alone): no more than the peer's rows in all.
        let repeated: u64 = (matched.iter())
            .map(|&(_, n, _)| n.saturating_sub(1) as u64)
            .sum();
        if repeated > self.agreed.peer.rows {
            return Err(Error::protocol(
                format!(
                    "at most {} repeated rows of the peer's",
                    self.agreed.peer.rows
                ),
                format!("{repeated} over the lanes"),
            ));
        }
        let indices = matched.iter().map(|&(key, ..)| key).collect();
        let Some(layout) = &self.peer else {
            return Ok(Output::Indices(indices));
        };
        let width = layout.width();
        let (keys, got) = later.unwrap_or_default();
        let (mut records, mut rows) = (Vec::new(), Vec::with_capacity(matched.len()));
        let (mut next, mut theirs) = (0, got.records.chunks_exact(width));
        for &(key, n, first) in &matched {
            records.extend_from_slice(first);
            let mut n = n;
            if keys.get(next) == Some(&(key as u64)) {
                let count = got.counts[next];
                (theirs.by_ref().take(count as usize)).for_each(|r| records.extend_from_slice(r));
                n += count;
                next += 1;
            }
            rows.push(n);
        }
        if next != keys.len() {
            return Err(Error::Usage(
                "a lane kept the pad seed of a key that did not match".into(),
            ));
        }
        Ok(Output::Records {
            indices,
            records,
            width,
            rows,
        })
    }
}

/// A lane's share of a run: its buckets' keys and what each stands for, and what every
/// bucket's session needs.
pub struct LaneJob {
    role: Role,
    both: bool,
    protocol: &'static dyn Protocol,
    options: Options,
    threads: usize,
    max_memory: u64,
    /// The most items each bucket's session accepts from the peer (its padded size).
    max_peer_items: u64,
    /// The size this side's buckets are padded to.
    pad: u64,
    upload_deadline: Option<Duration>,
    binding: [u8; 32],
    /// The peer's rows over the whole run.
    peer_rows: u64,
    buckets: Vec<LaneBucket>,
}

/// A bucket of a lane's job.
struct LaneBucket {
    /// Its number.
    c: u64,
    /// Its distinct keys.
    keys: Items,
    /// Their indices in the input.
    marks: Vec<u64>,
    /// Their records (the options' width each), if ours carry any.
    records: Option<Vec<u8>>,
    /// Where they do, a receiver's later rows of its keys with several rows (to go in the
    /// bucket), or a sender's keys that have later rows (`of` only: the rows go after every
    /// lane ran, and the lane keeps those keys' pad seeds).
    later: Repeats,
}

impl LaneBucket {
    /// The memory it holds while it waits for its turn.
    fn memory(&self) -> u64 {
        let records = self.records.as_ref().map_or(0, Vec::capacity);
        let later = 4 * self.later.of.capacity() + self.later.records.capacity();
        self.keys.memory() + 8 * self.marks.capacity() as u64 + (records + later) as u64
    }
}

impl LaneJob {
    /// A job made by [`Coordinator::job`].
    pub fn decode(bytes: &[u8]) -> Result<LaneJob> {
        let mut r = Reader::new(bytes, "lane job");
        if r.bytes(JOB_MAGIC.len())? != JOB_MAGIC {
            return Err(Error::Usage("not a lane job".into()));
        }
        let role = match r.u8()? {
            0 => Role::Sender,
            1 => Role::Receiver,
            _ => return Err(Error::Usage("a lane job's role".into())),
        };
        let both = r.u8()? == 1;
        let protocol = find(&r.str8()?)?;
        let options = Options::read(&mut r)?;
        let threads = r.u64()? as usize;
        let (max_memory, max_peer_items, pad) = (r.u64()?, r.u64()?, r.u64()?);
        let binding = r.array::<32>()?;
        let peer_rows = r.u64()?;
        let upload_deadline = Some(r.u64()?)
            .filter(|&ms| ms > 0)
            .map(Duration::from_millis);
        let count = r.u64()?;
        let width = options.records(role).map_or(0, |w| w as usize);
        let mut buckets = Vec::new();
        let too_long = || Error::Usage("a lane job's bucket is longer than the job".into());
        for _ in 0..count {
            let (c, n, blob) = (r.u64()?, r.u64()?, r.u64()?);
            let n = usize::try_from(n).ok().filter(|&n| n <= bytes.len() / 8);
            let n = n.ok_or_else(too_long)?;
            let blob = usize::try_from(blob).map_err(|_| too_long())?;
            let words = |r: &mut Reader| -> Result<Vec<u32>> {
                let raw = r.bytes(n * 4)?;
                Ok((raw.chunks_exact(4))
                    .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
                    .collect())
            };
            let marks = words(&mut r)?.into_iter().map(u64::from).collect();
            let lens = words(&mut r)?;
            let mut data = r.bytes(blob)?;
            let mut keys = Items::with_capacity(n, blob);
            for len in lens {
                let (key, rest) = (data.split_at_checked(len as usize)).ok_or_else(too_long)?;
                keys.push(key);
                data = rest;
            }
            if !data.is_empty() {
                return Err(too_long());
            }
            let (mut records, mut later) = (None, Repeats::default());
            if width > 0 {
                let first = n.checked_mul(width).ok_or_else(too_long)?;
                records = Some(r.bytes(first)?.to_vec());
                let rows = usize::try_from(r.u64()?)
                    .ok()
                    .filter(|&m| m <= bytes.len() / 4);
                let rows = rows.ok_or_else(too_long)?;
                let raw = r.bytes(rows * 4)?;
                later.of = (raw.chunks_exact(4))
                    .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
                    .collect();
                if later.of.iter().any(|&p| p as usize >= n) {
                    return Err(Error::Usage("a lane job's later row of no key".into()));
                }
                if role == Role::Receiver {
                    let later_bytes = rows.checked_mul(width).ok_or_else(too_long)?;
                    later.records = r.bytes(later_bytes)?.to_vec();
                }
            }
            buckets.push(LaneBucket {
                c,
                keys,
                marks,
                records,
                later,
            });
        }
        r.finish()?;
        Ok(LaneJob {
            role,
            both,
            protocol,
            options,
            threads,
            max_memory,
            max_peer_items,
            pad,
            upload_deadline,
            binding,
            peer_rows,
            buckets,
        })
    }

    /// Runs the lane's buckets, in order, over `chan` (the lane's link to the peer's
    /// worker of lane `lane`); returns the lane's result as bytes.
    pub fn run(self, lane: usize, chan: &mut dyn Channel) -> Result<Vec<u8>> {
        let threads = threads::bounded(self.threads)?;
        let mut opts = RunOptions {
            protocol: self.protocol,
            role: self.role,
            both: self.both,
            options: self.options,
            max_peer_items: self.max_peer_items,
            max_memory: self.max_memory,
            input_memory: 0,
            threads,
            seed: None,
            progress: None,
            dealer: None,
            in_buckets: Some(InBuckets {
                peer_rows: self.peer_rows,
            }),
            upload_deadline: self.upload_deadline,
        };
        let mut result = LaneResult {
            lane,
            ..LaneResult::default()
        };
        // What the lane holds beside a bucket: the buckets still to run, and what it
        // learned.
        let mut waiting: u64 = self.buckets.iter().map(LaneBucket::memory).sum();
        let width = self.options.records(self.role).map(|w| w as usize);
        for bucket in self.buckets {
            waiting -= bucket.memory();
            let held = waiting + 8 * bucket.marks.capacity() as u64 + result.memory();
            let real = bucket.keys.len();
            // A sender's later rows stay with its coordinator: the lane keeps the pad
            // seeds of the keys that have them.
            let (repeats, keep) = match self.role {
                Role::Receiver => (bucket.later, Vec::new()),
                Role::Sender => (Repeats::default(), bucket.later.of),
            };
            let items = BucketKeys {
                items: bucket.keys,
                records: bucket.records.zip(width),
                repeats,
            };
            let mut report =
                run_bucket(chan, &self.binding, bucket.c, items, self.pad, held, &opts)?;
            // What is left of the peer's repeated rows for the lane's later buckets.
            let sent = buckets::repeated_rows(&report.output);
            if let Some(b) = &mut opts.in_buckets {
                b.peer_rows = b.peer_rows.saturating_sub(sent);
            }
            result.buckets += 1;
            result.seconds += (report.offline() + report.online()).as_secs_f64();
            let seeds = report.pad_seeds.take();
            result.learn(&report.output, real, &bucket.marks)?;
            // The pad seeds of a sender's keys with later rows, or of a receiver's matches
            // where the sender's records came.
            if let Some(seeds) = &seeds {
                let kept: Vec<usize> = match self.role {
                    Role::Sender => keep.iter().map(|&p| p as usize).collect(),
                    Role::Receiver => (report.output.indices().unwrap_or_default().iter())
                        .copied()
                        .filter(|&i| i < real)
                        .collect(),
                };
                for p in kept {
                    result.keys_seeded.push(bucket.marks[p]);
                    result.seeds.push_from(seeds, p);
                }
            }
        }
        let traffic = chan.traffic();
        (result.bytes_sent, result.bytes_received) = (traffic.sent, traffic.received);
        Ok(result.encode())
    }
}

/// What a lane did and learned.
#[derive(Default)]
struct LaneResult {
    lane: usize,
    buckets: u64,
    seconds: f64,
    bytes_sent: u64,
    bytes_received: u64,
    /// Whether this side learns the intersection.
    learned: bool,
    /// The input indices of the matched keys.
    matched: Vec<u64>,
    /// Where the peer reveals columns: the width of its records (else 0), and for each
    /// matched key how many records it has (one a peer row of the key) and then them all.
    width: usize,
    rows: Vec<u32>,
    records: Vec<u8>,
    /// The input's keys whose pad seeds the lane kept (a sender's with later rows, a
    /// receiver's matched ones where the sender's records came), and the seeds.
    keys_seeded: Vec<u64>,
    seeds: PadSeeds,
}

impl LaneResult {
    /// Keeps what a bucket's `output` says of its first `real` entries (the rest are its
    /// padding): entry i is the input's key `marks[i]`. Every bucket of a run outputs
    /// records, or none does.
    fn learn(&mut self, output: &Output, real: usize, marks: &[u64]) -> Result<()> {
        let Some(ix) = output.indices() else {
            return Ok(());
        };
        let (records, width, rows) = match output {
            Output::Records {
                records,
                width,
                rows,
                ..
            } => (&records[..], *width, &rows[..]),
            _ => (&[][..], 0, &[][..]),
        };
        if self.learned && width != self.width {
            return Err(Error::protocol(
                "the same records in every bucket",
                "others",
            ));
        }
        self.learned = true;
        if width == 0 {
            let real = ix.iter().filter(|&&i| i < real);
            self.matched.extend(real.map(|&i| marks[i]));
            return Ok(());
        }
        self.width = width;
        let mut at = 0;
        for (&i, &n) in ix.iter().zip(rows) {
            let bytes = n as usize * width;
            if i < real {
                self.matched.push(marks[i]);
                self.rows.push(n);
                self.records.extend_from_slice(&records[at..at + bytes]);
            }
            at += bytes;
        }
        Ok(())
    }

    /// The memory what it learned holds.
    fn memory(&self) -> u64 {
        let learned = 8 * self.matched.capacity() + 4 * self.rows.capacity();
        let seeded = 8 * self.keys_seeded.capacity() as u64 + self.seeds.memory();
        (learned + self.records.capacity()) as u64 + seeded
    }

    fn encode(&self) -> Vec<u8> {
        let w = Writer::new()
            .u64(self.lane as u64)
            .u64(self.buckets)
            .u64(self.seconds.to_bits())
            .u64(self.bytes_sent)
            .u64(self.bytes_received)
            .u8(self.learned as u8)
            .u64(self.matched.len() as u64);
        let w = self.matched.iter().fold(w, |w, &k| w.u64(k));
        let w = self
            .rows
            .iter()
            .fold(w.u64(self.width as u64), |w, &n| w.u32(n));
        let w = w.bytes(&self.records).u64(self.keys_seeded.len() as u64);
        let w = self.keys_seeded.iter().fold(w, |w, &k| w.u64(k));
        w.bytes(&self.seeds.to_bytes()).0
    }

    /// A result [`encode`](Self::encode) made, each length checked against the bytes.
    fn decode(bytes: &[u8]) -> Result<LaneResult> {
        let mut r = Reader::new(bytes, "lane result");
        let mut out = LaneResult {
            lane: r.u64()? as usize,
            buckets: r.u64()?,
            seconds: f64::from_bits(r.u64()?),
            bytes_sent: r.u64()?,
            bytes_received: r.u64()?,
            learned: r.u8()? == 1,
            ..LaneResult::default()
        };
        let too_long = || Error::Usage("a lane result's length".into());
        let n = r.u64()?;
        if n > bytes.len() as u64 / 8 {
            return Err(too_long());
        }
        out.matched = (0..n).map(|_| r.u64()).collect::<Result<_>>()?;
        out.width = usize::try_from(r.u64()?).map_err(|_| too_long())?;
        if out.width > 0 {
            out.rows = (0..n).map(|_| r.u32()).collect::<Result<_>>()?;
            let records = (out.rows.iter())
                .try_fold(0usize, |sum, &k| {
                    (k as usize).checked_mul(out.width)?.checked_add(sum)
                })
                .ok_or_else(too_long)?;
            out.records = r.bytes(records)?.to_vec();
        }
        let seeded = r.u64()?;
        if seeded > bytes.len() as u64 / 40 {
            return Err(too_long());
        }
        out.keys_seeded = (0..seeded).map(|_| r.u64()).collect::<Result<_>>()?;
        let seeds = r.bytes(seeded as usize * 32)?;
        out.seeds = PadSeeds::from_bytes(seeds).ok_or_else(too_long)?;
        r.finish()?;
        Ok(out)
    }
}

/// A lane's end of its link to the peer's worker.
pub enum LaneEnd {
    /// This side's lanes listen: the next connection that opens as a session does.
    Listen(TcpListener),
    /// Connect to the peer's lane at this address.
    Connect(String),
}

impl LaneEnd {
    /// The lane's link, over `transport` (the party's TLS settings), within `timeout`.
    pub fn link(self, transport: &Transport, timeout: Duration) -> Result<Box<dyn Channel>> {
        match self {
            LaneEnd::Listen(l) => transport.accept(&l, timeout, (HELLO_PREFIX, looks_like_hello)),
            LaneEnd::Connect(addr) => transport.connect(&addr, timeout, &mut |_| {}),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::Revealed;
    use crate::input::source::RowBatch;
    use crate::input::{Format, KeyOptions};
    use crate::party::{PeerAddr, RunSpec};
    use crate::sink::Delivered;

    fn link(protocol: &str, peer: PeerAddr) -> Link {
        Link {
            spec: RunSpec {
                protocol: protocol.into(),
                timeout: Duration::from_secs(20),
                max_peer_items: venn::MAX_ITEMS,
                max_memory: 1 << 32,
                ..RunSpec::default()
            },
            dealer: None,
            peer,
            stats_json: None,
            transport: Transport::loopback(),
        }
    }

    /// Keys in memory, revealing a column `v` of `values` if given.
    fn input(keys: &[String], values: Option<&[String]>) -> Result<KeysInMemory> {
        let opts = KeyOptions {
            format: Format::Lines,
            reveal_columns: (values.iter())
                .map(|_| Revealed::parse("v").unwrap())
                .collect(),
            ..KeyOptions::default()
        };
        let revealed: Vec<&[String]> = values.into_iter().collect();
        KeysInMemory::revealing(keys, None, &revealed, &opts)
    }

    /// What a party learned: the matched positions, and the peer's values for each.
    #[derive(Debug, Default, PartialEq)]
    struct Collected {
        positions: Vec<usize>,
        joined: Vec<(usize, Vec<Vec<u8>>)>,
    }

    impl OutputSink for Option<Collected> {
        fn take(&mut self, output: Delivered) -> Result<Option<Written>> {
            let Delivered::Rows { rows, .. } = output else {
                return Ok(None);
            };
            let got = self.insert(Collected::default());
            rows.each_batch(&mut |batch| {
                match batch {
                    RowBatch::Positions(p) => got.positions.extend_from_slice(p),
                    RowBatch::Joined {
                        position, values, ..
                    } => {
                        got.positions.push(position);
                        let values = values.iter().map(|v| v.to_vec()).collect();
                        got.joined.push((position, values));
                    }
                    _ => unreachable!("keys in memory have positions"),
                }
                Ok(())
            })?;
            Ok(None)
        }
    }

    /// One party's keys: the protocol, role, keys, values revealed, columns asked for.
    struct Side<'a> {
        protocol: &'a str,
        role: Role,
        keys: Vec<String>,
        reveals: Option<Vec<String>>,
        asks: Vec<String>,
        lanes: usize,
        tamper: bool,
        both: bool,
    }

    /// One party: its coordinator, and each lane's worker in a thread of its own.
    fn party(side: Side, peer: PeerAddr) -> Result<(Summary, Option<Collected>)> {
        let link = link(side.protocol, peer);
        let input = input(&side.keys, side.reveals.as_deref())?;
        let (role, lanes) = (side.role, side.lanes);
        let mut coord = Coordinator::open(
            &link,
            role,
            side.both,
            input,
            side.asks,
            lanes,
            None,
            |_| {},
        )?;
        let ends: Vec<LaneEnd> = if coord.listens() {
            let listeners: Vec<TcpListener> = (0..coord.lanes())
                .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
                .collect();
            let addrs = listeners
                .iter()
                .map(|l| l.local_addr().unwrap().to_string());
            coord.send_addresses(&addrs.collect::<Vec<_>>())?;
            listeners.into_iter().map(LaneEnd::Listen).collect()
        } else {
            coord
                .recv_addresses()?
                .into_iter()
                .map(LaneEnd::Connect)
                .collect()
        };
        let jobs: Vec<Vec<u8>> = (0..coord.lanes()).map(|l| coord.job(l)).collect();
        let results = std::thread::scope(|s| {
            let handles: Vec<_> = (ends.into_iter().zip(jobs).enumerate())
                .map(|(lane, (end, mut job))| {
                    if side.tamper && lane == 0 {
                        // Another run's binding: the session must refuse it.
                        let options = Options::default().write(Writer::new()).0.len();
                        let at = JOB_MAGIC.len() + 2 + 1 + side.protocol.len() + options + 32;
                        job[at] ^= 1;
                    }
                    s.spawn(move || {
                        let mut chan = end.link(&Transport::loopback(), Duration::from_secs(20))?;
                        LaneJob::decode(&job)?.run(lane, &mut *chan)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect::<Result<Vec<_>>>()
        });
        let mut sink = None;
        match results {
            Ok(results) => Ok((coord.finish(&results, &mut sink)?.0, sink)),
            Err(e) => {
                coord.abort(&e.to_string());
                Err(e)
            }
        }
    }

    /// The receiver's `ours` and the sender's `theirs` over a link of their own.
    fn run(ours: Side, theirs: Side) -> [Result<(Summary, Option<Collected>)>; 2] {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        drop(listener);
        std::thread::scope(|s| {
            let listen = PeerAddr::Listen(addr.clone());
            let r = s.spawn(|| party(ours, listen));
            let connect = PeerAddr::Connect(addr.clone());
            let t = s.spawn(|| party(theirs, connect));
            [r.join().unwrap(), t.join().unwrap()]
        })
    }

    /// Keys k0..k2999 of the receiver and every third of k0..k4999 of the sender.
    fn sides(lanes: (usize, usize), tamper: bool) -> (Side<'static>, Side<'static>) {
        let side = |role, keys, lanes, tamper| Side {
            protocol: "kkrt16",
            role,
            keys,
            reveals: None,
            asks: Vec::new(),
            lanes,
            tamper,
            both: false,
        };
        let ours: Vec<String> = (0..3000).map(|i| format!("k{i}")).collect();
        let theirs: Vec<String> = (0..5000).step_by(3).map(|i| format!("k{i}")).collect();
        (
            side(Role::Receiver, ours, lanes.0, false),
            side(Role::Sender, theirs, lanes.1, tamper),
        )
    }

    /// The matches are the one run's, in input order, whatever the lanes; every bucket ran.
    #[test]
    fn lanes_give_the_one_runs_output() {
        for lanes in [(1, 1), (2, 3), (4, 4)] {
            let (ours, theirs) = sides(lanes, false);
            let [r, s] = run(ours, theirs);
            let (summary, got) = r.unwrap();
            let expected: Vec<usize> = (0..3000).step_by(3).collect();
            assert_eq!(got.unwrap().positions, expected, "lanes {lanes:?}");
            assert_eq!(summary.matched_keys, Some(1000));
            assert!(summary.buckets >= lanes.0.min(lanes.1) as u64);
            let (sent, nothing) = s.unwrap();
            assert_eq!(
                (nothing, sent.buckets, sent.n_peer),
                (None, summary.buckets, 3000)
            );
        }
    }

    /// The sender's revealed column reaches the receiver's matched positions, each with
    /// its own key's value, whatever lane ran its bucket — a key given three times, all
    /// three rows' in order; columns asked of a protocol that cannot carry them are
    /// refused before the peer is reached.
    #[test]
    fn lanes_carry_the_peers_columns() {
        let (mut ours, mut theirs) = sides((2, 3), false);
        (ours.protocol, theirs.protocol) = ("rr22", "rr22");
        ours.asks = vec!["v".into()];
        // Every fifth of the sender's keys twice more, each row its own value: the later
        // rows go after every lane ran.
        let mut values: Vec<String> = (theirs.keys.iter())
            .map(|k| format!("value of {k}"))
            .collect();
        let again: Vec<String> = (0..5000).step_by(15).map(|i| format!("k{i}")).collect();
        for round in 1..3 {
            values.extend(again.iter().map(|k| format!("row {round} of {k}")));
            theirs.keys.extend(again.iter().cloned());
        }
        theirs.reveals = Some(values);
        let [r, s] = run(ours, theirs);
        let got = r.unwrap().1.unwrap();
        let expected: Vec<(usize, Vec<Vec<u8>>)> = (0..3000)
            .step_by(3)
            .flat_map(|p| {
                let rows = if p % 15 == 0 { 0..3 } else { 0..1 };
                rows.map(move |r| match r {
                    0 => (p, vec![format!("value of k{p}").into_bytes()]),
                    r => (p, vec![format!("row {r} of k{p}").into_bytes()]),
                })
            })
            .collect();
        assert_eq!(got.joined, expected);
        assert_eq!(s.unwrap().1, None, "the sender learns nothing");

        // With `both`, the receiver's repeated keys' rows reach the sender in their
        // buckets: the receiver's k0, k3, … (every 30th twice), matched by the sender's
        // positions 0, 1, ….
        let (mut ours, mut theirs) = sides((3, 2), false);
        (ours.protocol, theirs.protocol) = ("rr22", "rr22");
        (ours.both, theirs.both) = (true, true);
        theirs.asks = vec!["v".into()];
        let mut values: Vec<String> = ours.keys.iter().map(|k| format!("id {k}")).collect();
        let again: Vec<String> = (0..3000).step_by(30).map(|i| format!("k{i}")).collect();
        values.extend(again.iter().map(|k| format!("again {k}")));
        ours.keys.extend(again);
        ours.reveals = Some(values);
        let [r, s] = run(ours, theirs);
        assert!(r.unwrap().1.is_some());
        let got = s.unwrap().1.unwrap();
        let expected: Vec<(usize, Vec<Vec<u8>>)> = (0..1000)
            .flat_map(|j| {
                let k = 3 * j;
                let first = (j, vec![format!("id k{k}").into_bytes()]);
                let again = (k % 30 == 0).then(|| (j, vec![format!("again k{k}").into_bytes()]));
                std::iter::once(first).chain(again)
            })
            .collect();
        assert_eq!(got.joined, expected);

        let link = self::link("kkrt16", PeerAddr::Connect("127.0.0.1:1".into()));
        let input = self::input(&["x".to_string(), "y".into()], None).unwrap();
        let asks = vec!["v".to_string()];
        let e = Coordinator::open(&link, Role::Receiver, false, input, asks, 2, None, |_| {});
        assert!(e.err().unwrap().to_string().contains("cannot carry"));
    }

    /// A lane whose session is bound to anything but this run fails both parties.
    #[test]
    fn a_lane_of_another_run_is_refused() {
        let (ours, theirs) = sides((2, 2), true);
        let [r, s] = run(ours, theirs);
        let (r, s) = (r.err().unwrap().to_string(), s.err().unwrap().to_string());
        assert!(
            r.contains("session integrity") || s.contains("session integrity"),
            "{r} / {s}"
        );
    }
}
