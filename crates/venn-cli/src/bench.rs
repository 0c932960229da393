//! `venn bench`: each protocol at each n, both parties as separate OS processes (so peak
//! RSS is per party) over loopback TCP, one thread each unless told otherwise. Items are
//! random 16-byte strings with half of them shared; the receiver checks its output against
//! the known intersection, and a run that does not verify is reported as failed.

use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use venn::crypto::{Aes, Block};
use venn::net::{tcp_connect, tcp_listen, Recording, Replay};
use venn::protocols::find;
use venn::session::Role;
use venn::{Error, Items, Result, RunOptions};

/// What one benchmark party prints as its last stdout line.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct PartyResult {
    pub offline_s: f64,
    pub online_s: f64,
    pub sent: u64,
    pub received: u64,
    pub peak_rss: Option<u64>,
    pub intersection: Option<usize>,
    pub verified: Option<bool>,
    /// Seconds per protocol phase, in order.
    pub phases: Vec<(String, f64)>,
}

/// One row of the benchmark table.
#[derive(Serialize, Clone, Debug)]
pub struct Row {
    pub protocol: String,
    pub log2n: u32,
    pub threads: usize,
    pub offline_s: f64,
    pub online_s: f64,
    pub total_s: f64,
    pub mib_sender_to_receiver: f64,
    pub mib_receiver_to_sender: f64,
    pub peak_rss_sender_mib: Option<f64>,
    pub peak_rss_receiver_mib: Option<f64>,
    pub ratio_to_naive: Option<f64>,
    pub ratio_to_kkrt16: Option<f64>,
    pub intersection: usize,
    pub verified: bool,
}

/// Item `i` of a party's benchmark set: receiver items at even, sender items at odd
/// positions are shared (`shared(i / 2)`); the rest are the party's own.
pub fn bench_items(seed: Block, role: Role, n: usize) -> Items {
    let aes = Aes::new(seed);
    let shared_parity = match role {
        Role::Receiver => 0,
        Role::Sender => 1,
    };
    let own_tag: u128 = match role {
        Role::Receiver => 2,
        Role::Sender => 1,
    };
    let mut items = Items::with_capacity(n, 16 * n);
    let mut buf = vec![0 as Block; 4096];
    for first in (0..n).step_by(buf.len()) {
        let count = (n - first).min(buf.len());
        for (j, b) in buf[..count].iter_mut().enumerate() {
            let i = (first + j) as u128;
            *b = if i % 2 == shared_parity {
                i / 2
            } else {
                own_tag << 64 | i
            };
        }
        aes.encrypt_blocks(&mut buf[..count]);
        for b in &buf[..count] {
            items.push(&b.to_le_bytes());
        }
    }
    items
}

