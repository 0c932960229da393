//! The hidden `venn bench-party` command: one party of one benchmark run, in its own
//! process, on a synthetic set whose intersection with the peer's is known.

use super::items::{bench_input, verify, Verdict};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use venn::crypto::{Aes, Block};
use venn::net::{Channel, Recording, Replay};
use venn::protocols::{find, DealerLink, Options, Sizes};
use venn::session::Role;
use venn::{Error, Items, Report, Result, RunOptions};
use venn_app::transport::Transport;

/// What one benchmark party prints as its last stdout line.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub(super) struct PartyResult {
    pub offline_s: f64,
    pub online_s: f64,
    pub sent: u64,
    pub received: u64,
    pub peak_rss: Option<u64>,
    /// What the protocol's memory model says the run needs ([`venn::memory_needed`]).
    pub memory_needed: u64,
    pub intersection: Option<usize>,
    pub verified: Option<bool>,
    /// With `--precompute`: the state file's size and the seconds spent writing and
    /// reading it (outside both phases).
    pub state_bytes: Option<u64>,
    pub state_io_s: Option<f64>,
    /// Seconds per protocol phase, in order.
    pub phases: Vec<(String, f64)>,
}

/// Peak resident set size of this process, from /proc (Linux only).
pub(super) fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// How a benchmark party reaches its peer.
pub(crate) enum BenchLink {
    /// Over TCP (listening or connecting at `addr`), writing what it receives to `record`
    /// if given.
    Tcp {
        listen: bool,
        addr: String,
        record: Option<PathBuf>,
    },
    /// Alone: the peer is played from the recorded run (see [`venn::net::Replay`]).
    Replay { inbound: PathBuf, outbound: PathBuf },
}

/// One benchmark party.
pub(crate) struct BenchParty {
    pub role: Role,
    pub protocol: String,
    pub options: Options,
    /// Both parties' set sizes (this party's items are its own of them).
    pub sizes: Sizes,
    pub seed: Block,
    pub threads: usize,
    pub link: BenchLink,
    /// Precompute the offline phase into a state file in this directory, then run the
    /// online phase from it in a second session.
    pub precompute: Option<PathBuf>,
    pub timeout: Duration,
    /// Plain TCP, or TLS with identities made by the benchmark.
    pub transport: Transport,
    /// The dealer's address, for `--offline dealer` (plain TCP on loopback).
    pub dealer: Option<String>,
}

/// Opens a link; the listening side prints its address for the spawner.
fn open(
    transport: &Transport,
    listen: bool,
    addr: &str,
    timeout: Duration,
) -> Result<(Box<dyn Channel>, String)> {
    if listen {
        let mut bound = addr.to_string();
        let chan = transport.listen(addr, timeout, |a| {
            bound = a.to_string();
            out!("listening {a}");
        })?;
        Ok((chan, bound))
    } else {
        Ok((
            transport.connect(addr, timeout, &mut |_| {})?,
            addr.to_string(),
        ))
    }
}

/// What the party's run over its link gave: the protocol's report, and with
/// `--precompute` the state file's size and the seconds spent writing and reading it.
struct Ran {
    report: Report,
    state: Option<(u64, f64)>,
}

impl BenchParty {
    /// Runs the party and prints its [`PartyResult`] as the last line of stdout. A
    /// recorded or replayed run seeds the PRG from `seed`, so that the replay repeats it.
    /// Its stages: make the inputs → connect and run (over TCP, recording or precomputing,
    /// or replayed) → verify the output against the known intersection → report.
    pub(crate) fn run(self) -> Result<()> {
        let protocol = find(&self.protocol)?;
        let (n, n_peer) = match self.role {
            Role::Sender => (self.sizes.sender, self.sizes.receiver),
            Role::Receiver => (self.sizes.receiver, self.sizes.sender),
        };
        let items = bench_input(protocol, self.options, self.seed, self.role, n as usize)?;
        let timeout = self.timeout;
        let dealer = (self.dealer.as_ref())
            .map(|addr| move || Transport::loopback().connect(addr, timeout, &mut |_| {}));
        let opts = RunOptions {
            protocol,
            role: self.role,
            both: false,
            options: self.options,
            max_peer_items: n_peer,
            max_memory: u64::MAX,
            input_memory: items.memory(),
            threads: self.threads,
            seed: self
                .deterministic()
                .then(|| Aes::new(self.seed).encrypt(Block::from(self.role as u64))),
            progress: None,
            dealer: dealer.as_ref().map(|d| d as &DealerLink),
            upload_deadline: None,
            in_buckets: None,
        };
        let ran = self.run_on_link(&items, &opts)?;
        let verdict = verify(
            &ran.report.output,
            self.sizes,
            self.seed,
            self.options.payload,
        );
        let result = PartyResult::new(&ran, verdict, venn::memory_needed(&opts, self.sizes));
        out!("{}", serde_json::to_string(&result).expect("serialisable"));
        Ok(())
    }

