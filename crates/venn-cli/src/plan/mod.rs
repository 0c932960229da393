//! `venn plan`: which protocol to run, before running it. Lists every protocol that gives
//! the output asked for against the adversary asked for, with its predicted time, traffic
//! and memory per party for the given set sizes, network and cores, and recommends one.
//!
//! Time, traffic and each party's peak memory come from the cost model ([`model`]) fitted
//! to `venn bench` rows of this build (`costs.json`, refreshed by `scripts/plan-fit.sh`),
//! for both set sizes; beside the peak, the figure `--max-memory` is held to: the
//! protocol's own memory model and the process's base, with the input as `venn bench`
//! holds it (16-byte keys), never less than the peak of that run.

mod model;

use crate::bench::{bench_input_memory, Row};
use model::{Costs, Fit, Net, Predicted};
use serde::Serialize;
use venn::protocols::{registry, Offline, Options, OutputKind, Protocol, Security};
use venn::session::{Role, Sizes};
use venn::{Error, Result, RunOptions};

/// The committed fit: `scripts/plan-fit.sh` writes it from `venn bench` on this build.
const COSTS: &str = include_str!("costs.json");

/// What `venn plan` is asked.
pub(crate) struct PlanOptions<'a> {
    /// Items on this side, and the peer's.
    pub n_self: u64,
    pub n_peer: u64,
    /// The role this side plays.
    pub role: Role,
    /// The link (`--net`, as `venn bench` takes it).
    pub net: &'a str,
    /// The adversary to be secure against.
    pub threat: Security,
    /// What the receiver learns.
    pub output: OutputKind,
    /// Cores per party.
    pub cores: usize,
    /// The keys are integers below 2^sigma (protocols on σ-bit items become eligible).
    pub sigma: Option<u32>,
    pub json: bool,
}

/// One eligible protocol variant, predicted.
#[derive(Serialize)]
struct Candidate {
    protocol: String,
    /// What to pass to `venn send/receive` besides `--protocol`.
    flags: String,
    security: &'static str,
    /// The thread count whose fit the prediction is from.
    threads: usize,
    #[serde(flatten)]
    predicted: Predicted,
    /// Each party's memory by the protocol's own model with the base and a benchmark's
    /// input ([`venn::memory_needed`]): what `--max-memory` must allow, in bytes.
    sender_memory: u64,
    receiver_memory: u64,
    /// Why it is not recommended whatever its speed, if it is not.
    caveat: Option<&'static str>,
}

impl Candidate {
    /// Whether either party's predicted peak passes its memory model's figure (by more
    /// than the measurements' noise, 5%): a model too low for these sizes. Not where the
    /// peak is read beyond the sizes measured: a cost per item that falls with the other
    /// set (KKRT16's stash) is then read too high.
    fn model_below_peak(&self) -> bool {
        let p = &self.predicted;
        !p.extrapolated
            && (p.sender_peak > 1.05 * self.sender_memory as f64
                || p.receiver_peak > 1.05 * self.receiver_memory as f64)
    }

    /// The protocol as `venn send/receive` take it.
    fn label(&self) -> String {
        match self.flags.as_str() {
            "" => self.protocol.clone(),
            f => format!("{} {f}", self.protocol),
        }
    }
}

/// The committed fit.
fn costs() -> Costs {
    serde_json::from_str(COSTS).expect("costs.json is what `venn plan --fit` writes")
}

/// The fit for `label` at the most threads measured up to `cores`.
fn fit_for<'c>(costs: &'c Costs, label: &str, cores: usize) -> Option<&'c Fit> {
    (costs.fits.iter())
        .filter(|f| f.protocol == label && f.threads <= cores.max(1))
        .max_by_key(|f| f.threads)
}

