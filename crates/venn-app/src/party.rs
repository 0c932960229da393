//! `venn send`, `venn receive` and `venn precompute`: one party of a PSI run over TCP, on a
//! file or (precompute) on nothing but the most items it will bring.

use crate::buckets;
use crate::destination::{check_output_path, Destination};
use crate::input::{read_input, Input, KeyOptions};
use crate::output::{write_output, Stats, Written};
use crate::progress::Spinner;
use crate::reading::{self, Reading};
use crate::threads;
use crate::transport::{TlsArgs, Transport};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use venn::net::{Channel, Retry};
use venn::protocols::Output;
use venn::protocols::{
    find, DealerLink, Offline, Options, OutputKind, Progress, Protocol, Security,
};
use venn::session::run_plan::{self, Agreed, KeyMismatch, Plan};
use venn::session::Role;
use venn::{Error, Report, Result, RunOptions};

/// Where the peer is.
#[derive(Clone, Debug)]
pub enum Endpoint {
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
    pub endpoint: Endpoint,
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
    /// Run only the online phase with this precomputed state.
    pub state: Option<PathBuf>,
    /// Split the input into hash buckets of about this many rows on disk.
    pub bucket_rows: Option<u64>,
    /// Where bucket files go (default: the system's temporary directory).
    pub bucket_dir: Option<PathBuf>,
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

impl Link {
    /// The protocol, refusing an insecure one unless `--insecure` was given.
    pub(crate) fn protocol(&self) -> Result<&'static dyn Protocol> {
        let protocol = find(&self.spec.protocol)?;
        let info = protocol.info();
        if info.security == Security::Insecure && !self.spec.insecure {
            return Err(Error::Usage(format!(
                "protocol '{}' is INSECURE (a benchmark baseline that reveals hashes of all items); \
                 pass --insecure if you really mean it",
                info.name
            )));
        }
        self.spec.options.check(info, protocol.accepts())?;
        Ok(protocol)
    }

    /// The run's options on `threads` threads (the link's, [bounded](threads::bounded)),
    /// for a party that holds no input yet (a run sets what its input holds:
    /// [`RunOptions::input_memory`]).
    fn options<'a>(
        &self,
        protocol: &'static dyn Protocol,
        role: Role,
        both: bool,
        threads: usize,
        progress: Option<&'a dyn Progress>,
        dealer: Option<&'a DealerLink<'a>>,
    ) -> RunOptions<'a> {
        RunOptions {
            protocol,
            role,
            both,
            options: self.spec.options,
            max_peer_items: self.spec.max_peer_items,
            max_memory: self.spec.max_memory,
            input_memory: 0,
            threads,
            seed: None,
            progress,
            dealer,
            upload_deadline: self.spec.upload_deadline,
        }
    }

    /// Sends our run plan and receives the peer's ([`run_plan::exchange`]), under this
    /// link's bounds; a key-form mismatch the user allowed is warned of here.
    pub(crate) fn exchange(
        &self,
        chan: &mut dyn Channel,
        plan: Plan,
        role: Role,
    ) -> Result<Agreed> {
        let agreed = run_plan::exchange(
            chan,
            plan,
            role,
            self.spec.max_peer_items,
            self.spec.key_mismatch,
        )?;
        if let Some(why) = &agreed.warning {
            eprintln!("venn: warning: {why}");
        }
        Ok(agreed)
    }

    /// How to open the link to the dealer, if `--dealer` was given.
    fn dealer_link(&self) -> Option<impl Fn() -> Result<Box<dyn Channel>> + Sync + '_> {
        let d = self.dealer.as_ref()?;
        Some(move || d.transport.connect(&d.addr, self.spec.timeout, &mut |_| {}))
    }

    /// Checks the peer's address (or ours to listen on) against the TLS rule: done before
    /// the input is read, so that a refusal comes first.
    pub(crate) fn check_endpoint(&self) -> Result<()> {
        match &self.endpoint {
            Endpoint::Listen(a) | Endpoint::Connect(a) => self.transport.check_endpoint(a),
        }
    }

    /// Reaches the peer; `spinner` (on a terminal) shows what is waited for: the address
    /// listened on, or the one connected to with why the last attempt failed.
    pub(crate) fn connect(
        &self,
        on_bound: impl FnOnce(SocketAddr),
        spinner: Option<&Spinner>,
    ) -> Result<Box<dyn Channel>> {
        let timeout = self.spec.timeout;
        let chan = match &self.endpoint {
            Endpoint::Listen(a) => self.transport.listen(a, timeout, |bound| {
                on_bound(bound);
                if let Some(s) = spinner {
                    s.phase(&format!("waiting for the peer on {bound}"));
                }
            }),
            Endpoint::Connect(a) => {
                if let Some(s) = spinner {
                    s.phase(&format!("connecting to {a}"));
                }
                let mut retrying = |r: &Retry| {
                    if let Some(s) = spinner {
                        s.message(&r.to_string());
                    }
                };
                self.transport.connect(a, timeout, &mut retrying)
            }
        }?;
        if let Some(s) = spinner {
            s.phase("agreeing on the run with the peer");
        }
        Ok(chan)
    }

    fn write_stats(&self, stats: &Stats) -> Result<()> {
        match &self.stats_json {
            Some(path) => Destination::of(path, "--stats-json")?.write(|w| {
                serde_json::to_writer_pretty(&mut *w, stats)?;
                w.write_all(b"\n")
            }),
            None => Ok(()),
        }
    }
}

