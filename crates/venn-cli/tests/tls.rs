//! TLS between two `venn` processes: pinned and CA-checked runs, and each way a link can be
//! misconfigured (wrong certificate or fingerprint, one side without TLS, a remote peer
//! without TLS), each ending in one error line that says what was seen.

use crate::common::*;
use std::path::{Path, PathBuf};

fn tls_args<'a>(cert: &'a str, key: &'a str, trust: &'a str, value: &'a str) -> Vec<&'a str> {
    vec!["--tls-cert", cert, "--tls-key", key, trust, value]
}

fn inputs(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    (
        write(dir, "s.csv", "k\nx\ny\nz\n"),
        write(dir, "r.csv", "k\ny\nz\nw\n"),
        dir.join("out.csv"),
    )
}

#[test]
fn a_pinned_tls_run_gives_the_intersection() {
    let dir = tmp();
    let (ca, ka, fa) = keygen(dir.path(), "a");
    let (cb, kb, fb) = keygen(dir.path(), "b");
    let (s, r, out) = inputs(dir.path());
    let (s, r, out) = (
        s.to_str().unwrap(),
        r.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let recv = [
        vec!["--input", r, "--output", out],
        tls_args(&cb, &kb, "--peer-fingerprint", &fa),
    ];
    let send = [
        vec!["--input", s],
        tls_args(&ca, &ka, "--peer-fingerprint", &fb),
    ];
    let (so, ro) = run_pair(&recv.concat(), &send.concat());
    assert_success(&[&so, &ro]);
    assert_eq!(std::fs::read_to_string(out).unwrap(), "k\ny\nz\n");
}

#[test]
fn a_wrong_fingerprint_names_the_certificate_seen() {
    let dir = tmp();
    let (ca, ka, fa) = keygen(dir.path(), "a");
    let (cb, kb, fb) = keygen(dir.path(), "b");
    let (_, _, fc) = keygen(dir.path(), "c");
    let (s, r, out) = inputs(dir.path());
    let (s, r, out) = (
        s.to_str().unwrap(),
        r.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    // The sender pins c, but the receiver is b.
    let recv = [
        vec!["--input", r, "--output", out, "--timeout", "3"],
        tls_args(&cb, &kb, "--peer-fingerprint", &fa),
    ];
    let send = [
        vec!["--input", s],
        tls_args(&ca, &ka, "--peer-fingerprint", &fc),
    ];
    let (so, ro) = within(std::time::Duration::from_secs(20), || {
        run_pair(&recv.concat(), &send.concat())
    });
    assert_clean_failure(
        &so,
        &format!("certificate sha256:{fb} is not the pinned sha256:{fc}"),
    );
    assert!(!ro.status.success());
    assert!(
        stderr(&ro).contains("rejected a connection"),
        "{}",
        stderr(&ro)
    );
    assert!(!Path::new(out).exists());
}

#[test]
fn a_listener_refusing_the_certificate_tells_the_connecting_side() {
    let dir = tmp();
    let (ca, ka, fa) = keygen(dir.path(), "a");
    let (cb, kb, fb) = keygen(dir.path(), "b");
    let (_, _, fc) = keygen(dir.path(), "c");
    let (s, r, out) = inputs(dir.path());
    let (s, r, out) = (
        s.to_str().unwrap(),
        r.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    // The receiver pins c, but the sender is a.
    let recv = [
        vec!["--input", r, "--output", out, "--timeout", "3"],
        tls_args(&cb, &kb, "--peer-fingerprint", &fc),
    ];
    let send = [
        vec!["--input", s],
        tls_args(&ca, &ka, "--peer-fingerprint", &fb),
    ];
    let (so, ro) = run_pair(&recv.concat(), &send.concat());
    assert_clean_failure(
        &so,
        &format!("the peer refused our certificate sha256:{fa}"),
    );
    let rerr = stderr(&ro);
    assert!(
        rerr.contains(&format!("certificate sha256:{fa} is not the pinned")),
        "the listener logs what it refused: {rerr}"
    );
    assert_clean_failure(&ro, "timed out");
}

#[test]
fn a_plaintext_peer_and_a_tls_peer_do_not_talk() {
    let dir = tmp();
    let (ca, ka, fa) = keygen(dir.path(), "a");
    let (cb, kb, fb) = keygen(dir.path(), "b");
    let (s, r, out) = inputs(dir.path());
    let (s, r, out) = (
        s.to_str().unwrap(),
        r.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    // A TLS listener and a plaintext sender: the sender is told why.
    let recv = [
        vec!["--input", r, "--output", out, "--timeout", "3"],
        tls_args(&cb, &kb, "--peer-fingerprint", &fa),
    ];
    let (so, ro) = run_pair(&recv.concat(), &["--input", s]);
    assert_clean_failure(&so, "requires TLS");
    assert!(stderr(&ro).contains("without TLS"), "{}", stderr(&ro));
    // A plaintext listener and a TLS sender.
    let recv = ["--input", r, "--output", out, "--timeout", "3"];
    let send = [
        vec!["--input", s],
        tls_args(&ca, &ka, "--peer-fingerprint", &fb),
    ];
    let (so, ro) = run_pair(&recv, &send.concat());
    assert_clean_failure(&so, "TLS");
    assert!(stderr(&ro).contains("TLS client"), "{}", stderr(&ro));
    assert!(!Path::new(out).exists());
}

#[test]
fn a_remote_peer_without_tls_is_refused_unless_plaintext_is_asked_for() {
    let dir = tmp();
    let (s, _, _) = inputs(dir.path());
    let s = s.to_str().unwrap();
    for endpoint in [["--listen", "0.0.0.0:0"], ["--connect", "192.0.2.1:9"]] {
        let o = venn()
            .arg("send")
            .args(["--input", s])
            .args(endpoint)
            .output()
            .unwrap();
        assert_clean_failure(&o, "needs TLS");
    }
    let o = venn()
        .args([
            "send",
            "--input",
            s,
            "--connect",
            "192.0.2.1:9",
            "--plaintext",
            "--timeout",
            "1",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("warning: running without TLS"),
        "{}",
        stderr(&o)
    );
}

/// A CA and two leaves it signs for `localhost`, plus a leaf of another CA; PEM files.
fn ca_setup(dir: &Path) -> (String, [(String, String); 3]) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "our CA");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let other_key = rcgen::KeyPair::generate().unwrap();
    let mut other_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    other_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    other_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "another CA");
    let other = rcgen::Issuer::new(other_params, other_key);
    let save = |name: &str, text: String| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let leaf = |name: &str, by: &rcgen::Issuer<rcgen::KeyPair>| {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .signed_by(&key, by)
            .unwrap();
        (
            save(&format!("{name}.crt"), cert.pem()),
            save(&format!("{name}.key"), key.serialize_pem()),
        )
    };
    (
        save("ca.crt", ca_cert.pem()),
        [leaf("a", &issuer), leaf("b", &issuer), leaf("x", &other)],
    )
}

#[test]
fn a_ca_checked_run_works_and_a_certificate_of_another_ca_is_refused() {
    let dir = tmp();
    let (ca, [(ca_a, ka), (cb, kb), (cx, kx)]) = ca_setup(dir.path());
    let (s, r, out) = inputs(dir.path());
    let (s, r, out) = (
        s.to_str().unwrap(),
        r.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let send_to = |addr: &str, cert: &str, key: &str| {
        let port = addr.rsplit_once(':').unwrap().1;
        venn()
            .args([
                "send",
                "--input",
                s,
                "--connect",
                &format!("localhost:{port}"),
            ])
            .args(tls_args(cert, key, "--tls-ca", &ca))
            .output()
            .unwrap()
    };
    let recv = [
        vec!["--input", r, "--output", out, "--timeout", "5"],
        tls_args(&cb, &kb, "--tls-ca", &ca),
    ];
    let recv = [&["receive"][..], &recv.concat()].concat();
    let (child, addr) = spawn_listening(&recv);
    let so = send_to(&addr, &ca_a, &ka);
    let ro = wait_listening(child);
    assert_success(&[&so, &ro]);
    assert_eq!(std::fs::read_to_string(out).unwrap(), "k\ny\nz\n");
    std::fs::remove_file(out).unwrap();

    let (child, addr) = spawn_listening(&recv);
    let so = send_to(&addr, &cx, &kx);
    let ro = wait_listening(child);
    assert_clean_failure(&so, "the peer refused our certificate");
    let rerr = stderr(&ro);
    assert!(
        rerr.contains("is refused") && rerr.contains("UnknownIssuer"),
        "{rerr}"
    );
    assert!(!Path::new(out).exists());
}
