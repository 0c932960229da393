//! The peer's certificate checked as [`Trust`] says, on either end of the handshake, with
//! what the check saw kept for an error message that names it.

use super::fingerprint::{fingerprint, fingerprint_hex};
use super::trust::Trust;
use super::{lock, provider};
use crate::peer_text;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls13_signature, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{
    CertificateError, DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme,
};
use sha2::{Digest, Sha256};
use std::sync::{Arc, Mutex};

/// Checks the peer's certificate as [`Trust`] says, noting why it refused one.
#[derive(Debug)]
pub(super) struct PeerCheck {
    trust: Trust,
    algorithms: WebPkiSupportedAlgorithms,
    /// Why it refused the peer's certificate (naming its fingerprint), if it did: for
    /// the error message.
    pub(super) refusal: Mutex<Option<String>>,
}

impl PeerCheck {
    pub(super) fn new(trust: Trust) -> Self {
        PeerCheck {
            trust,
            algorithms: provider().signature_verification_algorithms,
            refusal: Mutex::default(),
        }
    }

    /// Checks `cert` (and its chain) as a server's (`name` given) or a client's.
    fn check(
        &self,
        cert: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        name: Option<&ServerName<'_>>,
        now: UnixTime,
    ) -> std::result::Result<(), rustls::Error> {
        let seen = fingerprint(cert);
        let refuse = |why: String, e: rustls::Error| {
            *lock(&self.refusal) = Some(why);
            Err(e)
        };
        // A pinned certificate is its own trust anchor: the check below then verifies its
        // signature and dates (and, for a server, ignores names: the pin is the identity).
        let roots = match &self.trust {
            Trust::Pinned(pins) => {
                let digest = Sha256::digest(cert);
                if !pins.iter().any(|pin| digest.as_slice() == pin) {
                    let pins: Vec<String> = pins
                        .iter()
                        .map(|p| format!("sha256:{}", fingerprint_hex(p)))
                        .collect();
                    return refuse(
                        format!(
                            "the peer's certificate sha256:{seen} is not the pinned {}",
                            pins.join(" or ")
                        ),
                        rustls::Error::InvalidCertificate(
                            CertificateError::ApplicationVerificationFailure,
                        ),
                    );
                }
                let mut roots = RootCertStore::empty();
                if let Err(e) = roots.add(cert.clone().into_owned()) {
                    return refuse(
                        format!(
                            "the peer's certificate sha256:{seen} is unusable: {}",
                            peer_text(&e.to_string())
                        ),
                        e,
                    );
                }
                Arc::new(roots)
            }
            Trust::Ca(roots) => roots.clone(),
        };
        let result = match name {
            Some(name) => {
                let verifier =
                    rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider())
                        .build()
                        .map_err(|e| rustls::Error::General(e.to_string()))?;
                match verifier.verify_server_cert(cert, intermediates, name, &[], now) {
                    Err(rustls::Error::InvalidCertificate(
                        CertificateError::NotValidForName
                        | CertificateError::NotValidForNameContext { .. },
                    )) if matches!(self.trust, Trust::Pinned(_)) => Ok(()),
                    other => other.map(|_| ()),
                }
            }
            None => {
                let verifier =
                    rustls::server::WebPkiClientVerifier::builder_with_provider(roots, provider())
                        .build()
                        .map_err(|e| rustls::Error::General(e.to_string()))?;
                verifier
                    .verify_client_cert(cert, intermediates, now)
                    .map(|_| ())
            }
        };
        match result {
            Ok(()) => Ok(()),
            // webpki quotes names from the certificate: the peer's text.
            Err(e) => refuse(
                format!(
                    "the peer's certificate sha256:{seen} is refused: {}",
                    peer_text(&e.to_string())
                ),
                e,
            ),
        }
    }
}

/// The handshake-signature methods both verifier traits have, the same for both: TLS 1.3
/// signatures checked with the provider's algorithms, TLS 1.2 refused.
macro_rules! signatures {
    () => {
        fn verify_tls12_signature(
            &self,
            _: &[u8],
            _: &CertificateDer<'_>,
            _: &DigitallySignedStruct,
        ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
            Err(rustls::Error::PeerIncompatible(
                rustls::PeerIncompatible::Tls13RequiredForQuic,
            ))
        }

        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
            verify_tls13_signature(message, cert, dss, &self.algorithms)
        }

        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.algorithms.supported_schemes()
        }
    };
}

impl ServerCertVerifier for PeerCheck {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        self.check(end_entity, intermediates, Some(server_name), now)
            .map(|()| ServerCertVerified::assertion())
    }

    signatures!();
}

impl ClientCertVerifier for PeerCheck {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> std::result::Result<ClientCertVerified, rustls::Error> {
        self.check(end_entity, intermediates, None, now)
            .map(|()| ClientCertVerified::assertion())
    }

    signatures!();
}
