//! `venn ub`: unbalanced PSI — one large dataset, updated over time, queried by many
//! small clients (docs/unbalanced.md). The operator's commands (`init`, `update`,
//! `rotate-key`, `serve`) keep a dataset in a directory (`venn_ub`); the client's
//! (`sync`, `query`) keep its tag set in a state file (`venn_app::ub_client`).

use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::time::Duration;
use venn::unbalanced::cache::MAX_QUERY;
use venn::unbalanced::fhe::plaintexts;
use venn::unbalanced::labels::MAX_LABEL;
use venn::unbalanced::oprf_round::padded_count;
use venn::{Error, Result};
use venn_app::columns::{Layout, Revealed};
use venn_app::destination::check_output_path;
use venn_app::input::{parse_delimiter, read_input, Format, Input, KeyOptions};
use venn_app::run_options::cli::{Flags, ForKeys, ForTls};
use venn_app::run_options::MAX_SECONDS;
use venn_app::ub_client::{self, ClientArgs, QueryMode, Synced};
use venn_ub::publish::Manifest;
use venn_ub::serve::ServeArgs;
use venn_ub::store::{Modes, Settings};

#[derive(Subcommand)]
pub(crate) enum UbCommand {
    /// Make a dataset in a new directory from a file of keys: its store, its first OPRF
    /// key and its first published tag set.
    Init(Box<InitCli>),
    /// Add and remove keys, then publish the next version (its delta goes to clients).
    Update(Box<UpdateCli>),
    /// Move the dataset to a new OPRF key and publish its whole set under it.
    RotateKey(DatasetCli),
    /// Answer clients from the dataset's published state, following each new publish.
    Serve(Box<ServeCli>),
    /// Bring a client's copy of the dataset's tag set up to date (in --state).
    Sync(Box<SyncCli>),
    /// Learn which of your rows' keys the dataset holds: one OPRF round per query, the
    /// lookups local.
    Query(Box<QueryCli>),
}

#[derive(Args)]
pub(crate) struct DatasetCli {
    /// The dataset's directory.
    #[arg(long, value_name = "DIR")]
    dataset: PathBuf,
    /// The dataset's store, if not the SQLite file in its directory: a PostgreSQL URL
    /// (postgres://…) or sqlite://FILE.
    #[arg(long, value_name = "URL")]
    database: Option<String>,
}

#[derive(Args)]
pub(crate) struct InitCli {
    #[command(flatten)]
    dataset: DatasetCli,
    #[command(flatten)]
    keys: Flags<ForKeys>,
    /// The most keys the dataset will ever hold (the tags' width grows with its log;
    /// default: 2^24, or twice the keys given if more).
    #[arg(long, value_name = "N")]
    max_items: Option<u64>,
    /// The most keys one query may hold, padding included: 1, 16, 256, 4096 or a
    /// multiple of 4096 (a client with more splits them).
    #[arg(long, value_name = "N", default_value_t = 4096, value_parser = parse_max_query)]
    max_query: u32,
    #[command(flatten)]
    labels: LabelCli,
    /// The most bytes a key's label may ever take, at most 64 (default: the longest label
    /// given, rounded up to 16). Clients download every label's room, sealed.
    #[arg(long, value_name = "BYTES", requires = "label_column", value_parser = clap::value_parser!(u8).range(1..=64))]
    label_len: Option<u8>,
    /// How clients query: cache (they download the tags and look up locally after one
    /// OPRF round), fhe (they send their keys' OPRF values encrypted under BFV and
    /// download nothing; up to 2^24 keys, or 2^29 for queries of one key, chosen by
    /// --max-items and --max-query) or both (each client chooses).
    #[arg(long, default_value = "cache", value_parser = ["cache", "fhe", "both"])]
    mode: String,
}

#[derive(Args)]
pub(crate) struct LabelCli {
    /// The CSV column holding each key's label: data a client learns with a match, and
    /// only then (sealed under the key's OPRF value). A key's rows must agree on it.
    #[arg(long, value_name = "NAME")]
    label_column: Option<String>,
}

