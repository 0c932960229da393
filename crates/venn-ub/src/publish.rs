//! What a dataset publishes, on disk under `published/`: the tag set of its current
//! version, the deltas of the last [`MAX_DELTAS`] versions before it, where its items
//! carry labels their label table at some version and the label deltas since
//! ([`LabelFiles`]), and `manifest.json` naming them (with each file's length and
//! BLAKE3), the key's epoch, the version, the dataset's settings and the last operation
//! of the store it covers.
//!
//! The tag set is written whole with each version (its bytes are a few per item); the
//! label table, tens of bytes an item, only when its deltas since outgrow half of it (or
//! [`MAX_LABEL_DELTAS`], or it holds more than twice the set's items plus 16): an update
//! writes what it changed; a rewrite (the deltas composed and applied in one pass) costs
//! at most twice the deltas' bytes it follows, or one table's copy per 1,024 publishes.
//!
//! A publish writes its new files under new names and syncs them, then replaces the
//! manifest whole (a temporary file synced and renamed, the directory synced), then
//! removes the files no manifest names: a crash at any point leaves the last manifest and
//! every file it names intact, and a server only ever reads a manifest and its files.
//! What the store committed after the manifest's `covered_seq` is published by the next
//! publish (`catch_up`).

use crate::keys;
use crate::store::{Op, Settings, Store, StoredOp};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use venn::crypto::oprf::ServerKey;
use venn::crypto::{Block, Prg};
use venn::session::run_plan::KeyForm;
use venn::unbalanced::cache::{CacheServer, UpdateLabels};
use venn::unbalanced::fhe::dataset::{entries, FheDataset, FheDelta};
use venn::unbalanced::fhe::params::{classes, FheSet};
use venn::unbalanced::fhe::plaintexts::PlaintextBudget;
use venn::unbalanced::fhe::session::{item_hash, set_named};
use venn::unbalanced::label_table::LabelTable;
use venn::unbalanced::labels::sealed_len;
use venn::unbalanced::link::{Published, PublishedLabels, MAX_DELTAS, MAX_LABEL_DELTAS};
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
    /// The label table and its deltas, where the dataset's items carry labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<LabelFiles>,
    /// The `ub-fhe` databases and their deltas, where the dataset serves `ub-fhe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fhe: Option<FheFiles>,
}

/// A dataset's published `ub-fhe` databases, one a query cap ([`classes`]): whole at
/// some version, and the deltas from there to the manifest's version (each the hashed,
/// sealed entries an update changed, the same for every database: a server brings them
/// up to date without the key or the items).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FheFiles {
    /// The seed choosing the items' locations (in every database), in hex.
    pub seed: String,
    /// Whether the tags are served too (`ub-cache`).
    pub tags: bool,
    /// The version the databases are of.
    pub version: u64,
    /// The databases, the smallest query cap first.
    pub databases: Vec<FheDatabaseFile>,
    /// The deltas from their version to the manifest's, oldest first.
    pub deltas: Vec<FileEntry>,
}

/// One `ub-fhe` database: its parameter set (one of Venn's) and its file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FheDatabaseFile {
    /// The parameter set's name.
    pub set: String,
    /// The database.
    pub file: FileEntry,
}

/// The most `ub-fhe` deltas kept after the databases: past them (or past a quarter of
/// the smallest database's bytes) they are written again.
const MAX_FHE_DELTAS: usize = 64;

