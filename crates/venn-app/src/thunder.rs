//! The steps of a Thunder client that are more than a call to [`venn_cloud::client`]:
//! reaching the service safely, making and registering an identity, and linking to the
//! partners of a run — shared by `venn cloud` and the Python package's `venn.cloud`.

use crate::party::PeerAddr;
use crate::transport::Transport;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;
use venn::net::tls::{parse_fingerprint, Trust};
use venn::net::Channel;
use venn::{Error, Result};
use venn_cloud::api::Run;
use venn_cloud::auth::Identity;
use venn_cloud::client::{looks_like_pair, Client, DatasetKey, PAIR_PREFIX};
use venn_cloud::http::Endpoint;

/// The service at `url` (`https://HOST:PORT`, or `http://HOST:PORT`): its certificate
/// pinned by SHA-256 `fingerprint` or chained to a CA in the PEM file `ca` (else the
/// system's roots); plain HTTP only to this machine unless `plain_http`.
pub fn endpoint(
    url: &str,
    fingerprint: Option<&str>,
    ca: Option<&Path>,
    plain_http: bool,
) -> Result<Endpoint> {
    let trust = match (fingerprint, ca) {
        (Some(fp), _) => Some(Trust::Pinned(vec![parse_fingerprint(fp)?])),
        (None, Some(ca)) => Some(Trust::ca_file(ca)?),
        (None, None) => None,
    };
    if let Some(host_port) = url.strip_prefix("http://") {
        check_loopback(
            host_port.trim_end_matches('/'),
            plain_http,
            "talk plain HTTP to",
        )?;
    }
    Ok(Endpoint {
        url: url.to_owned(),
        trust,
    })
}

/// Refuses `addr` unless every address it names is loopback, or `plaintext`: points,
/// tokens and results cross plain HTTP readable by anyone on the path.
pub fn check_loopback(addr: &str, plaintext: bool, what: &str) -> Result<()> {
    if !plaintext && !on_loopback(addr)? {
        return Err(Error::Usage(format!(
            "refusing to {what} '{addr}', which may be on another machine: anyone on the \
             path would see the points, tokens and results (--plain-http, in Python \
             plain_http=True, accepts that)"
        )));
    }
    Ok(())
}

/// Whether every address `addr` resolves to is a loopback address.
pub fn on_loopback(addr: &str) -> Result<bool> {
    let addrs: Vec<_> = addr
        .to_socket_addrs()
        .map_err(|e| Error::Address(format!("cannot resolve '{addr}': {e}")))?
        .collect();
    Ok(!addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback()))
}

/// Makes an identity named `name`, saves it to `path` (a new, owner-only file) and
/// registers it with the service, showing `invite` if given. Saved first — a key
/// registered but not saved would lock the name for good — and removed again if the
/// service refuses it.
pub fn register(
    server: &Endpoint,
    name: &str,
    path: &Path,
    invite: Option<&str>,
) -> Result<Client> {
    if path.exists() {
        return Err(Error::Usage(format!(
            "'{}' exists: an identity file is never overwritten",
            path.display()
        )));
    }
    let identity = Identity::generate(name)?;
    identity.save(path)?;
    let client = Client::new(server, identity).and_then(|c| c.register(invite).map(|()| c));
    client.map_err(|e| {
        let _ = std::fs::remove_file(path);
        e.into()
    })
}

/// A client's links to the partners of a run.
pub struct Partners {
    links: Vec<Box<dyn Channel>>,
    /// Whether this client listened, and so leads: it creates the run.
    lead: bool,
}

impl Partners {
    /// Links over `transport` to a run's partners: listening for `count` of them, or
    /// connecting to the one that listens. `on_bound` hears the address listened on.
    pub fn link(
        transport: &Transport,
        peer: &PeerAddr,
        count: usize,
        timeout: Duration,
        on_bound: impl FnOnce(SocketAddr),
    ) -> Result<Partners> {
        Ok(match peer {
            PeerAddr::Listen(addr) => {
                let listener = transport.bind(addr)?;
                on_bound(listener.local_addr()?);
                let links = (0..count)
                    .map(|_| transport.accept(&listener, timeout, (PAIR_PREFIX, looks_like_pair)))
                    .collect::<Result<_>>()?;
                Partners { links, lead: true }
            }
            PeerAddr::Connect(addr) => Partners {
                links: vec![transport.connect(addr, timeout, &mut |_| {})?],
                lead: false,
            },
        })
    }

    /// Agrees on the run with the partners and gives the service this dataset's token
    /// (or, `preprocessed`, a pre-token and a scalar).
    pub fn pair(
        mut self,
        client: &Client,
        key: &DatasetKey,
        preprocessed: bool,
    ) -> venn_cloud::Result<Run> {
        let mut refs: Vec<&mut dyn Channel> =
            self.links.iter_mut().map(|l| &mut **l as _).collect();
        client.pair(key, &mut refs, self.lead, preprocessed)
    }
}
