//! Helpers for driving the real `venn` binary.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub(crate) fn venn() -> Command {
    Command::new(env!("CARGO_BIN_EXE_venn"))
}

/// Starts `venn receive`/`send` listening on an ephemeral port; returns it and the address.
pub(crate) fn spawn_listening(args: &[&str]) -> (Child, String) {
    spawn_listening_from(venn(), args)
}

/// [`spawn_listening`] with these environment variables set.
pub(crate) fn spawn_listening_with(env: &[(&str, &str)], args: &[&str]) -> (Child, String) {
    let mut command = venn();
    command.envs(env.iter().copied());
    spawn_listening_from(command, args)
}

/// [`spawn_listening`] from a command set up beforehand (a working directory of its own).
pub(crate) fn spawn_listening_from(mut command: Command, args: &[&str]) -> (Child, String) {
    let mut child = command
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn venn");
    let mut reader = BufReader::new(child.stderr.take().expect("stderr"));
    let mut before = String::new();
    let addr = loop {
        let mut line = String::new();
        if reader.read_line(&mut line).expect("stderr line") == 0 {
            panic!("venn exited before listening: {before}");
        }
        match line.trim().strip_prefix("venn: listening on ") {
            Some(addr) => break addr.to_string(),
            None => before += &line,
        }
    };
    // Keep draining stderr so the pipe never fills up.
    let rest = std::thread::spawn(move || {
        let mut s = before;
        reader.read_to_string(&mut s).ok();
        s
    });
    STDERR.with(|m| m.borrow_mut().push((child.id(), rest)));
    (child, addr)
}

thread_local! {
    static STDERR: std::cell::RefCell<Vec<(u32, std::thread::JoinHandle<String>)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Waits for a child started by [`spawn_listening`]; its stderr is what followed the
/// "listening" line.
pub(crate) fn wait_listening(child: Child) -> Output {
    let id = child.id();
    let mut out = child.wait_with_output().expect("wait");
    let handle = STDERR.with(|m| {
        let mut v = m.borrow_mut();
        let i = v.iter().position(|(p, _)| *p == id).expect("known child");
        v.remove(i).1
    });
    out.stderr = handle.join().expect("stderr thread").into_bytes();
    out
}

/// Runs a receiver (listening) and a sender (connecting) to completion.
pub(crate) fn run_pair(receiver: &[&str], sender: &[&str]) -> (Output, Output) {
    run_pair_with(&[], receiver, sender)
}

/// [`run_pair`] with these environment variables set for both parties.
pub(crate) fn run_pair_with(
    env: &[(&str, &str)],
    receiver: &[&str],
    sender: &[&str],
) -> (Output, Output) {
    let (r, addr) = spawn_listening_with(env, &[&["receive"], receiver].concat());
    let s = venn()
        .envs(env.iter().copied())
        .arg("send")
        .args(sender)
        .args(["--connect", &addr])
        .output()
        .expect("run sender");
    (s, wait_listening(r))
}

/// Asserts that every run succeeded, showing each failed one's stderr otherwise (one
/// party's failure is often the other's consequence).
pub(crate) fn assert_success(runs: &[&Output]) {
    let failed: Vec<String> = (runs.iter())
        .filter(|o| !o.status.success())
        .map(|o| format!("run failed: {}", stderr(o)))
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Runs `cmd` to its end: its output and its peak resident memory.
///
/// Linux counts in a process's peak (wait4's `ru_maxrss`) the peak of the memory image it
/// replaced at exec: for a child spawned from this test process, this process's own
/// peak, which the tests running beside it raise (to 64 MiB, failing a bound of 40). So
/// `cmd` is spawned by a fresh run of this test binary, still small when it spawns
/// ([`spawn_and_measure`]), which reports.
pub(crate) fn output_and_peak(cmd: &mut Command) -> (Output, u64) {
    let dir = tmp();
    let mut spawner = Command::new(std::env::current_exe().expect("the test binary"));
    spawner
        .args([
            "--ignored",
            "--exact",
            "common::spawn_and_measure",
            "--test-threads=1",
        ])
        .env(PEAK_PROGRAM, cmd.get_program())
        .env(PEAK_ARGS, join_args(cmd))
        .env(PEAK_OUT, dir.path());
    if let Some(cwd) = cmd.get_current_dir() {
        spawner.current_dir(cwd);
    }
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => spawner.env(key, value),
            None => spawner.env_remove(key),
        };
    }
    let ran = spawner.output().expect("spawn the measuring test");
    assert!(ran.status.success(), "the measuring test: {ran:?}");
    let read = |name: &str| std::fs::read(dir.path().join(name)).expect(name);
    let report = String::from_utf8(read("peak")).unwrap();
    let (status, peak) = report.trim().split_once(' ').expect("status and peak");
    let out = Output {
        status: std::os::unix::process::ExitStatusExt::from_raw(status.parse().unwrap()),
        stdout: read("stdout"),
        stderr: read("stderr"),
    };
    (out, peak.parse().unwrap())
}