/// A labeled dataset's published labels: its label table whole at some version, and the
/// label deltas from there to the manifest's version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelFiles {
    /// ℓ, the most bytes a label takes.
    pub len: u8,
    /// The version the table is of.
    pub version: u64,
    /// The table's entries.
    pub entries: u64,
    /// The table.
    pub table: FileEntry,
    /// The label deltas from its version to the manifest's, oldest first.
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
        let labels = (self.labels.iter()).flat_map(|l| l.deltas.iter().chain([&l.table]));
        let fhe = (self.fhe.iter())
            .flat_map(|f| f.deltas.iter().chain(f.databases.iter().map(|d| &d.file)));
        let named: Vec<&str> = (self.deltas.iter().chain([&self.tags]).chain(&self.index))
            .chain(labels)
            .chain(fhe)
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
        Ok(self.load_following(dir, retired, None, None)?.0)
    }

    /// As [`Manifest::load`], and its `ub-fhe` databases as loaded: where `before` (an
    /// earlier manifest's, as loaded) holds the same databases and a first part of its
    /// deltas, only the deltas since are read and applied, to clones of `before`'s
    /// databases (sharing the columns the deltas do not touch, and the plaintexts kept
    /// of them) — a publish reaches a server in the time its delta takes, not a read of
    /// every database. Databases read anew keep plaintexts within `budget`, if given.
    pub fn load_following(
        &self,
        dir: &Path,
        retired: Option<(u32, Instant)>,
        before: Option<&FheLoaded>,
        budget: Option<&Arc<PlaintextBudget>>,
    ) -> Result<(Published, Option<FheLoaded>)> {
        let mut server = self.server(dir)?;
        let now = Instant::now();
        if let Some((epoch, until)) = retired.filter(|&(e, until)| e < self.epoch && now < until) {
            server = server.succeeding(keys::load(dir, epoch)?, epoch, until - now);
        }
        let deltas = read_all(dir, &self.deltas)?;
        let labels = match &self.labels {
            Some(files) => Some(PublishedLabels {
                version: files.version,
                table: read_checked(dir, &files.table)?,
                deltas: read_all(dir, &files.deltas)?,
            }),
            None => None,
        };
        let published = Published::new(server, self.form(), deltas, labels)?;
        match &self.fhe {
            None => Ok((published, None)),
            Some(files) => {
                let label_len = self.labels.as_ref().map(|l| l.len);
                let loaded = files.loaded(dir, label_len, before, budget)?;
                let published = published.with_fhe(loaded.datasets.clone(), files.tags)?;
                Ok((published, Some(loaded)))
            }
        }
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
        let labels = self.labels.as_ref().map(|l| l.len);
        CacheServer::restore(
            key,
            epoch,
            version,
            tags,
            labels,
            self.max_items,
            self.max_query,
        )
        .map_err(not_named)
    }
}

/// A manifest's `ub-fhe` databases as a server loaded them, with the files they are of:
/// what a later manifest's follow from ([`Manifest::load_following`]).
#[derive(Clone)]
pub struct FheLoaded {
    files: FheFiles,
    datasets: Vec<Arc<FheDataset>>,
}

impl FheLoaded {
    /// The databases, the smallest query cap first.
    pub(crate) fn datasets(&self) -> &[Arc<FheDataset>] {
        &self.datasets
    }
}

impl FheFiles {
    /// The databases as published, as [`FheFiles::datasets`] keeping plaintexts within
    /// `budget`; from `before`'s by the deltas since where these files follow them (the
    /// same databases, `before`'s deltas a first part of these).
    fn loaded(
        &self,
        dir: &Path,
        label_len: Option<u8>,
        before: Option<&FheLoaded>,
        budget: Option<&Arc<PlaintextBudget>>,
    ) -> Result<FheLoaded> {
        let follows = before.filter(|b| {
            (b.files.seed == self.seed && b.files.version == self.version)
                && b.files.databases == self.databases
                && self.deltas.starts_with(&b.files.deltas)
        });
        let datasets = match follows {
            Some(before) => {
                let since = &self.deltas[before.files.deltas.len()..];
                let deltas = read_deltas(dir, label_len, since)?;
                // Each database on its own thread of the current pool.
                (before.datasets.par_iter())
                    .map(|d| Ok(Arc::new(FheDataset::clone(d).apply(&deltas)?)))
                    .collect::<Result<Vec<_>>>()?
            }
            None => (self.datasets(dir, label_len)?.into_iter())
                .map(|d| Arc::new(d.keeping_plaintexts(budget.cloned())))
                .collect(),
        };
        Ok(FheLoaded {
            files: self.clone(),
            datasets,
        })
    }

