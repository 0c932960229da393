//! `venn bench`: each protocol at each n, both parties as separate OS processes (so peak
//! RSS is per party) over loopback TCP, one thread each unless told otherwise. Items are
//! random 16-byte strings with half of them shared; the receiver checks its output against
//! the known intersection, and a run that does not verify is reported as failed.

mod files;
mod network;
mod party;
mod solo;
mod thunder;

use crate::failure::{Failure, Result};
pub(crate) use network::{parse_net, parse_net_arg};
use party::PartyResult;
pub(crate) use party::{bench_input_memory, BenchParty, Link};
use serde::{Deserialize, Serialize};
use solo::{bench_solo, print_solo, transcript};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
pub(crate) use thunder::{bench_thunder, ThunderOptions};
use venn::crypto::Block;
use venn::protocols::{find, Bins, Offline, Options, Stash};
use venn::session::{Role, Sizes};
use venn::Error;

/// One row of the benchmark table (what `--json` prints, and `venn plan --fit` reads).
#[derive(Serialize, Deserialize, Clone, Debug)]
pub(crate) struct Row {
    pub protocol: String,
    /// Whether the link was TLS 1.3 (`--tls`) rather than plain TCP.
    pub tls: bool,
    /// The sender's and the receiver's set sizes.
    pub n_sender: u64,
    pub n_receiver: u64,
    pub threads: usize,
    /// The emulated network (`--net`, as given), if any.
    #[serde(default)]
    pub net: Option<String>,
    pub offline_s: f64,
    pub online_s: f64,
    pub total_s: f64,
    pub mib_sender_to_receiver: f64,
    pub mib_receiver_to_sender: f64,
    pub peak_rss_sender_mib: Option<f64>,
    pub peak_rss_receiver_mib: Option<f64>,
    /// What each party's memory model said its run would need (`--max-memory` is held to
    /// it), beside the peak measured.
    pub memory_model_sender_mib: f64,
    pub memory_model_receiver_mib: f64,
    pub ratio_to_naive: Option<f64>,
    pub ratio_to_kkrt16: Option<f64>,
    /// For a TLS row: its total over the same protocol's plaintext row.
    pub ratio_to_plaintext: Option<f64>,
    pub intersection: usize,
    pub verified: bool,
    /// Whether the online phase ran from a precomputed state (`--precompute`).
    pub precomputed: bool,
    pub state_mib_sender: Option<f64>,
    pub state_mib_receiver: Option<f64>,
}

impl Row {
    /// The set sizes: `2^K` for equal sets of 2^K, else SENDER:RECEIVER, each `2^K` or
    /// the number.
    pub(crate) fn sizes_text(&self) -> String {
        let count = |n: u64| match n.is_power_of_two() {
            true => format!("2^{}", n.ilog2()),
            false => n.to_string(),
        };
        match (self.n_sender, self.n_receiver) {
            (s, r) if s == r && s.is_power_of_two() => count(s),
            (s, r) => format!("{}:{}", count(s), count(r)),
        }
    }

    /// The table's `log2n` column: K for equal sets of 2^K (the `--log2n` given), else
    /// [`Row::sizes_text`].
    fn log2n_column(&self) -> String {
        let text = self.sizes_text();
        text.strip_prefix("2^")
            .filter(|k| !k.contains(':'))
            .map_or(text.clone(), str::to_string)
    }
}

/// A protocol with the options of its rows.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Variant<'a> {
    pub name: &'a str,
    pub options: Options,
}

impl Variant<'_> {
    /// The protocol column: its name, `/wan` for WAN bins and `/sσ` for σ-bit items.
    pub(crate) fn label(&self) -> String {
        let mut label = self.name.to_string();
        if self.options.bins == Bins::Wan {
            label += "/wan";
        }
        if let Some(sigma) = self.options.sigma {
            label += &format!("/s{sigma}");
        }
        if self.options.offline != Offline::Ot {
            label += &format!("/{}", self.options.offline.name());
        }
        if self.options.stash != Stash::Combined {
            label += &format!("/{}", self.options.stash.name());
        }
        label
    }
}

