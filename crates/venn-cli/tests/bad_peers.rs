//! The `venn` binary against peers that misbehave on the wire: each case must end in one
//! clean error line within the timeout, a non-zero exit, no panic and no output file.

use crate::common::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

const N: u64 = 10;

fn frame(payload: &[u8]) -> Vec<u8> {
    [&(payload.len() as u32).to_le_bytes()[..], payload].concat()
}

/// A run plan (venn's session/run_plan.rs) for `rows` rows in one bucket, keys taken as
/// they are from one column (matched as a whole), no columns, not aligned: what every CLI
/// party sends before its session hello.
fn plan(rows: u64) -> Vec<u8> {
    let mut p = b"VENN/PSI".to_vec();
    p.extend_from_slice(&0xFFFAu16.to_le_bytes());
    p.extend_from_slice(&rows.to_le_bytes());
    p.extend_from_slice(&[0, 0, 0]); // one bucket; no trim, no lowercase
    p.extend_from_slice(&1u16.to_le_bytes());
    // Not any one column; not aligned; no columns revealed or asked for.
    p.extend_from_slice(&[0, 0, 0, 0]);
    frame(&p)
}

/// A plan for `N` rows, then `bytes`.
fn planned(bytes: Vec<u8>) -> Script {
    Script::Raw([plan(N), bytes].concat())
}

/// A sender's hello as the wire format defines it (session/handshake.rs).
fn hello(protocol: &str, version: u16, set_size: u64) -> Vec<u8> {
    let mut h = b"VENN/PSI".to_vec();
    h.extend_from_slice(&version.to_le_bytes());
    h.push(protocol.len() as u8);
    h.extend_from_slice(protocol.as_bytes());
    h.push(0); // role: sender
    h.push(0); // no --both
    h.extend_from_slice(&[0; 14]); // default options: bins, σ, offline, stash, threshold (1+2+1+1+1+8)
    h.extend_from_slice(&set_size.to_le_bytes());
    h.extend_from_slice(&[7u8; 16]);
    h.push(0); // no precomputed state
    frame(&h)
}

/// The second handshake frame: a parameter encoding and a (here made-up) session id.
fn params_frame(encoding: &[u8]) -> Vec<u8> {
    frame(
        &[
            &(encoding.len() as u16).to_le_bytes()[..],
            encoding,
            &[0; 32],
        ]
        .concat(),
    )
}

const VERSION: u16 = venn::session::VERSION;

/// What the fake sender does on the connection.
enum Script {
    /// Writes these bytes at once.
    Raw(Vec<u8>),
    /// Runs an honest kkrt16 sender handshake for `n` items, then writes these bytes.
    AfterHandshake(u64, Vec<u8>),
}

/// A real sender's run plan and handshake over `stream`, as the library runs them.
fn honest_handshake(stream: &TcpStream, n: u64) {
    use venn::net::StreamChannel;
    use venn::session::run_plan::{exchange, Align, Columns, KeyForm, KeyMismatch, Plan};
    use venn::session::{handshake, Hello, Mode, Role, WireParams};
    let mut chan = StreamChannel::new(
        stream.try_clone().unwrap(),
        stream.try_clone().unwrap(),
        Duration::from_secs(10),
    );
    let plan = Plan {
        rows: n,
        log2_buckets: 0,
        form: KeyForm {
            trim: false,
            lowercase: false,
            columns: 1,
            any: false,
        },
        columns: Columns::default(),
        align: Align::None,
    };
    let agreed = exchange(&mut chan, plan, Role::Sender, n, KeyMismatch::Refuse).unwrap();
    let mut chan = agreed.bind(&mut chan);
    let ours = Hello {
        protocol: "kkrt16".into(),
        role: Role::Sender,
        both: false,
        options: Default::default(),
        set_size: n,
        mode: Mode::Run,
    };
    let kkrt16 = venn::protocols::find("kkrt16").unwrap();
    let mut prg = venn::crypto::Prg::from_seed(venn::crypto::Block::ONE);
    handshake(&mut chan, &ours, n, &mut prg, |sizes| {
        let p = kkrt16.params(sizes, Default::default())?;
        Ok(WireParams {
            encoding: p.encode(),
            shown: p.table().to_string(),
        })
    })
    .unwrap();
}

