//! `venn` for Python: the native module `venn._venn` behind the pure-Python package in
//! `python/venn/` (which documents and types the API).
//!
//! A Python party is the CLI's party on keys held in memory: the same transport (TCP,
//! TLS 1.3 with mutual authentication unless both parties are on this machine), the same
//! key normalisation and deduplication, the same bucket agreement with the peer — so a
//! Python party runs against a `venn send`/`venn receive` on the other side. The GIL is
//! released for the whole run; the progress callback takes it back for each phase.

mod cloud;
mod lanes;
mod result;
mod ub;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFloat, PyString};
use result::{Learning, RunResult};
use std::path::PathBuf;
use std::sync::Mutex;
use venn::protocols::Progress;
use venn::session::run_plan::Align;
use venn::session::Role;
use venn_app::columns::parse_revealed;
use venn_app::input::memory::KeysInMemory;
use venn_app::input::{Format, KeyOptions};
use venn_app::join::JoinKind;
use venn_app::party::{run_keys, run_party, Link, PartyArgs, PeerAddr};
use venn_app::run_options::{self, Given, Group, Kind, RunOption, RunSettings};
use venn_app::transport::Transport;

create_exception!(venn, VennError, PyException, "Any error of a venn run.");
create_exception!(
    venn,
    UsageError,
    VennError,
    "Options or inputs that cannot run (nothing was sent to the peer)."
);
create_exception!(
    venn,
    NetworkError,
    VennError,
    "The peer could not be reached, timed out, closed the link, or TLS failed."
);
create_exception!(
    venn,
    PeerError,
    VennError,
    "The peer disagreed on the setup, broke the protocol, or gave up."
);
create_exception!(
    venn,
    ServiceError,
    VennError,
    "A Thunder request refused, by the service or by the client's own checks before it (the \
     message says why), or the service failed."
);
create_exception!(
    venn,
    CheatingDetected,
    PeerError,
    "A check that only a cheating peer can fail, failed: nothing is output."
);

/// A venn error as the Python exception of its kind.
pub(crate) fn to_py(e: venn::Error) -> PyErr {
    use venn::Error as E;
    let text = e.to_string();
    match e {
        E::Usage(_) | E::Params(_) | E::Memory(_) | E::Input { .. } | E::File { .. } => {
            UsageError::new_err(text)
        }
        E::Io(_) | E::Address(_) | E::Timeout(_) | E::PeerClosed(_) | E::Tls(_) => {
            NetworkError::new_err(text)
        }
        E::Protocol { .. } | E::Handshake(_) | E::Integrity(_) | E::PeerAborted(_) => {
            PeerError::new_err(text)
        }
        E::CheatingDetected(_) => CheatingDetected::new_err(text),
        _ => VennError::new_err(text),
    }
}

/// A key as Python gives it, borrowed: the object, kept alive, and a view of its bytes —
/// a `bytes`'s own buffer, or the UTF-8 form of a `str`, which CPython makes once and keeps
/// inside the object (for ASCII text, the text itself). Nothing is copied per key.
pub(crate) struct Key {
    _owner: Py<PyAny>,
    bytes: *const u8,
    len: usize,
}

// SAFETY: the view is of an immutable object's buffer, alive while `_owner` holds the object;
// neither `bytes` nor a `str`'s UTF-8 form is ever changed or freed before the object is.
unsafe impl Send for Key {}
// SAFETY: as for `Send`: shared, the view is only read.
unsafe impl Sync for Key {}

extern "C" {
    /// In CPython's API since 3.3 and in its stable ABI since 3.10 (so pyo3 offers it to
    /// abi3 builds from 3.10 only); 3.9 exports it with the same signature. Without it an
    /// abi3-py39 module copies each `str` into a new `bytes`: 0.1 s per million keys.
    fn PyUnicode_AsUTF8AndSize(
        unicode: *mut pyo3::ffi::PyObject,
        size: *mut pyo3::ffi::Py_ssize_t,
    ) -> *const std::ffi::c_char;
}

impl FromPyObject<'_, '_> for Key {
    type Error = PyErr;

