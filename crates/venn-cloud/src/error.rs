//! The service's errors, each with the HTTP status it is answered with. Clients turn an
//! answer back into the same error, so a refusal reads the same on both ends.

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
    /// The HTTP status the service answers the error with ([`Error::from_answer`] reads
    /// it back).
    pub fn status(&self) -> u16 {
        match self {
            Error::BadRequest(_) => 400,
            Error::Unauthenticated(_) => 401,
            Error::Forbidden(_) => 403,
            Error::NotFound(_) => 404,
            Error::Conflict(_) => 409,
            Error::TooLarge(_) => 413,
            Error::TooMany(_) => 429,
            Error::Timeout(_) => 408,
            Error::Internal(_) | Error::Transport(_) => 500,
        }
    }

    /// The message without the kind's prefix (what an answer's body says).
    pub fn message(&self) -> &str {
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
