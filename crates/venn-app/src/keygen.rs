//! `venn keygen` and Python's `venn.keygen`: a key pair and self-signed certificate for TLS
//! between two parties that pin each other's certificate by fingerprint.

use std::path::{Path, PathBuf};
use venn::net::tls::Identity;
use venn::util::files::write_new;
use venn::{Error, Result};

/// The longest validity a certificate may have, in days (a century).
pub const MAX_DAYS: u32 = 36500;

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
    let made = Identity::generate(days)?;
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