const PEAK_PROGRAM: &str = "VENN_TEST_PEAK_PROGRAM";
const PEAK_ARGS: &str = "VENN_TEST_PEAK_ARGS";
const PEAK_OUT: &str = "VENN_TEST_PEAK_OUT";

/// `cmd`'s arguments, each ended by an ASCII unit separator (an environment variable
/// cannot hold a NUL; no argument of these tests holds one).
fn join_args(cmd: &Command) -> std::ffi::OsString {
    let mut joined = std::ffi::OsString::new();
    for arg in cmd.get_args() {
        joined.push(arg);
        joined.push("\x1f");
    }
    joined
}

/// [`output_and_peak`]'s fresh process: runs the command its environment names, its
/// output to files, and writes its wait status and peak resident memory in bytes. Run
/// only by [`output_and_peak`] (ignored otherwise).
#[test]
#[ignore = "a step of output_and_peak, in a process of its own"]
#[allow(clippy::zombie_processes)] // reaped by `wait4`, which std's `wait` cannot replace
fn spawn_and_measure() {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let var = |name| std::env::var_os(name).unwrap_or_else(|| panic!("{name} unset"));
    let out = PathBuf::from(var(PEAK_OUT));
    let args = var(PEAK_ARGS).into_vec();
    let args = (args.split(|&b| b == 0x1f))
        .filter(|a| !a.is_empty())
        .map(std::ffi::OsStr::from_bytes);
    let file = |name: &str| std::fs::File::create(out.join(name)).expect(name);
    let child = Command::new(var(PEAK_PROGRAM))
        .args(args)
        .stdin(Stdio::null())
        .stdout(file("stdout"))
        .stderr(file("stderr"))
        .spawn()
        .expect("spawn the command");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet waited for (std waits only when asked); the
    // pointers are to live locals.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4: {}", std::io::Error::last_os_error());
    let peak = usage.ru_maxrss as u64 * 1024;
    std::fs::write(out.join("peak"), format!("{status} {peak}")).unwrap();
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts a clean failure: non-zero exit and an error line mentioning `needle`.
pub(crate) fn assert_clean_failure(o: &Output, needle: &str) {
    let err = stderr(o);
    assert!(!o.status.success(), "expected failure, stderr: {err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("venn: error: "))
        .unwrap_or_else(|| panic!("no error line in: {err}"));
    assert!(
        line.contains(needle),
        "error line '{line}' does not mention '{needle}'"
    );
    assert!(!err.contains("panicked"), "panic: {err}");
}

pub(crate) fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

pub(crate) fn write(dir: &Path, name: &str, contents: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, contents).expect("write input");
    p
}

/// Fails the test if `f` takes longer than `limit`.
pub(crate) fn within<T>(limit: Duration, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let v = f();
    assert!(start.elapsed() < limit, "took {:?}", start.elapsed());
    v
}

/// `venn keygen --out dir/name`; returns (cert, key, fingerprint).
pub(crate) fn keygen(dir: &Path, name: &str) -> (String, String, String) {
    let out = venn()
        .args(["keygen", "--out"])
        .arg(dir.join(name))
        .output()
        .unwrap();
    assert_success(&[&out]);
    let fp = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert_eq!(fp.len(), 64, "{fp}");
    let path = |f: &str| dir.join(name).join(f).to_str().unwrap().to_string();
    (path("venn.crt"), path("venn.key"), fp)
}