#[derive(Args)]
pub(crate) struct UpdateCli {
    #[command(flatten)]
    dataset: DatasetCli,
    /// Keys to add (a CSV file, or with --format lines one key a line); those held already
    /// change nothing.
    #[arg(long, value_name = "FILE")]
    upsert: Option<PathBuf>,
    /// Keys to remove; those not held change nothing.
    #[arg(long, value_name = "FILE")]
    delete: Option<PathBuf>,
    /// The files' key columns (default: the first), as at `venn ub init`; keys are trimmed
    /// and lower-cased as the dataset's were.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    column: Vec<String>,
    /// The files' format: csv (with a header row) or lines.
    #[arg(long, value_name = "FORMAT", default_value = "csv", value_parser = ["csv", "lines"])]
    format: String,
    /// What separates a CSV file's fields: `,`, `;`, `tab` or `|`.
    #[arg(long, value_name = "CHAR", default_value = ",", value_parser = parse_delimiter)]
    delimiter: u8,
    /// In a labeled dataset, --upsert's keys' labels: a key held with another label is
    /// relabelled.
    #[command(flatten)]
    labels: LabelCli,
}

#[derive(Args)]
pub(crate) struct ServeCli {
    /// The dataset's directory.
    #[arg(long, value_name = "DIR")]
    dataset: PathBuf,
    /// Where to wait for clients (e.g. 0.0.0.0:7770).
    #[arg(long, value_name = "ADDR")]
    listen: String,
    /// Clients are trusted by --peer-fingerprint (comma-separated) or --tls-ca.
    #[command(flatten)]
    tls: Flags<ForTls>,
    /// Seconds a client may take for each message.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=MAX_SECONDS))]
    timeout: u64,
    /// Seconds a session may last (a whole tag set's download included).
    #[arg(long, default_value_t = 3600, value_parser = clap::value_parser!(u64).range(1..=MAX_SECONDS))]
    session_timeout: u64,
    /// Connections screened or served at once; the next is closed (and logged).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4096))]
    max_sessions: u64,
    /// OPRF evaluations a client may use at once (its padding included): at least a
    /// query's worth.
    #[arg(long, value_name = "N", default_value_t = 65_536)]
    rate_burst: u64,
    /// OPRF evaluations a client's allowance regains a day.
    #[arg(long, value_name = "N", default_value_t = 1 << 20)]
    rate_per_day: u64,
    /// Seconds the old key still answers after a key rotation (queries under way).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(0..=MAX_SECONDS))]
    grace: u64,
    /// MiB of plaintexts the `ub-fhe` databases keep between queries, all of them together
    /// (0: none; `venn params --protocol ub-fhe` gives a set's bytes a bundle): a kept
    /// bundle's query skips encoding it, most of a large set's time.
    #[arg(long, value_name = "MIB", default_value_t = plaintexts::DEFAULT_BUDGET_MIB)]
    plaintext_cache_mib: u64,
    /// Stop after this many sessions (tests).
    #[arg(long, hide = true)]
    sessions: Option<u64>,
}

#[derive(Args)]
pub(crate) struct ClientCli {
    /// The server's address.
    #[arg(long, value_name = "ADDR")]
    connect: String,
    /// Where to keep the dataset's tag set between runs (a file written whole); without
    /// it each run downloads the whole set.
    #[arg(long, value_name = "FILE")]
    state: Option<PathBuf>,
    /// The server is trusted by --peer-fingerprint or --tls-ca.
    #[command(flatten)]
    tls: Flags<ForTls>,
    /// Seconds the server may take for each message.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..=MAX_SECONDS))]
    timeout: u64,
    /// Seconds the whole session may take (a whole tag set's download included).
    #[arg(long, default_value_t = ub_client::SESSION_SECONDS, value_parser = clap::value_parser!(u64).range(1..=MAX_SECONDS))]
    session_timeout: u64,
    /// The largest dataset this client downloads the tags of, in keys.
    #[arg(long, value_name = "N", default_value_t = ub_client::DEFAULT_MAX_TAGS)]
    max_tags: u64,
    /// How to query: cache (download the tags, or bring them up to date, and look up
    /// locally), fhe (send the keys' OPRF values encrypted; download nothing) or auto
    /// (cache with a --state file or where the dataset serves nothing else, else fhe).
    #[arg(long, default_value = "auto", value_parser = ["auto", "cache", "fhe"])]
    mode: String,
}

