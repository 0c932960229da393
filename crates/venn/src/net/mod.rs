//! Two-party networking: the [`Channel`] trait, its TCP and in-memory implementations,
//! message encoding and recorded transcripts. What a session agrees on lives one layer up,
//! in [`crate::session`].
//!
//! A channel carries *frames*: length-prefixed messages whose length is checked against a
//! bound given by the caller (derived from the protocol parameters) before anything is
//! allocated, and never exceeds [`MAX_FRAME`].

mod async_writer;
mod mem;
mod stream;
mod tcp;
pub mod tls;
mod transcript;
mod wire;

pub use async_writer::{Shaping, TimedWrite, QUEUE_LIMIT};
pub use mem::{mem_pair, MemChannel};
pub use stream::{StreamChannel, TimedRead};
pub use tcp::{
    resolve, tcp_accept, tcp_bind, tcp_channel, tcp_connect, tcp_screen, Retry, Screen, Take,
    TcpChannel, PROBE,
};
pub use transcript::{Recording, Replay};
pub use wire::{Reader, Writer};

use crate::crypto::Block;
use crate::{Error, Result};
use std::time::Instant;

/// The largest frame any party will send or accept (64 MiB).
pub const MAX_FRAME: usize = 1 << 26;

/// Bytes moved over a channel, per direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Bytes this party sent (frame headers included).
    pub sent: u64,
    /// Bytes this party received (frame headers included).
    pub received: u64,
}

/// A reliable, ordered, framed, bidirectional message channel to the one peer.
pub trait Channel: Send {
    /// Queues one frame for sending (it goes out in the background).
    fn send(&mut self, frame: &[u8]) -> Result<()>;

    /// Receives one frame into `buf` (replacing its contents). A frame longer than
    /// `max_len` is an error, detected before any allocation.
    fn recv_into(&mut self, buf: &mut Vec<u8>, max_len: usize) -> Result<()>;

    /// Bytes moved so far.
    fn traffic(&self) -> Traffic;

    /// Tells the peer, best effort, that we give up and why; its next receive fails with
    /// [`Error::PeerAborted`].
    fn abort(&mut self, reason: &str);

    /// Bytes a party may have sent beyond what the peer has read, on top of the frame
    /// being written, without its sending ever waiting: half its send queue. Where both
    /// parties send at once, each keeps at most this much (and at least one frame) in
    /// flight, so neither can be left waiting on the other (see the `async_writer` module).
    fn window(&self) -> usize {
        QUEUE_LIMIT / 2
    }

    /// A value unique to this connection that both ends know and nobody between them can
    /// choose (keying material exported from TLS), if the channel has one. The session
    /// handshake binds the session to it.
    fn binding(&self) -> Option<[u8; 32]> {
        None
    }

    /// Who the peer is, as far as the link tells: under TLS its certificate's SHA-256
    /// fingerprint, over plain TCP its address; `None` in memory. What a server keys a
    /// client's limits by.
    fn peer(&self) -> Option<String> {
        None
    }

    /// Bounds every receive from here on, besides its own timeout, by one instant for the
    /// whole of a phase (`None` lifts it): once `deadline` has passed, a receive fails with
    /// [`Error::Deadline`] even if its frame is already waiting. Over a stream it bounds
    /// the writing of what is sent too (a peer reading slowly). A per-message timeout
    /// bounds how long a peer may take for each message, not how long it may spend on
    /// many (rr22-m's receiver, who must not get unbounded time to fit its OKVS; a
    /// dataset's client downloading a trickle at a time).
    fn set_deadline(&mut self, deadline: Option<Instant>);
}

/// A channel around another: each method goes to the channel inside unless the layer
/// overrides it (a recording, a check of the transcript, another binding), and every layer
/// is a [`Channel`]. A box (the kind picked at run time: TCP or TLS) and a mutable reference
/// are layers that override nothing.
pub trait Layer: Send {
    /// The channel inside.
    type Inner: Channel + ?Sized;
    /// The channel inside, to read.
    fn inner(&self) -> &Self::Inner;
    /// The channel inside, to use.
    fn inner_mut(&mut self) -> &mut Self::Inner;

    /// [`Channel::send`].
    fn send(&mut self, frame: &[u8]) -> Result<()> {
        self.inner_mut().send(frame)
    }
    /// [`Channel::recv_into`].
    fn recv_into(&mut self, buf: &mut Vec<u8>, max_len: usize) -> Result<()> {
        self.inner_mut().recv_into(buf, max_len)
    }
    /// [`Channel::traffic`].
    fn traffic(&self) -> Traffic {
        self.inner().traffic()
    }
    /// [`Channel::abort`].
    fn abort(&mut self, reason: &str) {
        self.inner_mut().abort(reason)
    }
    /// [`Channel::window`].
    fn window(&self) -> usize {
        self.inner().window()
    }
    /// [`Channel::binding`].
    fn binding(&self) -> Option<[u8; 32]> {
        self.inner().binding()
    }
    /// [`Channel::peer`].
    fn peer(&self) -> Option<String> {
        self.inner().peer()
    }
    /// [`Channel::set_deadline`].
    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.inner_mut().set_deadline(deadline)
    }
}

impl<L: Layer> Channel for L {
    fn send(&mut self, frame: &[u8]) -> Result<()> {
        Layer::send(self, frame)
    }
    fn recv_into(&mut self, buf: &mut Vec<u8>, max_len: usize) -> Result<()> {
        Layer::recv_into(self, buf, max_len)
    }
    fn traffic(&self) -> Traffic {
        Layer::traffic(self)
    }
    fn abort(&mut self, reason: &str) {
        Layer::abort(self, reason)
    }
    fn window(&self) -> usize {
        Layer::window(self)
    }
    fn binding(&self) -> Option<[u8; 32]> {
        Layer::binding(self)
    }
    fn peer(&self) -> Option<String> {
        Layer::peer(self)
    }
    fn set_deadline(&mut self, deadline: Option<Instant>) {
        Layer::set_deadline(self, deadline)
    }
}

