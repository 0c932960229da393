//! `venn`: private set intersection on CSV files between two machines.

// First: its `out!` is for every module after it.
#[macro_use]
mod stdout;

mod bench;
mod cloud;
mod dealer;
mod demo;
mod keygen;
mod params;
mod plan;
mod signals;

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use venn::protocols::{Bins, Offline, Options, Stash};
use venn::session::run_plan::KeyMismatch;
use venn::session::Role;
use venn::{Error, Result};
use venn_app::input::{parse_delimiter, Format, KeyOptions};
use venn_app::party::{
    precompute_party, precompute_summary, run_party, summary, DealerAddr, Endpoint, Link,
    PartyArgs, PrecomputeArgs, RunSpec,
};
use venn_app::transport::TlsArgs;

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
    Send(PartyCli),
    /// Learn which of your rows the sender also has.
    Receive(PartyCli),
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
    /// One party of a benchmark run (used by `venn bench`).
    #[command(hide = true)]
    BenchParty(BenchPartyCli),
}

/// The options of a protocol that has them (both parties must pass the same).
#[derive(Args)]
struct OptionsCli {
    /// RR17's bins: lan (m = n/4, less computation) or wan (m = n/10, less traffic).
    #[arg(long, value_name = "lan|wan", value_parser = Bins::parse)]
    bins: Option<Bins>,
    /// Bit length of the items of a standard-model protocol (rr17-de-sm: 32 or 64); the
    /// keys must then be integers below 2^SIGMA, in decimal.
    #[arg(long)]
    sigma: Option<u32>,
    /// Where the offline phase gets its correlated randomness: ot (OT between the two
    /// parties, the default: for a GMW circuit's triples silent OT), for kbm23 also bfv
    /// (homomorphic encryption between them; --sigma 32) or dealer (a `venn dealer`
    /// trusted not to collude with either party; see --dealer), and for the GMW circuits
    /// (rr22-ca/-sum, psww18-ca/-sum, hek12-ca) iknp (their triples from IKNP OT
    /// extension, as ABY: 256 bits of traffic a triple; to compare).
    #[arg(long, value_name = "ot|dealer|bfv|iknp", value_parser = Offline::parse)]
    offline: Option<Offline>,
    /// psww18-ca's stash for the items that fit in neither of the cuckoo side's tables:
    /// combined (one for both, the default) or separate (one per table).
    #[arg(long, value_name = "combined|separate", value_parser = Stash::parse)]
    stash: Option<Stash>,
    /// For a cardinality protocol (rr22-ca, psww18-ca, hek12-ca): learn only whether the
    /// intersection has at least T items, not its size.
    #[arg(long, value_name = "T")]
    threshold: Option<u64>,
}

impl OptionsCli {
    fn options(&self) -> Options {
        Options {
            bins: self.bins.unwrap_or_default(),
            sigma: self.sigma,
            offline: self.offline.unwrap_or_default(),
            stash: self.stash.unwrap_or_default(),
            threshold: self.threshold,
        }
    }
}

