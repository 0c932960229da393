//! TCP endpoints. Either party may listen or connect; connecting retries until the timeout
//! so the two processes can be started in any order.

use super::StreamChannel;
use crate::{Error, Result};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// A framed channel over TCP.
pub type TcpChannel = StreamChannel<TcpStream>;

fn wrap(stream: TcpStream, timeout: Duration) -> Result<TcpChannel> {
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(timeout))?;
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

/// Listens on `addr` and accepts one peer within `timeout`. `on_bound` is told the bound
/// address (useful with port 0).
pub fn tcp_listen(
    addr: &str,
    timeout: Duration,
    on_bound: impl FnOnce(std::net::SocketAddr),
) -> Result<TcpChannel> {
    let listener = TcpListener::bind(addr)
        .map_err(|e| Error::Address(format!("cannot listen on '{addr}': {e}")))?;
    on_bound(listener.local_addr()?);
    listener.set_nonblocking(true)?;
    let deadline = Instant::now() + timeout;
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false)?;
                return wrap(stream, timeout);
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