impl<C: Channel + ?Sized> Layer for Box<C> {
    type Inner = C;
    fn inner(&self) -> &C {
        self
    }
    fn inner_mut(&mut self) -> &mut C {
        self
    }
}

impl<C: Channel + ?Sized> Layer for &mut C {
    type Inner = C;
    fn inner(&self) -> &C {
        self
    }
    fn inner_mut(&mut self) -> &mut C {
        self
    }
}

/// A channel whose binding is `binding` instead of its own: what the parties agreed
/// before a session (a run plan, a bucket's number, the TLS channel's own binding) joins
/// the session id this way.
pub struct Rebound<C> {
    /// The channel carrying the frames.
    pub inner: C,
    /// The binding the session hashes.
    pub binding: [u8; 32],
}

impl<C: Channel> Layer for Rebound<C> {
    type Inner = C;
    fn inner(&self) -> &C {
        &self.inner
    }
    fn inner_mut(&mut self) -> &mut C {
        &mut self.inner
    }
    fn binding(&self) -> Option<[u8; 32]> {
        Some(self.binding)
    }
}

impl dyn Channel + '_ {
    /// Receives one frame of at most `max_len` bytes.
    pub fn recv(&mut self, max_len: usize) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.recv_into(&mut buf, max_len)?;
        Ok(buf)
    }

    /// Receives one frame that must be exactly `len` bytes long; `what` names it in errors.
    pub fn recv_exact_into(&mut self, buf: &mut Vec<u8>, len: usize, what: &str) -> Result<()> {
        self.recv_into(buf, len).map_err(|e| match e {
            Error::Protocol { got, .. } => Error::protocol(format!("{what} of {len} bytes"), got),
            e => e,
        })?;
        if buf.len() != len {
            return Err(Error::protocol(
                format!("{what} of {len} bytes"),
                format!("{} bytes", buf.len()),
            ));
        }
        Ok(())
    }

    /// Receives one frame that must be exactly `len` bytes long.
    pub fn recv_exact(&mut self, len: usize, what: &str) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.recv_exact_into(&mut buf, len, what)?;
        Ok(buf)
    }

    /// Sends `blocks` (16 little-endian bytes each) in frames of at most
    /// [`FRAME_BLOCKS`].
    pub fn send_blocks(&mut self, blocks: &[Block]) -> Result<()> {
        if cfg!(target_endian = "little") {
            // The blocks' memory is already their bytes.
            for chunk in blocks.chunks(FRAME_BLOCKS) {
                self.send(bytemuck::cast_slice(chunk))?;
            }
            return Ok(());
        }
        let mut frame = Vec::with_capacity(16 * FRAME_BLOCKS.min(blocks.len()));
        for chunk in blocks.chunks(FRAME_BLOCKS) {
            frame.clear();
            for b in chunk {
                frame.extend_from_slice(&b.to_le_bytes());
            }
            self.send(&frame)?;
        }
        Ok(())
    }

    /// Receives the `n` blocks `send_blocks` sends into `out` (`n`
    /// is the caller's to bound: it is allocated).
    pub fn recv_blocks(&mut self, n: usize, out: &mut Vec<Block>, what: &str) -> Result<()> {
        out.clear();
        out.reserve_exact(n);
        let mut frame = Vec::new();
        while out.len() < n {
            let len = (n - out.len()).min(FRAME_BLOCKS);
            self.recv_exact_into(&mut frame, 16 * len, what)?;
            let at = out.len();
            out.resize(at + len, Block::ZERO);
            let blocks = &mut out[at..];
            if cfg!(target_endian = "little") {
                bytemuck::cast_slice_mut(blocks).copy_from_slice(&frame);
            } else {
                for (b, bytes) in blocks.iter_mut().zip(frame.chunks_exact(16)) {
                    *b = Block::from_le_bytes(bytes.try_into().expect("16 bytes"));
                }
            }
        }
        Ok(())
    }
}

/// Blocks in one frame of a long vector of blocks.
pub const FRAME_BLOCKS: usize = 1 << 16;

/// Length prefix that marks an abort notice instead of a frame.
const ABORT_MARK: u32 = u32::MAX;
/// The longest abort reason passed on.
const MAX_ABORT_REASON: usize = 1024;

/// Truncates an abort reason to [`MAX_ABORT_REASON`] bytes on a character boundary.
fn abort_reason(reason: &str) -> &str {
    let mut end = reason.len().min(MAX_ABORT_REASON);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    &reason[..end]
}

/// A frame of ours over [`MAX_FRAME`] is an error (a parameter bug), never a panic.
fn check_outgoing(frame: &[u8]) -> Result<()> {
    if frame.len() > MAX_FRAME {
        return Err(Error::Oversized {
            len: frame.len(),
            max: MAX_FRAME,
        });
    }
    Ok(())
}

/// Checks a frame's announced length against the caller's bound (and [`MAX_FRAME`]) before
/// anything is allocated for it.
pub(crate) fn check_frame_len(len: usize, max_len: usize) -> Result<()> {
    let max_len = max_len.min(MAX_FRAME);
    if len > max_len {
        return Err(Error::protocol(
            format!("a frame of at most {max_len} bytes"),
            format!("a length prefix of {len} bytes"),
        ));
    }
    Ok(())
}