    /// By type checks, text first (a failed extraction makes an error object: trying
    /// bytes first cost 1.2 µs per text key, more than the protocol's own time per key).
    fn extract(obj: Borrowed<'_, '_, PyAny>) -> PyResult<Self> {
        if let Ok(s) = obj.cast::<PyString>() {
            let mut len: pyo3::ffi::Py_ssize_t = 0;
            // SAFETY: `s` is a live `str` and the GIL is held; the result is null (with a
            // Python error set, e.g. for a lone surrogate) or `len` bytes inside `s`.
            let bytes = unsafe { PyUnicode_AsUTF8AndSize(s.as_ptr(), &mut len) };
            if bytes.is_null() {
                return Err(PyErr::fetch(obj.py()));
            }
            return Ok(Key {
                _owner: obj.to_owned().unbind(),
                bytes: bytes.cast(),
                len: len as usize,
            });
        }
        if let Ok(b) = obj.cast::<PyBytes>() {
            let view = b.as_bytes();
            return Ok(Key {
                bytes: view.as_ptr(),
                len: view.len(),
                _owner: obj.to_owned().unbind(),
            });
        }
        // A missing value (None, a float NaN, pandas' NA) is an empty key, as a blank CSV
        // cell is: skipped with skip_empty=True, otherwise an error naming its position.
        let missing = obj.is_none()
            || obj.cast::<PyFloat>().is_ok_and(|f| f.value().is_nan())
            || obj.get_type().name()? == "NAType";
        if missing {
            return Ok(Key {
                _owner: obj.to_owned().unbind(),
                bytes: [].as_ptr(),
                len: 0,
            });
        }
        Err(PyTypeError::new_err(format!(
            "a key is str or bytes (or a missing value: None, NaN), not {}",
            obj.get_type().name()?
        )))
    }
}

impl AsRef<[u8]> for Key {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: see `Key`: `len` bytes at `bytes`, alive and unchanged while `self` is.
        unsafe { std::slice::from_raw_parts(self.bytes, self.len) }
    }
}

/// How keys given in memory are normalised.
pub(crate) fn key_options(trim: bool, lowercase: bool, skip_empty: bool) -> KeyOptions {
    KeyOptions {
        format: Format::Lines,
        trim,
        lowercase,
        skip_empty,
        ..KeyOptions::default()
    }
}

/// How to reach the peer: exactly one of `connect` and `listen`.
pub(crate) fn peer_addr(connect: Option<String>, listen: Option<String>) -> PyResult<PeerAddr> {
    match (connect, listen) {
        (Some(addr), None) => Ok(PeerAddr::Connect(addr)),
        (None, Some(addr)) => Ok(PeerAddr::Listen(addr)),
        _ => Err(UsageError::new_err("give one of connect= and listen=")),
    }
}

/// Tells the `on_listening` callback, if any, the address listened on.
pub(crate) fn tell(on_listening: &Option<Py<PyAny>>, addr: std::net::SocketAddr) {
    if let Some(f) = on_listening {
        Python::attach(|py| {
            if let Err(e) = f.call1(py, (addr.to_string(),)) {
                // A callback's failure does not stop the run; Python hears of it.
                e.write_unraisable(py, Some(f.bind(py)));
            }
        });
    }
}

/// "send" or "receive" as a role.
pub(crate) fn role_of(role: &str) -> PyResult<Role> {
    match role {
        "send" => Ok(Role::Sender),
        "receive" => Ok(Role::Receiver),
        _ => Err(UsageError::new_err("role is 'send' or 'receive'")),
    }
}

/// Whether a callable with a link of its own takes `option`: the TLS group's, and those
/// named in `also`.
pub(crate) fn link_option(option: &RunOption, also: &[&str]) -> bool {
    option.group == Group::Tls || also.contains(&option.name)
}

/// What a callable with a link of its own (a lane's worker, a Thunder pairing) takes of
/// the run options: the table's TLS group, and the options named in `also`, read from its
/// keywords as a party's are ([`run_settings`]); the TLS files loaded.
pub(crate) fn link_settings(
    options: Option<&Bound<'_, PyDict>>,
    also: &[&str],
) -> PyResult<(RunSettings, Transport)> {
    let (settings, _) = run_settings(options, |o| link_option(o, also))?;
    let transport = settings.tls.clone().load().map_err(to_py)?;
    Ok((settings, transport))
}

