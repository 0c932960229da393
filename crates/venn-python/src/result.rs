//! What a Python party learned and measured: a `RunResult` whose `output` is one typed
//! object per kind of output (`Intersection`, `IntersectionSize`, `IntersectionSum`,
//! `Threshold`, `NoOutput`), made by the party's sink ([`Learning`]) from what the run
//! delivered. The flat attributes of earlier versions (`matched`, `count`, `sum`, `sums`,
//! `reached`) remain, read from the output.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyList};
use std::path::Path;
use venn::Report;
use venn_app::input::source::{MatchedRows, RowBatch};
use venn_app::lanes::Summary;
use venn_app::output::Written;
use venn_app::sink::{Delivered, FileOutput, OutputSink};

/// The intersection, for a party that learns it.
#[pyclass(frozen, module = "venn")]
pub struct Intersection {
    /// Positions (0-based, ascending) of the items whose keys are in it, for keys given in
    /// memory (every position of a repeated key); None for a file party, whose rows are
    /// written to its `output`.
    #[pyo3(get)]
    matched: Option<Vec<usize>>,
    /// How many distinct keys of ours are in it.
    #[pyo3(get)]
    count: u64,
    /// With `peer_columns=` for keys given in memory: a matched position and the values of
    /// the peer's columns, for each matched item and each of the peer's items of its key.
    peer_rows: Option<PeerRows>,
    /// `peer_rows` as Python has it, made on its first reading.
    peer_list: PyOnceLock<Py<PyList>>,
}

impl Clone for Intersection {
    fn clone(&self) -> Self {
        Intersection {
            matched: self.matched.clone(),
            count: self.count,
            peer_rows: self.peer_rows.clone(),
            peer_list: PyOnceLock::new(),
        }
    }
}

/// Matched positions, each with a value of each of the peer's columns, in one buffer
/// (a `Vec` a value would cost more than the values).
#[derive(Clone, Default)]
struct PeerRows {
    /// The peer's columns.
    columns: usize,
    /// A matched position a row.
    positions: Vec<usize>,
    /// The values, row by row, one after another, and where each ends in `bytes`.
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl PeerRows {
    /// Adds a row of the peer's `values` for the matched `position`.
    fn push(&mut self, position: usize, values: &[&[u8]]) {
        self.columns = values.len();
        self.positions.push(position);
        for value in values {
            self.bytes.extend_from_slice(value);
            self.ends.push(self.bytes.len());
        }
    }

    /// As Python has them: a `(position, [bytes, …])` pair a row.
    fn to_list<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let mut start = 0;
        let mut ends = self.ends.iter();
        let rows = self.positions.iter().map(|&position| {
            let values: Vec<_> = (ends.by_ref().take(self.columns))
                .map(|&end| PyBytes::new(py, &self.bytes[std::mem::replace(&mut start, end)..end]))
                .collect();
            (position, values)
        });
        PyList::new(py, rows)
    }
}

#[pymethods]
impl Intersection {
    /// With `peer_columns=` (keys given in memory): `(position, values)` for each matched
    /// item and each of the peer's items of its key — as ``pandas.merge`` pairs rows —
    /// ascending by position, `values` the peer's columns in the order asked, each the
    /// bytes the peer gave (a `str` as UTF-8); else None. Made on the first reading; the
    /// same list after.
    #[getter]
    fn peer_rows<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let Some(rows) = &self.peer_rows else {
            return Ok(None);
        };
        let list = (self.peer_list).get_or_try_init(py, || rows.to_list(py).map(Bound::unbind))?;
        Ok(Some(list.bind(py).clone()))
    }

    fn __repr__(&self) -> String {
        let matched = match &self.matched {
            None => "None".to_string(),
            Some(m) if m.len() <= SHOWN => format!("{m:?}"),
            Some(m) => format!("[{} positions]", m.len()),
        };
        format!("Intersection(matched={matched}, count={})", self.count)
    }
}

/// The most positions a repr shows.
const SHOWN: usize = 8;

/// The intersection's size (count protocols).
#[pyclass(frozen, get_all, module = "venn")]
#[derive(Clone)]
pub struct IntersectionSize {
    count: u64,
}

/// The intersection's size and the sums of the sender's value columns over it (sum
/// protocols), in the sender's order.
#[pyclass(frozen, get_all, module = "venn")]
#[derive(Clone)]
pub struct IntersectionSum {
    count: u64,
    sums: Vec<u64>,
}

#[pymethods]
impl IntersectionSize {
    fn __repr__(&self) -> String {
        format!("IntersectionSize(count={})", self.count)
    }
}

#[pymethods]
impl IntersectionSum {
    /// The first value column's sum.
    #[getter]
    fn sum(&self) -> Option<u64> {
        self.sums.first().copied()
    }

    fn __repr__(&self) -> String {
        format!(
            "IntersectionSum(count={}, sums={:?})",
            self.count, self.sums
        )
    }
}

