//! An unbalanced-PSI client (`venn ub sync`, `venn ub query`): it keeps a dataset's tag
//! set (and label table, where its items carry labels) in a state file between runs,
//! brings it up to date from the server (deltas, or the whole set), and looks its keys up
//! with one OPRF round per query's worth of them ([`venn::unbalanced::link`]); its
//! matched rows are written as `venn receive` writes its own, with a `label` column
//! where the dataset's items carry labels (as a join adds a peer's column).
//!
//! The state file holds the dataset's description, its tag set and its label table
//! (`STATE_MAGIC`, the description's length (u32) and bytes, the tag set's length (u64)
//! and wire form, the table's wire form to the end), replaced whole when it changes; it is read back as strictly as a download, since anything may have touched it.
//! A file that does not open with the magic is not ours: refused, never replaced (an
//! empty one is taken as no state yet). One that
//! does but does not read (cut short, altered) is replaced by a download of the whole set,
//! with a warning.

use crate::columns::Layout;
use crate::input::source::Matching;
use crate::input::{read_input, Input, KeyOptions};
use crate::join::{JoinedRows, Shape};
use crate::sink::write_rows;
use crate::transport::Transport;
use std::path::{Path, PathBuf};
use std::time::Duration;
use venn::crypto::Prg;
use venn::net::Channel;
use venn::session::run_plan::KeyMismatch;
use venn::unbalanced::cache::CacheClient;
use venn::unbalanced::label_table::LabelTable;
use venn::unbalanced::link::{Description, Session};
use venn::util::files::write_atomically;
use venn::{Error, Result};

/// The opening of a state file.
const STATE_MAGIC: &[u8; 16] = b"venn-ub-state-01";

/// The largest dataset a client downloads the tags of unless told otherwise, in keys
/// (2^28: about 1.7 GiB of tags).
pub const DEFAULT_MAX_TAGS: u64 = 1 << 28;

/// How long a client's session may take unless told otherwise, in seconds: a whole tag
/// set's download included.
pub const SESSION_SECONDS: u64 = 3600;

/// Where a client's server is and what it keeps.
#[derive(Clone, Debug)]
pub struct ClientArgs {
    /// The server's address.
    pub connect: String,
    /// How the link is secured.
    pub transport: Transport,
    /// How long the server may take for each message.
    pub timeout: Duration,
    /// How long the whole session may take (a download of the whole set included), however
    /// the server paces its messages.
    pub session_timeout: Duration,
    /// The state file, if the tag set is kept between runs.
    pub state: Option<PathBuf>,
    /// The most tags this client downloads.
    pub max_tags: u64,
    /// How it queries.
    pub mode: QueryMode,
}

/// How a client queries a dataset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryMode {
    /// `ub-cache` where the dataset publishes its tags and either this client keeps them
    /// (a state file) or the dataset does not serve `ub-fhe`; `ub-fhe` otherwise.
    Auto,
    /// `ub-cache`: the tags downloaded (or brought up to date), looked up locally.
    Cache,
    /// `ub-fhe`: nothing downloaded; the keys' OPRF values sent encrypted.
    Fhe,
}

impl QueryMode {
    /// The mode a query of the dataset `description` describes takes, by a client that
    /// keeps its tags between runs if `keeps`: refused where the dataset does not serve
    /// the mode asked for.
    fn of(self, description: &Description, keeps: bool) -> Result<QueryMode> {
        let (tags, fhe) = (description.tags, !description.fhe.is_empty());
        match self {
            QueryMode::Auto if tags && (keeps || !fhe) => Ok(QueryMode::Cache),
            QueryMode::Auto => Ok(QueryMode::Fhe),
            QueryMode::Cache if !tags => Err(Error::Usage(
                "the dataset does not publish its tags: query it in ub-fhe (--mode fhe)".into(),
            )),
            QueryMode::Fhe if !fhe => Err(Error::Usage(
                "the dataset is not served in ub-fhe: query it in ub-cache (--mode cache)".into(),
            )),
            mode => Ok(mode),
        }
    }
}

/// What a sync did.
#[derive(Clone, Debug)]
pub struct Synced {
    /// What the server published.
    pub description: Description,
    /// Whether the tag set held before was current (nothing downloaded).
    pub current: bool,
    /// Bytes received.
    pub received: u64,
    /// A warning for the user (a damaged state file replaced).
    pub warning: Option<String>,
}

