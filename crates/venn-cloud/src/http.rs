//! The blocking HTTP/1.1 client that workers and clients share: one connection per request
//! (`Connection: close`), over TLS 1.3 for an `https://` service (its certificate pinned
//! or chained to a CA, as `venn`'s links check a peer), answers bounded, errors read back
//! into the service's [`Error`]s.

use crate::error::{Error, Result};
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};
use venn::net::tls::{api_client_config, Trust};

/// The longest answer read: a three-party task's values or a result of 2^26 positions.
const MAX_ANSWER: u64 = 1 << 28;

/// The longest status line and headers of an answer.
const MAX_HEAD: usize = 1 << 16;

/// Where a service is and how its certificate is checked.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// `https://HOST:PORT` or `http://HOST:PORT`.
    pub url: String,
    /// How an `https://` service's certificate is checked (none for `http://`).
    pub trust: Option<Trust>,
}

impl Endpoint {
    /// A plain-HTTP service.
    pub fn plain(url: &str) -> Endpoint {
        Endpoint {
            url: url.to_owned(),
            trust: None,
        }
    }
}

/// A client of one service.
pub struct Http {
    base: String,
    /// `host:port`, for connecting and the Host header.
    authority: String,
    tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
    timeout: Duration,
}

impl Http {
    /// A client of the service at `endpoint`. Every call gives up after `timeout`, all
    /// of it (connecting, sending, the answer) counted.
    pub fn new(endpoint: &Endpoint, timeout: Duration) -> Result<Http> {
        let (base, trust) = (endpoint.url.trim_end_matches('/'), endpoint.trust.as_ref());
        let bad = || {
            Error::BadRequest(format!(
                "'{base}' is not a service address (https://HOST:PORT or http://HOST:PORT)"
            ))
        };
        let (tls, authority) = match (base.split_once("://"), trust) {
            (Some(("https", authority)), Some(trust)) => {
                let host = host_of(authority).ok_or_else(bad)?;
                (Some(api_client_config(trust, host)?), authority)
            }
            (Some(("https", _)), None) => {
                return Err(Error::BadRequest(format!(
                    "'{base}' is HTTPS: give the service's certificate fingerprint, or its CA"
                )))
            }
            (Some(("http", authority)), None) => (None, authority),
            (Some(("http", _)), Some(_)) => {
                return Err(Error::BadRequest(format!(
                    "'{base}' is plain HTTP, but a way to check a certificate was given: \
                     the service's address is https://…"
                )))
            }
            _ => return Err(bad()),
        };
        if authority.is_empty() || authority.contains(['/', '?', '#', '@', ' ']) {
            return Err(bad());
        }
        Ok(Http {
            base: base.to_owned(),
            authority: authority.to_owned(),
            tls,
            timeout,
        })
    }

    /// Sends a request; returns the status and body of a successful answer (2xx), or the
    /// error the service answered with.
    pub fn call(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: &[u8],
    ) -> Result<(u16, Vec<u8>)> {
        let transport = |e: std::io::Error| Error::Transport(format!("{} {path}: {e}", self.base));
        let (status, bytes) = self
            .exchange(method, path, headers, body)
            .map_err(transport)?;
        if (200..300).contains(&status) {
            return Ok((status, bytes));
        }
        let text = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned))
            .unwrap_or_else(|| String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into());
        Err(Error::from_answer(status, venn::peer_text(&text)))
    }

    /// One request on a new connection: the answer's status and body.
    fn exchange(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: &[u8],
    ) -> std::io::Result<(u16, Vec<u8>)> {
        let addr = std::net::ToSocketAddrs::to_socket_addrs(&self.authority)?
            .next()
            .ok_or_else(|| std::io::Error::other("the name has no address"))?;
        let deadline = Instant::now() + self.timeout;
        let tcp = TcpStream::connect_timeout(&addr, self.timeout)?;
        tcp.set_nodelay(true)?;
        let timer = tcp.try_clone()?;
        let tcp = Deadline {
            inner: tcp,
            timer,
            deadline,
        };
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\
             Content-Length: {}\r\n",
            self.authority,
            body.len()
        );
        for (name, value) in headers {
            if value.contains(['\r', '\n']) {
                return Err(std::io::Error::other("a header value with a line break"));
            }
            head += &format!("{name}: {value}\r\n");
        }
        head += "\r\n";
        match &self.tls {
            Some((config, name)) => {
                let conn = ClientConnection::new(config.clone(), name.clone())
                    .map_err(std::io::Error::other)?;
                exchange_on(StreamOwned::new(conn, tcp), &head, body)
            }
            None => exchange_on(tcp, &head, body),
        }
    }
}

/// A connection that fails once `deadline` has passed: every read and write may take only
/// what is left (a service that trickles its answer cannot hold a worker for ever).
struct Deadline {
    inner: TcpStream,
    /// The same socket, for its timeouts.
    timer: TcpStream,
    deadline: Instant,
}

impl Deadline {
    fn arm(&self, read: bool) -> std::io::Result<()> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        match read {
            true => self.timer.set_read_timeout(Some(left)),
            false => self.timer.set_write_timeout(Some(left)),
        }
    }
}

impl Read for Deadline {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.arm(true)?;
        self.inner.read(buf)
    }
}

