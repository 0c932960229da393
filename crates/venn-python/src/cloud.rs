//! `venn.cloud`'s native half: a client of a Thunder service (`venn cloud serve`), as the
//! `venn cloud` commands are, on keys held in memory. Documented and typed in
//! `python/venn/cloud.py`, which wraps it.

use crate::{key_options, to_py, Key, NetworkError, ServiceError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::path::PathBuf;
use std::time::Duration;
use venn_app::input::memory::KeysInMemory;
use venn_app::input::source::InputSource;
use venn_app::party::PeerAddr;
use venn_app::thunder::{self, Partners};
use venn_cloud::api::{Task, DEFAULT_CHUNK_ITEMS};
use venn_cloud::auth::WorkerIdentity;
use venn_cloud::client::{defaults, Client, DatasetKey};
use venn_cloud::http::Endpoint;

/// A service's refusal or failure as the Python exception of its kind.
fn to_py_cloud(e: venn_cloud::Error) -> PyErr {
    match e {
        venn_cloud::Error::Transport(_) => NetworkError::new_err(e.to_string()),
        e => ServiceError::new_err(e.to_string()),
    }
}

/// Seconds as a duration, refusing what is not a finite non-negative number.
fn seconds(s: f64, what: &str) -> PyResult<Duration> {
    Duration::try_from_secs_f64(s)
        .map_err(|_| crate::UsageError::new_err(format!("{what} is a number of seconds ≥ 0")))
}

/// A client of one service, signing as one identity.
#[pyclass(frozen, module = "venn._venn")]
pub struct CloudClient {
    client: Client,
}

/// The service's endpoint from the Python options.
fn service(
    server: &str,
    server_fingerprint: Option<&str>,
    server_ca: Option<PathBuf>,
    plain_http: bool,
) -> PyResult<Endpoint> {
    thunder::endpoint(server, server_fingerprint, server_ca.as_deref(), plain_http).map_err(to_py)
}

/// A key file, read (its faults are the caller's: nothing was sent).
fn load_key(path: PathBuf) -> PyResult<DatasetKey> {
    DatasetKey::load(&path).map_err(|e| crate::UsageError::new_err(e.to_string()))
}

/// A client of `endpoint` signing as the identity file `identity` (its faults, and those
/// of the endpoint's settings, are the caller's: nothing was sent).
fn client(endpoint: &Endpoint, identity: &std::path::Path) -> PyResult<Client> {
    let usage = |e: venn_cloud::Error| crate::UsageError::new_err(e.to_string());
    let identity = venn_cloud::auth::Identity::load(identity).map_err(usage)?;
    Client::new(endpoint, identity).map_err(usage)
}

#[pymethods]
impl CloudClient {
    /// A client of `server` signing with the identity file `identity`.
    #[new]
    #[pyo3(signature = (server, identity, *, server_fingerprint=None, server_ca=None, plain_http=false))]
    fn new(
        server: &str,
        identity: PathBuf,
        server_fingerprint: Option<&str>,
        server_ca: Option<PathBuf>,
        plain_http: bool,
    ) -> PyResult<Self> {
        let endpoint = service(server, server_fingerprint, server_ca, plain_http)?;
        Ok(CloudClient {
            client: client(&endpoint, &identity)?,
        })
    }

    /// Makes an identity `name` (saved to the new file `identity`) and registers it,
    /// showing `invite` if given.
    #[staticmethod]
    #[pyo3(signature = (server, identity, name, *, invite=None, server_fingerprint=None, server_ca=None, plain_http=false))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments, one per CLI option.
    fn register(
        py: Python<'_>,
        server: &str,
        identity: PathBuf,
        name: &str,
        invite: Option<&str>,
        server_fingerprint: Option<&str>,
        server_ca: Option<PathBuf>,
        plain_http: bool,
    ) -> PyResult<Self> {
        let endpoint = service(server, server_fingerprint, server_ca, plain_http)?;
        let client = py
            .detach(|| thunder::register(&endpoint, name, &identity, invite))
            .map_err(to_py)?;
        Ok(CloudClient { client })
    }

    /// The identity's name.
    #[getter]
    fn name(&self) -> &str {
        self.client.name()
    }

    /// Uploads `items` (normalised and deduplicated as a party's) as the dataset
    /// `dataset` under a new key saved to `key_file`; returns the dataset's id.
    #[pyo3(signature = (items, dataset, key_file, *, chunk_items=DEFAULT_CHUNK_ITEMS, trim=false, lowercase=false, skip_empty=false, progress=None))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments, one per CLI option.
    fn upload(
        &self,
        py: Python<'_>,
        items: Vec<Key>,
        dataset: &str,
        key_file: PathBuf,
        chunk_items: usize,
        trim: bool,
        lowercase: bool,
        skip_empty: bool,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        let opts = key_options(trim, lowercase, skip_empty);
        let input = py
            .detach(|| KeysInMemory::new(&items, None, &opts))
            .map_err(to_py)?;
        let heard = |sent: u64, total: u64| {
            if let Some(f) = &progress {
                Python::attach(|py| {
                    if let Err(e) = f.call1(py, (sent, total)) {
                        e.write_unraisable(py, Some(f.bind(py)));
                    }
                });
            }
        };
        let key = py
            .detach(|| {
                self.client.upload(
                    dataset,
                    input.keys(),
                    &input.form().to_string(),
                    &key_file,
                    chunk_items,
                    &heard,
                )
            })
            .map_err(to_py_cloud)?;
        Ok(key.dataset)
    }

    /// Links to the run's partners and gives the service this dataset's token; returns
    /// the run's id. The link's TLS is the party's keywords of the TLS group (`**tls`).
    #[pyo3(signature = (
        key_file, *, connect=None, listen=None, on_listening=None, partners=1,
        timeout=defaults::PAIR_TIMEOUT_SECONDS as f64, preprocessed=false, **tls,
    ))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments, one per CLI option.
    fn pair(
        &self,
        py: Python<'_>,
        key_file: PathBuf,
        connect: Option<String>,
        listen: Option<String>,
        on_listening: Option<Py<PyAny>>,
        partners: usize,
        timeout: f64,
        preprocessed: bool,
        tls: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<String> {
        let peer = crate::peer_addr(connect, listen)?;
        if !(1..=2).contains(&partners) || (partners == 2 && matches!(peer, PeerAddr::Connect(_))) {
            return Err(crate::UsageError::new_err(
                "partners is 1, or 2 for the listening side of a three-party run",
            ));
        }
        let timeout = seconds(timeout, "timeout")?;
        let key = load_key(key_file)?;
        let (_, transport) = crate::link_settings(tls, &[])?;
        let linked = py.detach(|| {
            Partners::link(&transport, &peer, partners, timeout, |addr| {
                crate::tell(&on_listening, addr)
            })
        });
        let partners = linked.map_err(to_py)?;
        let run = py
            .detach(|| partners.pair(&self.client, &key, preprocessed))
            .map_err(to_py_cloud)?;
        Ok(run.id)
    }

    /// Hands the service `count` one-time pre-tokens of the dataset; waits up to `wait`
    /// seconds for them to be computed (0: not at all); returns their ids.
    #[pyo3(signature = (
        key_file, count=defaults::PRETOKEN_COUNT as usize, *,
        wait=defaults::PRETOKEN_WAIT_SECONDS as f64,
    ))]
    fn make_pretokens(
        &self,
        py: Python<'_>,
        key_file: PathBuf,
        count: usize,
        wait: f64,
    ) -> PyResult<Vec<String>> {
        let wait = seconds(wait, "wait")?;
        let key = load_key(key_file)?;
        py.detach(|| {
            let made = self.client.make_pretokens(&key, count)?;
            if !wait.is_zero() {
                self.client.wait_pretokens(&key, &made, wait)?;
            }
            Ok(made.into_iter().map(|t| t.id).collect())
        })
        .map_err(to_py_cloud)
    }

    /// The dataset's pre-tokens, as JSON.
    fn pretokens(&self, py: Python<'_>, key_file: PathBuf) -> PyResult<String> {
        let key = load_key(key_file)?;
        let listed = py
            .detach(|| self.client.pretokens(&key))
            .map_err(to_py_cloud)?;
        Ok(serde_json::to_string(&listed).expect("serialisable"))
    }

    /// A run, as JSON; with `wait` > 0, once it is done (or has failed: an error).
    #[pyo3(signature = (run, *, wait=0.0))]
    fn status(&self, py: Python<'_>, run: &str, wait: f64) -> PyResult<String> {
        let wait = seconds(wait, "wait")?;
        let run = py
            .detach(|| match wait.is_zero() {
                true => self.client.run(run),
                false => self.client.wait(run, wait),
            })
            .map_err(to_py_cloud)?;
        Ok(serde_json::to_string(&run).expect("serialisable"))
    }

    /// The positions in `items` (the keys uploaded under `key_file`, normalised alike)
    /// whose keys matched in the run, ascending; waits up to `wait` seconds for it.
    #[pyo3(signature = (run, key_file, items, *, wait=defaults::RESULT_WAIT_SECONDS as f64, trim=false, lowercase=false, skip_empty=false))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments, one per CLI option.
    fn result(
        &self,
        py: Python<'_>,
        run: &str,
        key_file: PathBuf,
        items: Vec<Key>,
        wait: f64,
        trim: bool,
        lowercase: bool,
        skip_empty: bool,
    ) -> PyResult<Vec<usize>> {
        let wait = seconds(wait, "wait")?;
        let key = load_key(key_file)?;
        let opts = key_options(trim, lowercase, skip_empty);
        py.detach(|| {
            let input = KeysInMemory::new(&items, None, &opts).map_err(to_py)?;
            (self.client.wait(run, wait))
                .and_then(|_| {
                    let form = input.form().to_string();
                    self.client.result(&key, run, input.keys(), &form)
                })
                .map(|matched| input.matched_positions(&matched))
                .map_err(to_py_cloud)
        })
    }

    /// This client's datasets, as JSON.
    fn datasets(&self, py: Python<'_>) -> PyResult<String> {
        let listed = py.detach(|| self.client.datasets()).map_err(to_py_cloud)?;
        Ok(serde_json::to_string(&listed).expect("serialisable"))
    }

    /// Deletes a dataset of this client's; returns it, as JSON.
    fn delete(&self, py: Python<'_>, dataset: &str) -> PyResult<String> {
        let gone = py
            .detach(|| self.client.delete(dataset))
            .map_err(to_py_cloud)?;
        Ok(serde_json::to_string(&gone).expect("serialisable"))
    }
}

