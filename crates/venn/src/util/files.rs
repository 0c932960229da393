//! Files written whole or not at all: a temporary file in the same directory, synced, then
//! renamed into place and the directory synced, so that an error or a crash leaves nothing
//! half-written under the name (only, at worst, an unreferenced temporary file).

use crate::{Error, Result};
use std::io::Write;
use std::path::Path;

/// The directory `path` is in.
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Writes what `contents` writes to `path`, replacing any file there.
pub fn write_atomically(
    path: &Path,
    contents: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let fail = |e| Error::file("write", path)(e);
    let mut tmp = tempfile::NamedTempFile::new_in(parent(path)).map_err(fail)?;
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        contents(&mut w).map_err(fail)?;
        w.flush().map_err(fail)?;
    }
    tmp.as_file().sync_all().map_err(fail)?;
    tmp.persist(path).map_err(|e| fail(e.error))?;
    sync_dir(path)
}

/// Writes `bytes` to a new file at `path` with permissions `mode`; an existing file is
/// never replaced.
pub fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let fail = |e| Error::file("write", path)(e);
    let mut tmp = tempfile::NamedTempFile::new_in(parent(path)).map_err(fail)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(fail)?;
    tmp.write_all(bytes).map_err(fail)?;
    tmp.as_file().sync_all().map_err(fail)?;
    tmp.persist_noclobber(path).map_err(|e| fail(e.error))?;
    sync_dir(path)
}

/// Syncs the directory of `path`, so that a rename into it (or a new file's name)
/// survives a crash.
pub fn sync_dir(path: &Path) -> Result<()> {
    let dir = parent(path);
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(Error::file("sync", dir))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn new_files_keep_their_mode_and_never_replace_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        write_new(&path, b"one", 0o600).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(write_new(&path, b"two", 0o600).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"one");
    }

    #[test]
    fn a_failed_write_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        write_atomically(&path, |w| w.write_all(b"old")).unwrap();
        let failed = write_atomically(&path, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("stopped"))
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        write_atomically(&path, |w| w.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary left"
        );
    }
}
