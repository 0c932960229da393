//! `venn bench --files`: the whole product on CSV files (or Parquet files, `--file-format
//! parquet`), as two organisations run it. For each n, a sender and a receiver file of n
//! rows each (a 32-hex-digit key and two payload columns, as `scripts/gen-rows.py` writes
//! them, the receiver's columns named `key,spend,zone` apart from the sender's
//! `key,amount,region`; half of the keys shared, the shared rows scattered through the
//! receiver's file;
//! as Parquet, the same rows: the key and the region as strings, the amount an INT64, in
//! row groups of 2^20 rows, Snappy-compressed), then `venn send` and `venn receive` as two
//! processes of this binary over loopback, the receiver writing its output. Reported: each
//! party's time to read its file (parse, deduplicate), the protocol's own total as the
//! receiver reports it, the wall time of the two processes, and their ratio. The output
//! file must be exactly the receiver's shared rows, in input order: byte for byte (CSV),
//! or read back as those rows (Parquet) — or, with `--join inner` or `left`, what that
//! join gives with the sender's two columns revealed ([`FilesJoin`]).

use super::parquet_rows;
use super::process::{finish, this_binary};
use super::table::{self, TableRow};
use super::ScratchDir;
use crate::failure::{Failure, Result};
use serde::Serialize;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Instant;

/// Keys are a bijection of the row's number k (k · MUL mod 2^128, MUL odd), as in
/// `scripts/gen-rows.py`.
const MUL: u128 = 0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835;

/// The files' format (`--file-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum FileFormat {
    /// CSV with a header row.
    Csv,
    /// Parquet.
    Parquet,
}

impl FileFormat {
    /// Its name, as `--file-format` takes it and the files' extension.
    fn name(self) -> &'static str {
        match self {
            FileFormat::Csv => "csv",
            FileFormat::Parquet => "parquet",
        }
    }
}

/// What the receiver's output holds in a `--files` run (`--join`, a row for each).
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum FilesJoin {
    /// Its shared rows as they are: no columns revealed.
    None,
    /// Its shared rows, the sender's `amount` and `region` appended.
    Inner,
    /// Every row, with `matched` and the sender's columns where it is true.
    Left,
}

impl FilesJoin {
    /// The kind `--join` names.
    pub(crate) fn parse(name: &str) -> std::result::Result<FilesJoin, String> {
        match name {
            "none" => Ok(FilesJoin::None),
            "inner" => Ok(FilesJoin::Inner),
            "left" => Ok(FilesJoin::Left),
            _ => Err(format!("a join is none, inner or left, not '{name}'")),
        }
    }

    fn name(self) -> &'static str {
        match self {
            FilesJoin::None => "none",
            FilesJoin::Inner => "inner",
            FilesJoin::Left => "left",
        }
    }

    /// The file of the receiver's expected output.
    fn expected(self) -> String {
        format!("expected-{}.csv", self.name())
    }

    /// The arguments of `role`'s party for this join.
    fn args(self, role: &str) -> &'static [&'static str] {
        match (self, role) {
            (FilesJoin::None, _) => &[],
            (_, "send") => &["--reveal-columns", "amount,region"],
            (FilesJoin::Inner, _) => &["--peer-columns", "amount,region"],
            (FilesJoin::Left, _) => &["--peer-columns", "amount,region", "--join", "left"],
        }
    }

    /// The receiver's output row of number `k`'s row, shared (`k < n`) or not.
    fn write_output(self, out: &mut impl Write, k: u64, n: u64) -> std::io::Result<()> {
        let key = (k as u128).wrapping_mul(MUL);
        let (amount, region) = (k % 100_000, k % 97);
        match (self, k < n) {
            (FilesJoin::None, true) => writeln!(out, "{key:032x},{amount},r{region}"),
            (FilesJoin::Inner, true) => {
                writeln!(out, "{key:032x},{amount},r{region},{amount},r{region}")
            }
            (FilesJoin::Left, true) => {
                writeln!(out, "{key:032x},{amount},r{region},true,{amount},r{region}")
            }
            (FilesJoin::Left, false) => writeln!(out, "{key:032x},{amount},r{region},false,,"),
            (_, false) => Ok(()),
        }
    }

    /// The receiver's output header: its file's columns, then the join's.
    fn header(self) -> &'static [u8] {
        match self {
            FilesJoin::None => b"key,spend,zone\n",
            FilesJoin::Inner => b"key,spend,zone,amount,region\n",
            FilesJoin::Left => b"key,spend,zone,matched,amount,region\n",
        }
    }
}

