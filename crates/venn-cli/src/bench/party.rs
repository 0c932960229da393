//! The hidden `venn bench-party` command: one party of one benchmark run, in its own
//! process, on a synthetic set whose intersection with the peer's is known.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use venn::crypto::{Aes, Block};
use venn::net::{Channel, Recording, Replay};
use venn::protocols::{find, DealerLink, Options, Output, Protocol, Sizes};
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

/// The room a benchmark key takes: 16 random bytes, or a σ-bit integer's decimal digits
/// (at most 20, for σ ≤ 64).
const KEY_BYTES: usize = 16;
const INTEGER_BYTES: usize = 20;

/// What a benchmark party's input holds ([`Items::memory`]) with `n` items of its own,
/// known before they are made: the room [`bench_items`] or [`bench_integers`] take for
/// them, and the values of a sum's sender ([`bench_values`]). `venn plan` counts it beside
/// the protocol's memory model, as `venn bench` does.
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
    n * (key + std::mem::size_of::<usize>() + values) as u64
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
pub(super) fn bench_intersection(sizes: Sizes) -> usize {
    (sizes.receiver.div_ceil(2)).min(sizes.sender / 2) as usize
}

/// Separates the values' key from the items'.
const VALUE_KEY: Block = Block::from_u128(0x5641_4c55_4553);

/// Peak resident set size of this process, from /proc (Linux only).
pub(super) fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// How a benchmark party reaches its peer.
pub(crate) enum Link {
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
    pub link: Link,
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

impl BenchParty {
    /// Runs the party and prints its [`PartyResult`] as the last line of stdout. A
    /// recorded or replayed run seeds the PRG from `seed`, so that the replay repeats it.
    pub(crate) fn run(self) -> Result<()> {
        let protocol = find(&self.protocol)?;
        let sizes = self.sizes;
        let (n, n_peer) = match self.role {
            Role::Sender => (sizes.sender as usize, sizes.receiver),
            Role::Receiver => (sizes.receiver as usize, sizes.sender),
        };
        let items = match self.options.sigma {
            Some(sigma) => bench_integers(self.seed, self.role, n, sigma),
            None => bench_items(self.seed, self.role, n),
        };
        let items = if protocol.accepts().value_columns > 0 && self.role == Role::Sender {
            items.with_values(bench_values(self.seed, n))?
        } else {
            items
        };
        let deterministic = !matches!(self.link, Link::Tcp { record: None, .. });
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
            seed: deterministic.then(|| Aes::new(self.seed).encrypt(Block::from(self.role as u64))),
            progress: None,
            dealer: dealer.as_ref().map(|d| d as &DealerLink),
            upload_deadline: None,
        };
        let mut state = None;
        let report = match self.link {
            Link::Tcp {
                listen,
                addr,
                record,
            } => match (record, &self.precompute) {
                (None, None) => venn::run(
                    &mut open(&self.transport, listen, &addr, self.timeout)?.0,
                    &items,
                    &opts,
                )?,
                (Some(path), None) => {
                    let mut chan = Recording::new(
                        open(&self.transport, listen, &addr, self.timeout)?.0,
                        &path,
                    )?;
                    let report = venn::run(&mut chan, &items, &opts)?;
                    chan.finish()?;
                    report
                }
                (None, Some(dir)) => {
                    let (mut chan, bound) = open(&self.transport, listen, &addr, self.timeout)?;
                    let pre = venn::precompute(&mut chan, n as u64, &opts)?;
                    drop(chan);
                    let path = dir.join(format!("{:032x}-{}.state", self.seed, self.role.name()));
                    let io = Instant::now();
                    let offline = pre.save(&path)?;
                    let bytes = std::fs::metadata(&path)?.len();
                    let loaded = venn::load_state(&path, &opts)?;
                    state = Some((bytes, io.elapsed().as_secs_f64()));
                    // The second session on the same address: the listener binds it again.
                    let (mut chan, _) = open(&self.transport, listen, &bound, self.timeout)?;
                    let online = venn::run_online(&mut chan, &items, loaded, &opts)?;
                    Report {
                        phases: [offline.phases, online.phases].concat(),
                        traffic: venn::net::Traffic {
                            sent: offline.traffic.sent + online.traffic.sent,
                            received: offline.traffic.received + online.traffic.received,
                        },
                        ..online
                    }
                }
                (Some(_), Some(_)) => {
                    return Err(Error::Usage(
                        "a recorded run cannot also be precomputed".into(),
                    ))
                }
            },
            Link::Replay { inbound, outbound } => {
                let mut chan = Replay::open(&inbound, &outbound)?;
                let report = venn::run(&mut chan, &items, &opts)?;
                chan.finish()?;
                report
            }
        };
        // The receiver's first even items are the intersection: its indices, or their
        // number.
        let shared = bench_intersection(sizes);
        let (intersection, verified) = match &report.output {
            Output::Indices(ix) => (
                Some(ix.len()),
                Some(ix.len() == shared && ix.iter().enumerate().all(|(k, &i)| i == 2 * k)),
            ),
            Output::Count(c) => (Some(*c as usize), Some(*c as usize == shared)),
            Output::Sum { count, sums } => (
                Some(*count as usize),
                Some(*count as usize == shared && sums[..] == [bench_sum(self.seed, shared)]),
            ),
            _ => (None, None),
        };
        let result = PartyResult {
            offline_s: report.offline().as_secs_f64(),
            online_s: report.online().as_secs_f64(),
            sent: report.traffic.sent,
            received: report.traffic.received,
            peak_rss: peak_rss(),
            memory_needed: venn::memory_needed(&opts, sizes),
            intersection,
            verified,
            state_bytes: state.map(|s| s.0),
            state_io_s: state.map(|s| s.1),
            phases: report
                .phases
                .iter()
                .map(|p| (p.name.to_string(), p.duration.as_secs_f64()))
                .collect(),
        };
        out!("{}", serde_json::to_string(&result).expect("serialisable"));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `venn plan` counts for a benchmark party's input is what its items hold: keys,
    /// σ-bit integers, and a sum's sender's values.
    #[test]
    fn the_input_memory_is_known_before_the_items_are_made() {
        let seed = Block::from(7);
        let n = 1000;
        for (name, sigma) in [("rr22", None), ("kbm23", Some(32)), ("rr22-sum", None)] {
            let p = find(name).unwrap();
            let options = Options {
                sigma,
                ..Options::default()
            };
            for role in [Role::Sender, Role::Receiver] {
                let items = match sigma {
                    Some(s) => bench_integers(seed, role, n, s),
                    None => bench_items(seed, role, n),
                };
                let items = match role {
                    Role::Sender if p.accepts().value_columns > 0 => {
                        items.with_values(bench_values(seed, n)).unwrap()
                    }
                    _ => items,
                };
                let known = bench_input_memory(p, options, role, n as u64);
                assert_eq!(known, items.memory(), "{name} {role:?}");
            }
        }
    }
}
