//! Runs on inputs larger than memory: both parties split their keys into the same hash
//! buckets and run the protocol bucket by bucket over one connection; the output is the
//! same rows, in input order, as one run over everything would give.
//!
//! **The run plan** ([`venn::session::run_plan`]) opens every run: each party's rows, the
//! buckets it needs for its memory (`--bucket-rows`, or automatically for a file too large
//! to hold at once) and how it takes its keys. Both take the larger bucket count, a power
//! of two, so each side's buckets are unions or splits of its own. One bucket is an
//! ordinary run (as without buckets).
//!
//! **Nothing leaks through bucket sizes.** A key's bucket is a public hash of it, so the
//! number of keys in each bucket says something about the set; each bucket is therefore
//! padded with random dummy keys to one size fixed by the row count and the bucket count
//! alone ([`padded_size`]), and the peer sees only that size. A bucket holding more keys
//! than that bound fails the run (probability at most 2^-40 for any set of distinct keys).
//! The peer learns the number of rows (not of distinct keys, which only the buckets'
//! contents would tell).
//!
//! **Why the bucket hash is fixed, not keyed per run.** Both parties must put a key in
//! the same bucket, and each splits its file before the peer is reached (splitting 10^8
//! rows takes minutes, longer than a peer would wait for a coin toss), so the hash cannot
//! depend on anything agreed in the run. The 2^-40 bound holds for any set chosen
//! without regard to the hash; a set crafted to crowd one bucket (by whoever supplies a
//! party's rows) can make that party's run fail, and the failure tells the peer only
//! that some bucket of ours overflowed. It cannot make a key's rows go missing or turn
//! up elsewhere: a failed run writes nothing.
//!
//! Each bucket's session is bound to the plans both parties sent and to the bucket's
//! number (through the channel binding the session id hashes), so a plan altered in
//! transit or sessions reordered fail the handshake; one bucket's, to the plans alone
//! ([`Agreed::bind`]).

use crate::columns::{padded_width, Layout};
use crate::input::footprint::Footprint;
use crate::input::parquet_file::{self, ParquetFile};
use crate::input::segments::{self, Segment};
use crate::input::source::{InputSource, MatchedRows, RowBatch};
use crate::input::{records, Format, KeyOptions};
use crate::join::JoinKind;
use crate::join::{Batches, Shape};
use crate::temp_dirs::TempDir;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use venn::later_rows::{InBuckets, PadSeeds};
use venn::net::{Channel, Rebound};
use venn::protocols::{Output, Phase, Protocol};
use venn::session::run_plan::{Agreed, Columns, MAX_LOG2_BUCKETS};
use venn::session::Role;
use venn::util::groups::Groups;
use venn::{Error, Items, Report, Result, RunOptions};

/// The most bytes of input read and parsed at a time when splitting a file.
const MAX_SEGMENT_BYTES: usize = 64 << 20;

/// The room of the bucket files' writers while a file is split (at most 256 files).
const WRITERS: u64 = 256 * WRITER_BYTES as u64;
const WRITER_BYTES: usize = 1 << 14;

/// The largest segment (a power of two, from 64 KiB to `MAX_SEGMENT_BYTES`) whose
/// splitting fits in `room`: the buffer it is read into and the rest past its last row
/// ([`segments::for_each_segment`]), what parsing it takes ([`Footprint::of`], with a row every two
/// bytes, the most there can be: a copy behind the header row included) and the bucket
/// files' writers.
pub fn segment_bytes(room: u64, opts: &KeyOptions) -> usize {
    let mut size = MAX_SEGMENT_BYTES;
    while size > 1 << 16 {
        let z = size as u64;
        let parsing = Footprint::of(z, z / 2 + 1, opts).reading;
        if 2 * z + (1 << 16) + parsing + WRITERS <= room {
            break;
        }
        size /= 2;
    }
    size
}

/// What a bucket read from disk takes per record of `key` key bytes, at most: the record
/// as read (16 + key), its key in the bucket's items and its row number (key + 16, in room
/// that doubles as it grows), what finding its duplicates takes (a hash, an index and up
/// to four table slots: 44) and its mark and places (24).
fn record_bytes(key: u64) -> u64 {
    (16 + key) + 2 * (key + 16) + 44 + 24
}

/// Rows a bucket may hold for `role` of `protocol` when the file of footprint `f` is
/// split to fit in `room`: half the room beside the rows' match bits (the other half for a
/// peer's larger share of a bucket, and the padding), at the role's memory per own and
/// peer item and a record's on the way in (`record_bytes`, for the file's average key).
pub fn rows_within(room: u64, f: &Footprint, protocol: &dyn Protocol, role: Role) -> u64 {
    let r = protocol.info().role(role);
    let key = f.key_bytes.div_ceil(f.rows.max(1));
    let per_row = r.own_item_bytes + r.peer_item_bytes + record_bytes(key);
    let room = room.saturating_sub(f.rows / 8) / 2;
    (room / per_row).max(1)
}

/// The buckets needed for `rows` rows with at most about `bucket_rows` in each: log2.
pub fn log2_buckets(rows: u64, bucket_rows: Option<u64>) -> u8 {
    match bucket_rows {
        None => 0,
        Some(per) => {
            let b = rows.div_ceil(per.max(1)).max(1).next_power_of_two();
            (b.trailing_zeros() as u8).min(MAX_LOG2_BUCKETS)
        }
    }
}

/// The public bucket hash of a key.
fn key_hash(key: &[u8]) -> u64 {
    // The hash key is derived once, not for every key hashed.
    static BUCKET_KEY: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    let k = BUCKET_KEY.get_or_init(|| blake3::derive_key("venn 2026-11 bucket of a key", &[]));
    let h = blake3::keyed_hash(k, key);
    u64::from_le_bytes(h.as_bytes()[..8].try_into().expect("8 bytes"))
}

/// The size every bucket is padded to: the smallest P with P ≥ μ = rows/B such that, for
/// `rows` distinct keys thrown into B = 2^log2 buckets, B·Pr[Bin(rows, 1/B) > P] ≤ 2^-40,
/// by the Chernoff bound Pr[X ≥ (1+δ)μ] ≤ exp(−δ²μ/(2+δ)).
pub fn padded_size(rows: u64, log2: u8) -> u64 {
    if log2 == 0 || rows == 0 {
        return rows;
    }
    let mu = rows as f64 / (1u64 << log2) as f64;
    let c = (log2 as f64 + venn::STATISTICAL_SECURITY as f64) * std::f64::consts::LN_2;
    let delta = (c + (c * c + 8.0 * c * mu).sqrt()) / (2.0 * mu);
    (((1.0 + delta) * mu).ceil() as u64).min(rows)
}

