//! Sending without waiting for the network: frames go into a queue bounded in bytes, and a
//! background thread writes them out. The protocol thread blocks only when more than
//! [`QUEUE_LIMIT`] bytes are waiting, so computing the next message overlaps sending the
//! previous ones even when the peer is momentarily busy.
//!
//! **No party waits for its peer to read.** There is no flush: the writer thread sends
//! whatever is queued as soon as it can, and a party blocks on sending only while more than
//! its queue limit ([`QUEUE_LIMIT`]) of its own bytes are still unread by the peer. A
//! flush that waited for the queue to drain deadlocked kbm23: each party,
//! having sent more than the socket buffers hold, waited for the other to read while the
//! other waited for it. What remains for the protocols to keep is that the two parties
//! never *both* send more than a queue's worth ahead of what they have read; the
//! registry's tests run every protocol over loopback TCP with small socket buffers and a
//! small queue ([`super::StreamChannel::with_queue_limit`]) to hold them to it.
//!
//! Each frame must be taken by the peer within one timeout of when the writer starts on it
//! (a [`TimedWrite`] stream's limit is lowered to the time left before each write), so a
//! peer that reads a byte now and then cannot keep a party waiting to send.
//!
//! For benchmarks the writer can also play a slower network ([`Shaping`]): each frame
//! then reaches the socket when its last byte would arrive over a link of the given rate
//! and one-way delay.

use std::collections::VecDeque;
use std::io::{self, BufWriter, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A byte stream whose blocking writes can be bounded in time.
pub trait TimedWrite: Write {
    /// Bounds each following blocking write to `limit` (at least a millisecond).
    fn set_write_limit(&mut self, limit: Duration) -> io::Result<()>;
}

impl TimedWrite for std::net::TcpStream {
    fn set_write_limit(&mut self, limit: Duration) -> io::Result<()> {
        self.set_write_timeout(Some(limit.max(Duration::from_millis(1))))
    }
}

impl TimedWrite for io::Sink {
    fn set_write_limit(&mut self, _: Duration) -> io::Result<()> {
        Ok(())
    }
}

/// Writes that fail once `deadline` has passed (the writing side of
/// [`super::stream`]'s deadlined reads).
struct Deadlined<W> {
    inner: W,
    deadline: Instant,
    limit: Duration,
}

impl<W: TimedWrite> Write for Deadlined<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        if left > self.limit || left < self.limit.mul_f64(0.9) {
            self.inner.set_write_limit(left)?;
            self.limit = left;
        }
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// An emulated link in one direction: frames are serialised onto it one after another at
/// `bytes_per_second` (a frame waits while the link is busy with earlier ones) and arrive
/// `one_way` after their last byte was sent. Frames are whole messages, so delivering one
/// at its last byte's arrival is what a receiver waiting for whole frames would see; TCP's
/// slow start and losses are not modelled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shaping {
    /// Link rate.
    pub bytes_per_second: f64,
    /// Delay from the sending of a byte to its arrival (half the round trip).
    pub one_way: Duration,
}

/// Bytes that may wait in the queue before `push` blocks, unless set otherwise.
pub const QUEUE_LIMIT: usize = 16 << 20;

struct Queue {
    /// Frames with the time they were queued.
    frames: VecDeque<(Vec<u8>, Instant)>,
    shaping: Option<Shaping>,
    bytes: usize,
    /// Bytes that may wait before `push` blocks.
    limit: usize,
    closed: bool,
    /// Once closed: when whatever is still queued must have been written.
    drain_by: Option<Instant>,
    /// When every write must be done by, whatever its own timeout (a phase's deadline).
    phase_by: Option<Instant>,
    error: Option<io::Error>,
}

impl Default for Queue {
    fn default() -> Self {
        Queue {
            frames: VecDeque::new(),
            shaping: None,
            bytes: 0,
            limit: QUEUE_LIMIT,
            closed: false,
            drain_by: None,
            phase_by: None,
            error: None,
        }
    }
}

type Shared = Arc<(Mutex<Queue>, Condvar)>;

/// A writer thread fed through a bounded queue.
pub(super) struct AsyncWriter {
    shared: Shared,
    thread: Option<JoinHandle<()>>,
    timeout: Duration,
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Queue> {
    shared.0.lock().unwrap_or_else(|e| e.into_inner())
}

impl AsyncWriter {
    /// Starts the writer thread for `w`; each frame must be written within `timeout`.
    pub(super) fn new<W: TimedWrite + Send + 'static>(w: W, timeout: Duration) -> Self {
        let shared: Shared = Arc::default();
        let s = shared.clone();
        let w = Deadlined {
            inner: w,
            deadline: Instant::now(),
            limit: Duration::ZERO,
        };
        let thread = std::thread::spawn(move || {
            writer_loop(BufWriter::with_capacity(1 << 16, w), timeout, &s)
        });
        AsyncWriter {
            shared,
            timeout,
            thread: Some(thread),
        }
    }

