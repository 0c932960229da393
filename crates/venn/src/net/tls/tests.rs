//! The TLS channel end to end over loopback: pinning, refusals and their messages,
//! deadlines, and a raw rustls client sending records by hand.

use super::verify::PeerCheck;
use super::{fingerprint, provider, tls_channel, CertifiedKey, Side, Tls, TlsChannel, Trust};
use crate::net::{tcp_channel, Channel};
use crate::Result;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, RootCertStore};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// A self-signed certificate and key valid from an hour ago for `days` days, and its fingerprint
/// (the tests mint their own: minting for users is the application's, venn-app's keygen).
fn certified_key(days: u32) -> (CertifiedKey, [u8; 32]) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["venn".to_string()]).unwrap();
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + time::Duration::days(days.into());
    let cert = params.self_signed(&key).unwrap();
    let id = CertifiedKey::from_pem(cert.pem().as_bytes(), key.serialize_pem().as_bytes()).unwrap();
    (id, Sha256::digest(cert.der()).into())
}

/// `ours`, trusting only the certificate with fingerprint `pin`.
fn pinned(ours: CertifiedKey, pin: [u8; 32]) -> Tls {
    Tls {
        ours,
        trust: Trust::Pinned(vec![pin]),
    }
}

/// Runs a client (`a`) and a server (`b`) over loopback; returns both results.
fn pair(a: Tls, b: Tls) -> (Result<TlsChannel>, Result<TlsChannel>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let t = Duration::from_secs(5);
    std::thread::scope(|s| {
        let server = s.spawn(move || {
            let (socket, _) = listener.accept().unwrap();
            tls_channel(socket, Side::Server, &b, t, t)
        });
        let socket = TcpStream::connect(addr).unwrap();
        let client = tls_channel(socket, Side::Client { host: "127.0.0.1" }, &a, t, t);
        (client, server.join().unwrap())
    })
}

#[test]
fn pinned_peers_talk_full_duplex_over_one_bound_channel() {
    let ((a, fa), (b, fb)) = (certified_key(1), certified_key(1));
    let (ca, cb) = pair(pinned(a, fb), pinned(b, fa));
    let (mut ca, mut cb) = (ca.unwrap(), cb.unwrap());
    assert_eq!(ca.binding(), cb.binding());
    assert!(ca.binding().is_some());
    // Both send 8 MiB at once before reading: more than socket buffers hold, so this
    // only finishes if reading and writing proceed independently.
    let big: Vec<u8> = (0..8 << 20).map(|i| (i % 251) as u8).collect();
    std::thread::scope(|s| {
        for chan in [&mut ca, &mut cb] {
            let big = &big;
            s.spawn(move || {
                for _ in 0..4 {
                    chan.send(&big[..2 << 20]).unwrap();
                }
                let chan: &mut dyn Channel = chan;
                for _ in 0..4 {
                    assert_eq!(chan.recv(4 << 20).unwrap(), &big[..2 << 20]);
                }
            });
        }
    });
}

#[test]
fn a_wrong_pin_names_the_certificate_seen_on_both_sides() {
    let ((a, fa), (b, _), (_, other)) = (certified_key(1), certified_key(1), certified_key(1));
    let seen_b = fingerprint(&b.chain[0]);
    let (ca, cb) = pair(pinned(a, other), pinned(b, fa));
    let e = ca.err().unwrap().to_string();
    assert!(e.contains(&seen_b) && e.contains("not the pinned"), "{e}");
    assert!(cb.is_err());
}

#[test]
fn the_server_refusing_the_client_is_reported_to_the_client() {
    let ((a, fa), (b, fb), (_, other)) = (certified_key(1), certified_key(1), certified_key(1));
    let seen_a = fingerprint(&a.chain[0]);
    let (ca, cb) = pair(pinned(a, fb), pinned(b, other));
    let e = cb.err().unwrap().to_string();
    assert!(e.contains(&seen_a), "the server names what it saw: {e}");
    // The client finished its half of the handshake; the refusal reaches it as an
    // alert on its first read.
    let e = match ca {
        Err(e) => e,
        Ok(mut ca) => (&mut ca as &mut dyn Channel).recv(16).unwrap_err(),
    }
    .to_string();
    assert!(
        e.contains("refused our certificate") && e.contains(&seen_a),
        "{e}"
    );
    let _ = fa;
}

