//! The blocking HTTP client that workers and clients share: bounded answers, errors read
//! back into the service's [`Error`]s.

use crate::error::{Error, Result};
use std::time::Duration;

/// An HTTP connection pool to one service.
pub struct Http {
    agent: ureq::Agent,
    base: String,
}

/// The longest answer read: a three-party task's values or a result of 2^26 positions.
const MAX_ANSWER: u64 = 1 << 28;

impl Http {
    /// A client of the service at `base` (`http://host:port`). Every call gives up after
    /// `timeout`.
    pub fn new(base: &str, timeout: Duration) -> Result<Http> {
        let base = base.trim_end_matches('/');
        if !base.starts_with("http://") {
            return Err(Error::BadRequest(format!(
                "'{base}' is not a service address (http://HOST:PORT)"
            )));
        }
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(timeout))
            .build()
            .new_agent();
        Ok(Http {
            agent,
            base: base.to_owned(),
        })
    }

    /// Sends a request; returns the status and body of a successful answer (2xx), or the
    /// error the service answered with.
    pub fn call(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: &[u8],
    ) -> Result<(u16, Vec<u8>)> {
        let mut req = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        for (name, value) in headers {
            req = req.header(*name, value);
        }
        let req = req
            .body(body.to_vec())
            .map_err(|e| Error::BadRequest(format!("a request: {e}")))?;
        let mut answer = self
            .agent
            .run(req)
            .map_err(|e| Error::Transport(format!("{} {path}: {e}", self.base)))?;
        let status = answer.status().as_u16();
        let bytes = answer
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER)
            .read_to_vec()
            .map_err(|e| Error::Transport(format!("{} {path}: {e}", self.base)))?;
        if (200..300).contains(&status) {
            return Ok((status, bytes));
        }
        let text = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned))
            .unwrap_or_else(|| String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into());
        Err(Error::from_answer(status, venn::peer_text(&text)))
    }
}
