//! Transcript confirmation: before a party uses its output, both parties compare a digest
//! of every frame each sent and received (issue: a single flipped bit in a seed or a
//! returned position used to give a wrong intersection and exit 0).
//!
//! [`Confirming`] wraps the channel for the whole run and hashes each frame, length first:
//! with BLAKE3 until the handshake has given the session key, then with the polynomial
//! universal hash [`PolyHash`] at a key derived from it (2–3× faster than BLAKE3 on one
//! core, which mattered at the tens of gigabytes `rr17-de-sm` moves: a tenth of its
//! time). [`Confirming::confirm`] sends each direction's digest — a PRF (keyed BLAKE3) of
//! both hashes, so the polynomial's value, which would reveal its key, never leaves the
//! machine — and checks the peer's pair crosswise; any difference is [`Error::Integrity`].
//!
//! **What it guarantees.** A frame altered, dropped, added or reordered changes the
//! polynomial hash except with probability (ℓ + 1)/2^128 for a stream of ℓ blocks (below
//! 2^-90 for any run Venn can make) whenever the alteration does not depend on the key:
//! always for accidental corruption, and for an attacker on the wire whenever the session
//! key is secret (a run from a precomputed state), as the digests' MAC assumes too. Where
//! the session key is public (a fresh run) an attacker on the wire could replace the
//! digests themselves, with BLAKE3 as with this hash: there the check is against accidents,
//! and TLS is what authenticates the frames. A cheating peer gains nothing from either
//! hash: it decides what it sends and cannot make us receive anything else.

use crate::crypto::{Block, PolyHash};
use crate::net::Channel;
use crate::session::Role;
use crate::{Error, Result};

/// The digest of one direction's frames.
struct Digest {
    /// The frames before the session key was known (the handshake).
    handshake: blake3::Hasher,
    /// The frames after it.
    keyed: Option<PolyHash>,
}

impl Digest {
    fn new() -> Self {
        Digest {
            handshake: blake3::Hasher::new_derive_key("venn/transcript/frames"),
            keyed: None,
        }
    }

    fn absorb(&mut self, frame: &[u8]) {
        let len = (frame.len() as u64).to_le_bytes();
        match &mut self.keyed {
            Some(poly) => {
                poly.update(&len);
                poly.update(frame);
            }
            None => {
                self.handshake.update(&len);
                self.handshake.update(frame);
            }
        }
    }

    /// The digest sent to the peer: a PRF under `key` of both hashes.
    fn finalize(&self, key: &[u8; 32]) -> [u8; 32] {
        let mut h = blake3::Hasher::new_keyed(&blake3::derive_key("venn/transcript/digest", key));
        h.update(self.handshake.finalize().as_bytes());
        match &self.keyed {
            Some(poly) => h.update(&[1]).update(&poly.finalize().to_le_bytes()),
            None => h.update(&[0]),
        };
        *h.finalize().as_bytes()
    }
}

/// A channel that keeps a digest of the frames in each direction.
pub struct Confirming<'a> {
    inner: &'a mut dyn Channel,
    sent: Digest,
    received: Digest,
}

impl<'a> Confirming<'a> {
    /// Starts hashing everything that passes through `inner`.
    pub fn new(inner: &'a mut dyn Channel) -> Self {
        Confirming {
            inner,
            sent: Digest::new(),
            received: Digest::new(),
        }
    }

    /// Hashes the frames from here on under the session's `key`. Both parties call this
    /// at the same point of the run (when the handshake, whose frames each has sent and
    /// received in full, gives the key), so each direction's frames split alike.
    pub fn key(&mut self, key: &[u8; 32]) {
        let h = blake3::derive_key("venn/transcript/polynomial-key", key);
        let h = Block::from_le_bytes(h[..16].try_into().expect("16 bytes"));
        self.sent.keyed = Some(PolyHash::new(h));
        self.received.keyed = Some(PolyHash::new(h));
    }

