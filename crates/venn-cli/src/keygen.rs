//! `venn keygen`: [`venn_app::keygen`], and what to do with its files.

use std::path::Path;
use venn::Result;

/// Writes `dir/venn.key` and `dir/venn.crt` and prints the certificate's fingerprint.
pub(crate) fn keygen(dir: &Path, days: u32) -> Result<()> {
    let made = venn_app::keygen::keygen(dir, days)?;
    out!("{}", made.fingerprint);
    eprintln!(
        "venn: wrote {} and {} (valid {days} days). Give the peer the fingerprint above for \
         its --peer-fingerprint; run with --tls-cert {} --tls-key {} --peer-fingerprint \
         <the peer's>.",
        made.key.display(),
        made.cert.display(),
        made.cert.display(),
        made.key.display()
    );
    Ok(())
}