/// One row of `--files`.
#[derive(Serialize, Clone, Debug)]
pub(super) struct FilesRow {
    pub protocol: String,
    pub join: FilesJoin,
    /// The files' format.
    pub format: &'static str,
    pub log2n: u32,
    pub read_sender_s: f64,
    pub read_receiver_s: f64,
    /// The protocol's offline + online time, as the receiver reports it.
    pub protocol_s: f64,
    pub written_s: f64,
    /// From starting the two processes until both have exited.
    pub end_to_end_s: f64,
    pub ratio: f64,
    pub rows_written: usize,
    pub verified: bool,
}

/// The number behind the receiver's row `j` of `n`: a permutation of n/2 .. n/2 + n, so
/// the shared numbers (below n) fall all through the file.
fn receiver_number(j: u64, n: u64) -> u64 {
    n / 2 + (j.wrapping_mul(0x9E37_79B9_7F4A_7C15) & (n - 1))
}

fn write_row(out: &mut impl Write, k: u64) -> std::io::Result<()> {
    let key = (k as u128).wrapping_mul(MUL);
    writeln!(out, "{key:032x},{},r{}", k % 100_000, k % 97)
}

/// Writes both parties' files for n = 2^log2n, and the receiver's expected output for
/// each of `joins`.
pub(super) fn make_files(dir: &Path, log2n: u32, joins: &[FilesJoin]) -> Result<()> {
    let n = 1u64 << log2n;
    let file = |name: &str| -> Result<std::io::BufWriter<std::fs::File>> {
        Ok(std::io::BufWriter::with_capacity(
            1 << 20,
            std::fs::File::create(dir.join(name))?,
        ))
    };
    let (mut s, mut r) = (file("s.csv")?, file("r.csv")?);
    let mut expected: Vec<_> = (joins.iter())
        .map(|j| file(&j.expected()))
        .collect::<Result<_>>()?;
    // The receiver's columns named apart from the sender's, which a join adds to them.
    s.write_all(b"key,amount,region\n")?;
    r.write_all(b"key,spend,zone\n")?;
    for (w, join) in expected.iter_mut().zip(joins) {
        w.write_all(join.header())?;
    }
    for k in 0..n {
        write_row(&mut s, k)?;
    }
    for j in 0..n {
        let k = receiver_number(j, n);
        write_row(&mut r, k)?;
        for (w, join) in expected.iter_mut().zip(joins) {
            join.write_output(w, k, n)?;
        }
    }
    for w in [s, r].into_iter().chain(expected) {
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    }
    Ok(())
}

/// Starts `venn ROLE` on the files of `format` in `dir`, for the output of `join`.
fn start(
    dir: &Path,
    role: &str,
    (protocol, join): (&str, FilesJoin),
    format: FileFormat,
    endpoint: [&str; 2],
) -> Result<Child> {
    let (input, stats) = match role {
        "send" => ("s", "s.json"),
        _ => ("r", "r.json"),
    };
    let input = format!("{input}.{}", format.name());
    let mut cmd = this_binary()?;
    cmd.current_dir(dir)
        .args([role, "--protocol", protocol, "--input", &input])
        .args(["--stats-json", stats])
        .args(endpoint)
        .args(join.args(role))
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if role == "receive" {
        cmd.args(["--output", &format!("out.{}", format.name())]);
    }
    if protocol == "naive" {
        cmd.arg("--insecure");
    }
    Ok(cmd.spawn()?)
}

/// The statistics a party wrote.
fn stats(path: &Path) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path)?;
    serde_json::from_str(&text).map_err(|e| Failure::Bench(format!("{}: {e}", path.display())))
}

/// One end-to-end run of `protocol` for the output of `join` in `dir` (which holds the
/// files) on the files of `format`.
fn run_once(
    dir: &Path,
    (protocol, join): (&str, FilesJoin),
    format: FileFormat,
    log2n: u32,
) -> Result<FilesRow> {
    let out = dir.join(format!("out.{}", format.name()));
    let _ = std::fs::remove_file(&out);
    // Both start at once, as two organisations would: the port is chosen beforehand (a
    // free one the system hands out, released just before the receiver takes it).
    let addr = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .to_string();
    let began = Instant::now();
    let receiver = start(
        dir,
        "receive",
        (protocol, join),
        format,
        ["--listen", &addr],
    )?;
    let sender = start(dir, "send", (protocol, join), format, ["--connect", &addr])?;
    let sent = finish(sender, "venn send");
    let received = finish(receiver, "venn receive");
    let end_to_end_s = began.elapsed().as_secs_f64();
    sent.and(received)?;
    let (s, r) = (stats(&dir.join("s.json"))?, stats(&dir.join("r.json"))?);
    let seconds = |v: &serde_json::Value, field: &str| v[field].as_f64().unwrap_or(f64::NAN);
    let protocol_s = seconds(&r, "total_seconds");
    let out = match format {
        FileFormat::Csv => std::fs::read(&out)?,
        FileFormat::Parquet => parquet_rows::as_csv(&out)?,
    };
    let verified = out == std::fs::read(dir.join(join.expected()))?;
    Ok(FilesRow {
        protocol: protocol.to_string(),
        join,
        format: format.name(),
        log2n,
        read_sender_s: seconds(&s, "input_seconds"),
        read_receiver_s: seconds(&r, "input_seconds"),
        protocol_s,
        written_s: seconds(&r, "output_seconds"),
        end_to_end_s,
        ratio: end_to_end_s / protocol_s,
        rows_written: r["intersection_rows"].as_u64().unwrap_or(0) as usize,
        verified,
    })
}