/// Where a party's keys come from, bucket by bucket.
pub enum Source<'a> {
    /// An input read whole.
    Memory(&'a dyn InputSource),
    /// A file split into `2^log2_files` bucket files on disk by [`split`].
    Disk(&'a Split),
}

impl Source<'_> {
    /// Bucket `c` of `2^log2`: its distinct keys, what they carry, and the rows (or key
    /// indices) each stands for; `whole`, an input read whole's keys by bucket.
    fn bucket(&self, c: u64, log2: u8, whole: &Grouped) -> Result<Bucket> {
        match self {
            Source::Memory(input) => {
                let group = &whole.groups[c as usize];
                let keys = input.keys();
                let records = keys.records().map(|(records, width)| {
                    let record = |k: u32| &records[k as usize * width..(k as usize + 1) * width];
                    (
                        group.iter().flat_map(|&k| record(k)).copied().collect(),
                        width,
                    )
                });
                Ok(Bucket {
                    keys: BucketKeys {
                        items: group.iter().map(|&k| keys.get(k as usize)).collect(),
                        records,
                        repeats: whole.repeats_of(keys, group),
                    },
                    marks: group.iter().map(|&k| k as u64).collect(),
                    starts: (0..=group.len()).collect(),
                })
            }
            Source::Disk(split) => {
                let (keys, rows, records) = split.bucket(c, log2)?;
                let width = split.layout.as_ref().map_or(0, Layout::width);
                Ok(dedup(keys, &rows, records.map(|r| (r, width))))
            }
        }
    }
}

/// The keys of an input read whole, grouped by bucket once ([`group_keys`]), and where
/// they repeat with records, each key's later rows.
#[derive(Default)]
pub(crate) struct Grouped {
    pub(crate) groups: Vec<Vec<u32>>,
    /// Key k's later rows: the input's repeated records `later.of(k)`
    /// ([`Items::repeated_records`]), in row order.
    later: Option<Groups>,
}

impl Grouped {
    /// `keys` (read whole) grouped into `2^log2` buckets.
    pub(crate) fn new(keys: &Items, log2: u8) -> Self {
        let (of, _) = keys.repeated_records();
        Grouped {
            groups: group_keys(keys, log2),
            later: (!of.is_empty()).then(|| Groups::new(of, keys.len())),
        }
    }

    /// The later rows of the keys of `group` (of `keys`), each with its place in the
    /// group.
    pub(crate) fn repeats_of(&self, keys: &Items, group: &[u32]) -> Repeats {
        let mut out = Repeats::default();
        let (Some(later), Some((_, width))) = (&self.later, keys.records()) else {
            return out;
        };
        let (_, records) = keys.repeated_records();
        for (i, &k) in group.iter().enumerate() {
            for &r in later.of(k as usize) {
                out.of.push(i as u32);
                let r = r as usize;
                out.records
                    .extend_from_slice(&records[r * width..(r + 1) * width]);
            }
        }
        out
    }

    /// The places in `group` of the keys that have later rows.
    pub(crate) fn repeated_in(&self, group: &[u32]) -> Vec<u32> {
        let Some(later) = &self.later else {
            return Vec::new();
        };
        (group.iter().enumerate())
            .filter(|&(_, &k)| !later.of(k as usize).is_empty())
            .map(|(i, _)| i as u32)
            .collect()
    }

    /// The memory the groups and the later rows' index hold, in bytes.
    pub(crate) fn memory(&self) -> u64 {
        groups_memory(&self.groups) + self.later.as_ref().map_or(0, Groups::memory)
    }
}

/// The memory [`group_keys`]'s groups hold, in bytes.
fn groups_memory(groups: &[Vec<u32>]) -> u64 {
    let group = |g: &Vec<u32>| std::mem::size_of::<Vec<u32>>() + 4 * g.capacity();
    groups.iter().map(group).sum::<usize>() as u64
}

/// The indices of `keys` in each of `2^log2` buckets, in key order: `groups[c]` for
/// bucket c.
fn group_keys(keys: &Items, log2: u8) -> Vec<Vec<u32>> {
    let mask = (1u64 << log2) - 1;
    let mut groups = vec![Vec::new(); 1 << log2];
    for k in 0..keys.len() {
        groups[(key_hash(keys.get(k)) & mask) as usize].push(k as u32);
    }
    groups
}

/// A file split into bucket files.
pub struct Split {
    dir: TempDir,
    log2_files: u8,
    /// The segments it was read in (and its rows will be written in).
    segment_bytes: usize,
    /// Rows in the file (kept: not skipped as empty), one for each key of a record (with
    /// `--match-any`, for each of its non-empty identifiers): the rows run, by number.
    pub rows: u64,
    /// Records in the file (kept): its rows, or the records they belong to.
    pub records: u64,
    /// Rows skipped for an empty key (`--skip-empty`).
    pub skipped_empty: u64,
    header: Option<Vec<u8>>,
    /// The revealed columns' layout (each given width, or the longest value's over the
    /// whole file, padded), if the rows reveal any: their values are in the bucket files.
    pub layout: Option<Layout>,
}

fn file_of(dir: &Path, f: u64) -> PathBuf {
    dir.join(format!("{f:06}.bucket"))
}

/// Reads the input at `path` in segments of about `size` bytes and calls `f` on each, in
/// file order, as its format is read ([`segments::for_each_segment`] for text,
/// [`parquet_file::for_each_segment`] for Parquet); returns a CSV file's header row.
fn for_each_segment(
    path: &Path,
    opts: &KeyOptions,
    size: usize,
    f: impl FnMut(Segment) -> Result<()>,
) -> Result<Option<Vec<u8>>> {
    match opts.format {
        Format::Parquet => parquet_file::for_each_segment(path, opts, size, f).map(|()| None),
        Format::Csv | Format::Lines => segments::for_each_segment(path, opts, size, f),
    }
}

