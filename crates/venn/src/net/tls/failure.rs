//! What a failed TLS connection means for the user, in one line naming the certificate
//! seen.

use super::certified_key::CertifiedKey;
use super::lock;
use super::verify::PeerCheck;
use crate::{peer_text, Error};
use rustls::AlertDescription;
use std::io::ErrorKind;
use std::time::Duration;

/// A one-line account of a failed TLS handshake.
pub(super) fn handshake_error(
    e: std::io::Error,
    check: &PeerCheck,
    ours: &CertifiedKey,
    timeout: Duration,
) -> Error {
    if let Some(why) = lock(&check.refusal).take() {
        return Error::Tls(why);
    }
    if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
        return Error::Timeout(timeout);
    }
    let Some(rustls_error) = e.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>()) else {
        return match e.kind() {
            ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset | ErrorKind::BrokenPipe => {
                Error::Tls(
                    "the peer closed the connection during the TLS handshake (does it run \
                     with TLS, and does it trust our certificate?)"
                        .into(),
                )
            }
            _ => Error::Io(e),
        };
    };
    Error::Tls(describe(rustls_error, &ours.fingerprint()))
}

/// What a TLS failure means for the user; `ours` is our certificate's fingerprint.
pub(super) fn describe(e: &rustls::Error, ours: &str) -> String {
    match e {
        rustls::Error::AlertReceived(
            alert @ (AlertDescription::BadCertificate
            | AlertDescription::CertificateRequired
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateUnknown
            | AlertDescription::AccessDenied
            | AlertDescription::DecryptError),
        ) => format!("the peer refused our certificate sha256:{ours} (TLS alert: {alert:?})"),
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateHandshakeMessage { .. } => {
            "the peer does not speak TLS 1.3 (does it run without --tls-cert?)".into()
        }
        other => peer_text(&other.to_string()),
    }
}
