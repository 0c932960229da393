//! The stages of a party's run on a file, each a function with its own result:
//! check → read (whole or split) → connect and agree the plan → run (whole or bucketed)
//! → write → report. [`super::run_party`] is their list; [`super::run_keys`] (keys held
//! in memory) shares the agreement and the run on an input held whole.

use super::reading::{self, Reading};
use super::{Link, Outcome, PartyArgs};
use crate::buckets::{self, Matches, Split, SplitRows};
use crate::columns::{Layout, MATCHED_ON_COLUMN};
use crate::destination::check_output_path;
use crate::input::parquet_file::ParquetFile;
use crate::input::parquet_input::ParquetInput;
use crate::input::source::{InputSource, MatchedRows};
use crate::input::{read_input, Format, MAX_IDENTIFIERS};
use crate::join::{AlignedRows, Alignment, JoinKind, Shape};
use crate::output::{Stats, Written};
use crate::progress::Spinner;
use crate::sink::{Delivered, OutputSink};
use crate::split_alignment::AlignedSplitRows;
use crate::threads;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;
use venn::net::Channel;
use venn::protocols::Progress as _;
use venn::protocols::{Output, OutputKind, Protocol};
use venn::session::run_plan::{Agreed, Align, Columns, Plan};
use venn::session::Role;
use venn::{Error, LoadedState, Report, Result, RunOptions};

/// What the checks settle before anything is read.
pub(super) struct Checked {
    pub protocol: &'static dyn Protocol,
    pub role: Role,
    /// The threads the run may use ([bounded](threads::bounded) to the cores).
    pub threads: usize,
    /// Whether this party learns rows: it is the receiver of a protocol that outputs the
    /// intersection, or a sender with `--both`.
    pub learns_rows: bool,
}

/// Check: the protocol and its options, what the party's output needs, the output and
/// statistics paths (and the columns a Parquet output adds, against its input's footer)
/// and the peer's address — all before the input is read, so that a refusal comes first.
pub(super) fn check(args: &PartyArgs, role: Role) -> Result<Checked> {
    let protocol = args.link.protocol()?;
    let threads = threads::bounded(args.link.spec.threads)?;
    protocol.check_values(role, args.keys.value_columns.len())?;
    let output = protocol.info().role(role).output;
    let learns_rows = output == OutputKind::Indices || (role == Role::Sender && args.both);
    if role == Role::Receiver && learns_rows && args.output.is_none() {
        return Err(Error::Usage("receive needs --output FILE".into()));
    }
    let learns = args.both || output != OutputKind::Nothing;
    if role == Role::Sender && !learns && args.output.is_some() {
        return Err(Error::Usage(
            "the sender learns nothing without --both (which both parties pass): drop --output, \
             or pass --both"
                .into(),
        ));
    }
    check_columns(args, protocol, role)?;
    check_match_any(args, protocol)?;
    check_join(args, learns_rows)?;
    check_align(args)?;
    check_paths(args)?;
    if args.keys.format == Format::Parquet && learns_rows && args.output.is_some() {
        let on = matched_on(args).then_some(MATCHED_ON_COLUMN);
        let added = on
            .into_iter()
            .chain(args.peer_columns.iter().map(String::as_str));
        ParquetFile::open(&args.input)?.check_added(args.join == JoinKind::Left, added)?;
    }
    args.link.check_endpoint()?;
    Ok(Checked {
        protocol,
        role,
        threads,
        learns_rows,
    })
}

/// Columns revealed or asked for (`--reveal-columns`, `--peer-columns`) go with a protocol
/// that carries them, between a CSV or Parquet file's rows, to a party that learns the
/// intersection.
fn check_columns(args: &PartyArgs, protocol: &dyn Protocol, role: Role) -> Result<()> {
    let (reveals, asks) = (
        !args.keys.reveal_columns.is_empty(),
        !args.peer_columns.is_empty(),
    );
    if !reveals && !asks {
        return Ok(());
    }
    carries_columns(protocol)?;
    if args.keys.format == Format::Lines {
        return Err(Error::Usage(
            "columns (--reveal-columns, --peer-columns) are those of a CSV or Parquet file's \
             rows (--format csv or parquet)"
                .into(),
        ));
    }
    column_roles(role, args.both, reveals, asks)
}

