//! A party's own certificate chain and private key, from PEM.

use super::fingerprint::fingerprint;
use super::provider;
use crate::{Error, Result};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;

/// A party's certificate chain (its own certificate first) and private key.
pub struct CertifiedKey {
    pub(super) chain: Vec<CertificateDer<'static>>,
    pub(super) key: PrivateKeyDer<'static>,
}

impl std::fmt::Debug for CertifiedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CertifiedKey({})", self.fingerprint())
    }
}

impl CertifiedKey {
    /// Loads a PEM certificate chain and private key.
    pub fn load(cert: &Path, key: &Path) -> Result<Self> {
        let read = |path: &Path| std::fs::read(path).map_err(Error::file("read", path));
        Self::from_pem(&read(cert)?, &read(key)?).map_err(|(file, what)| {
            let path = if file == 0 { cert } else { key };
            Error::Usage(format!("'{}': {what}", path.display()))
        })
    }

    /// Parses a PEM certificate chain and private key; an error says which of the two
    /// (0 or 1) is wrong, and how.
    pub fn from_pem(cert: &[u8], key: &[u8]) -> std::result::Result<Self, (u8, String)> {
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert)
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| (0, format!("no PEM certificate in it ({e})")))?;
        if chain.is_empty() {
            return Err((0, "no PEM certificate in it".into()));
        }
        let key = PrivateKeyDer::from_pem_slice(key)
            .map_err(|e| (1, format!("no PEM private key in it ({e})")))?;
        rustls::sign::CertifiedKey::from_der(chain.clone(), key.clone_key(), &provider()).map_err(
            |e| {
                (
                    1,
                    format!("not the key of the certificate, or unusable ({e})"),
                )
            },
        )?;
        Ok(CertifiedKey { chain, key })
    }

    /// The fingerprint of our own certificate.
    pub fn fingerprint(&self) -> String {
        fingerprint(&self.chain[0])
    }
}
