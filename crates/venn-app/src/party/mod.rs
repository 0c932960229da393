//! `venn send`, `venn receive` and `venn precompute`: one party of a PSI run over TCP, on a
//! file or (precompute) on nothing but the most items it will bring.

mod link;
mod reading;
mod stages;
mod summary;

pub(crate) use stages::{check_key_columns, peer_layout};
pub use summary::{precompute_summary, summary};

use crate::destination::check_output_path;
use crate::input::source::{InputSource, Matching};
use crate::input::KeyOptions;
use crate::join::{JoinKind, JoinedRows, Shape};
use crate::output::{Stats, Written};
use crate::progress::Spinner;
use crate::sink::{Delivered, FileOutput, OutputSink};
use crate::threads;
use crate::transport::{TlsArgs, Transport};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use venn::protocols::{DealerLink, Offline, Options, Output, OutputKind, Progress, Protocol};
use venn::session::run_plan::{Align, KeyMismatch};
use venn::session::Role;
use venn::{Error, Report, Result, RunOptions};

/// Where the peer is.
#[derive(Clone, Debug)]
pub enum PeerAddr {
    /// Wait for the peer on this address.
    Listen(String),
    /// Connect to the peer at this address (retrying until the timeout).
    Connect(String),
}

/// Where the dealer is and how its link is secured (`--dealer`).
#[derive(Clone, Debug)]
pub struct DealerAddr {
    /// `--dealer`: the dealer's address.
    pub addr: String,
    /// How the link to the dealer is secured (`--dealer-fingerprint` or `--tls-ca`).
    pub transport: Transport,
}

impl DealerAddr {
    /// The dealer for `offline` (only `--offline dealer` has one, and needs it) at `addr`,
    /// its certificate pinned by `fingerprint` or chained to the party's `tls_ca`.
    pub fn new(
        offline: Offline,
        addr: Option<String>,
        fingerprint: Option<String>,
        tls: &TlsArgs,
    ) -> Result<Option<DealerAddr>> {
        match (offline, addr) {
            (Offline::Dealer, Some(addr)) => {
                let tls = match fingerprint {
                    Some(fp) => TlsArgs {
                        peer_fingerprint: vec![fp],
                        tls_ca: None,
                        ..tls.clone()
                    },
                    None => TlsArgs {
                        peer_fingerprint: Vec::new(),
                        ..tls.clone()
                    },
                };
                let transport = tls.load().map_err(|e| {
                    Error::Usage(format!(
                        "the link to the dealer: {e} (pass --dealer-fingerprint or --tls-ca)"
                    ))
                })?;
                Ok(Some(DealerAddr { addr, transport }))
            }
            (Offline::Dealer, None) => Err(Error::Usage(
                "--offline dealer needs the dealer's address: --dealer ADDR".into(),
            )),
            (Offline::Ot | Offline::Bfv | Offline::Iknp, Some(_)) => {
                Err(Error::Usage("--dealer is for --offline dealer".into()))
            }
            (Offline::Ot | Offline::Bfv | Offline::Iknp, None) => Ok(None),
        }
    }
}

/// What a party's run is, apart from where its peer is and how their link is secured:
/// the options the CLI's flags, the Python package's keywords and the lanes of `venn.ray`
/// share, with their defaults in one place ([`RunSpec::default`]: Python's
/// `max_peer_items` was once 2^31 where the CLI's was 2^24).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSpec {
    /// `--protocol`.
    pub protocol: String,
    /// `--bins`, `--sigma`, `--offline`, `--stash`, `--threshold`.
    pub options: Options,
    /// `--threads`.
    pub threads: usize,
    /// `--timeout`: to connect, and for each whole message either way.
    pub timeout: Duration,
    /// `--insecure`: allow a protocol that is not (the naive baseline).
    pub insecure: bool,
    /// `--max-peer-items`.
    pub max_peer_items: u64,
    /// `--max-memory`.
    pub max_memory: u64,
    /// `--allow-key-mismatch`: what to do when the peer takes its keys otherwise.
    pub key_mismatch: KeyMismatch,
    /// `--upload-deadline`: an rr22-m sender's deadline for the receiver's whole OKVS
    /// (`None`: the protocol's default for the sizes).
    pub upload_deadline: Option<Duration>,
}

impl Default for RunSpec {
    /// RR22's VOLE-PSI (the fastest semi-honest protocol here, a quarter of kkrt16's
    /// traffic) on one thread, a minute's wait, peers of up to 2^24 items, half
    /// of physical memory (from /proc/meminfo; 4 GiB where it cannot be read), and a peer
    /// that takes its keys otherwise refused.
    fn default() -> Self {
        let half_of_memory = venn::util::memory::physical_memory().map_or(4 << 30, |m| m / 2);
        RunSpec {
            protocol: "rr22".into(),
            options: Options::default(),
            threads: 1,
            timeout: Duration::from_secs(60),
            insecure: false,
            max_peer_items: 1 << 24,
            max_memory: half_of_memory,
            key_mismatch: KeyMismatch::Refuse,
            upload_deadline: None,
        }
    }
}

