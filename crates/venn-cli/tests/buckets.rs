//! Runs split into hash buckets (`--bucket-rows`, or automatically for a large input):
//! whichever side buckets, and however finely, the output is the rows one run over
//! everything gives, byte for byte and in input order.

use crate::common::*;
use std::fmt::Write as _;
use std::path::Path;

/// Two CSV files sharing every third key, with duplicates, quoted fields (one with a line
/// break) and CRLF line ends.
fn inputs(dir: &Path, n: usize) -> (String, String) {
    let (mut s, mut r) = (String::from("id,v\r\n"), String::from("id,w\r\n"));
    for i in 0..n {
        writeln!(s, "k{},{i}\r", i * 3).unwrap();
        writeln!(r, "k{},\"r{i}\nnext line\"\r", i * 2).unwrap();
    }
    s.push_str("k0,dup\r\n");
    r.push_str("\"k6\",quoted dup\r\n");
    let s_path = write(dir, "s.csv", &s);
    let r_path = write(dir, "r.csv", &r);
    (
        s_path.to_str().unwrap().into(),
        r_path.to_str().unwrap().into(),
    )
}

fn receive_rows(
    dir: &Path,
    s: &str,
    r: &str,
    sender: &[&str],
    receiver: &[&str],
    tag: &str,
) -> String {
    let out = dir.join(format!("out-{tag}.csv"));
    let out_s = out.to_str().unwrap();
    let recv = [&["--input", r, "--output", out_s][..], receiver].concat();
    let send = [&["--input", s][..], sender].concat();
    let (so, ro) = run_pair(&recv, &send);
    assert_success(&[&so, &ro]);
    // The sender's one repeated key is counted however its file was read.
    assert!(
        stderr(&so).contains("1 rows repeat"),
        "{tag}: {}",
        stderr(&so)
    );
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn bucketed_runs_give_the_rows_of_one_run() {
    let dir = tmp();
    let (s, r) = inputs(dir.path(), 1500);
    let whole = receive_rows(dir.path(), &s, &r, &[], &[], "whole");
    assert_eq!(
        whole.matches("\r\n").count(),
        1 + 500 + 1,
        "header, shared keys, duplicate"
    );
    for (sender, receiver, tag) in [
        (&["--bucket-rows", "200"][..], &[][..], "sender"),
        (&[][..], &["--bucket-rows", "300"][..], "receiver"),
        (
            &["--bucket-rows", "100"][..],
            &["--bucket-rows", "700"][..],
            "both",
        ),
        // Split on disk, but into one bucket: an ordinary run against a whole read.
        (&["--bucket-rows", "100000"][..], &[][..], "one bucket"),
    ] {
        let got = receive_rows(dir.path(), &s, &r, sender, receiver, tag);
        assert!(got == whole, "bucketed by the {tag} differs from one run");
    }
}

#[test]
fn both_parties_learn_the_rows_of_lines_files_in_buckets() {
    let dir = tmp();
    let s: String = (0..600).map(|i| format!("x{}\n", i * 5)).collect();
    let r: String = (0..600).map(|i| format!("x{}\n", i * 3)).collect();
    let (s, r) = (
        write(dir.path(), "s.txt", &s),
        write(dir.path(), "r.txt", &r),
    );
    let (so_path, ro_path) = (dir.path().join("so"), dir.path().join("ro"));
    let bucket_dir = dir.path().join("buckets");
    std::fs::create_dir(&bucket_dir).unwrap();
    let common = ["--format", "lines", "--both"];
    let recv = [
        &common[..],
        &[
            "--input",
            r.to_str().unwrap(),
            "--output",
            ro_path.to_str().unwrap(),
        ],
        &["--bucket-rows", "64"],
    ]
    .concat();
    let send = [
        &common[..],
        &[
            "--input",
            s.to_str().unwrap(),
            "--output",
            so_path.to_str().unwrap(),
        ],
        // A sender that learns rows (--both) and splits its file, in a directory of ours.
        &[
            "--bucket-rows",
            "50",
            "--bucket-dir",
            bucket_dir.to_str().unwrap(),
        ],
    ]
    .concat();
    let (so, ro) = run_pair(&recv, &send);
    assert_success(&[&so, &ro]);
    assert_eq!(
        std::fs::read_dir(&bucket_dir).unwrap().count(),
        0,
        "bucket files are removed"
    );
    let want_r: String = (0..600)
        .map(|i| i * 3)
        .filter(|v| v % 5 == 0)
        .map(|v| format!("x{v}\n"))
        .collect();
    let want_s: String = (0..600)
        .map(|i| i * 5)
        .filter(|v| v % 3 == 0 && *v < 1800)
        .map(|v| format!("x{v}\n"))
        .collect();
    assert_eq!(std::fs::read_to_string(ro_path).unwrap(), want_r);
    assert_eq!(std::fs::read_to_string(so_path).unwrap(), want_s);
}

#[test]
fn a_file_too_large_for_max_memory_is_bucketed_by_itself() {
    let dir = tmp();
    // About 11 MB: over an eighth of a 80 MiB budget.
    let mut r = String::from("k\n");
    for i in 0..500_000u64 {
        writeln!(r, "key-{:016x}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).unwrap();
    }
    let r = write(dir.path(), "r.csv", &r);
    let s: String = (0..2000u64)
        .map(|i| {
            format!(
                "key-{:016x}\n",
                (i * 250).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            )
        })
        .collect();
    let s = write(dir.path(), "s.csv", &format!("k\n{s}"));
    let out = dir.path().join("out.csv");
    let stats = dir.path().join("stats.json");
    let recv = [
        "--input",
        r.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--max-memory",
        "80M",
        "--stats-json",
        stats.to_str().unwrap(),
    ];
    let (so, ro) = run_pair(&recv, &["--input", s.to_str().unwrap()]);
    assert_success(&[&so, &ro]);
    assert!(
        stderr(&ro).contains("intersection size 2000"),
        "{}",
        stderr(&ro)
    );
    assert_eq!(std::fs::read_to_string(out).unwrap().lines().count(), 2001);
    let stats = std::fs::read_to_string(stats).unwrap();
    assert!(
        stats.contains("\"intersection\": 2000") && stats.contains("\"intersection_size\": null"),
        "{stats}"
    );
}

#[test]
fn bucket_files_go_where_asked() {
    let dir = tmp();
    let s = write(dir.path(), "s.txt", "a\nb\nc\n");
    let missing = dir.path().join("no such dir");
    let out = venn()
        .args(["send", "--format", "lines", "--bucket-rows", "1"])
        .args(["--input", s.to_str().unwrap()])
        .args(["--bucket-dir", missing.to_str().unwrap()])
        .args(["--connect", "127.0.0.1:9", "--timeout", "5"])
        .output()
        .unwrap();
    assert_clean_failure(&out, "no such dir");
}

/// A count learned bucket by bucket would tell the receiver how the common keys fall into
/// the buckets: a protocol whose output is not the intersection itself is refused there.
#[test]
fn a_count_is_never_computed_bucket_by_bucket() {
    let dir = tmp();
    let (s, r) = inputs(dir.path(), 300);
    let count = ["--protocol", "psww18-ca", "--plaintext"];
    let (so, ro) = run_pair(
        &[&["--input", &r][..], &count, &["--bucket-rows", "100"]].concat(),
        &[&["--input", &s][..], &count].concat(),
    );
    for o in [&so, &ro] {
        assert_clean_failure(o, "cannot run bucket by bucket");
    }
    // Read whole, the same run gives the count.
    let (so, ro) = run_pair(
        &[&["--input", &r][..], &count].concat(),
        &[&["--input", &s][..], &count].concat(),
    );
    assert_success(&[&so, &ro]);
    assert!(String::from_utf8_lossy(&ro.stdout).contains("\"intersection_size\":100"));
}

/// The entries of `dir`.
fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

/// `venn` with SIGINT's default action, whatever this process's is: a shell without job
/// control starts a background command with SIGINT ignored, and venn keeps a signal
/// ignored when it started so (as `nohup` users expect), where Ctrl-C would reach it.
fn interruptible() -> std::process::Command {
    use std::os::unix::process::CommandExt;
    let mut command = venn();
    // SAFETY: signal(2) is async-signal-safe, as code between fork and exec must be.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    command
}

/// Sends SIGINT (Ctrl-C) to a child of ours.
fn interrupt(child: &std::process::Child) {
    // SAFETY: kill(2) on the id of a child we started and have not waited for.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
}

/// A party stopped by Ctrl-C (SIGINT) ends by that signal and leaves no bucket folder
/// behind (they hold about the input's size, and its keys in the clear): while it waits
/// for its peer, and in the middle of the buckets' runs — its peer then fails cleanly and
/// removes its own.
#[test]
fn a_stopped_bucketed_run_leaves_no_bucket_folder() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tmp();
    let lines = |keys: std::ops::Range<u32>| keys.map(|i| format!("x{i}\n")).collect::<String>();
    let r = write(dir.path(), "r.txt", &lines(0..4000));
    let s = write(dir.path(), "s.txt", &lines(2000..6000));
    let out = dir.path().join("out.txt");
    let (r_buckets, s_buckets) = (dir.path().join("r-buckets"), dir.path().join("s-buckets"));
    for b in [&r_buckets, &s_buckets] {
        std::fs::create_dir(b).unwrap();
    }
    // 64 buckets a side: a few seconds of sessions.
    let party = |input: &Path, buckets: &Path| {
        let (input, buckets) = (input.to_str().unwrap(), buckets.to_str().unwrap());
        [
            "--format",
            "lines",
            "--input",
            input,
            "--bucket-rows",
            "64",
            "--bucket-dir",
            buckets,
        ]
        .map(String::from)
    };
    let receiver = || {
        let args = [
            &[
                "receive".into(),
                "--output".into(),
                out.to_str().unwrap().into(),
            ][..],
            &party(&r, &r_buckets),
        ]
        .concat();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        spawn_listening_from(interruptible(), &args)
    };

    let (waiting, _) = receiver();
    assert_eq!(entries(&r_buckets), 1, "split before it listens");
    interrupt(&waiting);
    let o = wait_listening(waiting);
    assert_eq!(o.status.signal(), Some(libc::SIGINT), "{}", stderr(&o));
    assert_eq!(entries(&r_buckets), 0, "removed while waiting for the peer");

    let (running, addr) = receiver();
    let sender = interruptible()
        .arg("send")
        .args(party(&s, &s_buckets))
        .args(["--connect", &addr])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let split = std::time::Instant::now();
    while entries(&s_buckets) == 0 {
        assert!(
            split.elapsed().as_secs() < 30,
            "the sender never split its input"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    interrupt(&sender);
    let so = sender.wait_with_output().unwrap();
    assert_eq!(
        so.status.signal(),
        Some(libc::SIGINT),
        "stopped mid-run: {}",
        stderr(&so)
    );
    let ro = wait_listening(running);
    assert!(
        !ro.status.success() && !stderr(&ro).contains("panicked"),
        "{}",
        stderr(&ro)
    );
    assert_eq!(entries(&s_buckets), 0, "removed by the stopped party");
    assert_eq!(entries(&r_buckets), 0, "removed by its peer, which failed");
}
