//! Writing results: the intersecting rows and the statistics, each as
//! [`Destination`] says (a regular file atomically — a temporary file in the same
//! directory, renamed into place — so a failed run leaves no file).

use crate::destination::Destination;
use crate::input::Input;
use std::io::Write;
use std::path::Path;
use venn::protocols::Output;
use venn::{Report, Result};

/// What was written to `--output`.
#[derive(Clone, Copy, Debug)]
pub enum Written {
    /// The matching rows (their number).
    Rows(usize),
    /// A JSON object with the count or sum.
    Json,
}

/// Writes a party's output: the matching rows for indices, a JSON object for a count or a
/// sum (also when no file is given: it then goes to stdout). Nothing for no output.
pub fn write_output(
    path: Option<&Path>,
    input: &Input,
    output: &Output,
) -> Result<Option<Written>> {
    let json = match output {
        Output::Nothing => return Ok(None),
        Output::Indices(ix) => {
            return match path {
                Some(p) => Ok(Some(Written::Rows(write_rows(p, input, ix)?))),
                None => Ok(None),
            }
        }
        Output::Count(c) => serde_json::json!({ "intersection_size": c }),
        // A u64 above 2^53 does not fit a JSON number exactly: written as a decimal string.
        // The sum of each value column, in the sender's order; the first also alone.
        Output::Sum { count, sums } => serde_json::json!({
            "intersection_size": count,
            "intersection_sum": sums.first().map(u64::to_string),
            "intersection_sums": sums.iter().map(u64::to_string).collect::<Vec<_>>(),
        }),
        Output::Threshold { threshold, reached } => {
            serde_json::json!({ "threshold": threshold, "reached": reached })
        }
    };
    match path {
        Some(p) => {
            Destination::of(p, "--output")?.write(|w| {
                serde_json::to_writer_pretty(&mut *w, &json)?;
                w.write_all(b"\n")
            })?;
            Ok(Some(Written::Json))
        }
        None => {
            Destination::Stdout.write(|w| writeln!(w, "{json}"))?;
            Ok(None)
        }
    }
}

/// Writes the header and every row whose key is in `intersection` (indices of distinct
/// keys), in input order, each exactly as it is in the input file. Returns the number of
/// rows written.
pub fn write_rows(path: &Path, input: &Input, intersection: &[usize]) -> Result<usize> {
    let member = input.members(intersection);
    let mut count = 0;
    Destination::of(path, "--output")?.write(|w| {
        if let Some(header) = &input.header {
            w.write_all(input.bytes(header))?;
        }
        // Rows that follow each other in the file go out as one slice.
        let mut run = 0..0;
        for row in input.rows.iter().filter(|r| member[r.key as usize]) {
            count += 1;
            if row.bytes.start == run.end && input.bytes(&run).ends_with(b"\n") {
                run.end = row.bytes.end;
                continue;
            }
            write_row(w, input.bytes(&run))?;
            run = row.bytes.clone();
        }
        write_row(w, input.bytes(&run))
    })?;
    Ok(count)
}

/// Writes rows (as in the input file), ending the last with a line break if it has none.
pub fn write_row(w: &mut dyn Write, rows: &[u8]) -> std::io::Result<()> {
    w.write_all(rows)?;
    if rows.is_empty() || rows.ends_with(b"\n") {
        return Ok(());
    }
    w.write_all(b"\n")
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
    /// From a report, the input it ran on (none for a precomputation) and what was
    /// written.
    pub fn new(
        report: &'a Report,
        input: Option<&Input>,
        written: Option<&Written>,
        threads: usize,
    ) -> Self {
        let out = &report.output;
        Stats {
            protocol: report.protocol,
            role: report.role.name(),
            items: report.n_self,
            rows: input.map(|i| i.rows.len()),
            duplicate_rows: input.map(|i| i.duplicates),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{read_input, Format, KeyOptions};

    #[test]
    fn counts_and_sums_are_written_as_json() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("in.csv");
        std::fs::write(&csv, "k\na\nb\n").unwrap();
        let keys = KeyOptions {
            format: Format::Csv,
            columns: Vec::new(),
            trim: false,
            lowercase: false,
            skip_empty: false,
            value_columns: Vec::new(),
            delimiter: b',',
        };
        let input = read_input(&csv, &keys).unwrap();
        let path = dir.path().join("out.json");
        let w = write_output(Some(&path), &input, &Output::Count(42)).unwrap();
        assert!(matches!(w, Some(Written::Json)));
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["intersection_size"], 42);
        std::fs::remove_file(&path).unwrap();
        write_output(
            Some(&path),
            &input,
            &Output::Sum {
                count: 3,
                sums: vec![u64::MAX, 7],
            },
        )
        .unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["intersection_sum"], u64::MAX.to_string());
        assert_eq!(v["intersection_sums"][1], "7");
        assert_eq!(v["intersection_size"], 3);
        let w = write_output(Some(&path), &input, &Output::Indices(vec![1])).unwrap();
        assert!(matches!(w, Some(Written::Rows(1))));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "k\nb\n");
    }
}