/// What every party needs to reach its peer and run a protocol.
#[derive(Clone, Debug)]
pub struct Link {
    /// What the run is.
    pub spec: RunSpec,
    /// The dealer, for `--offline dealer`.
    pub dealer: Option<DealerAddr>,
    /// `--listen` or `--connect`.
    pub peer: PeerAddr,
    /// `--stats-json`: where the run's statistics go.
    pub stats_json: Option<PathBuf>,
    /// How the link to the peer is secured (TLS and whose certificate, or none).
    pub transport: Transport,
}

/// A party of `venn send` / `venn receive`.
#[derive(Clone, Debug)]
pub struct PartyArgs {
    /// Where the peer is and what the run is.
    pub link: Link,
    /// `--input`: the file of keys.
    pub input: PathBuf,
    /// `--output`: where the matching rows, or the answer, go.
    pub output: Option<PathBuf>,
    /// How keys are taken from the input.
    pub keys: KeyOptions,
    /// `--both`: the sender learns the intersection too.
    pub both: bool,
    /// `--peer-columns`: the peer's columns asked for, added to each matched row.
    pub peer_columns: Vec<String>,
    /// `--join`: which rows the output holds.
    pub join: JoinKind,
    /// `--align`: how both parties order their outputs.
    pub align: Align,
    /// Run only the online phase with this precomputed state.
    pub state: Option<PathBuf>,
    /// Split the input into hash buckets of about this many rows on disk.
    pub bucket_rows: Option<u64>,
    /// Where bucket files go (default: the system's temporary directory).
    pub bucket_dir: Option<PathBuf>,
}

impl PartyArgs {
    /// The `venn` tool's sink: `--output` (rows as they are in the input file, JSON for
    /// the rest; JSON to stdout without it).
    pub fn file_output(&self) -> FileOutput<'_> {
        FileOutput {
            path: self.output.as_deref(),
            threads: threads::within_cores(self.link.spec.threads),
        }
    }
}

/// A party of `venn precompute`.
#[derive(Clone, Debug)]
pub struct PrecomputeArgs {
    /// Where the peer is and what the run is.
    pub link: Link,
    /// `--max-items`: the most items this party will bring to the online run.
    pub max_items: u64,
    /// `--state`: where the state is written (a new file, used up by one online run).
    pub state: PathBuf,
}

/// What a finished party reports.
pub struct Outcome {
    /// What the protocol measured and learned (bucket by bucket: summed, the matched
    /// keys as a count).
    pub report: Report,
    /// What went to `--output`, if anything did.
    pub written: Option<Written>,
    /// Seconds spent reading the input and writing the output.
    pub files: Option<(f64, f64)>,
}

/// Runs one party; what it outputs goes to `sink` (the `venn` tool's:
/// [`PartyArgs::file_output`]), `on_bound` is told the listening address (with `--listen`). The
/// protocol's phases go to `progress` if given (the Python package's callback), else to a
/// spinner on a terminal. The run is its stages (the private module `stages`), in order.
pub fn run_party(
    args: &PartyArgs,
    role: Role,
    sink: &mut dyn OutputSink,
    progress: Option<&dyn Progress>,
    on_bound: impl FnOnce(SocketAddr),
) -> Result<Outcome> {
    let checked = stages::check(args, role)?;
    let spinner = match progress {
        None => Spinner::if_terminal(&format!("venn {}", role.name())),
        Some(_) => None,
    };
    let input = stages::read(args, &checked, spinner.as_ref())?;
    let dealer = args.link.dealer_link();
    let mut opts = RunOptions {
        input_memory: input.read.memory(),
        ..args.link.options(
            checked.protocol,
            role,
            args.both,
            checked.threads,
            progress.or(spinner.as_ref().map(|s| s as &dyn Progress)),
            dealer.as_ref().map(|d| d as &DealerLink),
        )
    };
    let connected = stages::connect(
        args,
        &checked,
        &input,
        &mut opts,
        on_bound,
        spinner.as_ref(),
    )?;
    let ran = stages::run(connected, input.read, &opts, spinner.as_ref())?;
    drop(spinner);
    let wrote = stages::write(args, &checked, &ran, sink)?;
    stages::report(args, &checked, input.tally, ran, wrote)
}

