//! The one-line summaries `venn send`, `venn receive` and `venn precompute` print on
//! stderr.

use super::Outcome;
use crate::output::Written;
use std::path::Path;
use venn::protocols::{find, Output, Security};
use venn::Report;

/// The one-line summary of a run printed on stderr.
pub fn summary(o: &Outcome) -> String {
    let r = &o.report;
    let result = match (&r.output, &o.written) {
        (Output::Nothing, _) => "intersection sent to the receiver only".to_string(),
        (out, Some(Written::Rows(rows))) => {
            format!("{}, {rows} rows written", describe(out))
        }
        (out, _) => describe(out),
    };
    let files = o.files.map_or(String::new(), |(i, w)| {
        format!(" | files: read {i:.3} s, written {w:.3} s")
    });
    format!(
        "venn {}{} {}: {} keys, peer {} keys, {result} | offline {:.3} s, online {:.3} s | sent {:.2} MB, received {:.2} MB{files}",
        r.protocol,
        insecure_tag(r.protocol),
        r.role.name(),
        r.n_self,
        r.n_peer,
        r.offline().as_secs_f64(),
        r.online().as_secs_f64(),
        r.traffic.sent as f64 / 1e6,
        r.traffic.received as f64 / 1e6,
    )
}

/// The summary of a precomputation.
pub fn precompute_summary(r: &Report, state: &Path) -> String {
    format!(
        "venn {}{} {} precompute: up to {} keys, peer up to {} keys | offline {:.3} s | sent {:.2} MB, received {:.2} MB | state in '{}' (single use)",
        r.protocol,
        insecure_tag(r.protocol),
        r.role.name(),
        r.n_self,
        r.n_peer,
        r.offline().as_secs_f64(),
        r.traffic.sent as f64 / 1e6,
        r.traffic.received as f64 / 1e6,
        state.display()
    )
}

fn describe(out: &Output) -> String {
    match out {
        Output::Indices(ix) | Output::Records { indices: ix, .. } => {
            format!("intersection {} keys", ix.len())
        }
        Output::Count(c) => format!("intersection size {c}"),
        Output::Sum { count, sums } => {
            let sums: Vec<String> = sums.iter().map(u64::to_string).collect();
            let (s, sums) = (if sums.len() == 1 { "" } else { "s" }, sums.join(", "));
            format!("intersection size {count}, sum{s} over the intersection {sums}")
        }
        Output::Threshold { threshold, reached } => format!(
            "intersection size {} {threshold}",
            if *reached { "at least" } else { "below" }
        ),
        Output::Nothing => "nothing".into(),
    }
}

fn insecure_tag(protocol: &str) -> &'static str {
    match find(protocol).map(|p| p.info().security) {
        Ok(Security::Insecure) => " (INSECURE)",
        _ => "",
    }
}