/// How a party reaches its peer and what it accepts from it.
#[derive(Args)]
#[command(group = clap::ArgGroup::new("endpoint").required(true).args(["listen", "connect"]))]
struct LinkCli {
    /// Protocol to run (see `venn params` and `venn plan`).
    #[arg(long, default_value_t = RunSpec::default().protocol)]
    protocol: String,
    #[command(flatten)]
    options: OptionsCli,
    /// Wait for the peer on ADDR (e.g. 0.0.0.0:7766).
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// Connect to the peer at ADDR, retrying until --timeout.
    #[arg(long, value_name = "ADDR")]
    connect: Option<String>,
    /// Worker threads for this party (at least 1; more than the cores it may use are cut
    /// to that, with a warning).
    #[arg(long, default_value_t = RunSpec::default().threads)]
    threads: usize,
    /// Seconds to wait for the peer: to connect, and for each whole message in either
    /// direction (a deadline per message, however the peer trickles its bytes or takes
    /// ours).
    #[arg(long, default_value_t = RunSpec::default().timeout.as_secs(), value_parser = clap::value_parser!(u64).range(1..=MAX_TIMEOUT))]
    timeout: u64,
    /// rr22-m's sender: seconds the receiver has for its whole OKVS, from the salt that
    /// starts it (default: 30 + m·16 bytes at 10 MB/s, 32 s at 2^20 items). It bounds how
    /// many items beyond its own a cheating receiver can get answers for: see `venn params
    /// --protocol rr22-m`.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=MAX_TIMEOUT))]
    upload_deadline: Option<u64>,
    /// Write timings and traffic as JSON to FILE (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    stats_json: Option<PathBuf>,
    /// Allow an insecure protocol (the naive baseline).
    #[arg(long)]
    insecure: bool,
    /// The largest set size accepted from the peer.
    #[arg(long, default_value_t = RunSpec::default().max_peer_items)]
    max_peer_items: u64,
    /// The most memory this party may need (e.g. 8G, 512M; default: half of physical
    /// memory). A peer whose set would need more is refused before anything is allocated.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    max_memory: Option<u64>,
    #[command(flatten)]
    tls: TlsArgs,
    /// The dealer's address, for --offline dealer (where `venn dealer --listen` runs).
    #[arg(long, value_name = "ADDR")]
    dealer: Option<String>,
    /// With TLS, trust only the dealer certificate with this SHA-256 fingerprint (without
    /// it, the dealer's certificate must chain to --tls-ca).
    #[arg(
        long,
        value_name = "SHA256",
        requires = "tls_cert",
        requires = "dealer"
    )]
    dealer_fingerprint: Option<String>,
}

/// An input file and how its keys are taken.
#[derive(Args)]
struct KeysCli {
    /// Input file.
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// Input format: csv (with a header row) or lines.
    #[arg(long, value_enum, default_value = "csv")]
    format: Format,
    /// CSV column holding the key (default: the first column); several, comma-separated
    /// (`--column email,dob`), make one key of their values together.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    column: Vec<String>,
    /// What separates a CSV file's fields: `,`, `;` (as spreadsheets save CSV where the
    /// comma is the decimal mark), `tab` (or `\t`) or `|`. Rows are output as they are, so
    /// with the input's.
    #[arg(long, value_name = "CHAR", default_value = ",", value_parser = parse_delimiter)]
    delimiter: u8,
    /// Strip leading and trailing white space from keys.
    #[arg(long)]
    trim: bool,
    /// Lower-case keys before comparing.
    #[arg(long)]
    lowercase: bool,
    /// Skip rows with an empty key instead of failing.
    #[arg(long)]
    skip_empty: bool,
    /// Run, with a warning, when the peer takes its keys otherwise (--trim, --lowercase,
    /// the number of --column); by default such a run is refused.
    #[arg(long)]
    allow_key_mismatch: bool,
}

impl KeysCli {
    fn options(&self, value_columns: Vec<String>) -> KeyOptions {
        KeyOptions {
            format: self.format,
            columns: self.column.clone(),
            trim: self.trim,
            lowercase: self.lowercase,
            skip_empty: self.skip_empty,
            value_columns,
            delimiter: self.delimiter,
        }
    }
}