#[derive(Args)]
pub(crate) struct SyncCli {
    #[command(flatten)]
    client: ClientCli,
}

#[derive(Args)]
pub(crate) struct QueryCli {
    #[command(flatten)]
    client: ClientCli,
    #[command(flatten)]
    keys: Flags<ForKeys>,
    /// Where to write the rows whose keys the dataset holds (`-`: standard output);
    /// without it only their count is told.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// `--max-query`: a padded size.
fn parse_max_query(s: &str) -> std::result::Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if n > 0 && n <= MAX_QUERY && padded_count(n) == n => Ok(n),
        _ => Err(format!(
            "'{s}': queries are padded to 1, 16, 256, 4096 or a multiple of 4096 keys, so the \
             cap is one of those, at most {MAX_QUERY}"
        )),
    }
}

pub(crate) fn ub(command: UbCommand) -> Result<()> {
    match command {
        UbCommand::Init(i) => init(*i),
        UbCommand::Update(u) => update(*u),
        UbCommand::RotateKey(d) => {
            let m = venn_ub::rotate_key(&d.dataset, d.database.as_deref())?;
            eprintln!(
                "venn ub: the dataset's key is now of epoch {}: {} keys published under it; \
                 clients download the whole set again",
                m.epoch, m.items
            );
            Ok(())
        }
        UbCommand::Serve(s) => serve(*s),
        UbCommand::Sync(s) => {
            let synced = ub_client::sync(&client_args(s.client)?)?;
            tell_sync(&synced);
            Ok(())
        }
        UbCommand::Query(q) => query(*q),
    }
}

fn init(i: InitCli) -> Result<()> {
    let opts = i.keys.settings.key_options()?;
    if opts.format == Format::Parquet {
        return Err(Error::Usage(
            "`venn ub` reads CSV files or files of lines, not Parquet".into(),
        ));
    }
    let opts = with_labels(opts, &i.labels, i.label_len);
    let input = read_input(i.keys.settings.input()?, &opts)?;
    let items: Vec<&[u8]> = input.keys.iter().collect();
    let max_items = (i.max_items)
        .unwrap_or_else(|| (1u64 << 24).max(2 * items.len() as u64).next_power_of_two());
    let labels = i
        .labels
        .label_column
        .as_ref()
        .map(|_| labels_of(&input))
        .transpose()?;
    let label_len = match (&input.layout, i.label_len) {
        (_, Some(len)) => Some(len),
        (Some(layout), None) => Some(label_room(layout)?),
        (None, None) => None,
    };
    let settings = Settings {
        max_items,
        max_query: i.max_query,
        form: input.form,
        label_len,
        modes: match i.mode.as_str() {
            "fhe" => Modes::Fhe,
            "both" => Modes::Both,
            _ => Modes::Cache,
        },
    };
    let (m, how) = venn_ub::init(
        &i.dataset.dataset,
        i.dataset.database.as_deref(),
        &settings,
        &items,
        labels.as_deref(),
    )?;
    if how == venn_ub::Init::Resumed {
        eprintln!(
            "venn ub: took up an init interrupted before its first publish: published the \
             keys its store held ({}), not those of --input",
            m.items
        );
    }
    if input.duplicates > 0 {
        eprintln!(
            "venn ub: {} rows repeated a key already read; each key is held once",
            input.duplicates
        );
    }
    eprintln!(
        "venn ub: made the dataset in {}: {} keys ({}), up to {max_items}, queries of up to \
         {} keys; {}",
        i.dataset.dataset.display(),
        m.items,
        m.form(),
        m.max_query,
        published(&m)
    );
    Ok(())
}

