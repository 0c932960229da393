//! How many worker threads a party runs: the one rule for a count asked for by any front
//! end (the CLI's `--threads` of a run, of `venn bench`, of the cloud service's and
//! workers' pools; the Python package's `threads`; a lane's job). At least one — 0 is
//! refused rather than quietly read as 1 — and no more than the cores this process may use
//! (its CPU affinity and cgroup quota, as [`std::thread::available_parallelism`] reads
//! them): threads beyond them only take turns, and a rayon pool's idle workers spin
//! looking for work — psww18-ca on 50 rows took over 60 s at `--threads 1000` on two
//! cores, 2.4 s at one.

use venn::{Error, Result};

/// The threads to run for `asked`, bounded to the cores this process may use; a bound is
/// warned of on stderr, naming both numbers.
pub fn bounded(asked: usize) -> Result<usize> {
    check(asked)?;
    let Ok(cores) = std::thread::available_parallelism() else {
        return Ok(asked);
    };
    let (threads, warning) = bound(asked, cores.get());
    if let Some(w) = warning {
        eprintln!("venn: warning: {w}");
    }
    Ok(threads)
}

/// `asked` bounded to the cores this process may use, without a warning: for a stage
/// after the run, whose bound [`bounded`] warned of already.
pub fn within_cores(asked: usize) -> usize {
    std::thread::available_parallelism().map_or(asked, |cores| bound(asked, cores.get()).0)
}

/// Refuses a count of no threads.
pub fn check(asked: usize) -> Result<()> {
    match asked {
        0 => Err(Error::Usage(
            "threads must be at least 1 (0 was given)".into(),
        )),
        _ => Ok(()),
    }
}

/// `asked` bounded to `cores`, and what to warn of if it was.
fn bound(asked: usize, cores: usize) -> (usize, Option<String>) {
    if asked <= cores {
        return (asked, None);
    }
    let warning = format!(
        "{asked} threads asked for, but this process may use {cores} cores: running \
         {cores} threads"
    );
    (cores, Some(warning))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_one_to_the_cores() {
        assert_eq!(bound(1, 2), (1, None));
        assert_eq!(bound(2, 2), (2, None));
        let (threads, warning) = bound(1000, 2);
        assert_eq!(threads, 2);
        let warning = warning.unwrap();
        assert!(
            warning.contains("1000") && warning.contains("2 cores"),
            "{warning}"
        );
        assert!(check(0).unwrap_err().to_string().contains("at least 1"));
        assert_eq!(bounded(1).unwrap(), 1);
    }
}
