//! The prime-order group Ristretto255 (curve25519-dalek): random scalars from our PRG,
//! hashing onto the group, and decoding of untrusted points and scalars.

use super::Prg;
use crate::{Error, Result};
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use sha2::{Digest, Sha512};

/// A uniformly random scalar.
pub fn random_scalar(prg: &mut Prg) -> Scalar {
    let mut wide = [0u8; 64];
    prg.fill_bytes(&mut wide);
    Scalar::from_bytes_mod_order_wide(&wide)
}

/// A uniformly random group element with unknown discrete logarithm.
pub fn random_point(prg: &mut Prg) -> RistrettoPoint {
    let mut wide = [0u8; 64];
    prg.fill_bytes(&mut wide);
    RistrettoPoint::from_uniform_bytes(&wide)
}

/// A random oracle onto the group (SHA-512, then the Ristretto255 map), domain-separated;
/// the lengths of the parts are bound in.
pub fn hash_to_point(domain: &str, parts: &[&[u8]]) -> RistrettoPoint {
    RistrettoPoint::from_uniform_bytes(&wide_hash(domain, parts))
}

fn wide_hash(domain: &str, parts: &[&[u8]]) -> [u8; 64] {
    let mut h = Sha512::new();
    h.update((domain.len() as u64).to_le_bytes());
    h.update(domain.as_bytes());
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().into()
}

/// Decodes a point received from the peer.
pub fn decode_point(bytes: &[u8]) -> Result<RistrettoPoint> {
    CompressedRistretto::from_slice(bytes)
        .ok()
        .and_then(|c| c.decompress())
        .ok_or_else(|| Error::protocol("a Ristretto255 point", "an invalid encoding"))
}

/// Decodes a scalar received from the peer (canonical encodings only).
pub fn decode_scalar(bytes: &[u8]) -> Result<Scalar> {
    let bytes: [u8; 32] = bytes
        .try_into()
        .map_err(|_| Error::protocol("a 32-byte scalar", format!("{} bytes", bytes.len())))?;
    Option::from(Scalar::from_canonical_bytes(bytes))
        .ok_or_else(|| Error::protocol("a canonical scalar", "a non-canonical encoding"))
}

/// A Fiat–Shamir transcript: everything appended is hashed (SHA-512, domain- and
/// session-separated), and the challenge is derived from all of it.
pub struct FiatShamir(Sha512);

impl FiatShamir {
    /// A transcript for `domain` in session `sid`.
    pub fn new(domain: &str, sid: &[u8]) -> Self {
        let mut h = Sha512::new();
        for p in [domain.as_bytes(), sid] {
            h.update((p.len() as u64).to_le_bytes());
            h.update(p);
        }
        FiatShamir(h)
    }

    /// Appends fixed-length data (encodings of points and scalars).
    pub fn append(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The challenge scalar.
    pub fn challenge(self) -> Scalar {
        Scalar::from_bytes_mod_order_wide(&self.0.finalize().into())
    }
}