/// Columns of keys given in memory that a party `reveals` or `asks` for go with a
/// protocol that carries them, to and from parties that learn the intersection
/// ([`carries_columns`], [`column_roles`]).
pub(crate) fn check_key_columns(
    protocol: &dyn Protocol,
    (role, both): (Role, bool),
    reveals: bool,
    asks: bool,
) -> Result<()> {
    if reveals || asks {
        carries_columns(protocol)?;
        column_roles(role, both, reveals, asks)?;
    }
    Ok(())
}

/// Refuses columns (revealed or asked for) with a protocol that cannot carry them.
fn carries_columns(protocol: &dyn Protocol) -> Result<()> {
    match protocol.accepts().payload {
        true => Ok(()),
        false => Err(Error::Usage(format!(
            "'{}' cannot carry a party's columns (--reveal-columns, --peer-columns); rr22 and \
             rr22-m can",
            protocol.info().name
        ))),
    }
}

/// The columns a party `reveals` go to a party that learns the intersection, and those it
/// `asks` for come to one: the receiver, or either party with `both`.
fn column_roles(role: Role, both: bool, reveals: bool, asks: bool) -> Result<()> {
    match role {
        Role::Sender if asks && !both => Err(Error::Usage(
            "the sender learns nothing without --both (which both parties pass): drop \
             --peer-columns, or pass --both"
                .into(),
        )),
        Role::Receiver if reveals && !both => Err(Error::Usage(
            "the receiver's columns (--reveal-columns) go to the sender only with --both, \
             which both parties pass"
                .into(),
        )),
        _ => Ok(()),
    }
}

/// `--match-any` matches the records of a CSV or Parquet file on 2 to
/// [`MAX_IDENTIFIERS`] of their columns, for a protocol whose output is the intersection
/// (a count or a sum would count identifiers, not records), without values (a record's
/// would be added once an identifier) and without `--align` (whose order is a key's).
pub(super) fn check_match_any(args: &PartyArgs, protocol: &dyn Protocol) -> Result<()> {
    if !args.keys.match_any {
        return Ok(());
    }
    let refused = |why: &str| Err(Error::Usage(format!("--match-any {why}")));
    let named = args.keys.columns.len();
    if !(2..=MAX_IDENTIFIERS).contains(&named) {
        return refused(&format!(
            "names 2 to {MAX_IDENTIFIERS} identifier columns, not {named} (one key column is \
             --column)"
        ));
    }
    if args.keys.format == Format::Lines {
        return refused("matches the columns of a CSV or Parquet file (--format csv or parquet)");
    }
    let names = &args.keys.columns;
    if let Some(twice) = (names.iter().enumerate()).find(|&(i, n)| names[..i].contains(n)) {
        return refused(&format!("names the column '{}' twice", twice.1));
    }
    if protocol.info().role(Role::Receiver).output != OutputKind::Indices {
        return refused(&format!(
            "matches records, and '{}' outputs no records (a count or a sum would count \
             identifiers); rr22 and rr22-m match records",
            protocol.info().name
        ));
    }
    if !args.keys.value_columns.is_empty() {
        return refused("cannot go with --value-column (a record would count once an identifier)");
    }
    if args.align != Align::None {
        return refused("cannot go with --align (which orders keys, not records)");
    }
    Ok(())
}

/// A join other than `inner` is for a party that learns the intersection's rows; `left`
/// adds a column (to a CSV or Parquet file's rows); `difference` has no peer's columns to
/// add.
fn check_join(args: &PartyArgs, learns_rows: bool) -> Result<()> {
    let name = match args.join {
        JoinKind::Inner => return Ok(()),
        JoinKind::Left => "left",
        JoinKind::Difference => "difference",
    };
    if !learns_rows {
        return Err(Error::Usage(format!(
            "--join {name} is for a party that learns the intersection's rows (the receiver, \
             or the sender with --both)"
        )));
    }
    if args.join == JoinKind::Left && args.keys.format == Format::Lines {
        return Err(Error::Usage(
            "--join left adds a column to a CSV or Parquet file's rows (--format csv or \
             parquet)"
                .into(),
        ));
    }
    if args.join == JoinKind::Difference && !args.peer_columns.is_empty() {
        return Err(Error::Usage(
            "--join difference outputs the rows the peer lacks: there are no --peer-columns \
             to add to them"
                .into(),
        ));
    }
    Ok(())
}