/// Runs `venn receive --protocol kkrt16` against a fake sender that plays `script` (then
/// lingers or closes).
fn against_fake_sender(
    script: Script,
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
        let bytes = match script {
            Script::Raw(bytes) => bytes,
            Script::AfterHandshake(n, bytes) => {
                honest_handshake(&s, n);
                bytes
            }
        };
        s.write_all(&bytes).ok();
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
            .args(["--protocol", "kkrt16"])
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

fn check(script: Script, close: bool, needle: &str) {
    let (o, out, _dir) = against_fake_sender(script, close, &[]);
    assert_clean_failure(&o, needle);
    assert!(!out.exists(), "a failed run must leave no output file");
}

#[test]
fn garbage_instead_of_a_handshake() {
    check(
        Script::Raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec()),
        false,
        "not a venn endpoint",
    );
    check(
        Script::Raw(frame(&[0xAB; 40])),
        false,
        "not a venn endpoint",
    );
}

#[test]
fn version_protocol_and_size_mismatches_are_named() {
    check(planned(hello("kkrt16", 99, N)), false, "wire version 99");
    check(
        planned(hello("naive", VERSION, N)),
        false,
        "the peer runs protocol 'naive'",
    );
    check(
        planned(hello("\x1b[2Jfake\nvenn: ok", VERSION, N)),
        false,
        "the peer runs protocol '\\u{1b}[2Jfake\\u{a}venn: ok'",
    );
    let (o, out, _d) = against_fake_sender(
        planned(hello("kkrt16", VERSION, 1 << 40)),
        false,
        &["--max-peer-items", "1000"],
    );
    assert_clean_failure(&o, "more than the 1000 we accept");
    assert!(!out.exists());
    // Above the supported maximum even when the user raises the limit.
    let (o, out, _d) = against_fake_sender(
        planned(hello("kkrt16", VERSION, 1 << 40)),
        false,
        &["--max-peer-items", "1099511627776"],
    );
    assert_clean_failure(&o, "more than the 2147483648 we accept");
    assert!(!out.exists());
}

#[test]
fn a_peer_abort_reason_is_shown_escaped() {
    let reason = "\x1b[2J\x1b[31mfake\nvenn: done\r\u{202e}";
    let notice = [
        &u32::MAX.to_le_bytes()[..],
        &(reason.len() as u16).to_le_bytes(),
        reason.as_bytes(),
    ]
    .concat();
    let (o, out, _d) = against_fake_sender(Script::Raw(notice), false, &[]);
    assert_clean_failure(
        &o,
        "the peer aborted: \\u{1b}[2J\\u{1b}[31mfake\\u{a}venn: done\\u{d}\\u{202e}",
    );
    let err = stderr(&o);
    assert!(
        !err.contains('\x1b') && !err.contains('\r') && err.lines().count() == 1,
        "raw control text reached the terminal: {err:?}"
    );
    assert!(!out.exists());
}

