//! The service's errors, each with the HTTP status it is answered with. Clients turn an
//! answer back into the same error, so a refusal reads the same on both ends.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// A failed request or service operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request is malformed: a bad point, a wrong length, an unknown option.
    #[error("bad request: {0}")]
    BadRequest(String),
    /// The request is not signed by a registered client, or the signature is stale or
    /// replayed.
    #[error("unauthenticated: {0}")]
    Unauthenticated(String),
    /// The caller may not do this (another client's dataset, a run it is not part of).
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// No such dataset, run or task.
    #[error("not found: {0}")]
    NotFound(String),
    /// The request conflicts with the state (a sealed dataset, a token already given, a
    /// name taken, a result not ready).
    #[error("conflict: {0}")]
    Conflict(String),
    /// A body over its limit.
    #[error("too large: {0}")]
    TooLarge(String),
    /// Too many requests of this kind from the caller's address: try again later.
    #[error("too many requests: {0}")]
    TooMany(String),
    /// The request did not arrive whole by its deadline.
    #[error("timed out: {0}")]
    Timeout(String),
    /// The service failed (its store, its files): not the caller's doing.
    #[error("service: {0}")]
    Internal(String),
    /// The service could not be reached or answered nonsense (client side only).
    #[error("cannot reach the service: {0}")]
    Transport(String),
}

/// Results of the service.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The HTTP status of the error.
    pub fn status(&self) -> StatusCode {
        match self {
            Error::BadRequest(_) => StatusCode::BAD_REQUEST,
            Error::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            Error::Forbidden(_) => StatusCode::FORBIDDEN,
            Error::NotFound(_) => StatusCode::NOT_FOUND,
            Error::Conflict(_) => StatusCode::CONFLICT,
            Error::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Error::TooMany(_) => StatusCode::TOO_MANY_REQUESTS,
            Error::Timeout(_) => StatusCode::REQUEST_TIMEOUT,
            Error::Internal(_) | Error::Transport(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The error a client reads from an answer with `status` and message `text`.
    pub fn from_answer(status: u16, text: String) -> Self {
        match status {
            400 => Error::BadRequest(text),
            401 => Error::Unauthenticated(text),
            403 => Error::Forbidden(text),
            404 => Error::NotFound(text),
            409 => Error::Conflict(text),
            408 => Error::Timeout(text),
            413 => Error::TooLarge(text),
            429 => Error::TooMany(text),
            _ => Error::Internal(format!("HTTP {status}: {text}")),
        }
    }

    /// The message without the kind's prefix (what goes into an answer's body).
    fn message(&self) -> &str {
        match self {
            Error::BadRequest(m)
            | Error::Unauthenticated(m)
            | Error::Forbidden(m)
            | Error::NotFound(m)
            | Error::Conflict(m)
            | Error::TooLarge(m)
            | Error::TooMany(m)
            | Error::Timeout(m)
            | Error::Internal(m)
            | Error::Transport(m) => m,
        }
    }
}

impl IntoResponse for Error {
    /// The answer: the error's message, except for a failure of the service, whose cause
    /// (the store's error, a path in the data directory) goes to the log under a request id
    /// that the answer gives instead.
    fn into_response(self) -> Response {
        let message = match &self {
            Error::Internal(cause) | Error::Transport(cause) => {
                let mut id = [0u8; 8];
                crate::api::getrandom(&mut id);
                let id = hex::encode(id);
                eprintln!("venn cloud: request {id} failed: {cause}");
                format!("the service failed (request {id}; its log says why)")
            }
            other => other.message().to_owned(),
        };
        let body = serde_json::json!({ "error": message });
        (self.status(), axum::Json(body)).into_response()
    }
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Internal(format!("store: {e}"))
    }
}

impl From<sqlx::migrate::MigrateError> for Error {
    fn from(e: sqlx::migrate::MigrateError) -> Self {
        Error::Internal(format!("store migration: {e}"))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Internal(format!("i/o: {e}"))
    }
}

impl From<venn::Error> for Error {
    fn from(e: venn::Error) -> Self {
        match e {
            venn::Error::Protocol { .. } => Error::BadRequest(e.to_string()),
            other => Error::Internal(other.to_string()),
        }
    }
}

impl From<Error> for venn::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Transport(m) => venn::Error::Address(format!("cannot reach the service: {m}")),
            other => venn::Error::Usage(format!("venn cloud: {other}")),
        }
    }
}
