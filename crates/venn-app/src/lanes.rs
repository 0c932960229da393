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

use crate::buckets::{self, group_keys, padded_size, run_bucket};
use crate::input::memory::KeysInMemory;
use crate::input::source::InputSource;
use crate::party::{refuse_whole_outputs_in_buckets, Link};
use crate::threads;
use crate::transport::Transport;
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;
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
    /// The input's key indices in each bucket.
    groups: Vec<Vec<u32>>,
    agreed: Agreed,
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
    /// two parties'). Refused before the peer is contacted: protocols whose receiver
    /// learns only a function of the whole intersection (a count per bucket would tell
    /// more), and keys the protocol cannot take.
    pub fn open(
        link: &Link,
        role: Role,
        both: bool,
        input: KeysInMemory,
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
        protocol.check_items(link.spec.options, input.keys())?;
        link.check_endpoint()?;
        let rows = input.keys().len() as u64;
        let mut chan = link.connect(on_bound, None)?;
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
            columns: Columns::default(),
            align: Align::None,
        };
        let agreed = link.exchange(&mut *chan, plan, role)?;
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
        let groups = group_keys(input.keys(), agreed.log2_buckets());
        Ok(Coordinator {
            chan,
            role,
            both,
            listens: matches!(link.peer, crate::party::PeerAddr::Listen(_)),
            protocol,
            options: link.spec.options,
            input,
            groups,
            binding: *h.finalize().as_bytes(),
            agreed,
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
            (self.groups.iter().enumerate())
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
            // Milliseconds; 0, none set.
            .u64(
                self.upload_deadline
                    .map_or(0, |d| d.as_millis().max(1) as u64),
            )
            .u64(mine().count() as u64);
        // Each bucket: its number, its key count and bytes, then its keys' indices in the
        // input and lengths (u32 each: an input has fewer than 2^32 keys, each shorter),
        // then the keys' bytes — laid out to be read back in bulk.
        let keys = self.input.keys();
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
    /// coordinator that both sides' lanes ran every bucket, and returns what the run did
    /// and, for a party that learns the intersection, the matched positions of the input.
    pub fn finish(mut self, results: &[Vec<u8>]) -> Result<(Summary, Option<Vec<usize>>)> {
        let mut seen = vec![false; self.lanes];
        let mut matched = Vec::new();
        let mut summary = Summary {
            n_self: self.input.keys().len() as u64,
            n_peer: self.agreed.peer.rows,
            ..Summary::default()
        };
        let mut learned = None;
        for bytes in results {
            let r = LaneResult::decode(bytes)?;
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
            matched.extend(r.matched.iter().map(|&k| k as usize));
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
        if matched.iter().any(|&k| k >= self.input.keys().len()) {
            return Err(Error::Usage(
                "a lane's result names a key past the input".into(),
            ));
        }
        let positions = learned
            .unwrap_or(false)
            .then(|| self.input.matched_positions(&matched));
        summary.matched_keys = learned.unwrap_or(false).then_some(matched.len() as u64);
        Ok((summary, positions))
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
    /// Each bucket: its number, its distinct keys and their indices in the input.
    buckets: Vec<(u64, Items, Vec<u64>)>,
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
        let upload_deadline = Some(r.u64()?)
            .filter(|&ms| ms > 0)
            .map(Duration::from_millis);
        let count = r.u64()?;
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
            buckets.push((c, keys, marks));
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
            buckets,
        })
    }

    /// Runs the lane's buckets, in order, over `chan` (the lane's link to the peer's
    /// worker of lane `lane`); returns the lane's result as bytes.
    pub fn run(self, lane: usize, chan: &mut dyn Channel) -> Result<Vec<u8>> {
        let threads = threads::bounded(self.threads)?;
        let opts = RunOptions {
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
            upload_deadline: self.upload_deadline,
        };
        let mut result = LaneResult {
            lane,
            ..LaneResult::default()
        };
        // What the lane holds beside a bucket's keys: the keys of the buckets still to
        // run, and the marks of those not yet done.
        let bucket = |keys: &Items, marks: &Vec<u64>| keys.memory() + 8 * marks.capacity() as u64;
        let mut held: u64 = (self.buckets.iter()).map(|(_, k, m)| bucket(k, m)).sum();
        for (c, keys, marks) in self.buckets {
            let real = keys.len();
            held -= keys.memory();
            let report = run_bucket(chan, &self.binding, c, (keys, None), self.pad, held, &opts)?;
            held -= 8 * marks.capacity() as u64;
            result.buckets += 1;
            result.seconds += (report.offline() + report.online()).as_secs_f64();
            if let Output::Indices(ix) = &report.output {
                result.learned = true;
                let real = ix.iter().filter(|&&i| i < real);
                result.matched.extend(real.map(|&i| marks[i]));
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
}

impl LaneResult {
    fn encode(&self) -> Vec<u8> {
        let w = Writer::new()
            .u64(self.lane as u64)
            .u64(self.buckets)
            .u64(self.seconds.to_bits())
            .u64(self.bytes_sent)
            .u64(self.bytes_received)
            .u8(self.learned as u8)
            .u64(self.matched.len() as u64);
        self.matched.iter().fold(w, |w, &k| w.u64(k)).0
    }

    fn decode(bytes: &[u8]) -> Result<LaneResult> {
        let mut r = Reader::new(bytes, "lane result");
        let mut out = LaneResult {
            lane: r.u64()? as usize,
            buckets: r.u64()?,
            seconds: f64::from_bits(r.u64()?),
            bytes_sent: r.u64()?,
            bytes_received: r.u64()?,
            learned: r.u8()? == 1,
            matched: Vec::new(),
        };
        let n = r.u64()?;
        if n > bytes.len() as u64 / 8 {
            return Err(Error::Usage("a lane result's length".into()));
        }
        out.matched = (0..n).map(|_| r.u64()).collect::<Result<_>>()?;
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
    use crate::input::{Format, KeyOptions};
    use crate::party::{PeerAddr, RunSpec};

    fn link(peer: PeerAddr) -> Link {
        Link {
            spec: RunSpec {
                protocol: "kkrt16".into(),
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

    fn input(keys: &[String]) -> KeysInMemory {
        let opts = KeyOptions {
            format: Format::Lines,
            ..KeyOptions::default()
        };
        KeysInMemory::new(keys, None, &opts).unwrap()
    }

    /// One party: its coordinator, and each lane's worker in a thread of its own.
    fn party(
        role: Role,
        peer: PeerAddr,
        keys: Vec<String>,
        lanes: usize,
        addresses: std::sync::mpsc::Sender<Vec<String>>,
        peers: std::sync::mpsc::Receiver<Vec<String>>,
        tamper: bool,
    ) -> Result<(Summary, Option<Vec<usize>>)> {
        let link = link(peer);
        let mut coord = Coordinator::open(&link, role, false, input(&keys), lanes, None, |_| {})?;
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
        drop((addresses, peers));
        let jobs: Vec<Vec<u8>> = (0..coord.lanes()).map(|l| coord.job(l)).collect();
        let results = std::thread::scope(|s| {
            let handles: Vec<_> = (ends.into_iter().zip(jobs).enumerate())
                .map(|(lane, (end, mut job))| {
                    if tamper && lane == 0 {
                        // Another run's binding: the session must refuse it.
                        let options = Options::default().write(Writer::new()).0.len();
                        let at = JOB_MAGIC.len() + 2 + 1 + "kkrt16".len() + options + 32;
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
        match results {
            Ok(results) => coord.finish(&results),
            Err(e) => {
                coord.abort(&e.to_string());
                Err(e)
            }
        }
    }

    fn run(lanes: (usize, usize), tamper: bool) -> [Result<(Summary, Option<Vec<usize>>)>; 2] {
        let ours: Vec<String> = (0..3000).map(|i| format!("k{i}")).collect();
        let theirs: Vec<String> = (0..5000).step_by(3).map(|i| format!("k{i}")).collect();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        drop(listener);
        let (a_tx, a_rx) = std::sync::mpsc::channel();
        let (b_tx, b_rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            let listen = PeerAddr::Listen(addr.clone());
            let r = s.spawn(|| party(Role::Receiver, listen, ours, lanes.0, a_tx, b_rx, false));
            let connect = PeerAddr::Connect(addr.clone());
            let t = s.spawn(|| party(Role::Sender, connect, theirs, lanes.1, b_tx, a_rx, tamper));
            [r.join().unwrap(), t.join().unwrap()]
        })
    }

    /// The matches are the one run's, in input order, whatever the lanes; every bucket ran.
    #[test]
    fn lanes_give_the_one_runs_output() {
        for lanes in [(1, 1), (2, 3), (4, 4)] {
            let [r, s] = run(lanes, false);
            let (summary, positions) = r.unwrap();
            let expected: Vec<usize> = (0..3000).step_by(3).collect();
            assert_eq!(positions.unwrap(), expected, "lanes {lanes:?}");
            assert_eq!(summary.matched_keys, Some(1000));
            assert!(summary.buckets >= lanes.0.min(lanes.1) as u64);
            let (sent, nothing) = s.unwrap();
            assert_eq!(
                (nothing, sent.buckets, sent.n_peer),
                (None, summary.buckets, 3000)
            );
        }
    }

    /// A lane whose session is bound to anything but this run fails both parties.
    #[test]
    fn a_lane_of_another_run_is_refused() {
        let [r, s] = run((2, 2), true);
        let (r, s) = (r.err().unwrap().to_string(), s.err().unwrap().to_string());
        assert!(
            r.contains("session integrity") || s.contains("session integrity"),
            "{r} / {s}"
        );
    }
}
