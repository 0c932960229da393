//! The data directory's files: where answers and results go, removing a run's, and
//! writing a file whole or not at all (off the async threads).

use super::Store;
use crate::error::Result;
use std::path::{Path, PathBuf};
use venn_cloud::Error;

impl Store {
    /// The file of a task's answer.
    pub fn answer_path(&self, run: &str, side: u64, chunk: u64) -> PathBuf {
        self.run_dir(run).join(format!("{side}-{chunk:08}"))
    }

    /// The file of a side's result.
    pub fn result_path(&self, run: &str, side: u64) -> PathBuf {
        self.run_dir(run).join(format!("result-{side}"))
    }

    pub(super) fn run_dir(&self, run: &str) -> PathBuf {
        self.dir.join("runs").join(run)
    }

    /// Removes a run's files (answers, results; a pre-token's values).
    pub fn remove_files(&self, run: &str) -> Result<()> {
        match std::fs::remove_dir_all(self.run_dir(run)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }
}

/// Runs `work` (file i/o, hashing, pairing) on tokio's blocking threads.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Error::Internal(e.to_string()))?
}

/// [`write_atomically`] on a blocking thread.
pub(super) async fn write_in_background(
    path: PathBuf,
    bytes: impl AsRef<[u8]> + Send + 'static,
) -> Result<()> {
    blocking(move || write_atomically(&path, bytes.as_ref())).await
}

/// Writes `bytes` to `path`, whole or not at all.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    Ok(venn::util::files::write_atomically(path, |w| {
        w.write_all(bytes)
    })?)
}
