//! `venn`: private set intersection on CSV files between two machines.

// First: its `out!` is for every module after it.
#[macro_use]
mod stdout;

mod bench;
mod cloud;
mod dealer;
mod demo;
mod failure;
mod keygen;
mod params;
mod plan;
mod signals;
mod ub;

use clap::{Args, Parser, Subcommand};
use failure::Failure;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use venn::protocols::{Bins, Offline};
use venn::session::Role;
use venn::{Error, Result};
use venn_app::party::{
    precompute_party, precompute_summary, run_party, summary, PrecomputeArgs, RunSpec,
};
use venn_app::run_options::cli::{Flags, ForParty, ForPrecompute, ForProtocol, ForTls};
use venn_app::run_options::MAX_SECONDS;

#[derive(Parser)]
#[command(
    name = "venn",
    version,
    about = "Private set intersection: learn which rows two parties share, and nothing else"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Contribute a set; the receiver learns the intersection (you too with --both).
    Send(Flags<ForParty>),
    /// Learn which of your rows the sender also has.
    Receive(Flags<ForParty>),
    /// Run the input-independent offline phase now, with the peer, and save its state for
    /// a later `venn send/receive --state FILE`.
    Precompute(PrecomputeCli),
    /// Intersect two small sample files over loopback and show the result.
    Demo(DemoCli),
    /// Make a private key and a self-signed certificate for TLS, and print the
    /// certificate's fingerprint for the peer's --peer-fingerprint.
    Keygen(KeygenCli),
    /// Serve kbm23's offline phase as its trusted dealer (for `--offline dealer`): each
    /// session's two parties connect here and get their tuples. It never sees an input,
    /// but must not collude with either party.
    Dealer(DealerCli),
    /// Show each protocol's security model and parameters for given set sizes.
    Params(ParamsCli),
    /// Which protocol to run: each one that fits your threat and output, with its
    /// predicted time, traffic and memory for your set sizes, network and cores.
    Plan(PlanCli),
    /// Measure protocols against the insecure naive-hashing baseline.
    Bench(BenchCli),
    /// Thunder: PSI over encrypted data kept by a service (`venn cloud --help`).
    #[command(subcommand)]
    Cloud(cloud::CloudCommand),
    /// Unbalanced PSI: one large dataset, updated over time, queried by many small
    /// clients (`venn ub --help`).
    #[command(subcommand)]
    Ub(ub::UbCommand),
    /// One party of a benchmark run (used by `venn bench`).
    #[command(hide = true)]
    BenchParty(BenchPartyCli),
}

