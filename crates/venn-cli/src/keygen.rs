//! `venn keygen`: a key pair and self-signed certificate for TLS between two parties that
//! pin each other's certificate by fingerprint.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use venn::net::tls::Identity;
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
    println!("{}", made.fingerprint);
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

/// Writes a new file with `mode`, complete or not at all.
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let fail = |e| Error::file("write", path)(e);
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(fail)?;
    tmp.write_all(bytes).map_err(fail)?;
    tmp.as_file().sync_all().map_err(fail)?;
    tmp.persist_noclobber(path).map_err(|e| fail(e.error))?;
    Ok(())
}
