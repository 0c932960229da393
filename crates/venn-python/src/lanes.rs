//! The native half of `venn.ray`'s two-party runs: a party's coordinator
//! ([`venn_app::lanes::Coordinator`]) and a lane's worker ([`venn_app::lanes::LaneJob`]),
//! each driven by `python/venn/ray.py` — the coordinator in the driver, a worker in each
//! Ray actor of the party's cluster.

use crate::result::{Learning, RunResult};
use crate::{to_py, Party, Setup, Source, UsageError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::net::TcpListener;
use std::sync::Mutex;
use std::time::Duration;
use venn::session::Role;
use venn_app::lanes::{Coordinator, LaneEnd, LaneJob};
use venn_app::transport::Transport;

/// A party's coordinator of a run in lanes (used once: `finish` ends it).
#[pyclass(module = "venn._venn")]
pub struct LanedRun {
    /// Behind a lock: a Python object may be reached from any thread.
    coordinator: Mutex<Option<Coordinator>>,
    role: Role,
    protocol: String,
    /// Whether the party asks for the peer's columns.
    asks: bool,
}

impl LanedRun {
    /// `f` of the coordinator, unless the run has finished.
    fn with<R>(&self, f: impl FnOnce(&mut Coordinator) -> R) -> PyResult<R> {
        let mut c = self.coordinator.lock().unwrap_or_else(|e| e.into_inner());
        let c = c
            .as_mut()
            .ok_or_else(|| UsageError::new_err("this run has finished"))?;
        Ok(f(c))
    }
}

#[pymethods]
impl LanedRun {
    /// Agrees on the run of `party` (taken) with the peer's coordinator (see `venn.ray`).
    #[new]
    #[pyo3(signature = (party, *, lanes, bucket_rows=None))]
    fn new(
        py: Python<'_>,
        party: &Party,
        lanes: usize,
        bucket_rows: Option<u64>,
    ) -> PyResult<Self> {
        let Setup {
            link,
            role,
            both,
            source,
            on_listening,
            progress,
        } = party.take()?;
        if progress.is_some() {
            return Err(UsageError::new_err("a run in lanes reports no progress"));
        }
        let Source::Keys {
            input,
            peer_columns,
        } = source
        else {
            return Err(UsageError::new_err("a run in lanes takes keys in memory"));
        };
        let asks = !peer_columns.is_empty();
        let coordinator = py
            .detach(|| {
                let on_bound = |addr| crate::tell(&on_listening, addr);
                Coordinator::open(
                    &link,
                    role,
                    both,
                    input,
                    peer_columns,
                    lanes,
                    bucket_rows,
                    on_bound,
                )
            })
            .map_err(to_py)?;
        Ok(LanedRun {
            coordinator: Mutex::new(Some(coordinator)),
            role,
            protocol: link.spec.protocol,
            asks,
        })
    }

    /// The lanes agreed on.
    #[getter]
    fn lanes(&self) -> PyResult<usize> {
        self.with(|c| c.lanes())
    }

    /// Whether this side's lanes listen (and send their addresses) or connect.
    #[getter]
    fn listens(&self) -> PyResult<bool> {
        self.with(|c| c.listens())
    }

    /// Lane `lane`'s job, for its worker.
    fn job<'py>(&self, py: Python<'py>, lane: usize) -> PyResult<Bound<'py, PyBytes>> {
        let job = py.detach(|| {
            self.with(|c| match lane < c.lanes() {
                true => Ok(c.job(lane)),
                false => Err(UsageError::new_err(format!(
                    "lanes are 0 to {}",
                    c.lanes() - 1
                ))),
            })
        })??;
        Ok(PyBytes::new(py, &job))
    }

    /// Sends the peer's coordinator where this side's lanes listen, in lane order.
    fn send_addresses(&self, py: Python<'_>, addresses: Vec<String>) -> PyResult<()> {
        py.detach(|| self.with(|c| c.send_addresses(&addresses)))?
            .map_err(to_py)
    }

    /// Where the peer's lanes listen, in lane order.
    fn recv_addresses(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        py.detach(|| self.with(|c| c.recv_addresses()))?
            .map_err(to_py)
    }

    /// Tells the peer's coordinator that this side gives up, and why; ends the run.
    fn abort(&self, reason: &str) {
        let taken = self
            .coordinator
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(mut c) = taken {
            c.abort(reason);
        }
    }

    /// Merges the lanes' results and confirms the run with the peer's coordinator.
    fn finish(&self, py: Python<'_>, results: Vec<Vec<u8>>) -> PyResult<RunResult> {
        let taken = self
            .coordinator
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let c = taken.ok_or_else(|| UsageError::new_err("this run has finished"))?;
        let mut sink = Learning::keys(self.asks);
        let (summary, _) = py.detach(|| c.finish(&results, &mut sink)).map_err(to_py)?;
        Ok(RunResult::of_lanes(
            self.protocol.clone(),
            self.role.name(),
            sink.learned,
            &summary,
        ))
    }
}

