//! An established TLS connection as a channel's two halves, reading and writing at once
//! over one shared record layer (the module's "Full duplex"), bound to its session.

use super::failure::describe;
use super::{lock, tls_error};
use crate::net::{StreamChannel, TimedRead, TimedWrite};
use crate::Result;
use rustls::Connection;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The label of the exported keying material that binds a session to its TLS channel.
const BINDING_LABEL: &[u8] = b"EXPORTER-venn-session-binding";

/// Makes a channel of `conn`, its handshake done on `socket`, whose messages each have
/// `timeout`; `ours` is our certificate's fingerprint, for error messages.
pub(super) fn channel(
    mut conn: Connection,
    socket: TcpStream,
    ours: String,
    timeout: Duration,
) -> Result<TlsChannel> {
    // The peer's first application data may have come with its last handshake message.
    let mut plain = Vec::new();
    let closed = drain(&mut conn, &mut plain).map_err(tls_error)?;
    let peer = (conn.peer_certificates())
        .and_then(|chain| chain.first())
        .map(|cert| super::fingerprint::fingerprint(cert));
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
        ours,
    };
    let chan = StreamChannel::new(reader, TlsWriter { shared }, timeout).with_binding(binding);
    Ok(match peer {
        Some(peer) => chan.with_peer(format!("certificate {peer}")),
        None => chan,
    })
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

impl TimedRead for TlsReader {
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

impl TimedWrite for TlsWriter {
    fn set_write_limit(&mut self, limit: Duration) -> std::io::Result<()> {
        lock(&self.shared.out).set_write_timeout(Some(limit.max(Duration::from_millis(1))))
    }
}

/// A framed channel over TLS.
pub type TlsChannel = StreamChannel<TlsReader>;
