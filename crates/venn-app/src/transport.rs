//! How a party reaches its peer: TCP, with TLS 1.3 and mutual authentication unless both
//! run on this machine. The secure default: a party whose peer may be on another machine
//! (it connects to, or listens on, an address that is not loopback) refuses to run
//! without TLS unless `--plaintext` is given, and then warns.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use venn::net::tls::{
    looks_like_tls, parse_fingerprint, tls_channel, CertifiedKey, Side, Tls, Trust, TLS_PREFIX,
};
use venn::net::{
    resolve, tcp_accept, tcp_bind, tcp_channel, tcp_connect, tcp_screen, Channel, Retry, Screen,
    Shaping, StreamChannel, TimedRead, PROBE,
};
use venn::session::{looks_like_hello, HELLO_PREFIX};
use venn::{Error, Result};

/// The TLS options of a party, as given (with the `clap` feature, the `venn` tool's flags
/// and their help).
#[derive(Clone, Debug, Default)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct TlsArgs {
    /// This party's certificate (PEM), e.g. made by `venn keygen`. Turns on TLS.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE", requires = "tls_key"))]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "FILE", requires = "tls_cert")
    )]
    pub tls_key: Option<PathBuf>,
    /// Trust a peer whose certificate chains to a CA certificate in FILE (PEM); when
    /// connecting, the certificate must also name the host connected to.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "FILE", requires = "tls_cert")
    )]
    pub tls_ca: Option<PathBuf>,
    /// Trust only the peer certificate with this SHA-256 fingerprint (what `venn keygen`
    /// printed on the peer's machine); for `venn dealer`, the two parties' (comma-separated).
    #[cfg_attr(
        feature = "clap",
        arg(
            long,
            value_name = "SHA256",
            value_delimiter = ',',
            requires = "tls_cert",
            conflicts_with = "tls_ca"
        )
    )]
    pub peer_fingerprint: Vec<String>,
    /// Run without TLS although the peer may be on another machine: anyone on the path can
    /// then read the traffic and play either party. Not needed on loopback.
    #[cfg_attr(feature = "clap", arg(long, conflicts_with = "tls_cert"))]
    pub plaintext: bool,
}

/// A party's transport: TLS settings, if any.
#[derive(Clone, Debug)]
pub struct Transport {
    tls: Option<Arc<Tls>>,
    plaintext: bool,
    /// An emulated network for what we send (benchmarks only).
    shaping: Option<Shaping>,
}

impl TlsArgs {
    /// Loads the certificate, key and trust.
    pub fn load(self) -> Result<Transport> {
        let tls = match (self.tls_cert, self.tls_key) {
            (Some(cert), Some(key)) => {
                let trust = match (self.tls_ca, &self.peer_fingerprint[..]) {
                    (Some(ca), []) => Trust::ca_file(&ca)?,
                    (None, [_, ..]) => Trust::Pinned(
                        (self.peer_fingerprint.iter())
                            .map(|fp| parse_fingerprint(fp))
                            .collect::<Result<_>>()?,
                    ),
                    _ => {
                        return Err(Error::Usage(
                            "--tls-cert needs a way to check the peer: --peer-fingerprint \
                             SHA256 or --tls-ca FILE"
                                .into(),
                        ))
                    }
                };
                Some(Arc::new(Tls {
                    ours: CertifiedKey::load(&cert, &key)?,
                    trust,
                }))
            }
            _ => None,
        };
        Ok(Transport {
            tls,
            plaintext: self.plaintext,
            shaping: None,
        })
    }
}

impl Transport {
    /// No TLS: for a benchmark's loopback links.
    pub fn loopback() -> Self {
        Transport {
            tls: None,
            plaintext: false,
            shaping: None,
        }
    }