    /// The databases as published, with their deltas applied: each file checked, the
    /// databases of a dataset of labels of ℓ = `label_len` bytes.
    fn datasets(&self, dir: &Path, label_len: Option<u8>) -> Result<Vec<FheDataset>> {
        let seed = (hex::decode(&self.seed).ok())
            .and_then(|s| <[u8; 16]>::try_from(s).ok())
            .ok_or_else(|| {
                Error::State(format!("a ub-fhe seed {:?} not of 16 bytes", self.seed))
            })?;
        let seed = Block::from_le_bytes(seed);
        let deltas = read_deltas(dir, label_len, &self.deltas)?;
        (self.databases.par_iter())
            .map(|database| {
                let set = set_named(&database.set)?;
                let bytes = read_checked(dir, &database.file)?;
                let dataset = FheDataset::from_bytes(set, seed, label_len, self.version, &bytes)
                    .map_err(|e| database.file.not_named(dir, &e.to_string()))?;
                dataset.apply(&deltas)
            })
            .collect()
    }
}

/// The `ub-fhe` deltas `entries` names, each read, checked and decoded (labels sealed
/// for ℓ = `label_len` bytes).
fn read_deltas(dir: &Path, label_len: Option<u8>, entries: &[FileEntry]) -> Result<Vec<FheDelta>> {
    let sealed = label_len.map_or(0, |len| sealed_len(usize::from(len)));
    (read_all(dir, entries)?.iter())
        .map(|bytes| FheDelta::from_bytes(bytes, sealed))
        .collect()
}

/// The `ub-fhe` parameter sets of a dataset of `settings`, one a query cap: those of
/// Venn's serving its most items, up to (4,096 of) its query cap.
pub(crate) fn fhe_sets(settings: &Settings) -> Result<Vec<FheSet>> {
    classes(settings.max_items, settings.max_query.min(4096))
}

/// The OPRF values of `items` under `key`, a slice at a time (each evaluation's
/// working memory is bounded by the slice).
fn outputs(key: &ServerKey, items: &[&[u8]]) -> Result<Vec<[u8; 64]>> {
    let mut all = Vec::with_capacity(items.len());
    for slice in items.chunks(1 << 16) {
        all.extend(key.evaluate_all(slice)?);
    }
    Ok(all)
}

