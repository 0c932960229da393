//! TLS 1.3 with mutual authentication over TCP (rustls, with aws-lc-rs as the one crypto
//! provider; nothing older than TLS 1.3 is offered or accepted).
//!
//! Each party has an [`Identity`] (a certificate and its key) and a [`Trust`] in the peer:
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

use super::StreamChannel;
use crate::{peer_text, Error, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls13_signature, CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{
    AlertDescription, CertificateError, ClientConfig, ClientConnection, Connection,
    DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig, ServerConnection,
    SignatureScheme,
};
use sha2::{Digest, Sha256};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The label of the exported keying material that binds a session to its TLS channel.
const BINDING_LABEL: &[u8] = b"EXPORTER-venn-session-binding";
/// The name in certificates made by [`Identity::generate`].
const GENERATED_NAME: &str = "venn";

/// The one crypto provider.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// A certificate's SHA-256 fingerprint: 64 lowercase hex digits.
pub fn fingerprint(cert: &[u8]) -> String {
    Sha256::digest(cert)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Parses a fingerprint as a user may write it: hex in either case, with or without
/// colons and a `sha256:` prefix.
pub fn parse_fingerprint(text: &str) -> Result<[u8; 32]> {
    let t = text.trim();
    let t = t
        .strip_prefix("sha256:")
        .or_else(|| t.strip_prefix("SHA256:"))
        .unwrap_or(t);
    let hex: String = t.chars().filter(|&c| c != ':').collect();
    let bad = || {
        Error::Usage(format!(
            "'{text}' is not a SHA-256 fingerprint (64 hex digits, as `venn keygen` prints)"
        ))
    };
    if hex.len() != 64 || !hex.is_ascii() {
        return Err(bad());
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(out)
}

/// A party's certificate chain (its own certificate first) and private key.
pub struct Identity {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Identity({})", self.fingerprint())
    }
}

/// A made key pair and self-signed certificate, PEM-encoded.
pub struct Generated {
    /// The certificate.
    pub cert_pem: String,
    /// The private key (PKCS#8).
    pub key_pem: String,
    /// The certificate's fingerprint, for the peer's `--peer-fingerprint`.
    pub fingerprint: String,
}

impl Identity {
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
        Ok(Identity { chain, key })
    }

    /// Makes an ECDSA P-256 key and a self-signed certificate valid from an hour ago for
    /// `days` days, for both ends of a link (TLS server and client authentication).
    pub fn generate(days: u32) -> Result<Generated> {
        let fail = |e: rcgen::Error| Error::Usage(format!("cannot make a certificate: {e}"));
        let key = rcgen::KeyPair::generate().map_err(fail)?;
        let mut params =
            rcgen::CertificateParams::new(vec![GENERATED_NAME.to_string()]).map_err(fail)?;
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::hours(1);
        params.not_after = now + time::Duration::days(days.into());
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "venn party");
        params.extended_key_usages = vec![
            rcgen::ExtendedKeyUsagePurpose::ServerAuth,
            rcgen::ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let cert = params.self_signed(&key).map_err(fail)?;
        Ok(Generated {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            fingerprint: fingerprint(cert.der()),
        })
    }

    /// The fingerprint of our own certificate.
    pub fn fingerprint(&self) -> String {
        fingerprint(&self.chain[0])
    }
}

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

/// What a party needs for TLS: who it is and whom it trusts.
#[derive(Debug)]
pub struct Tls {
    /// Our certificate and key.
    pub identity: Identity,
    /// How we check the peer.
    pub trust: Trust,
}

/// What the certificate check saw, for an error message that names it.
#[derive(Debug, Default)]
struct Seen {
    fingerprint: Option<String>,
    refusal: Option<String>,
}

/// Checks the peer's certificate as [`Trust`] says, noting what it saw.
#[derive(Debug)]
struct PeerCheck {
    trust: Trust,
    algorithms: WebPkiSupportedAlgorithms,
    seen: Mutex<Seen>,
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

fn fingerprint_hex(fp: &[u8; 32]) -> String {
    fp.iter().map(|b| format!("{b:02x}")).collect()
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl PeerCheck {
    fn new(trust: Trust) -> Self {
        PeerCheck {
            trust,
            algorithms: provider().signature_verification_algorithms,
            seen: Mutex::default(),
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
        lock(&self.seen).fingerprint = Some(seen.clone());
        let refuse = |why: String, e: rustls::Error| {
            lock(&self.seen).refusal = Some(why);
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

/// The connection's record layer and the socket's sending side, shared by the two halves.
struct Shared {
    conn: Mutex<Connection>,
    out: Mutex<TcpStream>,
}

/// Writes out every record the connection has ready. The socket lock is taken before the
/// connection's is released, so records leave in the order they were made.
fn send_records(shared: &Shared, mut conn: MutexGuard<'_, Connection>) -> std::io::Result<()> {
    let mut records = Vec::new();
    while conn.wants_write() {
        conn.write_tls(&mut records)?;
    }
    if records.is_empty() {
        return Ok(());
    }
    let mut out = lock(&shared.out);
    drop(conn);
    out.write_all(&records)
}

/// The receiving half: ciphertext from the socket, plaintext to the frame decoder.
pub struct TlsReader {
    shared: Arc<Shared>,
    socket: TcpStream,
    raw: Vec<u8>,
    plain: Vec<u8>,
    at: usize,
    /// The peer sent close_notify: nothing more will come.
    closed: bool,
    binding: [u8; 32],
    /// Our certificate's fingerprint, for error messages.
    ours: String,
}

impl TlsReader {
    /// Keying material exported from this TLS session (the channel binding).
    pub fn binding(&self) -> [u8; 32] {
        self.binding
    }
}

impl Read for TlsReader {
    /// Plaintext if any is ready; otherwise one read of ciphertext from the socket. A read
    /// that brings no whole record yet returns `Interrupted`, so the caller's deadline is
    /// checked again before the next (a peer cannot trickle a record byte by byte past it).
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at < self.plain.len() {
            let n = buf.len().min(self.plain.len() - self.at);
            buf[..n].copy_from_slice(&self.plain[self.at..self.at + n]);
            self.at += n;
            return Ok(n);
        }
        if self.closed {
            return Ok(0);
        }
        let n = self.socket.read(&mut self.raw)?;
        if n == 0 {
            return Ok(0);
        }
        let mut conn = lock(&self.shared.conn);
        let mut ciphertext = &self.raw[..n];
        self.plain.clear();
        self.at = 0;
        while !ciphertext.is_empty() && !self.closed {
            if conn.read_tls(&mut ciphertext)? == 0 {
                // After close_notify nothing more is taken.
                self.closed = true;
            }
            match drain(&mut conn, &mut self.plain) {
                Ok(closed) => self.closed |= closed,
                Err(e) => {
                    // Tell the peer (best effort) before giving up.
                    let _ = send_records(&self.shared, conn);
                    return Err(std::io::Error::new(
                        ErrorKind::InvalidData,
                        describe(&e, &self.ours),
                    ));
                }
            }
        }
        send_records(&self.shared, conn)?;
        if self.plain.is_empty() && !self.closed {
            return Err(ErrorKind::Interrupted.into());
        }
        self.read(buf)
    }
}

/// Processes what rustls has read and moves the plaintext into `plain`; returns whether
/// the peer has closed.
fn drain(conn: &mut Connection, plain: &mut Vec<u8>) -> Result<bool, rustls::Error> {
    let state = conn.process_new_packets()?;
    let start = plain.len();
    plain.resize(start + state.plaintext_bytes_to_read(), 0);
    conn.reader()
        .read_exact(&mut plain[start..])
        .expect("rustls holds the plaintext it announced");
    Ok(state.peer_has_closed())
}

impl super::TimedRead for TlsReader {
    fn set_read_limit(&mut self, limit: Duration) -> std::io::Result<()> {
        self.socket
            .set_read_timeout(Some(limit.max(Duration::from_millis(1))))
    }
}

/// The sending half: plaintext from the background writer, records to the socket.
pub struct TlsWriter {
    shared: Arc<Shared>,
}

impl Write for TlsWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut conn = lock(&self.shared.conn);
        let n = conn.writer().write(buf)?;
        send_records(&self.shared, conn)?;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl super::TimedWrite for TlsWriter {
    fn set_write_limit(&mut self, limit: Duration) -> std::io::Result<()> {
        lock(&self.shared.out).set_write_timeout(Some(limit.max(Duration::from_millis(1))))
    }
}

/// A framed channel over TLS.
pub type TlsChannel = StreamChannel<TlsReader>;

/// Which end of the TLS handshake we are.
pub enum Side<'a> {
    /// We connected; the peer's certificate must be valid for `host` when trusting a CA.
    Client {
        /// The host name or address we connected to.
        host: &'a str,
    },
    /// We accepted the connection.
    Server,
}

/// How many opening bytes [`looks_like_tls`] needs.
pub const TLS_PREFIX: usize = 3;

/// Whether a connection's opening bytes can be a TLS ClientHello (a handshake record).
pub fn looks_like_tls(first: &[u8]) -> bool {
    matches!(first, [0x16, 0x03, 0x01..=0x04, ..])
}

/// The name a client presents for `host`: a pinned certificate is checked by its
/// fingerprint, not a name; a CA's must name the host we connected to.
fn server_name(trust: &Trust, host: &str) -> Result<ServerName<'static>> {
    match (trust, ServerName::try_from(host.to_string())) {
        (_, Ok(name)) => Ok(name),
        (Trust::Pinned(_), Err(_)) => Ok(ServerName::try_from(GENERATED_NAME)
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
pub fn api_server_config(identity: &Identity) -> Result<Arc<ServerConfig>> {
    Ok(Arc::new(server_config(identity, None)?))
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

fn tls_error(e: rustls::Error) -> Error {
    Error::Tls(e.to_string())
}

/// TLS 1.3 only, without resumption, the server checked by `check`; `identity` shown if
/// the server asks for a certificate.
fn client_config(check: Arc<PeerCheck>, identity: Option<&Identity>) -> Result<ClientConfig> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(tls_error)?
        .dangerous()
        .with_custom_certificate_verifier(check);
    let mut config = match identity {
        Some(id) => builder
            .with_client_auth_cert(id.chain.clone(), id.key.clone_key())
            .map_err(tls_error)?,
        None => builder.with_no_client_auth(),
    };
    config.resumption = rustls::client::Resumption::disabled();
    Ok(config)
}

/// TLS 1.3 only, without session tickets, as `identity`; clients must show a
/// certificate `check` accepts, if given.
fn server_config(identity: &Identity, check: Option<Arc<PeerCheck>>) -> Result<ServerConfig> {
    let builder = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(tls_error)?;
    let builder = match check {
        Some(check) => builder.with_client_cert_verifier(check),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(identity.chain.clone(), identity.key.clone_key())
        .map_err(tls_error)?;
    config.send_tls13_tickets = 0;
    Ok(config)
}

/// Runs the TLS handshake on `socket` within `handshake_within` and wraps it as a channel
/// whose messages each have `timeout`. Errors name the certificate seen.
pub fn tls_channel(
    socket: TcpStream,
    side: Side,
    tls: &Tls,
    handshake_within: Duration,
    timeout: Duration,
) -> Result<TlsChannel> {
    let check = Arc::new(PeerCheck::new(tls.trust.clone()));
    let mut conn: Connection = match side {
        Side::Client { host } => {
            let config = client_config(check.clone(), Some(&tls.identity))?;
            ClientConnection::new(Arc::new(config), server_name(&tls.trust, host)?)
                .map_err(tls_error)?
                .into()
        }
        Side::Server => {
            let config = server_config(&tls.identity, Some(check.clone()))?;
            ServerConnection::new(Arc::new(config))
                .map_err(tls_error)?
                .into()
        }
    };
    let mut socket = socket;
    if let Err(e) = drive_handshake(&mut conn, &mut socket, Instant::now() + handshake_within) {
        return Err(handshake_error(e, &check, &tls.identity, handshake_within));
    }
    // A refusal by our own check ends the handshake above; this catches any other path.
    if let Some(why) = lock(&check.seen).refusal.take() {
        return Err(Error::Tls(why));
    }
    // The peer's first application data may have come with its last handshake message.
    let mut plain = Vec::new();
    let closed = drain(&mut conn, &mut plain).map_err(tls_error)?;
    let mut binding = [0u8; 32];
    conn.export_keying_material(&mut binding, BINDING_LABEL, None)
        .map_err(tls_error)?;
    socket.set_write_timeout(Some(timeout))?;
    let shared = Arc::new(Shared {
        conn: Mutex::new(conn),
        out: Mutex::new(socket.try_clone()?),
    });
    let reader = TlsReader {
        shared: shared.clone(),
        socket,
        raw: vec![0; 1 << 16],
        plain,
        at: 0,
        closed,
        binding,
        ours: tls.identity.fingerprint(),
    };
    Ok(StreamChannel::new(reader, TlsWriter { shared }, timeout).with_binding(binding))
}

/// Runs the handshake to its end or `deadline`, one socket read at a time (rustls's
/// `complete_io` would keep reading past the deadline for a peer that trickles). On a
/// failure the alert rustls queued is sent, best effort.
fn drive_handshake(
    conn: &mut Connection,
    socket: &mut TcpStream,
    deadline: Instant,
) -> std::io::Result<()> {
    let left = || {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(std::io::Error::from(ErrorKind::TimedOut))
        } else {
            Ok(left)
        }
    };
    let flush = |conn: &mut Connection, socket: &mut TcpStream| -> std::io::Result<()> {
        while conn.wants_write() {
            socket.set_write_timeout(Some(left()?))?;
            conn.write_tls(socket)?;
        }
        Ok(())
    };
    while conn.is_handshaking() {
        flush(conn, socket)?;
        if !conn.is_handshaking() {
            break;
        }
        socket.set_read_timeout(Some(left()?))?;
        if conn.read_tls(socket)? == 0 {
            return Err(ErrorKind::UnexpectedEof.into());
        }
        if let Err(e) = conn.process_new_packets() {
            let _ = flush(conn, socket);
            return Err(std::io::Error::new(ErrorKind::InvalidData, e));
        }
    }
    flush(conn, socket)
}

/// A one-line account of a failed TLS handshake.
fn handshake_error(
    e: std::io::Error,
    check: &PeerCheck,
    ours: &Identity,
    timeout: Duration,
) -> Error {
    if let Some(why) = lock(&check.seen).refusal.take() {
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
fn describe(e: &rustls::Error, ours: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{tcp_channel, Channel};
    use std::net::TcpListener;
    use std::sync::mpsc;

    fn identity(days: u32) -> (Identity, [u8; 32]) {
        let g = Identity::generate(days).unwrap();
        let id = Identity::from_pem(g.cert_pem.as_bytes(), g.key_pem.as_bytes()).unwrap();
        (id, parse_fingerprint(&g.fingerprint).unwrap())
    }

    /// `identity`, trusting only the certificate with fingerprint `pin`.
    fn pinned(identity: Identity, pin: [u8; 32]) -> Tls {
        Tls {
            identity,
            trust: Trust::Pinned(vec![pin]),
        }
    }

    /// Runs a client (`a`) and a server (`b`) over loopback; returns both results.
    fn pair(a: Tls, b: Tls) -> (Result<TlsChannel>, Result<TlsChannel>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let t = Duration::from_secs(5);
        std::thread::scope(|s| {
            let server = s.spawn(move || {
                let (socket, _) = listener.accept().unwrap();
                tls_channel(socket, Side::Server, &b, t, t)
            });
            let socket = TcpStream::connect(addr).unwrap();
            let client = tls_channel(socket, Side::Client { host: "127.0.0.1" }, &a, t, t);
            (client, server.join().unwrap())
        })
    }

    #[test]
    fn pinned_peers_talk_full_duplex_over_one_bound_channel() {
        let ((a, fa), (b, fb)) = (identity(1), identity(1));
        let (ca, cb) = pair(pinned(a, fb), pinned(b, fa));
        let (mut ca, mut cb) = (ca.unwrap(), cb.unwrap());
        assert_eq!(ca.binding(), cb.binding());
        assert!(ca.binding().is_some());
        // Both send 8 MiB at once before reading: more than socket buffers hold, so this
        // only finishes if reading and writing proceed independently.
        let big: Vec<u8> = (0..8 << 20).map(|i| (i % 251) as u8).collect();
        std::thread::scope(|s| {
            for chan in [&mut ca, &mut cb] {
                let big = &big;
                s.spawn(move || {
                    for _ in 0..4 {
                        chan.send(&big[..2 << 20]).unwrap();
                    }
                    let chan: &mut dyn Channel = chan;
                    for _ in 0..4 {
                        assert_eq!(chan.recv(4 << 20).unwrap(), &big[..2 << 20]);
                    }
                });
            }
        });
    }

    #[test]
    fn a_wrong_pin_names_the_certificate_seen_on_both_sides() {
        let ((a, fa), (b, _), (_, other)) = (identity(1), identity(1), identity(1));
        let seen_b = fingerprint(&b.chain[0]);
        let (ca, cb) = pair(pinned(a, other), pinned(b, fa));
        let e = ca.err().unwrap().to_string();
        assert!(e.contains(&seen_b) && e.contains("not the pinned"), "{e}");
        assert!(cb.is_err());
    }

    #[test]
    fn the_server_refusing_the_client_is_reported_to_the_client() {
        let ((a, fa), (b, fb), (_, other)) = (identity(1), identity(1), identity(1));
        let seen_a = fingerprint(&a.chain[0]);
        let (ca, cb) = pair(pinned(a, fb), pinned(b, other));
        let e = cb.err().unwrap().to_string();
        assert!(e.contains(&seen_a), "the server names what it saw: {e}");
        // The client finished its half of the handshake; the refusal reaches it as an
        // alert on its first read.
        let e = match ca {
            Err(e) => e,
            Ok(mut ca) => (&mut ca as &mut dyn Channel).recv(16).unwrap_err(),
        }
        .to_string();
        assert!(
            e.contains("refused our certificate") && e.contains(&seen_a),
            "{e}"
        );
        let _ = fa;
    }

    #[test]
    fn an_expired_certificate_is_refused_even_when_pinned() {
        let ((a, fa), (b, fb)) = (identity(0), identity(1));
        std::thread::sleep(Duration::from_millis(1100));
        let (ca, cb) = pair(pinned(a, fb), pinned(b, fa));
        let e = cb.err().unwrap().to_string();
        assert!(e.to_lowercase().contains("expired"), "{e}");
        drop(ca);
    }

    #[test]
    fn a_plaintext_peer_is_not_taken_for_tls() {
        let (a, _) = identity(1);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let t = Duration::from_secs(5);
        std::thread::scope(|s| {
            s.spawn(move || {
                let (socket, _) = listener.accept().unwrap();
                let mut plain = tcp_channel(socket, t).unwrap();
                let _ = plain.send(b"VENN/PSI hello in the clear");
                std::thread::sleep(Duration::from_millis(200));
            });
            let socket = TcpStream::connect(addr).unwrap();
            let tls = pinned(a, [0; 32]);
            let e = tls_channel(socket, Side::Client { host: "x" }, &tls, t, t)
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains("does not speak TLS"), "{e}");
        });
    }

    #[test]
    fn fingerprints_parse_as_users_write_them() {
        let fp = "ab".repeat(32);
        let want = [0xab; 32];
        assert_eq!(parse_fingerprint(&fp).unwrap(), want);
        assert_eq!(
            parse_fingerprint(&format!("SHA256:{}", fp.to_uppercase())).unwrap(),
            want
        );
        let colons: Vec<&str> = (0..32).map(|_| "AB").collect();
        assert_eq!(parse_fingerprint(&colons.join(":")).unwrap(), want);
        assert!(parse_fingerprint(&fp[..62]).is_err());
        assert!(parse_fingerprint(&"zz".repeat(32)).is_err());
    }

    fn raw_client(id: &Identity, pin: [u8; 32]) -> ClientConnection {
        let check = Arc::new(PeerCheck::new(Trust::Pinned(vec![pin])));
        let mut config = ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .dangerous()
            .with_custom_certificate_verifier(check)
            .with_client_auth_cert(id.chain.clone(), id.key.clone_key())
            .unwrap();
        config.resumption = rustls::client::Resumption::disabled();
        ClientConnection::new(Arc::new(config), ServerName::try_from("venn").unwrap()).unwrap()
    }

    /// A raw client connected to `addr` with its handshake done (tests that then send
    /// records by hand).
    fn handshaken(
        addr: std::net::SocketAddr,
        id: &Identity,
        pin: [u8; 32],
    ) -> (TcpStream, ClientConnection) {
        let mut sock = TcpStream::connect(addr).unwrap();
        let mut conn = raw_client(id, pin);
        while conn.is_handshaking() {
            conn.complete_io(&mut sock).unwrap();
        }
        (sock, conn)
    }

    /// The TLS records `conn` has queued, as bytes.
    fn queued_records(conn: &mut ClientConnection) -> Vec<u8> {
        let mut out = Vec::new();
        while conn.wants_write() {
            conn.write_tls(&mut out).unwrap();
        }
        out
    }

    /// What the server's first receive gave, and how long it took.
    type Received = mpsc::Receiver<(std::result::Result<Vec<u8>, String>, Duration)>;

    /// Starts a venn TLS server; returns its address and what its first receive gives.
    fn server(b: Identity, fa: [u8; 32], t: Duration) -> (std::net::SocketAddr, Received) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let (socket, _) = listener.accept().unwrap();
            let tls = pinned(b, fa);
            let mut chan = tls_channel(socket, Side::Server, &tls, t, t).unwrap();
            let start = Instant::now();
            let r = (&mut chan as &mut dyn Channel)
                .recv(64)
                .map_err(|e| e.to_string());
            let _ = tx.send((r, start.elapsed()));
        });
        (addr, rx)
    }

    fn frame(payload: &[u8]) -> Vec<u8> {
        let mut f = (payload.len() as u32).to_le_bytes().to_vec();
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn data_sent_with_the_last_handshake_message_is_delivered() {
        let ((a, fa), (b, fb)) = (identity(1), identity(1));
        let (addr, rx) = server(b, fa, Duration::from_secs(2));
        let mut sock = TcpStream::connect(addr).unwrap();
        let mut conn = raw_client(&a, fb);
        // Queued before the handshake ends: leaves in the same write as the client's Finished.
        conn.writer().write_all(&frame(b"hello")).unwrap();
        while conn.is_handshaking() {
            conn.complete_io(&mut sock).unwrap();
        }
        while conn.wants_write() {
            conn.write_tls(&mut sock).unwrap();
        }
        let (r, _) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(r.unwrap(), b"hello");
    }

    #[test]
    fn bytes_after_close_notify_do_not_hang_the_reader() {
        let ((a, fa), (b, fb)) = (identity(1), identity(1));
        let (addr, rx) = server(b, fa, Duration::from_secs(1));
        let (mut sock, mut conn) = handshaken(addr, &a, fb);
        std::thread::sleep(Duration::from_millis(200));
        conn.send_close_notify();
        let mut out = queued_records(&mut conn);
        out.extend(std::iter::repeat_n(0u8, 10000));
        sock.write_all(&out).unwrap();
        let got = rx.recv_timeout(Duration::from_secs(6));
        assert!(
            got.is_ok(),
            "the server's recv never returned (spinning under the lock)"
        );
    }

    #[test]
    fn a_handshake_trickled_byte_by_byte_meets_its_deadline() {
        let (b, _) = identity(1);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let h = std::thread::spawn(move || {
            let (socket, _) = listener.accept().unwrap();
            let tls = pinned(b, [0; 32]);
            let start = Instant::now();
            let r = tls_channel(
                socket,
                Side::Server,
                &tls,
                Duration::from_secs(1),
                Duration::from_secs(1),
            );
            (r.err().map(|e| e.to_string()), start.elapsed())
        });
        let mut sock = TcpStream::connect(addr).unwrap();
        sock.write_all(&[0x16, 3, 1, 1, 0]).unwrap();
        for _ in 0..8 {
            std::thread::sleep(Duration::from_millis(600));
            if sock.write_all(&[0]).is_err() {
                break; // the server gave up, as it should
            }
        }
        drop(sock);
        let (e, took) = h.join().unwrap();
        assert!(e.is_some());
        assert!(took < Duration::from_secs(2), "took {took:?}");
    }

    #[test]
    fn a_record_trickled_byte_by_byte_meets_the_message_deadline() {
        let ((a, fa), (b, fb)) = (identity(1), identity(1));
        let (addr, rx) = server(b, fa, Duration::from_secs(1));
        let (mut sock, mut conn) = handshaken(addr, &a, fb);
        conn.writer().write_all(&frame(b"late")).unwrap();
        for byte in queued_records(&mut conn) {
            std::thread::sleep(Duration::from_millis(300));
            if sock.write_all(&[byte]).is_err() {
                break; // the server gave up, as it should
            }
        }
        let (_, took) = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        assert!(took < Duration::from_secs(2), "took {took:?}");
    }

    #[test]
    fn names_in_a_refused_certificate_are_escaped() {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let leaf = |name: &str| {
            let key = rcgen::KeyPair::generate().unwrap();
            let cert = rcgen::CertificateParams::new(vec![name.to_string()])
                .unwrap()
                .signed_by(&key, &issuer)
                .unwrap();
            Identity::from_pem(cert.pem().as_bytes(), key.serialize_pem().as_bytes()).unwrap()
        };
        let mut roots = RootCertStore::empty();
        roots.add(ca_cert.der().clone()).unwrap();
        let trust = Trust::Ca(Arc::new(roots));
        let (a, b) = (leaf("localhost"), leaf("evil\x1b[2J\x1b]0;pwned\x07"));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let t = Duration::from_secs(3);
        let trust2 = trust.clone();
        std::thread::spawn(move || {
            let (socket, _) = listener.accept().unwrap();
            let _ = tls_channel(
                socket,
                Side::Server,
                &Tls {
                    identity: b,
                    trust: trust2,
                },
                t,
                t,
            );
        });
        let socket = TcpStream::connect(addr).unwrap();
        let e = tls_channel(
            socket,
            Side::Client { host: "localhost" },
            &Tls { identity: a, trust },
            t,
            t,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(!e.contains('\x1b'), "raw escape in error: {e:?}");
    }
}