/// The run options Python gave as keywords, read through the table every front end
/// shares ([`venn_app::run_options`]): each keyword is an option's flag with `_` for `-`,
/// `None` its default; another keyword is refused as Python refuses one. Returns the
/// settings and the names of the keywords given. A callable that takes only some of the
/// options (a lane's worker, a Thunder pairing: the TLS group) names them by `takes`.
pub(crate) fn run_settings(
    options: Option<&Bound<'_, PyDict>>,
    takes: impl Fn(&RunOption) -> bool,
) -> PyResult<(RunSettings, Vec<String>)> {
    let mut settings = RunSettings::default();
    let mut given = Vec::new();
    for (keyword, value) in options.into_iter().flat_map(|d| d.iter()) {
        let keyword: String = keyword.extract()?;
        let option = run_options::by_keyword(&keyword)
            .filter(|o| takes(o))
            .ok_or_else(|| {
                PyTypeError::new_err(format!("got an unexpected keyword argument '{keyword}'"))
            })?;
        if value.is_none() {
            continue;
        }
        let wrong = |e: PyErr| PyTypeError::new_err(format!("{keyword}=: {e}"));
        let value = match option.kind {
            Kind::Switch => Given::Switch(value.extract().map_err(wrong)?),
            Kind::Number { .. } | Kind::Size => Given::Number(value.extract().map_err(wrong)?),
            Kind::Seconds => Given::Seconds(
                run_options::seconds(value.extract().map_err(wrong)?)
                    .map_err(|e| UsageError::new_err(format!("{keyword} is {e}")))?,
            ),
            Kind::Text | Kind::Choice(_) => Given::Text(value.extract().map_err(wrong)?),
            Kind::Path => Given::Path(value.extract().map_err(wrong)?),
            Kind::List => Given::List(match value.extract::<String>() {
                Ok(one) => vec![one],
                Err(_) => value.extract().map_err(wrong)?,
            }),
        };
        settings.set(option, value).map_err(to_py)?;
        given.push(keyword);
    }
    // Refused at once; bounded to the cores where the party (or each lane) runs.
    venn_app::threads::check(settings.spec.threads).map_err(to_py)?;
    Ok((settings, given))
}

/// The settings a party runs with ([`Party::settings`]).
#[pyclass(frozen, get_all, module = "venn")]
struct Settings {
    protocol: String,
    threads: usize,
    timeout: f64,
    max_peer_items: u64,
    max_memory: u64,
}

/// Calls a Python callable with each phase's name.
pub(crate) struct PyProgress(Py<PyAny>);

impl Progress for PyProgress {
    fn phase(&self, name: &str) {
        Python::attach(|py| {
            if let Err(e) = self.0.call1(py, (name,)) {
                // A callback's failure does not stop the run; Python hears of it.
                e.write_unraisable(py, Some(self.0.bind(py)));
            }
        });
    }
}

/// One party of a run, set up: its options checked, its keys read (`venn.send` and
/// `venn.receive` make one and `run` it; `venn.ray` runs it in lanes). Used once.
#[pyclass(module = "venn._venn")]
pub(crate) struct Party {
    /// Behind a lock: a Python object may be reached from any thread.
    setup: Mutex<Option<Setup>>,
}

/// What a party needs to run.
pub(crate) struct Setup {
    pub link: Link,
    pub role: Role,
    pub both: bool,
    pub source: Source,
    pub on_listening: Option<Py<PyAny>>,
    pub progress: Option<PyProgress>,
}

/// Where a party's keys are.
pub(crate) enum Source {
    /// Given in memory, read, with the peer's columns asked for (`peer_columns=`).
    Keys {
        input: KeysInMemory,
        peer_columns: Vec<String>,
    },
    /// In a file, read when the party runs, as `venn send --input` reads it (`output`:
    /// where the matched rows go, with the file's delimiter).
    File {
        input: PathBuf,
        output: Option<PathBuf>,
        keys: KeyOptions,
        /// `peer_columns=`: the peer's columns added to each matched row.
        peer_columns: Vec<String>,
        /// `join=`: which rows the output holds.
        join: JoinKind,
        /// `align=`: how both parties order their outputs.
        align: Align,
    },
}

impl Party {
    /// The setup, taken: a party runs once.
    pub(crate) fn take(&self) -> PyResult<Setup> {
        let taken = self.setup.lock().unwrap_or_else(|e| e.into_inner()).take();
        taken.ok_or_else(|| UsageError::new_err("this party has run"))
    }
}

