//! An in-memory channel pair for tests: the same framing rules as TCP, no sockets.

use super::stream::phase_deadline_error;
use super::{abort_reason, check_frame_len, check_outgoing, Channel, Traffic};
use crate::{Error, Result};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// A frame, or an abort notice with its reason.
type Message = std::result::Result<Vec<u8>, String>;

/// One end of an in-memory pair.
pub struct MemChannel {
    tx: Sender<Message>,
    rx: Receiver<Message>,
    traffic: Traffic,
    timeout: Duration,
    phase_deadline: Option<Instant>,
}

/// Two connected in-memory channels whose receives time out after `timeout`.
pub fn mem_pair(timeout: Duration) -> (MemChannel, MemChannel) {
    let (tx_a, rx_b) = channel();
    let (tx_b, rx_a) = channel();
    let end = |tx, rx| MemChannel {
        tx,
        rx,
        traffic: Traffic::default(),
        timeout,
        phase_deadline: None,
    };
    (end(tx_a, rx_a), end(tx_b, rx_b))
}

impl Channel for MemChannel {
    fn send(&mut self, frame: &[u8]) -> Result<()> {
        check_outgoing(frame)?;
        self.tx
            .send(Ok(frame.to_vec()))
            .map_err(|_| Error::PeerClosed(" (in-memory peer dropped)"))?;
        self.traffic.sent += 4 + frame.len() as u64;
        Ok(())
    }

    fn recv_into(&mut self, buf: &mut Vec<u8>, max_len: usize) -> Result<()> {
        let left = self
            .phase_deadline
            .map(|d| d.saturating_duration_since(Instant::now()));
        if left.is_some_and(|l| l.is_zero()) {
            return Err(phase_deadline_error());
        }
        let frame = self
            .rx
            .recv_timeout(left.map_or(self.timeout, |l| l.min(self.timeout)))
            .map_err(|e| match e {
                RecvTimeoutError::Timeout if left.is_some_and(|l| l < self.timeout) => {
                    phase_deadline_error()
                }
                RecvTimeoutError::Timeout => Error::Timeout(self.timeout),
                RecvTimeoutError::Disconnected => {
                    Error::PeerClosed(" in the middle of the protocol")
                }
            })?
            .map_err(|reason| Error::peer_aborted(&reason))?;
        check_frame_len(frame.len(), max_len)?;
        self.traffic.received += 4 + frame.len() as u64;
        *buf = frame;
        Ok(())
    }

    fn traffic(&self) -> Traffic {
        self.traffic
    }

    fn abort(&mut self, reason: &str) {
        let _ = self.tx.send(Err(abort_reason(reason).to_string()));
    }

    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.phase_deadline = deadline;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::MAX_FRAME;

    #[test]
    fn a_frame_over_the_limit_is_an_error_not_a_panic() {
        let (mut a, _b) = mem_pair(Duration::from_secs(1));
        let e = a.send(&vec![0; MAX_FRAME + 1]).unwrap_err();
        assert!(matches!(e, Error::Oversized { .. }), "{e}");
        a.send(&vec![0; MAX_FRAME]).unwrap();
    }

    /// The in-memory pair keeps a phase's deadline as TCP does: a frame already waiting
    /// after it is refused, and one that would come later is not waited for.
    #[test]
    fn a_phase_deadline_refuses_even_a_waiting_frame() {
        let (mut a, mut b) = mem_pair(Duration::from_secs(5));
        b.send(b"x").unwrap();
        a.set_deadline(Some(Instant::now()));
        let a = &mut a as &mut dyn Channel;
        assert!(matches!(a.recv(1), Err(Error::Deadline(_))));
        a.set_deadline(Some(Instant::now() + Duration::from_millis(50)));
        assert_eq!(a.recv(1).unwrap(), b"x");
        let started = Instant::now();
        assert!(matches!(a.recv(1), Err(Error::Deadline(_))));
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
