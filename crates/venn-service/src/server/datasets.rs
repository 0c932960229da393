//! Registration and datasets: creating, uploading (every point checked), sealing (no
//! ciphertext twice), granting, showing and deleting a client's own datasets.

use super::coordinator::Service;
use super::extractors::Signed;
use super::Registration;
use crate::error::Result;
use crate::store;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use rayon::prelude::*;
use std::sync::Arc;
use venn_cloud::api::{
    self, ChunkReceipt, DatasetState, Grant, NewDataset, Register, Seal, MAX_CHUNK_ITEMS,
};
use venn_cloud::auth;
use venn_cloud::crypto::{self, ITEM_BYTES};
use venn_cloud::Error;

/// The largest request body: a full chunk of points.
const MAX_BODY: usize = MAX_CHUNK_ITEMS * ITEM_BYTES;

pub(super) async fn register(
    State(s): State<Arc<Service>>,
    req: Signed<{ api::MAX_REGISTRATION_BYTES }>,
) -> Result<StatusCode> {
    let r: Register = req.json()?;
    auth::check_name(&r.name)?;
    let invite = match (s.config.registration, r.invite.as_deref()) {
        (Registration::Open, _) => None,
        (Registration::Invite, Some(invite)) => Some(check_invite(invite)?),
        (Registration::Invite, None) => {
            return Err(Error::Forbidden(
                "this service registers clients by invitation: ask its operator for an invite"
                    .into(),
            )
            .into())
        }
    };
    let key = auth::PublicKey::parse(&r.public_key)?;
    s.store
        .register(&r.name, &key, invite, s.config.max_clients)
        .await?;
    Ok(StatusCode::CREATED)
}

/// Refuses anything but an invite's hex form.
fn check_invite(invite: &str) -> Result<&str> {
    let hex = invite
        .bytes()
        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    match hex && invite.len() == 2 * api::INVITE_BYTES {
        true => Ok(invite),
        false => Err(
            Error::BadRequest(format!("an invite is {} bytes in hex", api::INVITE_BYTES)).into(),
        ),
    }
}

pub(super) async fn list_datasets(State(s): State<Arc<Service>>, req: Signed) -> Result<Response> {
    Ok(Json(s.store.datasets_of(&req.client).await?).into_response())
}

pub(super) async fn create_dataset(State(s): State<Arc<Service>>, req: Signed) -> Result<Response> {
    let d: NewDataset = req.json()?;
    auth::check_name(&d.name)?;
    let quotas = s.config.quotas();
    Ok(Json(s.store.create_dataset(&req.client, &d.name, quotas).await?).into_response())
}

pub(super) async fn show_dataset(
    State(s): State<Arc<Service>>,
    Path(id): Path<String>,
    req: Signed,
) -> Result<Response> {
    Ok(Json(s.store.own_dataset(&req.client, &id).await?).into_response())
}

pub(super) async fn delete_dataset(
    State(s): State<Arc<Service>>,
    Path(id): Path<String>,
    req: Signed,
) -> Result<Response> {
    s.store.own_dataset(&req.client, &id).await?;
    Ok(Json(s.store.delete_dataset(&id).await?).into_response())
}

pub(super) async fn grant(
    State(s): State<Arc<Service>>,
    Path(id): Path<String>,
    req: Signed,
) -> Result<StatusCode> {
    let g: Grant = req.json()?;
    auth::check_name(&g.client)?;
    s.store.grant(&req.client, &id, &g.client).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// An open dataset of the caller's.
async fn open_dataset(s: &Service, client: &str, id: &str) -> Result<api::Dataset> {
    let d = s.store.own_dataset(client, id).await?;
    if d.state != DatasetState::Open {
        return Err(Error::Conflict(format!("dataset {id} is {}", d.state)).into());
    }
    Ok(d)
}

pub(super) async fn put_chunk(
    State(s): State<Arc<Service>>,
    Path((id, chunk)): Path<(String, u64)>,
    req: Signed<MAX_BODY>,
) -> Result<Json<ChunkReceipt>> {
    open_dataset(&s, &req.client, &id).await?;
    let n = req.body.len() / ITEM_BYTES;
    if !req.body.len().is_multiple_of(ITEM_BYTES) || n == 0 {
        return Err(Error::BadRequest(format!(
            "a chunk of {} bytes: not a positive number of {ITEM_BYTES}-byte points",
            req.body.len()
        ))
        .into());
    }
    if chunk >= s.config.max_items {
        return Err(Error::TooLarge(format!(
            "a dataset over this service's {} items",
            s.config.max_items
        ))
        .into());
    }
    let body = req.body.clone();
    store::blocking(move || check_points(&body)).await?;
    let quotas = s.config.quotas();
    let sha256 = s.store.put_chunk(&id, chunk, req.body, quotas).await?;
    Ok(Json(ChunkReceipt {
        items: n as u64,
        sha256,
    }))
}

/// Checks every point of a chunk (on the curve, in the subgroup, not the identity).
fn check_points(body: &[u8]) -> Result<()> {
    let bad = body
        .as_chunks::<ITEM_BYTES>()
        .0
        .par_iter()
        .position_any(|p| crypto::decode_item(p).is_err());
    match bad {
        Some(i) => Err(Error::BadRequest(format!(
            "point {i} of the chunk is not a G1 point of the subgroup (or is the identity)"
        ))
        .into()),
        None => Ok(()),
    }
}

pub(super) async fn seal(
    State(s): State<Arc<Service>>,
    Path(id): Path<String>,
    req: Signed,
) -> Result<Response> {
    let claimed: Seal = req.json()?;
    open_dataset(&s, &req.client, &id).await?;
    let chunks = s.store.chunks(&id).await?;
    let items: u64 = chunks.iter().map(|c| c.items).sum();
    if chunks.len() as u64 != claimed.chunks || items != claimed.items {
        return Err(Error::Conflict(format!(
            "the service has {} chunks of {items} items, the client sent {} of {}",
            chunks.len(),
            claimed.chunks,
            claimed.items
        ))
        .into());
    }
    let checked = chunks.clone();
    store::blocking(move || check_distinct(&checked, items)).await?;
    let quotas = s.config.quotas();
    Ok(Json(s.store.seal(&id, &chunks, quotas).await?).into_response())
}

/// Checks that the chunk files are the acknowledged ones and that no ciphertext repeats
/// (a repeat would show the server equal keys; clients deduplicate).
fn check_distinct(chunks: &[store::Chunk], items: u64) -> Result<()> {
    use sha2::Digest;
    let mut seen = hashbrown::HashSet::with_capacity(items as usize);
    for (k, chunk) in chunks.iter().enumerate() {
        let bytes = match std::fs::read(&chunk.file) {
            // Uploaded again meanwhile (the old file removed).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::Conflict(
                    "the dataset changed while it was being sealed: seal it again".into(),
                )
                .into())
            }
            read => read?,
        };
        if hex::encode(sha2::Sha256::digest(&bytes)) != chunk.sha256 {
            return Err(
                Error::Conflict(format!("chunk {k} is not as uploaded: upload it again")).into(),
            );
        }
        for p in bytes.chunks_exact(ITEM_BYTES) {
            // The x coordinate's low 128 bits: distinct points collide with probability
            // 2^-128 per pair.
            let key = u128::from_le_bytes(p[32..48].try_into().expect("16 bytes"));
            if !seen.insert(key) {
                return Err(Error::Conflict(
                    "the dataset holds a ciphertext twice: deduplicate the keys".into(),
                )
                .into());
            }
        }
    }
    Ok(())
}
