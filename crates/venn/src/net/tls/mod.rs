//! TLS 1.3 with mutual authentication over TCP (rustls, with aws-lc-rs as the one crypto
//! provider; nothing older than TLS 1.3 is offered or accepted).
//!
//! Each party has a [`CertifiedKey`] (its certificate chain and private key) and a [`Trust`] in the peer:
//! either the SHA-256 fingerprint of the peer's certificate (pinning, for the self-signed
//! certificates `venn keygen` makes) or a CA file. Both sides present and check a
//! certificate; an expired or not yet valid one is refused in both modes.
//!
//! **Full duplex.** A rustls connection keeps one state for both directions, so it cannot
//! be split between the reading protocol thread and the background writer the way a TCP
//! socket is. Here the socket is split and only the *record layer* is shared: the reader
//! reads ciphertext from its socket handle without any lock, then decrypts under the
//! connection's lock; the writer encrypts under the lock and writes the records out under
//! a second lock taken before the first is released, so records leave in the order rustls
//! made them. Neither side holds the connection's lock while it waits on the network, so
//! computation and communication overlap as they do over plain TCP.
//!
//! **Channel binding.** [`TlsReader::binding`] is keying material exported from the TLS
//! session (RFC 8446 §7.5); the session handshake hashes it into the session id, so a
//! transcript cannot be relayed from one TLS session into another.

mod certified_key;
mod config;
mod duplex;
mod failure;
mod fingerprint;
mod handshake;
#[cfg(test)]
mod tests;
mod trust;
mod verify;

pub use certified_key::CertifiedKey;
pub use config::{api_client_config, api_server_config};
pub use duplex::{TlsChannel, TlsReader, TlsWriter};
pub use fingerprint::{fingerprint, parse_fingerprint};
pub use handshake::{looks_like_tls, tls_channel, Side, TLS_PREFIX};
pub use trust::Trust;

use crate::Error;
use rustls::crypto::CryptoProvider;
use std::sync::{Arc, Mutex, MutexGuard};

/// The one crypto provider.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// What a party needs for TLS: who it is and whom it trusts.
#[derive(Debug)]
pub struct Tls {
    /// Our certificate and key.
    pub ours: CertifiedKey,
    /// How we check the peer.
    pub trust: Trust,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn tls_error(e: rustls::Error) -> Error {
    Error::Tls(e.to_string())
}
