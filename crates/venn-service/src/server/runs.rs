//! Runs: creating one over sealed datasets (the caller's and those granted to it), its
//! status, the owners' tokens or pre-tokens and scalars, and each side's result.

use super::coordinator::Service;
use super::extractors::Signed;
use crate::error::Result;
use crate::logs;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use std::sync::Arc;
use venn_cloud::api::{self, DatasetState, NewRun, RunKind, RunState, Scalar, Token};
use venn_cloud::crypto::{self, TOKEN_BYTES};
use venn_cloud::Error;

pub(super) async fn create_run(State(s): State<Arc<Service>>, req: Signed) -> Result<Response> {
    let r: NewRun = req.json()?;
    if !(2..=3).contains(&r.datasets.len()) {
        return Err(Error::BadRequest("a run has two or three datasets".into()).into());
    }
    if r.preprocessed && r.datasets.len() != 2 {
        return Err(Error::BadRequest("a preprocessed run has two datasets".into()).into());
    }
    let (mut owners, mut items) = (Vec::new(), Vec::new());
    for (i, id) in r.datasets.iter().enumerate() {
        if r.datasets[..i].contains(id) {
            return Err(Error::BadRequest(format!("dataset {id} is named twice")).into());
        }
        // Another's dataset is seen (and its state, owner and size told) only once its
        // owner granted it to the caller: otherwise answered as a missing one.
        let d = s.store.visible_dataset(&req.client, id).await?;
        if d.state != DatasetState::Sealed {
            return Err(Error::Conflict(format!("dataset {id} is {}", d.state)).into());
        }
        owners.push(d.owner);
        items.push(d.items);
    }
    if !owners.contains(&req.client) {
        return Err(Error::Forbidden("a run must include a dataset of yours".into()).into());
    }
    // A sealed dataset's items never change: the figure holds when the run is created.
    check_join_work(&items, s.config.max_join_work)?;
    let run = s
        .store
        .create_run(&req.client, &r.datasets, r.preprocessed)
        .await?;
    logs::record_run(&run.id);
    Ok(Json(run).into_response())
}

/// Refuses, before any work, a three-party run of datasets of `items` items whose join
/// would compare more than `max` pairs: n1·n2, its first two sides' sizes (two-party runs
/// join in time linear in their sizes).
fn check_join_work(items: &[u64], max: u64) -> Result<()> {
    let [n1, n2, _] = items else {
        return Ok(());
    };
    let work = u128::from(*n1) * u128::from(*n2);
    match work > u128::from(max) {
        true => Err(Error::TooLarge(format!(
            "this join would compare n1·n2 = {n1}·{n2} = {work} pairs, more than the \
             {max} this service allows (--max-join-work); a run whose first two datasets \
             are the smaller ones compares fewer"
        ))
        .into()),
        false => Ok(()),
    }
}

/// A run that the caller may see: one of its datasets is the caller's.
async fn visible_run(s: &Service, client: &str, id: &str) -> Result<api::Run> {
    let run = s.store.run(id).await?;
    if !run.sides.iter().any(|side| side.owner == client) {
        // Not "forbidden": whether a run exists is none of the caller's business.
        return Err(Error::NotFound(format!("no run {id}")).into());
    }
    logs::record_run(id);
    Ok(run)
}

pub(super) async fn show_run(
    State(s): State<Arc<Service>>,
    Path(id): Path<String>,
    req: Signed,
) -> Result<Response> {
    Ok(Json(visible_run(&s, &req.client, &id).await?).into_response())
}

pub(super) async fn give_token(
    State(s): State<Arc<Service>>,
    Path(id): Path<String>,
    req: Signed,
) -> Result<Response> {
    let t: Token = req.json()?;
    let side = own_side(&s, &req.client, &id, &t.dataset, RunKind::Pair).await?;
    let bytes = api::from_hex::<TOKEN_BYTES>(&t.token, "token")?;
    crypto::decode_token(&bytes)?;
    let started = {
        let _one = s.transitions.lock().await;
        s.store
            .give_token(&id, side, &hex::encode(bytes), s.expired())
            .await?
    };
    s.clone().started(&id, started).await?;
    Ok(Json(s.store.run(&id).await?).into_response())
}

/// The side of run `id` that is the caller's `dataset`, in a run of `kind` (pairing runs
/// take tokens, preprocessed ones pre-tokens and scalars).
async fn own_side(
    s: &Service,
    client: &str,
    id: &str,
    dataset: &str,
    kind: RunKind,
) -> Result<u64> {
    let run = visible_run(s, client, id).await?;
    let side = run
        .sides
        .iter()
        .position(|side| side.dataset == dataset)
        .ok_or_else(|| Error::BadRequest(format!("dataset {dataset} is not in run {id}")))?;
    if run.sides[side].owner != client {
        return Err(Error::Forbidden(format!(
            "dataset {dataset} is not yours: only its owner speaks for it in a run"
        ))
        .into());
    }
    if run.kind != kind {
        return Err(Error::Conflict(format!(
            "run {id} takes {}",
            match run.kind {
                RunKind::Preprocessed => "pre-tokens and scalars",
                _ => "tokens",
            }
        ))
        .into());
    }
    Ok(side as u64)
}

/// The online step (docs/cloud.md, Pre-tokens): an owner's pre-token and scalar `δ = K / R`.
pub(super) async fn give_scalar(
    State(s): State<Arc<Service>>,
    Path(id): Path<String>,
    req: Signed,
) -> Result<Response> {
    let g: Scalar = req.json()?;
    let side = own_side(&s, &req.client, &id, &g.dataset, RunKind::Preprocessed).await?;
    let delta = crypto::Secret::from_bytes(&api::from_hex::<32>(&g.delta, "scalar")?)?;
    let started = {
        let _one = s.transitions.lock().await;
        s.store
            .give_scalar(
                &id,
                side,
                &g.pretoken,
                &hex::encode(delta.to_bytes()),
                s.expired(),
            )
            .await?
    };
    s.clone().started(&id, started).await?;
    Ok(Json(s.store.run(&id).await?).into_response())
}

/// `?dataset=ID`: which of the caller's sides (needed only when it owns several).
#[derive(serde::Deserialize)]
pub(super) struct ResultQuery {
    dataset: Option<String>,
}

pub(super) async fn result(
    State(s): State<Arc<Service>>,
    Path(id): Path<String>,
    Query(q): Query<ResultQuery>,
    req: Signed,
) -> Result<Response> {
    let run = visible_run(&s, &req.client, &id).await?;
    if run.kind == RunKind::Precompute {
        return Err(Error::NotFound(format!(
            "{id} is a pre-token: its run precomputes values and has no result"
        ))
        .into());
    }
    let mine: Vec<usize> = (0..run.sides.len())
        .filter(|&i| run.sides[i].owner == req.client)
        .filter(|&i| {
            q.dataset
                .as_ref()
                .is_none_or(|d| *d == run.sides[i].dataset)
        })
        .collect();
    let side = match mine[..] {
        [side] => side,
        [] => {
            return Err(
                Error::BadRequest("no dataset of yours by that id in the run".into()).into(),
            )
        }
        _ => {
            return Err(
                Error::BadRequest("you own several sides: name one with ?dataset=".into()).into(),
            )
        }
    };
    if run.state != RunState::Done {
        return Err(Error::Conflict(format!("run {id} is {}", run.state)).into());
    }
    let bytes = tokio::fs::read(s.store.result_path(&id, side as u64)).await?;
    Ok(bytes.into_response())
}
