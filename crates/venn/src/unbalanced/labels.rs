//! Labels: a server item's data (up to 64 bytes) that a client learns with a match, and
//! only then. Each label is encrypted under a key from the item's OPRF value — bytes
//! 16..48 of F_k(y), apart from the bytes its tag and item hash come from, so a guessed
//! or extracted tag gives no label key — as APSI's label encryptor does (nonce ‖ label ⊕
//! XOF(key, nonce)), with BLAKE3's keyed XOF and a fresh 16-byte nonce per encryption (a
//! changed label never reuses a keystream).
//!
//! A dataset fixes its label length ℓ ≤ 64: a label is stored as its length byte, its
//! bytes and zeros to ℓ + 1 bytes (a longer one is refused), then 4 zero bytes of check
//! value, all encrypted: opening under the wrong key (a false-positive match) fails the
//! check with probability 1 − 2^-32 and reads as no label rather than as garbage.

use crate::crypto::Prg;
use crate::{Error, Result};

/// The longest label.
pub const MAX_LABEL: usize = 64;

/// The nonce's bytes.
const NONCE: usize = 16;

/// The check value's bytes.
const CHECK: usize = 4;

/// The label key of an item: bytes 16..48 of its OPRF output.
pub fn label_key(output: &[u8; 64]) -> [u8; 32] {
    output[16..48].try_into().expect("32 bytes")
}

/// The bytes of an encrypted label of a dataset whose labels take up to `len` bytes.
pub fn sealed_len(len: usize) -> usize {
    NONCE + 1 + len + CHECK
}

/// The keystream for `key` and `nonce`, over `out`.
fn keystream(key: &[u8; 32], nonce: &[u8], out: &mut [u8]) {
    let mut h = blake3::Hasher::new_keyed(key);
    h.update(b"venn 2026-11 ub label");
    h.update(nonce);
    h.finalize_xof().fill(out);
}

/// `label` encrypted under `key` for a dataset of `len`-byte labels, its nonce from `prg`.
pub fn seal(key: &[u8; 32], label: &[u8], len: usize, prg: &mut Prg) -> Result<Vec<u8>> {
    if len > MAX_LABEL || label.len() > len {
        return Err(Error::Usage(format!(
            "a label of {} bytes: this dataset's take at most {len} (and none more than \
             {MAX_LABEL})",
            label.len()
        )));
    }
    let mut sealed = vec![0u8; sealed_len(len)];
    prg.fill_bytes(&mut sealed[..NONCE]);
    let (nonce, body) = sealed.split_at_mut(NONCE);
    body[0] = label.len() as u8;
    body[1..1 + label.len()].copy_from_slice(label);
    let mut stream = vec![0u8; body.len()];
    keystream(key, nonce, &mut stream);
    body.iter_mut().zip(&stream).for_each(|(b, s)| *b ^= s);
    Ok(sealed)
}

/// The label in `sealed` under `key` (a dataset of `len`-byte labels), or `None` where
/// the key is not the label's: its check value or its padding is not as sealed. Refused
/// if `sealed` is not of the dataset's size.
pub fn open(key: &[u8; 32], sealed: &[u8], len: usize) -> Result<Option<Vec<u8>>> {
    if len > MAX_LABEL || sealed.len() != sealed_len(len) {
        return Err(Error::protocol(
            format!("a sealed label of {} bytes", sealed_len(len.min(MAX_LABEL))),
            format!("{} bytes", sealed.len()),
        ));
    }
    let (nonce, body) = sealed.split_at(NONCE);
    let mut plain = vec![0u8; body.len()];
    keystream(key, nonce, &mut plain);
    plain.iter_mut().zip(body).for_each(|(p, b)| *p ^= b);
    let length = plain[0] as usize;
    let padded_well = length <= len && plain[1 + length..].iter().all(|&b| b == 0);
    Ok(padded_well.then(|| plain[1..1 + length].to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Block;

    /// Labels of every length up to the dataset's open under their key as sealed; a
    /// longer one is refused; two seals of one label differ (fresh nonces); another key
    /// reads no label; a sealed label of the wrong size is refused.
    #[test]
    fn labels_open_under_their_key_only() {
        let mut prg = Prg::from_seed(Block::from(31));
        let mut output = [0u8; 64];
        prg.fill_bytes(&mut output);
        let key = label_key(&output);
        let mut other = output;
        other[20] ^= 1;
        let other = label_key(&other);
        let mut tail = output;
        tail[0] ^= 1;
        tail[60] ^= 1;
        assert_eq!(
            label_key(&tail),
            key,
            "the tag's and item hash's bytes are apart"
        );
        for len in [0, 1, 32, MAX_LABEL] {
            for size in 0..=len {
                let label: Vec<u8> = (0..size as u8).map(|b| b.wrapping_mul(37)).collect();
                let sealed = seal(&key, &label, len, &mut prg).unwrap();
                assert_eq!(sealed.len(), sealed_len(len));
                assert_eq!(open(&key, &sealed, len).unwrap(), Some(label.clone()));
                assert_eq!(open(&other, &sealed, len).unwrap(), None, "another key");
                let again = seal(&key, &label, len, &mut prg).unwrap();
                assert_ne!(again, sealed, "a fresh nonce");
            }
            assert!(seal(&key, &vec![1; len + 1], len, &mut prg).is_err());
        }
        assert!(seal(&key, b"", MAX_LABEL + 1, &mut prg).is_err());
        let sealed = seal(&key, b"abc", 8, &mut prg).unwrap();
        assert!(open(&key, &sealed[1..], 8).is_err());
        assert!(open(&key, &sealed, 9).is_err());
    }
}