/// Whether `p`'s receiver learns `output`, and `p` holds against `threat`.
fn eligible(p: &dyn Protocol, threat: Security, output: OutputKind) -> bool {
    let info = p.info();
    let secure = match threat {
        Security::Malicious => info.security == Security::Malicious,
        _ => info.security != Security::Insecure,
    };
    secure && info.role(Role::Receiver).output == output
}

/// The variants of `p` `venn plan` may list for keys of any length or of the bit lengths
/// in `sigmas` (`None`: any length), each with its label in the fit.
fn listed(p: &'static dyn Protocol, sigmas: &[Option<u32>]) -> Vec<(Options, String)> {
    let offlines = [Offline::Ot, Offline::Bfv, Offline::Dealer];
    (p.variants(&[], sigmas, &offlines).into_iter())
        // Refused: a --sigma the protocol does not take, or none where it needs one.
        .filter(|options| options.check(p.info(), p.accepts()).is_ok())
        .map(|options| {
            let label = crate::bench::Variant {
                name: p.info().name,
                options,
            }
            .label();
            (options, label)
        })
        .collect()
}

/// What `venn plan` found: the variants it lists, and why the others it would have listed
/// refuse the sizes.
struct Found {
    /// Every eligible variant that takes the sizes, predicted, fastest first.
    candidates: Vec<Candidate>,
    /// The refusals of the eligible variants that do not (each once).
    refused: Vec<String>,
    /// The eligible variants this build has no cost model for (measured by
    /// `scripts/plan-fit.sh`; a protocol added since the last refit).
    not_fitted: Vec<String>,
}

/// Every eligible variant, predicted, fastest first: only those that take the sizes, as
/// the handshake decides ([`venn::check_sizes`]).
fn candidates(o: &PlanOptions, costs: &Costs) -> Result<Found> {
    let net = Net::parse(o.net)?;
    let (sender, receiver) = match o.role {
        Role::Sender => (o.n_self, o.n_peer),
        Role::Receiver => (o.n_peer, o.n_self),
    };
    let sizes = Sizes { sender, receiver };
    let sigmas: &[Option<u32>] = match o.sigma {
        Some(s) => &[None, Some(s)],
        None => &[None],
    };
    let mut found = Found {
        candidates: Vec::new(),
        refused: Vec::new(),
        not_fitted: Vec::new(),
    };
    for &p in registry() {
        if !eligible(p, o.threat, o.output) {
            continue;
        }
        for (options, label) in listed(p, sigmas) {
            let Some(fit) = fit_for(costs, &label, o.cores) else {
                found.not_fitted.push(label);
                continue;
            };
            let opts = |role| run_options(p, options, fit.threads, sizes, role);
            if let Err(e) = venn::check_sizes(&opts(o.role), sizes) {
                let why = e.to_string();
                if !found.refused.contains(&why) {
                    found.refused.push(why);
                }
                continue;
            }
            let memory = |role| venn::memory_needed(&opts(role), sizes);
            found.candidates.push(Candidate {
                protocol: p.info().name.to_string(),
                flags: options.flags(),
                security: p.info().security.name(),
                threads: fit.threads,
                predicted: fit.predict(sender as f64, receiver as f64, Some(net)),
                sender_memory: memory(Role::Sender),
                receiver_memory: memory(Role::Receiver),
                caveat: caveat(options),
            });
        }
    }
    (found.candidates).sort_by(|a, b| a.predicted.seconds.total_cmp(&b.predicted.seconds));
    Ok(found)
}

/// How `role` of `p` runs `sizes` for `venn plan`: with no limits, and the input as
/// `venn bench` holds it, so that [`venn::memory_needed`] is what `--max-memory` must
/// allow for that run.
fn run_options(
    p: &'static dyn Protocol,
    options: Options,
    threads: usize,
    sizes: Sizes,
    role: Role,
) -> RunOptions<'static> {
    let own = match role {
        Role::Sender => sizes.sender,
        Role::Receiver => sizes.receiver,
    };
    RunOptions {
        protocol: p,
        role,
        both: false,
        options,
        max_peer_items: venn::MAX_ITEMS,
        max_memory: u64::MAX,
        input_memory: bench_input_memory(p, options, role, own),
        threads,
        seed: None,
        progress: None,
        dealer: None,
        upload_deadline: None,
        in_buckets: None,
    }
}