/// `venn bench --files`: for each protocol, join and format, a row the run with the
/// median ratio of `repeat` (rows interleaved within each repetition), once every n is
/// one it runs.
pub(super) fn bench_files(
    protocols: &[String],
    (joins, formats): (&[FilesJoin], &[FileFormat]),
    log2ns: &[u32],
    repeat: usize,
    json: bool,
) -> Result<()> {
    table::check_log2ns("--files", 2..=30, "rows", log2ns)?;
    let scratch = ScratchDir::new()?;
    if !json {
        print_header();
    }
    let mut rows = Vec::new();
    for &log2n in log2ns {
        let at = measure_at(scratch.path(), protocols, (joins, formats), log2n, repeat)?;
        table::keep(at, json, &mut rows)?;
    }
    if json {
        table::print_json([("files", serde_json::json!(rows))]);
    }
    Ok(())
}

/// Prints the table's head: the CPU line and the columns of [`FilesRow`]'s lines.
fn print_header() {
    out!(
        "{}\nend to end on files (`venn send` + `venn receive`, output written)\n\
         {:<12} {:<8} {:>5} {:>10} {:>10} {:>10} {:>10} {:>10} {:>7} {:>8}",
        table::cpu_line(),
        "protocol",
        "format",
        "log2n",
        "read s",
        "read r",
        "protocol",
        "written",
        "wall",
        "ratio",
        "verified"
    );
}

/// Each protocol and join on the files of each format of n = 2^log2n in `dir` (made
/// first), `repeat` times interleaved: the median run of each.
fn measure_at(
    dir: &Path,
    protocols: &[String],
    (joins, formats): (&[FilesJoin], &[FileFormat]),
    log2n: u32,
    repeat: usize,
) -> Result<Vec<FilesRow>> {
    make_files(dir, log2n, joins)?;
    if formats.contains(&FileFormat::Parquet) {
        for name in ["s", "r"] {
            let csv = dir.join(format!("{name}.csv"));
            parquet_rows::from_csv(&csv, &dir.join(format!("{name}.parquet")))?;
        }
    }
    let each: Vec<((&str, FilesJoin), FileFormat)> = (protocols.iter())
        .flat_map(|p| joins.iter().map(move |&j| (p.as_str(), j)))
        .flat_map(|row| formats.iter().map(move |&f| (row, f)))
        .collect();
    let runs = table::interleaved(repeat, &each, |&(row, f)| run_once(dir, row, f, log2n))?;
    Ok((runs.into_iter())
        .map(|r| table::median(r, |r| r.verified, |r| r.ratio))
        .collect())
}

impl TableRow for FilesRow {
    fn verified(&self) -> bool {
        self.verified
    }

    fn wrong(&self) -> String {
        format!(
            "{} on {} at n = 2^{}: the output file is not the {} join's rows",
            self.protocol,
            self.format,
            self.log2n,
            self.join.name()
        )
    }

    fn print(&self) {
        out!(
            "{:<12} {:<8} {:>5} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>7.2} {:>8}",
            match self.join {
                FilesJoin::None => self.protocol.clone(),
                join => format!("{}/{}", self.protocol, join.name()),
            },
            self.format,
            self.log2n,
            self.read_sender_s,
            self.read_receiver_s,
            self.protocol_s,
            self.written_s,
            self.end_to_end_s,
            self.ratio,
            if self.verified { "yes" } else { "NO" }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_the_receivers_rows_are_shared_and_scattered() {
        let n = 1u64 << 10;
        let numbers: Vec<u64> = (0..n).map(|j| receiver_number(j, n)).collect();
        let mut sorted = numbers.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            (n / 2..n / 2 + n).collect::<Vec<_>>(),
            "a permutation"
        );
        let shared_in_first_half = numbers[..n as usize / 2].iter().filter(|&&k| k < n).count();
        assert!(
            (200..312).contains(&shared_in_first_half),
            "{shared_in_first_half}"
        );
    }
}