/// The run options a lane's worker takes besides the TLS group: its link's deadline.
const LANE_OPTIONS: &[&str] = &["timeout"];

/// The keywords of a party's options that `venn.ray` hands each lane's worker ([`Lane`]):
/// the TLS group's and [`LANE_OPTIONS`], in the table's order.
#[pyfunction]
pub(crate) fn lane_keywords() -> Vec<String> {
    venn_app::run_options::OPTIONS
        .iter()
        .filter(|o| crate::link_option(o, LANE_OPTIONS))
        .filter_map(|o| o.keyword())
        .collect()
}

/// A lane's worker: its job, and its end of the lane's link.
#[pyclass(module = "venn._venn")]
pub struct Lane {
    /// Taken by `run`: a lane runs once.
    job: Option<LaneJob>,
    transport: Transport,
    timeout: Duration,
    listener: Option<TcpListener>,
}

#[pymethods]
impl Lane {
    /// A worker for `job` (from `LanedRun.job`), with the party's TLS keywords and
    /// `timeout` ([`LANE_OPTIONS`]).
    #[new]
    #[pyo3(signature = (job, **options))]
    fn new(job: &[u8], options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let (settings, transport) = crate::link_settings(options, LANE_OPTIONS)?;
        Ok(Lane {
            job: Some(LaneJob::decode(job).map_err(to_py)?),
            transport,
            timeout: settings.spec.timeout,
            listener: None,
        })
    }

    /// Listens on `host` (any free port; TLS unless it is loopback); returns the address.
    fn bind(&mut self, host: &str) -> PyResult<String> {
        let listener = self.transport.bind(&format!("{host}:0")).map_err(to_py)?;
        let addr = listener.local_addr().map_err(|e| to_py(e.into()))?;
        self.listener = Some(listener);
        Ok(addr.to_string())
    }

    /// Runs lane `lane`'s buckets with the peer's worker — accepted where `bind` listens,
    /// or reached at `connect` — and returns the lane's result, for `LanedRun.finish`.
    #[pyo3(signature = (lane, connect=None))]
    fn run<'py>(
        &mut self,
        py: Python<'py>,
        lane: usize,
        connect: Option<String>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let end = match (connect, self.listener.take()) {
            (Some(addr), None) => LaneEnd::Connect(addr),
            (None, Some(listener)) => LaneEnd::Listen(listener),
            _ => return Err(UsageError::new_err("connect, or bind first; not both")),
        };
        let job = (self.job.take()).ok_or_else(|| UsageError::new_err("this lane has run"))?;
        let (transport, timeout) = (&self.transport, self.timeout);
        let result = py
            .detach(|| {
                let mut chan = end.link(transport, timeout)?;
                job.run(lane, &mut *chan)
            })
            .map_err(to_py)?;
        Ok(PyBytes::new(py, &result))
    }
}
