//! The service's log (docs/cloud.md, Running the service): `tracing` events written to
//! standard error, a line each with its time, level, spans and message, filtered by
//! `RUST_LOG` (`info` when unset). Each request runs in a span with its own id, its method
//! and route (and the run it addresses, once found), closed by a line with its status and
//! latency; the coordinator's events run in a span naming their run.
//!
//! What goes in is chosen where it is logged: ids, names, counts, states and the service's
//! own errors — never a token, key, signature, pre-token, invite, worker secret or a
//! dataset's points, and never a request's headers or body. Strings a client chose (a
//! route that matched nothing) are never written.

use crate::error::Result;
use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use std::time::Instant;
use tracing::Instrument;
use tracing_subscriber::filter::{EnvFilter, LevelFilter};
use venn_cloud::Error;

/// Starts writing this process's log to standard error, filtered by `RUST_LOG` (e.g.
/// `debug`, `venn_service=debug,sqlx=warn`); an invalid filter is refused rather than
/// ignored. A process logs through the first subscriber it set: a second call keeps it.
pub fn init() -> Result<()> {
    let filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::INFO.into())
        .from_env()
        .map_err(|e| Error::BadRequest(format!("RUST_LOG: {e}")))?;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
    Ok(())
}

tokio::task_local! {
    /// The id of the request being answered, for an answer that names it
    /// ([`failure`]).
    static REQUEST: String;
}

/// Logs a failure of the service with its cause, under the id of the request being
/// answered (a new one outside a request), which it returns for the answer: the client is
/// told the id, the operator reads the cause.
pub(crate) fn failure(cause: &str) -> String {
    match REQUEST.try_with(Clone::clone) {
        Ok(id) => {
            tracing::error!("failed: {cause}");
            id
        }
        Err(_) => {
            let id = new_request_id();
            tracing::error!(request = %id, "failed: {cause}");
            id
        }
    }
}

/// 64 random bits in hex: unique among the requests of a log.
fn new_request_id() -> String {
    let mut id = [0u8; 8];
    venn_cloud::api::getrandom(&mut id);
    hex::encode(id)
}

/// Names run `id` in the span of the request that addresses it: called once the run was
/// found (an id a client made up is never written).
pub(crate) fn record_run(id: &str) {
    tracing::Span::current().record("run", tracing::field::display(id));
}

/// Serves a request in a span of its own (its id, method and route), and logs its status
/// and latency once answered.
pub(crate) async fn traced(request: Request, next: Next) -> Response {
    let id = new_request_id();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("(no route)", |m| m.as_str())
        .to_owned();
    let span = tracing::info_span!(
        "request",
        id = %id,
        method = %request.method(),
        route = %route,
        run = tracing::field::Empty,
    );
    let started = Instant::now();
    let response = REQUEST
        .scope(id, next.run(request))
        .instrument(span.clone())
        .await;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    span.in_scope(|| {
        tracing::info!(
            status = response.status().as_u16(),
            ms = format_args!("{ms:.1}"),
            "answered"
        )
    });
    response
}