/// A Thunder worker's link to the service, for a driver that has the answers computed
/// elsewhere (the Ray job of `venn.ray`): tasks cross as JSON, inputs and answers as bytes.
#[pyclass(frozen, module = "venn._venn")]
pub struct WorkerLink {
    link: venn_cloud::worker::WorkerLink,
}

fn parse_task(task: &str) -> PyResult<Task> {
    serde_json::from_str(task).map_err(|e| crate::UsageError::new_err(format!("a task: {e}")))
}

#[pymethods]
impl WorkerLink {
    /// A link to `server` as the worker whose identity (from `venn cloud enrol-worker`) is
    /// in the file `worker_identity`.
    #[new]
    #[pyo3(signature = (server, worker_identity, *, server_fingerprint=None, server_ca=None, plain_http=false))]
    fn new(
        server: &str,
        worker_identity: PathBuf,
        server_fingerprint: Option<&str>,
        server_ca: Option<PathBuf>,
        plain_http: bool,
    ) -> PyResult<Self> {
        let endpoint = service(server, server_fingerprint, server_ca, plain_http)?;
        let usage = |e: venn_cloud::Error| crate::UsageError::new_err(e.to_string());
        let identity = WorkerIdentity::load(&worker_identity).map_err(usage)?;
        let link = venn_cloud::worker::WorkerLink::new(&endpoint, &identity).map_err(usage)?;
        Ok(WorkerLink { link })
    }

