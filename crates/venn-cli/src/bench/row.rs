//! A row of `venn bench`'s table: what it prints, and what `--json` and `venn plan --fit`
//! read.

use super::table::TableRow;
use serde::{Deserialize, Serialize};

/// One row of the benchmark table (what `--json` prints, and `venn plan --fit` reads).
#[derive(Serialize, Deserialize, Clone, Debug)]
pub(crate) struct Row {
    pub protocol: String,
    /// Whether the link was TLS 1.3 (`--tls`) rather than plain TCP.
    pub tls: bool,
    /// The sender's and the receiver's set sizes.
    pub n_sender: u64,
    pub n_receiver: u64,
    pub threads: usize,
    /// The emulated network (`--net`, as given), if any.
    #[serde(default)]
    pub net: Option<String>,
    pub offline_s: f64,
    pub online_s: f64,
    pub total_s: f64,
    pub mib_sender_to_receiver: f64,
    pub mib_receiver_to_sender: f64,
    pub peak_rss_sender_mib: Option<f64>,
    pub peak_rss_receiver_mib: Option<f64>,
    /// What each party's memory model said its run would need (`--max-memory` is held to
    /// it), beside the peak measured.
    pub memory_model_sender_mib: f64,
    pub memory_model_receiver_mib: f64,
    pub ratio_to_naive: Option<f64>,
    pub ratio_to_kkrt16: Option<f64>,
    /// For a TLS row: its total over the same protocol's plaintext row.
    pub ratio_to_plaintext: Option<f64>,
    /// For a row with records (`--payload`): the label of its protocol's row without them,
    /// and its total over that row's (on the same link), where the run has it.
    #[serde(default)]
    pub without_records: Option<String>,
    #[serde(default)]
    pub ratio_to_without_records: Option<f64>,
    pub intersection: usize,
    pub verified: bool,
    /// Whether the online phase ran from a precomputed state (`--precompute`).
    pub precomputed: bool,
    pub state_mib_sender: Option<f64>,
    pub state_mib_receiver: Option<f64>,
}

impl Row {
    /// The set sizes: `2^K` for equal sets of 2^K, else SENDER:RECEIVER, each `2^K` or
    /// the number.
    pub(crate) fn sizes_text(&self) -> String {
        let count = |n: u64| match n.is_power_of_two() {
            true => format!("2^{}", n.ilog2()),
            false => n.to_string(),
        };
        match (self.n_sender, self.n_receiver) {
            (s, r) if s == r && s.is_power_of_two() => count(s),
            (s, r) => format!("{}:{}", count(s), count(r)),
        }
    }

    /// The table's `log2n` column: K for equal sets of 2^K (the `--log2n` given), else
    /// [`Row::sizes_text`].
    fn log2n_column(&self) -> String {
        let text = self.sizes_text();
        text.strip_prefix("2^")
            .filter(|k| !k.contains(':'))
            .map_or(text.clone(), str::to_string)
    }
}

impl TableRow for Row {
    fn verified(&self) -> bool {
        self.verified
    }

    fn wrong(&self) -> String {
        format!(
            "{} at n = {} returned a wrong intersection ({} items)",
            self.protocol,
            self.sizes_text(),
            self.intersection
        )
    }

    fn print(&self) {
        let opt = |v: Option<f64>, prec: usize| v.map_or("-".into(), |v| format!("{v:.prec$}"));
        let mut extra = match (self.state_mib_sender, self.state_mib_receiver) {
            (Some(s), Some(r)) => format!("  state {s:.1} / {r:.1} MiB"),
            _ => String::new(),
        };
        if let Some(x) = self.ratio_to_plaintext {
            extra += &format!("  x plain {x:.3}");
        }
        if let (Some(name), Some(x)) = (&self.without_records, self.ratio_to_without_records) {
            extra += &format!("  x {name} {x:.3}");
        }
        let name = if self.tls {
            format!("{}+tls", self.protocol)
        } else {
            self.protocol.clone()
        };
        out!(
            "{:<18} {:>5} {:>7} {:>9.3} {:>9.3} {:>9.3} {:>10.2} {:>10.2} {:>13} {:>13} {:>8} {:>8} {:>8}{extra}",
            name, self.log2n_column(), self.threads, self.offline_s, self.online_s, self.total_s,
            self.mib_sender_to_receiver, self.mib_receiver_to_sender,
            // Each party's peak RSS over its memory model's figure, in MiB (`87/130`).
            format!("{}/{:.0}", opt(self.peak_rss_sender_mib, 0), self.memory_model_sender_mib),
            format!("{}/{:.0}", opt(self.peak_rss_receiver_mib, 0), self.memory_model_receiver_mib),
            opt(self.ratio_to_naive, 2), opt(self.ratio_to_kkrt16, 2),
            if self.verified { "yes" } else { "NO" }
        );
    }
}

/// Prints the table's head: the CPU line, what `--precompute` and `--tls` change, and the
/// columns of [`Row`]'s lines.
pub(super) fn print_header(precompute: bool, tls: bool) {
    out!("{}", super::table::cpu_line());
    if precompute {
        out!("online: a second session from the precomputed states (their size at the end of each row)");
    }
    out!(
        "{:<18} {:>5} {:>7} {:>9} {:>9} {:>9} {:>10} {:>10} {:>13} {:>13} {:>8} {:>8} {:>8}",
        "protocol",
        "log2n",
        "threads",
        "offline",
        "online",
        "total",
        "MiB s->r",
        "MiB r->s",
        "RSS/model s",
        "RSS/model r",
        "x naive",
        "x kkrt16",
        "verified"
    );
    if tls {
        out!("(a +tls row ran over TLS 1.3, interleaved with the plaintext runs; x plain compares them)");
    }
}
