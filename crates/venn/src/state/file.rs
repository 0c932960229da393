//! The state file of `venn precompute`: a header saying what the state is for, the party's
//! state, and a BLAKE3 digest of both.
//!
//! ```text
//! "VENN/STA" | format (u16) | wire version (u16) | protocol (str8) | role (u8)
//!            | sender size | receiver size (u64, at most MAX_ITEMS)
//!            | offline session id (32) | shared secret (32)
//!            | parameter encoding (u16 length + bytes) | BLAKE3(header) (32)
//!            | party state ... | BLAKE3(everything before) (32)
//! ```
//!
//! The header has its own digest, checked before any of it is used (its sizes decide what
//! is allocated); the digest at the end covers everything.
//!
//! A state is **single-use**: reusing OT material in two online runs would leak the
//! inputs of both. The file is written atomically with owner-only permissions (it holds
//! the secret that binds the online run to the peer of the precomputation), never over an
//! existing file. It is opened without following a symbolic link and only while it has
//! one name, and [`StateFile::claim`] takes it by renaming it away and deleting it when
//! the online phase starts, so a second use, or a second process racing for it, finds
//! nothing. (A *copy* made by hand cannot be told apart; do not copy state files.) A file
//! whose digest does not match (truncated, corrupted) is refused before anything is sent.

use super::{StateReader, StateWriter};
use crate::net::Writer;
use crate::parties::{Role, Sizes, VERSION};
use crate::{Error, Result, MAX_ITEMS};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"VENN/STA";
/// The layout of state files; bumped on any change to it or to a party's state.
const FORMAT: u16 = 1;
const MAX_PARAMS: usize = 1024;

/// What a state is for.
#[derive(Clone, PartialEq, Eq)]
pub struct Header {
    /// The protocol's registry name.
    pub protocol: String,
    /// The role of the party that wrote it.
    pub role: Role,
    /// The set sizes the offline phase was run for (each party's announced maximum).
    pub sizes: Sizes,
    /// The session id of the offline phase; the online session is bound to it.
    pub session: [u8; 32],
    /// The secret the two parties agreed on in the offline session.
    pub secret: [u8; 32],
    /// The parameter encoding of the offline phase.
    pub params: Vec<u8>,
}

