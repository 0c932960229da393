//! `venn bench --solo`: each party alone against a recorded run, to see what its own
//! threads buy while the peer does not compete for the machine.

use super::party::PartyResult;
use super::run::{bench_one, last_json, spawn_party, transcript, Attached, Spawn};
use super::table::median;
use super::{BenchOptions, ScratchDir, Variant};
use crate::failure::{Failure, Result};
use serde::Serialize;
use std::path::Path;
use venn::session::{Role, Sizes};

/// One party run alone (`--solo`) at one thread count: the replay with the median time.
#[derive(Serialize, Clone, Debug)]
pub(super) struct SoloRow {
    pub protocol: String,
    pub log2n: u32,
    pub party: String,
    pub threads: usize,
    pub total_s: f64,
    /// Seconds per protocol phase, in order.
    pub phases: Vec<(String, f64)>,
}

/// The `--solo` table (printed unless `--json`): each protocol at each `--log2n`, its
/// parties replayed alone at each of `threads` — the counts run (bounded to the cores,
/// each once), which head the columns rather than `--threads` as typed.
pub(super) fn solo_table(
    o: &BenchOptions,
    variants: &[Variant],
    threads: &[usize],
) -> Result<Vec<SoloRow>> {
    if !o.json {
        let heads: String = threads
            .iter()
            .map(|t| format!(" {:>9}", format!("{t} thr")))
            .collect();
        out!(
            "\nsolo: each party alone against a recorded run (its messages checked byte for byte)\n{:<18} {:>5} {:<8} {:<38}{heads} {:>8}",
            "protocol", "log2n", "party", "phase (seconds)", "speed-up"
        );
    }
    let mut rows = Vec::new();
    for &log2n in o.log2ns {
        for &variant in variants {
            let at = bench_solo(variant, log2n, threads, o.repeat, o.timeout)?;
            if !o.json {
                print_solo(&at, threads);
            }
            rows.extend(at);
        }
    }
    Ok(rows)
}

/// `--solo` for one protocol at one n: records one run, then replays each party by
/// itself at each thread count. Both parties share this machine in a normal run, so only
/// alone does a party show what its own threads buy. Each replay must send exactly what
/// the recorded party sent (checked frame by frame), and the receiver must still find the
/// right intersection.
fn bench_solo(
    variant: Variant,
    log2n: u32,
    threads: &[usize],
    repeat: usize,
    timeout: u64,
) -> Result<Vec<SoloRow>> {
    let dir = ScratchDir::new()?;
    let n = 1u64 << log2n;
    let spawn = Spawn {
        variant,
        sizes: Sizes {
            sender: n,
            receiver: n,
        },
        seed: venn::crypto::Prg::from_entropy().block(),
        threads: threads[0],
        timeout,
        net: None,
    };
    let what = format!("{} at n = 2^{log2n}", variant.label());
    let recorded = bench_one(&spawn, Attached::Record(dir.path()), None)?;
    if !recorded.verified {
        return Err(Failure::Bench(format!(
            "{what}: the recorded run returned a wrong intersection"
        )));
    }
    let mut rows = Vec::new();
    for &t in threads {
        for role in [Role::Sender, Role::Receiver] {
            let spawn = Spawn {
                threads: t,
                ..spawn
            };
            let replayed = replay(&spawn, role, dir.path(), repeat, &what)?;
            rows.push(SoloRow {
                protocol: variant.label(),
                log2n,
                party: role.name().to_string(),
                threads: t,
                total_s: replayed.offline_s + replayed.online_s,
                phases: replayed.phases,
            });
        }
    }
    Ok(rows)
}

/// One party replayed alone `repeat` times against the run recorded in `dir`, each
/// replay's receiver checked (a wrong one is `what`'s failure): the median replay.
fn replay(spawn: &Spawn, role: Role, dir: &Path, repeat: usize, what: &str) -> Result<PartyResult> {
    let peer = match role {
        Role::Sender => Role::Receiver,
        Role::Receiver => Role::Sender,
    };
    let (inbound, outbound) = (transcript(dir, role), transcript(dir, peer));
    let link = ["--replay", &inbound, "--expect", &outbound].map(String::from);
    let runs = (0..repeat.max(1))
        .map(|_| {
            let r = last_json(spawn_party(role, spawn, &link)?, role.name())?;
            if role == Role::Receiver && r.verified != Some(true) {
                return Err(Failure::Bench(format!(
                    "{what}: the replayed receiver found a wrong intersection"
                )));
            }
            Ok(r)
        })
        .collect::<Result<Vec<_>>>()?;
    // A wrong replay ended the benchmark above: each of these verified.
    Ok(median(runs, |_| true, |r| r.offline_s + r.online_s))
}

/// Prints the `--solo` rows of one protocol at one n: each phase's time at each thread
/// count, and the speed-up from the first count to the last.
pub(super) fn print_solo(rows: &[SoloRow], threads: &[usize]) {
    for party in ["sender", "receiver"] {
        let of: Vec<&SoloRow> = threads
            .iter()
            .filter_map(|&t| rows.iter().find(|r| r.party == party && r.threads == t))
            .collect();
        let Some(first) = of.first() else { continue };
        let mut lines: Vec<(String, Vec<f64>)> = first
            .phases
            .iter()
            .filter(|(name, _)| name != "handshake")
            .map(|(name, _)| {
                let times = of
                    .iter()
                    .map(|r| {
                        r.phases
                            .iter()
                            .find(|(n, _)| n == name)
                            .map_or(0.0, |p| p.1)
                    })
                    .collect();
                (name.clone(), times)
            })
            .collect();
        lines.push(("total".into(), of.iter().map(|r| r.total_s).collect()));
        for (name, times) in lines {
            let cols: String = times.iter().map(|t| format!(" {t:>9.3}")).collect();
            let speedup = times[0] / times[times.len() - 1].max(1e-9);
            out!(
                "{:<18} {:>5} {:<8} {:<38}{cols} {:>8.2}",
                first.protocol,
                first.log2n,
                party,
                name,
                speedup
            );
        }
    }
}