/// Splits the keys of `path` into `2^log2_files` bucket files in a new directory inside
/// `parent` (default: the system's temporary directory), removed when the split is
/// dropped or the process is stopped ([`crate::temp_dirs`]): each record is the row's
/// number, the key's length and the key (16 bytes and the key a row). The file is read in
/// segments of `segment_bytes` ([`segment_bytes`]). `progress` is told the rows split so
/// far after each segment; `check(keys)` may refuse a segment's keys (a protocol on σ-bit
/// integers: anything else), before the peer is contacted rather than in the middle of the
/// buckets' runs.
pub fn split(
    path: &Path,
    opts: &KeyOptions,
    parent: Option<&Path>,
    log2_files: u8,
    segment_bytes: usize,
    mut progress: impl FnMut(u64),
    check: impl Fn(&venn::Items) -> Result<()>,
) -> Result<Split> {
    let parent = parent.map_or_else(std::env::temp_dir, Path::to_path_buf);
    let dir = TempDir::new_in(&parent, "venn-buckets-")
        .map_err(Error::file("create a bucket directory in", &parent))?;
    let files = 1u64 << log2_files;
    let mut out: Vec<BufWriter<std::fs::File>> = (0..files)
        .map(|f| {
            let p = file_of(dir.path(), f);
            std::fs::File::create(&p)
                .map(|file| BufWriter::with_capacity(WRITER_BYTES, file))
                .map_err(Error::file("create", &p))
        })
        .collect::<Result<_>>()?;
    let (mut rows, mut kept, mut skipped) = (0, 0, 0);
    let mut longest = vec![0usize; opts.reveal_columns.len()];
    let header = for_each_segment(path, opts, segment_bytes, |s| {
        let mut values = Vec::new();
        check(&s.input.keys).map_err(|e| match e {
            Error::Usage(why) => Error::Usage(format!("after row {}: {why}", s.rows_before)),
            e => e,
        })?;
        // Each row's revealed values, as its record holds them: a key's first row's is
        // the key's, its later rows' are set aside in their order.
        let revealed = match (&s.input.layout, s.input.keys.records()) {
            (Some(layout), Some((records, width))) => Some((layout, records, width)),
            _ => None,
        };
        let (of, repeated) = s.input.keys.repeated_records();
        let mut seen = vec![false; if of.is_empty() { 0 } else { s.input.keys.len() }];
        let mut later = 0;
        for (i, row) in s.input.rows.iter().enumerate() {
            let key = s.input.keys.get(row.key as usize);
            let f = key_hash(key) & (files - 1);
            let w = &mut out[f as usize];
            let number = s.rows_before + i as u64;
            let written = w
                .write_all(&number.to_le_bytes())
                .and_then(|()| w.write_all(&(key.len() as u64).to_le_bytes()))
                .and_then(|()| w.write_all(key));
            written.map_err(Error::file("write", &file_of(dir.path(), f)))?;
            if let Some((layout, records, width)) = revealed {
                let k = row.key as usize;
                let record = match seen.get_mut(k) {
                    Some(seen) if *seen => {
                        later += 1;
                        &repeated[(later - 1) * width..later * width]
                    }
                    seen => {
                        if let Some(seen) = seen {
                            *seen = true;
                        }
                        &records[k * width..(k + 1) * width]
                    }
                };
                layout.decode(record, &mut values)?;
                for (value, longest) in values.iter().zip(&mut longest) {
                    *longest = (*longest).max(value.len());
                    let written = w
                        .write_all(&(value.len() as u16).to_le_bytes())
                        .and_then(|()| w.write_all(value));
                    written.map_err(Error::file("write", &file_of(dir.path(), f)))?;
                }
            }
        }
        rows = s.rows_before + s.input.rows.len() as u64;
        kept += records(&s.input.rows).count() as u64;
        progress(rows);
        skipped += s.input.skipped_empty as u64;
        Ok(())
    })?;
    for (f, mut w) in out.into_iter().enumerate() {
        w.flush()
            .map_err(Error::file("write", &file_of(dir.path(), f as u64)))?;
    }
    let layout = match opts.reveal_columns.is_empty() {
        true => None,
        false => Some(Layout::new(
            (opts.reveal_columns.iter().zip(longest))
                .map(|(c, longest)| {
                    let width = c.width.map_or(padded_width(longest), usize::from);
                    (c.name.clone(), width.min(u16::MAX as usize) as u16)
                })
                .collect(),
        )?),
    };
    let split = Split {
        dir,
        log2_files,
        segment_bytes,
        rows,
        records: kept,
        skipped_empty: skipped,
        header,
        layout,
    };
    Ok(split)
}

impl Split {
    /// The records of bucket `c` of `2^log2`: their keys (in one store), rows and, where
    /// the rows reveal columns, the records of their values (in [`Split::layout`]). The
    /// files are read a record at a time, so that a file holding several buckets (more
    /// buckets than files) costs no more memory than the bucket's own records.
    fn bucket(&self, c: u64, log2: u8) -> Result<(Items, Vec<u64>, Option<Vec<u8>>)> {
        let files = 1u64 << self.log2_files;
        let buckets = 1u64 << log2;
        let wanted: Vec<u64> = if buckets <= files {
            (c..files).step_by(buckets as usize).collect()
        } else {
            vec![c & (files - 1)]
        };
        let (mut keys, mut rows) = (Items::new(), Vec::new());
        let mut records = self.layout.as_ref().map(|_| Vec::new());
        let (mut key, mut values) = (Vec::new(), Vec::new());
        for f in wanted {
            self.each_record(f, &mut key, &mut values, |row, key, (values, ends)| {
                if buckets <= files || key_hash(key) & (buckets - 1) == c {
                    keys.push(key);
                    rows.push(row);
                    if let (Some(records), Some(layout)) = (&mut records, &self.layout) {
                        let at = records.len();
                        records.resize(at + layout.width(), 0);
                        layout.encode_each(fields(values, ends), &mut records[at..]);
                    }
                }
            })?;
        }
        Ok((keys, rows, records))
    }

    /// Hands each record of bucket file `f` to `each`: its row, its key and its revealed
    /// values (read into `key` and `values`), one after another, with where each ends
    /// ([`fields`]).
    fn each_record(
        &self,
        f: u64,
        key: &mut Vec<u8>,
        values: &mut Vec<u8>,
        mut each: impl FnMut(u64, &[u8], (&[u8], &[usize])),
    ) -> Result<()> {
        let p = file_of(self.dir.path(), f);
        let file = std::fs::File::open(&p).map_err(Error::file("read", &p))?;
        let mut left = file.metadata().map_err(Error::file("read", &p))?.len();
        let mut r = BufReader::with_capacity(1 << 16, file);
        let columns = self.layout.as_ref().map_or(0, |l| l.columns.len());
        let mut ends = Vec::with_capacity(columns);
        while let Some(row) = next_record(&mut r, &mut left, key, (columns, values, &mut ends))
            .map_err(Error::file("read", &p))?
        {
            each(row, key, (values, &ends));
        }
        Ok(())
    }