#[test]
fn an_expired_certificate_is_refused_even_when_pinned() {
    let ((a, fa), (b, fb)) = (certified_key(0), certified_key(1));
    std::thread::sleep(Duration::from_millis(1100));
    let (ca, cb) = pair(pinned(a, fb), pinned(b, fa));
    let e = cb.err().unwrap().to_string();
    assert!(e.to_lowercase().contains("expired"), "{e}");
    drop(ca);
}

#[test]
fn a_plaintext_peer_is_not_taken_for_tls() {
    let (a, _) = certified_key(1);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let t = Duration::from_secs(5);
    std::thread::scope(|s| {
        s.spawn(move || {
            let (socket, _) = listener.accept().unwrap();
            let mut plain = tcp_channel(socket, t).unwrap();
            let _ = plain.send(b"VENN/PSI hello in the clear");
            std::thread::sleep(Duration::from_millis(200));
        });
        let socket = TcpStream::connect(addr).unwrap();
        let tls = pinned(a, [0; 32]);
        let e = tls_channel(socket, Side::Client { host: "x" }, &tls, t, t)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("does not speak TLS"), "{e}");
    });
}

fn raw_client(id: &CertifiedKey, pin: [u8; 32]) -> ClientConnection {
    let check = Arc::new(PeerCheck::new(Trust::Pinned(vec![pin])));
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(check)
        .with_client_auth_cert(id.chain.clone(), id.key.clone_key())
        .unwrap();
    config.resumption = rustls::client::Resumption::disabled();
    ClientConnection::new(Arc::new(config), ServerName::try_from("venn").unwrap()).unwrap()
}

/// A raw client connected to `addr` with its handshake done (tests that then send
/// records by hand).
fn handshaken(
    addr: std::net::SocketAddr,
    id: &CertifiedKey,
    pin: [u8; 32],
) -> (TcpStream, ClientConnection) {
    let mut sock = TcpStream::connect(addr).unwrap();
    let mut conn = raw_client(id, pin);
    while conn.is_handshaking() {
        conn.complete_io(&mut sock).unwrap();
    }
    (sock, conn)
}

/// The TLS records `conn` has queued, as bytes.
fn queued_records(conn: &mut ClientConnection) -> Vec<u8> {
    let mut out = Vec::new();
    while conn.wants_write() {
        conn.write_tls(&mut out).unwrap();
    }
    out
}

/// What the server's first receive gave, and how long it took.
type Received = mpsc::Receiver<(std::result::Result<Vec<u8>, String>, Duration)>;

/// Starts a venn TLS server; returns its address and what its first receive gives.
fn server(b: CertifiedKey, fa: [u8; 32], t: Duration) -> (std::net::SocketAddr, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (socket, _) = listener.accept().unwrap();
        let tls = pinned(b, fa);
        let mut chan = tls_channel(socket, Side::Server, &tls, t, t).unwrap();
        let start = Instant::now();
        let r = (&mut chan as &mut dyn Channel)
            .recv(64)
            .map_err(|e| e.to_string());
        let _ = tx.send((r, start.elapsed()));
    });
    (addr, rx)
}

fn frame(payload: &[u8]) -> Vec<u8> {
    let mut f = (payload.len() as u32).to_le_bytes().to_vec();
    f.extend_from_slice(payload);
    f
}

