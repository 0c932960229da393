//! What a dataset publishes, on disk under `published/`: the tag set of its current
//! version, the deltas of the last [`MAX_DELTAS`] versions before it, and
//! `manifest.json` naming them (with each file's length and BLAKE3), the key's epoch, the
//! version, the dataset's settings and the last operation of the store it covers.
//!
//! A publish writes its new files under new names and syncs them, then replaces the
//! manifest whole (a temporary file synced and renamed, the directory synced), then
//! removes the files no manifest names: a crash at any point leaves the last manifest and
//! every file it names intact, and a server only ever reads a manifest and its files.
//! What the store committed after the manifest's `covered_seq` is published by the next
//! publish (`catch_up`).

use crate::keys;
use crate::store::{Op, Settings, Store, StoredOp};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;
use venn::crypto::oprf::ServerKey;
use venn::session::run_plan::KeyForm;
use venn::unbalanced::cache::CacheServer;
use venn::unbalanced::link::{Published, MAX_DELTAS};
use venn::unbalanced::tag_set::TagSet;
use venn::util::files::write_atomically;
use venn::{Error, Result};

/// A published file: its name in `published/`, its length and BLAKE3 (hex).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Its name.
    pub file: String,
    /// Its bytes.
    pub bytes: u64,
    /// Its BLAKE3, in hex.
    pub blake3: String,
}

/// The manifest: what is published now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The key's epoch.
    pub epoch: u32,
    /// The tag set's version within the epoch.
    pub version: u64,
    /// The store's last operation the tag set reflects.
    pub covered_seq: u64,
    /// The items in the set.
    pub items: u64,
    /// The most items the set may hold.
    pub max_items: u64,
    /// The most items a query may hold.
    pub max_query: u32,
    /// Whether keys are trimmed.
    pub trim: bool,
    /// Whether keys are lower-cased.
    pub lowercase: bool,
    /// The columns a key is made of.
    pub columns: u16,
    /// Whether a record matches on any one of its columns.
    pub any: bool,
    /// The tag set.
    pub tags: FileEntry,
    /// The tag set's block index, read with it so that the set is not decoded (absent in
    /// a manifest written before indexes were kept: the set is then decoded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<FileEntry>,
    /// The deltas to this version from those before, oldest first.
    pub deltas: Vec<FileEntry>,
}

/// The directory of the published files.
fn published_dir(dir: &Path) -> PathBuf {
    dir.join("published")
}

/// The manifest's path.
pub fn manifest_path(dir: &Path) -> PathBuf {
    published_dir(dir).join("manifest.json")
}

impl Manifest {
    /// The manifest of the dataset in `dir`.
    pub fn read(dir: &Path) -> Result<Manifest> {
        let path = manifest_path(dir);
        let text = std::fs::read(&path).map_err(Error::file("read", &path))?;
        serde_json::from_slice(&text)
            .map_err(|e| Error::State(format!("{} does not read: {e}", path.display())))
    }

    /// How the dataset's keys are taken.
    pub fn form(&self) -> KeyForm {
        KeyForm {
            trim: self.trim,
            lowercase: self.lowercase,
            columns: self.columns,
            any: self.any,
        }
    }