/// What keeps a variant from being recommended, however fast.
fn caveat(options: Options) -> Option<&'static str> {
    (options.offline == Offline::Dealer)
        .then_some("needs a third party, a dealer trusted not to collude with either")
}

/// Why the first candidate without a caveat is the one to run.
fn recommend(list: &[Candidate], net: &str) -> Option<String> {
    let best = list.iter().find(|c| c.caveat.is_none())?;
    let p = &best.predicted;
    let mut why = format!(
        "--protocol {}: the fastest predicted here ({})",
        best.label(),
        seconds(p.seconds)
    );
    if let Some(next) = list
        .iter()
        .find(|c| !std::ptr::eq(*c, best) && c.caveat.is_none())
    {
        why += &format!(
            ", {:.1}× less time than the next, {} ({})",
            next.predicted.seconds / p.seconds,
            next.label(),
            seconds(next.predicted.seconds)
        );
    }
    if p.network_seconds > 0.5 * p.seconds {
        why += &format!(
            "; on {net} the link takes {:.0}% of it: traffic decides",
            100.0 * p.network_seconds / p.seconds
        );
    }
    Some(why)
}

fn seconds(s: f64) -> String {
    if s < 10.0 {
        format!("{s:.2} s")
    } else {
        format!("{s:.0} s")
    }
}

fn mib(b: f64) -> f64 {
    b / (1u64 << 20) as f64
}

/// `venn plan`.
pub(crate) fn plan(o: &PlanOptions) -> Result<()> {
    if o.n_self == 0 || o.n_peer == 0 || o.n_self.max(o.n_peer) > venn::MAX_ITEMS {
        return Err(Error::Usage(format!(
            "set sizes are 1 to {} items",
            venn::MAX_ITEMS
        )));
    }
    let costs = costs();
    if costs.fits.is_empty() {
        return Err(Error::Usage(
            "this build's cost model is empty: run scripts/plan-fit.sh and rebuild".into(),
        ));
    }
    let Found {
        candidates: list,
        refused,
        not_fitted,
    } = candidates(o, &costs)?;
    let recommended = recommend(&list, o.net);
    if o.json {
        let out = serde_json::json!({
            "measured": costs.measured,
            "candidates": list,
            "refused": refused,
            "not_fitted": not_fitted,
            "recommended": recommended,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&out).expect("serialisable")
        );
        return Ok(());
    }
    let (us, them) = match o.role {
        Role::Sender => ("sender", "receiver"),
        Role::Receiver => ("receiver", "sender"),
    };
    println!(
        "{} items here (the {us}), {} at the {them}; --net {}; {} core{} per party; secure \
         against {} parties; the receiver learns {}",
        o.n_self,
        o.n_peer,
        o.net,
        o.cores,
        if o.cores == 1 { "" } else { "s" },
        o.threat.name(),
        o.output.name()
    );
    println!(
        "predicted from `venn bench` of this build ({})\n",
        costs.measured
    );
    if list.is_empty() {
        let sizes = if refused.is_empty() {
            ""
        } else {
            " at these sizes"
        };
        println!("no protocol here gives that output against that adversary{sizes}");
        print_left_out(&refused, &not_fitted);
        return Ok(());
    }
    println!(
        "{:<40} {:<12} {:>9} {:>9} {:>21} {:>14} {:>15}",
        "protocol",
        "security",
        "time",
        "of it net",
        "traffic MiB s→r/r→s",
        "peak MiB s/r",
        "model MiB s/r"
    );
    for c in &list {
        let p = &c.predicted;
        println!(
            "{:<40} {:<12} {:>9} {:>9} {:>21} {:>14} {:>15}{}",
            c.label(),
            c.security,
            seconds(p.seconds) + if p.extrapolated { "*" } else { "" },
            seconds(p.network_seconds),
            format!("{:.1} / {:.1}", mib(p.sender_bytes), mib(p.receiver_bytes)),
            format!("{:.0} / {:.0}", mib(p.sender_peak), mib(p.receiver_peak)),
            format!(
                "{:.0} / {:.0}",
                mib(c.sender_memory as f64),
                mib(c.receiver_memory as f64)
            ) + if c.model_below_peak() { "!" } else { "" },
            c.caveat.map_or(String::new(), |w| format!("  ({w})")),
        );
    }
    if let Some(most) = list
        .iter()
        .map(|c| c.threads)
        .max()
        .filter(|&t| t < o.cores)
    {
        println!(
            "{} cores: predicted from runs of {most} threads a party, the most measured",
            o.cores
        );
    }
    if list.iter().any(|c| c.predicted.extrapolated) {
        println!("* beyond the largest set measured: read at its last cost per item");
    }
    println!(
        "peak: as measured with 16-byte keys (a file's other columns add to it); model: what \
         --max-memory must allow"
    );
    if list.iter().any(Candidate::model_below_peak) {
        println!(
            "! the peak predicted passes the protocol's memory model: --max-memory would accept \
             a run that takes more, so allow the peak"
        );
    }
    print_left_out(&refused, &not_fitted);
    match recommended {
        Some(why) => println!("\nrecommended: {why}"),
        None => println!("\nno protocol without a third party gives that"),
    }
    Ok(())
}