    /// Whether a key has several rows: checked file by file (a key's rows are all in one
    /// file), before the peer is reached, so that no bucket's run stops on it.
    pub(crate) fn repeats_keys(&self) -> Result<bool> {
        let (mut key, mut values) = (Vec::new(), Vec::new());
        for f in 0..1u64 << self.log2_files {
            let mut keys = Items::new();
            self.each_record(f, &mut key, &mut values, |_, key, _| keys.push(key))?;
            let rows = keys.len();
            keys.deduplicate();
            if keys.len() != rows {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The file's header row, if it has one.
    pub(crate) fn header(&self) -> Option<&[u8]> {
        self.header.as_deref()
    }

    /// The split's own directory, for files of its own (removed with it).
    pub(crate) fn scratch(&self) -> &Path {
        self.dir.path()
    }

    /// The bytes of text a segment of the file holds: what memory holds at once.
    pub(crate) fn segment_bytes(&self) -> usize {
        self.segment_bytes
    }

    /// Reads the file that was split, `input` (read with `opts`), again in the segments
    /// it was split in, calling `f` on each in file order.
    pub(crate) fn each_segment(
        &self,
        input: &Path,
        opts: &KeyOptions,
        f: impl FnMut(Segment) -> Result<()>,
    ) -> Result<()> {
        for_each_segment(input, opts, self.segment_bytes, f).map(|_| ())
    }

    /// Refuses to write `input`'s rows where `seen` of them were read again, not the
    /// rows it was split into: matches are kept by row number, and a file that changed
    /// since cannot be written from them.
    pub(crate) fn check_rows(&self, input: &Path, seen: u64) -> Result<()> {
        match seen == self.rows {
            true => Ok(()),
            false => Err(Error::Usage(format!(
                "'{}' changed while venn ran ({} rows when split, {seen} now); nothing written",
                input.display(),
                self.rows
            ))),
        }
    }
}

/// The values laid one after another in `values`, each ending where `ends` says.
fn fields<'v>(values: &'v [u8], ends: &'v [usize]) -> impl Iterator<Item = &'v [u8]> {
    ends.iter().scan(0, move |start, &end| {
        let field = &values[*start..end];
        *start = end;
        Some(field)
    })
}

/// The next record of a bucket file with `left` bytes still to read: its row, with its
/// key in `key` and, for a file of rows revealing `columns` columns, their values one
/// after the other in `values`, each ending where `ends` says (`None` at the end). A
/// record past the file's end is an error, not an allocation of the length it claims.
fn next_record(
    r: &mut impl Read,
    left: &mut u64,
    key: &mut Vec<u8>,
    (columns, values, ends): (usize, &mut Vec<u8>, &mut Vec<usize>),
) -> std::io::Result<Option<u64>> {
    if *left == 0 {
        return Ok(None);
    }
    let past_end = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "a record runs past the end of the bucket file",
        )
    };
    let mut head = [0u8; 16];
    r.read_exact(&mut head)?;
    let row = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
    let len = u64::from_le_bytes(head[8..].try_into().expect("8 bytes"));
    let mut rest = left.checked_sub(16).ok_or_else(past_end)?;
    if len > rest {
        return Err(past_end());
    }
    key.resize(len as usize, 0);
    r.read_exact(key)?;
    rest -= len;
    values.clear();
    ends.clear();
    for _ in 0..columns {
        let mut len = [0u8; 2];
        r.read_exact(&mut len)?;
        let len = u16::from_le_bytes(len) as u64;
        rest = rest.checked_sub(2 + len).ok_or_else(past_end)?;
        let at = values.len();
        values.resize(at + len as usize, 0);
        r.read_exact(&mut values[at..])?;
        ends.push(values.len());
    }
    *left = rest;
    Ok(Some(row))
}

/// What a bucketed run learned: which rows (by number) are in the intersection and the
/// peer's records of each matched key.
pub struct Matches {
    bits: Vec<u64>,
    /// How many distinct keys of ours are in the intersection.
    pub keys: u64,
    peer: Gathered,
    by_row: Option<Box<ByRow>>,
    /// The pad seeds of the matched keys and where each key's records are kept (its key
    /// index, or its records' offset in [`ByRow`]'s file), for the peer's later rows
    /// that come after the last bucket ([`venn::later_rows`]).
    later: Option<Box<(PadSeeds, Vec<u64>)>>,
}

/// A bucket's output's records of the peer's: the matched entries, their records (of
/// `width` bytes) and each entry's number of records.
struct BucketRecords<'a> {
    indices: &'a [usize],
    records: &'a [u8],
    width: usize,
    rows: &'a [u32],
}

impl<'a> BucketRecords<'a> {
    /// `output`'s, if it has records.
    fn of(output: &'a Output) -> Option<Self> {
        match output {
            Output::Records {
                indices,
                records,
                width,
                rows,
            } => Some(BucketRecords {
                indices,
                records,
                width: *width,
                rows,
            }),
            _ => None,
        }
    }

    /// The real entries (below `real`: the rest are padding), each with its records.
    fn real(&self, real: usize) -> impl Iterator<Item = (usize, u32, &'a [u8])> + '_ {
        let starts = self.rows.iter().scan(0, |at, &n| {
            let start = *at;
            *at += n as usize * self.width;
            Some(start)
        });
        (self.indices.iter().zip(self.rows).zip(starts))
            .filter(move |((&i, _), _)| i < real)
            .map(|((&i, &n), at)| (i, n, &self.records[at..at + n as usize * self.width]))
    }
}

/// The peer's records of a split input's matched rows: written to a file in the split's
/// directory as the buckets bring them, a key's together (their number, 4 bytes, then
/// the records), each row's offset in it kept (`u64::MAX`: none), to be read back in file
/// order when the output is written.
struct ByRow {
    file: BufWriter<std::fs::File>,
    path: PathBuf,
    offsets: Vec<u64>,
    written: u64,
    width: usize,
}

impl ByRow {
    /// Appends one key's `n` records, returning where they start (read back only after
    /// [`ByRow::flush`]).
    fn append(&mut self, n: u32, records: &[u8]) -> Result<u64> {
        let at = self.written;
        let written =
            (self.file.write_all(&n.to_le_bytes())).and_then(|()| self.file.write_all(records));
        written.map_err(Error::file("write", &self.path))?;
        self.written += 4 + records.len() as u64;
        Ok(at)
    }

    /// Writes out what was appended.
    fn flush(&mut self) -> Result<()> {
        self.file.flush().map_err(Error::file("write", &self.path))
    }