/// Peak resident set size of this process, from /proc (Linux only).
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// How a benchmark party reaches its peer.
pub enum Link {
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

/// The hidden `venn bench-party` command: one party of one benchmark run. A recorded or
/// replayed run seeds the party's PRG from `seed`, so that the replay repeats it exactly.
pub fn bench_party(
    role: Role,
    protocol: &str,
    log2n: u32,
    seed: Block,
    threads: usize,
    link: Link,
    timeout: Duration,
) -> Result<()> {
    let protocol = find(protocol)?;
    let n = 1usize << log2n;
    let items = bench_items(seed, role, n);
    let deterministic = !matches!(link, Link::Tcp { record: None, .. });
    let opts = RunOptions {
        protocol,
        role,
        both: false,
        max_peer_items: n as u64,
        threads,
        seed: deterministic.then(|| Aes::new(seed).encrypt(role as Block)),
        progress: None,
    };
    let report = match link {
        Link::Tcp {
            listen,
            addr,
            record,
        } => {
            let mut chan = if listen {
                tcp_listen(&addr, timeout, |addr| println!("listening {addr}"))?
            } else {
                tcp_connect(&addr, timeout)?
            };
            match record {
                None => venn::run(&mut chan, &items, &opts)?,
                Some(path) => {
                    let mut chan = Recording::new(chan, &path)?;
                    let report = venn::run(&mut chan, &items, &opts)?;
                    chan.finish()?;
                    report
                }
            }
        }
        Link::Replay { inbound, outbound } => {
            let mut chan = Replay::open(&inbound, &outbound)?;
            let report = venn::run(&mut chan, &items, &opts)?;
            chan.finish()?;
            report
        }
    };
    let verified = report
        .intersection
        .as_ref()
        .map(|ix| ix.len() == n.div_ceil(2) && ix.iter().enumerate().all(|(k, &i)| i == 2 * k));
    let result = PartyResult {
        offline_s: report.offline().as_secs_f64(),
        online_s: report.online().as_secs_f64(),
        sent: report.traffic.sent,
        received: report.traffic.received,
        peak_rss: peak_rss(),
        intersection: report.intersection.as_ref().map(Vec::len),
        verified,
        phases: report
            .phases
            .iter()
            .map(|p| (p.name.to_string(), p.duration.as_secs_f64()))
            .collect(),
    };
    println!("{}", serde_json::to_string(&result).expect("serialisable"));
    Ok(())
}

fn spawn_party(
    role: Role,
    protocol: &str,
    log2n: u32,
    seed: Block,
    threads: usize,
    link: &[String],
    timeout: u64,
) -> Result<std::process::Child> {
    Ok(Command::new(std::env::current_exe()?)
        .args(["bench-party", "--role", role.name(), "--protocol", protocol])
        .args([
            "--log2n",
            &log2n.to_string(),
            "--seed",
            &format!("{seed:032x}"),
        ])
        .args([
            "--threads",
            &threads.to_string(),
            "--timeout",
            &timeout.to_string(),
        ])
        .args(link)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?)
}

fn last_json(child: std::process::Child, who: &str) -> Result<PartyResult> {
    let out = child.wait_with_output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    if !out.status.success() {
        return Err(Error::Bench(format!(
            "benchmark {who} failed ({})",
            out.status
        )));
    }
    serde_json::from_str(line)
        .map_err(|e| Error::Bench(format!("benchmark {who} printed no result: {e}")))
}

/// Where a recorded run's transcripts go: `<dir>/<role>.in`, what that party received.
fn transcript(dir: &Path, role: Role) -> String {
    dir.join(format!("{}.in", role.name()))
        .to_string_lossy()
        .into_owned()
}

/// Runs one protocol at one n on items drawn from `seed`, each party recording what it
/// receives into `record` if given.
fn bench_one(
    protocol: &str,
    log2n: u32,
    threads: usize,
    timeout: u64,
    seed: Block,
    record: Option<&Path>,
) -> Result<Row> {
    let link = |endpoint: [&str; 2], role| -> Vec<String> {
        let mut v: Vec<String> = endpoint.iter().map(|s| s.to_string()).collect();
        if let Some(dir) = record {
            v.extend(["--record".to_string(), transcript(dir, role)]);
        }
        v
    };
    let mut receiver = spawn_party(
        Role::Receiver,
        protocol,
        log2n,
        seed,
        threads,
        &link(["--listen", "127.0.0.1:0"], Role::Receiver),
        timeout,
    )?;
    let mut first = String::new();
    BufReader::new(receiver.stdout.as_mut().expect("piped")).read_line(&mut first)?;
    let addr = first
        .strip_prefix("listening ")
        .map(str::trim)
        .ok_or_else(|| Error::Bench("benchmark receiver did not start listening".into()))?
        .to_string();
    let sender = spawn_party(
        Role::Sender,
        protocol,
        log2n,
        seed,
        threads,
        &link(["--connect", &addr], Role::Sender),
        timeout,
    )?;
    let s = last_json(sender, "sender")?;
    let r = last_json(receiver, "receiver")?;
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    Ok(Row {
        protocol: protocol.to_string(),
        log2n,
        threads,
        offline_s: s.offline_s.max(r.offline_s),
        online_s: s.online_s.max(r.online_s),
        total_s: (s.offline_s + s.online_s).max(r.offline_s + r.online_s),
        mib_sender_to_receiver: mib(s.sent),
        mib_receiver_to_sender: mib(r.sent),
        peak_rss_sender_mib: s.peak_rss.map(mib),
        peak_rss_receiver_mib: r.peak_rss.map(mib),
        ratio_to_naive: None,
        ratio_to_kkrt16: None,
        intersection: r.intersection.unwrap_or(0),
        verified: r.verified == Some(true),
    })
}

/// The run with the median total time of `runs` (all verified, or the first that is not).
fn median(mut runs: Vec<Row>) -> Row {
    if let Some(bad) = runs.iter().position(|r| !r.verified) {
        return runs.swap_remove(bad);
    }
    runs.sort_by(|a, b| a.total_s.total_cmp(&b.total_s));
    let mid = runs.len() / 2;
    runs.swap_remove(mid)
}

/// One party run alone (`--solo`) at one thread count: the replay with the median time.
#[derive(Serialize, Clone, Debug)]
pub struct SoloRow {
    pub protocol: String,
    pub log2n: u32,
    pub party: String,
    pub threads: usize,
    pub total_s: f64,
    /// Seconds per protocol phase, in order.
    pub phases: Vec<(String, f64)>,
}

/// A scratch directory removed when dropped.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new() -> Result<Self> {
        let tag = venn::crypto::Prg::from_entropy().block() as u64;
        let dir = std::env::temp_dir().join(format!("venn-solo-{}-{tag:016x}", std::process::id()));
        std::fs::create_dir(&dir)?;
        Ok(ScratchDir(dir))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `--solo`: records one run, then replays each party by itself at each thread count. Both
/// parties share this machine in a normal run, so only alone does a party show what its
/// own threads buy. Each replay must send exactly what the recorded party sent (checked
/// frame by frame), and the receiver must still find the right intersection.
fn bench_solo(
    protocol: &str,
    log2n: u32,
    threads: &[usize],
    repeat: usize,
    timeout: u64,
) -> Result<Vec<SoloRow>> {
    let dir = ScratchDir::new()?;
    let seed = venn::crypto::Prg::from_entropy().block();
    let recorded = bench_one(protocol, log2n, threads[0], timeout, seed, Some(&dir.0))?;
    if !recorded.verified {
        return Err(Error::Bench(format!(
            "{protocol} at n = 2^{log2n}: the recorded run returned a wrong intersection"
        )));
    }
    let mut rows = Vec::new();
    for &t in threads {
        for (role, peer) in [
            (Role::Sender, Role::Receiver),
            (Role::Receiver, Role::Sender),
        ] {
            let (inbound, outbound) = (transcript(&dir.0, role), transcript(&dir.0, peer));
            let link = ["--replay", &inbound, "--expect", &outbound].map(String::from);
            let mut runs = (0..repeat.max(1))
                .map(|_| {
                    let r = last_json(
                        spawn_party(role, protocol, log2n, seed, t, &link, timeout)?,
                        role.name(),
                    )?;
                    if role == Role::Receiver && r.verified != Some(true) {
                        return Err(Error::Bench(format!(
                            "{protocol} at n = 2^{log2n}: the replayed receiver found a wrong intersection"
                        )));
                    }
                    Ok(r)
                })
                .collect::<Result<Vec<_>>>()?;
            runs.sort_by(|a, b| (a.offline_s + a.online_s).total_cmp(&(b.offline_s + b.online_s)));
            let mid = runs.swap_remove(runs.len() / 2);
            rows.push(SoloRow {
                protocol: protocol.to_string(),
                log2n,
                party: role.name().to_string(),
                threads: t,
                total_s: mid.offline_s + mid.online_s,
                phases: mid.phases,
            });
        }
    }
    Ok(rows)
}

/// Prints the `--solo` rows of one protocol at one n: each phase's time at each thread
/// count, and the speed-up from the first count to the last.
fn print_solo(rows: &[SoloRow], threads: &[usize]) {
    for party in ["sender", "receiver"] {
        let of: Vec<&SoloRow> = threads
            .iter()
            .filter_map(|&t| rows.iter().find(|r| r.party == party && r.threads == t))
            .collect();
        let Some(first) = of.first() else { continue };
        let mut lines: Vec<(String, Vec<f64>)> = first
            .phases
            .iter()
            .filter(|(name, _)| name != "handshake")
            .map(|(name, _)| {
                let times = of
                    .iter()
                    .map(|r| {
                        r.phases
                            .iter()
                            .find(|(n, _)| n == name)
                            .map_or(0.0, |p| p.1)
                    })
                    .collect();
                (name.clone(), times)
            })
            .collect();
        lines.push(("total".into(), of.iter().map(|r| r.total_s).collect()));
        for (name, times) in lines {
            let cols: String = times.iter().map(|t| format!(" {t:>9.3}")).collect();
            let speedup = times[0] / times[times.len() - 1].max(1e-9);
            println!(
                "{:<10} {:>5} {:<8} {:<38}{cols} {:>8.2}",
                first.protocol, first.log2n, party, name, speedup
            );
        }
    }
}

/// What `venn bench` measures.
pub struct BenchOptions<'a> {
    pub protocols: &'a [String],
    pub log2ns: &'a [u32],
    /// Threads per party; one row per count.
    pub threads: &'a [usize],
    /// Runs per row; the row shows the run with the median total time.
    pub repeat: usize,
    /// Also time each party alone at each thread count.
    pub solo: bool,
    pub json: bool,
    pub timeout: u64,
}