/// The eligible variants left out: why those that refuse the sizes do (their handshake's
/// words), and those this build cannot predict.
fn print_left_out(refused: &[String], not_fitted: &[String]) {
    for why in refused {
        println!("not listed: {why}");
    }
    if !not_fitted.is_empty() {
        println!(
            "not fitted (no cost model in this build; scripts/plan-fit.sh measures them): {}",
            not_fitted.join(", ")
        );
    }
}

/// The rows of `venn bench --json` outputs.
fn bench_rows(files: &[std::path::PathBuf]) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).map_err(Error::file("read", file))?;
        let bad = |e: serde_json::Error| {
            Error::Usage(format!("{}: not venn bench --json: {e}", file.display()))
        };
        let json: serde_json::Value = serde_json::from_str(&text).map_err(bad)?;
        rows.extend(serde_json::from_value::<Vec<Row>>(json["rows"].clone()).map_err(bad)?);
    }
    Ok(rows)
}

/// `venn plan --fit`: the cost model fitted to `venn bench --json` outputs, as JSON.
pub(crate) fn fit(files: &[std::path::PathBuf], measured: String) -> Result<()> {
    let costs = model::fit(&bench_rows(files)?, measured)?;
    println!(
        "{}",
        serde_json::to_string_pretty(&costs).expect("serialisable")
    );
    Ok(())
}

/// The variant of `venn bench`'s label `label` that `venn plan` may list.
fn variant(label: &str) -> Option<(&'static dyn Protocol, Options)> {
    (registry().iter())
        .flat_map(|&p| {
            listed(p, &[None, Some(32), Some(64)])
                .into_iter()
                .map(move |v| (p, v))
        })
        .find(|(_, (_, l))| l == label)
        .map(|(p, (options, _))| (p, options))
}