/// What a query found.
#[derive(Clone, Debug)]
pub struct Queried {
    /// The sync before it (in `ub-fhe`, none: nothing current, nothing downloaded but the
    /// answers, counted in `received`).
    pub synced: Synced,
    /// The mode it took: `ub-cache` or `ub-fhe`.
    pub mode: QueryMode,
    /// Distinct keys looked up.
    pub keys: usize,
    /// Of them, those in the dataset.
    pub matched: usize,
    /// Rows written to the output.
    pub rows: usize,
    /// A warning for the user (keys taken otherwise than the dataset's).
    pub warning: Option<String>,
}

/// What a state file held.
enum Held {
    /// No file.
    Nothing,
    /// A tag set.
    Set(Box<CacheClient>),
    /// Ours, but it does not read: why.
    Damaged(String),
}

/// The tag set kept in `path`, if there is one; a file that is not a state file is
/// refused.
fn load_state(path: &Path) -> Result<Held> {
    let bytes = match std::fs::read(path) {
        // An empty file (one made for us, `mktemp`) holds nothing yet.
        Ok(bytes) if bytes.is_empty() => return Ok(Held::Nothing),
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Held::Nothing),
        Err(e) => return Err(Error::file("read", path)(e)),
    };
    let Some(rest) = bytes.strip_prefix(STATE_MAGIC) else {
        return Err(Error::State(format!(
            "{} is not a `venn ub` state file (left as it is): give a new file or one a \
             `venn ub` client wrote",
            path.display()
        )));
    };
    let read = || {
        let short = || Error::State("cut short".into());
        let (len, rest) = rest.split_first_chunk::<4>().ok_or_else(short)?;
        let len = u32::from_le_bytes(*len) as usize;
        let (description, rest) = (rest.get(..len).ok_or_else(short)?, &rest[len..]);
        let description = Description::from_bytes(description)?;
        let (tags_len, rest) = rest.split_first_chunk::<8>().ok_or_else(short)?;
        let tags_len = usize::try_from(u64::from_le_bytes(*tags_len)).map_err(|_| short())?;
        let (tags, labels) = (rest.get(..tags_len).ok_or_else(short)?, &rest[tags_len..]);
        let labels = match description.cache.labels {
            Some(_) => Some(LabelTable::from_bytes(labels.to_vec(), u64::MAX)?),
            None if labels.is_empty() => None,
            None => return Err(Error::State("bytes after the tag set".into())),
        };
        CacheClient::new(description.cache, tags, labels)
    };
    Ok(match read() {
        Ok(set) => Held::Set(Box::new(set)),
        Err(e) => Held::Damaged(format!(
            "the state file {} does not read ({e}): replaced by the whole set",
            path.display()
        )),
    })
}

/// Keeps `client`'s tag set and label table in `path`, replacing what was there whole.
fn save_state(path: &Path, description: &Description, client: &CacheClient) -> Result<()> {
    let description = description.to_bytes();
    write_atomically(path, |w| {
        w.write_all(STATE_MAGIC)?;
        w.write_all(&(description.len() as u32).to_le_bytes())?;
        w.write_all(&description)?;
        w.write_all(&(client.tags().len() as u64).to_le_bytes())?;
        w.write_all(client.tags())?;
        w.write_all(client.labels().map_or(&[][..], LabelTable::wire))
    })
}

/// In `session` (whose description `check` accepted), the tag set brought up to date,
/// and saved if it changed.
fn synced(args: &ClientArgs, session: &mut Session<'_>) -> Result<(CacheClient, Synced)> {
    let (held, warning) = match args.state.as_deref().map(load_state).transpose()? {
        Some(Held::Set(set)) => (Some(*set), None),
        Some(Held::Damaged(why)) => (None, Some(why)),
        Some(Held::Nothing) | None => (None, None),
    };
    let description = session.description().clone();
    let before = held.as_ref().map(|h| h.descriptor().clone());
    let client = session.sync(held, args.max_tags)?;
    let current = before.as_ref() == Some(client.descriptor());
    if let (Some(path), false) = (&args.state, current) {
        save_state(path, &description, &client)?;
    }
    let synced = Synced {
        description,
        current,
        received: 0,
        warning,
    };
    Ok((client, synced))
}

/// The link to the server, its session bounded from now.
fn connect(args: &ClientArgs) -> Result<Box<dyn Channel>> {
    let deadline = std::time::Instant::now() + args.session_timeout;
    let mut chan = (args.transport).connect(&args.connect, args.timeout, &mut |_| {})?;
    chan.set_deadline(Some(deadline));
    Ok(chan)
}

