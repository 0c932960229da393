//! The `venn` binary against peers that misbehave on the wire: each case must end in one
//! clean error line within the timeout, a non-zero exit, no panic and no output file.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

const N: u64 = 10;

fn frame(payload: &[u8]) -> Vec<u8> {
    [&(payload.len() as u32).to_le_bytes()[..], payload].concat()
}

/// A sender's hello as the wire format defines it (net/handshake.rs).
fn hello(protocol: &str, version: u16, set_size: u64) -> Vec<u8> {
    let mut h = b"VENN/PSI".to_vec();
    h.extend_from_slice(&version.to_le_bytes());
    h.push(protocol.len() as u8);
    h.extend_from_slice(protocol.as_bytes());
    h.push(0); // role: sender
    h.push(0); // no --both
    h.extend_from_slice(&set_size.to_le_bytes());
    h.extend_from_slice(&[7u8; 16]);
    frame(&h)
}

fn params_frame(text: &str) -> Vec<u8> {
    frame(&[&(text.len() as u16).to_le_bytes()[..], text.as_bytes()].concat())
}

fn honest_params() -> String {
    let p = venn::protocols::find("kkrt16").unwrap();
    p.params(N, N).unwrap().to_string()
}

/// Runs `venn receive` against a fake sender that writes `script` (then lingers or closes).
fn against_fake_sender(
    script: Vec<u8>,
    close: bool,
    extra: &[&str],
) -> (std::process::Output, PathBuf, tempfile::TempDir) {
    let dir = tmp();
    let keys: String = (0..N).map(|i| format!("key{i}\n")).collect();
    let input = write(dir.path(), "r.csv", &format!("k\n{keys}"));
    let out = dir.path().join("out.csv");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let peer = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.write_all(&script).ok();
        if close {
            drop(s);
        } else {
            // Stay connected and read whatever comes, until the other side gives up.
            let mut sink = Vec::new();
            s.set_read_timeout(Some(Duration::from_secs(20))).ok();
            s.read_to_end(&mut sink).ok();
        }
    });
    let o = within(Duration::from_secs(15), || {
        venn()
            .args(["receive", "--connect", &addr, "--timeout", "3"])
            .args([
                "--input",
                input.to_str().unwrap(),
                "--output",
                out.to_str().unwrap(),
            ])
            .args(extra)
            .output()
            .unwrap()
    });
    peer.join().unwrap();
    (o, out, dir)
}

fn check(script: Vec<u8>, close: bool, needle: &str) {
    let (o, out, _dir) = against_fake_sender(script, close, &[]);
    assert_clean_failure(&o, needle);
    assert!(!out.exists(), "a failed run must leave no output file");
}

#[test]
fn garbage_instead_of_a_handshake() {
    check(
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        false,
        "not a venn endpoint",
    );
    check(frame(&[0xAB; 40]), false, "not a venn endpoint");
}

#[test]
fn version_protocol_and_size_mismatches_are_named() {
    check(hello("kkrt16", 99, N), false, "wire version 99");
    check(
        hello("naive", 1, N),
        false,
        "the peer runs protocol 'naive'",
    );
    let (o, out, _d) = against_fake_sender(
        hello("kkrt16", 1, 1 << 40),
        false,
        &["--max-peer-items", "1000"],
    );
    assert_clean_failure(&o, "more than the 1000 we accept");
    assert!(!out.exists());
    // Above the supported maximum even when the user raises the limit.
    let (o, out, _d) = against_fake_sender(
        hello("kkrt16", 1, 1 << 40),
        false,
        &["--max-peer-items", "1099511627776"],
    );
    assert_clean_failure(&o, "more than the 2147483648 we accept");
    assert!(!out.exists());
}

#[test]
fn parameter_mismatch_is_named() {
    let script = [hello("kkrt16", 1, N), params_frame("s=12 k=128 v=8 bins=1")].concat();
    check(script, false, "parameter mismatch");
}

#[test]
fn disconnect_truncation_and_oversized_frames() {
    let handshake = [hello("kkrt16", 1, N), params_frame(&honest_params())].concat();
    // Disconnect right after the handshake.
    check(handshake.clone(), true, "closed the connection");
    // A frame announced as 4096 bytes (the base-OT reply) but cut after 10.
    let truncated = [
        handshake.clone(),
        4096u32.to_le_bytes().to_vec(),
        vec![1; 10],
    ]
    .concat();
    check(truncated, true, "closed the connection");
    // A length prefix far beyond what the step allows: refused before allocating.
    let oversized = [handshake.clone(), 0xFFFF_FFF0u32.to_le_bytes().to_vec()].concat();
    check(
        oversized,
        false,
        "expected base-OT sender points of 4096 bytes, got a length prefix of 4294967280 bytes",
    );
    // A base-OT reply of the right size whose points are not valid group elements.
    let bad_points = [handshake, frame(&[0xFF; 32 * 128])].concat();
    check(bad_points, false, "Ristretto255 point");
}

#[test]
fn silent_peer_times_out() {
    check(Vec::new(), false, "timed out after 3 s");
    let just_hello = hello("kkrt16", 1, N);
    check(just_hello, false, "timed out after 3 s");
}

#[test]
fn a_killed_peer_is_reported_by_the_survivor() {
    // A real sender that dies mid-protocol: the receiver must fail cleanly.
    let dir = tmp();
    let keys: String = (0..20000).map(|i| format!("k{i}\n")).collect();
    let input = write(dir.path(), "in.csv", &format!("k\n{keys}"));
    let out = dir.path().join("out.csv");
    let (r, addr) = spawn_listening(&[
        "receive",
        "--timeout",
        "5",
        "--input",
        input.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ]);
    let mut stream = TcpStream::connect(&addr).unwrap();
    stream.write_all(&hello("kkrt16", 1, 20000)).unwrap();
    let text = venn::protocols::find("kkrt16")
        .unwrap()
        .params(20000, 20000)
        .unwrap()
        .to_string();
    stream.write_all(&params_frame(&text)).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    drop(stream);
    let o = within(Duration::from_secs(10), || wait_listening(r));
    assert_clean_failure(&o, "closed the connection");
    assert!(!out.exists());
}