/// What a manifest publishes, for the operator.
fn published(m: &Manifest) -> String {
    let labels = match &m.labels {
        Some(l) => format!(
            ", labels of up to {} bytes in a table of {} bytes and {} deltas",
            l.len,
            l.table.bytes,
            l.deltas.len()
        ),
        None => String::new(),
    };
    let fhe = match &m.fhe {
        Some(f) => {
            let databases: Vec<String> = (f.databases.iter())
                .map(|d| format!("{} of {} bytes", d.set, d.file.bytes))
                .collect();
            format!(
                ", ub-fhe databases ({}) and {} deltas{}",
                databases.join(", "),
                f.deltas.len(),
                if f.tags { "" } else { " (tags not served)" }
            )
        }
        None => String::new(),
    };
    format!(
        "published version {} of epoch {}, a tag set of {} bytes{labels}{fhe}",
        m.version, m.epoch, m.tags.bytes
    )
}

/// Key options that also read `labels`' column, its values of up to `len` bytes (or
/// any length, `len` chosen from the longest).
fn with_labels(opts: KeyOptions, labels: &LabelCli, len: Option<u8>) -> KeyOptions {
    let reveal_columns = (labels.label_column.iter())
        .map(|name| Revealed {
            name: name.clone(),
            width: len.map(u16::from),
        })
        .collect();
    KeyOptions {
        reveal_columns,
        ..opts
    }
}

/// The room a dataset's labels get where `--label-len` is not given: the width the
/// longest label read was rounded to, at most 64.
fn label_room(layout: &Layout) -> Result<u8> {
    let width = layout.columns.first().map_or(0, |(_, w)| *w);
    match u8::try_from(width.max(1)) {
        Ok(len) if usize::from(len) <= MAX_LABEL => Ok(len),
        _ => Err(Error::Usage(format!(
            "labels of up to {MAX_LABEL} bytes: --label-column holds a longer one"
        ))),
    }
}

/// Each of `input`'s keys' label, from the column its options revealed: refused where a
/// key's rows give it two.
fn labels_of(input: &Input) -> Result<Vec<&[u8]>> {
    let (Some(layout), Some((records, width))) = (&input.layout, input.keys.records()) else {
        return Ok(vec![&[][..]; input.keys.len()]);
    };
    let mut labels = Vec::with_capacity(input.keys.len());
    let mut values = Vec::new();
    for record in records.chunks(width) {
        layout.decode(record, &mut values)?;
        labels.push(values[0]);
    }
    let (of, repeated) = input.keys.repeated_records();
    for (&key, record) in of.iter().zip(repeated.chunks(width)) {
        if record != &records[key as usize * width..][..width] {
            return Err(Error::Usage(format!(
                "the key {:?} has rows of two labels: a key's rows must agree on its label",
                String::from_utf8_lossy(input.keys.get(key as usize))
            )));
        }
    }
    Ok(labels)
}

fn update(u: UpdateCli) -> Result<()> {
    let dataset = &u.dataset.dataset;
    let manifest = Manifest::read(dataset)?;
    let label_len = manifest.labels.as_ref().map(|l| l.len);
    if label_len.is_some() != u.labels.label_column.is_some() && u.upsert.is_some() {
        return Err(Error::Usage(match label_len {
            Some(_) => {
                "the dataset's keys carry labels: name --upsert's with --label-column".into()
            }
            None => "the dataset's keys carry no labels (--label-column at `venn ub init`)".into(),
        }));
    }
    let opts = KeyOptions {
        format: match u.format.as_str() {
            "lines" => Format::Lines,
            _ => Format::Csv,
        },
        columns: u.column,
        delimiter: u.delimiter,
        trim: manifest.trim,
        lowercase: manifest.lowercase,
        ..KeyOptions::default()
    };
    let read = |path: &Option<PathBuf>, opts: &KeyOptions| match path {
        Some(path) => read_input(path, opts).map(Some),
        None => Ok(None),
    };
    let upsert_opts = with_labels(opts.clone(), &u.labels, label_len);
    let (upserts, deletes) = (read(&u.upsert, &upsert_opts)?, read(&u.delete, &opts)?);
    let labels = match (&upserts, label_len) {
        (Some(input), Some(_)) => Some(labels_of(input)?),
        (None, Some(_)) => Some(Vec::new()),
        _ => None,
    };
    for input in upserts.iter().chain(&deletes) {
        if input.form != manifest.form() {
            return Err(Error::Usage(format!(
                "the dataset's keys are of {} columns, these of {}: name as many with --column",
                manifest.columns, input.form.columns
            )));
        }
    }
    fn keys(input: &Option<venn_app::input::Input>) -> Vec<&[u8]> {
        input.iter().flat_map(|i| i.keys.iter()).collect()
    }
    let (up, del) = (keys(&upserts), keys(&deletes));
    let database = u.dataset.database.as_deref();
    let (applied, m) = venn_ub::update(dataset, database, &up, labels.as_deref(), &del)?;
    let relabeled = match label_len {
        Some(_) => format!(", relabelled {}", applied.relabeled),
        None => String::new(),
    };
    eprintln!(
        "venn ub: added {} keys ({} held already{relabeled}), removed {} ({} not held); {} \
         keys, {}",
        applied.inserted,
        applied.present,
        applied.deleted,
        applied.absent,
        m.items,
        published(&m)
    );
    Ok(())
}

