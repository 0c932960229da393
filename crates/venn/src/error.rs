//! The one error type of the library. Every variant is something a user can act on, and
//! any text in it that came from the peer is escaped (see [`peer_text`]), so a peer cannot
//! write terminal escape sequences or fake lines onto the user's screen.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Result alias used throughout Venn.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in a PSI run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Network or other I/O not tied to a file of the user's failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),

    /// Reading or writing a file failed.
    #[error("cannot {action} '{}': {source}", .path.display())]
    File {
        /// What we tried to do ("open", "write", ...).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },

    /// A network address could not be used (resolved, bound, listened on).
    #[error("{0}")]
    Address(String),

    /// No message arrived from the peer within the timeout.
    #[error("timed out after {} s waiting for the peer", .0.as_secs())]
    Timeout(Duration),

    /// The peer did not finish a phase by the deadline set for the whole of it (see
    /// [`crate::net::Channel::set_deadline`]); the text says which phase and why it has one.
    #[error("deadline: {0}")]
    Deadline(String),

    /// The peer closed the connection before the protocol finished.
    #[error("the peer closed the connection{0}")]
    PeerClosed(&'static str),

    /// The peer sent something the protocol does not allow at this point.
    #[error("protocol error: expected {expected}, got {got}")]
    Protocol {
        /// What the protocol allows here.
        expected: String,
        /// What arrived instead (escaped if it quotes the peer).
        got: String,
    },

    /// The TLS connection could not be set up or broke (a certificate refused, a peer
    /// without TLS, a record that does not decrypt).
    #[error("TLS: {0}")]
    Tls(String),

    /// The two parties disagree on the setup (protocol, version, parameters, ...).
    #[error("handshake failed: {0}")]
    Handshake(String),

    /// What the two parties saw of the run differs: a frame was altered, dropped or
    /// replayed between them. Nothing is output.
    #[error("session integrity: {0}")]
    Integrity(String),

    /// The peer told us it gave up (its reason, escaped).
    #[error("the peer aborted: {0}")]
    PeerAborted(String),

    /// A check that only a cheating peer can fail, failed.
    #[error("cheating detected: {0}")]
    CheatingDetected(String),

    /// The user asked for something inconsistent or unsupported (options, arguments).
    #[error("{0}")]
    Usage(String),

    /// The protocol parameters for these set sizes are out of the supported range.
    #[error("parameters: {0}")]
    Params(String),

    /// The run would need more memory than this party allows.
    #[error("{0}")]
    Memory(String),

    /// An event of negligible probability (≤ 2^-λ) happened; running again fixes it.
    #[error("{0}; please run again")]
    Unlucky(String),

    /// A message of ours is over the frame limit (a parameter bug, never a peer's doing).
    #[error("a message of {len} bytes is over the {max}-byte frame limit")]
    Oversized {
        /// The message's length.
        len: usize,
        /// The limit.
        max: usize,
    },

    /// A precomputed state cannot be used (missing, used before, corrupted, or from
    /// another session, protocol or role).
    #[error("state: {0}")]
    State(String),

    /// A row of the input could not be used.
    #[error("input line {line}: {reason}")]
    Input {
        /// 1-based line number.
        line: u64,
        /// What is wrong with it.
        reason: String,
    },
}

impl Error {
    /// A protocol error with the two sides spelled out.
    pub fn protocol(expected: impl Into<String>, got: impl Into<String>) -> Self {
        Error::Protocol {
            expected: expected.into(),
            got: got.into(),
        }
    }

    /// A failed file operation on `path`.
    pub fn file<'a>(
        action: &'static str,
        path: &'a Path,
    ) -> impl FnOnce(std::io::Error) -> Self + 'a {
        move |source| Error::File {
            action,
            path: path.to_owned(),
            source,
        }
    }

    /// The peer's abort notice, its reason escaped.
    pub fn peer_aborted(reason: &str) -> Self {
        Error::PeerAborted(peer_text(reason))
    }

    /// Whether the failure came from the peer or the link, so telling the peer about it
    /// is pointless.
    pub(crate) fn is_link_failure(&self) -> bool {
        matches!(
            self,
            Error::PeerAborted(_)
                | Error::PeerClosed(_)
                | Error::Timeout(_)
                | Error::Io(_)
                | Error::Tls(_)
        )
    }
}

/// Text that came from the peer, made safe to print: control characters (escape
/// sequences, newlines, carriage returns) and the invisible Unicode formatting characters
/// that reorder or hide text are written as `\u{..}` escapes.
pub fn peer_text(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        let invisible = matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
            | '\u{2066}'..='\u{2069}' | '\u{FEFF}');
        if c.is_control() || invisible {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_text_cannot_reach_the_terminal_raw() {
        let raw = "ok\x1b[2J\x1b]0;title\x07\nvenn: fake line\r\u{202E}txt";
        let shown = peer_text(raw);
        assert!(!shown.chars().any(|c| c.is_control()), "{shown:?}");
        assert!(!shown.contains('\u{202E}'));
        assert!(shown.starts_with("ok\\u{1b}[2J"), "{shown}");
        assert_eq!(peer_text("plain text, ünïcode"), "plain text, ünïcode");
        let e = Error::peer_aborted(raw).to_string();
        assert!(!e.contains('\n') && !e.contains('\x1b'), "{e:?}");
    }
}