#[derive(Args)]
struct PrecomputeCli {
    #[command(flatten)]
    link: Flags<ForPrecompute>,
    /// The role this party will play online.
    #[arg(long, value_enum)]
    role: RoleArg,
    /// The most items this party will bring to the online run.
    #[arg(long, value_name = "N")]
    max_items: u64,
    /// Where to write the state (a new file, owner-only; used up by one online run).
    #[arg(long, value_name = "FILE")]
    state: PathBuf,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum RoleArg {
    Sender,
    Receiver,
}

impl From<RoleArg> for Role {
    fn from(r: RoleArg) -> Role {
        match r {
            RoleArg::Sender => Role::Sender,
            RoleArg::Receiver => Role::Receiver,
        }
    }
}

#[derive(Args)]
struct DemoCli {
    /// Write the sample files and Bob's matches into DIR (made if missing; no file is
    /// replaced) and keep them, to try `venn send`/`venn receive` on; by default they go
    /// to a temporary directory removed on exit.
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
}

#[derive(Args)]
struct KeygenCli {
    /// Directory to write venn.crt and venn.key into (made if missing; existing files are
    /// never replaced).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Days the certificate is valid.
    #[arg(long, default_value_t = 365, value_parser = clap::value_parser!(u32).range(1..=venn_app::keygen::MAX_DAYS as i64))]
    days: u32,
}

#[derive(Args)]
struct DealerCli {
    /// Where to wait for the parties (e.g. 0.0.0.0:7767).
    #[arg(long, value_name = "ADDR")]
    listen: String,
    /// The largest set size tuples are made for.
    #[arg(long, value_name = "N", default_value_t = 1 << 24)]
    max_items: u64,
    /// Seconds a party may take to send its request, and wait for the other party.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=MAX_SECONDS))]
    timeout: u64,
    /// Stop after dealing this many sessions (default: serve until stopped).
    #[arg(long, value_name = "N")]
    sessions: Option<u64>,
    /// The parties are trusted by --peer-fingerprint (both, comma-separated) or --tls-ca.
    #[command(flatten)]
    tls: Flags<ForTls>,
}

#[derive(Args)]
struct ParamsCli {
    /// Protocols (comma-separated; default: all).
    #[arg(long, value_delimiter = ',')]
    protocol: Vec<String>,
    /// RR17's bins (comma-separated; default: every choice a protocol takes).
    #[arg(long, value_delimiter = ',', value_parser = Bins::parse)]
    bins: Vec<Bins>,
    /// Item bit lengths for protocols on σ-bit integers, `any` for keys of any length
    /// (comma-separated; default: each the protocol takes).
    #[arg(long, value_delimiter = ',', value_parser = params::SigmaRow::parse)]
    sigma: Vec<params::SigmaRow>,
    /// Equal set sizes 2^k for each k (comma-separated).
    #[arg(long, value_delimiter = ',')]
    log2n: Vec<u32>,
    /// Unequal set sizes as SENDER:RECEIVER, each a number or 2^K (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "NS:NR", value_parser = parse_size_pair)]
    sizes: Vec<(u64, u64)>,
}

#[derive(Args)]
#[command(group = clap::ArgGroup::new("mode").args(["n_self", "fit", "check"]).required(true))]
struct PlanCli {
    /// Items on this side (a number, or 2^K).
    #[arg(long, value_name = "N", value_parser = parse_count, requires = "n_peer")]
    n_self: Option<u64>,
    /// Items on the peer's side (a number, or 2^K).
    #[arg(long, value_name = "N", value_parser = parse_count, requires = "n_self")]
    n_peer: Option<u64>,
    /// The role this side plays (the receiver learns the output).
    #[arg(long, value_enum, default_value = "receiver")]
    role: RoleArg,
    /// The network between the parties: lan (10 Gbit/s, 0.2 ms round trip), wan (40
    /// Mbit/s, 80 ms), kkrt16-wan, rr17-wan, or RATE,RTT such as 100mbit,20ms.
    #[arg(long, value_name = "NET", default_value = "lan", value_parser = bench::parse_net_arg)]
    net: String,
    /// The parties to be secure against: semi-honest (they follow the protocol; malicious
    /// protocols are listed too) or malicious (they may deviate in any way).
    #[arg(long, value_enum, default_value = "semi-honest")]
    threat: ThreatArg,
    /// What the receiver learns: the intersection, its size (count), or the sum of the
    /// sender's values over it.
    #[arg(long, value_enum, default_value = "intersection")]
    output: OutputArg,
    /// Cores per party (the prediction is from the most threads measured up to it).
    #[arg(long, default_value_t = RunSpec::default().threads as u64, value_parser = clap::value_parser!(u64).range(1..=1024))]
    cores: u64,
    /// The keys are decimal integers below 2^SIGMA (32 or 64): protocols on σ-bit items
    /// are listed too.
    #[arg(long)]
    sigma: Option<u32>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Instead, fit the cost model to these `venn bench --json` outputs and print it
    /// (what scripts/plan-fit.sh commits).
    #[arg(long, value_name = "BENCH.json", num_args = 1..)]
    fit: Vec<PathBuf>,
    /// With --fit: where and how the rows were measured (machine, commit, date).
    #[arg(long, value_name = "TEXT", requires = "fit", default_value = "")]
    measured: String,
    /// Instead, print each row of these `venn bench --json` outputs beside the prediction.
    #[arg(long, value_name = "BENCH.json", num_args = 1.., conflicts_with = "fit")]
    check: Vec<PathBuf>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ThreatArg {
    SemiHonest,
    Malicious,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum OutputArg {
    Intersection,
    Count,
    Sum,
}

/// A set size: a number, or `2^K`.
fn parse_count(s: &str) -> std::result::Result<u64, String> {
    let bad = || format!("'{s}' is not a set size like 1000000 or 2^20");
    match s.split_once('^') {
        Some(("2", k)) => match k.parse::<u32>() {
            Ok(k) if k < 64 => Ok(1 << k),
            _ => Err(bad()),
        },
        Some(_) => Err(bad()),
        None => s.parse().map_err(|_| bad()),
    }
}

#[derive(Args)]
struct BenchCli {
    /// Protocols (comma-separated); `naive` gives every row its ratio.
    #[arg(long, value_delimiter = ',', default_value = "kkrt16,naive")]
    protocol: Vec<String>,
    /// RR17's bins for the protocols that take them (comma-separated: a row for each).
    #[arg(long, value_delimiter = ',', value_parser = Bins::parse, default_value = "lan")]
    bins: Vec<Bins>,
    /// Item bit lengths for protocols on σ-bit integers, `any` for keys of any length
    /// (comma-separated: a row for each; default: each the protocol takes).
    #[arg(long, value_delimiter = ',', value_parser = params::SigmaRow::parse)]
    sigma: Vec<params::SigmaRow>,
    /// Set sizes 2^k, the same on both sides (comma-separated; default 8,12,16 unless
    /// --sizes is given).
    #[arg(long, value_delimiter = ',')]
    log2n: Vec<u32>,
    /// Set sizes as SENDER:RECEIVER, each a number or 2^K (comma-separated: a row for
    /// each, after the --log2n rows).
    #[arg(long, value_delimiter = ',', value_name = "NS:NR", value_parser = parse_size_pair, conflicts_with_all = ["solo", "files", "thunder"])]
    sizes: Vec<(u64, u64)>,
    /// Threads per party (comma-separated: a row for each count; each at most the cores).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    threads: Vec<usize>,
    /// Runs per row; the row shows the run with the median total time.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Also time each party alone at each thread count: record one run, then replay each
    /// party by itself against it (its messages are checked byte for byte).
    #[arg(long)]
    solo: bool,
    /// Precompute the offline phase into state files, then time the online phase alone,
    /// run from them in a second session.
    #[arg(long, conflicts_with = "solo")]
    precompute: bool,
    /// Also run each protocol over TLS 1.3 (mutually authenticated, as between two
    /// organisations), interleaved with the plaintext runs, and show the cost.
    #[arg(long, conflicts_with = "solo")]
    tls: bool,
    /// Where the offline phase's randomness comes from (comma-separated: a row for each):
    /// ot, bfv, dealer (kbm23's; a `venn dealer` process started for each run), iknp (the
    /// GMW circuits' triples from IKNP rather than silent OT).
    #[arg(long, value_delimiter = ',', value_parser = Offline::parse)]
    offline: Vec<Offline>,
    /// Records of this many bytes on each of the sender's items, which the receiver reads
    /// for its matches and checks (comma-separated: a row for each; `none`: without), for
    /// the protocols that carry them (rr22, rr22-m): `--payload none,36`.
    #[arg(long, value_delimiter = ',', value_name = "BYTES", value_parser = bench::PayloadRow::parse)]
    payload: Vec<bench::PayloadRow>,
    /// Emulate a network: lan, wan (40 Mbit/s, 80 ms round trip), kkrt16-wan, rr17-wan,
    /// or RATE,RTT such as 100mbit,80ms. Each party's sending is shaped.
    #[arg(long, value_name = "NET", value_parser = bench::parse_net_arg, conflicts_with = "solo")]
    net: Option<String>,
    /// Instead, run `venn send` and `venn receive` end to end on generated CSV files (a
    /// 32-hex-digit key and two payload columns, half shared) with the output written:
    /// each party's read time, the protocol's own total, and the wall time of both.
    #[arg(long, conflicts_with_all = ["solo", "precompute", "tls", "net", "payload"])]
    files: bool,
    /// With --files, what the receiver writes (comma-separated: a row for each): none (its
    /// shared rows as they are), inner (with the sender's two columns revealed and
    /// appended), left (every row, with `matched` and the sender's columns).
    #[arg(long, value_delimiter = ',', default_value = "none", value_parser = bench::FilesJoin::parse, requires = "files")]
    join: Vec<bench::FilesJoin>,
    /// With --files, the files' formats (comma-separated: a row for each): csv, or
    /// parquet (the same rows).
    #[arg(long, value_delimiter = ',', default_value = "csv", requires = "files")]
    file_format: Vec<bench::FileFormat>,
    /// Instead, run Thunder through `venn cloud` (a service, two clients uploading the
    /// `--files` CSV files, a run per `--workers` count with worker processes of
    /// `--threads` threads each): upload, run and CPU times, pairings per second per core.
    #[arg(long, conflicts_with_all = ["solo", "precompute", "tls", "net", "files", "payload"])]
    thunder: bool,
    /// Worker processes for --thunder (comma-separated: a run for each count).
    #[arg(long, value_delimiter = ',', default_value = "2", requires = "thunder")]
    workers: Vec<usize>,
    /// Parties of each --thunder run: 2, or 3 (the service's join is then quadratic).
    #[arg(long, default_value_t = 2, requires = "thunder")]
    parties: usize,
    /// --thunder runs from pre-tokens (docs/cloud.md, Pre-tokens): each run's offline phase
    /// (the service precomputing both datasets' values) timed apart from its online one.
    #[arg(long, requires = "thunder")]
    preprocessed: bool,
    /// With `--protocol ub-cache` or `ub-fhe` (unbalanced PSI, alone): the clients' query sizes, a row
    /// for each (comma-separated); the server's sizes are --log2n.
    #[arg(long, value_delimiter = ',', default_value = "1,256,4096")]
    client_items: Vec<usize>,
    /// With `--protocol ub-fhe`: each server key carries a label of this many bytes (1 to
    /// 64), and every match's label is checked.
    #[arg(long)]
    label_bytes: Option<u8>,
    /// With `--protocol ub-fhe`: the MiB of plaintexts the server's databases keep
    /// between queries (0: none; the first query fills them).
    #[arg(long, value_name = "MIB", default_value_t = venn::unbalanced::fhe::plaintexts::DEFAULT_BUDGET_MIB)]
    plaintext_cache_mib: u64,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Seconds each party waits for the other.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..=MAX_SECONDS))]
    timeout: u64,
}

