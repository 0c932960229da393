//! `venn`: private set intersection on CSV files between two machines.

mod bench;
mod demo;
mod input;
mod output;
mod params;
mod party;
mod progress;

use clap::{Args, Parser, Subcommand};
use input::{Format, KeyOptions};
use party::{run_party, summary, Endpoint, PartyArgs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use venn::session::Role;
use venn::{Error, Result};

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
    /// Intersect two small sample files over loopback and show the result.
    Demo,
    /// Show each protocol's security model and parameters for given set sizes.
    Params(ParamsCli),
    /// Measure protocols against the insecure naive-hashing baseline.
    Bench(BenchCli),
    /// One party of a benchmark run (used by `venn bench`).
    #[command(hide = true)]
    BenchParty(BenchPartyCli),
}

#[derive(Args)]
#[command(group = clap::ArgGroup::new("endpoint").required(true).args(["listen", "connect"]))]
struct PartyCli {
    /// Protocol to run (see `venn params`).
    #[arg(long, default_value = "kkrt16")]
    protocol: String,
    /// Wait for the peer on ADDR (e.g. 0.0.0.0:7766).
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// Connect to the peer at ADDR, retrying until --timeout.
    #[arg(long, value_name = "ADDR")]
    connect: Option<String>,
    /// Input file.
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
    /// Where to write the intersecting rows (required to receive; with --both, to send).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Input format: csv (with a header row) or lines.
    #[arg(long, value_enum, default_value = "csv")]
    format: Format,
    /// CSV column holding the key (default: the first column).
    #[arg(long, value_name = "NAME")]
    column: Option<String>,
    /// Strip leading and trailing white space from keys.
    #[arg(long)]
    trim: bool,
    /// Lower-case keys before comparing.
    #[arg(long)]
    lowercase: bool,
    /// Skip rows with an empty key instead of failing.
    #[arg(long)]
    skip_empty: bool,
    /// Worker threads for this party.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Seconds to wait for the peer (connecting and each message).
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// Write timings and traffic as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    stats_json: Option<PathBuf>,
    /// Allow an insecure protocol (the naive baseline).
    #[arg(long)]
    insecure: bool,
    /// Both parties learn the intersection (both must pass it).
    #[arg(long)]
    both: bool,
    /// The largest set size accepted from the peer (bounds our memory).
    #[arg(long, default_value_t = 1 << 24)]
    max_peer_items: u64,
}

#[derive(Args)]
struct ParamsCli {
    /// Protocols (comma-separated; default: all).
    #[arg(long, value_delimiter = ',')]
    protocol: Vec<String>,
    /// Equal set sizes 2^k for each k (comma-separated).
    #[arg(long, value_delimiter = ',')]
    log2n: Vec<u32>,
    /// Unequal set sizes as SENDER:RECEIVER (comma-separated).
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<String>,
}

#[derive(Args)]
struct BenchCli {
    /// Protocols (comma-separated); `naive` gives every row its ratio.
    #[arg(long, value_delimiter = ',', default_value = "kkrt16,naive")]
    protocol: Vec<String>,
    /// Set sizes 2^k (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "8,12,16")]
    log2n: Vec<u32>,
    /// Threads per party (comma-separated: a row for each count).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    threads: Vec<usize>,
    /// Runs per row; the row shows the run with the median total time.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Also time each party alone at each thread count: record one run, then replay each
    /// party by itself against it (its messages are checked byte for byte).
    #[arg(long)]
    solo: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Seconds each party waits for the other.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
}

#[derive(Args)]
struct BenchPartyCli {
    #[arg(long)]
    role: String,
    #[arg(long)]
    protocol: String,
    #[arg(long)]
    log2n: u32,
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
    #[arg(long, default_value_t = 600)]
    timeout: u64,
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

impl PartyCli {
    fn into_args(self) -> PartyArgs {
        let endpoint = match (self.listen, self.connect) {
            (Some(a), _) => Endpoint::Listen(a),
            (None, Some(a)) => Endpoint::Connect(a),
            (None, None) => unreachable!("clap requires one of --listen/--connect"),
        };
        PartyArgs {
            protocol: self.protocol,
            endpoint,
            input: self.input,
            output: self.output,
            keys: KeyOptions {
                format: self.format,
                column: self.column,
                trim: self.trim,
                lowercase: self.lowercase,
                skip_empty: self.skip_empty,
            },
            threads: self.threads,
            timeout: Duration::from_secs(self.timeout),
            stats_json: self.stats_json,
            insecure: self.insecure,
            both: self.both,
            max_peer_items: self.max_peer_items,
        }
    }
}

fn party(cli: PartyCli, role: Role) -> Result<()> {
    let outcome = run_party(&cli.into_args(), role, |addr| {
        eprintln!("venn: listening on {addr}");
    })?;
    eprintln!("{}", summary(&outcome));
    Ok(())
}

fn parse_sizes(p: &ParamsCli) -> Result<Vec<(u64, u64)>> {
    let mut sizes: Vec<(u64, u64)> = p.log2n.iter().map(|&k| (1u64 << k, 1u64 << k)).collect();
    for s in &p.sizes {
        let bad = || Error::Usage(format!("--sizes wants SENDER:RECEIVER, got '{s}'"));
        let (a, b) = s.split_once(':').ok_or_else(bad)?;
        sizes.push((a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?));
    }
    if sizes.is_empty() {
        sizes = [8, 12, 16, 20, 24]
            .iter()
            .map(|&k| (1u64 << k, 1u64 << k))
            .collect();
    }
    Ok(sizes)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Send(p) => party(p, Role::Sender),
        Command::Receive(p) => party(p, Role::Receiver),
        Command::Demo => demo::demo(),
        Command::Params(p) => parse_sizes(&p).and_then(|s| params::print_params(&p.protocol, &s)),
        Command::Bench(b) => bench::bench(&bench::BenchOptions {
            protocols: &b.protocol,
            log2ns: &b.log2n,
            threads: &b.threads,
            repeat: b.repeat,
            solo: b.solo,
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
                    let link = b.link()?;
                    bench::bench_party(
                        role,
                        &b.protocol,
                        b.log2n,
                        seed,
                        b.threads,
                        link,
                        Duration::from_secs(b.timeout),
                    )
                })
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("venn: error: {e}");
            ExitCode::FAILURE
        }
    }
}