/// One party on an input held whole that no file names (keys in memory:
/// [`KeysInMemory`](crate::input::memory::KeysInMemory), with the columns they reveal),
/// as `venn send` or `venn receive` runs on a file read whole: the same checks, transport,
/// bucket agreement (it never splits its own input; the peer may), protocol and columns
/// (`peer_columns`: those asked of the peer). What the run output goes to `sink`: the
/// matched keys' positions, or with the peer's columns each matched position once for
/// each of the peer's rows of its key, with their values ([`RowBatch::Joined`]).
///
/// [`RowBatch::Joined`]: crate::input::source::RowBatch::Joined
#[allow(clippy::too_many_arguments)] // The party, its input and what takes its output.
pub fn run_keys(
    link: &Link,
    role: Role,
    both: bool,
    input: &dyn InputSource,
    peer_columns: &[String],
    sink: &mut dyn OutputSink,
    progress: Option<&dyn Progress>,
    on_bound: impl FnOnce(SocketAddr),
) -> Result<Report> {
    let protocol = link.protocol()?;
    let threads = threads::bounded(link.spec.threads)?;
    protocol.check_values(role, input.keys().value_columns())?;
    let asks = !peer_columns.is_empty();
    check_key_columns(protocol, (role, both), input.layout().is_some(), asks)?;
    link.check_endpoint()?;
    let mut opts = RunOptions {
        input_memory: input.memory(),
        ..link.options(protocol, role, both, threads, progress, None)
    };
    let asks = peer_columns.to_vec();
    let plan = stages::whole_plan(input, (protocol, role), asks, Align::None, &mut opts)?;
    let (mut chan, agreed) = stages::agree(link, protocol, role, plan, false, on_bound, None)?;
    stages::take_records(&agreed, role, &mut opts);
    let peer = peer_layout(&agreed)?;
    let (report, output) = stages::run_whole(&mut *chan, input, &agreed, None, &opts, |_, _| {})?;
    deliver_keys(input, &output, Shape::of_keys(peer.as_ref()), sink)?;
    Ok(report)
}

/// Hands `sink` what a run over keys held whole (`input`) output: the matched keys'
/// rows in the input's order, made as `shape` says (runs of the file where it adds
/// nothing to an inner join's rows; else row by row, joined to the peer's records where
/// it revealed columns), or a count, a sum, a threshold's answer.
pub(crate) fn deliver_keys(
    input: &dyn InputSource,
    output: &Output,
    shape: Shape<'_>,
    sink: &mut dyn OutputSink,
) -> Result<Option<Written>> {
    let intersection = output.indices().unwrap_or_default();
    if shape.as_they_are() && shape.kind == JoinKind::Inner {
        let rows = Matching {
            source: input,
            intersection,
        };
        return sink.take(Delivered::of(output, &rows));
    }
    let (records, rows) = match output {
        Output::Records { records, rows, .. } => (records.as_slice(), rows.as_slice()),
        _ => (&[][..], &[][..]),
    };
    let joined = JoinedRows {
        source: input,
        intersection,
        records,
        rows,
        shape,
    };
    sink.take(Delivered::of(output, &joined))
}

/// Refuses to run bucket by bucket a protocol whose receiver learns a function of the
/// whole intersection: a count (or a threshold's answer) per bucket would tell how the
/// common keys fall into hash buckets, more than the protocol's output.
pub(crate) fn refuse_whole_outputs_in_buckets(protocol: &dyn Protocol) -> Result<()> {
    if protocol.info().role(Role::Receiver).output == OutputKind::Indices {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "'{}' outputs a function of the whole intersection and cannot run bucket by bucket \
         (--bucket-rows, or an input too large to read whole): each bucket's count would \
         tell the receiver more than the total",
        protocol.info().name
    )))
}

fn state_in_buckets() -> Error {
    Error::Usage(
        "the peer splits its input into buckets (a large input or --bucket-rows), and a \
         precomputed state (--state) cannot run in buckets"
            .into(),
    )
}

/// Runs the offline phase with the peer for at most `max_items` items of ours and saves
/// the state (`venn precompute`).
pub fn precompute_party(
    args: &PrecomputeArgs,
    role: Role,
    on_bound: impl FnOnce(SocketAddr),
) -> Result<Report> {
    let protocol = args.link.protocol()?;
    let threads = threads::bounded(args.link.spec.threads)?;
    check_output_path(&args.state, "--state", &[])?;
    if let Some(stats) = &args.link.stats_json {
        if stats == &args.state {
            return Err(Error::Usage(
                "--stats-json must not be the --state file".into(),
            ));
        }
        check_output_path(stats, "--stats-json", &[])?;
    }
    if args.state.exists() {
        return Err(Error::Usage(format!(
            "'{}' already exists; a state file is never overwritten",
            args.state.display()
        )));
    }
    let spinner = Spinner::if_terminal(&format!("venn {} precompute", role.name()));
    let dealer = args.link.dealer_link();
    let opts = args.link.options(
        protocol,
        role,
        false,
        threads,
        spinner.as_ref().map(|s| s as &dyn Progress),
        dealer.as_ref().map(|d| d as &DealerLink),
    );
    let mut chan = args.link.connect(on_bound, spinner.as_ref())?;
    let pre = venn::precompute(&mut *chan, args.max_items, &opts)?;
    drop(spinner);
    let report = pre.save(&args.state)?;
    args.link.write_stats(&Stats::new(&report, None, threads))?;
    Ok(report)
}