impl std::fmt::Debug for Header {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Header")
            .field("protocol", &self.protocol)
            .field("role", &self.role)
            .field("sizes", &self.sizes)
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

/// Hashes what passes through to the inner writer or reader.
struct Hashing<T> {
    inner: T,
    hasher: blake3::Hasher,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

fn hashing<T>(inner: T) -> Hashing<T> {
    Hashing {
        inner,
        hasher: blake3::Hasher::new_derive_key("venn/state-file"),
    }
}

/// Writes a state file at `path` (which must not exist): the header, then what `payload`
/// writes, then the digest. Nothing appears under `path` unless all of it was written.
pub fn write(
    path: &Path,
    header: &Header,
    payload: impl FnOnce(&mut StateWriter) -> Result<()>,
) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // tempfile creates the file with mode 0600 on Unix.
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(Error::file("write", path))?;
    {
        let mut out = hashing(BufWriter::with_capacity(1 << 20, tmp.as_file_mut()));
        let mut w = StateWriter::new(&mut out);
        w.raw(&encode_header(header))?;
        w.raw(blake3::hash(&encode_header(header)).as_bytes())?;
        payload(&mut w)?;
        let digest = *out.hasher.finalize().as_bytes();
        out.inner
            .write_all(&digest)
            .map_err(Error::file("write", path))?;
        out.inner.flush().map_err(Error::file("write", path))?;
    }
    tmp.as_file()
        .sync_all()
        .map_err(Error::file("write", path))?;
    tmp.persist_noclobber(path).map_err(|e| {
        if e.error.kind() == std::io::ErrorKind::AlreadyExists {
            Error::Usage(format!(
                "'{}' already exists; a state file is never overwritten",
                path.display()
            ))
        } else {
            Error::file("write", path)(e.error)
        }
    })?;
    Ok(())
}

/// An opened state file, its header read.
pub struct StateFile {
    path: PathBuf,
    identity: (u64, u64),
    input: Hashing<BufReader<File>>,
    /// What the state is for.
    pub header: Header,
}

impl StateFile {
    /// Opens `path` (not through a symbolic link, and only while it has one name) and
    /// reads and checks its header.
    pub fn open(path: &Path) -> Result<Self> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            // Not through a link; and a FIFO must not block the open.
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Error::State(format!(
                    "'{}' does not exist (a state is used up by the online run that uses it)",
                    path.display()
                )),
                _ if e.raw_os_error() == Some(libc::ELOOP) => Error::State(format!(
                    "'{}' is a symbolic link; pass the state file itself",
                    path.display()
                )),
                _ => Error::file("open", path)(e),
            })?;
        let meta = file.metadata().map_err(Error::file("open", path))?;
        if !meta.is_file() {
            return Err(Error::State(format!(
                "'{}' is not a regular file",
                path.display()
            )));
        }
        if meta.nlink() != 1 {
            return Err(Error::State(format!(
                "'{}' has {} names (hard links); a single-use state must have one",
                path.display(),
                meta.nlink()
            )));
        }
        let mut input = hashing(BufReader::with_capacity(1 << 20, file));
        let header = read_header(&mut StateReader::new(&mut input))?;
        Ok(StateFile {
            path: path.to_owned(),
            identity: (meta.dev(), meta.ino()),
            input,
            header,
        })
    }

    /// Reads the party's state with `payload` and checks the digest over the whole file.
    pub fn read<T>(&mut self, payload: impl FnOnce(&mut StateReader) -> Result<T>) -> Result<T> {
        let state = payload(&mut StateReader::new(&mut self.input))?;
        let digest = *self.input.hasher.finalize().as_bytes();
        let mut stored = [0u8; 32];
        let mut more = [0u8; 1];
        let intact = self.input.inner.read_exact(&mut stored).is_ok()
            && matches!(self.input.inner.read(&mut more), Ok(0))
            && stored == digest;
        if !intact {
            return Err(Error::State(format!(
                "'{}' is corrupted (its digest does not match)",
                self.path.display()
            )));
        }
        Ok(state)
    }

    /// Takes the state for this run: renames the file to a fresh name (atomic: of two
    /// runs racing for it, one wins), checks that it is the file that was opened, deletes
    /// it, and checks through the still-open handle that no other name for it is left (a
    /// hard link made since it was opened would let the material be used twice).
    pub fn claim(self) -> Result<()> {
        let used = || {
            Error::State(format!(
                "'{}' was used or replaced by another run",
                self.path.display()
            ))
        };
        let mut taken = self.path.as_os_str().to_owned();
        taken.push(format!(
            ".claimed-{:032x}",
            crate::crypto::Prg::from_entropy().block()
        ));
        let taken = PathBuf::from(taken);
        std::fs::rename(&self.path, &taken).map_err(|_| used())?;
        let meta = std::fs::symlink_metadata(&taken).map_err(|_| used())?;
        if (meta.dev(), meta.ino()) != self.identity {
            // Not ours: leave the other file as it was found.
            let _ = std::fs::rename(&taken, &self.path);
            return Err(used());
        }
        std::fs::remove_file(&taken).map_err(Error::file("delete", &taken))?;
        let left = self.input.inner.get_ref().metadata()?.nlink();
        if left != 0 {
            return Err(Error::State(format!(
                "'{}' gained another name (a hard link) after it was opened; not used",
                self.path.display()
            )));
        }
        // Make the deletion durable before the material is used.
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(Error::file("sync", dir))
    }
}

fn encode_header(h: &Header) -> Vec<u8> {
    Writer::new()
        .bytes(MAGIC)
        .u16(FORMAT)
        .u16(VERSION)
        .str8(&h.protocol)
        .u8(h.role.code())
        .u64(h.sizes.sender)
        .u64(h.sizes.receiver)
        .bytes(&h.session)
        .bytes(&h.secret)
        .u16(h.params.len() as u16)
        .bytes(&h.params)
        .0
}

fn read_header(r: &mut StateReader) -> Result<Header> {
    let header = parse_header(r)?;
    if r.raw(32)? != blake3::hash(&encode_header(&header)).as_bytes() {
        return Err(Error::State(
            "the state file's header is corrupted (its digest does not match)".into(),
        ));
    }
    Ok(header)
}

