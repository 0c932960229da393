//! `venn.ub`'s native half: a client of an unbalanced-PSI dataset (`venn ub serve`), as
//! `venn ub sync` and `venn ub query` are, on keys held in memory. Documented and typed
//! in `python/venn/ub.py`, which wraps it.

use crate::{key_options, link_settings, to_py, Key, UsageError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::path::PathBuf;
use venn_app::input::memory::KeysInMemory;
use venn_app::input::source::Positioned;
use venn_app::run_options::RunSettings;
use venn_app::ub_client::{self, ClientArgs, QueryMode, Synced, DEFAULT_MAX_TAGS, SESSION_SECONDS};

/// What a sync takes of the run options besides the TLS group's.
const SYNC_OPTIONS: &[&str] = &["timeout"];
/// What a query takes of them besides the TLS group's.
const QUERY_OPTIONS: &[&str] = &[
    "timeout",
    "trim",
    "lowercase",
    "skip-empty",
    "allow-key-mismatch",
];

/// Where a client goes and what it keeps, as Python gave them.
struct Client {
    connect: String,
    state: Option<PathBuf>,
    max_tags: u64,
    session_timeout: f64,
    mode: String,
}

impl Client {
    /// The client's settings, with the run options `also` names.
    fn args(
        self,
        options: Option<&Bound<'_, PyDict>>,
        also: &[&str],
    ) -> PyResult<(ClientArgs, RunSettings)> {
        let (settings, transport) = link_settings(options, also)?;
        let session_timeout = venn_app::run_options::seconds(self.session_timeout)
            .map_err(|e| UsageError::new_err(format!("session_timeout is {e}")))?;
        let mode = match self.mode.as_str() {
            "auto" => QueryMode::Auto,
            "cache" => QueryMode::Cache,
            "fhe" => QueryMode::Fhe,
            other => {
                return Err(UsageError::new_err(format!(
                    "mode is 'auto', 'cache' or 'fhe', not {other:?}"
                )))
            }
        };
        let args = ClientArgs {
            connect: self.connect,
            transport,
            timeout: settings.spec.timeout,
            session_timeout,
            state: self.state,
            max_tags: self.max_tags,
            mode,
        };
        Ok((args, settings))
    }
}

/// What a sync found, as the keywords of `venn.ub.Dataset`.
fn dataset<'py>(py: Python<'py>, s: &Synced) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let c = &s.description.cache;
    d.set_item("size", c.len)?;
    d.set_item("epoch", c.epoch)?;
    d.set_item("version", c.version)?;
    d.set_item("max_query", c.max_query)?;
    d.set_item("label_len", c.labels)?;
    d.set_item("current", s.current)?;
    d.set_item("received", s.received)?;
    d.set_item("warning", s.warning.as_deref())?;
    Ok(d)
}

/// `venn.ub.sync` (no `keys`): the dataset's tag set brought up to date in `state`, and
/// `venn.ub.query`: which of `keys` the dataset holds, as positions in `keys` (with
/// each one's label where the dataset's items carry labels), with the sync before (`dataset`), the distinct keys asked and matched, and a warning if the
/// keys were taken otherwise than the dataset's (allowed by `allow_key_mismatch`).
#[pyfunction]
#[pyo3(signature = (
    keys, connect, *, state=None, max_tags=DEFAULT_MAX_TAGS,
    session_timeout=SESSION_SECONDS as f64, mode="auto".to_owned(), **options,
))]
#[allow(clippy::too_many_arguments)] // Python's keywords beside the run options.
pub(crate) fn ub_run<'py>(
    py: Python<'py>,
    keys: Option<Vec<Key>>,
    connect: String,
    state: Option<PathBuf>,
    max_tags: u64,
    session_timeout: f64,
    mode: String,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let client = Client {
        connect,
        state,
        max_tags,
        session_timeout,
        mode,
    };
    let Some(keys) = keys else {
        let (args, _) = client.args(options, SYNC_OPTIONS)?;
        let synced = py.detach(|| ub_client::sync(&args)).map_err(to_py)?;
        return dataset(py, &synced);
    };
    let (args, settings) = client.args(options, QUERY_OPTIONS)?;
    let k = &settings.keys;
    let opts = key_options(k.trim, k.lowercase, k.skip_empty);
    let mismatch = settings.spec.key_mismatch;
    let (queried, matched, labels) = py
        .detach(|| {
            let input = KeysInMemory::new(&keys, None, &opts)?;
            let (queried, found) = ub_client::query_input(&args, input.input(), mismatch)?;
            let keyed = input.matched_keys(&found.indices);
            // Each matched position's label: its key's, found among the keys held.
            let labels = found.labels.map(|labels| {
                let label = |key| &labels[found.indices.binary_search(&key).expect("held")];
                let labels = keyed.iter().map(|&(_, key)| label(key).clone());
                labels.collect::<Vec<Vec<u8>>>()
            });
            let matched: Vec<usize> = keyed.into_iter().map(|(position, _)| position).collect();
            venn::Result::Ok((queried, matched, labels))
        })
        .map_err(to_py)?;
    let labels = labels.map(|labels| {
        let labels = labels.iter().map(|l| PyBytes::new(py, l));
        labels.collect::<Vec<_>>()
    });
    let d = PyDict::new(py);
    d.set_item("dataset", dataset(py, &queried.synced)?)?;
    d.set_item("matched", matched)?;
    d.set_item("labels", labels)?;
    d.set_item("count", queried.matched)?;
    d.set_item("keys", queried.keys)?;
    d.set_item("warning", queried.warning)?;
    let mode = match queried.mode {
        QueryMode::Fhe => "fhe",
        _ => "cache",
    };
    d.set_item("mode", mode)?;
    Ok(d)
}
