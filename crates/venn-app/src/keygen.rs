//! `venn keygen` and Python's `venn.keygen`: a key pair and self-signed certificate for TLS
//! between two parties that pin each other's certificate by fingerprint.

use std::path::{Path, PathBuf};
use venn::net::tls::fingerprint;
use venn::util::files::write_new;
use venn::{Error, Result};

/// The longest validity a certificate may have, in days (a century).
pub const MAX_DAYS: u32 = 36500;

/// The name in certificates made by [`self_signed`] (a pinned peer is checked by its
/// fingerprint, not a name).
const NAME: &str = "venn";

/// A made key pair and self-signed certificate, PEM-encoded.
pub struct Generated {
    /// The certificate.
    pub cert_pem: String,
    /// The private key (PKCS#8).
    pub key_pem: String,
    /// The certificate's fingerprint, for the peer's `--peer-fingerprint`.
    pub fingerprint: String,
}

/// Makes an ECDSA P-256 key and a self-signed certificate valid from an hour ago for
/// `days` days, for both ends of a link (TLS server and client authentication).
pub fn self_signed(days: u32) -> Result<Generated> {
    let fail = |e: rcgen::Error| Error::Usage(format!("cannot make a certificate: {e}"));
    let key = rcgen::KeyPair::generate().map_err(fail)?;
    let mut params = rcgen::CertificateParams::new(vec![NAME.to_string()]).map_err(fail)?;
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + time::Duration::days(days.into());
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "venn party");
    params.extended_key_usages = vec![
        rcgen::ExtendedKeyUsagePurpose::ServerAuth,
        rcgen::ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let cert = params.self_signed(&key).map_err(fail)?;
    Ok(Generated {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        fingerprint: fingerprint(cert.der()),
    })
}

/// What [`keygen`] wrote.
pub struct Made {
    /// The private key (`dir/venn.key`, owner-only), for `--tls-key`.
    pub key: PathBuf,
    /// The certificate (`dir/venn.crt`), for `--tls-cert`.
    pub cert: PathBuf,
    /// The certificate's SHA-256 fingerprint, for the peer's `--peer-fingerprint`.
    pub fingerprint: String,
}

/// Writes `dir/venn.key` (owner-only) and `dir/venn.crt`, valid `days` days, making `dir`
/// if missing and never replacing a file (a key whose certificate cannot be written is
/// removed again).
pub fn keygen(dir: &Path, days: u32) -> Result<Made> {
    if !(1..=MAX_DAYS).contains(&days) {
        return Err(Error::Usage(format!(
            "a certificate is valid 1 to {MAX_DAYS} days, not {days}"
        )));
    }
    std::fs::create_dir_all(dir).map_err(Error::file("create directory", dir))?;
    let (key, cert) = (dir.join("venn.key"), dir.join("venn.crt"));
    for p in [&key, &cert] {
        if p.symlink_metadata().is_ok() {
            return Err(Error::Usage(format!(
                "'{}' exists; venn keygen never replaces a key or certificate",
                p.display()
            )));
        }
    }
    let made = self_signed(days)?;
    write_new(&key, made.key_pem.as_bytes(), 0o600)?;
    if let Err(e) = write_new(&cert, made.cert_pem.as_bytes(), 0o644) {
        let _ = std::fs::remove_file(&key);
        return Err(e);
    }
    Ok(Made {
        key,
        cert,
        fingerprint: made.fingerprint,
    })
}
