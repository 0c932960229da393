//! The API's routes (docs/cloud.md, The HTTP API), each request in its log span
//! ([`crate::logs`]), and how an error is answered.

use super::coordinator::Service;
use super::datasets::{
    create_dataset, delete_dataset, grant, list_datasets, put_chunk, register, seal, show_dataset,
};
use super::pretokens::{create_pretoken, list_pretokens, withdraw_pretoken};
use super::runs::{create_run, give_scalar, give_token, result, show_run};
use super::tasks::{lease, task_answer, task_points};
use crate::logs;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::Router;
use std::sync::Arc;
use venn_cloud::Error;

impl IntoResponse for crate::Error {
    /// The answer: the error's message, except for a failure of the service, whose cause
    /// (the store's error, a path in the data directory) goes to the log under a request id
    /// that the answer gives instead.
    fn into_response(self) -> Response {
        let message = match &self.0 {
            Error::Internal(cause) | Error::Transport(cause) => {
                let id = logs::failure(cause);
                format!("the service failed (request {id}; its log says why)")
            }
            other => other.message().to_owned(),
        };
        let body = serde_json::json!({ "error": message });
        let status = StatusCode::from_u16(self.0.status());
        let status = status.unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, axum::Json(body)).into_response()
    }
}

impl Service {
    /// The API's routes (served by [`super::run`], which gives each request its deadline).
    pub(super) fn router(self: &Arc<Self>) -> Router {
        Router::new()
            .route("/v1/health", get(|| async { "ok\n" }))
            .route("/v1/clients", post(register))
            .route("/v1/datasets", get(list_datasets).post(create_dataset))
            .route(
                "/v1/datasets/{id}",
                get(show_dataset).delete(delete_dataset),
            )
            .route("/v1/datasets/{id}/chunks/{chunk}", put(put_chunk))
            .route("/v1/datasets/{id}/seal", post(seal))
            .route("/v1/datasets/{id}/grants", post(grant))
            .route(
                "/v1/datasets/{id}/pretokens",
                get(list_pretokens).post(create_pretoken),
            )
            .route(
                "/v1/datasets/{id}/pretokens/{pretoken}",
                delete(withdraw_pretoken),
            )
            .route("/v1/runs", post(create_run))
            .route("/v1/runs/{id}", get(show_run))
            .route("/v1/runs/{id}/tokens", post(give_token))
            .route("/v1/runs/{id}/scalars", post(give_scalar))
            .route("/v1/runs/{id}/result", get(result))
            .route("/v1/tasks/lease", post(lease))
            .route("/v1/tasks/{run}/{side}/{chunk}/points", get(task_points))
            .route("/v1/tasks/{run}/{side}/{chunk}/answer", put(task_answer))
            .layer(axum::middleware::from_fn(logs::traced))
            .with_state(self.clone())
    }
}