/// The CPU level the parties run at (they inherit `VENN_CPU`) and what it means here: the
/// first line of every benchmark table, and the `cpu` of its JSON.
fn cpu_line() -> String {
    format!("cpu: {}", venn::util::cpu::describe())
}

/// What both parties of one benchmark run are started with.
#[derive(Clone, Copy)]
struct Spawn<'a> {
    variant: Variant<'a>,
    sizes: Sizes,
    seed: Block,
    threads: usize,
    timeout: u64,
    net: Option<&'a str>,
}

fn spawn_party(role: Role, s: &Spawn, link: &[String]) -> Result<std::process::Child> {
    let Spawn {
        variant,
        sizes,
        seed,
        threads,
        timeout,
        net,
    } = *s;
    Ok(Command::new(std::env::current_exe()?)
        .args([
            "bench-party",
            "--role",
            role.name(),
            "--protocol",
            variant.name,
        ])
        .args(variant.options.args())
        .args([
            "--sizes",
            &format!("{}:{}", sizes.sender, sizes.receiver),
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
        .args(net.iter().flat_map(|n| ["--net", n]))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?)
}

/// The address a spawned process printed first (`listening ADDR`).
fn listening_at(child: &mut std::process::Child, who: &str) -> Result<String> {
    let mut first = String::new();
    BufReader::new(child.stdout.as_mut().expect("piped")).read_line(&mut first)?;
    Ok(first
        .strip_prefix("listening ")
        .map(str::trim)
        .ok_or_else(|| Failure::Bench(format!("benchmark {who} did not start listening")))?
        .to_string())
}

/// A `venn dealer` for one session on loopback, and its address.
fn spawn_dealer(timeout: u64) -> Result<(std::process::Child, String)> {
    let mut dealer = Command::new(std::env::current_exe()?)
        .args(["dealer", "--listen", "127.0.0.1:0", "--sessions", "1"])
        .args(["--timeout", &timeout.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let addr = listening_at(&mut dealer, "dealer")?;
    Ok((dealer, addr))
}

fn last_json(child: std::process::Child, who: &str) -> Result<PartyResult> {
    let out = child.wait_with_output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    if !out.status.success() {
        return Err(Failure::Bench(format!(
            "benchmark {who} failed ({})",
            out.status
        )));
    }
    serde_json::from_str(line)
        .map_err(|e| Failure::Bench(format!("benchmark {who} printed no result: {e}")))
}

/// A scratch directory (generated files, transcripts, states), removed when dropped or
/// when the benchmark is stopped ([`venn_app::temp_dirs`]).
struct ScratchDir(venn_app::temp_dirs::TempDir);

impl ScratchDir {
    fn new() -> Result<Self> {
        let tag = format!("venn-bench-{}-", std::process::id());
        Ok(ScratchDir(venn_app::temp_dirs::TempDir::new_in(
            &std::env::temp_dir(),
            &tag,
        )?))
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

/// What each party of a benchmark run does besides the run itself.
#[derive(Clone, Copy)]
enum Attached<'a> {
    Nothing,
    /// Writes what it receives into transcripts in this directory (for `--solo`).
    Record(&'a Path),
    /// Precomputes into a state file in this directory and runs online from it.
    Precompute(&'a Path),
}

/// Makes a key and certificate for each role in `dir`, each pinning the other's: what
/// `bench-party --tls-dir` reads.
fn tls_identities(dir: &Path) -> Result<()> {
    for role in [Role::Sender, Role::Receiver] {
        let made = venn_app::keygen::self_signed(1)?;
        let file = |ext: &str| dir.join(format!("{}.{ext}", role.name()));
        std::fs::write(file("crt"), made.cert_pem)?;
        std::fs::write(file("key"), made.key_pem)?;
        std::fs::write(file("fp"), made.fingerprint)?;
    }
    Ok(())
}

/// Runs one protocol at one n on items drawn from `seed`, each party doing `attached`
/// besides; over TLS with the identities in `tls` if given.
fn bench_one(spawn: &Spawn, attached: Attached, tls: Option<&Path>) -> Result<Row> {
    let (protocol, sizes, threads) = (spawn.variant.label(), spawn.sizes, spawn.threads);
    let link = |endpoint: [&str; 2], role| -> Vec<String> {
        let mut v: Vec<String> = endpoint.iter().map(|s| s.to_string()).collect();
        if let Some(dir) = tls {
            v.extend(["--tls-dir".to_string(), dir.to_string_lossy().into_owned()]);
        }
        match attached {
            Attached::Nothing => {}
            Attached::Record(dir) => v.extend(["--record".to_string(), transcript(dir, role)]),
            Attached::Precompute(dir) => v.extend([
                "--precompute".to_string(),
                dir.to_string_lossy().into_owned(),
            ]),
        }
        v
    };
    let dealer = match spawn.variant.options.offline {
        Offline::Ot | Offline::Bfv | Offline::Iknp => None,
        Offline::Dealer => Some(spawn_dealer(spawn.timeout)?),
    };
    let dealer_args: Vec<String> = match &dealer {
        Some((_, addr)) => vec!["--dealer".into(), addr.clone()],
        None => Vec::new(),
    };
    let with_dealer = |mut v: Vec<String>| {
        v.extend(dealer_args.iter().cloned());
        v
    };
    let mut receiver = spawn_party(
        Role::Receiver,
        spawn,
        &with_dealer(link(["--listen", "127.0.0.1:0"], Role::Receiver)),
    )?;
    let addr = listening_at(&mut receiver, "receiver")?;
    let sender = spawn_party(
        Role::Sender,
        spawn,
        &with_dealer(link(["--connect", &addr], Role::Sender)),
    )?;
    let s = last_json(sender, "sender")?;
    let r = last_json(receiver, "receiver")?;
    if let Some((mut dealer, _)) = dealer {
        if !dealer.wait()?.success() {
            return Err(Failure::Bench("the benchmark's dealer failed".into()));
        }
    }
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    Ok(Row {
        protocol,
        tls: tls.is_some(),
        n_sender: sizes.sender,
        n_receiver: sizes.receiver,
        threads,
        net: spawn.net.map(str::to_string),
        offline_s: s.offline_s.max(r.offline_s),
        online_s: s.online_s.max(r.online_s),
        total_s: (s.offline_s + s.online_s).max(r.offline_s + r.online_s),
        mib_sender_to_receiver: mib(s.sent),
        mib_receiver_to_sender: mib(r.sent),
        peak_rss_sender_mib: s.peak_rss.map(mib),
        peak_rss_receiver_mib: r.peak_rss.map(mib),
        memory_model_sender_mib: mib(s.memory_needed),
        memory_model_receiver_mib: mib(r.memory_needed),
        ratio_to_naive: None,
        ratio_to_kkrt16: None,
        ratio_to_plaintext: None,
        intersection: r.intersection.unwrap_or(0),
        verified: r.verified == Some(true),
        precomputed: matches!(attached, Attached::Precompute(_)),
        state_mib_sender: s.state_bytes.map(mib),
        state_mib_receiver: r.state_bytes.map(mib),
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

/// What `venn bench` measures.
pub(crate) struct BenchOptions<'a> {
    pub protocols: &'a [String],
    /// RR17's bins, a row for each (for protocols that take them).
    pub bins: &'a [Bins],
    /// Item bit lengths, a row for each (for protocols on σ-bit integers; empty: all they
    /// take).
    pub sigmas: &'a [crate::params::SigmaRow],
    pub log2ns: &'a [u32],
    /// Unequal set sizes, (sender, receiver): a row for each after the `log2ns`' (only
    /// for the protocols' runs, not `--solo` or `--files`).
    pub sizes: &'a [(u64, u64)],
    /// Threads per party; one row per count.
    pub threads: &'a [usize],
    /// Runs per row; the row shows the run with the median total time.
    pub repeat: usize,
    /// Also time each party alone at each thread count.
    pub solo: bool,
    /// Run the offline phase into state files first, and the online phase from them in a
    /// second session (the online column is then that session alone).
    pub precompute: bool,
    /// Also run each protocol over TLS, interleaved with the plaintext runs.
    pub tls: bool,
    /// An emulated network (`--net`), as given.
    pub net: Option<&'a str>,
    /// Where kbm23's tuples come from, a row for each (for protocols that choose).
    pub offlines: &'a [Offline],
    /// Run `venn send` and `venn receive` end to end on CSV files instead.
    pub files: bool,
    pub json: bool,
    pub timeout: u64,
}

/// `venn bench`: each row is the median of `repeat` runs.
pub(crate) fn bench(o: &BenchOptions) -> Result<()> {
    let mut protocols = Vec::new();
    for name in o.protocols {
        let p = find(name)?;
        let variants = crate::params::variants(p, o.bins, o.sigmas, o.offlines);
        if variants.is_empty() {
            return Err(Error::Usage(format!(
                "{name} runs with none of the option combinations asked for"
            ))
            .into());
        }
        for options in variants {
            options.check(p.info(), p.accepts())?;
            protocols.push(Variant { name, options });
        }
    }
    // Every row's sets, each at most what a party takes (checked before any is made).
    let equal = (o.log2ns.iter()).map(|&k| {
        let n = 1u64.checked_shl(k).unwrap_or(u64::MAX);
        (n, n)
    });
    let sizes: Vec<Sizes> = (equal.chain(o.sizes.iter().copied()))
        .map(
            |(sender, receiver)| match sender.max(receiver) <= venn::MAX_ITEMS {
                true => Ok(Sizes { sender, receiver }),
                false => Err(Error::Usage(format!(
                    "sets of {sender} and {receiver} items: more than the supported {}",
                    venn::MAX_ITEMS
                ))),
            },
        )
        .collect::<venn::Result<_>>()?;
    if o.files {
        if let Some(v) = protocols.iter().find(|v| v.options != Options::default()) {
            return Err(Error::Usage(format!(
                "--files runs protocols on generated hex keys with their default options, not {}",
                v.label()
            ))
            .into());
        }
        return files::bench_files(o.protocols, o.log2ns, o.repeat, o.json);
    }
    if o.threads.is_empty() {
        return Err(Failure::Bench(
            "--threads wants counts of at least 1".into(),
        ));
    }
    // Each count bounded to the cores; one that becomes another's is run once.
    let mut thread_counts: Vec<usize> = Vec::new();
    for &asked in o.threads {
        let t = venn_app::threads::bounded(asked)?;
        if !thread_counts.contains(&t) {
            thread_counts.push(t);
        }
    }
    let (mut rows, mut solo) = (Vec::new(), Vec::new());
    let scratch = ScratchDir::new()?;
    let tls_dir = scratch.path().join("tls");
    if o.tls {
        std::fs::create_dir(&tls_dir)?;
        tls_identities(&tls_dir)?;
    }
    let variants: &[Option<&Path>] = if o.tls {
        &[None, Some(&tls_dir)]
    } else {
        &[None]
    };
    let attached = if o.precompute {
        Attached::Precompute(scratch.path())
    } else {
        Attached::Nothing
    };
    if !o.json {
        out!("{}", cpu_line());
        if o.precompute {
            out!("online: a second session from the precomputed states (their size at the end of each row)");
        }
        out!(
            "{:<18} {:>5} {:>7} {:>9} {:>9} {:>9} {:>10} {:>10} {:>13} {:>13} {:>8} {:>8} {:>8}",
            "protocol",
            "log2n",
            "threads",
            "offline",
            "online",
            "total",
            "MiB s->r",
            "MiB r->s",
            "RSS/model s",
            "RSS/model r",
            "x naive",
            "x kkrt16",
            "verified"
        );
        if o.tls {
            out!("(a +tls row ran over TLS 1.3, interleaved with the plaintext runs; x plain compares them)");
        }
    }
    for &sizes in &sizes {
        for &threads in &thread_counts {
            let mut at_n: Vec<Row> = Vec::new();
            for &p in &protocols {
                let mut runs: Vec<Vec<Row>> = vec![Vec::new(); variants.len()];
                for _ in 0..o.repeat.max(1) {
                    for (i, tls) in variants.iter().enumerate() {
                        let spawn = Spawn {
                            variant: p,
                            sizes,
                            seed: venn::crypto::Prg::from_entropy().block(),
                            threads,
                            timeout: o.timeout,
                            net: o.net,
                        };
                        runs[i].push(bench_one(&spawn, attached, *tls)?);
                    }
                }
                at_n.extend(runs.into_iter().map(median));
            }
            let total_of = |name: &str, tls: bool| {
                at_n.iter()
                    .find(|r| r.protocol == name && r.tls == tls)
                    .map(|r| r.total_s)
            };
            let (naive, kkrt16) = (total_of("naive", false), total_of("kkrt16", false));
            let plain: Vec<Option<f64>> =
                at_n.iter().map(|r| total_of(&r.protocol, false)).collect();
            for (mut row, plain) in at_n.into_iter().zip(plain) {
                if !row.tls {
                    row.ratio_to_naive = naive.map(|t| row.total_s / t);
                    row.ratio_to_kkrt16 = kkrt16.map(|t| row.total_s / t);
                } else {
                    row.ratio_to_plaintext = plain.map(|t| row.total_s / t);
                }
                if !o.json {
                    print_row(&row);
                }
                if !row.verified {
                    return Err(Failure::Bench(format!(
                        "{} at n = {} returned a wrong intersection ({} items)",
                        row.protocol,
                        row.sizes_text(),
                        row.intersection
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
            out!(
                "\nsolo: each party alone against a recorded run (its messages checked byte for byte)\n{:<18} {:>5} {:<8} {:<38}{heads} {:>8}",
                "protocol", "log2n", "party", "phase (seconds)", "speed-up"
            );
        }
        for &log2n in o.log2ns {
            for &p in &protocols {
                let at = bench_solo(p, log2n, &thread_counts, o.repeat, o.timeout)?;
                if !o.json {
                    print_solo(&at, &thread_counts);
                }
                solo.extend(at);
            }
        }
    }
    if o.json {
        let cpu = venn::util::cpu::describe();
        let out = serde_json::json!({ "cpu": cpu, "rows": rows, "solo": solo });
        out!(
            "{}",
            serde_json::to_string_pretty(&out).expect("serialisable")
        );
    }
    Ok(())
}

fn print_row(row: &Row) {
    let opt = |v: Option<f64>, prec: usize| v.map_or("-".into(), |v| format!("{v:.prec$}"));
    let mut extra = match (row.state_mib_sender, row.state_mib_receiver) {
        (Some(s), Some(r)) => format!("  state {s:.1} / {r:.1} MiB"),
        _ => String::new(),
    };
    if let Some(x) = row.ratio_to_plaintext {
        extra += &format!("  x plain {x:.3}");
    }
    let name = if row.tls {
        format!("{}+tls", row.protocol)
    } else {
        row.protocol.clone()
    };
    out!(
        "{:<18} {:>5} {:>7} {:>9.3} {:>9.3} {:>9.3} {:>10.2} {:>10.2} {:>13} {:>13} {:>8} {:>8} {:>8}{extra}",
        name, row.log2n_column(), row.threads, row.offline_s, row.online_s, row.total_s,
        row.mib_sender_to_receiver, row.mib_receiver_to_sender,
        // Each party's peak RSS over its memory model's figure, in MiB (`87/130`).
        format!("{}/{:.0}", opt(row.peak_rss_sender_mib, 0), row.memory_model_sender_mib),
        format!("{}/{:.0}", opt(row.peak_rss_receiver_mib, 0), row.memory_model_receiver_mib),
        opt(row.ratio_to_naive, 2), opt(row.ratio_to_kkrt16, 2),
        if row.verified { "yes" } else { "NO" }
    );
}
