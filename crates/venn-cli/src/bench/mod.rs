//! `venn bench`: each protocol at each n, both parties as separate OS processes (so peak
//! RSS is per party) over loopback TCP, one thread each unless told otherwise. Items are
//! random 16-byte strings with half of them shared (the sender's with records, for a
//! `--payload` row); the receiver checks its output against the known intersection (and
//! the records of its matches), and a run that does not verify is reported as failed.

mod files;
mod items;
mod network;
mod parquet_rows;
mod party;
mod process;
mod records;
mod row;
mod run;
mod solo;
mod table;
mod thunder;
mod ub;
mod ub_fhe;

use crate::failure::{Failure, Result};
pub(crate) use files::{FileFormat, FilesJoin};
pub(crate) use items::bench_input_memory;
pub(crate) use network::{parse_net, parse_net_arg};
pub(crate) use party::{BenchLink, BenchParty};
pub(crate) use records::PayloadRow;
pub(crate) use row::Row;
use run::{bench_one, Attached, Spawn};
use std::path::{Path, PathBuf};
use table::{interleaved, median};
pub(crate) use thunder::{bench_thunder, ThunderOptions};
pub(crate) use ub::{bench_ub, UbOptions};
pub(crate) use ub_fhe::bench_ub_fhe;
use venn::protocols::{find, Bins, Offline, Options, Protocol, Stash};
use venn::session::{Role, Sizes};
use venn::{Error, Items};

/// A protocol with the options of its rows.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Variant<'a> {
    pub name: &'a str,
    pub options: Options,
}

impl Variant<'_> {
    /// The protocol column: its name, `/wan` for WAN bins, `/sσ` for σ-bit items, and
    /// `/pW` for records of W bytes on the sender's items.
    pub(crate) fn label(&self) -> String {
        let mut label = self.name.to_string();
        if self.options.bins == Bins::Wan {
            label += "/wan";
        }
        if let Some(sigma) = self.options.sigma {
            label += &format!("/s{sigma}");
        }
        if self.options.offline != Offline::Ot {
            label += &format!("/{}", self.options.offline.name());
        }
        if self.options.stash != Stash::Combined {
            label += &format!("/{}", self.options.stash.name());
        }
        if let Some(width) = self.options.payload {
            label += &format!("/p{width}");
        }
        label
    }

    /// For a variant with records: the label of the same without them, the row a
    /// `--payload` row is compared with.
    fn without_records(&self) -> Option<String> {
        self.options.payload.map(|_| {
            let options = Options {
                payload: None,
                ..self.options
            };
            Variant { options, ..*self }.label()
        })
    }
}

/// A scratch directory (generated files, transcripts, states), removed when dropped or
/// when the benchmark is stopped ([`venn_app::temp_dirs`]).
struct ScratchDir(venn_app::temp_dirs::TempDir);

