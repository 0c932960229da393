//! Faults a user or a hostile peer could cause, each tried through the
//! binary as they would try it.

use crate::common::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// `venn receive --connect` to nobody, with `args`: fails before any peer is needed.
fn receive_alone(args: &[&str]) -> std::process::Output {
    within(Duration::from_secs(10), || {
        venn()
            .args(["receive", "--connect", "127.0.0.1:9", "--timeout", "2"])
            .args(args)
            .output()
            .unwrap()
    })
}

#[test]
fn the_input_is_never_the_output_however_it_is_spelled() {
    let dir = tmp();
    let input = write(dir.path(), "r.csv", "k\na\nb\n");
    let dotted = dir.path().join(".").join("r.csv");
    let linked = dir.path().join("again.csv");
    std::fs::hard_link(&input, &linked).unwrap();
    for out in [&input, &dotted, &linked] {
        let o = receive_alone(&[
            "--input",
            input.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ]);
        assert_clean_failure(&o, "is an input file");
    }
    assert_eq!(std::fs::read_to_string(&input).unwrap(), "k\na\nb\n");
}

#[test]
fn an_unwritable_output_is_refused_before_connecting() {
    let dir = tmp();
    let input = write(dir.path(), "r.csv", "k\na\n");
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let o = receive_alone(&[
        "--input",
        input.to_str().unwrap(),
        "--output",
        sub.to_str().unwrap(),
    ]);
    assert_clean_failure(&o, "is a directory");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o555)).unwrap();
    let probe = tempfile::NamedTempFile::new_in(&sub);
    if probe.is_err() {
        // Not root: the read-only directory really is read-only.
        let o = receive_alone(&[
            "--input",
            input.to_str().unwrap(),
            "--output",
            sub.join("out.csv").to_str().unwrap(),
        ]);
        assert_clean_failure(&o, "cannot be written");
    }
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Neither message waited for the peer: both came before connecting.
    let o = receive_alone(&[
        "--input",
        input.to_str().unwrap(),
        "--output",
        dir.path().join("missing/out.csv").to_str().unwrap(),
    ]);
    assert_clean_failure(&o, "does not exist");
}

#[test]
fn a_byte_order_mark_does_not_hide_the_first_line() {
    let dir = tmp();
    let r = write(dir.path(), "r.txt", "\u{feff}alice\nbob\n");
    let s = write(dir.path(), "s.txt", "alice\ncarol\n");
    let out = dir.path().join("out.txt");
    let (so, ro) = run_pair(
        &[
            "--format",
            "lines",
            "--input",
            r.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ],
        &["--format", "lines", "--input", s.to_str().unwrap()],
    );
    assert_success(&[&so, &ro]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "alice\n");
}

#[test]
fn a_zero_timeout_is_a_usage_error() {
    // Refused up front: the listener never sees a connection.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let dir = tmp();
    let input = write(dir.path(), "r.csv", "k\na\n");
    let o = venn()
        .args(["receive", "--connect", &addr, "--timeout", "0"])
        .args(["--input", input.to_str().unwrap()])
        .args(["--output", dir.path().join("o.csv").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("--timeout") && !err.contains("duration"),
        "{err}"
    );
    assert!(
        listener.accept().is_err(),
        "the binary connected before refusing"
    );
}

#[test]
fn a_trickling_peer_meets_the_per_message_deadline() {
    // A "sender" that sends a real-looking hello one byte per 300 ms: the whole message
    // would take seconds; with --timeout 2 the receiver must give up after about 2 s.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let peer = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut hello = vec![60, 0, 0, 0];
        hello.extend_from_slice(b"VENN/PSI");
        hello.extend_from_slice(&[0; 60 - 8]);
        for b in hello {
            if s.write_all(&[b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    });
    let dir = tmp();
    let input = write(dir.path(), "r.csv", "k\na\n");
    let start = Instant::now();
    let o = venn()
        .args(["receive", "--connect", &addr, "--timeout", "2"])
        .args(["--input", input.to_str().unwrap()])
        .args(["--output", dir.path().join("o.csv").to_str().unwrap()])
        .output()
        .unwrap();
    let took = start.elapsed();
    assert_clean_failure(&o, "timed out after 2 s");
    assert!(took < Duration::from_millis(3500), "took {took:?}");
    peer.join().unwrap();
}

#[test]
fn a_listener_survives_port_scans_and_probes() {
    let dir = tmp();
    let keys: String = (0..50).map(|i| format!("k{i}\n")).collect();
    let r = write(dir.path(), "r.csv", &format!("k\n{keys}"));
    let s = write(dir.path(), "s.csv", &format!("k\n{keys}"));
    let out = dir.path().join("out.csv");
    let (child, addr) = spawn_listening(&[
        "receive",
        "--timeout",
        "20",
        "--input",
        r.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ]);
    // A port scan (connect, close), an HTTP probe, and garbage.
    drop(TcpStream::connect(&addr).unwrap());
    let mut http = TcpStream::connect(&addr).unwrap();
    http.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut sink = Vec::new();
    http.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = http.read_to_end(&mut sink);
    let mut junk = TcpStream::connect(&addr).unwrap();
    junk.write_all(&[0xAB; 64]).unwrap();
    drop(junk);
    // Then the real peer.
    let o = venn()
        .args(["send", "--connect", &addr, "--input", s.to_str().unwrap()])
        .output()
        .unwrap();
    let r = wait_listening(child);
    assert_success(&[&o, &r]);
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 51);
    let log = stderr(&r);
    assert!(
        log.matches("rejected a connection").count() >= 2,
        "rejections are logged: {log}"
    );
}

/// A connecting party started first keeps trying until --timeout: a listener that is not
/// up yet, or that fails on its own input, does not end it; the listener started next
/// meets it (no dead connection is queued for a listener while it reads its input).
#[test]
fn a_connector_outlives_a_listener_that_failed() {
    let dir = tmp();
    let s = write(dir.path(), "s.csv", "k\na\nb\nc\n");
    let bad = write(dir.path(), "bad.csv", "k,v\na,1\nb\n");
    let good = write(dir.path(), "r.csv", "k,v\nb,1\nc,2\nd,3\n");
    let out = dir.path().join("out.csv");
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    within(Duration::from_secs(30), || {
        let sender = venn()
            .args(["send", "--input", s.to_str().unwrap(), "--timeout", "20"])
            .args(["--connect", &addr])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let receive = |input: &std::path::Path| {
            venn()
                .args(["receive", "--input", input.to_str().unwrap()])
                .args(["--output", out.to_str().unwrap(), "--listen", &addr])
                .output()
                .unwrap()
        };
        assert_clean_failure(&receive(&bad), "line 3");
        let received = receive(&good);
        let sent = sender.wait_with_output().unwrap();
        assert_success(&[&sent, &received]);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "k,v\nb,1\nc,2\n");
    });
}
