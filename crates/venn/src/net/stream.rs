//! A [`Channel`] over any byte stream (TCP in practice): 4-byte little-endian length
//! prefix, then the payload. Each received message has a deadline of one timeout from the
//! moment we start waiting for it, however the peer trickles its bytes.

use super::async_writer::{AsyncWriter, Shaping, TimedWrite};
use super::{
    abort_reason, check_frame_len, check_outgoing, Channel, Traffic, ABORT_MARK, MAX_ABORT_REASON,
};
use crate::{Error, Result};
use std::io::{BufReader, ErrorKind, Read};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A byte stream whose blocking reads can be bounded in time.
pub trait TimedRead: Read {
    /// Bounds each following blocking read to `limit` (at least a millisecond).
    fn set_read_limit(&mut self, limit: Duration) -> std::io::Result<()>;
}

impl TimedRead for TcpStream {
    fn set_read_limit(&mut self, limit: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(limit.max(Duration::from_millis(1))))
    }
}

/// What a receive past its phase's deadline fails with (the protocol that set the
/// deadline says more).
pub(super) fn phase_deadline_error() -> Error {
    Error::Deadline("the peer did not finish the phase in the time set for it".into())
}

/// Reads that fail once `deadline` has passed: before each read the stream's own limit is
/// lowered to the time left whenever it would overshoot by more than a tenth.
struct Deadlined<R> {
    inner: R,
    deadline: Instant,
    limit: Duration,
}

impl<R: TimedRead> Read for Deadlined<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ErrorKind::TimedOut.into());
        }
        if left > self.limit || left < self.limit.mul_f64(0.9) {
            self.inner.set_read_limit(left)?;
            self.limit = left;
        }
        self.inner.read(buf)
    }
}

/// Framing and byte counting over a reader/writer pair; writes happen on a background
/// thread (see `AsyncWriter`).
pub struct StreamChannel<R: TimedRead> {
    reader: BufReader<Deadlined<R>>,
    writer: AsyncWriter,
    traffic: Traffic,
    timeout: Duration,
    /// The deadline of the current phase, if it has one ([`Channel::set_deadline`]).
    phase_deadline: Option<Instant>,
    binding: Option<[u8; 32]>,
    /// Who the peer is ([`Channel::peer`]).
    peer: Option<String>,
}

impl<R: TimedRead + Send> StreamChannel<R> {
    /// Wraps a stream; each message must arrive within `timeout` of our starting to wait
    /// for it (else [`Error::Timeout`]).
    pub fn new<W: TimedWrite + Send + 'static>(reader: R, writer: W, timeout: Duration) -> Self {
        let reader = Deadlined {
            inner: reader,
            deadline: Instant::now() + timeout,
            limit: Duration::ZERO,
        };
        StreamChannel {
            reader: BufReader::with_capacity(1 << 16, reader),
            writer: AsyncWriter::new(writer, timeout),
            traffic: Traffic::default(),
            timeout,
            phase_deadline: None,
            binding: None,
            peer: None,
        }
    }

    /// Sends as over the emulated link `shaping` (benchmarks).
    pub fn with_shaping(self, shaping: Shaping) -> Self {
        self.writer.shape(shaping);
        self
    }

    /// Lets at most about `bytes` of ours wait unread before sending blocks (default
    /// [`super::async_writer::QUEUE_LIMIT`]); the flow-control tests make it small.
    pub fn with_queue_limit(self, bytes: usize) -> Self {
        self.writer.set_limit(bytes);
        self
    }

    /// Marks the channel as bound to `binding` (see [`Channel::binding`]).
    pub fn with_binding(mut self, binding: [u8; 32]) -> Self {
        self.binding = Some(binding);
        self
    }

    /// Names the peer (see [`Channel::peer`]).
    pub fn with_peer(mut self, peer: String) -> Self {
        self.peer = Some(peer);
        self
    }

    /// Reads the reason of an abort notice whose mark was just read.
    fn read_abort(&mut self) -> Error {
        let mut len = [0u8; 2];
        if self.reader.read_exact(&mut len).is_err() {
            return Error::PeerAborted("(no reason given)".into());
        }
        let len = (u16::from_le_bytes(len) as usize).min(MAX_ABORT_REASON);
        let mut reason = vec![0u8; len];
        match self.reader.read_exact(&mut reason) {
            Ok(()) => Error::peer_aborted(&String::from_utf8_lossy(&reason)),
            Err(_) => Error::PeerAborted("(no reason given)".into()),
        }
    }

    fn io_error(&self, e: std::io::Error) -> Error {
        match e.kind() {
            ErrorKind::WouldBlock | ErrorKind::TimedOut if self.phase_deadline_passed() => {
                phase_deadline_error()
            }
            ErrorKind::WouldBlock | ErrorKind::TimedOut => Error::Timeout(self.timeout),
            ErrorKind::UnexpectedEof => Error::PeerClosed(" in the middle of the protocol"),
            ErrorKind::ConnectionReset | ErrorKind::BrokenPipe | ErrorKind::ConnectionAborted => {
                Error::PeerClosed(" (connection reset)")
            }
            // Only the TLS record layer reports malformed data.
            ErrorKind::InvalidData => Error::Tls(e.to_string()),
            _ => Error::Io(e),
        }
    }
}