    /// TLS with the identity of `role` in a directory made by `venn bench --tls`, pinning
    /// the other role's certificate.
    pub fn bench_tls(dir: &std::path::Path, role: venn::session::Role) -> Result<Self> {
        let file =
            |role: venn::session::Role, ext: &str| dir.join(format!("{}.{ext}", role.name()));
        let fp = std::fs::read_to_string(file(role.other(), "fp"))?;
        Ok(Transport {
            tls: Some(Arc::new(Tls {
                ours: CertifiedKey::load(&file(role, "crt"), &file(role, "key"))?,
                trust: Trust::Pinned(vec![parse_fingerprint(&fp)?]),
            })),
            plaintext: false,
            shaping: None,
        })
    }

    /// Sends as over the emulated network `shaping`, if given (benchmarks).
    pub fn shaped(self, shaping: Option<Shaping>) -> Self {
        Transport { shaping, ..self }
    }

    /// A stream channel, shaped if asked.
    fn finish<R: TimedRead + Send + 'static>(&self, chan: StreamChannel<R>) -> Box<dyn Channel> {
        Box::new(match self.shaping {
            Some(s) => chan.with_shaping(s),
            None => chan,
        })
    }

    /// Refuses a link to (or listening on) `addrs` that may leave this machine without
    /// TLS, unless `--plaintext`.
    fn check(&self, addr: &str, addrs: &[SocketAddr]) -> Result<()> {
        if self.tls.is_some() || addrs.iter().all(|a| a.ip().is_loopback()) {
            return Ok(());
        }
        if !self.plaintext {
            return Err(Error::Usage(format!(
                "'{addr}' is not on this machine, so the link needs TLS: pass --tls-cert, \
                 --tls-key and --peer-fingerprint (see `venn keygen`) or --tls-ca; \
                 --plaintext runs without it, insecurely"
            )));
        }
        eprintln!(
            "venn: warning: running without TLS (--plaintext): anyone on the path can read \
             the traffic and play either party"
        );
        Ok(())
    }

    /// Checks `addr` (to connect to or listen on) against the TLS rule, as [`connect`]
    /// and [`listen`] will: a party calls it before reading a long input, so that a
    /// refusal comes first.
    ///
    /// [`connect`]: Transport::connect
    /// [`listen`]: Transport::listen
    pub fn check_endpoint(&self, addr: &str) -> Result<()> {
        self.check(addr, &resolve(addr)?)
    }

    /// Connects to the peer at `addr`, retrying until `timeout` (`retrying` hears of each
    /// failed attempt).
    pub fn connect(
        &self,
        addr: &str,
        timeout: Duration,
        retrying: &mut dyn FnMut(&Retry),
    ) -> Result<Box<dyn Channel>> {
        let addrs = resolve(addr)?;
        self.check(addr, &addrs)?;
        let socket = tcp_connect(addr, &addrs, timeout, retrying)?;
        Ok(match &self.tls {
            Some(tls) => {
                let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
                let host = host.trim_start_matches('[').trim_end_matches(']');
                let side = Side::Client { host };
                self.finish(tls_channel(socket, side, tls, timeout, timeout)?)
            }
            None => self.finish(tcp_channel(socket, timeout)?),
        })
    }

    /// Listens on `addr` for the peer (`on_bound` is told the bound address). Only a
    /// connection that opens as this side expects (a TLS handshake that succeeds, or a venn
    /// hello) is taken; others (port scans, HTTP probes, a peer with the wrong certificate
    /// or without TLS) are logged on stderr and dropped.
    ///
    /// A party listens only once it is ready to run (its input read): a peer that tries
    /// earlier is refused and retries, rather than queueing a connection that may be dead
    /// by the time it is taken. At the timeout the error names the address listened on.
    pub fn listen(
        &self,
        addr: &str,
        timeout: Duration,
        on_bound: impl FnOnce(SocketAddr),
    ) -> Result<Box<dyn Channel>> {
        let listener = self.bind(addr)?;
        let bound = listener.local_addr()?;
        on_bound(bound);
        (self.accept(&listener, timeout, (HELLO_PREFIX, looks_like_hello))).map_err(|e| match e {
            Error::Timeout(t) => Error::Address(format!(
                "timed out after {} s waiting for the peer on {bound}",
                t.as_secs_f64()
            )),
            e => e,
        })
    }

    /// Binds `addr` (checked against the TLS rule) to listen on.
    pub fn bind(&self, addr: &str) -> Result<TcpListener> {
        // Listening on a name: what it resolves to now is what is bound.
        let addrs = resolve(addr)?;
        self.check(addr, &addrs)?;
        tcp_bind(addr, &addrs)
    }

    /// Takes the next connection on `listener` that opens with a TLS handshake that
    /// succeeds, or (without TLS) with the opening `plain` recognises in its first
    /// `plain.0` bytes; others are logged on stderr and dropped. Waits `timeout` for it,
    /// and gives each of its messages as long.
    pub fn accept(
        &self,
        listener: &TcpListener,
        timeout: Duration,
        plain: (usize, fn(&[u8]) -> bool),
    ) -> Result<Box<dyn Channel>> {
        self.accept_within(listener, timeout, timeout, plain)
    }

    /// [`Transport::accept`], waiting `wait` for a connection (a server's short look for
    /// the next client) and giving each of its messages `timeout`.
    pub fn accept_within(
        &self,
        listener: &TcpListener,
        wait: Duration,
        timeout: Duration,
        plain: (usize, fn(&[u8]) -> bool),
    ) -> Result<Box<dyn Channel>> {
        let (opening_len, opens_right) = plain;
        let mut reject = |from: SocketAddr, why: &str| {
            eprintln!("venn: warning: rejected a connection from {from}: {why}");
        };
        let mut take = self.taker(timeout, opens_right);
        let screen = Screen {
            len: TLS_PREFIX.max(opening_len),
            take: &mut take,
            reject: &mut reject,
        };
        tcp_accept(listener, wait, screen)
    }

    /// Makes a channel of a connection a listener accepted, screened as
    /// [`Transport::accept`] screens them, each of its messages with `timeout`; or why not.
    /// A server calls it on a thread of the connection's own, so that a peer slow to
    /// speak (it has [`PROBE`] for its opening and its handshake) holds up nobody else.
    pub fn screen(
        &self,
        socket: TcpStream,
        timeout: Duration,
        plain: (usize, fn(&[u8]) -> bool),
    ) -> std::result::Result<Box<dyn Channel>, String> {
        let mut take = self.taker(timeout, plain.1);
        tcp_screen(socket, TLS_PREFIX.max(plain.0), &mut take)
    }

    /// What takes a connection given its opening bytes: the TLS handshake, or (without
    /// TLS) the opening `opens_right` recognises; each message then has `timeout`.
    fn taker(
        &self,
        timeout: Duration,
        opens_right: fn(&[u8]) -> bool,
    ) -> impl FnMut(TcpStream, &[u8]) -> std::result::Result<Box<dyn Channel>, String> + '_ {
        move |socket, first: &[u8]| match &self.tls {
            // The handshake has PROBE however late in `timeout` the peer came (as
            // its opening had: `tcp_accept`).
            Some(tls) if looks_like_tls(first) => {
                match tls_channel(socket, Side::Server, tls, PROBE, timeout) {
                    Ok(chan) => Ok(self.finish(chan)),
                    Err(e) => Err(e.to_string()),
                }
            }
            Some(_) if opens_right(first) => {
                // Tell the peer why, so its error says what to fix.
                let why = "this peer requires TLS (--tls-cert)";
                if let Ok(mut plain) = tcp_channel(socket, PROBE) {
                    plain.abort(why);
                }
                Err("a venn peer without TLS, and this side requires it".into())
            }
            None if opens_right(first) => match tcp_channel(socket, timeout) {
                Ok(chan) => Ok(self.finish(chan)),
                Err(e) => Err(e.to_string()),
            },
            None if looks_like_tls(first) => {
                Err("a TLS client, and this side runs without TLS (no --tls-cert)".into())
            }
            _ => Err("not a venn peer".into()),
        }
    }
}