    /// Replaces the manifest whole, then removes the published files it does not name
    /// and any temporary file left there.
    fn write(&self, dir: &Path) -> Result<()> {
        let text = serde_json::to_vec_pretty(self).expect("a manifest serialises");
        write_atomically(&manifest_path(dir), |w| w.write_all(&text))?;
        let named: Vec<&str> = (self.deltas.iter().chain([&self.tags]).chain(&self.index))
            .map(|f| f.file.as_str())
            .collect();
        let published = published_dir(dir);
        let entries = std::fs::read_dir(&published).map_err(Error::file("list", &published))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            // And the temporary files of a write a crash cut short (the operators' lock
            // is held: no write is under way).
            let ours = (name.ends_with(".bin") && !named.contains(&name.as_ref()))
                || name.starts_with(".tmp");
            if ours {
                // Left behind at worst: a later publish removes it.
                let _ = std::fs::remove_file(entry.path());
            }
        }
        Ok(())
    }

    /// The published state it names, read and checked (each file's length and BLAKE3):
    /// what a server answers from. With `retired` (a key's epoch before this one, and
    /// until when it still answers), that key still answers requests of its epoch until
    /// then.
    pub fn load(&self, dir: &Path, retired: Option<(u32, Instant)>) -> Result<Published> {
        let mut server = self.server(dir)?;
        let now = Instant::now();
        if let Some((epoch, until)) = retired.filter(|&(e, until)| e < self.epoch && now < until) {
            server = server.succeeding(keys::load(dir, epoch)?, epoch, until - now);
        }
        let deltas = (self.deltas.iter())
            .map(|entry| {
                let delta = read_file(dir, entry)?;
                entry.check(dir, blake3::hash(&delta).as_bytes())?;
                Ok(delta)
            })
            .collect::<Result<Vec<_>>>()?;
        Published::new(server, self.form(), deltas)
    }

    /// The server of the published tag set, under its epoch's key. The set's digest is
    /// BLAKE3 of its wire form, the file's bytes: read, it is the file's hash. With the
    /// set's index (its hash checked too) the set is taken as it is, not decoded.
    fn server(&self, dir: &Path) -> Result<CacheServer> {
        let wire = read_file(dir, &self.tags)?;
        let not_named = |e: Error| self.tags.not_named(dir, &e.to_string());
        let tags = match &self.index {
            Some(entry) => {
                let index = read_file(dir, entry)?;
                entry.check(dir, blake3::hash(&index).as_bytes())?;
                TagSet::from_trusted(wire, &index)
                    .map_err(|e| entry.not_named(dir, &e.to_string()))?
            }
            None => TagSet::from_bytes(&wire, u64::MAX).map_err(not_named)?,
        };
        self.tags.check(dir, &tags.digest())?;
        let key = keys::load(dir, self.epoch)?;
        let (epoch, version) = (self.epoch, self.version);
        CacheServer::restore(key, epoch, version, tags, self.max_items, self.max_query)
            .map_err(not_named)
    }
}

impl FileEntry {
    /// Refuses the file unless `blake3` is the hash its entry names.
    fn check(&self, dir: &Path, blake3: &[u8; 32]) -> Result<()> {
        match hex::encode(blake3) == self.blake3 {
            true => Ok(()),
            false => Err(self.not_named(dir, "its BLAKE3 differs")),
        }
    }

    /// The error for a file that is not the one the manifest names, and why.
    fn not_named(&self, dir: &Path, why: &str) -> Error {
        Error::Integrity(format!(
            "{} is not the file the manifest names: {why}",
            published_dir(dir).join(&self.file).display()
        ))
    }
}

/// A published file, of the length its entry names (its hash is the caller's to check:
/// [`FileEntry::check`]).
fn read_file(dir: &Path, entry: &FileEntry) -> Result<Vec<u8>> {
    let path = published_dir(dir).join(&entry.file);
    let bytes = std::fs::read(&path).map_err(Error::file("read", &path))?;
    match bytes.len() as u64 == entry.bytes {
        true => Ok(bytes),
        false => Err(entry.not_named(dir, "its length differs")),
    }
}

/// Writes `bytes`, whose BLAKE3 is `blake3`, as the new published file `name` (synced;
/// never over another).
fn write_file(dir: &Path, name: String, bytes: &[u8], blake3: &[u8; 32]) -> Result<FileEntry> {
    let published = published_dir(dir);
    std::fs::create_dir_all(&published).map_err(Error::file("make", &published))?;
    venn::util::files::write_new(&published.join(&name), bytes, 0o644)?;
    Ok(FileEntry {
        file: name,
        bytes: bytes.len() as u64,
        blake3: hex::encode(blake3),
    })
}

/// Writes `server`'s tag set and its index as new published files of `version`: the
/// set's hash is its digest.
fn write_tags(dir: &Path, version: u64, server: &CacheServer) -> Result<(FileEntry, FileEntry)> {
    let epoch = server.describe().epoch;
    let name = fresh_name("tags", epoch, version);
    let tags = write_file(dir, name, server.tags(), &server.describe().digest)?;
    let index = server.tags_index();
    let name = fresh_name("index", epoch, version);
    let index = write_file(dir, name, &index, blake3::hash(&index).as_bytes())?;
    Ok((tags, index))
}

/// A name no file of this publish's kind has had: its epoch, version and a random part
/// (a publish interrupted before its manifest may have left a file of the same version).
fn fresh_name(kind: &str, epoch: u32, version: u64) -> String {
    let mut random = [0u8; 6];
    venn::crypto::Prg::from_entropy().fill_bytes(&mut random);
    format!("{kind}-{epoch}-{version}-{}.bin", hex::encode(random))
}