#[test]
fn data_sent_with_the_last_handshake_message_is_delivered() {
    let ((a, fa), (b, fb)) = (certified_key(1), certified_key(1));
    let (addr, rx) = server(b, fa, Duration::from_secs(2));
    let mut sock = TcpStream::connect(addr).unwrap();
    let mut conn = raw_client(&a, fb);
    // Queued before the handshake ends: leaves in the same write as the client's Finished.
    conn.writer().write_all(&frame(b"hello")).unwrap();
    while conn.is_handshaking() {
        conn.complete_io(&mut sock).unwrap();
    }
    while conn.wants_write() {
        conn.write_tls(&mut sock).unwrap();
    }
    let (r, _) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(r.unwrap(), b"hello");
}

#[test]
fn bytes_after_close_notify_do_not_hang_the_reader() {
    let ((a, fa), (b, fb)) = (certified_key(1), certified_key(1));
    let (addr, rx) = server(b, fa, Duration::from_secs(1));
    let (mut sock, mut conn) = handshaken(addr, &a, fb);
    std::thread::sleep(Duration::from_millis(200));
    conn.send_close_notify();
    let mut out = queued_records(&mut conn);
    out.extend(std::iter::repeat_n(0u8, 10000));
    sock.write_all(&out).unwrap();
    let got = rx.recv_timeout(Duration::from_secs(6));
    assert!(
        got.is_ok(),
        "the server's recv never returned (spinning under the lock)"
    );
}

#[test]
fn a_handshake_trickled_byte_by_byte_meets_its_deadline() {
    let (b, _) = certified_key(1);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let h = std::thread::spawn(move || {
        let (socket, _) = listener.accept().unwrap();
        let tls = pinned(b, [0; 32]);
        let start = Instant::now();
        let r = tls_channel(
            socket,
            Side::Server,
            &tls,
            Duration::from_secs(1),
            Duration::from_secs(1),
        );
        (r.err().map(|e| e.to_string()), start.elapsed())
    });
    let mut sock = TcpStream::connect(addr).unwrap();
    sock.write_all(&[0x16, 3, 1, 1, 0]).unwrap();
    for _ in 0..8 {
        std::thread::sleep(Duration::from_millis(600));
        if sock.write_all(&[0]).is_err() {
            break; // the server gave up, as it should
        }
    }
    drop(sock);
    let (e, took) = h.join().unwrap();
    assert!(e.is_some());
    assert!(took < Duration::from_secs(2), "took {took:?}");
}

#[test]
fn a_record_trickled_byte_by_byte_meets_the_message_deadline() {
    let ((a, fa), (b, fb)) = (certified_key(1), certified_key(1));
    let (addr, rx) = server(b, fa, Duration::from_secs(1));
    let (mut sock, mut conn) = handshaken(addr, &a, fb);
    conn.writer().write_all(&frame(b"late")).unwrap();
    for byte in queued_records(&mut conn) {
        std::thread::sleep(Duration::from_millis(300));
        if sock.write_all(&[byte]).is_err() {
            break; // the server gave up, as it should
        }
    }
    let (_, took) = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(took < Duration::from_secs(2), "took {took:?}");
}

#[test]
fn names_in_a_refused_certificate_are_escaped() {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let leaf = |name: &str| {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec![name.to_string()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        CertifiedKey::from_pem(cert.pem().as_bytes(), key.serialize_pem().as_bytes()).unwrap()
    };
    let mut roots = RootCertStore::empty();
    roots.add(ca_cert.der().clone()).unwrap();
    let trust = Trust::Ca(Arc::new(roots));
    let (a, b) = (leaf("localhost"), leaf("evil\x1b[2J\x1b]0;pwned\x07"));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let t = Duration::from_secs(3);
    let trust2 = trust.clone();
    std::thread::spawn(move || {
        let (socket, _) = listener.accept().unwrap();
        let _ = tls_channel(
            socket,
            Side::Server,
            &Tls {
                ours: b,
                trust: trust2,
            },
            t,
            t,
        );
    });
    let socket = TcpStream::connect(addr).unwrap();
    let e = tls_channel(
        socket,
        Side::Client { host: "localhost" },
        &Tls { ours: a, trust },
        t,
        t,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(!e.contains('\x1b'), "raw escape in error: {e:?}");
}
