//! The listener: each connection admitted ([`super::admission`]) or closed at once, its
//! TLS handshake, head and body due by one deadline, one request served, and the service
//! drained when it stops.

use super::admission::{Admission, Caps};
use super::coordinator::Service;
use super::extractors::{Arrival, Peer};
use super::Setup;
use crate::error::Result;
use crate::store::Store;
use axum::Router;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use venn_cloud::Error;

/// How long requests under way may take to finish once the service is stopped.
const DRAIN: Duration = Duration::from_secs(30);

/// Runs the service until interrupted (Ctrl-C or SIGTERM); `on_bound` is told the bound
/// address once the API is up.
pub fn serve(setup: &Setup, on_bound: impl FnOnce(std::net::SocketAddr)) -> Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(run(setup, on_bound, stopped()))
}

/// Runs the service on the current tokio runtime until `stop` resolves.
///
/// A connection serves one request, which must arrive whole (TLS handshake, head and
/// body) within `request_seconds` of the connection's acceptance; connections past
/// `max_connections`, in all or from one peer, are closed as soon as accepted.
pub async fn run(
    setup: &Setup,
    on_bound: impl FnOnce(std::net::SocketAddr),
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let store = Store::open(&setup.database, &setup.dir).await?;
    let service = Service::start(store, setup.config.clone()).await?;
    let listener = tokio::net::TcpListener::bind(&setup.listen)
        .await
        .map_err(|e| Error::BadRequest(format!("cannot listen on {}: {e}", setup.listen)))?;
    on_bound(listener.local_addr()?);
    let router = service.router();
    let acceptor = setup.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    let admission = Admission::new(Caps {
        total: setup.config.max_connections,
        per_peer: setup.config.max_connections_per_peer,
        per_network: setup.config.max_connections_per_network,
    });
    let request_time = Duration::from_secs(setup.config.request_seconds);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(stop);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // Out of descriptors and the like: pause rather than spin.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut stop => break,
        };
        // Over a cap, the connection is dropped (closed) here, before any work for it.
        let Some((permit, evicted)) = admission.admit(peer.ip()) else {
            tracing::debug!(peer = %peer.ip(), "connection refused: over the caps");
            continue;
        };
        let arrival = Arrival {
            deadline: tokio::time::Instant::now() + request_time,
            permit: Arc::new(permit),
        };
        let _ = tcp.set_nodelay(true);
        let (router, watcher, acceptor) = (router.clone(), graceful.watcher(), acceptor.clone());
        tokio::spawn(async move {
            let serve = async {
                match acceptor {
                    Some(acceptor) => {
                        let tls = tokio::time::timeout_at(arrival.deadline, acceptor.accept(tcp));
                        if let Ok(Ok(tls)) = tls.await {
                            connection(tls, router, watcher, peer.ip(), arrival).await;
                        }
                    }
                    None => connection(tcp, router, watcher, peer.ip(), arrival).await,
                }
            };
            // Closed (dropped) to make way for another while still waiting for its request.
            tokio::select! {
                _ = serve => {}
                Ok(()) = evicted => {}
            }
        });
    }
    let _ = tokio::time::timeout(DRAIN, graceful.shutdown()).await;
    Ok(())
}

/// Serves one HTTP/1.1 request from `peer` on a connection, whose head must arrive by its
/// `arrival`'s deadline (and its body too: [`super::extractors`] reads it by that deadline).
async fn connection<Io>(
    io: Io,
    router: Router,
    watcher: hyper_util::server::graceful::Watcher,
    peer: IpAddr,
    arrival: Arrival,
) where
    Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let router = hyper_util::service::TowerToHyperService::new(router);
    let header_time = arrival
        .deadline
        .saturating_duration_since(tokio::time::Instant::now());
    let service =
        hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(arrival.clone());
            req.extensions_mut().insert(Peer(peer));
            hyper::service::Service::call(&router, req)
        });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .keep_alive(false)
        .header_read_timeout(header_time)
        .serve_connection(hyper_util::rt::TokioIo::new(io), service);
    let _ = watcher.watch(conn).await;
}

/// Resolves on Ctrl-C or SIGTERM.
async fn stopped() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {},
        _ = terminate => {},
    }
}