/// Writes the `ub-fhe` databases of `items` (with their `labels` where the dataset's
/// items carry them) under `key` of `epoch`, version 0, with a fresh location seed.
fn write_fhe_whole(
    dir: &Path,
    key: &ServerKey,
    epoch: u32,
    items: &[&[u8]],
    labels: Option<&[&[u8]]>,
    settings: &Settings,
) -> Result<FheFiles> {
    let sets = fhe_sets(settings)?;
    let mut prg = Prg::from_entropy();
    let labels = labels.zip(settings.label_len);
    let entries = entries(&outputs(key, items)?, labels, &mut prg)?;
    let seed = prg.block();
    let databases = (sets.into_iter())
        .map(|set| {
            let dataset = FheDataset::build(set, seed, &entries, settings.label_len)?;
            write_fhe_database(dir, epoch, 0, &dataset)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(FheFiles {
        seed: hex::encode(seed.to_le_bytes()),
        tags: settings.modes.cache(),
        version: 0,
        databases,
        deltas: Vec::new(),
    })
}

/// Writes `dataset`, a `ub-fhe` database of `version`, as a new published file.
fn write_fhe_database(
    dir: &Path,
    epoch: u32,
    version: u64,
    dataset: &FheDataset,
) -> Result<FheDatabaseFile> {
    let bytes = dataset.to_bytes();
    let name = fresh_name("fhe", epoch, version);
    Ok(FheDatabaseFile {
        set: dataset.set().name.to_owned(),
        file: write_file(dir, name, &bytes, blake3::hash(&bytes).as_bytes())?,
    })
}

/// `files` after the `ub-fhe` delta of `changes` to `version` (of `epoch`) under
/// `key`: the removed items' hashes, the relabelled and inserted items' entries (labels
/// sealed afresh), written as a delta file — and the databases written again with their
/// deltas applied where these outgrow [`MAX_FHE_DELTAS`] or a quarter of the smallest
/// database's bytes.
fn fhe_published(
    dir: &Path,
    files: &FheFiles,
    key: &ServerKey,
    changes: &Changes<'_>,
    (epoch, version): (u32, u64),
    label_len: Option<u8>,
) -> Result<FheFiles> {
    let mut prg = Prg::from_entropy();
    let hashes = |items: &[&[u8]]| -> Result<Vec<u128>> {
        Ok(outputs(key, items)?.iter().map(item_hash).collect())
    };
    let (inserts, insert_labels): (Vec<&[u8]>, Vec<&[u8]>) =
        changes.inserts.iter().copied().unzip();
    let (relabelled, new_labels): (Vec<&[u8]>, Vec<&[u8]>) =
        changes.relabels.iter().copied().unzip();
    let sealed = |items: &[&[u8]], labels: &[&[u8]], prg: &mut Prg| {
        entries(
            &outputs(key, items)?,
            label_len.map(|len| (labels, len)),
            prg,
        )
    };
    let relabels = (sealed(&relabelled, &new_labels, &mut prg)?.into_iter())
        .filter_map(|(hash, label)| label.map(|l| (hash, l)))
        .collect();
    let delta = FheDelta {
        from: version - 1,
        to: version,
        removes: hashes(&changes.deletes)?,
        relabels,
        inserts: sealed(&inserts, &insert_labels, &mut prg)?,
    };
    let bytes = delta.to_bytes();
    let name = fresh_name("fhe-delta", epoch, version);
    let mut files = files.clone();
    files.deltas.push(write_file(
        dir,
        name,
        &bytes,
        blake3::hash(&bytes).as_bytes(),
    )?);
    let delta_bytes: u64 = files.deltas.iter().map(|d| d.bytes).sum();
    let smallest = (files.databases.iter().map(|d| d.file.bytes)).min();
    if files.deltas.len() <= MAX_FHE_DELTAS && delta_bytes <= smallest.unwrap_or(0) / 4 {
        return Ok(files);
    }
    files.databases = (files.datasets(dir, label_len)?.iter())
        .map(|dataset| write_fhe_database(dir, epoch, version, dataset))
        .collect::<Result<Vec<_>>>()?;
    files.version = version;
    files.deltas.clear();
    Ok(files)
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

/// A published file, read and checked (its length and hash).
fn read_checked(dir: &Path, entry: &FileEntry) -> Result<Vec<u8>> {
    let bytes = read_file(dir, entry)?;
    entry.check(dir, blake3::hash(&bytes).as_bytes())?;
    Ok(bytes)
}

/// Published files, in order, each read and checked.
fn read_all(dir: &Path, entries: &[FileEntry]) -> Result<Vec<Vec<u8>>> {
    entries
        .iter()
        .map(|entry| read_checked(dir, entry))
        .collect()
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

/// Publishes the whole set, `items` (with their `labels`, where the dataset's items carry
/// them) as the store holds them after its operation `covered_seq`, under `key` of
/// `epoch` (version 0): a new dataset's first publish, and each key rotation's.
pub(crate) fn publish_whole(
    dir: &Path,
    items: &[&[u8]],
    labels: Option<&[&[u8]]>,
    covered_seq: u64,
    settings: &Settings,
    key: ServerKey,
    epoch: u32,
) -> Result<Manifest> {
    let (max_items, max_query) = (settings.max_items, settings.max_query);
    let (fhe_key, labels_given) = (key.clone(), labels);
    let (server, table) = match (labels, settings.label_len) {
        (None, None) => (
            CacheServer::new(key, epoch, items, max_items, max_query)?,
            None,
        ),
        (Some(labels), Some(len)) => {
            let (server, table) =
                CacheServer::labeled(key, epoch, items, labels, len, max_items, max_query)?;
            (server, Some(table))
        }
        _ => return Err(Error::State("labels for a labeled dataset only".into())),
    };
    let (tags, index) = write_tags(dir, 0, &server)?;
    let labels = table
        .map(|table| write_table(dir, epoch, 0, &table))
        .transpose()?;
    let fhe = (settings.modes.fhe())
        .then(|| write_fhe_whole(dir, &fhe_key, epoch, items, labels_given, settings))
        .transpose()?;
    let form = settings.form;
    let manifest = Manifest {
        epoch,
        version: 0,
        covered_seq,
        items: items.len() as u64,
        max_items,
        max_query,
        trim: form.trim,
        lowercase: form.lowercase,
        columns: form.columns,
        any: form.any,
        tags,
        index: Some(index),
        deltas: Vec::new(),
        labels,
        fhe,
    };
    manifest.write(dir)?;
    Ok(manifest)
}

/// Writes `table`, the label table of `version`, as a new published file.
fn write_table(dir: &Path, epoch: u32, version: u64, table: &LabelTable) -> Result<LabelFiles> {
    let wire = table.wire();
    let name = fresh_name("labels", epoch, version);
    Ok(LabelFiles {
        len: table.label_len(),
        version,
        entries: table.len(),
        table: write_file(dir, name, wire, blake3::hash(wire).as_bytes())?,
        deltas: Vec::new(),
    })
}

/// Publishes what the store committed since the manifest, as one new version and its
/// delta (and label delta); nothing if nothing changed. Returns the manifest now.
pub(crate) fn catch_up(dir: &Path, store: &Store) -> Result<Manifest> {
    let manifest = Manifest::read(dir)?;
    let ops = store.ops_after(manifest.covered_seq)?;
    let Some(last_seq) = ops.last().map(|op| op.seq) else {
        return Ok(manifest);
    };
    let changes = Changes::of(&ops);
    let mut server = manifest.server(dir)?;
    let (inserts, insert_labels): (Vec<&[u8]>, Vec<&[u8]>) =
        changes.inserts.iter().copied().unzip();
    let labels = manifest.labels.as_ref().map(|_| UpdateLabels {
        inserts: &insert_labels,
        relabels: &changes.relabels,
    });
    let (delta, label_delta) = server.update(&inserts, &changes.deletes, labels)?;
    let (epoch, version) = (manifest.epoch, manifest.version + 1);
    let delta = delta.to_bytes();
    let delta = write_file(
        dir,
        fresh_name("delta", epoch, version),
        &delta,
        blake3::hash(&delta).as_bytes(),
    )?;
    let (tags, index) = write_tags(dir, version, &server)?;
    let items = server.describe().len;
    let labels = match (&manifest.labels, label_delta) {
        (Some(files), Some(label_delta)) => {
            let bytes = label_delta.to_bytes();
            let name = fresh_name("label-delta", epoch, version);
            let entry = write_file(dir, name, &bytes, blake3::hash(&bytes).as_bytes())?;
            let mut files = files.clone();
            files.deltas.push(entry);
            Some(compacted(dir, files, epoch, version, items)?)
        }
        (None, None) => None,
        _ => {
            return Err(Error::State(
                "a labeled dataset's update without its labels".into(),
            ))
        }
    };
    let fhe = match &manifest.fhe {
        Some(files) => {
            let key = keys::load(dir, epoch)?;
            let label_len = manifest.labels.as_ref().map(|l| l.len);
            let at = (epoch, version);
            Some(fhe_published(dir, files, &key, &changes, at, label_len)?)
        }
        None => None,
    };
    let mut deltas = manifest.deltas.clone();
    deltas.push(delta);
    let keep_from = deltas.len().saturating_sub(MAX_DELTAS);
    let next = Manifest {
        version,
        covered_seq: last_seq,
        items,
        tags,
        index: Some(index),
        deltas: deltas.split_off(keep_from),
        labels,
        fhe,
        ..manifest
    };
    next.write(dir)?;
    Ok(next)
}

/// `files` as published at `version` (of `epoch`, a set of `items`): as they are, or the
/// table written again with its deltas applied where the deltas outgrow half its bytes
/// or [`MAX_LABEL_DELTAS`], or it holds more than 2 × `items` + 16 entries — the bounds
/// a client reads a sync's labels within ([`PublishedLabels`]).
fn compacted(
    dir: &Path,
    files: LabelFiles,
    epoch: u32,
    version: u64,
    items: u64,
) -> Result<LabelFiles> {
    let delta_bytes: u64 = files.deltas.iter().map(|d| d.bytes).sum();
    let within = delta_bytes <= files.table.bytes / 2
        && files.deltas.len() <= MAX_LABEL_DELTAS
        && files.entries <= items.saturating_mul(2).saturating_add(16);
    if within {
        return Ok(files);
    }
    let table = LabelTable::from_bytes(read_checked(dir, &files.table)?, u64::MAX)
        .map_err(|e| files.table.not_named(dir, &e.to_string()))?;
    let deltas = read_all(dir, &files.deltas)?;
    let table = table.after(files.version, &deltas, version)?;
    write_table(dir, epoch, version, &table)
}

/// What a run of operations changed, item by item: the items in the set after them and
/// not before (with their labels), those before and not after, and — in a labeled
/// dataset — those before and after whose label an operation set (with the last one).
/// The store records only changes, so an item's first operation says whether the set
/// held it before (a delete or a relabel) and its last whether it holds it after (an
/// insert or a relabel, whose label it keeps).
struct Changes<'a> {
    inserts: Vec<(&'a [u8], &'a [u8])>,
    deletes: Vec<&'a [u8]>,
    relabels: Vec<(&'a [u8], &'a [u8])>,
}

impl<'a> Changes<'a> {
    /// The net changes of `ops`, in order.
    fn of(ops: &'a [StoredOp]) -> Changes<'a> {
        let mut first_last: HashMap<&[u8], (&StoredOp, &StoredOp)> = HashMap::new();
        for op in ops {
            first_last
                .entry(op.item.as_slice())
                .and_modify(|(_, last)| *last = op)
                .or_insert((op, op));
        }
        let mut changes = Changes {
            inserts: Vec::new(),
            deletes: Vec::new(),
            relabels: Vec::new(),
        };
        for (item, (first, last)) in first_last {
            let before = first.op != Op::Insert;
            let after = last.op != Op::Delete;
            let label = last.label.as_deref();
            match (before, after) {
                (false, true) => changes.inserts.push((item, label.unwrap_or_default())),
                (true, false) => changes.deletes.push(item),
                // Held throughout: its label may have changed (an unlabeled item's never).
                (true, true) => changes.relabels.extend(label.map(|l| (item, l))),
                (false, false) => {}
            }
        }
        changes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An item's operations cancel out or not as its first and last say; an item held
    /// throughout keeps the last label set.
    #[test]
    fn changes_net_out() {
        let op = |seq, op, item: &str, label: Option<&str>| StoredOp {
            seq,
            op,
            item: item.as_bytes().to_vec(),
            label: label.map(|l| l.as_bytes().to_vec()),
        };
        let ops = vec![
            op(1, Op::Insert, "a", Some("1")),
            op(2, Op::Delete, "a", None),
            op(3, Op::Delete, "b", None),
            op(4, Op::Insert, "b", Some("2")),
            op(5, Op::Insert, "c", Some("3")),
            op(6, Op::Relabel, "c", Some("4")),
            op(7, Op::Delete, "d", None),
            op(8, Op::Insert, "d", Some("5")),
            op(9, Op::Delete, "d", None),
            op(10, Op::Relabel, "e", Some("6")),
            op(11, Op::Relabel, "e", Some("7")),
            op(12, Op::Relabel, "f", Some("8")),
            op(13, Op::Delete, "f", None),
        ];
        let mut changes = Changes::of(&ops);
        changes.relabels.sort();
        changes.deletes.sort();
        assert_eq!(changes.inserts, vec![(&b"c"[..], &b"4"[..])]);
        assert_eq!(changes.deletes, vec![&b"d"[..], &b"f"[..]]);
        assert_eq!(
            changes.relabels,
            vec![(&b"b"[..], &b"2"[..]), (&b"e"[..], &b"7"[..])]
        );
    }
}
