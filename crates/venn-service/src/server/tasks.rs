//! The external workers' API: a lease, its task's input, and its answer (spot-checked by
//! the coordinator before it is taken).

use super::coordinator::Service;
use super::extractors::FromWorker;
use crate::error::Result;
use crate::logs;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use std::sync::Arc;

pub(super) async fn lease(State(s): State<Arc<Service>>, w: FromWorker) -> Result<Response> {
    match s.lease(Some(&w.worker)).await? {
        Some(l) => Ok(Json(l.task).into_response()),
        None => Ok(StatusCode::NO_CONTENT.into_response()),
    }
}

pub(super) async fn task_points(
    State(s): State<Arc<Service>>,
    Path((run, side, chunk)): Path<(String, u64, u64)>,
    w: FromWorker,
) -> Result<Response> {
    let (leased, _) = s.store.task(&run, side, chunk).await?;
    logs::record_run(&run);
    w.holds(&leased)?;
    let bytes = tokio::fs::read(&leased.input).await?;
    Ok(bytes.into_response())
}

pub(super) async fn task_answer(
    State(s): State<Arc<Service>>,
    Path((run, side, chunk)): Path<(String, u64, u64)>,
    w: FromWorker,
) -> Result<StatusCode> {
    let (leased, done) = s.store.task(&run, side, chunk).await?;
    logs::record_run(&run);
    w.holds(&leased)?;
    // A task done already was done by this worker: its answer came twice.
    if !done {
        s.answer_from(&w.worker, &leased, w.body.to_vec()).await?;
    }
    Ok(StatusCode::NO_CONTENT)
}