#[derive(Args)]
struct PartyCli {
    #[command(flatten)]
    link: LinkCli,
    #[command(flatten)]
    keys: KeysCli,
    /// Where to write the intersecting rows (required to receive; with --both, to send), or
    /// the JSON result of a protocol that outputs a count or a sum; `-` for standard output.
    /// A regular file is replaced whole, owner-only; a device or a pipe is written into.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// CSV column holding each row's value (integers from 0 to 2^32 − 1), for the sender
    /// of a protocol that sums them over the intersection (rr22-sum, psww18-sum); a repeated
    /// key's rows' values are added. rr22-sum sums several columns in one run, each apart
    /// (`--value-column revenue,units`, up to 16): the receiver learns one sum a column.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    value_column: Vec<String>,
    /// Both parties learn the intersection (both must pass it).
    #[arg(long)]
    both: bool,
    /// Run only the online phase, with the state `venn precompute` wrote (both parties pass
    /// theirs); the state is used up.
    #[arg(long, value_name = "FILE")]
    state: Option<PathBuf>,
    /// Split the input into hash buckets of about N rows on disk and run them one by one,
    /// in bounded memory (done by itself for a file over an eighth of --max-memory).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), conflicts_with = "state")]
    bucket_rows: Option<u64>,
    /// Where bucket files go (a directory made for the run inside it, removed after, also
    /// on Ctrl-C): 16 bytes a row plus its key are needed, about the input's size or more.
    /// Default: the system's temporary directory ($TMPDIR), which may be in memory.
    #[arg(long, value_name = "DIR", conflicts_with = "state")]
    bucket_dir: Option<PathBuf>,
}

#[derive(Args)]
struct PrecomputeCli {
    #[command(flatten)]
    link: LinkCli,
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

/// The longest `--timeout` (a year): deadlines are computed as now + timeout.
const MAX_TIMEOUT: u64 = 365 * 24 * 3600;

/// `8G`, `512M`, `64K` or a number of bytes.
fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, ""),
    };
    let shift = match unit
        .to_ascii_uppercase()
        .trim_end_matches("IB")
        .trim_end_matches('B')
    {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(format!("'{s}' is not a size like 8G, 512M or 1048576")),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| format!("'{s}' is not a size like 8G, 512M or 1048576"))
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
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=MAX_TIMEOUT))]
    timeout: u64,
    /// Stop after dealing this many sessions (default: serve until stopped).
    #[arg(long, value_name = "N")]
    sessions: Option<u64>,
    /// The parties are trusted by --peer-fingerprint (both, comma-separated) or --tls-ca.
    #[command(flatten)]
    tls: TlsArgs,
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
    /// Emulate a network: lan, wan (40 Mbit/s, 80 ms round trip), kkrt16-wan, rr17-wan,
    /// or RATE,RTT such as 100mbit,80ms. Each party's sending is shaped.
    #[arg(long, value_name = "NET", value_parser = bench::parse_net_arg, conflicts_with = "solo")]
    net: Option<String>,
    /// Instead, run `venn send` and `venn receive` end to end on generated CSV files (a
    /// 32-hex-digit key and two payload columns, half shared) with the output written:
    /// each party's read time, the protocol's own total, and the wall time of both.
    #[arg(long, conflicts_with_all = ["solo", "precompute", "tls", "net"])]
    files: bool,
    /// Instead, run Thunder through `venn cloud` (a service, two clients uploading the
    /// `--files` CSV files, a run per `--workers` count with worker processes of
    /// `--threads` threads each): upload, run and CPU times, pairings per second per core.
    #[arg(long, conflicts_with_all = ["solo", "precompute", "tls", "net", "files"])]
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
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Seconds each party waits for the other.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..=MAX_TIMEOUT))]
    timeout: u64,
}

