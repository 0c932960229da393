//! The clients of `venn bench --thunder`, as its users run them (docs/cloud.md): each
//! registers and uploads its file, the first leads a run that the others join (`pair`),
//! pre-tokens are made (`pretoken --wait`) for a preprocessed run, and the second client
//! fetches its rows (`result`), which are checked against the expected ones.

use super::super::process::finish;
use super::service::{run, venn, Workers};
use crate::failure::{Failure, Result};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, ChildStderr};
use std::time::Instant;

/// The clients of one n's service, and how their commands run.
pub(super) struct Cloud<'a> {
    /// The scratch directory: the files, identities and keys, the output.
    pub dir: &'a Path,
    pub url: &'a str,
    /// Each client's name and the file it uploads.
    pub clients: &'a [(&'a str, &'a str)],
    /// Threads per worker.
    pub threads: usize,
    pub timeout: u64,
}

/// The first two uploads' wall seconds, and all uploads' CPU seconds.
#[derive(Clone, Copy)]
pub(super) struct Uploads {
    pub wall: [f64; 2],
    pub cpu: f64,
}

/// One run with its workers: the result's wall seconds, the workers' CPU seconds, the rows
/// the second client wrote and whether they are exactly its shared rows.
pub(super) struct Measured {
    pub run_s: f64,
    pub worker_cpu_s: f64,
    pub rows_written: usize,
    pub verified: bool,
}

/// A leading client, started, and the address it listens on for the others.
struct Leader {
    child: Child,
    stderr: BufReader<ChildStderr>,
    /// What it said on stderr before its address (kept for errors).
    said: String,
    addr: String,
}