#[derive(Args)]
struct BenchPartyCli {
    #[arg(long)]
    role: String,
    #[arg(long)]
    protocol: String,
    #[command(flatten)]
    options: Flags<ForProtocol>,
    /// The width of the sender's records, if the run carries them.
    #[arg(long)]
    payload: Option<u32>,
    #[arg(long, value_parser = parse_size_pair)]
    sizes: (u64, u64),
    #[arg(long)]
    seed: String,
    #[arg(long, default_value_t = 1)]
    threads: usize,
    #[arg(long)]
    listen: Option<String>,
    #[arg(long)]
    connect: Option<String>,
    /// Write the frames received to this transcript file.
    #[arg(long)]
    record: Option<PathBuf>,
    /// Run alone against this transcript of received frames...
    #[arg(long, requires = "expect")]
    replay: Option<PathBuf>,
    /// ...checking what is sent against this one (the peer's).
    #[arg(long)]
    expect: Option<PathBuf>,
    /// Precompute into a state file in this directory, then run online from it.
    #[arg(long)]
    precompute: Option<PathBuf>,
    /// Run over TLS with the identities `venn bench --tls` made in this directory.
    #[arg(long)]
    tls_dir: Option<PathBuf>,
    /// Shape what this party sends (see `venn bench --net`).
    #[arg(long, value_parser = bench::parse_net)]
    net: Option<venn::net::Shaping>,
    /// The dealer the benchmark started, for --offline dealer.
    #[arg(long)]
    dealer: Option<String>,
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..=MAX_SECONDS))]
    timeout: u64,
}