/// `venn bench`: each row is the median of `repeat` runs.
pub fn bench(o: &BenchOptions) -> Result<()> {
    for p in o.protocols {
        find(p)?;
    }
    if o.threads.is_empty() || o.threads.contains(&0) {
        return Err(Error::Bench("--threads wants counts of at least 1".into()));
    }
    let (mut rows, mut solo) = (Vec::new(), Vec::new());
    if !o.json {
        println!(
            "{:<10} {:>5} {:>7} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10} {:>8} {:>8} {:>8}",
            "protocol",
            "log2n",
            "threads",
            "offline",
            "online",
            "total",
            "MiB s->r",
            "MiB r->s",
            "RSS s MiB",
            "RSS r MiB",
            "x naive",
            "x kkrt16",
            "verified"
        );
    }
    for &log2n in o.log2ns {
        for &threads in o.threads {
            let mut at_n: Vec<Row> = Vec::new();
            for p in o.protocols {
                let runs = (0..o.repeat.max(1))
                    .map(|_| {
                        let seed = venn::crypto::Prg::from_entropy().block();
                        bench_one(p, log2n, threads, o.timeout, seed, None)
                    })
                    .collect::<Result<Vec<_>>>()?;
                at_n.push(median(runs));
            }
            let total_of = |name: &str| at_n.iter().find(|r| r.protocol == name).map(|r| r.total_s);
            let (naive, kkrt16) = (total_of("naive"), total_of("kkrt16"));
            for mut row in at_n {
                row.ratio_to_naive = naive.map(|t| row.total_s / t);
                row.ratio_to_kkrt16 = kkrt16.map(|t| row.total_s / t);
                if !o.json {
                    print_row(&row);
                }
                if !row.verified {
                    return Err(Error::Bench(format!(
                        "{} at n = 2^{} returned a wrong intersection ({} items)",
                        row.protocol, row.log2n, row.intersection
                    )));
                }
                rows.push(row);
            }
        }
    }
    if o.solo {
        if !o.json {
            let heads: String = o
                .threads
                .iter()
                .map(|t| format!(" {:>9}", format!("{t} thr")))
                .collect();
            println!(
                "\nsolo: each party alone against a recorded run (its messages checked byte for byte)\n{:<10} {:>5} {:<8} {:<38}{heads} {:>8}",
                "protocol", "log2n", "party", "phase (seconds)", "speed-up"
            );
        }
        for &log2n in o.log2ns {
            for p in o.protocols {
                let at = bench_solo(p, log2n, o.threads, o.repeat, o.timeout)?;
                if !o.json {
                    print_solo(&at, o.threads);
                }
                solo.extend(at);
            }
        }
    }
    if o.json {
        let out = serde_json::json!({ "rows": rows, "solo": solo });
        println!(
            "{}",
            serde_json::to_string_pretty(&out).expect("serialisable")
        );
    }
    Ok(())
}

fn print_row(row: &Row) {
    let opt = |v: Option<f64>, prec: usize| v.map_or("-".into(), |v| format!("{v:.prec$}"));
    println!(
        "{:<10} {:>5} {:>7} {:>9.3} {:>9.3} {:>9.3} {:>10.2} {:>10.2} {:>10} {:>10} {:>8} {:>8} {:>8}",
        row.protocol, row.log2n, row.threads, row.offline_s, row.online_s, row.total_s,
        row.mib_sender_to_receiver, row.mib_receiver_to_sender,
        opt(row.peak_rss_sender_mib, 0), opt(row.peak_rss_receiver_mib, 0),
        opt(row.ratio_to_naive, 2), opt(row.ratio_to_kkrt16, 2),
        if row.verified { "yes" } else { "NO" }
    );
}
