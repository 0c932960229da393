//! `venn keygen`: a key pair and self-signed certificate for TLS between two parties that
//! pin each other's certificate by fingerprint.

use std::path::Path;
use venn::net::tls::Identity;
use venn::util::files::write_new;
use venn::{Error, Result};

/// Writes `dir/venn.key` (owner-only) and `dir/venn.crt`, never replacing a file, and
/// prints the certificate's fingerprint.
pub fn keygen(dir: &Path, days: u32) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(Error::file("create directory", dir))?;
    let (key_path, cert_path) = (dir.join("venn.key"), dir.join("venn.crt"));
    for p in [&key_path, &cert_path] {
        if p.symlink_metadata().is_ok() {
            return Err(Error::Usage(format!(
                "'{}' exists; venn keygen never replaces a key or certificate",
                p.display()
            )));
        }
    }
    let made = Identity::generate(days)?;
    write_new(&key_path, made.key_pem.as_bytes(), 0o600)?;
    if let Err(e) = write_new(&cert_path, made.cert_pem.as_bytes(), 0o644) {
        let _ = std::fs::remove_file(&key_path);
        return Err(e);
    }
    out!("{}", made.fingerprint);
    eprintln!(
        "venn: wrote {} and {} (valid {days} days). Give the peer the fingerprint above for \
         its --peer-fingerprint; run with --tls-cert {} --tls-key {} --peer-fingerprint \
         <the peer's>.",
        key_path.display(),
        cert_path.display(),
        cert_path.display(),
        key_path.display()
    );
    Ok(())
}