/// `venn plan --check`: each row of `venn bench --json` outputs beside what the committed
/// fit predicts for it — its time, each direction's traffic and each party's peak — and
/// what `--max-memory` must allow beside the peak (a ratio of at least 1).
pub(crate) fn check(files: &[std::path::PathBuf]) -> Result<()> {
    let costs = costs();
    println!(
        "{:<24} {:>13} {:>7} {:<14} {:<12} {:>10} {:>10} {:>7}",
        "protocol", "sets", "threads", "net", "figure", "measured", "predicted", "ratio"
    );
    for r in bench_rows(files)?
        .iter()
        .filter(|r| !r.tls && !r.precomputed)
    {
        let (Some(fit), Some((protocol, options))) = (
            fit_for(&costs, &r.protocol, r.threads),
            variant(&r.protocol),
        ) else {
            println!("{:<24} not in the fit", r.protocol);
            continue;
        };
        let net = r.net.as_deref().map(Net::parse).transpose()?;
        let p = fit.predict(r.n_sender as f64, r.n_receiver as f64, net);
        let sizes = Sizes {
            sender: r.n_sender,
            receiver: r.n_receiver,
        };
        let model = |role| {
            let opts = run_options(protocol, options, r.threads, sizes, role);
            mib(venn::memory_needed(&opts, sizes) as f64)
        };
        // A row without a peak (measured on Linux only) compares as NaN.
        let peak = |measured: Option<f64>| measured.unwrap_or(f64::NAN);
        let figures = [
            ("seconds", r.total_s, p.seconds),
            ("MiB s→r", r.mib_sender_to_receiver, mib(p.sender_bytes)),
            ("MiB r→s", r.mib_receiver_to_sender, mib(p.receiver_bytes)),
            (
                "peak MiB s",
                peak(r.peak_rss_sender_mib),
                mib(p.sender_peak),
            ),
            (
                "peak MiB r",
                peak(r.peak_rss_receiver_mib),
                mib(p.receiver_peak),
            ),
            (
                "model MiB s",
                peak(r.peak_rss_sender_mib),
                model(Role::Sender),
            ),
            (
                "model MiB r",
                peak(r.peak_rss_receiver_mib),
                model(Role::Receiver),
            ),
        ];
        for (i, (figure, measured, predicted)) in figures.into_iter().enumerate() {
            let [protocol, sets, threads, net] = match i {
                0 => [
                    r.protocol.clone(),
                    r.sizes_text(),
                    r.threads.to_string(),
                    r.net.as_deref().unwrap_or("loopback").to_string(),
                ],
                _ => Default::default(),
            };
            println!(
                "{protocol:<24} {sets:>13} {threads:>7} {net:<14} {figure:<12} {measured:>10.3} \
                 {predicted:>10.3} {:>7.2}",
                predicted / measured
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(threat: Security, output: OutputKind, sigma: Option<u32>) -> PlanOptions<'static> {
        PlanOptions {
            n_self: 1 << 20,
            n_peer: 1 << 18,
            role: Role::Receiver,
            net: "wan",
            threat,
            output,
            cores: 1,
            sigma,
            json: false,
        }
    }

    /// A variant the fit lacks (a protocol added since the last refit) is named as not
    /// fitted, neither listed nor dropped in silence.
    #[test]
    fn a_variant_without_a_cost_model_is_named_not_fitted() {
        let mut costs = costs();
        let o = asked(Security::SemiHonest, OutputKind::Indices, None);
        assert!(candidates(&o, &costs).unwrap().not_fitted.is_empty());
        costs.fits.retain(|f| f.protocol != "kkrt16");
        let found = candidates(&o, &costs).unwrap();
        assert_eq!(found.not_fitted, ["kkrt16"]);
        assert!(found.candidates.iter().all(|c| c.protocol != "kkrt16"));
        assert!(found.candidates.iter().any(|c| c.protocol == "rr22"));
    }

    /// Each variant the committed fit has was measured at 1 and 2 threads, on equal and
    /// unequal sets (a refit that left some rows out).
    #[test]
    fn every_fitted_variant_was_measured_whole() {
        let costs = costs();
        for fit in &costs.fits {
            let label = &fit.protocol;
            let threads: Vec<usize> = (costs.fits.iter())
                .filter(|f| &f.protocol == label)
                .map(|f| f.threads)
                .collect();
            assert!(
                threads.contains(&1) && threads.contains(&2),
                "{label}: {threads:?}"
            );
            assert!(
                fit.small_log2n.is_some()
                    && !fit.larger_sender.is_empty()
                    && !fit.larger_receiver.is_empty(),
                "{label} at {} threads was not measured on unequal sets",
                fit.threads
            );
        }
    }

    /// Only protocols that give the output asked for against the adversary asked for are
    /// listed, fastest first; a dealer's variant is listed but never recommended.
    #[test]
    fn the_list_holds_what_was_asked_for() {
        let costs = costs();
        let malicious = candidates(
            &asked(Security::Malicious, OutputKind::Indices, None),
            &costs,
        )
        .unwrap()
        .candidates;
        assert!(malicious.iter().any(|c| c.protocol == "rr22-m"));
        assert!(malicious
            .iter()
            .all(|c| c.security == Security::Malicious.name()));
        let counts = candidates(
            &asked(Security::SemiHonest, OutputKind::Count, None),
            &costs,
        )
        .unwrap()
        .candidates;
        let names: Vec<&str> = counts.iter().map(|c| c.protocol.as_str()).collect();
        assert!(
            names.contains(&"psww18-ca") && names.contains(&"dgt12-ca"),
            "{names:?}"
        );
        assert!(
            counts.iter().all(|c| c.protocol.ends_with("-ca")),
            "{names:?}"
        );
        // Keys of any length: no variant that needs --sigma.
        assert!(
            counts.iter().all(|c| !c.flags.contains("--sigma")),
            "{names:?}"
        );
        let semi = candidates(
            &asked(Security::SemiHonest, OutputKind::Indices, Some(32)),
            &costs,
        )
        .unwrap()
        .candidates;
        assert!(semi
            .windows(2)
            .all(|w| w[0].predicted.seconds <= w[1].predicted.seconds));
        assert!(semi.iter().any(|c| c.flags.contains("--offline dealer")));
        assert!(semi.iter().any(|c| c.flags.contains("--sigma 32")));
        assert!(semi.iter().all(|c| c.protocol != "naive"));
        let why = recommend(&semi, "wan").unwrap();
        assert!(!why.contains("dealer"), "{why}");
        // The receiver's memory is for 2^20 items of its own and 2^18 of the peer's.
        let rr22 = semi.iter().find(|c| c.protocol == "rr22").unwrap();
        assert!(
            rr22.receiver_memory > rr22.sender_memory,
            "{}",
            rr22.receiver_memory
        );
    }

    /// A predicted peak above the memory model's figure (more than noise) is flagged.
    #[test]
    fn a_memory_model_below_the_peak_is_flagged() {
        let mib = 1u64 << 20;
        let with = |sender_peak: u64, receiver_peak: u64| Candidate {
            protocol: "kkrt16".into(),
            flags: String::new(),
            security: "semi-honest",
            threads: 1,
            predicted: Predicted {
                seconds: 1.0,
                network_seconds: 0.0,
                sender_bytes: 0.0,
                receiver_bytes: 0.0,
                sender_peak: (sender_peak * mib) as f64,
                receiver_peak: (receiver_peak * mib) as f64,
                extrapolated: false,
            },
            sender_memory: 100 * mib,
            receiver_memory: 200 * mib,
            caveat: None,
        };
        assert!(!with(104, 200).model_below_peak());
        assert!(with(106, 10).model_below_peak());
        assert!(with(10, 211).model_below_peak());
        let mut beyond = with(106, 10);
        beyond.predicted.extrapolated = true;
        assert!(!beyond.model_below_peak());
    }

    #[test]
    fn set_sizes_are_checked() {
        let mut o = asked(Security::SemiHonest, OutputKind::Indices, None);
        o.n_peer = 0;
        assert!(plan(&o).is_err());
        o.n_peer = venn::MAX_ITEMS + 1;
        assert!(plan(&o).is_err());
    }
}
