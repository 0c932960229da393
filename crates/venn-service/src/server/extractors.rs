//! What a handler is given: a request signed by a registered client, or from an enrolled
//! external worker, its headers checked before its body is read, the body bounded and read
//! by the request's deadline.

use super::admission::Permit;
use super::coordinator::Service;
use crate::error::Result;
use crate::store;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::request::Parts;
use std::net::IpAddr;
use std::sync::Arc;
use venn_cloud::api::{self, Register};
use venn_cloud::auth::{self, Claim};
use venn_cloud::Error;

/// A request signed by a registered client, with its body of at most `LIMIT` bytes (a
/// JSON body's, or a chunk's for uploads). The headers are checked (a well-formed claim, a
/// registered client, a time within the window) before the body is read.
pub(super) struct Signed<const LIMIT: usize = { api::MAX_JSON_BYTES }> {
    pub(super) client: String,
    pub(super) body: Bytes,
}

impl<const LIMIT: usize> Signed<LIMIT> {
    /// The body as JSON of type `T`.
    pub(super) fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        serde_json::from_slice(&self.body)
            .map_err(|e| Error::BadRequest(format!("JSON: {e}")).into())
    }
}

impl<const LIMIT: usize> FromRequest<Arc<Service>> for Signed<LIMIT> {
    type Rejection = crate::Error;

    async fn from_request(req: Request, service: &Arc<Service>) -> Result<Self> {
        let (parts, body) = req.into_parts();
        let claim = claim(&parts)?;
        let time = claim.check_fresh(api::now())?;
        let registering = parts.uri.path() == "/v1/clients";
        let key = if registering {
            let peer = parts
                .extensions
                .get::<Peer>()
                .ok_or_else(|| Error::Internal("a request without a peer".into()))?;
            service.registrations.admit(peer.0)?;
            None
        } else {
            let key = service.store.public_key(claim.client).await?;
            Some(key.ok_or_else(|| Error::Unauthenticated("an unregistered client".into()))?)
        };
        let body = read_body(&parts, body, LIMIT).await?;
        let key = match key {
            Some(k) => k,
            None => {
                // Registration is signed with the key being registered.
                let r: Register = serde_json::from_slice(&body)
                    .map_err(|e| Error::BadRequest(format!("JSON: {e}")))?;
                if r.name != claim.client {
                    return Err(Error::Unauthenticated("signed under another name".into()).into());
                }
                auth::PublicKey::parse(&r.public_key)?.as_hex().to_owned()
            }
        };
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        claim.verify(&key, parts.method.as_str(), path, &body)?;
        service
            .store
            .remember_nonce(claim.client, claim.nonce, time)
            .await?;
        Ok(Signed {
            client: claim.client.to_owned(),
            body,
        })
    }
}

/// The address a request came from.
#[derive(Clone, Copy, Debug)]
pub(super) struct Peer(pub(super) IpAddr);

/// When a request must have arrived whole (its connection's deadline, set as it was
/// accepted), and its connection's place, which stops waiting once it has.
#[derive(Clone)]
pub(super) struct Arrival {
    pub(super) deadline: tokio::time::Instant,
    pub(super) permit: Arc<Permit>,
}

/// Reads a request's body of at most `limit` bytes by the request's deadline (a body that
/// trickles holds its connection no longer than its head could); once it is in, the
/// connection is being served and keeps its place ([`super::admission`]).
async fn read_body(parts: &Parts, body: axum::body::Body, limit: usize) -> Result<Bytes> {
    let arrival = parts
        .extensions
        .get::<Arrival>()
        .ok_or_else(|| Error::Internal("a request without a deadline".into()))?;
    match tokio::time::timeout_at(arrival.deadline, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(body)) => {
            arrival.permit.served();
            Ok(body)
        }
        Ok(Err(_)) => Err(Error::TooLarge(format!("a body over {limit} bytes")).into()),
        Err(_) => Err(Error::Timeout("the request's body did not arrive in time".into()).into()),
    }
}

/// A request's authentication headers.
fn claim(parts: &Parts) -> Result<Claim<'_>> {
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| Error::Unauthenticated(format!("no {name} header")))
    };
    let client = header(auth::CLIENT)?;
    auth::check_name(client).map_err(|e| Error::Unauthenticated(e.to_string()))?;
    Ok(Claim {
        client,
        time: header(auth::TIME)?,
        nonce: header(auth::NONCE)?,
        signature: header(auth::SIGNATURE)?,
    })
}

/// A request from an enrolled external worker that is not quarantined, and its body.
pub(super) struct FromWorker {
    pub(super) worker: String,
    pub(super) body: Bytes,
}

impl FromRequest<Arc<Service>> for FromWorker {
    type Rejection = crate::Error;

    async fn from_request(req: Request, service: &Arc<Service>) -> Result<Self> {
        let (parts, body) = req.into_parts();
        let shown = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let (name, hash) = auth::worker_claim(shown)?;
        let worker = match service.store.worker(name).await? {
            Some((worker, kept)) if kept == hash => worker,
            _ => return Err(Error::Unauthenticated("not a worker of this service".into()).into()),
        };
        if let Some(since) = worker.quarantined {
            return Err(Error::Forbidden(format!(
                "worker {name} is quarantined (since {since}: {}); the operator may enrol \
                 it again",
                worker.reason.as_deref().unwrap_or("no reason recorded")
            ))
            .into());
        }
        Ok(FromWorker {
            worker: worker.name,
            body: read_body(&parts, body, api::MAX_TASK_BYTES).await?,
        })
    }
}

impl FromWorker {
    /// Refuses unless this worker holds `leased`'s lease (it leased the task last).
    pub(super) fn holds(&self, leased: &store::Leased) -> Result<()> {
        match leased.holder.as_deref() == Some(self.worker.as_str()) {
            true => Ok(()),
            false => Err(Error::Forbidden(format!(
                "task {} is not leased to worker {}",
                leased.task.path(),
                self.worker
            ))
            .into()),
        }
    }
}
