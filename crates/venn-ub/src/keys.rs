//! A dataset's OPRF keys: one file per epoch, `keys/epoch-<e>.key`, owner-only, holding the
//! scalar in hex; written once and never replaced, and never inside the published files
//! (which a server process may hand to others; the key stays with its owner).

use std::path::{Path, PathBuf};
use venn::crypto::oprf::{Mode, ServerKey};
use venn::crypto::Prg;
use venn::util::files::write_new;
use venn::{Error, Result};

/// The key file of `epoch` in the dataset directory `dir`.
fn path(dir: &Path, epoch: u32) -> PathBuf {
    dir.join("keys").join(format!("epoch-{epoch}.key"))
}

/// Makes the key of `epoch`: fresh, random, written to its file (refused if it exists).
pub(crate) fn create(dir: &Path, epoch: u32) -> Result<ServerKey> {
    let keys = dir.join("keys");
    std::fs::create_dir_all(&keys).map_err(Error::file("make", &keys))?;
    let key = ServerKey::random(Mode::Voprf, &mut Prg::from_entropy());
    let text = format!("{}\n", hex::encode(key.secret_bytes()));
    write_new(&path(dir, epoch), text.as_bytes(), 0o600)?;
    Ok(key)
}

/// The key of `epoch`, from its file.
pub(crate) fn load(dir: &Path, epoch: u32) -> Result<ServerKey> {
    let file = path(dir, epoch);
    let text = std::fs::read_to_string(&file).map_err(Error::file("read", &file))?;
    let bytes: [u8; 32] = (hex::decode(text.trim()).ok())
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| Error::State(format!("{} is not a key file", file.display())))?;
    ServerKey::from_bytes(Mode::Voprf, &bytes)
}

/// The key of a new `epoch`: the one an interrupted rotation made (never published, so
/// never used), else a new one.
pub(crate) fn next(dir: &Path, epoch: u32) -> Result<ServerKey> {
    match path(dir, epoch).exists() {
        true => load(dir, epoch),
        false => create(dir, epoch),
    }
}
