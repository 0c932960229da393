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
    let peer = stream.peer_addr().map(|a| format!("address {}", a.ip()));
    let chan = StreamChannel::new(reader, stream, timeout);
    Ok(match peer {
        Ok(peer) => chan.with_peer(peer),
        Err(_) => chan,
    })
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

/// A connection attempt that failed and will be retried: what a party waiting for its
/// peer shows (on a terminal), so that a wrong address or a closed port is seen at once
/// rather than after the whole timeout.
pub struct Retry<'a> {
    /// The address as the user gave it.
    pub name: &'a str,
    /// Why the last attempt failed.
    pub why: &'a str,
    /// How long we have been trying, of how long we will.
    pub elapsed: Duration,
    /// How long we will try before giving up.
    pub timeout: Duration,
}

impl std::fmt::Display for Retry<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "connecting to {} … {}, retrying ({} s of {} s)",
            self.name,
            self.why,
            self.elapsed.as_secs(),
            self.timeout.as_secs_f64()
        )
    }
}

/// Connects to one of `addrs` (what `name` resolved to, once, by [`resolve`], so what was
/// checked is what is connected to), retrying until `timeout` has passed: soon at first
/// (a peer about to listen), then every 50 ms; `retrying` hears of each failed round. At
/// the timeout the error names `name` and why the last attempt failed.
pub fn tcp_connect(
    name: &str,
    addrs: &[SocketAddr],
    timeout: Duration,
    retrying: &mut dyn FnMut(&Retry),
) -> Result<TcpStream> {
    let start = Instant::now();
    let deadline = start + timeout;
    let mut pause = Duration::from_millis(5);
    loop {
        let mut last = None;
        for a in addrs {
            let left = deadline.saturating_duration_since(Instant::now());
            match TcpStream::connect_timeout(a, left.max(Duration::from_millis(10))) {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    return Ok(stream);
                }
                Err(e) => last = Some(e),
            }
        }
        let why = last.as_ref().map_or("no address".into(), connect_error);
        if Instant::now() >= deadline {
            return Err(Error::Address(format!(
                "timed out after {} s connecting to {name}: {why}",
                timeout.as_secs_f64()
            )));
        }
        retrying(&Retry {
            name,
            why: &why,
            elapsed: start.elapsed(),
            timeout,
        });
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// A failed connect as a user reads it: the system's words ("connection refused", "no
/// route to host"), without the error number.
fn connect_error(e: &std::io::Error) -> String {
    let text = e.to_string();
    let text = text.split(" (os error").next().unwrap_or(&text);
    let mut chars = text.chars();
    chars.next().map_or(String::new(), |c| {
        c.to_lowercase().chain(chars).collect::<String>()
    })
}

/// Binds a listening socket on `addrs`, what `name` resolved to (by [`resolve`]: what was
/// checked is what is bound).
pub fn tcp_bind(name: &str, addrs: &[SocketAddr]) -> Result<TcpListener> {
    TcpListener::bind(addrs).map_err(|e| Error::Address(format!("cannot listen on '{name}': {e}")))
}

/// Takes one peer from `listener` that passes `screen`, one connection at a time: one that
/// connects within `timeout`. A connection that came has [`PROBE`] to send its opening
/// however near the deadline it came (the screen's `take` bounds the rest): a caller that
/// polls with short timeouts (the dealer, between looks at its waiting parties) would
/// otherwise drop a peer that connected late in a poll and was slow to speak — on a loaded
/// machine, a party refused as "sent nothing".
pub fn tcp_accept<C>(listener: &TcpListener, timeout: Duration, screen: Screen<C>) -> Result<C> {
    listener.set_nonblocking(true)?;
    let deadline = Instant::now() + timeout;
    loop {
        if Instant::now() >= deadline {
            return Err(Error::Timeout(timeout));
        }
        match listener.accept() {
            Ok((stream, from)) => match tcp_screen(stream, screen.len, screen.take) {
                Ok(chan) => return Ok(chan),
                Err(refused) => (screen.reject)(from, &refused),
            },
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

/// Makes a channel of one accepted connection, as [`tcp_accept`] does: its first `len`
/// bytes peeked within [`PROBE`], then `take`; or why not. A server that screens each
/// connection on a thread of its own calls it there, so that a peer slow to speak holds
/// up nobody else.
pub fn tcp_screen<C>(
    stream: TcpStream,
    len: usize,
    take: &mut Take<'_, C>,
) -> std::result::Result<C, String> {
    let first = (stream.set_nonblocking(false))
        .and_then(|()| stream.set_nodelay(true))
        .and_then(|()| opening(&stream, len))
        .map_err(|e| e.to_string())?;
    match first.len() {
        0 => Err("closed or sent nothing".into()),
        n if n < len => Err("sent too little before going quiet".into()),
        _ => take(stream, &first),
    }
}

/// Up to `len` opening bytes of `stream`, peeked: whatever arrived before the peer
/// closed, or [`PROBE`] passed.
fn opening(stream: &TcpStream, len: usize) -> std::io::Result<Vec<u8>> {
    let until = Instant::now() + PROBE;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Each failed round is told (what a terminal's status line shows), and the error at
    /// the timeout names the address and why the last attempt failed.
    #[test]
    fn a_refused_connection_is_told_and_named() {
        let closed = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let name = closed.to_string();
        let mut told = Vec::new();
        let e = tcp_connect(&name, &[closed], Duration::from_millis(300), &mut |r| {
            told.push(r.to_string())
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("timed out after 0.3 s connecting to {name}: connection refused")
        );
        assert!(told.len() > 1, "{told:?}");
        assert_eq!(
            told[0],
            format!("connecting to {name} … connection refused, retrying (0 s of 0.3 s)")
        );
    }

    /// A peer that connects late in a short accept and is slow to send its opening is
    /// taken, not dropped as silent: its opening has [`PROBE`] from when it connected, not
    /// what was left of the accept's timeout (the dealer polls with 200 ms accepts, and
    /// dropped a party so on a loaded machine).
    #[test]
    fn a_peer_that_connects_late_in_a_short_accept_and_speaks_slowly_is_taken() {
        use std::io::Write;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let peer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            let mut stream = TcpStream::connect(addr).unwrap();
            std::thread::sleep(Duration::from_millis(400));
            stream.write_all(b"hello").unwrap();
            stream
        });
        let mut take = |_: TcpStream, first: &[u8]| Ok::<_, String>(first.to_vec());
        let mut reject = |from: SocketAddr, why: &str| panic!("refused {from}: {why}");
        let screen = Screen {
            len: 5,
            take: &mut take,
            reject: &mut reject,
        };
        let opening = tcp_accept(&listener, Duration::from_millis(200), screen).unwrap();
        assert_eq!(opening, b"hello");
        drop(peer.join().unwrap());
    }
}