impl ScratchDir {
    fn new() -> Result<Self> {
        let tag = format!("venn-bench-{}-", std::process::id());
        Ok(ScratchDir(venn_app::temp_dirs::TempDir::new_in(
            &std::env::temp_dir(),
            &tag,
        )?))
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

/// Makes a key and certificate for each role in `dir`, each pinning the other's: what
/// `bench-party --tls-dir` reads.
fn tls_identities(dir: &Path) -> Result<()> {
    for role in [Role::Sender, Role::Receiver] {
        let made = venn_app::keygen::self_signed(1)?;
        let file = |ext: &str| dir.join(format!("{}.{ext}", role.name()));
        std::fs::write(file("crt"), made.cert_pem)?;
        std::fs::write(file("key"), made.key_pem)?;
        std::fs::write(file("fp"), made.fingerprint)?;
    }
    Ok(())
}

/// What `venn bench` measures.
pub(crate) struct BenchOptions<'a> {
    pub protocols: &'a [String],
    /// RR17's bins, a row for each (for protocols that take them).
    pub bins: &'a [Bins],
    /// Item bit lengths, a row for each (for protocols on σ-bit integers; empty: all they
    /// take).
    pub sigmas: &'a [crate::params::SigmaRow],
    pub log2ns: &'a [u32],
    /// Unequal set sizes, (sender, receiver): a row for each after the `log2ns`' (only
    /// for the protocols' runs, not `--solo` or `--files`).
    pub sizes: &'a [(u64, u64)],
    /// Threads per party; one row per count.
    pub threads: &'a [usize],
    /// Runs per row; the row shows the run with the median total time.
    pub repeat: usize,
    /// Also time each party alone at each thread count.
    pub solo: bool,
    /// Run the offline phase into state files first, and the online phase from them in a
    /// second session (the online column is then that session alone).
    pub precompute: bool,
    /// Also run each protocol over TLS, interleaved with the plaintext runs.
    pub tls: bool,
    /// An emulated network (`--net`), as given.
    pub net: Option<&'a str>,
    /// Where kbm23's tuples come from, a row for each (for protocols that choose).
    pub offlines: &'a [Offline],
    /// The width of the sender's records, a row for each (`none`: without; for protocols
    /// that carry them, others running without).
    pub payloads: &'a [PayloadRow],
    /// Run `venn send` and `venn receive` end to end on files instead.
    pub files: bool,
    /// With `files`: what the receiver's output holds, a row for each.
    pub joins: &'a [FilesJoin],
    /// The files' formats, a row for each.
    pub file_formats: &'a [FileFormat],
    pub json: bool,
    pub timeout: u64,
}

/// `venn bench`: each row is the median of `repeat` runs. Its stages: resolve the rows
/// (refusing what cannot run before anything does), then either `--files`, or the
/// protocols' runs — set up, and for each n and thread count measure, compare and keep
/// every row — then `--solo`'s replays, and the JSON of them all.
pub(crate) fn bench(o: &BenchOptions) -> Result<()> {
    let resolved = resolve(o)?;
    if o.files {
        return bench_files(o, &resolved.variants);
    }
    let threads = thread_counts(o.threads)?;
    let setup = Setup::new(o)?;
    if !o.json {
        row::print_header(o.precompute, o.tls);
    }
    let mut rows = Vec::new();
    for &sizes in &resolved.sizes {
        for &t in &threads {
            let at = measure_at(o, &setup, &resolved.variants, sizes, t)?;
            table::keep(compare(at), o.json, &mut rows)?;
        }
    }
    let solo = match o.solo {
        true => solo::solo_table(o, &resolved.variants, &threads)?,
        false => Vec::new(),
    };
    if o.json {
        table::print_json([
            ("rows", serde_json::json!(rows)),
            ("solo", serde_json::json!(solo)),
        ]);
    }
    Ok(())
}

/// What the benchmark runs: every protocol with each combination of options asked for
/// that it takes, and every pair of set sizes.
struct Resolved<'a> {
    variants: Vec<Variant<'a>>,
    sizes: Vec<Sizes>,
}

/// Resolve: the protocols × their option combinations × their record widths (a protocol
/// that takes none of them, or an option it refuses — a record width it cannot carry
/// too — is an error), and the sets of `--log2n` then `--sizes`, each at most what a
/// party takes (checked before any is made).
fn resolve<'a>(o: &BenchOptions<'a>) -> Result<Resolved<'a>> {
    let mut variants = Vec::new();
    for name in o.protocols {
        let p = find(name)?;
        let options = crate::params::variants(p, o.bins, o.sigmas, o.offlines);
        if options.is_empty() {
            return Err(Error::Usage(format!(
                "{name} runs with none of the option combinations asked for"
            ))
            .into());
        }
        for options in options {
            for payload in payloads(p, o.payloads) {
                let options = Options { payload, ..options };
                // As the parties' configuration takes them: no items yet to refuse.
                p.check_items(options, &Items::default())?;
                variants.push(Variant { name, options });
            }
        }
    }
    let equal = (o.log2ns.iter()).map(|&k| {
        let n = 1u64.checked_shl(k).unwrap_or(u64::MAX);
        (n, n)
    });
    let sizes = (equal.chain(o.sizes.iter().copied()))
        .map(
            |(sender, receiver)| match sender.max(receiver) <= venn::MAX_ITEMS {
                true => Ok(Sizes { sender, receiver }),
                false => Err(Error::Usage(format!(
                    "sets of {sender} and {receiver} items: more than the supported {}",
                    venn::MAX_ITEMS
                ))),
            },
        )
        .collect::<venn::Result<_>>()?;
    Ok(Resolved { variants, sizes })
}

/// The record widths `p`'s rows run with: each of `asked` (`none`: without records) if it
/// carries records, else only without; each once.
fn payloads(p: &dyn Protocol, asked: &[PayloadRow]) -> Vec<Option<u32>> {
    let mut widths = Vec::new();
    for &PayloadRow(width) in asked {
        let width = width.filter(|_| p.accepts().payload);
        if !widths.contains(&width) {
            widths.push(width);
        }
    }
    if widths.is_empty() {
        widths.push(None);
    }
    widths
}

