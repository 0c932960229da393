//! `venn send` and `venn receive`: one party of a PSI run on a file, over TCP.

use crate::input::{read_input, KeyOptions};
use crate::output::{write_atomically, write_rows, Stats};
use crate::progress::Spinner;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use venn::net::{tcp_connect, tcp_listen};
use venn::protocols::{find, Progress, Security};
use venn::session::Role;
use venn::{Error, Report, Result, RunOptions};

/// Where the peer is.
#[derive(Clone, Debug)]
pub enum Endpoint {
    /// Wait for the peer on this address.
    Listen(String),
    /// Connect to the peer at this address (retrying until the timeout).
    Connect(String),
}

/// Everything one party needs.
#[derive(Clone, Debug)]
pub struct PartyArgs {
    pub protocol: String,
    pub endpoint: Endpoint,
    pub input: PathBuf,
    pub output: Option<PathBuf>,
    pub keys: KeyOptions,
    pub threads: usize,
    pub timeout: Duration,
    pub stats_json: Option<PathBuf>,
    pub insecure: bool,
    pub both: bool,
    pub max_peer_items: u64,
}

/// What a finished party reports.
pub struct Outcome {
    pub report: Report,
    pub rows_written: Option<usize>,
}

/// Runs one party; `on_bound` is told the listening address (with `--listen`).
pub fn run_party(
    args: &PartyArgs,
    role: Role,
    on_bound: impl FnOnce(SocketAddr),
) -> Result<Outcome> {
    let protocol = find(&args.protocol)?;
    let info = protocol.info();
    if info.security == Security::Insecure && !args.insecure {
        return Err(Error::Usage(format!(
            "protocol '{}' is INSECURE (a benchmark baseline that reveals hashes of all items); \
             pass --insecure if you really mean it",
            info.name
        )));
    }
    if role == Role::Receiver && args.output.is_none() {
        return Err(Error::Usage("receive needs --output FILE".into()));
    }
    if let Some(out) = &args.output {
        if out == &args.input {
            return Err(Error::Usage("--output must not be the input file".into()));
        }
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.is_dir() {
                return Err(Error::Usage(format!(
                    "output directory '{}' does not exist",
                    dir.display()
                )));
            }
        }
    }
    let input = read_input(&args.input, &args.keys)?;
    if input.duplicates > 0 {
        eprintln!(
            "venn: warning: {} rows repeat an earlier key in '{}'; each key is run once and all \
             its rows are output",
            input.duplicates,
            args.input.display()
        );
    }
    if input.skipped_empty > 0 {
        eprintln!(
            "venn: warning: skipped {} rows with an empty key",
            input.skipped_empty
        );
    }
    let mut chan = match &args.endpoint {
        Endpoint::Listen(a) => tcp_listen(a, args.timeout, on_bound)?,
        Endpoint::Connect(a) => tcp_connect(a, args.timeout)?,
    };
    let spinner = Spinner::if_terminal(&format!("venn {}", role.name()));
    let opts = RunOptions {
        protocol,
        role,
        both: args.both,
        max_peer_items: args.max_peer_items,
        threads: args.threads,
        seed: None,
        progress: spinner.as_ref().map(|s| s as &dyn Progress),
    };
    let report = venn::run(&mut chan, &input.keys, &opts)?;
    drop(spinner);
    let rows_written = match (&report.intersection, &args.output) {
        (Some(ix), Some(path)) => Some(write_rows(path, &input, ix)?),
        _ => None,
    };
    if let Some(path) = &args.stats_json {
        let stats = Stats::new(&report, &input, rows_written, args.threads);
        write_atomically(path, |w| {
            serde_json::to_writer_pretty(&mut *w, &stats)?;
            w.write_all(b"\n")
        })?;
    }
    Ok(Outcome {
        report,
        rows_written,
    })
}

/// The one-line summary printed on stderr.
pub fn summary(o: &Outcome) -> String {
    let r = &o.report;
    let insecure = match find(r.protocol).map(|p| p.info().security) {
        Ok(Security::Insecure) => " (INSECURE)",
        _ => "",
    };
    let result = match (&r.intersection, o.rows_written) {
        (Some(ix), Some(rows)) => format!("intersection {} keys, {rows} rows written", ix.len()),
        (Some(ix), None) => format!("intersection {} keys", ix.len()),
        (None, _) => "intersection sent to the receiver only".to_string(),
    };
    format!(
        "venn {}{insecure} {}: {} keys, peer {} keys, {result} | offline {:.3} s, online {:.3} s | sent {:.2} MB, received {:.2} MB",
        r.protocol,
        r.role.name(),
        r.n_self,
        r.n_peer,
        r.offline().as_secs_f64(),
        r.online().as_secs_f64(),
        r.traffic.sent as f64 / 1e6,
        r.traffic.received as f64 / 1e6,
    )
}
