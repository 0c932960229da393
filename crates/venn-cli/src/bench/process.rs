//! The processes a benchmark starts (this binary, as a party, a dealer, a `venn send`, a
//! service or a client of it): started, told apart by what they print, and waited for.

use crate::failure::{Failure, Result};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command};

/// This binary, to be given a command.
pub(super) fn this_binary() -> Result<Command> {
    Ok(Command::new(std::env::current_exe()?))
}

/// The address a spawned process printed first (`listening ADDR`).
pub(super) fn listening_at(child: &mut Child, who: &str) -> Result<String> {
    let mut first = String::new();
    BufReader::new(child.stdout.as_mut().expect("piped")).read_line(&mut first)?;
    Ok(first
        .strip_prefix("listening ")
        .map(str::trim)
        .ok_or_else(|| Failure::Bench(format!("benchmark {who} did not start listening")))?
        .to_string())
}

/// Waits for `child`; its stdout, or an error with its stderr if it failed.
pub(super) fn finish(child: Child, who: &str) -> Result<String> {
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(Failure::Bench(format!(
            "{who} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