    /// The records kept at `at` (flushed), read into `records`; how many.
    fn read(&self, at: u64, records: &mut Vec<u8>) -> Result<usize> {
        use std::os::unix::fs::FileExt;
        let mut n = [0u8; 4];
        let read = self.file.get_ref().read_exact_at(&mut n, at);
        read.map_err(Error::file("read", &self.path))?;
        let n = u32::from_le_bytes(n) as usize;
        records.resize(n * self.width, 0);
        let read = self.file.get_ref().read_exact_at(records, at + 4);
        read.map_err(Error::file("read", &self.path))?;
        Ok(n)
    }
}

/// The peer's records of the matched keys of an input read whole, bucket by bucket: for
/// each key, where some of its records start and how many (one a peer row) there are.
#[derive(Default)]
struct Gathered {
    width: usize,
    of: Vec<(u32, u32, usize)>,
    records: Vec<u8>,
}

impl Matches {
    /// No rows matched yet of `rows`; `later`, whether the peer's later rows will come
    /// after the last bucket.
    fn new(rows: u64, later: bool) -> Self {
        Matches {
            bits: vec![0; rows.div_ceil(64) as usize],
            keys: 0,
            peer: Gathered::default(),
            by_row: None,
            later: later.then(Default::default),
        }
    }

    /// Keeps a matched key's pad seed (entry `i` of the bucket's `seeds`) and where its
    /// records are (`at`), where the peer's later rows come after the last bucket.
    fn keep_seed(&mut self, seeds: Option<&PadSeeds>, i: usize, at: u64) -> Result<()> {
        if let Some((kept, places)) = self.later.as_deref_mut() {
            let seeds = seeds.ok_or_else(|| {
                Error::protocol("a bucket's pad seeds, for the later rows", "none kept")
            })?;
            kept.push_from(seeds, i);
            places.push(at);
        }
        Ok(())
    }

    /// Keeps the peer's records of a bucket's matched keys (`output`'s, where it has
    /// records): its entry i (below `real`: the rest are padding) is key
    /// `marks[starts[i]]` of an input read whole.
    fn gather(
        &mut self,
        output: &Output,
        seeds: Option<&PadSeeds>,
        real: usize,
        (marks, starts): (&[u64], &[usize]),
    ) -> Result<()> {
        let Some(got) = BucketRecords::of(output) else {
            return Ok(());
        };
        self.peer.width = got.width;
        for (i, n, records) in got.real(real) {
            let key = marks[starts[i]];
            let start = self.peer.records.len();
            self.peer.of.push((key as u32, n, start));
            self.peer.records.extend_from_slice(records);
            self.keep_seed(seeds, i, key)?;
        }
        Ok(())
    }

    /// The output over an input read whole of `keys` keys: the matched keys' indices,
    /// with the peer's records of each where it revealed columns.
    pub fn output_of_keys(mut self, keys: usize) -> Output {
        let indices: Vec<usize> = (0..keys).filter(|&k| self.has(k as u64)).collect();
        if self.peer.width == 0 {
            return Output::Indices(indices);
        }
        let Gathered { width, of, records } = &mut self.peer;
        // A key's records in the order they came: its bucket's, then its later rows'.
        of.sort_unstable_by_key(|&(key, _, start)| (key, start));
        let mut ordered = Vec::with_capacity(records.len());
        let mut rows: Vec<u32> = Vec::with_capacity(indices.len());
        for (j, &(key, n, start)) in of.iter().enumerate() {
            ordered.extend_from_slice(&records[start..start + n as usize * *width]);
            match j > 0 && of[j - 1].0 == key {
                true => *rows.last_mut().expect("the key's first entry") += n,
                false => rows.push(n),
            }
        }
        Output::Records {
            indices,
            records: ordered,
            width: *width,
            rows,
        }
    }

    /// The memory the bits, the rows' record offsets and the later rows' seeds hold, in
    /// bytes.
    fn memory(&self) -> u64 {
        let offsets = self.by_row.as_ref().map_or(0, |b| b.offsets.capacity());
        let later =
            (self.later.as_deref()).map_or(0, |(s, p)| s.memory() + 8 * p.capacity() as u64);
        8 * (self.bits.capacity() + offsets) as u64 + later
    }

    /// Keeps the peer's records of a split bucket's matched keys (`output`'s, where it has
    /// records) for their rows: entry i (below `real`) stands for the rows
    /// `marks[starts[i]..starts[i + 1]]`; the records go to a file in `split`'s directory.
    fn keep_by_row(
        &mut self,
        output: &Output,
        seeds: Option<&PadSeeds>,
        real: usize,
        (marks, starts): (&[u64], &[usize]),
        split: &Split,
    ) -> Result<()> {
        let Some(got) = BucketRecords::of(output) else {
            return Ok(());
        };
        if self.by_row.is_none() {
            let path = split.dir.path().join("peer-records");
            let file = (std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true))
            .open(&path)
            .map_err(Error::file("create", &path))?;
            let offsets = vec![u64::MAX; self.bits.len() * 64];
            self.by_row = Some(Box::new(ByRow {
                file: BufWriter::with_capacity(1 << 20, file),
                path,
                offsets,
                written: 0,
                width: got.width,
            }));
        }
        for (i, n, records) in got.real(real) {
            let by_row = self.by_row.as_mut().expect("made above");
            let at = by_row.append(n, records)?;
            for &row in &marks[starts[i]..starts[i + 1]] {
                by_row.offsets[row as usize] = at;
            }
            self.keep_seed(seeds, i, at)?;
        }
        self.by_row.as_mut().expect("made above").flush()
    }

    /// After the last bucket: the peer's later rows of the matched keys
    /// ([`venn::later_rows::receive`]: at most `most`, of `width` bytes; `rows`, ours),
    /// each key's put after its bucket's records.
    fn receive_later(
        &mut self,
        chan: &mut dyn Channel,
        most: u64,
        rows: u64,
        width: usize,
    ) -> Result<()> {
        let Some((seeds, places)) = self.later.take().map(|b| *b) else {
            return Ok(());
        };
        let got = venn::later_rows::receive(chan, &seeds, most, rows, width)?;
        drop(seeds);
        let mut later = got.records.chunks_exact(width);
        let mut moved = std::collections::HashMap::new();
        let mut records = Vec::new();
        for (&n, &at) in got.counts.iter().zip(&places).filter(|(&n, _)| n > 0) {
            let theirs: Vec<&[u8]> = later.by_ref().take(n as usize).collect();
            match &mut self.by_row {
                None => {
                    let start = self.peer.records.len();
                    self.peer.of.push((at as u32, n, start));
                    theirs
                        .iter()
                        .for_each(|r| self.peer.records.extend_from_slice(r));
                }
                Some(by_row) => {
                    let first = by_row.read(at, &mut records)? as u32;
                    theirs.iter().for_each(|r| records.extend_from_slice(r));
                    moved.insert(at, by_row.append(first + n, &records)?);
                }
            }
        }
        if let Some(by_row) = &mut self.by_row {
            by_row.flush()?;
            for at in by_row.offsets.iter_mut() {
                if let Some(&to) = moved.get(at) {
                    *at = to;
                }
            }
        }
        Ok(())
    }

