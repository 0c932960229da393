//! Where a user-named output goes (`--output`, `--stats-json`, `venn cloud result
//! --output`). Only a regular file is ever replaced: venn often runs as root, and
//! renaming a temporary file over `/dev/null` or `/dev/stdout` would replace the system's
//! own. So:
//! - `-` is standard output;
//! - a regular file, or a name where nothing is yet, is written whole to a new owner-only
//!   temporary file beside it and renamed over it (a failed run leaves no file and the old
//!   one intact); behind a symbolic link, its target is (the link stays);
//! - a character device or a FIFO (`/dev/null`, a terminal, a named pipe, `/dev/stdout`
//!   on a pipe) is opened and written straight into: not replaced, truncated or given
//!   other permissions;
//! - a directory, a block device (a disk) or a socket is refused.
//!
//! Outputs are owner-only (0600) because they hold the private intersection.

use std::fs::FileType;
use std::io::Write;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use venn::util::files::write_atomically;
use venn::{Error, Result};

/// The name that means standard output.
pub const STDOUT: &str = "-";

/// How an output is written.
#[derive(Debug, PartialEq, Eq)]
pub enum Destination {
    /// Standard output.
    Stdout,
    /// A regular file, or a new one, at this path (a link's target): replaced whole.
    Replace(PathBuf),
    /// A character device or a FIFO: written straight into.
    Straight(PathBuf),
}

/// How many symbolic links are followed before a path is refused as a loop (as Linux).
const MAX_LINKS: usize = 40;

impl Destination {
    /// Where `path` (given as `what`, e.g. `--output`) leads.
    pub fn of(path: &Path, what: &str) -> Result<Destination> {
        if path.as_os_str() == STDOUT {
            return Ok(Destination::Stdout);
        }
        let refuse = |why: &str| Error::Usage(format!("{what} '{}' {why}", path.display()));
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_file() => {
                // The file itself, behind any links; a file that has no name any more
                // (`/dev/stdout` on a deleted file) cannot be replaced.
                let target = std::fs::canonicalize(path)
                    .ok()
                    .filter(|t| same_file(t, path));
                target
                    .map(Destination::Replace)
                    .ok_or_else(|| refuse("leads to a file without a name to replace"))
            }
            Ok(meta) => straight(path, meta.file_type()).map_err(&refuse),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                new_file(path).ok_or_else(|| refuse("is a symbolic link that loops"))
            }
            Err(e) => Err(Error::file("look up", path)(e)),
        }
    }

    /// Writes what `contents` writes.
    pub fn write(
        &self,
        contents: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<()> {
        match self {
            Destination::Stdout => {
                let fail = Error::file("write", Path::new(STDOUT));
                let mut w = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
                contents(&mut w).and_then(|()| w.flush()).map_err(fail)
            }
            Destination::Replace(path) => write_atomically(path, contents),
            Destination::Straight(path) => {
                let fail = |e| Error::file("write", path)(e);
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(fail)?;
                // What was opened, not what the path was when looked at.
                let kind = file.metadata().map_err(fail)?.file_type();
                if straight(path, kind).is_err() {
                    return Err(Error::Usage(format!(
                        "'{}' changed while venn ran; nothing written",
                        path.display()
                    )));
                }
                let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
                contents(&mut w).and_then(|()| w.flush()).map_err(fail)
            }
        }
    }
}

/// A path that is not a regular file: written straight into if it is a character device
/// or a FIFO; else why not.
fn straight(path: &Path, kind: FileType) -> std::result::Result<Destination, &'static str> {
    if kind.is_char_device() || kind.is_fifo() {
        Ok(Destination::Straight(path.to_path_buf()))
    } else if kind.is_dir() {
        Err("is a directory")
    } else if kind.is_block_device() {
        Err("is a block device (a disk): venn writes no output onto one")
    } else if kind.is_socket() {
        Err("is a socket")
    } else {
        Err("is not a file venn can write")
    }
}

/// Where a file at `path`, which does not exist, is made: `path`, or the name its
/// symbolic link (or chain of them) points to. `None` for a loop.
fn new_file(path: &Path) -> Option<Destination> {
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::read_link(&at) {
            Ok(to) => at = parent(&at).join(to),
            Err(_) => return Some(Destination::Replace(at)),
        }
    }
    None
}

/// The directory `path` is in.
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Whether `a` and `b` name the same existing file (however they are spelled).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// Checks, before the peer is contacted, that the output `path` (given as `what`) can be
/// written as [`Destination::of`] says: a file to replace is not one of the `inputs`, and
/// is in a directory where we may create files.
pub fn check_output_path(path: &Path, what: &str, inputs: &[&Path]) -> Result<()> {
    let Destination::Replace(target) = Destination::of(path, what)? else {
        return Ok(());
    };
    if inputs.iter().any(|i| same_file(i, &target)) {
        return Err(Error::Usage(format!(
            "{what} '{}' is an input file: it would be overwritten",
            path.display()
        )));
    }
    let dir = parent(&target);
    if !dir.is_dir() {
        return Err(Error::Usage(format!(
            "directory '{}' does not exist",
            dir.display()
        )));
    }
    tempfile::NamedTempFile::new_in(dir).map_err(|e| {
        Error::Usage(format!(
            "{what} '{}' cannot be written: {e}",
            path.display()
        ))
    })?;
    Ok(())
}

/// Whether `e` says standard output was closed by its reader (`venn … --output - | head`):
/// the front end then ends quietly.
pub fn closed_stdout(e: &Error) -> bool {
    matches!(e, Error::File { path, source, .. }
        if path.as_os_str() == STDOUT && source.kind() == std::io::ErrorKind::BrokenPipe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    #[test]
    fn only_regular_files_are_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let at = |name: &str| d.join(name);
        let of = |name: &str| Destination::of(&at(name), "--output");
        std::fs::write(at("file"), "old").unwrap();
        symlink("file", at("link")).unwrap();
        symlink("new", at("dangling")).unwrap();
        symlink("loop", at("loop")).unwrap();
        let file = std::fs::canonicalize(at("file")).unwrap();
        assert_eq!(of("file").unwrap(), Destination::Replace(file.clone()));
        assert_eq!(of("link").unwrap(), Destination::Replace(file));
        assert_eq!(of("dangling").unwrap(), Destination::Replace(at("new")));
        assert_eq!(of("absent").unwrap(), Destination::Replace(at("absent")));
        let e = of("loop").unwrap_err().to_string();
        assert!(e.contains("symbolic links"), "{e}");
        assert_eq!(
            Destination::of(Path::new("/dev/null"), "--output").unwrap(),
            Destination::Straight("/dev/null".into())
        );
        assert_eq!(
            Destination::of(Path::new("-"), "--output").unwrap(),
            Destination::Stdout
        );
        let e = Destination::of(d, "--output").unwrap_err().to_string();
        assert!(e.contains("is a directory"), "{e}");

        // Through the link: the target replaced, the link kept; owner-only.
        let link = of("link").unwrap();
        link.write(|w| w.write_all(b"new")).unwrap();
        assert!(at("link").symlink_metadata().unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(at("file")).unwrap(), "new");
        let mode = std::fs::metadata(at("file")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
