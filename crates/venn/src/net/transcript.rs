//! A party's transcript: recorded during a real run, replayed to run that party alone.
//!
//! `venn bench --solo` times one party without the other competing for the machine: it
//! records a run in which each party writes down the frames it receives, then runs each
//! party again by itself against its recording. With the same PRG seed the replayed party
//! must send exactly what it sent the first time — which is what its peer recorded — so
//! [`Replay`] checks every outbound frame against the peer's recording; a parallel
//! computation that changed any message with the thread count fails the run.
//!
//! A transcript file is the received frames back to back, each as a 4-byte little-endian
//! length and its bytes. It is written to `<path>.partial` and renamed when complete.

use super::{check_frame_len, Channel, Traffic};
use crate::{Error, Result};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Wraps a channel and writes every frame received through it to a transcript file.
pub struct Recording<C> {
    inner: C,
    file: BufWriter<File>,
    path: PathBuf,
}

fn partial(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".partial");
    p.into()
}

impl<C: Channel> Recording<C> {
    /// Starts recording what `inner` receives to `path`.
    pub fn new(inner: C, path: &Path) -> Result<Self> {
        Ok(Recording {
            inner,
            file: BufWriter::with_capacity(1 << 20, File::create(partial(path))?),
            path: path.to_owned(),
        })
    }

    /// Completes the transcript file.
    pub fn finish(mut self) -> Result<()> {
        self.file.flush()?;
        self.file.get_ref().sync_all()?;
        std::fs::rename(partial(&self.path), &self.path)?;
        Ok(())
    }
}

impl<C: Channel> crate::net::Layer for Recording<C> {
    type Inner = C;
    fn inner(&self) -> &C {
        &self.inner
    }
    fn inner_mut(&mut self) -> &mut C {
        &mut self.inner
    }

    fn recv_into(&mut self, buf: &mut Vec<u8>, max_len: usize) -> Result<()> {
        self.inner.recv_into(buf, max_len)?;
        self.file.write_all(&(buf.len() as u32).to_le_bytes())?;
        self.file.write_all(buf)?;
        Ok(())
    }
}

/// Frames read back from a transcript file.
struct Frames {
    bytes: Vec<u8>,
    at: usize,
}

impl Frames {
    fn load(path: &Path) -> Result<Self> {
        Ok(Frames {
            bytes: std::fs::read(path)?,
            at: 0,
        })
    }

    /// The next frame, or `None` at the end of the transcript.
    fn next(&mut self) -> Result<Option<&[u8]>> {
        let rest = &self.bytes[self.at..];
        if rest.is_empty() {
            return Ok(None);
        }
        let bad = || Error::protocol("a well-formed transcript", "a truncated frame");
        let len = u32::from_le_bytes(rest.get(..4).ok_or_else(bad)?.try_into().expect("4"));
        let frame = rest.get(4..4 + len as usize).ok_or_else(bad)?;
        self.at += 4 + frame.len();
        Ok(Some(frame))
    }
}

/// A channel that plays the peer from transcripts: it delivers the frames this party
/// received in the recorded run and checks that every frame it sends is the one it sent
/// then (the peer's recording).
pub struct Replay {
    inbound: Frames,
    outbound: Frames,
    traffic: Traffic,
}

impl Replay {
    /// Loads both transcripts into memory (so replaying costs no disk reads).
    pub fn open(inbound: &Path, expected_outbound: &Path) -> Result<Self> {
        Ok(Replay {
            inbound: Frames::load(inbound)?,
            outbound: Frames::load(expected_outbound)?,
            traffic: Traffic::default(),
        })
    }

    /// Checks that the run used the whole transcript: every recorded frame was received,
    /// and sent again.
    pub fn finish(mut self) -> Result<()> {
        if self.inbound.next()?.is_some() || self.outbound.next()?.is_some() {
            return Err(Error::protocol(
                "the replayed run to repeat the whole recorded run",
                "a run that ended early",
            ));
        }
        Ok(())
    }
}

impl Channel for Replay {
    fn send(&mut self, frame: &[u8]) -> Result<()> {
        let n = self.traffic.sent;
        match self.outbound.next()? {
            Some(expected) if expected == frame => {
                self.traffic.sent += 4 + frame.len() as u64;
                Ok(())
            }
            other => Err(Error::protocol(
                format!("the frame sent at byte {n} of the recorded run"),
                match other {
                    Some(e) => format!(
                        "a different frame ({} bytes, {} recorded)",
                        frame.len(),
                        e.len()
                    ),
                    None => format!(
                        "a frame of {} bytes after the recorded run ended",
                        frame.len()
                    ),
                },
            )),
        }
    }

    fn recv_into(&mut self, buf: &mut Vec<u8>, max_len: usize) -> Result<()> {
        let frame = self
            .inbound
            .next()?
            .ok_or(Error::PeerClosed(" (the recorded transcript ended)"))?;
        check_frame_len(frame.len(), max_len)?;
        buf.clear();
        buf.extend_from_slice(frame);
        self.traffic.received += 4 + frame.len() as u64;
        Ok(())
    }

    fn traffic(&self) -> Traffic {
        self.traffic
    }

    fn abort(&mut self, _reason: &str) {}

    /// A replay has no clock: its frames are all there.
    fn set_deadline(&mut self, _deadline: Option<Instant>) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::mem_pair;
    use std::time::Duration;

    #[test]
    fn a_replayed_party_gets_its_frames_and_must_repeat_its_own() {
        let dir = std::env::temp_dir().join(format!("venn-transcript-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a_in, b_in) = (dir.join("a"), dir.join("b"));
        let (a, b) = mem_pair(Duration::from_secs(5));
        let (mut a, mut b) = (
            Recording::new(a, &a_in).unwrap(),
            Recording::new(b, &b_in).unwrap(),
        );
        a.send(b"hello").unwrap();
        assert_eq!((&mut b as &mut dyn Channel).recv(10).unwrap(), b"hello");
        b.send(b"world!").unwrap();
        assert_eq!((&mut a as &mut dyn Channel).recv(10).unwrap(), b"world!");
        a.finish().unwrap();
        assert!(!b_in.exists(), "nothing under the final name before finish");
        b.finish().unwrap();

        // A replays: it must send "hello", then receives "world!".
        let mut r = Replay::open(&a_in, &b_in).unwrap();
        r.send(b"hello").unwrap();
        let chan = &mut r as &mut dyn Channel;
        assert!(
            matches!(chan.recv(3), Err(Error::Protocol { .. })),
            "bound checked"
        );
        let mut r = Replay::open(&a_in, &b_in).unwrap();
        assert!(r.send(b"hellO").is_err(), "a different frame is refused");
        let mut r = Replay::open(&a_in, &b_in).unwrap();
        r.send(b"hello").unwrap();
        assert!(r.send(b"more").is_err(), "nothing past the recording");
        let chan = &mut r as &mut dyn Channel;
        assert_eq!(chan.recv(10).unwrap(), b"world!");
        assert!(matches!(chan.recv(10), Err(Error::PeerClosed(_))));
        r.finish().unwrap();
        let mut r = Replay::open(&a_in, &b_in).unwrap();
        r.send(b"hello").unwrap();
        assert!(
            r.finish().is_err(),
            "a run that stops early does not verify"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