impl BenchCli {
    /// `--log2n`, or its default when neither it nor `--sizes` is given.
    fn log2ns(&self) -> &[u32] {
        match (&self.log2n[..], &self.sizes[..]) {
            ([], []) => &[8, 12, 16],
            (log2n, _) => log2n,
        }
    }
}

impl BenchPartyCli {
    fn link(&mut self) -> Result<bench::BenchLink> {
        let record = self.record.take();
        Ok(match (self.replay.take(), self.expect.take()) {
            (Some(inbound), Some(outbound)) => bench::BenchLink::Replay { inbound, outbound },
            _ => match (self.listen.take(), self.connect.take()) {
                (Some(addr), _) => bench::BenchLink::Tcp {
                    listen: true,
                    addr,
                    record,
                },
                (None, Some(addr)) => bench::BenchLink::Tcp {
                    listen: false,
                    addr,
                    record,
                },
                (None, None) => {
                    return Err(Error::Usage(
                        "bench-party needs --listen, --connect or --replay".into(),
                    ))
                }
            },
        })
    }
}

fn party(flags: Flags<ForParty>, role: Role) -> Result<()> {
    let args = flags.settings.party_args()?;
    let outcome = run_party(&args, role, &mut args.file_output(), None, |addr| {
        eprintln!("venn: listening on {addr}");
    })?;
    eprintln!("{}", summary(&outcome));
    Ok(())
}