    /// The peer's records of row `row` (its values' records, of their width, one after
    /// another), read into `records`: how many (0 if the row did not match, or the peer
    /// revealed no columns).
    pub fn records_of(&self, row: u64, records: &mut Vec<u8>) -> Result<usize> {
        let Some(by_row) = &self.by_row else {
            return Ok(0);
        };
        match by_row.offsets.get(row as usize).copied() {
            None | Some(u64::MAX) => Ok(0),
            Some(at) => by_row.read(at, records),
        }
    }

    /// Marks one matched key's rows (or its key index, for an input read whole).
    fn add(&mut self, rows: &[u64]) {
        self.keys += 1;
        for &row in rows {
            self.bits[(row / 64) as usize] |= 1 << (row % 64);
        }
    }
    /// Whether row `row` is in the intersection (a row past the end is not: the file
    /// grew, which the writer reports).
    pub fn has(&self, row: u64) -> bool {
        self.bits
            .get((row / 64) as usize)
            .is_some_and(|w| w >> (row % 64) & 1 == 1)
    }
}

/// How many of the peer's repeated rows an output holds: its records past one an entry.
pub(crate) fn repeated_rows(output: &Output) -> u64 {
    BucketRecords::of(output).map_or(0, |got| {
        let rows: u64 = got.rows.iter().map(|&n| n as u64).sum();
        rows.saturating_sub(got.indices.len() as u64)
    })
}

/// The sender's later rows of its keys with several rows, bucket by bucket, to go after
/// the last bucket ([`venn::later_rows::send`]): the pad seeds of the keys that have
/// them, and the rows (`of` indexing the seeds).
#[derive(Default)]
struct LaterRows {
    seeds: PadSeeds,
    rows: Repeats,
}

impl LaterRows {
    /// Keeps a bucket's `repeats` (of its items, whose pad seeds are `seeds`).
    fn keep(&mut self, repeats: Repeats, seeds: Option<&PadSeeds>) -> Result<()> {
        if repeats.of.is_empty() {
            return Ok(());
        }
        let seeds = seeds.ok_or_else(|| {
            Error::protocol("a bucket's pad seeds, for the later rows", "none kept")
        })?;
        let mut index = std::collections::HashMap::new();
        for &i in &repeats.of {
            let next = self.seeds.len() as u32;
            let at = *index.entry(i).or_insert_with(|| {
                self.seeds.push_from(seeds, i as usize);
                next
            });
            self.rows.of.push(at);
        }
        self.rows.records.extend_from_slice(&repeats.records);
        Ok(())
    }

    fn memory(&self) -> u64 {
        let rows = 4 * self.rows.of.capacity() + self.rows.records.capacity();
        self.seeds.memory() + rows as u64
    }
}

/// Runs the protocol bucket by bucket, telling `on_bucket` how many are done of how many
/// (before the first and after each). Returns a report summing the buckets' and, for a
/// party that learns indices, the matching rows.
///
/// Where the sender reveals columns and keys repeat, its keys' later rows go after the
/// last bucket in one stream ([`venn::later_rows`]), not bucket by bucket.
pub fn run_buckets(
    chan: &mut dyn Channel,
    agreed: &Agreed,
    source: &Source,
    opts: &RunOptions,
    mut on_bucket: impl FnMut(u64, u64),
) -> Result<(Report, Matches)> {
    let log2 = agreed.log2_buckets();
    let buckets = 1u64 << log2;
    let rows = agreed.ours.rows;
    // The sender's records' width, if it reveals columns: then its later rows go after
    // the last bucket (one bucket is an ordinary run).
    let senders = match opts.role {
        Role::Sender => &agreed.ours.columns.reveals,
        Role::Receiver => &agreed.peer.columns.reveals,
    };
    let later = Columns::record_width(senders).filter(|_| log2 > 0);
    let mut matches = Matches::new(rows, later.is_some() && opts.role == Role::Receiver);
    let mut sending = LaterRows::default();
    let mut total: Option<Report> = None;
    let mut distinct = 0u64;
    // Each bucket's session accepts from the peer no more than its padded share; repeated
    // rows it sends (the receiver's, with --both) no more than its rows in all, less
    // those of the buckets before.
    let mut repeats_left = opts.max_peer_items.min(agreed.peer.rows);
    let mut opts = RunOptions {
        max_peer_items: opts.max_peer_items.min(padded_size(agreed.peer.rows, log2)),
        ..*opts
    };
    // The peer's records a bucket's session may receive, beside its keys.
    let peer_records = agreed.peer_records_memory(opts.max_peer_items);
    // Keys read whole, grouped by bucket once.
    let whole = match source {
        Source::Memory(input) => Grouped::new(input.keys(), log2),
        Source::Disk(_) => Grouped::default(),
    };
    // What the run holds beside each bucket: the input read whole and its groups, or
    // nothing of a split file but the rows' match bits.
    let outside = match source {
        Source::Memory(input) => input.memory() + whole.memory(),
        Source::Disk(_) => 0,
    };
    on_bucket(0, buckets);
    for c in 0..buckets {
        let Bucket {
            mut keys,
            marks,
            starts,
        } = source.bucket(c, log2, &whole)?;
        distinct += keys.items.len() as u64;
        let real = keys.items.len();
        let repeats = match (later, opts.role) {
            (Some(_), Role::Sender) => std::mem::take(&mut keys.repeats),
            _ => Repeats::default(),
        };
        let marked = 8 * (marks.capacity() + starts.capacity()) as u64;
        let held = outside + matches.memory() + sending.memory() + marked + peer_records;
        opts.in_buckets = (log2 > 0).then_some(InBuckets {
            peer_rows: repeats_left,
        });
        let mut report = run_nth(&mut *chan, agreed, c, keys, held, &opts)?;
        repeats_left = repeats_left.saturating_sub(repeated_rows(&report.output));
        let seeds = report.pad_seeds.take();
        sending.keep(repeats, seeds.as_ref())?;
        if let Some(ix) = report.output.indices() {
            // The bucket's real keys (the rest are its padding), with what each stands for.
            for &i in ix.iter().filter(|&&i| i < real) {
                matches.add(&marks[starts[i]..starts[i + 1]]);
            }
        }
        let marks = (&marks[..], &starts[..]);
        match source {
            Source::Memory(_) => matches.gather(&report.output, seeds.as_ref(), real, marks)?,
            Source::Disk(split) => {
                matches.keep_by_row(&report.output, seeds.as_ref(), real, marks, split)?
            }
        }
        total = Some(match total {
            None => report,
            Some(t) => add(t, report),
        });
        on_bucket(c + 1, buckets);
    }
    let mut report = total.expect("at least one bucket");
    if let Some(width) = later {
        let start = std::time::Instant::now();
        let width = width as usize;
        match opts.role {
            Role::Sender => {
                let rows = (&sending.rows.of[..], &sending.rows.records[..]);
                venn::later_rows::send(chan, &sending.seeds, rows, width, agreed.peer.rows)?
            }
            Role::Receiver => {
                let most = opts.in_buckets.map_or(0, |b| b.peer_rows);
                matches.receive_later(chan, most, agreed.ours.rows, width)?
            }
        }
        report.phases.push(Phase {
            name: "later rows",
            offline: false,
            duration: start.elapsed(),
        });
        report.traffic = chan.traffic();
    }
    report.n_self = distinct;
    report.n_peer = agreed.peer.rows;
    if report.output.indices().is_some() {
        report.output = Output::Count(matches.keys);
    }
    Ok((report, matches))
}

