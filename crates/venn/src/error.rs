//! The one error type of the library. Every variant is something a user can act on.

use std::time::Duration;

/// Result alias used throughout Venn.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in a PSI run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Local or network I/O failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),

    /// No message arrived from the peer within the timeout.
    #[error("timed out after {} s waiting for the peer", .0.as_secs())]
    Timeout(Duration),

    /// The peer closed the connection before the protocol finished.
    #[error("the peer closed the connection{0}")]
    PeerClosed(&'static str),

    /// The peer sent something the protocol does not allow at this point.
    #[error("protocol error: expected {expected}, got {got}")]
    Protocol { expected: String, got: String },

    /// The two parties disagree on the setup (protocol, version, parameters, ...).
    #[error("handshake failed: {0}")]
    Handshake(String),

    /// The peer told us it gave up.
    #[error("the peer aborted: {0}")]
    PeerAborted(String),

    /// A check that only a cheating peer can fail, failed.
    #[error("cheating detected: {0}")]
    CheatingDetected(String),

    /// The requested parameters are out of range or unsupported.
    #[error("parameters: {0}")]
    Params(String),

    /// A row of the input could not be used.
    #[error("input line {line}: {reason}")]
    Input { line: u64, reason: String },
}

impl Error {
    /// A protocol error with the two sides spelled out.
    pub fn protocol(expected: impl Into<String>, got: impl Into<String>) -> Self {
        Error::Protocol {
            expected: expected.into(),
            got: got.into(),
        }
    }
}