impl<R: TimedRead + Send> Channel for StreamChannel<R> {
    fn send(&mut self, frame: &[u8]) -> Result<()> {
        check_outgoing(frame)?;
        let mut bytes = Vec::with_capacity(4 + frame.len());
        bytes.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        bytes.extend_from_slice(frame);
        self.writer.push(bytes).map_err(|e| self.io_error(e))?;
        self.traffic.sent += 4 + frame.len() as u64;
        Ok(())
    }

    fn recv_into(&mut self, buf: &mut Vec<u8>, max_len: usize) -> Result<()> {
        if self.phase_deadline_passed() {
            return Err(phase_deadline_error());
        }
        let deadline = Instant::now() + self.timeout;
        self.reader.get_mut().deadline = self.phase_deadline.map_or(deadline, |d| d.min(deadline));
        let mut header = [0u8; 4];
        self.reader
            .read_exact(&mut header)
            .map_err(|e| self.io_error(e))?;
        if u32::from_le_bytes(header) == ABORT_MARK {
            return Err(self.read_abort());
        }
        let len = u32::from_le_bytes(header) as usize;
        check_frame_len(len, max_len)?;
        // Every byte is overwritten: only bytes the buffer never held are zeroed first
        // (callers reuse their buffers, and zeroing each frame cost about 4 % of the CPU
        // time of rr17-de-sm, which moves gigabytes).
        buf.truncate(len);
        buf.resize(len, 0);
        self.reader.read_exact(buf).map_err(|e| self.io_error(e))?;
        self.traffic.received += 4 + len as u64;
        Ok(())
    }

    fn traffic(&self) -> Traffic {
        self.traffic
    }

    fn abort(&mut self, reason: &str) {
        let reason = abort_reason(reason).as_bytes();
        let mut notice = ABORT_MARK.to_le_bytes().to_vec();
        notice.extend_from_slice(&(reason.len() as u16).to_le_bytes());
        notice.extend_from_slice(reason);
        // Written in the background; dropping the channel gives it one timeout to leave.
        let _ = self.writer.push(notice);
    }

    fn binding(&self) -> Option<[u8; 32]> {
        self.binding
    }

    fn peer(&self) -> Option<String> {
        self.peer.clone()
    }

    fn window(&self) -> usize {
        self.writer.limit() / 2
    }

    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.phase_deadline = deadline;
        self.writer.set_deadline(deadline);
    }
}