/// `venn ub sync`: the tag set up to date in the state file.
pub fn sync(args: &ClientArgs) -> Result<Synced> {
    let mut chan = connect(args)?;
    let mut session = Session::open(&mut *chan)?;
    let (_, mut synced) = synced(args, &mut session)?;
    session.close()?;
    synced.received = chan.traffic().received;
    Ok(synced)
}

/// `venn ub query`: which of `input`'s keys (taken as `keys` says; refused, unless
/// `mismatch` allows it, if the dataset's were taken otherwise) the dataset holds; their
/// rows written to `output`, if given, each with its key's label where the dataset's
/// items carry labels.
pub fn query(
    args: &ClientArgs,
    input: &Path,
    keys: &KeyOptions,
    mismatch: KeyMismatch,
    output: Option<&Path>,
) -> Result<Queried> {
    let input = read_input(input, keys)?;
    let (mut queried, found) = query_input(args, &input, mismatch)?;
    let Some(path) = output else {
        return Ok(queried);
    };
    queried.rows = match &found.labels {
        None => {
            let matching = Matching {
                source: &input,
                intersection: &found.indices,
            };
            write_rows(path, &matching, 1)?
        }
        Some(labels) => {
            let len = queried.synced.description.cache.labels.unwrap_or(0);
            let layout = Layout::new(vec![(LABEL_COLUMN.into(), u16::from(len))])?;
            let mut records = vec![0u8; layout.width() * labels.len()];
            for (label, out) in labels.iter().zip(records.chunks_mut(layout.width())) {
                layout.encode(&[label], out);
            }
            let joined = JoinedRows {
                source: &input,
                intersection: &found.indices,
                records: &records,
                rows: &vec![1; labels.len()],
                shape: Shape {
                    delimiter: keys.delimiter,
                    ..Shape::of_keys(Some(&layout))
                },
            };
            write_rows(path, &joined, 1)?
        }
    };
    Ok(queried)
}

/// The column a matched row's label is written in.
pub const LABEL_COLUMN: &str = "label";

/// The keys a query found.
#[derive(Clone, Debug, Default)]
pub struct Found {
    /// The indices of the keys the dataset holds, ascending.
    pub indices: Vec<usize>,
    /// Their labels, in the same order, where the dataset's items carry labels.
    pub labels: Option<Vec<Vec<u8>>>,
}

/// Which of `input`'s distinct keys the dataset holds (refused, unless `mismatch` allows
/// it, if the dataset's keys were taken otherwise): what was done, and the keys found
/// with their labels. No rows are written (`rows` is 0).
pub fn query_input(
    args: &ClientArgs,
    input: &Input,
    mismatch: KeyMismatch,
) -> Result<(Queried, Found)> {
    let mut warning = None;
    let mut check = |description: &Description| {
        let theirs = description.form;
        if theirs == input.form {
            return Ok(());
        }
        let why = format!(
            "the dataset's keys were taken with {theirs}, ours with {}, so equal keys may \
             not match (--trim, --lowercase and the number of --column must agree)",
            input.form
        );
        match mismatch {
            KeyMismatch::Refuse => Err(Error::Handshake(format!(
                "{why}; --allow-key-mismatch queries anyway"
            ))),
            KeyMismatch::Warn => {
                warning = Some(why);
                Ok(())
            }
        }
    };
    let mut chan = connect(args)?;
    let mut session = Session::open(&mut *chan)?;
    let description = session.description().clone();
    check(&description)?;
    let mode = args.mode.of(&description, args.state.is_some())?;
    let items: Vec<&[u8]> = input.keys.iter().collect();
    let mut prg = Prg::from_entropy();
    let (found, mut synced) = match mode {
        QueryMode::Fhe => {
            let found = session.query_fhe(&items, &mut prg)?;
            let synced = Synced {
                description,
                current: false,
                received: 0,
                warning: None,
            };
            (found, synced)
        }
        _ => {
            let (client, synced) = synced(args, &mut session)?;
            (session.query(&client, &items, &mut prg)?, synced)
        }
    };
    session.close()?;
    synced.received = chan.traffic().received;
    let labeled = synced.description.cache.labels.is_some();
    let mut result = Found {
        labels: labeled.then(Vec::new),
        ..Found::default()
    };
    for (i, label) in found.into_iter().enumerate() {
        if let Some(label) = label {
            result.indices.push(i);
            if let Some(labels) = &mut result.labels {
                labels.push(label);
            }
        }
    }
    let queried = Queried {
        synced,
        mode,
        keys: items.len(),
        matched: result.indices.len(),
        rows: 0,
        warning,
    };
    Ok((queried, result))
}