    /// The next task (JSON), or None while there is none.
    fn lease(&self, py: Python<'_>) -> PyResult<Option<String>> {
        let task = py.detach(|| self.link.lease()).map_err(to_py_cloud)?;
        Ok(task.map(|t| serde_json::to_string(&t).expect("serialisable")))
    }

    /// A leased task's input.
    fn input<'py>(&self, py: Python<'py>, task: &str) -> PyResult<Bound<'py, PyBytes>> {
        let task = parse_task(task)?;
        let input = py.detach(|| self.link.input(&task)).map_err(to_py_cloud)?;
        Ok(PyBytes::new(py, &input))
    }

    /// Hands in a leased task's answer.
    fn hand_in(&self, py: Python<'_>, task: &str, answer: &[u8]) -> PyResult<()> {
        let task = parse_task(task)?;
        py.detach(|| self.link.hand_in(&task, answer))
            .map_err(to_py_cloud)
    }
}

/// The answer to a task (JSON) over its input, computed on `threads` threads: the pure
/// function a Thunder worker computes, the same wherever it runs.
#[pyfunction]
#[pyo3(signature = (task, input, *, threads=1))]
pub(crate) fn answer<'py>(
    py: Python<'py>,
    task: &str,
    input: &[u8],
    threads: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    let task = parse_task(task)?;
    let threads = venn_app::threads::bounded(threads).map_err(to_py)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| crate::UsageError::new_err(format!("threads: {e}")))?;
    let answer = py
        .detach(|| pool.install(|| venn_cloud::worker::answer(&task, input)))
        .map_err(to_py_cloud)?;
    Ok(PyBytes::new(py, &answer))
}