    /// Queues `bytes` for sending; blocks while the queue is full. Fails with the error
    /// that stopped the writer, if any.
    pub(super) fn push(&self, bytes: Vec<u8>) -> io::Result<()> {
        let mut q = lock(&self.shared);
        while q.bytes > q.limit && q.error.is_none() {
            q = self.shared.1.wait(q).unwrap_or_else(|e| e.into_inner());
        }
        if let Some(e) = &q.error {
            return Err(io::Error::new(e.kind(), e.to_string()));
        }
        q.bytes += bytes.len();
        q.frames.push_back((bytes, Instant::now()));
        self.shared.1.notify_all();
        Ok(())
    }

    /// Bounds every write from now on by `deadline` as well as by its own timeout
    /// (`None` lifts it): a peer that reads too slowly fails the phase. Unlike a receive,
    /// a write that fails ends the channel's sending for good; once closed, what is still
    /// queued gets its own timeout, not the phase's.
    pub(super) fn set_deadline(&self, deadline: Option<Instant>) {
        lock(&self.shared).phase_by = deadline;
    }

    /// Plays `shaping` from now on (before anything is queued).
    pub(super) fn shape(&self, shaping: Shaping) {
        lock(&self.shared).shaping = Some(shaping);
    }

    /// Lets `limit` bytes wait before `push` blocks (tests of flow control).
    pub(super) fn set_limit(&self, limit: usize) {
        lock(&self.shared).limit = limit;
    }

    /// Bytes that may wait before `push` blocks.
    pub(super) fn limit(&self) -> usize {
        lock(&self.shared).limit
    }
}

fn writer_loop<W: TimedWrite>(mut w: BufWriter<Deadlined<W>>, timeout: Duration, shared: &Shared) {
    // When the emulated link is free again.
    let mut link_free = Instant::now();
    loop {
        let frame = {
            let mut q = lock(shared);
            loop {
                if let Some((f, queued)) = q.frames.pop_front() {
                    q.bytes -= f.len();
                    // Room for a waiting push.
                    shared.1.notify_all();
                    // Closed, what is queued (an abort notice too) gets its own time.
                    let by = if q.closed { q.drain_by } else { q.phase_by };
                    break Some((f, queued, q.shaping, by));
                }
                shared.1.notify_all();
                if q.closed {
                    break None;
                }
                let phase_by = q.phase_by;
                drop(q);
                // Nothing queued: push out what is buffered before sleeping.
                let due = Instant::now() + timeout;
                w.get_mut().deadline = phase_by.map_or(due, |d| d.min(due));
                let flushed = w.flush();
                q = lock(shared);
                if let Err(e) = flushed {
                    q.error = Some(e);
                    shared.1.notify_all();
                    return;
                }
                if q.frames.is_empty() && !q.closed {
                    q = shared.1.wait(q).unwrap_or_else(|e| e.into_inner());
                }
            }
        };
        let Some((frame, queued, shaping, due_by)) = frame else {
            let _ = w.flush();
            return;
        };
        let by = |t: Instant| due_by.map_or(t, |d| d.min(t));
        w.get_mut().deadline = by(Instant::now() + timeout);
        let written = match shaping {
            None => w.write_all(&frame),
            Some(link) => {
                let on_link = Duration::from_secs_f64(frame.len() as f64 / link.bytes_per_second);
                link_free = link_free.max(queued) + on_link;
                let arrival = link_free + link.one_way;
                std::thread::sleep(arrival.saturating_duration_since(Instant::now()));
                w.get_mut().deadline = by(Instant::now() + timeout);
                w.write_all(&frame).and_then(|()| w.flush())
            }
        };
        if let Err(e) = written {
            let mut q = lock(shared);
            q.error = Some(e);
            shared.1.notify_all();
            return;
        }
    }
}

impl Drop for AsyncWriter {
    fn drop(&mut self) {
        // What is still queued gets one timeout in all, not one per frame.
        {
            let mut q = lock(&self.shared);
            q.closed = true;
            q.drain_by = Some(Instant::now() + self.timeout);
        }
        self.shared.1.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