impl Cloud<'_> {
    /// Each client registers and uploads its file (dataset `d`, keys in column `key`).
    pub(super) fn upload(&self) -> Result<Uploads> {
        let mut uploads = Uploads {
            wall: [0.0; 2],
            cpu: 0.0,
        };
        for (k, &(who, input)) in self.clients.iter().enumerate() {
            let id = format!("{who}.id");
            let register = [
                "register",
                "--server",
                self.url,
                "--identity",
                &id,
                "--name",
                who,
            ];
            run(self.dir, &register, "venn cloud register")?;
            let more = ["--dataset", "d", "--input", input, "--column", "key"];
            let upload = self.as_client("upload", who, &more);
            let upload: Vec<&str> = upload.iter().map(String::as_str).collect();
            let (_, wall, cpu) = run(self.dir, &upload, "venn cloud upload")?;
            if let Some(w) = uploads.wall.get_mut(k) {
                *w = wall;
            }
            uploads.cpu += cpu;
        }
        Ok(uploads)
    }

    /// The client's `--identity` and `--key-file` after `command`, and `more`.
    fn as_client(&self, command: &str, who: &str, more: &[&str]) -> Vec<String> {
        let mut args: Vec<String> = [command, "--server", self.url].map(String::from).to_vec();
        args.extend(["--identity".into(), format!("{who}.id")]);
        args.extend(["--key-file".into(), format!("{who}.key")]);
        args.extend(more.iter().map(|s| s.to_string()));
        args
    }

    /// Starts `args` in the scratch directory.
    fn start(&self, args: &[String]) -> Result<Child> {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Ok(venn(self.dir, &args)?.spawn()?)
    }

    /// A client's `pair`, reaching the others by `link` (`--partners` for a leader of
    /// more than one).
    fn pair_args(
        &self,
        who: &str,
        link: [&str; 2],
        partners: usize,
        preprocessed: bool,
    ) -> Vec<String> {
        let timeout = self.timeout.to_string();
        let mut args = self.as_client("pair", who, &["--timeout", &timeout]);
        args.extend(link.map(String::from));
        if partners > 0 {
            args.extend(["--partners".into(), partners.to_string()]);
        }
        if preprocessed {
            args.push("--preprocessed".into());
        }
        args
    }

    /// The first client's `pair --listen`, once it has said where it listens (on stderr).
    fn lead(&self, preprocessed: bool) -> Result<Leader> {
        let partners = self.clients.len() - 1;
        let listen = ["--listen", "127.0.0.1:0"];
        let args = self.pair_args(self.clients[0].0, listen, partners, preprocessed);
        let mut child = self.start(&args)?;
        let mut stderr = BufReader::new(child.stderr.take().expect("piped"));
        let (mut line, mut said) = (String::new(), String::new());
        loop {
            line.clear();
            if stderr.read_line(&mut line)? == 0 {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Failure::Bench(format!(
                    "venn cloud pair did not listen: {said}"
                )));
            }
            if let Some((_, addr)) = line.trim().rsplit_once("listening on ") {
                let addr = addr.to_string();
                return Ok(Leader {
                    child,
                    stderr,
                    said,
                    addr,
                });
            }
            said += &line;
        }
    }

    /// A run between the uploaded datasets (the first client leads, the others connect to
    /// it): its id, once every token is handed over.
    pub(super) fn pair(&self, preprocessed: bool) -> Result<String> {
        let Leader {
            child,
            mut stderr,
            mut said,
            addr,
        } = self.lead(preprocessed)?;
        let others = self.clients[1..]
            .iter()
            .map(|(who, _)| self.start(&self.pair_args(who, ["--connect", &addr], 0, preprocessed)))
            .collect::<Result<Vec<Child>>>()?;
        let others: Vec<Result<String>> = others
            .into_iter()
            .zip(&self.clients[1..])
            .map(|(c, (who, _))| finish(c, &format!("venn cloud pair ({who})")))
            .collect();
        let _ = stderr.read_to_string(&mut said);
        let out = finish(child, "venn cloud pair (leader)")
            .map_err(|e| Failure::Bench(format!("{e}{said}")))?;
        for o in others {
            o?;
        }
        Ok(out.trim().to_string())
    }

    /// A preprocessed run's offline phase with `workers` workers: one pre-token per client,
    /// waited for. (Wall seconds until all are ready, the workers' CPU seconds.)
    pub(super) fn precompute(&self, workers: usize) -> Result<(f64, f64)> {
        let began = Instant::now();
        let workers = Workers::spawn(self.dir, self.url, workers, self.threads)?;
        let wait = self.timeout.to_string();
        let made = (self.clients.iter())
            .map(|(who, _)| self.start(&self.as_client("pretoken", who, &["--wait", &wait])))
            .collect::<Result<Vec<Child>>>()?;
        let made: Vec<Result<String>> = made
            .into_iter()
            .map(|c| finish(c, "venn cloud pretoken"))
            .collect();
        let wall = began.elapsed().as_secs_f64();
        let cpu = workers.wait(self.dir)?;
        for m in made {
            m?;
        }
        Ok((wall, cpu))
    }

    /// One run with `workers` worker processes: paired, then timed from the tokens handed
    /// over until the second client's rows are written, and the rows verified.
    pub(super) fn run_with_workers(&self, preprocessed: bool, workers: usize) -> Result<Measured> {
        let id = self.pair(preprocessed)?;
        let began = Instant::now();
        let workers = Workers::spawn(self.dir, self.url, workers, self.threads)?;
        let _ = std::fs::remove_file(self.dir.join("out.csv"));
        let wait = self.timeout.to_string();
        let more = [
            "--input", "r.csv", "--column", "key", "--run", &id, "--output", "out.csv", "--wait",
            &wait,
        ];
        let result = self.start(&self.as_client("result", "b", &more))?;
        let result = finish(result, "venn cloud result");
        let run_s = began.elapsed().as_secs_f64();
        let worker_cpu_s = workers.wait(self.dir)?;
        result?;
        let (rows_written, verified) = self.verify()?;
        Ok(Measured {
            run_s,
            worker_cpu_s,
            rows_written,
            verified,
        })
    }

    /// Verify: the second client's output is exactly its shared rows in input order, byte
    /// for byte (the rows written, and whether they are).
    fn verify(&self) -> Result<(usize, bool)> {
        let out = std::fs::read(self.dir.join("out.csv"))?;
        let rows = out
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            .saturating_sub(1);
        Ok((
            rows,
            out == std::fs::read(self.dir.join("expected-none.csv"))?,
        ))
    }
}