/// Runs one party; `on_bound` is told the listening address (with `--listen`). The
/// protocol's phases go to `progress` if given (the Python package's callback), else to a
/// spinner on a terminal.
pub fn run_party(
    args: &PartyArgs,
    role: Role,
    progress: Option<&dyn Progress>,
    on_bound: impl FnOnce(SocketAddr),
) -> Result<Outcome> {
    let protocol = args.link.protocol()?;
    let threads = threads::bounded(args.link.spec.threads)?;
    protocol.check_values(role, args.keys.value_columns.len())?;
    let learns_rows = protocol.info().role(role).output == OutputKind::Indices
        || (role == Role::Sender && args.both);
    if role == Role::Receiver && learns_rows && args.output.is_none() {
        return Err(Error::Usage("receive needs --output FILE".into()));
    }
    let learns = args.both || protocol.info().role(role).output != OutputKind::Nothing;
    if role == Role::Sender && !learns && args.output.is_some() {
        return Err(Error::Usage(
            "the sender learns nothing without --both (which both parties pass): drop --output, \
             or pass --both"
                .into(),
        ));
    }
    let inputs: Vec<&Path> = [Some(args.input.as_path()), args.state.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    if let Some(out) = &args.output {
        check_output_path(out, "--output", &inputs)?;
    }
    if let Some(stats) = &args.link.stats_json {
        if args.output.as_deref() == Some(stats.as_path()) {
            return Err(Error::Usage(
                "--stats-json must not be the --output file".into(),
            ));
        }
        let taken: Vec<&Path> = inputs
            .iter()
            .copied()
            .chain(args.output.as_deref())
            .collect();
        check_output_path(stats, "--stats-json", &taken)?;
    }
    args.link.check_endpoint()?;
    let spinner = match progress {
        None => Spinner::if_terminal(&format!("venn {}", role.name())),
        Some(_) => None,
    };
    let started = std::time::Instant::now();
    let (read, bucket_rows) = match reading::choose(args, protocol, role)? {
        Reading::Whole => (Read::Whole(read_input(&args.input, &args.keys)?), None),
        Reading::Split {
            bucket_rows: per,
            segment_bytes,
        } => {
            if args.state.is_some() {
                return Err(Error::Usage(
                    "a precomputed state (--state) cannot run in buckets (--bucket-rows)".into(),
                ));
            }
            let size = std::fs::metadata(&args.input)
                .map_err(Error::file("open input", &args.input))?
                .len();
            // Bucket files of at most about `per` rows, for rows of 16 bytes or more.
            // (At most 256 files open at once.)
            let files = size
                .div_ceil(per.max(1).saturating_mul(16))
                .next_power_of_two()
                .min(1 << 8);
            if let Some(s) = &spinner {
                s.phase("splitting the input into buckets");
            }
            let progress = |rows: u64| {
                if let Some(s) = &spinner {
                    let rate = rows as f64 / started.elapsed().as_secs_f64().max(1e-3);
                    s.message(&format!(
                        "splitting the input into buckets: {:.1} M rows, {:.1} M rows/s",
                        rows as f64 / 1e6,
                        rate / 1e6
                    ));
                }
            };
            let split = Read::Split(buckets::split(
                &args.input,
                &args.keys,
                args.bucket_dir.as_deref(),
                files.trailing_zeros() as u8,
                segment_bytes,
                progress,
                |keys| protocol.check_items(args.link.spec.options, keys),
            )?);
            (split, Some(per))
        }
    };
    let input_seconds = started.elapsed().as_secs_f64();
    // A split file's duplicates are known once its buckets are deduplicated (a key may
    // repeat in another segment), so it is warned about after the run.
    let (rows, skipped) = match &read {
        Read::Whole(i) => (i.rows.len() as u64, i.skipped_empty as u64),
        Read::Split(s) => (s.rows, s.skipped_empty),
    };
    let warn_duplicates = |duplicates: u64| {
        if duplicates > 0 {
            eprintln!(
                "venn: warning: {duplicates} rows repeat an earlier key in '{}'; each key is \
                 run once and all its rows are output",
                args.input.display()
            );
        }
    };
    if let Read::Whole(i) = &read {
        warn_duplicates(i.duplicates as u64);
    }
    if skipped > 0 {
        eprintln!("venn: warning: skipped {skipped} rows with an empty key");
    }
    let dealer = args.link.dealer_link();
    // What a file read whole holds through the run (a split one's buckets count theirs).
    let input_memory = match &read {
        Read::Whole(input) => input.memory(),
        Read::Split(_) => 0,
    };
    let opts = RunOptions {
        input_memory,
        ..args.link.options(
            protocol,
            role,
            args.both,
            threads,
            progress.or(spinner.as_ref().map(|s| s as &dyn Progress)),
            dealer.as_ref().map(|d| d as &DealerLink),
        )
    };
    // A state is read and checked before the peer is contacted; it is used up only once
    // the peer has confirmed the online session.
    let loaded = args
        .state
        .as_ref()
        .map(|path| venn::load_state(path, &opts))
        .transpose()?;
    if let (Some(state), Read::Whole(input)) = (&loaded, &read) {
        state
            .check_items(input.keys.len())
            .map_err(|e| Error::Usage(format!("'{}': {e}", args.input.display())))?;
    }
    // Keys a protocol cannot run on (not σ-bit integers) are refused before the peer is
    // contacted (a split input's were checked as it was split).
    if let Read::Whole(input) = &read {
        protocol
            .check_items(opts.options, &input.keys)
            .map_err(|e| Error::Usage(format!("'{}': {e}", args.input.display())))?;
    }
    let mut chan = args.link.connect(on_bound, spinner.as_ref())?;
    // A file read whole announces its distinct keys (as the session hello does); a split
    // one its rows (its distinct keys are known only bucket by bucket).
    let announced = match &read {
        Read::Whole(input) => input.keys.len() as u64,
        Read::Split(s) => s.rows,
    };
    let plan = Plan {
        rows: announced,
        log2_buckets: buckets::log2_buckets(announced, bucket_rows),
        form: args.keys.form(),
    };
    let agreed = args.link.exchange(&mut *chan, plan, role)?;
    let progress = |done: u64, all: u64| {
        if let Some(s) = &spinner {
            s.context(&format!("bucket {} of {all}: ", (done + 1).min(all)));
        }
    };
    let split = matches!(read, Read::Split(_));
    let bucketed = split || agreed.log2_buckets() > 0;
    if bucketed {
        refuse_whole_outputs_in_buckets(protocol)?;
    }
    let (report, written, output_seconds) = match (read, loaded) {
        (Read::Whole(input), loaded) => {
            let (report, output) = run_whole(&mut *chan, &input, &agreed, loaded, &opts, progress)?;
            drop(spinner);
            let started = std::time::Instant::now();
            let written = write_output(args.output.as_deref(), &input, &output)?;
            (report, written, started.elapsed().as_secs_f64())
        }
        (Read::Split(_), Some(_)) => return Err(state_in_buckets()),
        (Read::Split(split), None) => {
            let source = buckets::Source::Disk(split);
            let (report, matches) =
                buckets::run_buckets(&mut *chan, &agreed, &source, &opts, progress)?;
            drop(spinner);
            let started = std::time::Instant::now();
            let buckets::Source::Disk(split) = &source else {
                unreachable!("made above")
            };
            let written = match (&args.output, &report.output) {
                (Some(out), Output::Count(_)) if learns_rows => Some(Written::Rows(
                    buckets::write_split_rows(out, &args.input, &args.keys, split, &matches)?,
                )),
                (out, output) if !learns_rows => {
                    write_output(out.as_deref(), &Input::empty(), output)?
                }
                _ => None,
            };
            (report, written, started.elapsed().as_secs_f64())
        }
    };
    let files = (input_seconds, output_seconds);
    // Every row is a distinct key or repeats one (n_self: our distinct keys).
    let duplicates = rows - report.n_self.min(rows);
    if split {
        warn_duplicates(duplicates);
    }
    let mut stats = Stats::new(&report, None, written.as_ref(), threads);
    (stats.rows, stats.duplicate_rows) = (Some(rows as usize), Some(duplicates as usize));
    // Buckets report the matched keys as a count (their indices are not kept); the stats
    // say what the run computed, as one run would.
    if let (true, Output::Count(k)) = (bucketed, &report.output) {
        if protocol.info().role(role).output == OutputKind::Indices {
            stats.output = OutputKind::Indices.name();
            (stats.intersection, stats.intersection_size) = (Some(*k as usize), None);
        }
    }
    (stats.input_seconds, stats.output_seconds) = (Some(files.0), Some(files.1));
    args.link.write_stats(&stats)?;
    Ok(Outcome {
        report,
        written,
        files: Some(files),
    })
}

/// Runs the protocol over `chan` on an input held whole, once the bucket plans are
/// `agreed`: in one run (from a precomputed state, if `loaded`), or bucket by bucket when
/// the peer splits its input. Returns the report and the output over the input's keys
/// (bucket by bucket, the matched keys' indices).
fn run_whole(
    chan: &mut dyn Channel,
    input: &Input,
    agreed: &Agreed,
    loaded: Option<venn::LoadedState>,
    opts: &venn::RunOptions,
    progress: impl FnMut(u64, u64),
) -> Result<(Report, Output)> {
    if agreed.log2_buckets() == 0 {
        let mut chan = agreed.bind(chan);
        let report = match loaded {
            Some(state) => venn::run_online(&mut chan, &input.keys, state, opts)?,
            None => venn::run(&mut chan, &input.keys, opts)?,
        };
        let output = report.output.clone();
        return Ok((report, output));
    }
    if loaded.is_some() {
        return Err(state_in_buckets());
    }
    let source = buckets::Source::Memory(input);
    let (report, matches) = buckets::run_buckets(chan, agreed, &source, opts, progress)?;
    let output = match report.output {
        Output::Nothing => Output::Nothing,
        _ => {
            let keys = (0..input.keys.len() as u64).filter(|&k| matches.has(k));
            Output::Indices(keys.map(|k| k as usize).collect())
        }
    };
    Ok((report, output))
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

/// One party on keys held in memory (`input`, from [`Input::from_keys`]), as `venn send`
/// or `venn receive` runs on a file read whole: the same checks, transport, bucket
/// agreement (it never splits its own input; the peer may) and protocol. Returns the
/// report and, for a party that learns the intersection, the positions of the matched
/// rows in input order.
pub fn run_keys(
    link: &Link,
    role: Role,
    both: bool,
    input: &Input,
    progress: Option<&dyn Progress>,
    on_bound: impl FnOnce(SocketAddr),
) -> Result<(Report, Option<Vec<usize>>)> {
    let protocol = link.protocol()?;
    let threads = threads::bounded(link.spec.threads)?;
    protocol.check_values(role, input.keys.value_columns())?;
    link.check_endpoint()?;
    let opts = RunOptions {
        input_memory: input.memory(),
        ..link.options(protocol, role, both, threads, progress, None)
    };
    protocol.check_items(opts.options, &input.keys)?;
    let mut chan = link.connect(on_bound, None)?;
    let plan = Plan {
        rows: input.keys.len() as u64,
        log2_buckets: 0,
        form: input.form,
    };
    let agreed = link.exchange(&mut *chan, plan, role)?;
    if agreed.log2_buckets() > 0 {
        refuse_whole_outputs_in_buckets(protocol)?;
    }
    let (report, output) = run_whole(&mut *chan, input, &agreed, None, &opts, |_, _| {})?;
    let rows = match &output {
        Output::Indices(keys) => Some(input.matched_positions(keys)),
        _ => None,
    };
    Ok((report, rows))
}

/// A party's input: read whole, or split into bucket files on disk.
enum Read {
    Whole(Input),
    Split(buckets::Split),
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
    args.link
        .write_stats(&Stats::new(&report, None, None, threads))?;
    Ok(report)
}

/// The one-line summary of a run printed on stderr.
pub fn summary(o: &Outcome) -> String {
    let r = &o.report;
    let result = match (&r.output, &o.written) {
        (venn::protocols::Output::Nothing, _) => {
            "intersection sent to the receiver only".to_string()
        }
        (out, Some(Written::Rows(rows))) => {
            format!("{}, {rows} rows written", describe(out))
        }
        (out, _) => describe(out),
    };
    let files = o.files.map_or(String::new(), |(i, w)| {
        format!(" | files: read {i:.3} s, written {w:.3} s")
    });
    format!(
        "venn {}{} {}: {} keys, peer {} keys, {result} | offline {:.3} s, online {:.3} s | sent {:.2} MB, received {:.2} MB{files}",
        r.protocol,
        insecure_tag(r.protocol),
        r.role.name(),
        r.n_self,
        r.n_peer,
        r.offline().as_secs_f64(),
        r.online().as_secs_f64(),
        r.traffic.sent as f64 / 1e6,
        r.traffic.received as f64 / 1e6,
    )
}

/// The summary of a precomputation.
pub fn precompute_summary(r: &Report, state: &std::path::Path) -> String {
    format!(
        "venn {}{} {} precompute: up to {} keys, peer up to {} keys | offline {:.3} s | sent {:.2} MB, received {:.2} MB | state in '{}' (single use)",
        r.protocol,
        insecure_tag(r.protocol),
        r.role.name(),
        r.n_self,
        r.n_peer,
        r.offline().as_secs_f64(),
        r.traffic.sent as f64 / 1e6,
        r.traffic.received as f64 / 1e6,
        state.display()
    )
}

fn describe(out: &venn::protocols::Output) -> String {
    use venn::protocols::Output;
    match out {
        Output::Indices(ix) => format!("intersection {} keys", ix.len()),
        Output::Count(c) => format!("intersection size {c}"),
        Output::Sum { count, sums } => {
            let sums: Vec<String> = sums.iter().map(u64::to_string).collect();
            let (s, sums) = (if sums.len() == 1 { "" } else { "s" }, sums.join(", "));
            format!("intersection size {count}, sum{s} over the intersection {sums}")
        }
        Output::Threshold { threshold, reached } => format!(
            "intersection size {} {threshold}",
            if *reached { "at least" } else { "below" }
        ),
        Output::Nothing => "nothing".into(),
    }
}

fn insecure_tag(protocol: &str) -> &'static str {
    match find(protocol).map(|p| p.info().security) {
        Ok(Security::Insecure) => " (INSECURE)",
        _ => "",
    }
}