/// Runs bucket `c` of the `agreed` buckets on its distinct `keys`: one bucket is an
/// ordinary run (as the peer may make it from a file read whole), more are padded sessions
/// ([`run_bucket`]). `held`: the memory the run holds beside the bucket's keys.
fn run_nth(
    chan: &mut dyn Channel,
    agreed: &Agreed,
    c: u64,
    keys: BucketKeys,
    held: u64,
    opts: &RunOptions,
) -> Result<Report> {
    let log2 = agreed.log2_buckets();
    if log2 == 0 {
        let items = with_records(keys)?;
        let opts = RunOptions {
            input_memory: held + items.memory(),
            ..*opts
        };
        return venn::run(&mut agreed.bind(chan), &items, &opts);
    }
    let pad = padded_size(agreed.ours.rows, log2);
    run_bucket(chan, &agreed.digest(), c, keys, pad, held, opts)
}

/// The bucket's items with their `records` of the revealed columns and their later rows',
/// if any (a dummy item's, past the real items' records, zeros).
fn with_records(keys: BucketKeys) -> Result<Items> {
    let BucketKeys {
        items,
        records,
        repeats,
    } = keys;
    let Some((mut records, width)) = records else {
        return Ok(items);
    };
    records.resize(items.len() * width, 0);
    let items = items.with_records(records, width)?;
    match repeats.of.is_empty() {
        true => Ok(items),
        false => items.with_repeated_records(repeats.of, repeats.records),
    }
}

/// Runs bucket `c` of a bucketed run on its distinct `keys` (with the records of their
/// revealed columns, if any), padded with random dummy keys (zero records) to `pad`, in a
/// session bound to the channel's own binding, the plans both sent (`plans`: their
/// digest) and `c`. A bucket whose keys exceed `pad` is refused before the session.
/// `held`: the memory the run holds beside the bucket's keys, which `--max-memory` counts
/// with them.
pub fn run_bucket(
    chan: &mut dyn Channel,
    plans: &[u8; 32],
    c: u64,
    mut keys: BucketKeys,
    pad: u64,
    held: u64,
    opts: &RunOptions,
) -> Result<Report> {
    let items = &mut keys.items;
    if items.len() as u64 > pad {
        return Err(Error::Unlucky(format!(
            "bucket {c} holds {} distinct keys, more than the {pad} every bucket is padded to \
             (this happens with probability below 2^-40 for distinct keys); run again with \
             a different bucket count (--bucket-rows)",
            items.len()
        )));
    }
    let mut prg = venn::crypto::Prg::from_entropy();
    while (items.len() as u64) < pad {
        let mut dummy = [0u8; 32];
        prg.fill_bytes(&mut dummy);
        items.push(&dummy);
    }
    let items = with_records(keys)?;
    let mut h = blake3::Hasher::new_derive_key("venn 2026-11 bucket session");
    h.update(&chan.binding().unwrap_or_default());
    h.update(plans);
    h.update(&c.to_le_bytes());
    let mut bound = Rebound {
        inner: chan,
        binding: *h.finalize().as_bytes(),
    };
    let opts = RunOptions {
        input_memory: held + items.memory(),
        ..*opts
    };
    venn::run(&mut bound, &items, &opts)
}

/// A bucket's distinct keys, and what each stands for: `marks[starts[i]..starts[i + 1]]`
/// are the rows (of a split file) or the key index (of a file read whole) of key `i`.
struct Bucket {
    keys: BucketKeys,
    marks: Vec<u64>,
    starts: Vec<usize>,
}

/// A bucket's distinct keys and what they carry to the peer.
pub struct BucketKeys {
    /// The keys.
    pub items: Items,
    /// The records of the items' revealed columns, item by item, and their width, if
    /// they reveal any.
    pub records: Option<(Vec<u8>, usize)>,
    /// The later rows of its keys with several rows, where records go with them.
    pub repeats: Repeats,
}

/// Later rows of keys with several rows: `of[e]`, the item row `e` repeats, and its
/// record (of the items' records' width) in `records`, each item's in the order they
/// came.
#[derive(Default)]
pub struct Repeats {
    /// For each later row, its item.
    pub of: Vec<u32>,
    /// The later rows' records.
    pub records: Vec<u8>,
}

