//! What the `venn` tool's commands fail with: the library's errors (and the application
//! layer's, which are the library's type), and the failures only a benchmark has — a party
//! that did not start or printed no result, a result that does not verify.

/// A command's failure.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    /// The library's.
    #[error(transparent)]
    Venn(#[from] venn::Error),
    /// A benchmark's own.
    #[error("benchmark: {0}")]
    Bench(String),
}

/// A command's result.
pub(crate) type Result<T> = std::result::Result<T, Failure>;

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Venn(e.into())
    }
}
