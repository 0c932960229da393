//! Opening a TLS channel on a connected socket: the handshake within its deadline, then
//! the channel; and how a listener tells a ClientHello from a plaintext peer.

use super::config::{client_config, server_config, server_name};
use super::duplex::{self, TlsChannel};
use super::failure::handshake_error;
use super::verify::PeerCheck;
use super::{lock, tls_error, Tls};
use crate::{Error, Result};
use rustls::{ClientConnection, Connection, ServerConnection};
use std::io::ErrorKind;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
            let config = client_config(check.clone(), Some(&tls.ours))?;
            ClientConnection::new(Arc::new(config), server_name(&tls.trust, host)?)
                .map_err(tls_error)?
                .into()
        }
        Side::Server => {
            let config = server_config(&tls.ours, Some(check.clone()))?;
            ServerConnection::new(Arc::new(config))
                .map_err(tls_error)?
                .into()
        }
    };
    let mut socket = socket;
    if let Err(e) = drive_handshake(&mut conn, &mut socket, Instant::now() + handshake_within) {
        return Err(handshake_error(e, &check, &tls.ours, handshake_within));
    }
    // A refusal by our own check ends the handshake above; this catches any other path.
    if let Some(why) = lock(&check.refusal).take() {
        return Err(Error::Tls(why));
    }
    duplex::channel(conn, socket, tls.ours.fingerprint(), timeout)
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