fn parse_header(r: &mut StateReader) -> Result<Header> {
    if r.raw(8)? != MAGIC {
        return Err(Error::State("not a venn state file".into()));
    }
    let u16_of = |b: Vec<u8>| u16::from_le_bytes(b.try_into().expect("2 bytes"));
    let (format, version) = (u16_of(r.raw(2)?), u16_of(r.raw(2)?));
    if (format, version) != (FORMAT, VERSION) {
        return Err(Error::State(format!(
            "the state was written by another venn release (format {format}, wire version \
             {version}; this one reads {FORMAT}, {VERSION})"
        )));
    }
    let len = r.raw(1)?[0] as usize;
    let protocol = String::from_utf8(r.raw(len)?)
        .map_err(|_| Error::State("not a venn state file (protocol name)".into()))?;
    let role = match r.raw(1)?[0] {
        0 => Role::Sender,
        1 => Role::Receiver,
        _ => return Err(Error::State("not a venn state file (role)".into())),
    };
    let sizes = Sizes {
        sender: r.u64()?,
        receiver: r.u64()?,
    };
    if sizes.sender > MAX_ITEMS || sizes.receiver > MAX_ITEMS {
        return Err(Error::State("not a venn state file (set sizes)".into()));
    }
    let session: [u8; 32] = r.raw(32)?.try_into().expect("32 bytes");
    let secret: [u8; 32] = r.raw(32)?.try_into().expect("32 bytes");
    let len = u16::from_le_bytes(r.raw(2)?.try_into().expect("2 bytes")) as usize;
    if len > MAX_PARAMS {
        return Err(Error::State("not a venn state file (parameters)".into()));
    }
    let params = r.raw(len)?;
    Ok(Header {
        protocol,
        role,
        sizes,
        session,
        secret,
        params,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Block;
    use std::os::unix::fs::PermissionsExt;

    fn header() -> Header {
        Header {
            protocol: "kkrt16".into(),
            role: Role::Receiver,
            sizes: Sizes {
                sender: 100,
                receiver: 200,
            },
            session: [4; 32],
            secret: [5; 32],
            params: vec![1, 2, 3],
        }
    }

    #[test]
    fn a_state_file_is_private_checked_and_single_use() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.state");
        write(&path, &header(), |w| {
            w.blocks(&[Block::from(1), Block::from(2), Block::from(3)])
        })
        .unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "owner-only");
        let e = write(&path, &header(), |w| w.u64(1)).unwrap_err();
        assert!(e.to_string().contains("never overwritten"), "{e}");

        let mut f = StateFile::open(&path).unwrap();
        assert_eq!(f.header, header());
        let rows: Vec<Block> = [1u64, 2, 3].map(Block::from).into();
        assert_eq!(f.read(|r| r.blocks(3, "rows")).unwrap(), rows);
        f.claim().unwrap();
        assert!(!path.exists());
        let e = StateFile::open(&path).err().unwrap();
        assert!(e.to_string().contains("used up"), "{e}");
    }

    #[test]
    fn links_to_a_state_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.state");
        write(&path, &header(), |w| w.u64(1)).unwrap();
        let link = dir.path().join("link.state");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let e = StateFile::open(&link).err().unwrap();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let hard = dir.path().join("hard.state");
        std::fs::hard_link(&path, &hard).unwrap();
        let e = StateFile::open(&path).err().unwrap();
        assert!(e.to_string().contains("2 names"), "{e}");
        std::fs::remove_file(&hard).unwrap();
        let mut f = StateFile::open(&path).unwrap();
        f.read(|r| r.u64()).unwrap();
        f.claim().unwrap();
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "only the dangling link"
        );
    }

    #[test]
    fn corrupted_and_truncated_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.state");
        write(&path, &header(), |w| w.blocks(&[Block::from(7); 100])).unwrap();
        let good = std::fs::read(&path).unwrap();
        for (i, bytes) in [
            [&good[..good.len() - 200], &good[good.len() - 1..]].concat(),
            {
                let mut b = good.clone();
                b[good.len() / 2] ^= 4;
                b
            },
            [&good[..], b"x"].concat(),
        ]
        .into_iter()
        .enumerate()
        {
            let p = dir.path().join(format!("bad{i}"));
            std::fs::write(&p, bytes).unwrap();
            let e = StateFile::open(&p)
                .and_then(|mut f| f.read(|r| r.blocks(100, "rows")))
                .unwrap_err();
            assert!(matches!(e, Error::State(_)), "{e}");
        }
    }
}
