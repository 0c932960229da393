//! The rustls configurations: TLS 1.3 only, without resumption, the peer checked by
//! [`PeerCheck`]; and those of an HTTP API, whose clients show no certificate.

use super::certified_key::CertifiedKey;
use super::trust::Trust;
use super::verify::PeerCheck;
use super::{provider, tls_error};
use crate::{Error, Result};
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ServerConfig};
use std::sync::Arc;

/// The name a client presents to a pinned server it cannot name otherwise (a pinned
/// certificate is checked by its fingerprint, never by a name).
const PINNED_NAME: &str = "venn";

/// The name a client presents for `host`: a pinned certificate is checked by its
/// fingerprint, not a name; a CA's must name the host we connected to.
pub(super) fn server_name(trust: &Trust, host: &str) -> Result<ServerName<'static>> {
    match (trust, ServerName::try_from(host.to_string())) {
        (_, Ok(name)) => Ok(name),
        (Trust::Pinned(_), Err(_)) => Ok(ServerName::try_from(PINNED_NAME)
            .expect("a valid name")
            .to_owned()),
        (Trust::Ca(_), Err(_)) => Err(Error::Usage(format!(
            "'{host}' is not a name a certificate can hold; connect by host name or \
             address, or pin the peer's fingerprint"
        ))),
    }
}

/// TLS 1.3 for a server whose clients show no certificate (an HTTP API whose clients sign
/// each request instead).
pub fn api_server_config(ours: &CertifiedKey) -> Result<Arc<ServerConfig>> {
    Ok(Arc::new(server_config(ours, None)?))
}

/// TLS 1.3 for a client of such a server at `host`, checking it as `trust` says and
/// showing no certificate: the configuration and the name to present.
pub fn api_client_config(
    trust: &Trust,
    host: &str,
) -> Result<(Arc<ClientConfig>, ServerName<'static>)> {
    let config = client_config(Arc::new(PeerCheck::new(trust.clone())), None)?;
    Ok((Arc::new(config), server_name(trust, host)?))
}

/// TLS 1.3 only, without resumption, the server checked by `check`; `ours` shown if
/// the server asks for a certificate.
pub(super) fn client_config(
    check: Arc<PeerCheck>,
    ours: Option<&CertifiedKey>,
) -> Result<ClientConfig> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(tls_error)?
        .dangerous()
        .with_custom_certificate_verifier(check);
    let mut config = match ours {
        Some(id) => builder
            .with_client_auth_cert(id.chain.clone(), id.key.clone_key())
            .map_err(tls_error)?,
        None => builder.with_no_client_auth(),
    };
    config.resumption = rustls::client::Resumption::disabled();
    Ok(config)
}

/// TLS 1.3 only, without session tickets, as `ours`; clients must show a
/// certificate `check` accepts, if given.
pub(super) fn server_config(
    ours: &CertifiedKey,
    check: Option<Arc<PeerCheck>>,
) -> Result<ServerConfig> {
    let builder = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(tls_error)?;
    let builder = match check {
        Some(check) => builder.with_client_cert_verifier(check),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(ours.chain.clone(), ours.key.clone_key())
        .map_err(tls_error)?;
    config.send_tls13_tickets = 0;
    Ok(config)
}
