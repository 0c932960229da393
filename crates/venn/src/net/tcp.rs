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

/// The longest a listener waits for one connection's opening bytes (and its TLS
/// handshake).
pub const PROBE: Duration = Duration::from_secs(5);

/// Makes a channel of an accepted connection given its opening bytes, or says why not.
pub type Take<'a, C> = dyn FnMut(TcpStream, &[u8]) -> std::result::Result<C, String> + 'a;

/// What a listener takes: each connection's first `len` bytes are peeked (not consumed)
/// and `take` either makes the connection a channel or says why not; refused connections
/// are reported to `reject`, dropped, and the listener waits on.
pub struct Screen<'a, C> {
    /// How many opening bytes to look at.
    pub len: usize,
    /// Makes a channel of a connection with these opening bytes, or says why not.
    pub take: &'a mut Take<'a, C>,
    /// Told of each refused connection.
    pub reject: &'a mut dyn FnMut(SocketAddr, &str),
}

/// A framed channel over a connected socket, each message within `timeout`.
pub fn tcp_channel(stream: TcpStream, timeout: Duration) -> Result<TcpChannel> {
    stream.set_nodelay(true)?;
    stream.set_write_timeout(Some(timeout))?;
    let reader = stream.try_clone()?;
    Ok(StreamChannel::new(reader, stream, timeout))
}

/// The addresses `addr` (`host:port`) resolves to.
pub fn resolve(addr: &str) -> Result<Vec<SocketAddr>> {
    let all: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| Error::Address(format!("cannot resolve '{addr}': {e}")))?
        .collect();
    if all.is_empty() {
        return Err(Error::Address(format!("'{addr}' resolves to no address")));
    }
    Ok(all)
}

/// Connects to one of `addrs` (resolved once, by [`resolve`], so what was checked is what
/// is connected to), retrying until `timeout` has passed: soon at first (a peer about to
/// listen), then every 50 ms.
pub fn tcp_connect(addrs: &[SocketAddr], timeout: Duration) -> Result<TcpStream> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(5);
    loop {
        let attempt = addrs.iter().find_map(|a| {
            let left = deadline.saturating_duration_since(Instant::now());
            TcpStream::connect_timeout(a, left.max(Duration::from_millis(10))).ok()
        });
        if let Some(stream) = attempt {
            stream.set_nodelay(true)?;
            return Ok(stream);
        }
        if Instant::now() >= deadline {
            return Err(Error::Timeout(timeout));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// Binds a listening socket on `addrs`, what `name` resolved to (by [`resolve`]: what was
/// checked is what is bound).
pub fn tcp_bind(name: &str, addrs: &[SocketAddr]) -> Result<TcpListener> {
    TcpListener::bind(addrs).map_err(|e| Error::Address(format!("cannot listen on '{name}': {e}")))
}

/// Takes one peer from `listener` that passes `screen` within `timeout`, one connection
/// at a time.
pub fn tcp_accept<C>(listener: &TcpListener, timeout: Duration, screen: Screen<C>) -> Result<C> {
    listener.set_nonblocking(true)?;
    let deadline = Instant::now() + timeout;
    loop {
        if Instant::now() >= deadline {
            return Err(Error::Timeout(timeout));
        }
        match listener.accept() {
            Ok((stream, from)) => {
                stream.set_nonblocking(false)?;
                stream.set_nodelay(true)?;
                let refused = match opening(&stream, screen.len, deadline) {
                    Ok(first) if first.is_empty() => "closed or sent nothing".to_string(),
                    Ok(first) if first.len() < screen.len => {
                        "sent too little before going quiet".to_string()
                    }
                    Ok(first) => match (screen.take)(stream, &first) {
                        Ok(chan) => return Ok(chan),
                        Err(why) => why,
                    },
                    Err(e) => e.to_string(),
                };
                (screen.reject)(from, &refused);
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