fn serve(s: ServeCli) -> Result<()> {
    venn_service::logs::init().map_err(|e| Error::Usage(e.to_string()))?;
    let args = ServeArgs {
        dir: s.dataset,
        listen: s.listen,
        transport: s.tls.settings.tls.clone().load()?,
        timeout: Duration::from_secs(s.timeout),
        session_limit: Duration::from_secs(s.session_timeout),
        max_sessions: s.max_sessions as usize,
        burst: s.rate_burst,
        per_day: s.rate_per_day,
        grace: Duration::from_secs(s.grace),
        sessions: s.sessions,
        plaintext_bytes: s.plaintext_cache_mib.saturating_mul(1 << 20),
    };
    venn_ub::serve::serve(args, |addr| {
        // Machine-readable first (tests read it).
        out!("listening {addr}");
    })
}

fn client_args(c: ClientCli) -> Result<ClientArgs> {
    Ok(ClientArgs {
        connect: c.connect,
        transport: c.tls.settings.tls.clone().load()?,
        timeout: Duration::from_secs(c.timeout),
        session_timeout: Duration::from_secs(c.session_timeout),
        state: c.state,
        max_tags: c.max_tags,
        mode: match c.mode.as_str() {
            "cache" => QueryMode::Cache,
            "fhe" => QueryMode::Fhe,
            _ => QueryMode::Auto,
        },
    })
}

/// Tells the user what a sync did, after its warning if any.
fn tell_sync(s: &Synced) {
    if let Some(warning) = &s.warning {
        eprintln!("venn ub: warning: {warning}");
    }
    eprintln!("venn ub: {}", describe_sync(s));
}

/// What a sync did, for the user.
fn describe_sync(s: &Synced) -> String {
    let d = &s.description.cache;
    let what = match s.current {
        true => "was current",
        false => "brought up to date",
    };
    format!(
        "the dataset's tag set {what}: {} keys, version {} of epoch {}; {} bytes received",
        d.len, d.version, d.epoch, s.received
    )
}

fn query(q: QueryCli) -> Result<()> {
    let opts = q.keys.settings.key_options()?;
    let input = q.keys.settings.input()?.to_path_buf();
    if let Some(output) = &q.output {
        let mut inputs: Vec<&Path> = vec![&input];
        inputs.extend(q.client.state.as_deref());
        check_output_path(output, "--output", &inputs)?;
    }
    let mismatch = q.keys.settings.spec.key_mismatch;
    let args = client_args(q.client)?;
    let got = ub_client::query(&args, &input, &opts, mismatch, q.output.as_deref())?;
    if let Some(warning) = &got.warning {
        eprintln!("venn ub: warning: {warning}");
    }
    match got.mode {
        QueryMode::Fhe => {
            let d = &got.synced.description.cache;
            eprintln!(
                "venn ub: queried in ub-fhe: version {} of epoch {} of the dataset; {} bytes \
                 received",
                d.version, d.epoch, got.synced.received
            );
        }
        _ => tell_sync(&got.synced),
    }
    let rows = match &q.output {
        Some(path) => format!("; {} rows written to {}", got.rows, path.display()),
        None => String::new(),
    };
    eprintln!(
        "venn ub: {} of {} keys are in the dataset{rows}",
        got.matched, got.keys
    );
    Ok(())
}