/// Whether the intersection has at least `threshold` items (threshold protocols).
#[pyclass(frozen, get_all, module = "venn")]
#[derive(Clone)]
pub struct Threshold {
    threshold: u64,
    reached: bool,
}

#[pymethods]
impl Threshold {
    fn __repr__(&self) -> String {
        let reached = if self.reached { "True" } else { "False" };
        format!("Threshold(threshold={}, reached={reached})", self.threshold)
    }
}

/// Nothing: this party learns nothing (a sender without `both`).
#[pyclass(frozen, module = "venn")]
#[derive(Clone)]
pub struct NoOutput {}

#[pymethods]
impl NoOutput {
    fn __repr__(&self) -> &'static str {
        "NoOutput()"
    }
}

/// What a party learned, by kind.
#[derive(Clone)]
pub enum Learned {
    Intersection(Intersection),
    Size(IntersectionSize),
    Sum(IntersectionSum),
    Threshold(Threshold),
    Nothing,
}

impl Learned {
    fn count(&self) -> Option<u64> {
        match self {
            Learned::Intersection(Intersection { count, .. })
            | Learned::Size(IntersectionSize { count })
            | Learned::Sum(IntersectionSum { count, .. }) => Some(*count),
            Learned::Threshold(_) | Learned::Nothing => None,
        }
    }
}

/// The Python result's sink: what the run delivered, as [`Learned`]; a file party's rows
/// (and JSON) go on to its `output` ([`FileOutput`]).
pub(crate) struct Learning<'a> {
    file: Option<FileOutput<'a>>,
    /// Whether keys given in memory ask for the peer's columns.
    asks: bool,
    pub learned: Learned,
}

impl<'a> Learning<'a> {
    /// For keys given in memory: the matched rows' positions are kept, with the peer's
    /// rows of their keys if the party `asks` for the peer's columns.
    pub(crate) fn keys(asks: bool) -> Self {
        Learning {
            file: None,
            asks,
            learned: Learned::Nothing,
        }
    }

    /// For a file party: the matched rows (or JSON) go on to `output` (a Parquet
    /// output's columns encoded on `threads` threads).
    pub(crate) fn file(output: Option<&'a Path>, threads: usize) -> Self {
        Learning {
            file: Some(FileOutput {
                path: output,
                threads,
            }),
            asks: false,
            learned: Learned::Nothing,
        }
    }
}

impl OutputSink for Learning<'_> {
    fn take(&mut self, output: Delivered) -> venn::Result<Option<Written>> {
        self.learned = match &output {
            &Delivered::Rows { rows, keys } => {
                let (matched, peer_rows) = match self.file {
                    Some(_) => (None, None),
                    None => {
                        let (matched, peer_rows) = positions(rows, self.asks)?;
                        (Some(matched), peer_rows)
                    }
                };
                Learned::Intersection(Intersection {
                    matched,
                    count: keys,
                    peer_rows,
                    peer_list: PyOnceLock::new(),
                })
            }
            &Delivered::Count(count) => Learned::Size(IntersectionSize { count }),
            &Delivered::Sum { count, sums } => Learned::Sum(IntersectionSum {
                count,
                sums: sums.to_vec(),
            }),
            &Delivered::Threshold { threshold, reached } => {
                Learned::Threshold(Threshold { threshold, reached })
            }
            Delivered::Nothing => Learned::Nothing,
        };
        match &mut self.file {
            Some(file) => file.take(output),
            None => Ok(None),
        }
    }
}

/// The positions of matched keys given in memory, and with the peer's columns each
/// matched position with the values of each of the peer's rows of its key.
type Positions = (Vec<usize>, Option<PeerRows>);

/// The [`Positions`] of the matched `rows` of keys given in memory (the peer's rows if
/// the party `asks` for its columns).
fn positions(rows: &dyn MatchedRows, asks: bool) -> venn::Result<Positions> {
    let (mut matched, mut peer_rows) = (Vec::new(), asks.then(PeerRows::default));
    rows.each_batch(&mut |batch| match batch {
        RowBatch::Positions(p) => {
            matched.extend_from_slice(p);
            Ok(())
        }
        RowBatch::Joined {
            position, values, ..
        } => {
            // A position once, though the peer has several rows of its key.
            if matched.last() != Some(&position) {
                matched.push(position);
            }
            if let Some(rows) = &mut peer_rows {
                rows.push(position, values);
            }
            Ok(())
        }
        _ => Err(std::io::Error::other(
            "keys in memory have no rows of a file",
        )),
    })?;
    Ok((matched, peer_rows))
}

/// What a party learned and measured.
#[pyclass(frozen, module = "venn")]
pub struct RunResult {
    protocol: String,
    role: String,
    learned: Learned,
    /// `output`, made on its first reading (the same object after).
    output: PyOnceLock<Py<PyAny>>,
    n_self: u64,
    n_peer: u64,
    seconds: f64,
    bytes_sent: u64,
    bytes_received: u64,
    rows_written: Option<usize>,
}

