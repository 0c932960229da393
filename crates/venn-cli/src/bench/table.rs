//! What the benchmark's tables share: the CPU line they start with, the sizes they run
//! checked before any run, repeated runs interleaved and reduced to their median, each row
//! printed and refused unless it verified, and the JSON document they print instead with
//! `--json`.

use crate::failure::{Failure, Result};
use std::ops::RangeInclusive;

/// The CPU level the parties run at (they inherit `VENN_CPU`) and what it means here: the
/// first line of every benchmark table, and the `cpu` of its JSON.
pub(super) fn cpu_line() -> String {
    format!("cpu: {}", venn::util::cpu::describe())
}

/// Refuses any of `log2ns` outside `range`, the sizes 2^K that `table` (`--files`,
/// `--thunder`) runs, in `unit`s: called before the first run, so that a size too large
/// is not met only after the smaller ones have taken their minutes.
pub(super) fn check_log2ns(
    table: &str,
    range: RangeInclusive<u32>,
    unit: &str,
    log2ns: &[u32],
) -> Result<()> {
    match log2ns.iter().find(|k| !range.contains(k)) {
        Some(k) => Err(Failure::Bench(format!(
            "{table} runs 2^{} to 2^{} {unit}, not 2^{k}",
            range.start(),
            range.end()
        ))),
        None => Ok(()),
    }
}

/// A row of one of the benchmark's tables.
pub(super) trait TableRow {
    /// Whether the run's output was checked and found right.
    fn verified(&self) -> bool;
    /// What the benchmark fails with when it was not.
    fn wrong(&self) -> String;
    /// Prints the row as a line of the table.
    fn print(&self);
}

/// Runs each of `each` `repeat` times (at least once), interleaved — all of them once,
/// then all again — so that a slow spell of a shared machine falls on all alike: each
/// one's runs, in the order of `each`.
pub(super) fn interleaved<T, R>(
    repeat: usize,
    each: &[T],
    mut run: impl FnMut(&T) -> Result<R>,
) -> Result<Vec<Vec<R>>> {
    let mut runs: Vec<Vec<R>> = each.iter().map(|_| Vec::new()).collect();
    for _ in 0..repeat.max(1) {
        for (one, runs) in each.iter().zip(&mut runs) {
            runs.push(run(one)?);
        }
    }
    Ok(runs)
}

/// The run with the median `key` of `runs` if all `verified`, else the first that did
/// not (a failure is what a row reports).
pub(super) fn median<R>(
    mut runs: Vec<R>,
    verified: impl Fn(&R) -> bool,
    key: impl Fn(&R) -> f64,
) -> R {
    if let Some(bad) = runs.iter().position(|r| !verified(r)) {
        return runs.swap_remove(bad);
    }
    runs.sort_by(|a, b| key(a).total_cmp(&key(b)));
    let mid = runs.len() / 2;
    runs.swap_remove(mid)
}

/// Prints each of `rows` (unless the table is printed as JSON at the end) and keeps it in
/// `kept`; the first that did not verify ends the benchmark, after its line.
pub(super) fn keep<R: TableRow>(
    rows: impl IntoIterator<Item = R>,
    json: bool,
    kept: &mut Vec<R>,
) -> Result<()> {
    for row in rows {
        if !json {
            row.print();
        }
        if !row.verified() {
            return Err(Failure::Bench(row.wrong()));
        }
        kept.push(row);
    }
    Ok(())
}

/// Prints `--json`'s document: the CPU level and each named table.
pub(super) fn print_json<const N: usize>(tables: [(&str, serde_json::Value); N]) {
    let mut out = serde_json::Map::new();
    out.insert("cpu".into(), venn::util::cpu::describe().into());
    for (name, rows) in tables {
        out.insert(name.into(), rows);
    }
    out!(
        "{}",
        serde_json::to_string_pretty(&out).expect("serialisable")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Repeated runs alternate between the rows (all once, then all again), each row's
    /// runs handed back in the order of the rows; a failed run ends them all.
    #[test]
    fn repeated_runs_alternate_between_the_rows() {
        let mut order = Vec::new();
        let runs = interleaved(3, &["a", "b"], |&one| {
            order.push(one);
            Ok(order.len())
        })
        .unwrap();
        assert_eq!(order, ["a", "b", "a", "b", "a", "b"]);
        assert_eq!(runs, [vec![1, 3, 5], vec![2, 4, 6]]);
        let mut count = 0;
        let failed = interleaved(3, &["a", "b"], |_| {
            count += 1;
            match count {
                3 => Err(Failure::Bench("down".into())),
                _ => Ok(()),
            }
        });
        assert!(failed.is_err() && count == 3);
    }
}