#[pymethods]
impl Party {
    /// See `venn.send` and `venn.send_file` for the options: `items` (keys in memory, with
    /// `values` in `value_columns`) or `input=` (a file); every run option is a keyword
    /// named as its flag, with `_` for `-` ([`run_settings`]).
    #[new]
    #[pyo3(signature = (
        role, items, *, values=None, value_columns=1, reveal=None, on_listening=None,
        progress=None, **options,
    ))]
    #[allow(clippy::too_many_arguments)] // Python's keywords beside the run options.
    fn new(
        py: Python<'_>,
        role: &str,
        items: Option<Vec<Key>>,
        values: Option<Vec<u64>>,
        value_columns: usize,
        reveal: Option<&Bound<'_, PyDict>>,
        on_listening: Option<Py<PyAny>>,
        progress: Option<Py<PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let role = role_of(role)?;
        let (settings, given) = run_settings(options, |_| true)?;
        let link = settings.link().map_err(to_py)?;
        let source = match items {
            Some(items) => {
                let for_files = (given.iter()).find(|k| {
                    run_options::by_keyword(k)
                        .is_some_and(|o| o.python == run_options::Python::File)
                });
                if let Some(name) = for_files {
                    return Err(UsageError::new_err(format!(
                        "{name}= is for a party on a file (venn.send_file, venn.receive_file)"
                    )));
                }
                let mut opts = key_options(
                    settings.keys.trim,
                    settings.keys.lowercase,
                    settings.keys.skip_empty,
                );
                let (names, revealed) = revealed_columns(reveal)?;
                opts.reveal_columns = parse_revealed(&names).map_err(to_py)?;
                let read = py.detach(|| {
                    let values = values.as_deref().map(|v| (v, value_columns));
                    let revealed: Vec<&[Key]> = revealed.iter().map(Vec::as_slice).collect();
                    KeysInMemory::revealing(&items, values, &revealed, &opts)
                });
                Source::Keys {
                    input: read.map_err(to_py)?,
                    peer_columns: settings.peer_columns,
                }
            }
            None => {
                if reveal.is_some() {
                    return Err(UsageError::new_err(
                        "a file's revealed columns are named by reveal_columns=, not given as \
                         reveal=",
                    ));
                }
                if values.is_some() {
                    return Err(UsageError::new_err(
                        "a file's values are read from its value_column=, not given as values=",
                    ));
                }
                let input = (settings.input.clone())
                    .ok_or_else(|| UsageError::new_err("give the keys, or a file (input=)"))?;
                let keys = settings.key_options().map_err(to_py)?;
                Source::File {
                    input,
                    output: settings.output,
                    keys,
                    peer_columns: settings.peer_columns,
                    join: settings.join,
                    align: settings.align,
                }
            }
        };
        let both = settings.both;
        let setup = Setup {
            link,
            role,
            both,
            source,
            on_listening,
            progress: progress.map(PyProgress),
        };
        Ok(Party {
            setup: Mutex::new(Some(setup)),
        })
    }

    /// The settings this party runs with, its defaults filled in as the CLI fills its
    /// own: protocol, threads, timeout (seconds), max_peer_items, max_memory (bytes).
    #[getter]
    fn settings(&self) -> PyResult<Settings> {
        let setup = self.setup.lock().unwrap_or_else(|e| e.into_inner());
        let spec = &setup
            .as_ref()
            .ok_or_else(|| UsageError::new_err("this party has run"))?
            .link
            .spec;
        Ok(Settings {
            protocol: spec.protocol.clone(),
            threads: spec.threads,
            timeout: spec.timeout.as_secs_f64(),
            max_peer_items: spec.max_peer_items,
            max_memory: spec.max_memory,
        })
    }

    /// Runs the party with its peer.
    fn run(&self, py: Python<'_>) -> PyResult<RunResult> {
        let Setup {
            link,
            role,
            both,
            source,
            on_listening,
            progress,
        } = self.take()?;
        py.detach(|| {
            let on_bound = |addr| tell(&on_listening, addr);
            let progress = progress.as_ref().map(|p| p as &dyn Progress);
            match source {
                Source::Keys {
                    input,
                    peer_columns,
                } => {
                    let mut sink = Learning::keys(!peer_columns.is_empty());
                    let report = run_keys(
                        &link,
                        role,
                        both,
                        &input,
                        &peer_columns,
                        &mut sink,
                        progress,
                        on_bound,
                    )?;
                    Ok(RunResult::of(&report, sink.learned, None))
                }
                Source::File {
                    input,
                    output,
                    keys,
                    peer_columns,
                    join,
                    align,
                } => {
                    let args = PartyArgs {
                        link,
                        input,
                        output,
                        keys,
                        both,
                        peer_columns,
                        join,
                        align,
                        state: None,
                        bucket_rows: None,
                        bucket_dir: None,
                    };
                    let threads = venn_app::threads::within_cores(args.link.spec.threads);
                    let mut sink = Learning::file(args.output.as_deref(), threads);
                    let outcome = run_party(&args, role, &mut sink, progress, on_bound)?;
                    Ok(RunResult::of(
                        &outcome.report,
                        sink.learned,
                        outcome.written,
                    ))
                }
            }
        })
        .map_err(to_py)
    }
}