fn precompute(cli: PrecomputeCli) -> Result<()> {
    let role = cli.role.into();
    let args = PrecomputeArgs {
        link: cli.link.settings.link()?,
        max_items: cli.max_items,
        state: cli.state,
    };
    let report = precompute_party(&args, role, |addr| {
        eprintln!("venn: listening on {addr}");
    })?;
    eprintln!("{}", precompute_summary(&report, &args.state));
    Ok(())
}

fn serve_dealer(d: DealerCli) -> Result<()> {
    let args = dealer::DealerArgs {
        listen: d.listen,
        transport: d.tls.settings.tls.load()?,
        timeout: Duration::from_secs(d.timeout),
        max_items: d.max_items,
        sessions: d.sessions,
    };
    dealer::serve(args, |addr| {
        // Machine-readable first (a benchmark reads it), then for people.
        out!("listening {addr}");
        eprintln!("venn dealer: listening on {addr}");
    })
}

/// `--sizes`' SENDER:RECEIVER, each a number or 2^K ([`parse_count`]).
fn parse_size_pair(s: &str) -> std::result::Result<(u64, u64), String> {
    let (a, b) = (s.split_once(':'))
        .ok_or_else(|| format!("'{s}' is not SENDER:RECEIVER like 10000:2^20"))?;
    Ok((parse_count(a)?, parse_count(b)?))
}

fn parse_sizes(p: &ParamsCli) -> Result<Vec<(u64, u64)>> {
    let mut sizes: Vec<(u64, u64)> = p.log2n.iter().map(|&k| (1u64 << k, 1u64 << k)).collect();
    sizes.extend(&p.sizes);
    if sizes.is_empty() {
        sizes = [8, 12, 16, 20, 24]
            .iter()
            .map(|&k| (1u64 << k, 1u64 << k))
            .collect();
    }
    Ok(sizes)
}