#[test]
fn a_peer_needing_more_than_max_memory_is_refused() {
    let (o, out, _d) = against_fake_sender(
        planned(hello("kkrt16", VERSION, 1 << 30)),
        false,
        &["--max-peer-items", "2147483648", "--max-memory", "1G"],
    );
    assert_clean_failure(&o, "more than the 1.00 GiB allowed (--max-memory)");
    assert!(
        stderr(&o).contains("with 1073741824 peer items"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
}

#[test]
fn parameter_mismatch_is_named() {
    let script = [hello("kkrt16", VERSION, N), params_frame(&[1; 32])].concat();
    check(planned(script), false, "parameter mismatch");
}

#[test]
fn disconnect_truncation_and_oversized_frames() {
    let after = |bytes: Vec<u8>| Script::AfterHandshake(N, bytes);
    // Disconnect right after the handshake.
    check(after(vec![]), true, "closed the connection");
    // A frame announced as 4096 bytes (the base-OT reply) but cut after 10.
    let truncated = [4096u32.to_le_bytes().to_vec(), vec![1; 10]].concat();
    check(after(truncated), true, "closed the connection");
    // A length prefix far beyond what the step allows: refused before allocating.
    check(
        after(0xFFFF_FFF0u32.to_le_bytes().to_vec()),
        false,
        "expected base-OT sender points of 4096 bytes, got a length prefix of 4294967280 bytes",
    );
    // A base-OT reply of the right size whose points are not valid group elements.
    check(after(frame(&[0xFF; 32 * 128])), false, "Ristretto255 point");
}

#[test]
fn silent_peer_times_out() {
    check(Script::Raw(Vec::new()), false, "timed out after 3 s");
    check(planned(Vec::new()), false, "timed out after 3 s");
    check(
        planned(hello("kkrt16", VERSION, N)),
        false,
        "timed out after 3 s",
    );
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
        "--protocol",
        "kkrt16",
        "--timeout",
        "5",
        "--input",
        input.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ]);
    let stream = TcpStream::connect(&addr).unwrap();
    honest_handshake(&stream, 20000);
    std::thread::sleep(Duration::from_millis(200));
    drop(stream);
    let o = within(Duration::from_secs(10), || wait_listening(r));
    assert_clean_failure(&o, "closed the connection");
    assert!(!out.exists());
}

/// Copies `from` to `to`, the first frame (the run plan) with its trim and lower-case
/// flags set to `flags`, the rest as it comes.
fn relay_rewriting_plan(mut from: TcpStream, mut to: TcpStream, flags: [u8; 2]) {
    let mut len = [0; 4];
    if from.read_exact(&mut len).is_err() {
        return;
    }
    let mut plan = vec![0; u32::from_le_bytes(len) as usize];
    if from.read_exact(&mut plan).is_err() {
        return;
    }
    // After the magic, the mark, the rows and log2 of the buckets: the two flags.
    let at = 8 + 2 + 8 + 1;
    plan[at..at + 2].copy_from_slice(&flags);
    if to.write_all(&[&len[..], &plan].concat()).is_ok() {
        std::io::copy(&mut from, &mut to).ok();
    }
    to.shutdown(std::net::Shutdown::Both).ok();
}

/// A relay between two plaintext parties that rewrites both run plans so that each side
/// sees the peer take its keys as it does itself (the receiver trims and lower-cases, the
/// sender does neither): the plans are bound to the session even in one bucket, so the
/// handshake fails on both sides and nothing is written.
#[test]
fn a_relay_rewriting_both_run_plans_is_caught() {
    let dir = tmp();
    let s = write(dir.path(), "s.csv", "k\nAda\nbob\n");
    let r = write(dir.path(), "r.csv", "k\nada\nbob\n");
    let out = dir.path().join("out.csv");
    let (receiver, addr) = spawn_listening(&[
        "receive",
        "--trim",
        "--lowercase",
        "--timeout",
        "5",
        "--input",
        r.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ]);
    let relay = TcpListener::bind("127.0.0.1:0").unwrap();
    let relay_addr = relay.local_addr().unwrap().to_string();
    let relaying = std::thread::spawn(move || {
        let (sender_side, _) = relay.accept().unwrap();
        let receiver_side = TcpStream::connect(&addr).unwrap();
        let (s2, r2) = (
            sender_side.try_clone().unwrap(),
            receiver_side.try_clone().unwrap(),
        );
        let up =
            std::thread::spawn(move || relay_rewriting_plan(sender_side, receiver_side, [1, 1]));
        relay_rewriting_plan(r2, s2, [0, 0]);
        up.join().unwrap();
    });
    let sender = within(Duration::from_secs(15), || {
        venn()
            .args(["send", "--connect", &relay_addr, "--timeout", "5"])
            .args(["--input", s.to_str().unwrap()])
            .output()
            .unwrap()
    });
    let receiver = within(Duration::from_secs(15), || wait_listening(receiver));
    relaying.join().unwrap();
    assert_clean_failure(&sender, "");
    assert_clean_failure(&receiver, "run plans were altered in transit");
    assert!(!out.exists(), "a failed run writes nothing");
}
