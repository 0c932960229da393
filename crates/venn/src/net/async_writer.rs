//! Sending without waiting for the network: frames go into a queue bounded in bytes, and a
//! background thread writes them out. The protocol thread blocks only when more than
//! [`QUEUE_LIMIT`] bytes are waiting, so computing the next message overlaps sending the
//! previous ones even when the peer is momentarily busy.
//!
//! For benchmarks the writer can also play a slower network ([`Shaping`]): each frame
//! then reaches the socket when its last byte would arrive over a link of the given rate
//! and one-way delay.

use std::collections::VecDeque;
use std::io::{self, BufWriter, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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

/// Bytes that may wait in the queue before `push` blocks.
const QUEUE_LIMIT: usize = 16 << 20;

#[derive(Default)]
struct Queue {
    /// Frames with the time they were queued.
    frames: VecDeque<(Vec<u8>, Instant)>,
    shaping: Option<Shaping>,
    bytes: usize,
    /// The writer is writing a frame it already took from the queue.
    busy: bool,
    closed: bool,
    error: Option<io::Error>,
}

type Shared = Arc<(Mutex<Queue>, Condvar)>;

/// A writer thread fed through a bounded queue.
pub struct AsyncWriter {
    shared: Shared,
    thread: Option<JoinHandle<()>>,
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Queue> {
    shared.0.lock().unwrap_or_else(|e| e.into_inner())
}

impl AsyncWriter {
    /// Starts the writer thread for `w`.
    pub fn new<W: Write + Send + 'static>(w: W) -> Self {
        let shared: Shared = Arc::default();
        let s = shared.clone();
        let thread =
            std::thread::spawn(move || writer_loop(BufWriter::with_capacity(1 << 16, w), &s));
        AsyncWriter {
            shared,
            thread: Some(thread),
        }
    }

    /// Queues `bytes` for sending; blocks while the queue is full. Fails with the error
    /// that stopped the writer, if any.
    pub fn push(&self, bytes: Vec<u8>) -> io::Result<()> {
        let mut q = lock(&self.shared);
        while q.bytes > QUEUE_LIMIT && q.error.is_none() {
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

    /// Plays `shaping` from now on (before anything is queued).
    pub fn shape(&self, shaping: Shaping) {
        lock(&self.shared).shaping = Some(shaping);
    }

    /// Waits until everything queued has been written.
    pub fn flush(&self) -> io::Result<()> {
        let mut q = lock(&self.shared);
        while (!q.frames.is_empty() || q.busy) && q.error.is_none() {
            q = self.shared.1.wait(q).unwrap_or_else(|e| e.into_inner());
        }
        match &q.error {
            Some(e) => Err(io::Error::new(e.kind(), e.to_string())),
            None => Ok(()),
        }
    }
}

fn writer_loop<W: Write>(mut w: BufWriter<W>, shared: &Shared) {
    // When the emulated link is free again.
    let mut link_free = Instant::now();
    loop {
        let frame = {
            let mut q = lock(shared);
            loop {
                if let Some((f, queued)) = q.frames.pop_front() {
                    q.bytes -= f.len();
                    q.busy = true;
                    break Some((f, queued, q.shaping));
                }
                q.busy = false;
                shared.1.notify_all();
                if q.closed {
                    break None;
                }
                drop(q);
                // Nothing queued: push out what is buffered before sleeping.
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
        let Some((frame, queued, shaping)) = frame else {
            let _ = w.flush();
            return;
        };
        let written = match shaping {
            None => w.write_all(&frame),
            Some(link) => {
                let on_link = Duration::from_secs_f64(frame.len() as f64 / link.bytes_per_second);
                link_free = link_free.max(queued) + on_link;
                let arrival = link_free + link.one_way;
                std::thread::sleep(arrival.saturating_duration_since(Instant::now()));
                w.write_all(&frame).and_then(|()| w.flush())
            }
        };
        if let Err(e) = written {
            let mut q = lock(shared);
            q.error = Some(e);
            q.busy = false;
            shared.1.notify_all();
            return;
        }
    }
}

impl Drop for AsyncWriter {
    fn drop(&mut self) {
        lock(&self.shared).closed = true;
        self.shared.1.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
