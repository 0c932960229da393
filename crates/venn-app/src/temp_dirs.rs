//! A run's temporary directories (a split input's bucket files: about the input's size
//! again, and its keys in the clear), removed however the run ends: when dropped — on
//! success and on every error path — and, through [`remove_all`], when the front end is
//! stopped by a signal (Ctrl-C, `kill`) or by a closed standard output, where nothing is
//! dropped. Each directory is listed here from the moment it is made to the moment it is
//! removed.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// The directories that exist now.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn live() -> MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A temporary directory, removed with its files when dropped or by [`remove_all`].
pub struct TempDir {
    dir: Option<tempfile::TempDir>,
}

impl TempDir {
    /// A new directory named `prefix` and a random suffix inside `parent`.
    pub fn new_in(parent: &Path, prefix: &str) -> std::io::Result<TempDir> {
        // Made under the lock: once `remove_all` has begun, no directory is made that it
        // would miss.
        let mut live = live();
        let dir = tempfile::Builder::new().prefix(prefix).tempdir_in(parent)?;
        live.push(dir.path().to_path_buf());
        Ok(TempDir { dir: Some(dir) })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        self.dir.as_ref().expect("present until dropped").path()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let mut live = live();
        if let Some(dir) = self.dir.take() {
            live.retain(|p| p != dir.path());
            drop(dir);
        }
    }
}

/// Removes every live temporary directory, for a process about to end without dropping
/// them. The list stays locked: no directory is made or dropped after it (a thread that
/// tries waits for the end).
pub fn remove_all() {
    let live = live();
    for dir in live.iter() {
        // A file made in it meanwhile (a split still starting) makes one pass fail.
        for _ in 0..3 {
            match std::fs::remove_dir_all(dir) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => continue,
                _ => break,
            }
        }
    }
    std::mem::forget(live);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_is_listed_while_it_exists() {
        let parent = tempfile::tempdir().unwrap();
        let dir = TempDir::new_in(parent.path(), "t-").unwrap();
        std::fs::write(dir.path().join("f"), "x").unwrap();
        let path = dir.path().to_path_buf();
        assert!(live().contains(&path));
        drop(dir);
        assert!(!path.exists());
        assert!(!live().contains(&path));
    }
}