    /// Exchanges digests with the peer and checks that what each side received is what
    /// the other sent. The digests travel with a MAC under the session's `key`, so where
    /// that key is secret (a run from a precomputed state) nobody else can forge them.
    /// The exchange itself is the one message left out of the digests.
    pub fn confirm(&mut self, key: &[u8; 32], role: Role) -> Result<()> {
        let sent = self.sent.finalize(key);
        let received = self.received.finalize(key);
        // The MAC names the role that sends it, so our own message reflected back fails.
        let mac = |role: Role, a: &[u8], b: &[u8]| {
            let mut h = blake3::Hasher::new_keyed(key);
            h.update(&[role.code()]);
            h.update(a);
            h.update(b);
            h.finalize()
        };
        let ours = mac(role, &sent, &received);
        self.inner
            .send(&[&sent[..], &received, ours.as_bytes()].concat())?;
        let theirs = self.inner.recv_exact(96, "transcript digests")?;
        let (their_sent, rest) = theirs.split_at(32);
        let (their_received, their_mac) = rest.split_at(32);
        let their_mac = blake3::Hash::from_bytes(their_mac.try_into().expect("32 bytes"));
        if mac(role.other(), their_sent, their_received) != their_mac {
            return Err(Error::Integrity(
                "the peer's transcript digests were not made with this session's key".into(),
            ));
        }
        let mut differ = Vec::new();
        if their_sent != received {
            differ.push("what we received is not what the peer sent");
        }
        if their_received != sent {
            differ.push("what the peer received is not what we sent");
        }
        if differ.is_empty() {
            Ok(())
        } else {
            Err(Error::Integrity(format!(
                "{}: a frame was altered, dropped or replayed between the parties; no output is \
                 written",
                differ.join(", and ")
            )))
        }
    }
}

impl<'a> crate::net::Layer for Confirming<'a> {
    type Inner = dyn Channel + 'a;
    fn inner(&self) -> &(dyn Channel + 'a) {
        &*self.inner
    }
    fn inner_mut(&mut self) -> &mut (dyn Channel + 'a) {
        &mut *self.inner
    }

    fn send(&mut self, frame: &[u8]) -> Result<()> {
        self.inner.send(frame)?;
        self.sent.absorb(frame);
        Ok(())
    }

    fn recv_into(&mut self, buf: &mut Vec<u8>, max_len: usize) -> Result<()> {
        self.inner.recv_into(buf, max_len)?;
        self.received.absorb(buf);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::mem_pair;
    use std::time::Duration;

    const KEY: [u8; 32] = [3; 32];

    /// A frame each way before the key, then after it; `flip` flips a bit of the
    /// receiver's copy of frame `flip`'s first byte (0 before the key, 1 after), as on
    /// the wire.
    fn exchange(flip: Option<usize>) -> (Result<()>, Result<()>) {
        let (mut a, mut b) = mem_pair(Duration::from_secs(5));
        std::thread::scope(|s| {
            let t = s.spawn(|| {
                let mut b = Confirming::new(&mut b);
                for k in 0..2 {
                    let mut got = b.inner.recv(2000).unwrap();
                    if flip == Some(k) {
                        got[0] ^= 1;
                    }
                    b.received.absorb(&got);
                    b.send(b"back").unwrap();
                    if k == 0 {
                        b.key(&KEY);
                    }
                }
                b.confirm(&KEY, Role::Receiver)
            });
            let mut a = Confirming::new(&mut a);
            for k in 0..2 {
                a.send(&vec![k as u8; 1500]).unwrap();
                (&mut a as &mut dyn Channel).recv(10).unwrap();
                if k == 0 {
                    a.key(&KEY);
                }
            }
            (a.confirm(&KEY, Role::Sender), t.join().unwrap())
        })
    }

    #[test]
    fn equal_transcripts_confirm_and_altered_ones_do_not() {
        let (a, b) = exchange(None);
        a.unwrap();
        b.unwrap();
        for at in [0, 1] {
            let (a, b) = exchange(Some(at));
            for e in [a.unwrap_err(), b.unwrap_err()] {
                assert!(matches!(e, Error::Integrity(_)), "frame {at}: {e}");
            }
        }
    }
}
