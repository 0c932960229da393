//! Pre-tokens (docs/cloud.md, Pre-tokens): a dataset's one-time pre-tokens handed over,
//! listed and withdrawn; the service's workers precompute their values.

use super::coordinator::Service;
use super::extractors::Signed;
use crate::error::Result;
use crate::logs;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use std::sync::Arc;
use venn_cloud::api::{self, NewPretoken, PretokenState};
use venn_cloud::crypto::{self, TOKEN_BYTES};
use venn_cloud::Error;

/// Withdraws an unused pre-token of the caller's (its values are removed): e.g. one its
/// client gave up on after recording it as used.
pub(super) async fn withdraw_pretoken(
    State(s): State<Arc<Service>>,
    Path((id, pretoken)): Path<(String, String)>,
    req: Signed,
) -> Result<StatusCode> {
    s.store.own_dataset(&req.client, &id).await?;
    let _one = s.transitions.lock().await;
    let (dataset, state) = s.store.pretoken(&pretoken).await?;
    if dataset != id {
        return Err(Error::NotFound(format!("no pre-token {pretoken} of dataset {id}")).into());
    }
    match state {
        PretokenState::Computing | PretokenState::Ready => {
            s.store.fail(&pretoken, "withdrawn by its owner").await?;
            Ok(StatusCode::NO_CONTENT)
        }
        PretokenState::Failed => Ok(StatusCode::NO_CONTENT),
        PretokenState::Used => {
            Err(Error::Conflict(format!("pre-token {pretoken} was used by a run")).into())
        }
    }
}

pub(super) async fn list_pretokens(
    State(s): State<Arc<Service>>,
    Path(id): Path<String>,
    req: Signed,
) -> Result<Response> {
    s.store.own_dataset(&req.client, &id).await?;
    Ok(Json(s.store.pretokens(&id).await?).into_response())
}

/// The offline step (docs/cloud.md, Pre-tokens): a pre-token for a sealed dataset of the
/// caller's, whose values the service's workers precompute.
pub(super) async fn create_pretoken(
    State(s): State<Arc<Service>>,
    Path(id): Path<String>,
    req: Signed,
) -> Result<Response> {
    let p: NewPretoken = req.json()?;
    s.store.own_dataset(&req.client, &id).await?;
    let label = api::from_hex::<32>(&p.label, "label")?;
    let token = api::from_hex::<TOKEN_BYTES>(&p.token, "token")?;
    crypto::decode_token(&token)?;
    s.expire_waiting().await?;
    let pretoken = {
        let _one = s.transitions.lock().await;
        let (token, label) = (hex::encode(token), hex::encode(label));
        s.store
            .create_pretoken(&req.client, &id, &token, &label, s.config.max_pretokens)
            .await?
    };
    logs::record_run(&pretoken.id);
    s.clone().started(&pretoken.id, true).await?;
    Ok(Json(pretoken).into_response())
}