impl Write for Deadline {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.arm(false)?;
        self.inner.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The host of `host:port` (an IPv6 address without its brackets).
fn host_of(authority: &str) -> Option<&str> {
    let (host, port) = authority.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    Some(host.trim_start_matches('[').trim_end_matches(']'))
}

/// Writes the request and reads the answer: its status and its body, framed by
/// Content-Length, chunked, or the end of the connection; at most [`MAX_ANSWER`] bytes.
fn exchange_on(
    mut stream: impl Read + Write,
    head: &str,
    body: &[u8],
) -> std::io::Result<(u16, Vec<u8>)> {
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()?;
    let mut r = BufReader::new(stream);
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
    let read_line = |r: &mut BufReader<_>, left: &mut usize| -> std::io::Result<String> {
        let mut line = Vec::new();
        let n = r.by_ref().take(*left as u64).read_until(b'\n', &mut line)?;
        *left -= n;
        if !line.ends_with(b"\n") {
            return Err(bad("an answer's head cut short or too long"));
        }
        String::from_utf8(line)
            .map(|l| l.trim_end().to_owned())
            .map_err(|_| bad("an answer's head not in UTF-8"))
    };
    let mut left = MAX_HEAD;
    let status_line = read_line(&mut r, &mut left)?;
    let status: u16 = status_line
        .strip_prefix("HTTP/1.1 ")
        .and_then(|s| s.get(..3))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("not an HTTP/1.1 answer"))?;
    let (mut length, mut chunked) = (None, false);
    loop {
        let line = read_line(&mut r, &mut left)?;
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').ok_or_else(|| bad("a bad header"))?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(
                value
                    .parse::<u64>()
                    .map_err(|_| bad("a bad Content-Length"))?,
            );
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        }
    }
    let too_long = || bad("an answer over the limit");
    let mut out = Vec::new();
    if chunked {
        loop {
            let mut left = MAX_HEAD;
            let size = read_line(&mut r, &mut left)?;
            let size = size.split(';').next().unwrap_or("");
            let size = u64::from_str_radix(size.trim(), 16).map_err(|_| bad("a bad chunk"))?;
            if out.len() as u64 + size > MAX_ANSWER {
                return Err(too_long());
            }
            if size == 0 {
                break;
            }
            let at = out.len();
            out.resize(at + size as usize, 0);
            r.read_exact(&mut out[at..])?;
            let mut crlf = [0u8; 2];
            r.read_exact(&mut crlf)?;
        }
    } else if let Some(length) = length {
        if length > MAX_ANSWER {
            return Err(too_long());
        }
        out.resize(length as usize, 0);
        r.read_exact(&mut out)?;
    } else {
        r.take(MAX_ANSWER + 1).read_to_end(&mut out)?;
        if out.len() as u64 > MAX_ANSWER {
            return Err(too_long());
        }
    }
    Ok((status, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection that answers with `answer` and keeps what was written.
    struct Canned {
        answer: std::io::Cursor<Vec<u8>>,
        written: Vec<u8>,
    }

    impl Read for Canned {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.answer.read(buf)
        }
    }

    impl Write for Canned {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.written.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn answer(raw: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
        let c = Canned {
            answer: std::io::Cursor::new(raw.to_vec()),
            written: Vec::new(),
        };
        exchange_on(c, "GET / HTTP/1.1\r\n\r\n", b"")
    }

    #[test]
    fn answers_are_framed_every_way_and_bounded() {
        let plain = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello and more";
        assert_eq!(answer(plain).unwrap(), (200, b"hello".to_vec()));
        let chunked =
            b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x\r\nde\r\n0\r\n\r\n";
        assert_eq!(answer(chunked).unwrap(), (404, b"abcde".to_vec()));
        let closed = b"HTTP/1.1 204 No Content\r\n\r\nrest";
        assert_eq!(answer(closed).unwrap(), (204, b"rest".to_vec()));
        for bad in [
            &b"HTTP/1.0 200 OK\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\nshort",
            b"HTTP/1.1 200 OK\r\ncontent-length: 999999999999\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nfffffffffff\r\n",
            b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 1",
        ] {
            assert!(answer(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        let mut huge_head = b"HTTP/1.1 200 OK\r\nx: ".to_vec();
        huge_head.extend(vec![b'a'; MAX_HEAD]);
        assert!(answer(&huge_head).is_err(), "a head over the limit");
    }

    /// A service that answers a byte at a time cannot hold a call past its deadline.
    #[test]
    fn a_trickling_answer_is_cut_at_the_deadline() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            for b in b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n"
                .iter()
                .cycle()
            {
                if s.write_all(&[*b]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let http = Http::new(&Endpoint::plain(&url), Duration::from_millis(500)).unwrap();
        let start = Instant::now();
        let err = http.call("GET", "/", &[], b"").unwrap_err();
        assert!(matches!(err, Error::Transport(_)), "{err}");
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn addresses_and_trust_must_agree() {
        let t = Duration::from_secs(1);
        let pin = Some(Trust::Pinned(vec![[0; 32]]));
        let at = |url: &str, trust: &Option<Trust>| {
            Http::new(
                &Endpoint {
                    url: url.into(),
                    trust: trust.clone(),
                },
                t,
            )
        };
        assert!(at("http://127.0.0.1:80", &None).is_ok());
        assert!(at("https://127.0.0.1:443/", &pin).is_ok());
        assert!(at("https://[::1]:443", &pin).is_ok());
        assert!(at("https://127.0.0.1:443", &None).is_err(), "TLS unchecked");
        assert!(
            at("http://127.0.0.1:80", &pin).is_err(),
            "a pin for plain HTTP"
        );
        assert!(at("ftp://127.0.0.1:21", &None).is_err());
        assert!(at("http://127.0.0.1:80/v1?x", &None).is_err());
        assert!(at("https://127.0.0.1", &pin).is_err(), "no port");
    }
}