impl<R: TimedRead + Send> StreamChannel<R> {
    fn phase_deadline_passed(&self) -> bool {
        self.phase_deadline.is_some_and(|d| Instant::now() >= d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::tcp_channel;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn a_peer_reading_a_trickle_cannot_keep_us_sending() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let reader = std::thread::spawn(move || {
            let (mut peer, _) = listener.accept().unwrap();
            // Take a little now and then: every write of ours makes some progress.
            let mut byte = [0u8; 4096];
            for _ in 0..100 {
                if peer.read(&mut byte).unwrap_or(0) == 0 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let timeout = Duration::from_secs(1);
        let mut chan = tcp_channel(TcpStream::connect(addr).unwrap(), timeout).unwrap();
        let started = Instant::now();
        let frame = vec![0u8; 8 << 20];
        // Once the queue is full, sending waits for the writer, which gives up.
        let result = (0..4).try_for_each(|_| chan.send(&frame));
        assert!(matches!(result, Err(Error::Timeout(_))), "{result:?}");
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{:?}",
            started.elapsed()
        );
        drop(chan);
        reader.join().unwrap();
    }

    /// A phase's deadline bounds every receive of the phase over real TCP: a frame in time
    /// is taken, one late is refused once the deadline passes (not a timeout later), and
    /// so is one already waiting; lifted, the channel reads on. (Margins wide enough for a
    /// loaded test machine.)
    #[test]
    fn a_phase_deadline_bounds_every_receive_over_tcp() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let timeout = Duration::from_secs(20);
        let peer = std::thread::spawn(move || {
            let mut peer = tcp_channel(listener.accept().unwrap().0, timeout).unwrap();
            peer.send(b"in time").unwrap();
            std::thread::sleep(Duration::from_millis(1500));
            peer.send(b"late").unwrap();
            // Hold the link until the other end has read.
            let _ = (&mut peer as &mut dyn Channel).recv(0);
        });
        let mut chan = tcp_channel(TcpStream::connect(addr).unwrap(), timeout).unwrap();
        let chan = &mut chan as &mut dyn Channel;
        chan.set_deadline(Some(Instant::now() + Duration::from_secs(10)));
        assert_eq!(chan.recv(16).unwrap(), b"in time");
        let started = Instant::now();
        chan.set_deadline(Some(started + Duration::from_millis(300)));
        assert!(matches!(chan.recv(16), Err(Error::Deadline(_))));
        let waited = started.elapsed();
        assert!(waited < Duration::from_secs(5), "{waited:?}");
        std::thread::sleep(Duration::from_millis(2000));
        assert!(matches!(chan.recv(16), Err(Error::Deadline(_))));
        chan.set_deadline(None);
        assert_eq!(chan.recv(16).unwrap(), b"late");
        chan.send(&[]).unwrap();
        peer.join().unwrap();
    }

    /// A phase's deadline bounds sends too: a peer reading a trickle (each write makes
    /// progress well within its timeout) cannot hold a session past its deadline.
    #[test]
    fn a_phase_deadline_bounds_sends_to_a_slow_reader() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let reader = std::thread::spawn(move || {
            let (mut peer, _) = listener.accept().unwrap();
            let mut some = [0u8; 64 << 10];
            for _ in 0..200 {
                if peer.read(&mut some).unwrap_or(0) == 0 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let timeout = Duration::from_secs(20);
        let chan = tcp_channel(TcpStream::connect(addr).unwrap(), timeout).unwrap();
        let mut chan = chan.with_queue_limit(1 << 20);
        let started = Instant::now();
        (&mut chan as &mut dyn Channel).set_deadline(Some(started + Duration::from_millis(500)));
        let frame = vec![0u8; 1 << 20];
        let result = (0..64).try_for_each(|_| chan.send(&frame));
        assert!(matches!(result, Err(Error::Deadline(_))), "{result:?}");
        let took = started.elapsed();
        assert!(took < Duration::from_secs(5), "{took:?}");
        drop(chan);
        reader.join().unwrap();
    }
}
