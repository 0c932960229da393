//! Whom a party trusts: the peer's pinned fingerprints, or the CAs in a file.

use super::fingerprint::fingerprint_hex;
use crate::{Error, Result};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::RootCertStore;
use std::path::Path;
use std::sync::Arc;

/// How the peer's certificate is checked.
#[derive(Clone)]
pub enum Trust {
    /// It must be exactly a certificate with one of these SHA-256 fingerprints (and in
    /// date): the peer's, or for a dealer, its two parties'.
    Pinned(Vec<[u8; 32]>),
    /// It must chain to one of these CA certificates (and, when we connect, name the host
    /// we connect to).
    Ca(Arc<RootCertStore>),
}

impl Trust {
    /// Trusts the CA certificates in a PEM file.
    pub fn ca_file(path: &Path) -> Result<Self> {
        let pem = std::fs::read(path).map_err(Error::file("read", path))?;
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| {
                Error::Usage(format!("'{}': bad PEM certificate ({e})", path.display()))
            })?;
            roots.add(cert).map_err(|e| {
                Error::Usage(format!(
                    "'{}': unusable CA certificate ({e})",
                    path.display()
                ))
            })?;
        }
        if roots.is_empty() {
            return Err(Error::Usage(format!(
                "'{}': no CA certificate in it",
                path.display()
            )));
        }
        Ok(Trust::Ca(Arc::new(roots)))
    }
}

impl std::fmt::Debug for Trust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Trust::Pinned(pins) => {
                let pins: Vec<String> = pins.iter().map(fingerprint_hex).collect();
                write!(f, "Pinned({})", pins.join(", "))
            }
            Trust::Ca(roots) => write!(f, "Ca({} roots)", roots.len()),
        }
    }
}
