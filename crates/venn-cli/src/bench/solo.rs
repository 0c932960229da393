//! `venn bench --solo`: each party alone against a recorded run, to see what its own
//! threads buy while the peer does not compete for the machine.

use super::{bench_one, last_json, spawn_party, Attached, ScratchDir, Spawn, Variant};
use crate::failure::{Failure, Result};
use serde::Serialize;
use std::path::Path;
use venn::session::{Role, Sizes};

/// Where a recorded run's transcripts go: `<dir>/<role>.in`, what that party received.
pub(super) fn transcript(dir: &Path, role: Role) -> String {
    dir.join(format!("{}.in", role.name()))
        .to_string_lossy()
        .into_owned()
}

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

/// `--solo`: records one run, then replays each party by itself at each thread count. Both
/// parties share this machine in a normal run, so only alone does a party show what its
/// own threads buy. Each replay must send exactly what the recorded party sent (checked
/// frame by frame), and the receiver must still find the right intersection.
pub(super) fn bench_solo(
    variant: Variant,
    log2n: u32,
    threads: &[usize],
    repeat: usize,
    timeout: u64,
) -> Result<Vec<SoloRow>> {
    let dir = ScratchDir::new()?;
    let seed = venn::crypto::Prg::from_entropy().block();
    let protocol = variant.label();
    let n = 1u64 << log2n;
    let spawn = Spawn {
        variant,
        sizes: Sizes {
            sender: n,
            receiver: n,
        },
        seed,
        threads: threads[0],
        timeout,
        net: None,
    };
    let recorded = bench_one(&spawn, Attached::Record(dir.path()), None)?;
    if !recorded.verified {
        return Err(Failure::Bench(format!(
            "{protocol} at n = 2^{log2n}: the recorded run returned a wrong intersection"
        )));
    }
    let mut rows = Vec::new();
    for &t in threads {
        for (role, peer) in [
            (Role::Sender, Role::Receiver),
            (Role::Receiver, Role::Sender),
        ] {
            let (inbound, outbound) = (transcript(dir.path(), role), transcript(dir.path(), peer));
            let link = ["--replay", &inbound, "--expect", &outbound].map(String::from);
            let mut runs = (0..repeat.max(1))
                .map(|_| {
                    let r = last_json(
                        spawn_party(role, &Spawn { threads: t, ..spawn }, &link)?,
                        role.name(),
                    )?;
                    if role == Role::Receiver && r.verified != Some(true) {
                        return Err(Failure::Bench(format!(
                            "{protocol} at n = 2^{log2n}: the replayed receiver found a wrong intersection"
                        )));
                    }
                    Ok(r)
                })
                .collect::<Result<Vec<_>>>()?;
            runs.sort_by(|a, b| (a.offline_s + a.online_s).total_cmp(&(b.offline_s + b.online_s)));
            let mid = runs.swap_remove(runs.len() / 2);
            rows.push(SoloRow {
                protocol: protocol.clone(),
                log2n,
                party: role.name().to_string(),
                threads: t,
                total_s: mid.offline_s + mid.online_s,
                phases: mid.phases,
            });
        }
    }
    Ok(rows)
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
