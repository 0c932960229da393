//! What a run wrote ([`Written`], from its [`crate::sink::OutputSink`]) and its
//! machine-readable statistics ([`Stats`], written as `--stats-json` says).

use venn::protocols::Output;
use venn::Report;

/// What was written to `--output`.
#[derive(Clone, Copy, Debug)]
pub enum Written {
    /// The matching rows (their number).
    Rows(usize),
    /// A JSON object with the count or sum.
    Json,
}

/// The machine-readable statistics of a run.
#[derive(serde::Serialize)]
pub struct Stats<'a> {
    /// The protocol's registry name.
    pub protocol: &'a str,
    /// This party's role.
    pub role: &'a str,
    /// This party's set size: its distinct keys (for a precomputation, the most it may bring).
    pub items: u64,
    /// The input's kept rows (none for a precomputation).
    pub rows: Option<usize>,
    /// Kept rows whose key had already appeared (none for a precomputation).
    pub duplicate_rows: Option<usize>,
    /// The peer's set size (for a precomputation, the most it may bring).
    pub peer_items: u64,
    /// What this party learned, in words ([`venn::protocols::OutputKind::name`]).
    pub output: &'static str,
    /// How many of this party's keys are in the intersection, where it learns which.
    pub intersection: Option<usize>,
    /// The intersection's size, where that is what it learns (a count, a sum's count).
    pub intersection_size: Option<u64>,
    /// The first value column's sum (as `intersection_sums[0]`).
    pub intersection_sum: Option<String>,
    /// Each value column's sum, in the sender's order.
    pub intersection_sums: Option<Vec<String>>,
    /// The matching rows written to `--output`, where it got them.
    pub intersection_rows: Option<usize>,
    /// Seconds of the input-independent phases.
    pub offline_seconds: f64,
    /// Seconds of the input-dependent phases.
    pub online_seconds: f64,
    /// Seconds of all phases.
    pub total_seconds: f64,
    /// Bytes this party sent.
    pub bytes_sent: u64,
    /// Bytes this party received.
    pub bytes_received: u64,
    /// Worker threads this party ran on.
    pub threads: usize,
    /// Seconds spent reading (parsing, normalising, deduplicating) the input, outside the
    /// protocol's phases.
    pub input_seconds: Option<f64>,
    /// Seconds spent writing the output, outside the protocol's phases.
    pub output_seconds: Option<f64>,
    /// Each timed phase, in order.
    pub phases: Vec<PhaseStat<'a>>,
}

/// One timed phase.
#[derive(serde::Serialize)]
pub struct PhaseStat<'a> {
    /// The phase's name, as the protocol gives it.
    pub name: &'a str,
    /// Whether it is input-independent (it could run before the keys are known).
    pub offline: bool,
    /// How long it took.
    pub seconds: f64,
}

impl<'a> Stats<'a> {
    /// From a report and what was written (the input's rows are the caller's to add).
    pub fn new(report: &'a Report, written: Option<&Written>, threads: usize) -> Self {
        let out = &report.output;
        Stats {
            protocol: report.protocol,
            role: report.role.name(),
            items: report.n_self,
            rows: None,
            duplicate_rows: None,
            peer_items: report.n_peer,
            output: out.kind().name(),
            intersection: out.indices().map(<[usize]>::len),
            intersection_size: match out {
                Output::Count(c) | Output::Sum { count: c, .. } => Some(*c),
                _ => None,
            },
            intersection_sum: match out {
                Output::Sum { sums, .. } => sums.first().map(u64::to_string),
                _ => None,
            },
            intersection_sums: match out {
                Output::Sum { sums, .. } => Some(sums.iter().map(u64::to_string).collect()),
                _ => None,
            },
            intersection_rows: match written {
                Some(Written::Rows(n)) => Some(*n),
                _ => None,
            },
            offline_seconds: report.offline().as_secs_f64(),
            online_seconds: report.online().as_secs_f64(),
            total_seconds: (report.offline() + report.online()).as_secs_f64(),
            bytes_sent: report.traffic.sent,
            bytes_received: report.traffic.received,
            threads,
            input_seconds: None,
            output_seconds: None,
            phases: report
                .phases
                .iter()
                .map(|p| PhaseStat {
                    name: p.name,
                    offline: p.offline,
                    seconds: p.duration.as_secs_f64(),
                })
                .collect(),
        }
    }
}
