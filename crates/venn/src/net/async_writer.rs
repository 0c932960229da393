//! Sending without waiting for the network: frames go into a queue bounded in bytes, and a
//! background thread writes them out. The protocol thread blocks only when more than
//! [`QUEUE_LIMIT`] bytes are waiting, so computing the next message overlaps sending the
//! previous ones even when the peer is momentarily busy.

use std::collections::VecDeque;
use std::io::{self, BufWriter, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// Bytes that may wait in the queue before `push` blocks.
const QUEUE_LIMIT: usize = 16 << 20;

#[derive(Default)]
struct Queue {
    frames: VecDeque<Vec<u8>>,
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
        q.frames.push_back(bytes);
        self.shared.1.notify_all();
        Ok(())
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
    loop {
        let frame = {
            let mut q = lock(shared);
            loop {
                if let Some(f) = q.frames.pop_front() {
                    q.bytes -= f.len();
                    q.busy = true;
                    break Some(f);
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
        let Some(frame) = frame else {
            let _ = w.flush();
            return;
        };
        if let Err(e) = w.write_all(&frame) {
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
