//! A PostgreSQL cluster for a test suite, started in a temporary directory with Debian's
//! binaries: the Thunder service's suite and the unbalanced-PSI store's (which includes
//! this file by its path) run their PostgreSQL scenarios on it.

use std::path::PathBuf;
use std::process::Command;

/// A PostgreSQL cluster in a temporary directory, started with Debian's binaries (as the
/// `postgres` user when we are root: initdb refuses root); stopped when dropped.
pub(crate) struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    as_postgres: bool,
    pub url: String,
}

impl Postgres {
    /// Starts a cluster, or says why it cannot.
    pub(crate) fn start() -> Result<Postgres, String> {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .map_err(|_| "PostgreSQL is not installed (no /usr/lib/postgresql)".to_string())?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .find(|b| b.join("initdb").exists())
            .ok_or("PostgreSQL is not installed (no initdb)")?;
        // SAFETY: geteuid has no preconditions.
        let as_postgres = unsafe { libc::geteuid() } == 0;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        if as_postgres {
            let ok = Command::new("chown")
                .args(["postgres:", &dir.path().display().to_string()])
                .status()
                .map_err(|e| e.to_string())?
                .success();
            if !ok {
                return Err("cannot hand the cluster's directory to the postgres user".into());
            }
        }
        let port = free_port();
        let pg = Postgres {
            url: format!("postgres://thunder@127.0.0.1:{port}"),
            dir,
            bin,
            as_postgres,
        };
        let data = pg.dir.path().join("data");
        pg.run(
            "initdb",
            &[
                "-D",
                &data.display().to_string(),
                "-U",
                "thunder",
                "--auth=trust",
                "-E",
                "UTF8",
            ],
        )?;
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {port} -k {} -c fsync=off",
            pg.dir.path().display()
        );
        pg.run(
            "pg_ctl",
            &[
                "-D",
                &data.display().to_string(),
                "-l",
                &pg.dir.path().join("log").display().to_string(),
                "-w",
                "-o",
                &options,
                "start",
            ],
        )?;
        Ok(pg)
    }

    fn run(&self, tool: &str, args: &[&str]) -> Result<(), String> {
        let exe = self.bin.join(tool);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        let out = cmd
            .args(args)
            .output()
            .map_err(|e| format!("{tool}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{tool} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }
}

impl Postgres {
    /// Stops the cluster and removes its files (for a cluster in a static, which is never
    /// dropped).
    pub(crate) fn stop(&self) {
        let data = self.dir.path().join("data").display().to_string();
        let _ = self.run("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"]);
        let _ = std::fs::remove_dir_all(self.dir.path());
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
