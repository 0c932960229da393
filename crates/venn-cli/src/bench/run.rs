//! One run of `venn bench`: a protocol at one pair of set sizes, its two parties (and
//! kbm23's dealer, if it takes one) started as processes of this binary over loopback,
//! their results collected into a [`Row`].

use super::party::PartyResult;
use super::process::{listening_at, this_binary};
use super::{Row, Variant};
use crate::failure::{Failure, Result};
use std::path::Path;
use std::process::{Child, Stdio};
use venn::crypto::Block;
use venn::protocols::Offline;
use venn::session::{Role, Sizes};

/// Where a recorded run's transcripts go: `<dir>/<role>.in`, what that party received.
pub(super) fn transcript(dir: &Path, role: Role) -> String {
    dir.join(format!("{}.in", role.name()))
        .to_string_lossy()
        .into_owned()
}

/// What both parties of one benchmark run are started with.
#[derive(Clone, Copy)]
pub(super) struct Spawn<'a> {
    pub variant: Variant<'a>,
    pub sizes: Sizes,
    pub seed: Block,
    pub threads: usize,
    pub timeout: u64,
    pub net: Option<&'a str>,
}

/// What each party of a benchmark run does besides the run itself.
#[derive(Clone, Copy)]
pub(super) enum Attached<'a> {
    Nothing,
    /// Writes what it receives into transcripts in this directory (for `--solo`).
    Record(&'a Path),
    /// Precomputes into a state file in this directory and runs online from it.
    Precompute(&'a Path),
}

/// Starts one party (`venn bench-party`), reaching its peer as `link` says.
pub(super) fn spawn_party(role: Role, s: &Spawn, link: &[String]) -> Result<Child> {
    let Spawn {
        variant,
        sizes,
        seed,
        threads,
        timeout,
        net,
    } = *s;
    Ok(this_binary()?
        .args([
            "bench-party",
            "--role",
            role.name(),
            "--protocol",
            variant.name,
        ])
        .args(variant.options.args())
        // Not among the options' arguments: a run of `venn send` takes its records' width
        // from its columns.
        .args(
            variant
                .options
                .payload
                .iter()
                .flat_map(|w| ["--payload".into(), w.to_string()]),
        )
        .args([
            "--sizes",
            &format!("{}:{}", sizes.sender, sizes.receiver),
            "--seed",
            &format!("{seed:032x}"),
        ])
        .args([
            "--threads",
            &threads.to_string(),
            "--timeout",
            &timeout.to_string(),
        ])
        .args(link)
        .args(net.iter().flat_map(|n| ["--net", n]))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?)
}

/// Waits for a party: the [`PartyResult`] it printed last.
pub(super) fn last_json(child: Child, who: &str) -> Result<PartyResult> {
    let out = child.wait_with_output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    if !out.status.success() {
        return Err(Failure::Bench(format!(
            "benchmark {who} failed ({})",
            out.status
        )));
    }
    serde_json::from_str(line)
        .map_err(|e| Failure::Bench(format!("benchmark {who} printed no result: {e}")))
}

/// A `venn dealer` for one session on loopback, and its address.
struct Dealer {
    child: Child,
    addr: String,
}

impl Dealer {
    /// The dealer of a run whose tuples come from one (`--offline dealer`), started.
    fn start_for(spawn: &Spawn) -> Result<Option<Dealer>> {
        match spawn.variant.options.offline {
            Offline::Ot | Offline::Bfv | Offline::Iknp => Ok(None),
            Offline::Dealer => {
                let mut child = this_binary()?
                    .args(["dealer", "--listen", "127.0.0.1:0", "--sessions", "1"])
                    .args(["--timeout", &spawn.timeout.to_string()])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::inherit())
                    .spawn()?;
                let addr = listening_at(&mut child, "dealer")?;
                Ok(Some(Dealer { child, addr }))
            }
        }
    }

    /// Waits for the dealer, which must have served its session.
    fn finish(mut self) -> Result<()> {
        match self.child.wait()?.success() {
            true => Ok(()),
            false => Err(Failure::Bench("the benchmark's dealer failed".into())),
        }
    }
}

