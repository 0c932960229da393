//! The service's errors: venn-cloud's [`venn_cloud::Error`] (the kinds an answer's status
//! tells a client), in a type of this crate, which says how the store's failures become
//! one and how one is answered (`server`'s routes) — impls that the orphan rule keeps
//! out of venn-cloud, which knows neither sqlx nor axum.

use venn_cloud::Error as Kind;

/// A failed request or service operation: one of venn-cloud's errors, shown as it is.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(#[from] pub Kind);

/// Results of the service.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error(e.into())
    }
}

impl From<venn::Error> for Error {
    fn from(e: venn::Error) -> Self {
        Error(e.into())
    }
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error(Kind::Internal(format!("store: {e}")))
    }
}

impl From<sqlx::migrate::MigrateError> for Error {
    fn from(e: sqlx::migrate::MigrateError) -> Self {
        Error(Kind::Internal(format!("store migration: {e}")))
    }
}

/// What `venn cloud serve` and the operator's commands report: venn-cloud's error, as
/// venn turns it into one.
impl From<Error> for venn::Error {
    fn from(e: Error) -> Self {
        e.0.into()
    }
}