impl RunResult {
    /// From a run's `report` and what it `learned` and wrote.
    pub fn of(report: &Report, learned: Learned, written: Option<Written>) -> RunResult {
        RunResult {
            protocol: report.protocol.to_owned(),
            role: report.role.name().to_owned(),
            learned,
            output: PyOnceLock::new(),
            n_self: report.n_self,
            n_peer: report.n_peer,
            seconds: (report.offline() + report.online()).as_secs_f64(),
            bytes_sent: report.traffic.sent,
            bytes_received: report.traffic.received,
            rows_written: match written {
                Some(Written::Rows(n)) => Some(n),
                _ => None,
            },
        }
    }

    /// A run in lanes: its protocol and role, and what its lanes did, summed.
    pub fn of_lanes(protocol: String, role: &str, learned: Learned, lanes: &Summary) -> Self {
        RunResult {
            protocol,
            role: role.to_owned(),
            learned,
            output: PyOnceLock::new(),
            n_self: lanes.n_self,
            n_peer: lanes.n_peer,
            seconds: lanes.seconds,
            bytes_sent: lanes.bytes_sent,
            bytes_received: lanes.bytes_received,
            rows_written: None,
        }
    }
}

#[pymethods]
impl RunResult {
    /// The protocol's name.
    #[getter]
    fn protocol(&self) -> &str {
        &self.protocol
    }

    /// "sender" or "receiver".
    #[getter]
    fn role(&self) -> &str {
        &self.role
    }

    /// What the party learned: an `Intersection`, `IntersectionSize`, `IntersectionSum`,
    /// `Threshold` or `NoOutput` (the same object at every reading).
    #[getter]
    fn output(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let output = self.output.get_or_try_init(py, || -> PyResult<_> {
            Ok(match &self.learned {
                Learned::Intersection(x) => Py::new(py, x.clone())?.into_any(),
                Learned::Size(x) => Py::new(py, x.clone())?.into_any(),
                Learned::Sum(x) => Py::new(py, x.clone())?.into_any(),
                Learned::Threshold(x) => Py::new(py, x.clone())?.into_any(),
                Learned::Nothing => Py::new(py, NoOutput {})?.into_any(),
            })
        })?;
        Ok(output.clone_ref(py))
    }

    /// `output.matched` of an `Intersection`; else None.
    #[getter]
    fn matched(&self) -> Option<Vec<usize>> {
        match &self.learned {
            Learned::Intersection(x) => x.matched.clone(),
            _ => None,
        }
    }

    /// `output.count`, where the output has one; else None.
    #[getter]
    fn count(&self) -> Option<u64> {
        self.learned.count()
    }

    /// `output.sum` of an `IntersectionSum`; else None.
    #[getter]
    fn sum(&self) -> Option<u64> {
        match &self.learned {
            Learned::Sum(x) => x.sum(),
            _ => None,
        }
    }

    /// `output.sums` of an `IntersectionSum`; else None.
    #[getter]
    fn sums(&self) -> Option<Vec<u64>> {
        match &self.learned {
            Learned::Sum(x) => Some(x.sums.clone()),
            _ => None,
        }
    }

    /// `output.reached` of a `Threshold`; else None.
    #[getter]
    fn reached(&self) -> Option<bool> {
        match &self.learned {
            Learned::Threshold(x) => Some(x.reached),
            _ => None,
        }
    }

    /// Distinct keys on this side and the peer's (rows, for a peer that split its input).
    #[getter]
    fn n_self(&self) -> u64 {
        self.n_self
    }

    #[getter]
    fn n_peer(&self) -> u64 {
        self.n_peer
    }

    /// Seconds of the run (both phases).
    #[getter]
    fn seconds(&self) -> f64 {
        self.seconds
    }

    #[getter]
    fn bytes_sent(&self) -> u64 {
        self.bytes_sent
    }

    #[getter]
    fn bytes_received(&self) -> u64 {
        self.bytes_received
    }

    /// Rows written to `output`, for a party run on a file that learns them; else None.
    #[getter]
    fn rows_written(&self) -> Option<usize> {
        self.rows_written
    }

    fn __repr__(&self) -> String {
        let output = match &self.learned {
            Learned::Intersection(x) => x.__repr__(),
            Learned::Size(x) => x.__repr__(),
            Learned::Sum(x) => x.__repr__(),
            Learned::Threshold(x) => x.__repr__(),
            Learned::Nothing => NoOutput {}.__repr__().into(),
        };
        format!(
            "RunResult(protocol={:?}, role={:?}, output={output}, n_self={}, n_peer={}, \
             seconds={:.3})",
            self.protocol, self.role, self.n_self, self.n_peer, self.seconds
        )
    }
}