#[derive(Args)]
struct BenchPartyCli {
    #[arg(long)]
    role: String,
    #[arg(long)]
    protocol: String,
    #[command(flatten)]
    options: OptionsCli,
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
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..=MAX_TIMEOUT))]
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
    fn link(&mut self) -> Result<bench::Link> {
        let record = self.record.take();
        Ok(match (self.replay.take(), self.expect.take()) {
            (Some(inbound), Some(outbound)) => bench::Link::Replay { inbound, outbound },
            _ => match (self.listen.take(), self.connect.take()) {
                (Some(addr), _) => bench::Link::Tcp {
                    listen: true,
                    addr,
                    record,
                },
                (None, Some(addr)) => bench::Link::Tcp {
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

impl LinkCli {
    fn into_link(self) -> Result<Link> {
        let endpoint = match (self.listen, self.connect) {
            (Some(a), _) => Endpoint::Listen(a),
            (None, Some(a)) => Endpoint::Connect(a),
            (None, None) => unreachable!("clap requires one of --listen/--connect"),
        };
        let protocol_options = self.options.options();
        let dealer = DealerAddr::new(
            protocol_options.offline,
            self.dealer,
            self.dealer_fingerprint,
            &self.tls,
        )?;
        let defaults = RunSpec::default();
        Ok(Link {
            transport: self.tls.load()?,
            spec: RunSpec {
                protocol: self.protocol,
                options: protocol_options,
                threads: self.threads,
                timeout: Duration::from_secs(self.timeout),
                insecure: self.insecure,
                max_peer_items: self.max_peer_items,
                max_memory: self.max_memory.unwrap_or(defaults.max_memory),
                upload_deadline: self.upload_deadline.map(Duration::from_secs),
                ..defaults
            },
            dealer,
            endpoint,
            stats_json: self.stats_json,
        })
    }
}

impl PartyCli {
    fn into_args(self) -> Result<PartyArgs> {
        let mut link = self.link.into_link()?;
        link.spec.key_mismatch = KeyMismatch::allowed(self.keys.allow_key_mismatch);
        Ok(PartyArgs {
            link,
            keys: self.keys.options(self.value_column),
            input: self.keys.input,
            output: self.output,
            both: self.both,
            state: self.state,
            bucket_rows: self.bucket_rows,
            bucket_dir: self.bucket_dir,
        })
    }
}

fn party(cli: PartyCli, role: Role) -> Result<()> {
    let args = cli.into_args()?;
    let outcome = run_party(&args, role, &mut args.file_output(), None, |addr| {
        eprintln!("venn: listening on {addr}");
    })?;
    eprintln!("{}", summary(&outcome));
    Ok(())
}

fn precompute(cli: PrecomputeCli) -> Result<()> {
    let role = cli.role.into();
    let args = PrecomputeArgs {
        link: cli.link.into_link()?,
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
        transport: d.tls.load()?,
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
    match venn::util::cpu::init().and_then(|_| run(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if venn_app::destination::closed_stdout(&e) => stdout::closed(),
        Err(e) => {
            eprintln!("venn: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Send(p) => party(p, Role::Sender),
        Command::Receive(p) => party(p, Role::Receiver),
        Command::Precompute(p) => precompute(p),
        Command::Demo(d) => demo::demo(d.keep.as_deref()),
        Command::Cloud(c) => cloud::cloud(c),
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
        Command::Bench(b) if b.thunder => match b.threads[..] {
            [threads] => bench::bench_thunder(&bench::ThunderOptions {
                log2ns: b.log2ns(),
                parties: b.parties,
                preprocessed: b.preprocessed,
                workers: &b.workers,
                threads,
                timeout: b.timeout,
                json: b.json,
            }),
            _ => Err(Error::Usage(
                "--thunder takes one --threads count (per worker)".into(),
            )),
        },
        Command::Bench(b) => bench::bench(&bench::BenchOptions {
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
            files: b.files,
            json: b.json,
            timeout: b.timeout,
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
                        options: b.options.options(),
                        sizes: venn::session::Sizes {
                            sender: b.sizes.0,
                            receiver: b.sizes.1,
                        },
                        seed,
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `venn send` and `venn precompute` run with when given no option is
    /// [`RunSpec::default`], the one place the defaults are (the Python package's test
    /// compares its own with this binary's `--help`).
    #[test]
    fn the_command_lines_defaults_are_the_run_specs() {
        let parse = |line: &str| match Cli::try_parse_from(line.split_whitespace())
            .unwrap()
            .command
        {
            Command::Send(p) => p.into_args().unwrap().link.spec,
            Command::Precompute(p) => p.link.into_link().unwrap().spec,
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
