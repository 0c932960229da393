//! TCP endpoints. Either party may listen or connect; connecting retries until the timeout
//! so the two processes can be started in any order. A listener takes the first
//! connection whose opening bytes look like a peer's, so a port scan or a stray HTTP probe
//! before the real peer arrives is logged and dropped instead of ending the run.

use super::StreamChannel;
use crate::{Error, Result};
use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// A framed channel over TCP.
pub type TcpChannel = StreamChannel<TcpStream>;

/// The longest a listener waits for one connection's opening bytes.
const PROBE: Duration = Duration::from_secs(5);

/// What a listener accepts: connections whose first `len` bytes (peeked, not consumed)
/// `accept` approves. Others are reported to `reject` with why, and dropped.
pub struct Screen<'a> {
    /// How many opening bytes to look at.
    pub len: usize,
    /// Whether they look like a peer.
    pub accept: &'a dyn Fn(&[u8]) -> bool,
    /// Told of each rejected connection.
    pub reject: &'a mut dyn FnMut(SocketAddr, &str),
}

fn wrap(stream: TcpStream, timeout: Duration) -> Result<TcpChannel> {
    stream.set_nodelay(true)?;
    stream.set_write_timeout(Some(timeout))?;
    let reader = stream.try_clone()?;
    Ok(StreamChannel::new(reader, stream, timeout))
}

/// Connects to `addr`, retrying every 100 ms until `timeout` has passed.
pub fn tcp_connect(addr: &str, timeout: Duration) -> Result<TcpChannel> {
    let deadline = Instant::now() + timeout;
    loop {
        let attempt = addr
            .to_socket_addrs()
            .map_err(|e| Error::Address(format!("cannot resolve '{addr}': {e}")))?
            .find_map(|a| {
                let left = deadline.saturating_duration_since(Instant::now());
                TcpStream::connect_timeout(&a, left.max(Duration::from_millis(10))).ok()
            });
        if let Some(stream) = attempt {
            return wrap(stream, timeout);
        }
        if Instant::now() >= deadline {
            return Err(Error::Timeout(timeout));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Listens on `addr` and accepts one peer that passes `screen` within `timeout`, one
/// connection at a time. `on_bound` is told the bound address (useful with port 0).
pub fn tcp_listen(
    addr: &str,
    timeout: Duration,
    on_bound: impl FnOnce(SocketAddr),
    screen: Screen,
) -> Result<TcpChannel> {
    let listener = TcpListener::bind(addr)
        .map_err(|e| Error::Address(format!("cannot listen on '{addr}': {e}")))?;
    on_bound(listener.local_addr()?);
    listener.set_nonblocking(true)?;
    let deadline = Instant::now() + timeout;
    loop {
        if Instant::now() >= deadline {
            return Err(Error::Timeout(timeout));
        }
        match listener.accept() {
            Ok((stream, from)) => {
                stream.set_nonblocking(false)?;
                match opening(&stream, screen.len, deadline) {
                    Ok(first) if (screen.accept)(&first) => return wrap(stream, timeout),
                    Ok(first) if first.is_empty() => {
                        (screen.reject)(from, "closed or sent nothing")
                    }
                    Ok(first) if first.len() < screen.len => {
                        (screen.reject)(from, "sent too little before going quiet")
                    }
                    Ok(_) => (screen.reject)(from, "not a venn peer"),
                    Err(e) => (screen.reject)(from, &e.to_string()),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(Error::Timeout(timeout));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Up to `len` opening bytes of `stream`, peeked: whatever arrived before the peer
/// closed, or [`PROBE`] (or the `deadline`) passed.
fn opening(stream: &TcpStream, len: usize, deadline: Instant) -> std::io::Result<Vec<u8>> {
    let until = deadline.min(Instant::now() + PROBE);
    let mut buf = vec![0; len];
    let mut seen = 0;
    while seen < len {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        stream.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
        match stream.peek(&mut buf) {
            Ok(0) => break,
            Ok(n) if n < len && n == seen => std::thread::sleep(Duration::from_millis(5)),
            Ok(n) => seen = n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => break,
            Err(e) => return Err(e),
        }
    }
    buf.truncate(seen);
    Ok(buf)
}