/// How one party of a run reaches its peer: `endpoint` (`--listen` or `--connect` and an
/// address), over TLS with the identities in `tls` if given, doing `attached` besides,
/// and taking its tuples from `dealer` if there is one.
fn party_link(
    endpoint: [&str; 2],
    role: Role,
    attached: Attached,
    tls: Option<&Path>,
    dealer: Option<&Dealer>,
) -> Vec<String> {
    let mut v: Vec<String> = endpoint.iter().map(|s| s.to_string()).collect();
    if let Some(dir) = tls {
        v.extend(["--tls-dir".to_string(), dir.to_string_lossy().into_owned()]);
    }
    match attached {
        Attached::Nothing => {}
        Attached::Record(dir) => v.extend(["--record".to_string(), transcript(dir, role)]),
        Attached::Precompute(dir) => v.extend([
            "--precompute".to_string(),
            dir.to_string_lossy().into_owned(),
        ]),
    }
    if let Some(dealer) = dealer {
        v.extend(["--dealer".to_string(), dealer.addr.clone()]);
    }
    v
}

/// Both parties' results, the sender's first.
struct Parties {
    sender: PartyResult,
    receiver: PartyResult,
}

/// Runs one protocol at one n on items drawn from `spawn.seed`, each party doing
/// `attached` besides; over TLS with the identities in `tls` if given. The receiver checks
/// its output against the known intersection ([`Row::verified`]).
pub(super) fn bench_one(spawn: &Spawn, attached: Attached, tls: Option<&Path>) -> Result<Row> {
    let dealer = Dealer::start_for(spawn)?;
    let link = |endpoint, role| party_link(endpoint, role, attached, tls, dealer.as_ref());
    let mut receiver = spawn_party(
        Role::Receiver,
        spawn,
        &link(["--listen", "127.0.0.1:0"], Role::Receiver),
    )?;
    let addr = listening_at(&mut receiver, "receiver")?;
    let sender = spawn_party(
        Role::Sender,
        spawn,
        &link(["--connect", &addr], Role::Sender),
    )?;
    let parties = Parties {
        sender: last_json(sender, "sender")?,
        receiver: last_json(receiver, "receiver")?,
    };
    if let Some(dealer) = dealer {
        dealer.finish()?;
    }
    Ok(row(spawn, attached, tls, &parties))
}

/// The row of one run: each phase as long as the slower party took, the traffic each way,
/// each party's peak memory beside its model's, and the receiver's verdict.
fn row(spawn: &Spawn, attached: Attached, tls: Option<&Path>, parties: &Parties) -> Row {
    let (s, r) = (&parties.sender, &parties.receiver);
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    Row {
        protocol: spawn.variant.label(),
        tls: tls.is_some(),
        n_sender: spawn.sizes.sender,
        n_receiver: spawn.sizes.receiver,
        threads: spawn.threads,
        net: spawn.net.map(str::to_string),
        offline_s: s.offline_s.max(r.offline_s),
        online_s: s.online_s.max(r.online_s),
        total_s: (s.offline_s + s.online_s).max(r.offline_s + r.online_s),
        mib_sender_to_receiver: mib(s.sent),
        mib_receiver_to_sender: mib(r.sent),
        peak_rss_sender_mib: s.peak_rss.map(mib),
        peak_rss_receiver_mib: r.peak_rss.map(mib),
        memory_model_sender_mib: mib(s.memory_needed),
        memory_model_receiver_mib: mib(r.memory_needed),
        ratio_to_naive: None,
        ratio_to_kkrt16: None,
        ratio_to_plaintext: None,
        without_records: spawn.variant.without_records(),
        ratio_to_without_records: None,
        intersection: r.intersection.unwrap_or(0),
        verified: r.verified == Some(true),
        precomputed: matches!(attached, Attached::Precompute(_)),
        state_mib_sender: s.state_bytes.map(mib),
        state_mib_receiver: r.state_bytes.map(mib),
    }
}