/// Ends a command that only prints quietly when what reads its output stops early (`venn
/// params | head`), as other tools do, rather than in a panic at its next write. Rust
/// ignores SIGPIPE so that a peer's closed socket is an error rather than a death: the
/// commands that talk to peers keep that.
fn quiet_on_closed_stdout() {
    #[cfg(unix)]
    // SAFETY: sets one signal's action back to the default; no handler runs our code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(cli.command, Command::Params(_) | Command::Plan(_)) {
        quiet_on_closed_stdout();
    }
    // The commands that make temporary directories (a split input's buckets, a
    // benchmark's files, the demo's) remove them when stopped.
    if matches!(
        cli.command,
        Command::Send(_) | Command::Receive(_) | Command::Bench(_) | Command::Demo(_)
    ) {
        if let Err(e) = signals::remove_temp_dirs_on_signals() {
            eprintln!("venn: error: cannot watch for signals: {e}");
            return ExitCode::FAILURE;
        }
    }
    // Before any kernel runs: a VENN_CPU that names no level stops every command here.
    match (venn::util::cpu::init().map_err(Failure::from)).and_then(|_| run(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Venn(e)) if venn_app::destination::closed_stdout(&e) => stdout::closed(),
        Err(e) => {
            eprintln!("venn: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs a command: a benchmark's failures are its own ([`Failure::Bench`]), every other
/// command's the library's.
fn run(command: Command) -> failure::Result<()> {
    let done = match command {
        Command::Bench(b) => return bench(b),
        Command::Send(p) => party(p, Role::Sender),
        Command::Receive(p) => party(p, Role::Receiver),
        Command::Precompute(p) => precompute(p),
        Command::Demo(d) => demo::demo(d.keep.as_deref()),
        Command::Cloud(c) => cloud::cloud(c),
        Command::Ub(u) => ub::ub(u),
        Command::Keygen(k) => keygen::keygen(&k.out, k.days),
        Command::Dealer(d) => serve_dealer(d),
        Command::Params(p) => {
            parse_sizes(&p).and_then(|s| params::print_params(&p.protocol, &p.bins, &p.sigma, &s))
        }
        Command::Plan(p) if !p.fit.is_empty() => plan::fit(&p.fit, p.measured),
        Command::Plan(p) if !p.check.is_empty() => plan::check(&p.check),
        Command::Plan(p) => plan::plan(&plan::PlanOptions {
            n_self: p.n_self.expect("clap requires it"),
            n_peer: p.n_peer.expect("clap requires it"),
            role: p.role.into(),
            net: &p.net,
            threat: match p.threat {
                ThreatArg::SemiHonest => venn::protocols::Security::SemiHonest,
                ThreatArg::Malicious => venn::protocols::Security::Malicious,
            },
            output: match p.output {
                OutputArg::Intersection => venn::protocols::OutputKind::Indices,
                OutputArg::Count => venn::protocols::OutputKind::Count,
                OutputArg::Sum => venn::protocols::OutputKind::Sum,
            },
            cores: p.cores as usize,
            sigma: p.sigma,
            json: p.json,
        }),
        Command::BenchParty(mut b) => {
            let role = if b.role == "sender" {
                Role::Sender
            } else {
                Role::Receiver
            };
            u128::from_str_radix(&b.seed, 16)
                .map_err(|_| Error::Usage("--seed wants 32 hex digits".into()))
                .and_then(|seed| {
                    bench::BenchParty {
                        role,
                        link: b.link()?,
                        protocol: b.protocol,
                        options: venn::protocols::Options {
                            payload: b.payload,
                            ..b.options.settings.spec.options
                        },
                        sizes: venn::session::Sizes {
                            sender: b.sizes.0,
                            receiver: b.sizes.1,
                        },
                        seed: venn::crypto::Block::from_u128(seed),
                        threads: b.threads,
                        precompute: b.precompute,
                        timeout: Duration::from_secs(b.timeout),
                        transport: match &b.tls_dir {
                            Some(dir) => venn_app::transport::Transport::bench_tls(dir, role)?,
                            None => venn_app::transport::Transport::loopback(),
                        }
                        .shaped(b.net),
                        dealer: b.dealer.clone(),
                    }
                    .run()
                })
        }
    };
    Ok(done?)
}

/// `venn bench`: the protocols' benchmark, or Thunder's with `--thunder`.
fn bench(b: BenchCli) -> failure::Result<()> {
    if let Some(ub) = (b.protocol.iter()).find(|p| *p == "ub-cache" || *p == "ub-fhe") {
        let options = match (&b.protocol[..], &b.threads[..]) {
            ([_], &[threads]) => bench::UbOptions {
                log2ns: b.log2ns(),
                client_items: &b.client_items,
                threads,
                repeat: b.repeat,
                json: b.json,
                label_bytes: b.label_bytes,
                plaintext_bytes: b.plaintext_cache_mib.saturating_mul(1 << 20),
            },
            _ => {
                return Err(Error::Usage(format!(
                    "--protocol {ub} runs alone, with one --threads count (the client's)"
                ))
                .into())
            }
        };
        return match ub.as_str() {
            "ub-fhe" => bench::bench_ub_fhe(&options),
            _ => bench::bench_ub(&options),
        };
    }
    if !b.thunder {
        return bench::bench(&bench::BenchOptions {
            protocols: &b.protocol,
            bins: &b.bins,
            sigmas: &b.sigma,
            log2ns: b.log2ns(),
            sizes: &b.sizes,
            threads: &b.threads,
            repeat: b.repeat,
            solo: b.solo,
            precompute: b.precompute,
            tls: b.tls,
            net: b.net.as_deref(),
            offlines: &b.offline,
            payloads: &b.payload,
            files: b.files,
            joins: &b.join,
            file_formats: &b.file_format,
            json: b.json,
            timeout: b.timeout,
        });
    }
    match b.threads[..] {
        [threads] => bench::bench_thunder(&bench::ThunderOptions {
            log2ns: b.log2ns(),
            parties: b.parties,
            preprocessed: b.preprocessed,
            workers: &b.workers,
            threads,
            timeout: b.timeout,
            json: b.json,
        }),
        _ => Err(Error::Usage("--thunder takes one --threads count (per worker)".into()).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use venn::session::run_plan::KeyMismatch;

    /// What `venn send` and `venn precompute` run with when given no option is
    /// [`RunSpec::default`], the one place the defaults are (the Python package's test
    /// compares its own with this binary's `--help`).
    #[test]
    fn the_command_lines_defaults_are_the_run_specs() {
        let parse = |line: &str| match Cli::try_parse_from(line.split_whitespace())
            .unwrap()
            .command
        {
            Command::Send(p) => p.settings.party_args().unwrap().link.spec,
            Command::Precompute(p) => p.link.settings.link().unwrap().spec,
            _ => unreachable!(),
        };
        let send = parse("venn send --input x.csv --connect 127.0.0.1:1");
        assert_eq!(send, RunSpec::default());
        let precompute =
            parse("venn precompute --listen 127.0.0.1:0 --role sender --max-items 10 --state s");
        assert_eq!(precompute, RunSpec::default());
        let given = parse(
            "venn send --input x.csv --connect 127.0.0.1:1 --protocol kkrt16 --threads 2 \
             --timeout 5 --max-memory 1G --max-peer-items 7 --allow-key-mismatch",
        );
        let expected = RunSpec {
            protocol: "kkrt16".into(),
            threads: 2,
            timeout: Duration::from_secs(5),
            max_memory: 1 << 30,
            max_peer_items: 7,
            key_mismatch: KeyMismatch::Warn,
            ..RunSpec::default()
        };
        assert_eq!(given, expected);
    }
}