/// `reveal=`'s columns of keys given in memory: each name (`"name"` or
/// `"name:WIDTH"`, as `reveal_columns=` takes it) and its values, in the dict's order.
fn revealed_columns(reveal: Option<&Bound<'_, PyDict>>) -> PyResult<(Vec<String>, Vec<Vec<Key>>)> {
    let mut columns = (Vec::new(), Vec::new());
    for (name, values) in reveal.into_iter().flat_map(|d| d.iter()) {
        columns.0.push(name.extract::<String>()?);
        columns.1.push(values.extract::<Vec<Key>>()?);
    }
    Ok(columns)
}

/// Writes `out/venn.key` (owner-only) and `out/venn.crt`, as `venn keygen --out` does;
/// returns the certificate's fingerprint, for the peer's `peer_fingerprint`.
#[pyfunction]
#[pyo3(signature = (out, *, days=365))]
fn keygen(py: Python<'_>, out: PathBuf, days: u32) -> PyResult<String> {
    let made = py.detach(|| venn_app::keygen::keygen(&out, days));
    Ok(made.map_err(to_py)?.fingerprint)
}

/// The protocols this build runs: (name, security, paper) for each.
#[pyfunction]
fn protocols() -> Vec<(String, String, String)> {
    venn::protocols::registry()
        .iter()
        .map(|p| {
            let info = p.info();
            (
                info.name.to_owned(),
                info.security.name().to_owned(),
                info.paper.to_owned(),
            )
        })
        .collect()
}

#[pymodule]
mod _venn {
    #[pymodule_export]
    use super::cloud::{answer, CloudClient, WorkerLink};
    #[pymodule_export]
    use super::lanes::{lane_keywords, Lane, LanedRun};
    #[pymodule_export]
    use super::result::{
        Intersection, IntersectionSize, IntersectionSum, NoOutput, RunResult, Threshold,
    };
    #[pymodule_export]
    use super::ub::ub_run;
    #[pymodule_export]
    use super::{
        keygen, protocols, CheatingDetected, NetworkError, Party, PeerError, ServiceError,
        UsageError, VennError,
    };

    /// Items per uploaded chunk unless `chunk_items` says otherwise (venn-cloud's).
    #[pymodule_export]
    const DEFAULT_CHUNK_ITEMS: usize = venn_cloud::api::DEFAULT_CHUNK_ITEMS;

    /// Seconds `pair` waits for its partners unless `timeout` says otherwise (venn-cloud's).
    #[pymodule_export]
    const PAIR_TIMEOUT_SECONDS: u64 = venn_cloud::client::defaults::PAIR_TIMEOUT_SECONDS;

    /// Pre-tokens `make_pretokens` hands in unless `count` says otherwise (venn-cloud's).
    #[pymodule_export]
    const PRETOKEN_COUNT: u64 = venn_cloud::client::defaults::PRETOKEN_COUNT;

    /// Seconds `make_pretokens` waits unless `wait` says otherwise (venn-cloud's).
    #[pymodule_export]
    const PRETOKEN_WAIT_SECONDS: u64 = venn_cloud::client::defaults::PRETOKEN_WAIT_SECONDS;

    /// Seconds `result` waits for the run unless `wait` says otherwise (venn-cloud's).
    #[pymodule_export]
    const RESULT_WAIT_SECONDS: u64 = venn_cloud::client::defaults::RESULT_WAIT_SECONDS;

    #[allow(non_upper_case_globals)] // the name Python looks for: `venn._venn.__version__`
    #[pymodule_export]
    const __version__: &str = env!("CARGO_PKG_VERSION");

    /// A `VENN_CPU` that names no level stops the import, as it stops the command line.
    #[pymodule_init]
    fn init(_module: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
        venn::util::cpu::init().map(drop).map_err(super::to_py)
    }
}
