//! `venn bench`: each protocol at each n, both parties as separate OS processes (so peak
//! RSS is per party) over loopback TCP, one thread each unless told otherwise. Items are
//! random 16-byte strings with half of them shared; the receiver checks its output against
//! the known intersection, and a run that does not verify is reported as failed.

use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;
use venn::crypto::{Aes, Block};
use venn::net::{tcp_connect, tcp_listen, Role};
use venn::protocols::find;
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

/// The hidden `venn bench-party` command: one party of one benchmark run.
#[allow(clippy::too_many_arguments)]
pub fn bench_party(
    role: Role,
    protocol: &str,
    log2n: u32,
    seed: Block,
    threads: usize,
    listen: Option<&str>,
    connect: Option<&str>,
    timeout: Duration,
) -> Result<()> {
    let protocol = find(protocol)?;
    let n = 1usize << log2n;
    let items = bench_items(seed, role, n);
    let mut chan = match (listen, connect) {
        (Some(a), _) => tcp_listen(a, timeout, |addr| println!("listening {addr}"))?,
        (None, Some(a)) => tcp_connect(a, timeout)?,
        _ => {
            return Err(Error::Params(
                "bench-party needs --listen or --connect".into(),
            ))
        }
    };
    let opts = RunOptions {
        protocol,
        role,
        both: false,
        max_peer_items: n as u64,
        threads,
        seed: None,
        progress: None,
    };
    let report = venn::run(&mut chan, &items, &opts)?;
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
    endpoint: [&str; 2],
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
        .args(endpoint)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?)
}

fn last_json(child: std::process::Child, who: &str) -> Result<PartyResult> {
    let out = child.wait_with_output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    if !out.status.success() {
        return Err(Error::Params(format!(
            "benchmark {who} failed ({})",
            out.status
        )));
    }
    serde_json::from_str(line)
        .map_err(|e| Error::Params(format!("benchmark {who} printed no result: {e}")))
}

/// Runs one protocol at one n.
fn bench_one(protocol: &str, log2n: u32, threads: usize, timeout: u64) -> Result<Row> {
    let mut prg = venn::crypto::Prg::from_entropy();
    let seed = prg.block();
    let mut receiver = spawn_party(
        Role::Receiver,
        protocol,
        log2n,
        seed,
        threads,
        ["--listen", "127.0.0.1:0"],
        timeout,
    )?;
    let mut first = String::new();
    BufReader::new(receiver.stdout.as_mut().expect("piped")).read_line(&mut first)?;
    let addr = first
        .strip_prefix("listening ")
        .map(str::trim)
        .ok_or_else(|| Error::Params("benchmark receiver did not start listening".into()))?
        .to_string();
    let sender = spawn_party(
        Role::Sender,
        protocol,
        log2n,
        seed,
        threads,
        ["--connect", &addr],
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

/// `venn bench`: each row is the median of `repeat` runs.
pub fn bench(
    protocols: &[String],
    log2ns: &[u32],
    threads: usize,
    repeat: usize,
    json: bool,
    timeout: u64,
) -> Result<()> {
    for p in protocols {
        find(p)?;
    }
    let mut rows = Vec::new();
    if !json {
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
    for &log2n in log2ns {
        let mut at_n: Vec<Row> = Vec::new();
        for p in protocols {
            let runs = (0..repeat.max(1))
                .map(|_| bench_one(p, log2n, threads, timeout))
                .collect::<Result<Vec<_>>>()?;
            at_n.push(median(runs));
        }
        let total_of = |name: &str| at_n.iter().find(|r| r.protocol == name).map(|r| r.total_s);
        let (naive, kkrt16) = (total_of("naive"), total_of("kkrt16"));
        for mut row in at_n {
            row.ratio_to_naive = naive.map(|t| row.total_s / t);
            row.ratio_to_kkrt16 = kkrt16.map(|t| row.total_s / t);
            if !json {
                let opt =
                    |v: Option<f64>, prec: usize| v.map_or("-".into(), |v| format!("{v:.prec$}"));
                println!(
                    "{:<10} {:>5} {:>7} {:>9.3} {:>9.3} {:>9.3} {:>10.2} {:>10.2} {:>10} {:>10} {:>8} {:>8} {:>8}",
                    row.protocol, row.log2n, row.threads, row.offline_s, row.online_s, row.total_s,
                    row.mib_sender_to_receiver, row.mib_receiver_to_sender,
                    opt(row.peak_rss_sender_mib, 0), opt(row.peak_rss_receiver_mib, 0),
                    opt(row.ratio_to_naive, 2), opt(row.ratio_to_kkrt16, 2),
                    if row.verified { "yes" } else { "NO" }
                );
            }
            if !row.verified {
                return Err(Error::Params(format!(
                    "{} at n = 2^{} returned a wrong intersection ({} items)",
                    row.protocol, row.log2n, row.intersection
                )));
            }
            rows.push(row);
        }
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&rows).expect("serialisable")
        );
    }
    Ok(())
}