/// `--align` lines up what both parties learn: with `--both`, the rows of an `inner` join
/// (`outer` adds the unmatched ones itself), placeholders being CSV rows, of text files.
fn check_align(args: &PartyArgs) -> Result<()> {
    if args.align == Align::None {
        return Ok(());
    }
    if !args.both {
        return Err(Error::Usage(
            "--align lines up the rows both parties learn: both pass --both".into(),
        ));
    }
    if args.join != JoinKind::Inner {
        return Err(Error::Usage(
            "--align orders the matched rows (--join inner); --align outer adds the \
             unmatched ones"
                .into(),
        ));
    }
    if args.keys.format == Format::Parquet {
        return Err(Error::Usage(
            "--align writes the rows of a text file (CSV or lines), not a Parquet file's".into(),
        ));
    }
    if args.align == Align::Outer && args.keys.format != Format::Csv {
        return Err(Error::Usage(
            "--align outer writes placeholder rows among a CSV file's (--format csv)".into(),
        ));
    }
    Ok(())
}

/// The output and statistics files may be written: neither is an input (the file or the
/// state), nor the other.
fn check_paths(args: &PartyArgs) -> Result<()> {
    let inputs: Vec<&Path> = [Some(args.input.as_path()), args.state.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    if let Some(out) = &args.output {
        check_output_path(out, "--output", &inputs)?;
    }
    let Some(stats) = &args.link.stats_json else {
        return Ok(());
    };
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
    check_output_path(stats, "--stats-json", &taken)
}

/// A party's input, read: whole (a file of any format, as its source), or split into
/// bucket files on disk.
pub(super) enum Read {
    Whole(Box<dyn InputSource>),
    /// Split for buckets of about `bucket_rows` rows.
    Split {
        split: Split,
        bucket_rows: u64,
    },
}

impl Read {
    /// What the input holds in memory through the run (a split one's buckets count
    /// theirs as they are run).
    pub(super) fn memory(&self) -> u64 {
        match self {
            Read::Whole(input) => input.memory(),
            Read::Split { .. } => 0,
        }
    }
}

/// The read stage's result: the input, and what the report says of its reading.
pub(super) struct ReadInput {
    pub read: Read,
    pub tally: Tally,
}

/// What the report says of the input's reading.
#[derive(Clone, Copy)]
pub(super) struct Tally {
    /// Rows kept (not skipped for an empty key), repeats included (with `--match-any`,
    /// records).
    pub rows: u64,
    /// The rows run: one for each key of a row (with `--match-any`, for each of a
    /// record's non-empty identifiers).
    pub keyed: u64,
    /// Seconds spent reading it (parsing, normalising, deduplicating or splitting).
    pub seconds: f64,
}

/// Read: whole, or split into bucket files, as [`reading::choose`] decides within
/// `--max-memory`. Empty keys skipped are warned of here, and so are the repeated keys of
/// a file read whole (a split file's are known only once its buckets are deduplicated:
/// [`report`] warns of them).
pub(super) fn read(
    args: &PartyArgs,
    checked: &Checked,
    spinner: Option<&Spinner>,
) -> Result<ReadInput> {
    let started = Instant::now();
    let read = match reading::choose(args, checked.protocol, checked.role)? {
        Reading::Whole => Read::Whole(match args.keys.format {
            Format::Parquet => Box::new(ParquetInput::read(&args.input, &args.keys)?),
            Format::Csv | Format::Lines => Box::new(read_input(&args.input, &args.keys)?),
        }),
        Reading::Split {
            bucket_rows,
            segment_bytes,
        } => {
            if args.state.is_some() {
                return Err(Error::Usage(
                    "a precomputed state (--state) cannot run in buckets (--bucket-rows)".into(),
                ));
            }
            let split = split(args, checked, bucket_rows, segment_bytes, spinner, started)?;
            if args.align != Align::None && split.repeats_keys()? {
                return Err(Error::Usage(format!(
                    "--align lines up one row a key, and '{}' repeats keys",
                    args.input.display()
                )));
            }
            Read::Split { split, bucket_rows }
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let (rows, keyed, skipped) = match &read {
        Read::Whole(source) => {
            let counts = source.counts();
            if args.align != Align::None && counts.duplicates > 0 {
                return Err(Error::Usage(format!(
                    "--align lines up one row a key, and '{}' repeats keys in {} rows",
                    args.input.display(),
                    counts.duplicates
                )));
            }
            warn_duplicates(args, counts.duplicates);
            let keyed = source.keys().len() as u64 + counts.duplicates;
            (counts.kept, keyed, counts.skipped_empty)
        }
        Read::Split { split, .. } => (split.records, split.rows, split.skipped_empty),
    };
    if skipped > 0 {
        eprintln!("venn: warning: skipped {skipped} rows with an empty key");
    }
    Ok(ReadInput {
        read,
        tally: Tally {
            rows,
            keyed,
            seconds,
        },
    })
}

/// Splits the input into bucket files of at most about `per` rows (for rows of 16 bytes
/// or more; at most 256 files open at once), read in segments of `segment_bytes`; its
/// keys are checked against the protocol as they are split. The spinner shows the rate
/// since `started`.
fn split(
    args: &PartyArgs,
    checked: &Checked,
    per: u64,
    segment_bytes: usize,
    spinner: Option<&Spinner>,
    started: Instant,
) -> Result<Split> {
    let size = std::fs::metadata(&args.input)
        .map_err(Error::file("open input", &args.input))?
        .len();
    let files = size
        .div_ceil(per.max(1).saturating_mul(16))
        .next_power_of_two()
        .min(1 << 8);
    if let Some(s) = spinner {
        s.phase("splitting the input into buckets");
    }
    let progress = |rows: u64| {
        if let Some(s) = spinner {
            let rate = rows as f64 / started.elapsed().as_secs_f64().max(1e-3);
            s.message(&format!(
                "splitting the input into buckets: {:.1} M rows, {:.1} M rows/s",
                rows as f64 / 1e6,
                rate / 1e6
            ));
        }
    };
    buckets::split(
        &args.input,
        &args.keys,
        args.bucket_dir.as_deref(),
        files.trailing_zeros() as u8,
        segment_bytes,
        progress,
        |keys| checked.protocol.check_items(args.link.spec.options, keys),
    )
}

/// Warns of rows that repeat an earlier key of `input` (with `--match-any`, of
/// identifiers an earlier record has too).
fn warn_duplicates(args: &PartyArgs, duplicates: u64) {
    let input = args.input.display();
    match (duplicates, args.keys.match_any) {
        (0, _) => {}
        (_, false) => eprintln!(
            "venn: warning: {duplicates} rows repeat an earlier key in '{input}'; each key is \
             run once and all its rows are output"
        ),
        (_, true) => eprintln!(
            "venn: warning: {duplicates} identifiers (--match-any) repeat an earlier record's \
             in '{input}'; each is run once and all its records are output"
        ),
    }
}

/// A party linked to its peer, the run plans agreed.
pub(super) struct Connected {
    pub chan: Box<dyn Channel>,
    pub agreed: Agreed,
    /// The precomputed state (`--state`), read and checked.
    pub loaded: Option<LoadedState>,
}

/// Connect and agree the plan: a precomputed state is read and checked, and keys the
/// protocol cannot run on (not σ-bit integers) are refused, before the peer is contacted
/// (a split input's were checked as it was split); then the link, and the run plans. A
/// file read whole announces its distinct keys (as the session hello does) and the rows
/// repeating one whose records it reveals (they go to the peer as well); a split one
/// its rows (its distinct keys are known only bucket by bucket). The state is used up only
/// once the peer has confirmed the online session.
///
/// The run's records follow the plans: each party's revealed columns make its records,
/// whose widths `opts` takes once both plans agree on them (ours before, so that our keys
/// are checked with their records).
pub(super) fn connect(
    args: &PartyArgs,
    checked: &Checked,
    input: &ReadInput,
    opts: &mut RunOptions,
    on_bound: impl FnOnce(SocketAddr),
    spinner: Option<&Spinner>,
) -> Result<Connected> {
    let loaded = (args.state.as_ref())
        .map(|path| venn::load_state(path, opts))
        .transpose()?;
    let plan = match &input.read {
        Read::Whole(whole) => {
            let refused = |e: Error| Error::Usage(format!("'{}': {e}", args.input.display()));
            if let Some(state) = &loaded {
                state.check_items(whole.keys().len()).map_err(refused)?;
            }
            let asks = args.peer_columns.clone();
            let parties = (checked.protocol, checked.role);
            whole_plan(&**whole, parties, asks, args.align, opts).map_err(refused)?
        }
        Read::Split { split, bucket_rows } => {
            let reveals = split
                .layout
                .as_ref()
                .map_or_else(Vec::new, |l| l.columns.clone());
            let width = Columns::record_width(&reveals);
            match checked.role {
                Role::Sender => opts.options.payload = width,
                Role::Receiver => opts.options.receiver_payload = width,
            }
            Plan {
                rows: split.rows,
                log2_buckets: buckets::log2_buckets(split.rows, Some(*bucket_rows)),
                form: args.keys.form(),
                columns: Columns::new(reveals, args.peer_columns.clone())?,
                align: args.align,
            }
        }
    };
    let splits = matches!(input.read, Read::Split { .. });
    let (chan, agreed) = agree(
        &args.link,
        checked.protocol,
        checked.role,
        plan,
        splits,
        on_bound,
        spinner,
    )?;
    take_records(&agreed, checked.role, opts);
    Ok(Connected {
        chan,
        agreed,
        loaded,
    })
}

/// The run plan of an input held `whole` (its distinct keys and the rows repeating one
/// whose records it reveals, which go to the peer as well; its revealed columns, and the
/// peer's it `asks` for). `opts` takes the width of our records, with which the keys are
/// checked.
pub(super) fn whole_plan(
    whole: &dyn InputSource,
    (protocol, role): (&dyn Protocol, Role),
    asks: Vec<String>,
    align: Align,
    opts: &mut RunOptions,
) -> Result<Plan> {
    let reveals = whole.layout().map_or_else(Vec::new, |l| l.columns.clone());
    let width = Columns::record_width(&reveals);
    match role {
        Role::Sender => opts.options.payload = width,
        Role::Receiver => opts.options.receiver_payload = width,
    }
    protocol.check_items(opts.options, whole.keys())?;
    opts.options.check_records(role, whole.keys())?;
    let repeated = whole.keys().repeated_records().0.len() as u64;
    Ok(Plan {
        rows: whole.keys().len() as u64 + repeated,
        log2_buckets: 0,
        form: whole.form(),
        columns: Columns::new(reveals, asks)?,
        align,
    })
}

/// Once the plans are `agreed`: `opts` takes both parties' record widths; the peer's
/// records — their number, its keys' and its repeated rows', bounded by the rows it
/// announced — are counted beside the input against --max-memory (tags and records, at
/// most one of each a row).
pub(super) fn take_records(agreed: &Agreed, role: Role, opts: &mut RunOptions) {
    (opts.options.payload, opts.options.receiver_payload) = agreed.record_widths(role);
    if Columns::record_width(&agreed.peer.columns.reveals).is_some() {
        opts.max_peer_items = opts.max_peer_items.min(agreed.peer.rows);
    }
    let most = agreed.peer_records_memory(agreed.peer.rows);
    opts.input_memory = opts.input_memory.saturating_add(most);
}

/// The columns the peer reveals (named as we asked), if it reveals any.
pub(crate) fn peer_layout(agreed: &Agreed) -> Result<Option<Layout>> {
    match &agreed.peer.columns.reveals {
        reveals if reveals.is_empty() => Ok(None),
        reveals => Ok(Some(Layout::new(reveals.clone())?)),
    }
}

/// Reaches the peer and exchanges the run plans. A protocol whose output is a function of
/// the whole intersection is refused if the run goes bucket by bucket (our input `splits`,
/// or either side's plan asks for buckets).
pub(super) fn agree(
    link: &Link,
    protocol: &dyn Protocol,
    role: Role,
    plan: Plan,
    splits: bool,
    on_bound: impl FnOnce(SocketAddr),
    spinner: Option<&Spinner>,
) -> Result<(Box<dyn Channel>, Agreed)> {
    let mut chan = link.connect(on_bound, spinner)?;
    let agreed = link.exchange(&mut *chan, plan, role)?;
    if splits || agreed.log2_buckets() > 0 {
        super::refuse_whole_outputs_in_buckets(protocol)?;
    }
    Ok((chan, agreed))
}

/// The run stage's result.
pub(super) struct Ran {
    pub report: Report,
    /// Whether the run went bucket by bucket.
    pub bucketed: bool,
    pub matched: Matched,
    /// The columns the peer revealed (named as we asked), if it revealed any.
    pub peer_columns: Option<Layout>,
    /// The digest of both run plans: what orders an aligned output.
    pub plans: [u8; 32],
}

/// What a run matched, with the input it ran on.
pub(super) enum Matched {
    /// On an input read whole: the output over its keys (bucket by bucket, the matched
    /// keys' indices).
    Keys {
        input: Box<dyn InputSource>,
        output: Output,
    },
    /// On a split file: the matched rows, by number.
    Rows { split: Split, matches: Matches },
}

/// Run: the protocol on an input read whole (in one session, from a precomputed state if
/// one was loaded, or bucket by bucket when the peer splits its input), or on a split one
/// bucket by bucket. The spinner says which bucket is running.
pub(super) fn run(
    connected: Connected,
    read: Read,
    opts: &RunOptions,
    spinner: Option<&Spinner>,
) -> Result<Ran> {
    let Connected {
        mut chan,
        agreed,
        loaded,
    } = connected;
    let peer_columns = peer_layout(&agreed)?;
    let progress = |done: u64, all: u64| {
        if let Some(s) = spinner {
            s.context(&format!("bucket {} of {all}: ", (done + 1).min(all)));
        }
    };
    let bucketed = matches!(read, Read::Split { .. }) || agreed.log2_buckets() > 0;
    let (report, matched) = match read {
        Read::Whole(input) => {
            let (report, output) = run_whole(&mut *chan, &*input, &agreed, loaded, opts, progress)?;
            (report, Matched::Keys { input, output })
        }
        Read::Split { .. } if loaded.is_some() => return Err(super::state_in_buckets()),
        Read::Split { split, .. } => {
            let source = buckets::Source::Disk(&split);
            let (report, matches) =
                buckets::run_buckets(&mut *chan, &agreed, &source, opts, progress)?;
            (report, Matched::Rows { split, matches })
        }
    };
    Ok(Ran {
        report,
        bucketed,
        matched,
        peer_columns,
        plans: agreed.digest(),
    })
}

/// Runs the protocol over `chan` on an input held whole, once the bucket plans are
/// `agreed`: in one run (from a precomputed state, if `loaded`), or bucket by bucket when
/// the peer splits its input. Returns the report and the output over the input's keys
/// (bucket by bucket, the matched keys' indices).
pub(super) fn run_whole(
    chan: &mut dyn Channel,
    input: &dyn InputSource,
    agreed: &Agreed,
    loaded: Option<LoadedState>,
    opts: &RunOptions,
    progress: impl FnMut(u64, u64),
) -> Result<(Report, Output)> {
    if agreed.log2_buckets() == 0 {
        let mut chan = agreed.bind(chan);
        let report = match loaded {
            Some(state) => venn::run_online(&mut chan, input.keys(), state, opts)?,
            None => venn::run(&mut chan, input.keys(), opts)?,
        };
        let output = report.output.clone();
        return Ok((report, output));
    }
    if loaded.is_some() {
        return Err(super::state_in_buckets());
    }
    let source = buckets::Source::Memory(input);
    let (report, matches) = buckets::run_buckets(chan, agreed, &source, opts, progress)?;
    let output = match report.output {
        Output::Nothing => Output::Nothing,
        _ => matches.output_of_keys(input.keys().len()),
    };
    Ok((report, output))
}

/// The write stage's result.
pub(super) struct Wrote {
    pub written: Option<Written>,
    /// Seconds spent writing.
    pub seconds: f64,
}

/// Write: what the run output, handed to `sink` by kind — the matched rows (a split
/// file's read again), a count, a sum or a threshold's answer.
pub(super) fn write(
    args: &PartyArgs,
    checked: &Checked,
    ran: &Ran,
    sink: &mut dyn OutputSink,
) -> Result<Wrote> {
    let started = Instant::now();
    let alignment = Alignment {
        align: args.align,
        key: ran.plans,
        role: checked.role,
        peer_keys: ran.report.n_peer,
    };
    let written = match &ran.matched {
        Matched::Keys { input, output } => match args.align {
            Align::None => super::deliver_keys(&**input, output, shape(args, ran), sink)?,
            Align::Inner | Align::Outer => {
                let (records, peer_rows) = match output {
                    Output::Records { records, rows, .. } => (records.as_slice(), rows.as_slice()),
                    _ => (&[][..], &[][..]),
                };
                let aligned = AlignedRows {
                    source: &**input,
                    intersection: output.indices().unwrap_or_default(),
                    records,
                    rows: peer_rows,
                    shape: shape(args, ran),
                    alignment,
                };
                sink.take(Delivered::of(output, &aligned))?
            }
        },
        Matched::Rows { split, matches } => {
            let rows = SplitRows {
                input: &args.input,
                opts: &args.keys,
                split,
                matches,
                shape: shape(args, ran),
            };
            let aligned = AlignedSplitRows {
                rows: &rows,
                alignment,
            };
            let rows: &dyn MatchedRows = match args.align {
                Align::None => &rows,
                Align::Inner | Align::Outer => &aligned,
            };
            // A bucketed run reports the matched keys' count.
            match (checked.learns_rows, &ran.report.output) {
                (true, &Output::Count(keys)) => sink.take(Delivered::Rows { rows, keys })?,
                (_, output) => sink.take(Delivered::of(output, rows))?,
            }
        }
    };
    Ok(Wrote {
        written,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// How the output's rows are kept and made: `--join`, the identifiers matched on (with
/// `--match-any`, for the records a join outputs matched), and the peer's columns if any.
fn shape<'a>(args: &'a PartyArgs, ran: &'a Ran) -> Shape<'a> {
    Shape {
        kind: args.join,
        columns: ran.peer_columns.as_ref(),
        delimiter: args.keys.delimiter,
        identifiers: matched_on(args).then_some(args.keys.columns.as_slice()),
    }
}

/// Whether the output has a `matched_on` column: with `--match-any`, where matched
/// records are output.
fn matched_on(args: &PartyArgs) -> bool {
    args.keys.match_any && args.join != JoinKind::Difference
}

/// Report: a split file's repeated keys warned of, the statistics written
/// (`--stats-json`), and the outcome.
pub(super) fn report(
    args: &PartyArgs,
    checked: &Checked,
    tally: Tally,
    ran: Ran,
    wrote: Wrote,
) -> Result<Outcome> {
    let Ran {
        report, bucketed, ..
    } = ran;
    let (rows, keyed) = (tally.rows, tally.keyed);
    // Every row run is a distinct key or repeats one (n_self: our distinct keys).
    let duplicates = keyed - report.n_self.min(keyed);
    if matches!(ran.matched, Matched::Rows { .. }) {
        warn_duplicates(args, duplicates);
    }
    let mut stats = Stats::new(&report, wrote.written.as_ref(), checked.threads);
    (stats.rows, stats.duplicate_rows) = (Some(rows as usize), Some(duplicates as usize));
    // Buckets report the matched keys as a count (their indices are not kept); the stats
    // say what the run computed, as one run would.
    if let (true, Output::Count(k)) = (bucketed, &report.output) {
        if checked.protocol.info().role(checked.role).output == OutputKind::Indices {
            stats.output = OutputKind::Indices.name();
            (stats.intersection, stats.intersection_size) = (Some(*k as usize), None);
        }
    }
    let files = (tally.seconds, wrote.seconds);
    (stats.input_seconds, stats.output_seconds) = (Some(files.0), Some(files.1));
    args.link.write_stats(&stats)?;
    Ok(Outcome {
        report,
        written: wrote.written,
        files: Some(files),
    })
}