/// A split bucket's records (key `i` on row `rows[i]`, with `records`' i-th of the
/// revealed columns, if any) as distinct keys, each with its rows (grouped by a counting
/// sort, in record order) and the first row's record, the later rows' set aside.
fn dedup(mut keys: Items, rows: &[u64], records: Option<(Vec<u8>, usize)>) -> Bucket {
    let index = keys.deduplicate();
    let by_key = Groups::new(&index, keys.len());
    let marks = (by_key.order().iter()).map(|&j| rows[j as usize]).collect();
    let starts = (by_key.starts().iter()).map(|&s| s as usize).collect();
    let mut repeats = Repeats::default();
    let records = records.map(|(all, width)| {
        if keys.len() == rows.len() {
            return (all, width);
        }
        let mut first = vec![0u8; keys.len() * width];
        let mut seen = vec![false; keys.len()];
        for (j, &k) in index.iter().enumerate() {
            let (k, record) = (k as usize, &all[j * width..(j + 1) * width]);
            if std::mem::replace(&mut seen[k], true) {
                repeats.of.push(k as u32);
                repeats.records.extend_from_slice(record);
            } else {
                first[k * width..(k + 1) * width].copy_from_slice(record);
            }
        }
        (first, width)
    });
    Bucket {
        keys: BucketKeys {
            items: keys,
            records,
            repeats,
        },
        marks,
        starts,
    }
}

/// Two buckets' reports as one: phases summed by name, the later traffic (the channel's
/// running total), intersections joined (only protocols whose output is the intersection
/// run bucket by bucket).
fn add(mut a: Report, b: Report) -> Report {
    for p in b.phases {
        match a.phases.iter_mut().find(|q| q.name == p.name) {
            Some(q) => q.duration += p.duration,
            None => a.phases.push(Phase { ..p }),
        }
    }
    a.traffic = b.traffic;
    a.output = match (a.output, b.output) {
        (Output::Indices(x), Output::Indices(y)) => Output::Indices([x, y].concat()),
        (_, other) => other,
    };
    a
}

/// The matched rows of a split file, fetched by reading the file (`input`, read with
/// `opts`) again, segment by segment as it was split: a row at a time, each as it is in
/// the file.
pub struct SplitRows<'a> {
    /// The file that was split.
    pub input: &'a Path,
    /// How its keys were taken.
    pub opts: &'a KeyOptions,
    /// Its buckets, as they were written.
    pub split: &'a Split,
    /// The rows each bucket's run matched.
    pub matches: &'a Matches,
    /// Which rows are output (`--join`), and how.
    pub shape: Shape<'a>,
}

impl MatchedRows for SplitRows<'_> {
    fn each_batch(&self, each: &mut dyn FnMut(RowBatch) -> std::io::Result<()>) -> Result<usize> {
        let mut batches = Batches::new(each);
        if let Some(h) = &self.split.header {
            batches.header(|out| self.shape.header(out, h))?;
        }
        // A Parquet file's rows go by position, copied from the file.
        let added = self.shape.added();
        let table = match self.opts.format {
            Format::Parquet => Some(ParquetFile::open(self.input)?),
            Format::Csv | Format::Lines => None,
        };
        if let Some(file) = &table {
            batches.pass(RowBatch::Table {
                file,
                matched: self.shape.kind == JoinKind::Left,
                columns: &added,
            })?;
        }
        let (mut count, mut seen, mut on, mut record) = (0, 0, Vec::new(), Vec::new());
        self.split.each_segment(self.input, self.opts, |s| {
            seen = s.rows_before + s.input.rows.len() as u64;
            let mut number = s.rows_before;
            // A record at a time (with --match-any, its identifiers' rows): matched if
            // any of its rows is.
            for rows in records(&s.input.rows) {
                let has = |j: usize| self.matches.has(number + j as u64);
                let first = (0..rows.len()).find(|&j| has(j));
                let identifiers = (rows.iter().enumerate()).filter(|&(j, _)| has(j));
                self.shape
                    .matched_on(identifiers.map(|(_, r)| r.identifier), &mut on);
                let (matched, at) = (first.is_some(), number);
                number += rows.len() as u64;
                if !self.shape.kind.keeps(matched) {
                    continue;
                }
                // `matched_on`, then the peer's values of the first identifier's row that
                // matched (the records the buckets kept for it): a row each.
                let (layout, n) = match (first, self.shape.columns) {
                    (Some(j), Some(layout)) => {
                        match self.matches.records_of(at + j as u64, &mut record)? {
                            0 => {
                                return Err(Error::protocol(
                                    "the peer's record of each matched row",
                                    "none",
                                ))
                            }
                            n => (Some(layout), n),
                        }
                    }
                    _ => (None, 1),
                };
                let width = layout.map_or(0, |_| record.len() / n);
                for theirs in (0..n).map(|j| &record[j * width..(j + 1) * width]) {
                    let mut values: Vec<&[u8]> = Vec::new();
                    if let Some(layout) = layout {
                        layout.decode(theirs, &mut values)?;
                    }
                    if matched && self.shape.identifiers.is_some() {
                        values.insert(0, &on);
                    }
                    match &table {
                        Some(_) => batches.pass(RowBatch::Joined {
                            position: rows[0].bytes.start,
                            matched,
                            values: &values,
                        })?,
                        None => {
                            let row = s.input.bytes(&rows[0].bytes);
                            batches.row(|out| self.shape.row(out, row, matched, &values))?;
                        }
                    }
                    count += 1;
                }
            }
            Ok(())
        })?;
        batches.finish()?;
        self.split.check_rows(self.input, seen)?;
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_bounds_the_fullest_bucket_and_costs_little() {
        assert_eq!(padded_size(1000, 0), 1000, "one bucket is not padded");
        for (rows, log2) in [(100u64, 3u8), (1 << 20, 4), (100_000_000, 7)] {
            let p = padded_size(rows, log2);
            let mu = rows as f64 / (1u64 << log2) as f64;
            assert!(p as f64 >= mu && p <= rows, "{rows} in 2^{log2}: {p}");
            if mu >= 1e6 {
                assert!(
                    (p as f64) < mu * 1.01,
                    "under 1% padding at 10^6 a bucket: {p}"
                );
            }
        }
        // Throwing keys at random never overfills a bucket in practice.
        let mut prg = venn::crypto::Prg::from_seed(venn::crypto::Block::from(9));
        let (rows, log2) = (20_000u64, 5u8);
        let mut load = vec![0u64; 1 << log2];
        for _ in 0..rows {
            load[(prg.block().low_u64() & ((1 << log2) - 1)) as usize] += 1;
        }
        assert!(load.iter().all(|&l| l <= padded_size(rows, log2)));
    }

    #[test]
    fn bucket_counts_follow_the_rows() {
        assert_eq!(log2_buckets(1000, None), 0);
        assert_eq!(log2_buckets(1000, Some(1000)), 0);
        assert_eq!(log2_buckets(1001, Some(1000)), 1);
        assert_eq!(log2_buckets(100_000_000, Some(1 << 20)), 7);
    }
}