/// `--files`, which runs each protocol with its default options only.
fn bench_files(o: &BenchOptions, variants: &[Variant]) -> Result<()> {
    if let Some(v) = variants.iter().find(|v| v.options != Options::default()) {
        return Err(Error::Usage(format!(
            "--files runs protocols on generated hex keys with their default options, not {}",
            v.label()
        ))
        .into());
    }
    files::bench_files(
        o.protocols,
        (o.joins, o.file_formats),
        o.log2ns,
        o.repeat,
        o.json,
    )
}

/// The thread counts of the rows: each bounded to the cores; one that becomes another's
/// is run once.
fn thread_counts(asked: &[usize]) -> Result<Vec<usize>> {
    if asked.is_empty() {
        return Err(Failure::Bench(
            "--threads wants counts of at least 1".into(),
        ));
    }
    let mut counts: Vec<usize> = Vec::new();
    for &asked in asked {
        let t = venn_app::threads::bounded(asked)?;
        if !counts.contains(&t) {
            counts.push(t);
        }
    }
    Ok(counts)
}

/// What every run of the table shares: the scratch directory (states, TLS identities),
/// the links each protocol runs over (plain TCP, and TLS with `--tls`) and whether its
/// parties precompute.
struct Setup {
    scratch: ScratchDir,
    links: Vec<Option<PathBuf>>,
    precompute: bool,
}

impl Setup {
    /// Set up: the scratch directory, and with `--tls` both parties' identities in it.
    fn new(o: &BenchOptions) -> Result<Setup> {
        let scratch = ScratchDir::new()?;
        let mut links = vec![None];
        if o.tls {
            let dir = scratch.path().join("tls");
            std::fs::create_dir(&dir)?;
            tls_identities(&dir)?;
            links.push(Some(dir));
        }
        Ok(Setup {
            scratch,
            links,
            precompute: o.precompute,
        })
    }

    /// What each party does besides its run.
    fn attached(&self) -> Attached<'_> {
        match self.precompute {
            true => Attached::Precompute(self.scratch.path()),
            false => Attached::Nothing,
        }
    }
}

/// Measure: each protocol at `sizes` with `threads` per party, over each link, `repeat`
/// times on fresh items each time, interleaved — every protocol over every link once, then
/// all again — so that the ratios between rows are of runs side by side; the median run
/// of each, in the order of the protocols, each link's after the other.
fn measure_at(
    o: &BenchOptions,
    setup: &Setup,
    variants: &[Variant],
    sizes: Sizes,
    threads: usize,
) -> Result<Vec<Row>> {
    let each: Vec<(Variant, Option<&Path>)> = (variants.iter())
        .flat_map(|&v| setup.links.iter().map(move |tls| (v, tls.as_deref())))
        .collect();
    let runs = interleaved(o.repeat, &each, |&(variant, tls)| {
        let spawn = Spawn {
            variant,
            sizes,
            seed: venn::crypto::Prg::from_entropy().block(),
            threads,
            timeout: o.timeout,
            net: o.net,
        };
        bench_one(&spawn, setup.attached(), tls)
    })?;
    Ok(runs
        .into_iter()
        .map(|r| median(r, |r| r.verified, |r| r.total_s))
        .collect())
}

/// Compare: each plaintext row's total over naive's and kkrt16's at the same n and
/// threads, each TLS row's over its protocol's plaintext one, and each row with records
/// over its protocol's without them on the same link.
fn compare(mut at: Vec<Row>) -> Vec<Row> {
    let total_of = |at: &[Row], name: &str, tls: bool| {
        at.iter()
            .find(|r| r.protocol == name && r.tls == tls)
            .map(|r| r.total_s)
    };
    let (naive, kkrt16) = (
        total_of(&at, "naive", false),
        total_of(&at, "kkrt16", false),
    );
    let plain: Vec<Option<f64>> = at
        .iter()
        .map(|r| total_of(&at, &r.protocol, false))
        .collect();
    let without: Vec<Option<f64>> = (at.iter())
        .map(|r| total_of(&at, r.without_records.as_deref()?, r.tls))
        .collect();
    for ((row, plain), without) in at.iter_mut().zip(plain).zip(without) {
        row.ratio_to_without_records = without.map(|t| row.total_s / t);
        if !row.tls {
            row.ratio_to_naive = naive.map(|t| row.total_s / t);
            row.ratio_to_kkrt16 = kkrt16.map(|t| row.total_s / t);
        } else {
            row.ratio_to_plaintext = plain.map(|t| row.total_s / t);
        }
    }
    at
}