/// Publishes the whole set, `items` as the store holds them after its operation
/// `covered_seq`, under `key` of `epoch` (version 0): a new dataset's first publish, and
/// each key rotation's.
pub(crate) fn publish_whole(
    dir: &Path,
    items: &[&[u8]],
    covered_seq: u64,
    settings: &Settings,
    key: ServerKey,
    epoch: u32,
) -> Result<Manifest> {
    let server = CacheServer::new(key, epoch, items, settings.max_items, settings.max_query)?;
    let (tags, index) = write_tags(dir, 0, &server)?;
    let form = settings.form;
    let manifest = Manifest {
        epoch,
        version: 0,
        covered_seq,
        items: items.len() as u64,
        max_items: settings.max_items,
        max_query: settings.max_query,
        trim: form.trim,
        lowercase: form.lowercase,
        columns: form.columns,
        any: form.any,
        tags,
        index: Some(index),
        deltas: Vec::new(),
    };
    manifest.write(dir)?;
    Ok(manifest)
}

/// Publishes what the store committed since the manifest, as one new version and its
/// delta; nothing if nothing changed. Returns the manifest now.
pub(crate) fn catch_up(dir: &Path, store: &Store) -> Result<Manifest> {
    let manifest = Manifest::read(dir)?;
    let ops = store.ops_after(manifest.covered_seq)?;
    let Some(last_seq) = ops.last().map(|op| op.seq) else {
        return Ok(manifest);
    };
    let (inserts, deletes) = net_changes(&ops);
    let mut server = manifest.server(dir)?;
    let delta = server.update(&inserts, &deletes)?.to_bytes();
    let version = manifest.version + 1;
    let name = fresh_name("delta", manifest.epoch, version);
    let delta = write_file(dir, name, &delta, blake3::hash(&delta).as_bytes())?;
    let (tags, index) = write_tags(dir, version, &server)?;
    let mut deltas = manifest.deltas.clone();
    deltas.push(delta);
    let keep_from = deltas.len().saturating_sub(MAX_DELTAS);
    let next = Manifest {
        version,
        covered_seq: last_seq,
        items: server.describe().len,
        tags,
        index: Some(index),
        deltas: deltas.split_off(keep_from),
        ..manifest
    };
    next.write(dir)?;
    Ok(next)
}

/// What `ops` (in order) changed: the items in the set after them and not before, and
/// those before and not after. The store records only changes, so an item's first
/// operation says whether the set held it before (a delete) and its last whether it
/// holds it after (an insert). A relabel changes no tag.
fn net_changes(ops: &[StoredOp]) -> (Vec<&[u8]>, Vec<&[u8]>) {
    let mut first_last: HashMap<&[u8], (Op, Op)> = HashMap::new();
    for StoredOp { op, item, .. } in ops.iter().filter(|o| o.op != Op::Relabel) {
        first_last
            .entry(item.as_slice())
            .and_modify(|(_, last)| *last = *op)
            .or_insert((*op, *op));
    }
    let (mut inserts, mut deletes) = (Vec::new(), Vec::new());
    for (item, (first, last)) in first_last {
        match (first, last) {
            (Op::Insert, Op::Insert) => inserts.push(item),
            (Op::Delete, Op::Delete) => deletes.push(item),
            // Held before and after, or neither: no change.
            _ => {}
        }
    }
    (inserts, deletes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An item's operations cancel out or not as its first and last say.
    #[test]
    fn changes_net_out() {
        let (a, b, c, d) = (b"a".to_vec(), b"b".to_vec(), b"c".to_vec(), b"d".to_vec());
        let ops = vec![
            (1, Op::Insert, a.clone()),
            (2, Op::Delete, a.clone()),
            (3, Op::Delete, b.clone()),
            (4, Op::Insert, b.clone()),
            (5, Op::Insert, c.clone()),
            (6, Op::Delete, d.clone()),
            (7, Op::Insert, d.clone()),
            (8, Op::Delete, d.clone()),
            (9, Op::Relabel, c.clone()),
        ];
        let ops: Vec<StoredOp> = (ops.into_iter())
            .map(|(seq, op, item)| StoredOp {
                seq,
                op,
                item,
                label: None,
            })
            .collect();
        let (inserts, deletes) = net_changes(&ops);
        assert_eq!(inserts, vec![&c[..]]);
        assert_eq!(deletes, vec![&d[..]]);
    }
}