    /// Whether the run must repeat exactly: it is recorded, or replayed.
    fn deterministic(&self) -> bool {
        !matches!(self.link, BenchLink::Tcp { record: None, .. })
    }

    /// Connect and run: over TCP (writing a transcript, or precomputing first, if asked),
    /// or alone against a recorded peer.
    fn run_on_link(&self, items: &Items, opts: &RunOptions) -> Result<Ran> {
        let (listen, addr, record) = match &self.link {
            BenchLink::Tcp {
                listen,
                addr,
                record,
            } => (*listen, addr, record),
            BenchLink::Replay { inbound, outbound } => {
                let mut chan = Replay::open(inbound, outbound)?;
                let report = venn::run(&mut chan, items, opts)?;
                chan.finish()?;
                return Ok(Ran {
                    report,
                    state: None,
                });
            }
        };
        let report = match (record, &self.precompute) {
            (None, None) => {
                let mut chan = open(&self.transport, listen, addr, self.timeout)?.0;
                venn::run(&mut chan, items, opts)?
            }
            (Some(path), None) => {
                let chan = open(&self.transport, listen, addr, self.timeout)?.0;
                let mut chan = Recording::new(chan, path)?;
                let report = venn::run(&mut chan, items, opts)?;
                chan.finish()?;
                report
            }
            (None, Some(dir)) => return self.run_precomputed(listen, addr, dir, items, opts),
            (Some(_), Some(_)) => {
                return Err(Error::Usage(
                    "a recorded run cannot also be precomputed".into(),
                ))
            }
        };
        Ok(Ran {
            report,
            state: None,
        })
    }

    /// The offline phase in one session, its state saved to a file in `dir` and loaded
    /// again, then the online phase from it in a second session on the same address:
    /// both phases' report, and the state's size and input/output time.
    fn run_precomputed(
        &self,
        listen: bool,
        addr: &str,
        dir: &Path,
        items: &Items,
        opts: &RunOptions,
    ) -> Result<Ran> {
        let (mut chan, bound) = open(&self.transport, listen, addr, self.timeout)?;
        let pre = venn::precompute(&mut chan, items.len() as u64, opts)?;
        drop(chan);
        let path = dir.join(format!("{:032x}-{}.state", self.seed, self.role.name()));
        let io = Instant::now();
        let offline = pre.save(&path)?;
        let bytes = std::fs::metadata(&path)?.len();
        let loaded = venn::load_state(&path, opts)?;
        let state = Some((bytes, io.elapsed().as_secs_f64()));
        // The second session on the same address: the listener binds it again.
        let (mut chan, _) = open(&self.transport, listen, &bound, self.timeout)?;
        let online = venn::run_online(&mut chan, items, loaded, opts)?;
        let report = Report {
            phases: [offline.phases, online.phases].concat(),
            traffic: venn::net::Traffic {
                sent: offline.traffic.sent + online.traffic.sent,
                received: offline.traffic.received + online.traffic.received,
            },
            ..online
        };
        Ok(Ran { report, state })
    }
}

impl PartyResult {
    /// Report: what the run measured, the receiver's verdict, this process's peak memory
    /// beside what the memory model said it would need.
    fn new(ran: &Ran, verdict: Verdict, memory_needed: u64) -> PartyResult {
        let report = &ran.report;
        PartyResult {
            offline_s: report.offline().as_secs_f64(),
            online_s: report.online().as_secs_f64(),
            sent: report.traffic.sent,
            received: report.traffic.received,
            peak_rss: peak_rss(),
            memory_needed,
            intersection: verdict.intersection,
            verified: verdict.verified,
            state_bytes: ran.state.map(|s| s.0),
            state_io_s: ran.state.map(|s| s.1),
            phases: report
                .phases
                .iter()
                .map(|p| (p.name.to_string(), p.duration.as_secs_f64()))
                .collect(),
        }
    }
}
