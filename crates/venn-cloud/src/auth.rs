//! Who is asking: clients sign every request with their Ed25519 key (registered with the
//! service under a name), workers show the secret of the identity the operator enrolled
//! them under.
//!
//! A signature covers the method, the path with its query, the client's name, the time,
//! a fresh nonce and the SHA-256 of the body, under a domain tag. The service refuses a
//! time more than [`SIGNATURE_WINDOW`] seconds off its clock and a nonce it has seen
//! within twice that window, so a captured request cannot be replayed.
//!
//! Keys and signatures are checked strictly: a key must be a canonical encoding of a point
//! of large order (with a key of small order, the identity among them, one signature would
//! verify many requests), and a signature's R must be canonical and of large order and its
//! S reduced (`verify_strict`), so no request has a second valid signature.

use crate::api::{from_hex, SIGNATURE_WINDOW};
use crate::error::{Error, Result};
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;

/// The header naming the client.
pub const CLIENT: &str = "x-venn-client";
/// The header with the request's time (Unix seconds).
pub const TIME: &str = "x-venn-time";
/// The header with the request's nonce (hex).
pub const NONCE: &str = "x-venn-nonce";
/// The header with the signature (hex).
pub const SIGNATURE: &str = "x-venn-signature";

/// A client's identity: its registered name and signing key.
#[derive(Clone)]
pub struct Identity {
    /// The name it is registered under.
    pub name: String,
    key: SigningKey,
}

/// An identity file's contents.
#[derive(Serialize, Deserialize)]
struct IdentityFile {
    name: String,
    /// Hex of the 32-byte Ed25519 secret key.
    secret_key: String,
}

impl Identity {
    /// A new identity named `name` with a fresh key.
    pub fn generate(name: &str) -> Result<Identity> {
        check_name(name)?;
        let mut seed = [0u8; 32];
        crate::api::getrandom(&mut seed);
        Ok(Identity {
            name: name.to_owned(),
            key: SigningKey::from_bytes(&seed),
        })
    }

    /// Loads an identity file.
    pub fn load(path: &Path) -> Result<Identity> {
        let text = read_secret_file(path)?;
        let file: IdentityFile = serde_json::from_str(&text)
            .map_err(|e| Error::BadRequest(format!("identity file '{}': {e}", path.display())))?;
        let seed = from_hex::<32>(&file.secret_key, "key").map_err(|_| {
            Error::BadRequest(format!("identity file '{}': a bad key", path.display()))
        })?;
        check_name(&file.name)?;
        Ok(Identity {
            name: file.name,
            key: SigningKey::from_bytes(&seed),
        })
    }

    /// Saves the identity to a new file readable by its owner only; an existing file is
    /// never overwritten.
    pub fn save(&self, path: &Path) -> Result<()> {
        let file = IdentityFile {
            name: self.name.clone(),
            secret_key: hex::encode(self.key.to_bytes()),
        };
        let text = serde_json::to_string_pretty(&file).expect("serialisable");
        write_secret_file(path, text.as_bytes())
    }

    /// The public key, hex-encoded.
    pub fn public_key(&self) -> String {
        hex::encode(self.key.verifying_key().to_bytes())
    }

    /// The headers that authenticate a request.
    pub fn sign(&self, method: &str, path: &str, body: &[u8]) -> Vec<(&'static str, String)> {
        let time = crate::api::now().to_string();
        let mut nonce = [0u8; 16];
        crate::api::getrandom(&mut nonce);
        let nonce = hex::encode(nonce);
        let message = signed_message(method, path, &self.name, &time, &nonce, body);
        let signature = hex::encode(self.key.sign(&message).to_bytes());
        vec![
            (CLIENT, self.name.clone()),
            (TIME, time),
            (NONCE, nonce),
            (SIGNATURE, signature),
        ]
    }
}

/// Names are 1 to 64 characters of letters, digits, '-', '_' and '.'.
pub fn check_name(name: &str) -> Result<()> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(Error::BadRequest(format!(
            "'{}' is not a name: 1 to 64 letters, digits, '-', '_' or '.'",
            venn::peer_text(name)
        )))
    }
}

/// What a request's signature covers.
fn signed_message(
    method: &str,
    path: &str,
    client: &str,
    time: &str,
    nonce: &str,
    body: &[u8],
) -> Vec<u8> {
    let body_hash = hex::encode(Sha256::digest(body));
    format!("venn-cloud-v1\n{method}\n{path}\n{client}\n{time}\n{nonce}\n{body_hash}").into_bytes()
}

/// A request's authentication headers, as received.
pub struct Claim<'a> {
    /// [`CLIENT`]: the name the request claims to be from.
    pub client: &'a str,
    /// [`TIME`]: when it was signed (Unix seconds).
    pub time: &'a str,
    /// [`NONCE`]: its nonce (hex), so that no request is taken twice.
    pub nonce: &'a str,
    /// [`SIGNATURE`]: the Ed25519 signature (hex) of its canonical form.
    pub signature: &'a str,
}

impl Claim<'_> {
    /// Checks the request's time against `now` and the nonce's form, before the body is
    /// read; returns the time. Whether the nonce was seen is the caller's to check.
    pub fn check_fresh(&self, now: i64) -> Result<i64> {
        let bad = |what: &str| Error::Unauthenticated(what.to_owned());
        let time: i64 = self.time.parse().map_err(|_| bad("a bad request time"))?;
        // Exact for any two times (a difference of i64s can overflow, and wrap to pass).
        if time.abs_diff(now) > SIGNATURE_WINDOW.unsigned_abs() {
            return Err(bad(
                "the request's time is too far from the service's clock",
            ));
        }
        from_hex::<16>(self.nonce, "nonce").map_err(|_| bad("a bad nonce"))?;
        Ok(time)
    }

    /// Checks the signature with the client's `public_key` (hex).
    pub fn verify(&self, public_key: &str, method: &str, path: &str, body: &[u8]) -> Result<()> {
        let bad = |what: &str| Error::Unauthenticated(what.to_owned());
        let key =
            verifying_key(public_key).map_err(|_| bad("the client's key is not an Ed25519 key"))?;
        let signature = from_hex::<64>(self.signature, "signature")
            .map(|s| Signature::from_bytes(&s))
            .map_err(|_| bad("a malformed signature"))?;
        let message = signed_message(method, path, self.client, self.time, self.nonce, body);
        key.verify_strict(&message, &signature)
            .map_err(|_| bad("the signature does not verify"))
    }
}

/// A public key (hex): the canonical encoding of an Ed25519 point of large order.
fn verifying_key(public_key: &str) -> Result<VerifyingKey> {
    let bad = |why: &str| Error::BadRequest(format!("the public key {why}"));
    let bytes =
        from_hex::<32>(public_key, "public key").map_err(|_| bad("is not 32 bytes in hex"))?;
    let key = VerifyingKey::from_bytes(&bytes).map_err(|_| bad("is not an Ed25519 point"))?;
    if key.is_weak() {
        return Err(bad(
            "is a point of small order: one signature would verify many messages",
        ));
    }
    if key.to_edwards().compress().to_bytes() != bytes {
        return Err(bad("is not encoded canonically"));
    }
    Ok(key)
}

/// A client's public key in the one form the service keeps and compares: the lower-case
/// hex of an Ed25519 key of large order, canonically encoded. Keys arrive in hex of either
/// case, and the store's unique check compares text, so a key is made canonical as it
/// enters (registration) and only in this form reaches the store: a key is registered
/// once, whatever the case it was sent in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicKey(String);

impl PublicKey {
    /// Parses a public key's hex (either case), refusing a key of small order or one not
    /// encoded canonically.
    pub fn parse(public_key: &str) -> Result<PublicKey> {
        verifying_key(public_key).map(|key| PublicKey(hex::encode(key.to_bytes())))
    }

    /// The key's canonical hex.
    pub fn as_hex(&self) -> &str {
        &self.0
    }
}

/// An external worker's identity, enrolled by the operator (`venn cloud enrol-worker`): its
/// name and a 32-byte secret, kept in an owner-only file as `NAME:<64 hex>` and shown to
/// the service as `Authorization: Bearer NAME:<64 hex>`. The service keeps only the
/// secret's SHA-256, so that each worker can be quarantined alone.
pub struct WorkerIdentity {
    name: String,
    secret: [u8; 32],
}

impl WorkerIdentity {
    /// A new identity named `name` with a fresh secret.
    pub fn generate(name: &str) -> Result<WorkerIdentity> {
        check_name(name)?;
        let mut secret = [0u8; 32];
        crate::api::getrandom(&mut secret);
        Ok(WorkerIdentity {
            name: name.to_owned(),
            secret,
        })
    }

    /// Loads an identity file.
    pub fn load(path: &Path) -> Result<WorkerIdentity> {
        let text = read_secret_file(path)?;
        let (name, secret) = parse_worker(text.trim()).ok_or_else(|| {
            Error::BadRequest(format!(
                "'{}' does not hold a worker identity (NAME:<64 hex digits>, from `venn cloud \
                 enrol-worker`)",
                path.display()
            ))
        })?;
        Ok(WorkerIdentity {
            name: name.to_owned(),
            secret,
        })
    }

    /// Saves the identity to a new file readable by its owner only; an existing file is
    /// never overwritten.
    pub fn save(&self, path: &Path) -> Result<()> {
        let text = format!("{}:{}\n", self.name, hex::encode(self.secret));
        write_secret_file(path, text.as_bytes())
    }

    /// The worker's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The header value.
    pub fn bearer(&self) -> String {
        format!("Bearer {}:{}", self.name, hex::encode(self.secret))
    }

    /// Hex of the secret's SHA-256: what the service keeps.
    pub fn secret_hash(&self) -> String {
        hex::encode(Sha256::digest(self.secret))
    }
}

/// Shows the name only: the secret stays out of logs.
impl std::fmt::Debug for WorkerIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerIdentity")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// `NAME:<64 hex>`: a worker's name and secret.
fn parse_worker(text: &str) -> Option<(&str, [u8; 32])> {
    let (name, secret) = text.split_once(':')?;
    check_name(name).ok()?;
    Some((name, from_hex::<32>(secret, "secret").ok()?))
}

/// The worker an `Authorization` header claims to be and the hex SHA-256 of the secret it
/// shows, which the service compares with the one it keeps (the time that takes says
/// nothing about the secret).
pub fn worker_claim(header: Option<&str>) -> Result<(&str, String)> {
    header
        .and_then(|h| h.strip_prefix("Bearer "))
        .and_then(parse_worker)
        .map(|(name, secret)| (name, hex::encode(Sha256::digest(secret))))
        .ok_or_else(|| Error::Unauthenticated("not a worker of this service".into()))
}

/// Reads a file holding a secret, refusing one that others may read.
pub fn read_secret_file(path: &Path) -> Result<String> {
    let fail =
        |e: std::io::Error| Error::BadRequest(format!("cannot read '{}': {e}", path.display()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).map_err(fail)?.permissions().mode();
        if mode & 0o077 != 0 {
            return Err(Error::BadRequest(format!(
                "'{}' holds a secret but others may read it (mode {:o}): chmod 600 it",
                path.display(),
                mode & 0o777
            )));
        }
    }
    std::fs::read_to_string(path).map_err(fail)
}

/// Writes a secret to a new file readable by its owner only (never overwriting one).
pub fn write_secret_file(path: &Path, bytes: &[u8]) -> Result<()> {
    venn::util::files::write_new(path, bytes, 0o600).map_err(|e| Error::BadRequest(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use curve25519_dalek::Scalar;
    use sha2::Sha512;

    /// The canonical encodings of the eight points of small order (the identity, order 2,
    /// two of order 4, four of order 8).
    const SMALL_ORDER: [&str; 8] = [
        "0100000000000000000000000000000000000000000000000000000000000000",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000080",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
    ];

    /// ℓ, the order of the base point, little-endian.
    const ORDER: &str = "edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010";

    /// `y + p` for `y < 19`: the second, non-canonical, encoding of the point with `y`.
    fn non_canonical(y: u8) -> [u8; 32] {
        let mut bytes = [0xff; 32];
        bytes[0] = 0xed + y;
        bytes[31] = 0x7f;
        bytes
    }

    /// The claim of a request's `headers` (as [`Identity::sign`] makes them).
    fn claim_of<'a>(headers: &'a [(&str, String)]) -> Claim<'a> {
        Claim {
            client: &headers[0].1,
            time: &headers[1].1,
            nonce: &headers[2].1,
            signature: &headers[3].1,
        }
    }

    /// Keys of small order and non-canonical encodings are refused, at registration and
    /// when a signature is checked; a key's hex in upper case is the key in lower case.
    #[test]
    fn weak_or_non_canonical_keys_are_refused() {
        let mut refused: Vec<[u8; 32]> = SMALL_ORDER
            .iter()
            .map(|k| from_hex::<32>(k, "key").unwrap())
            .collect();
        for k in &refused {
            assert!(VerifyingKey::from_bytes(k).unwrap().is_weak());
        }
        // A point of large order with a second encoding, and the identity's second one.
        let large = (2..19)
            .map(non_canonical)
            .find(|k| VerifyingKey::from_bytes(k).is_ok_and(|k| !k.is_weak()))
            .unwrap();
        refused.extend([large, non_canonical(1)]);
        let honest = Identity::generate("a").unwrap();
        let key = honest.public_key();
        assert_eq!(PublicKey::parse(&key).unwrap().as_hex(), key);
        let upper = PublicKey::parse(&key.to_uppercase()).unwrap();
        assert_eq!(upper.as_hex(), key, "canonical: lower-case hex");
        let headers = honest.sign("GET", "/", b"");
        for key in refused {
            let key = hex::encode(key);
            let err = PublicKey::parse(&key).unwrap_err();
            assert!(matches!(err, Error::BadRequest(_)), "{key}: {err}");
            let err = claim_of(&headers)
                .verify(&key, "GET", "/", b"")
                .unwrap_err();
            assert!(matches!(err, Error::Unauthenticated(_)), "{key}: {err}");
        }
    }

    /// A signature of `claim` by `identity` with the given R and `S = k·a` (k = H(R, A,
    /// message), a the secret scalar), so that `[S]B - [k]A` is the identity: a check
    /// without the cofactor that compares R's bytes accepts it when R is the identity's
    /// canonical encoding.
    fn forged(identity: &Identity, claim: &Claim, r: [u8; 32]) -> String {
        use sha2::Digest;
        let a = identity.key.verifying_key().to_bytes();
        let message = signed_message("GET", "/", claim.client, claim.time, claim.nonce, b"");
        let h = Sha512::new()
            .chain_update(r)
            .chain_update(a)
            .chain_update(message);
        let k = Scalar::from_bytes_mod_order_wide(&h.finalize().into());
        let s = k * identity.key.to_scalar();
        hex::encode([r, s.to_bytes()].concat())
    }

    /// Signatures are checked strictly: an R of small order or encoded non-canonically, or
    /// an S not reduced, is refused.
    #[test]
    fn malleable_signatures_are_refused() {
        let identity = Identity::generate("a").unwrap();
        let key = identity.public_key();
        let headers = identity.sign("GET", "/", b"");
        let claim = claim_of(&headers);
        claim.verify(&key, "GET", "/", b"").unwrap();
        // S + ℓ: the same signature, S not reduced (ℓ < 2^253, so S + ℓ < 2^254).
        let mut unreduced = from_hex::<64>(claim.signature, "signature").unwrap();
        let mut carry = 0u16;
        for (byte, l) in unreduced[32..]
            .iter_mut()
            .zip(from_hex::<32>(ORDER, "ℓ").unwrap())
        {
            let sum = *byte as u16 + l as u16 + carry;
            (*byte, carry) = (sum as u8, sum >> 8);
        }
        let identity_r = from_hex::<32>(SMALL_ORDER[0], "R").unwrap();
        for signature in [
            hex::encode(unreduced),
            forged(&identity, &claim, identity_r),
            forged(&identity, &claim, non_canonical(1)),
        ] {
            let forged = Claim {
                signature: &signature,
                ..claim_of(&headers)
            };
            let err = forged.verify(&key, "GET", "/", b"").unwrap_err();
            assert!(matches!(err, Error::Unauthenticated(_)), "{err}");
        }
    }

    /// A worker's identity file gives back the identity; its header claims its name and
    /// its secret's hash, and anything else is no worker's.
    #[test]
    fn worker_identities_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let (worker, path) = (
            WorkerIdentity::generate("w-1").unwrap(),
            dir.path().join("w"),
        );
        worker.save(&path).unwrap();
        assert!(worker.save(&path).is_err(), "never overwritten");
        let bearer = worker.bearer();
        assert_eq!(WorkerIdentity::load(&path).unwrap().bearer(), bearer);
        let claim = worker_claim(Some(&bearer)).unwrap();
        assert_eq!(claim, ("w-1", worker.secret_hash()));
        let other = format!("Bearer {}", "ab".repeat(32));
        let basic = bearer.replacen("Bearer", "Basic", 1);
        let spaced = bearer.replacen("w-1", "w 1", 1);
        for bad in [
            None,
            Some(""),
            Some(&other),
            Some(&bearer[..bearer.len() - 1]),
        ]
        .into_iter()
        .chain([Some(basic.as_str()), Some(spaced.as_str())])
        {
            let err = worker_claim(bad).unwrap_err();
            assert!(matches!(err, Error::Unauthenticated(_)), "{bad:?}");
        }
        assert!(WorkerIdentity::generate("a:b").is_err());
    }

    /// A claim stamped `time`.
    fn stamped(time: &str) -> Claim<'_> {
        Claim {
            client: "a",
            time,
            nonce: "00112233445566778899aabbccddeeff",
            signature: "",
        }
    }

    /// A request's time passes only within the window of the service's clock, also for
    /// times and clocks at the ends of the range (where a difference would wrap).
    #[test]
    fn request_times_are_compared_exactly() {
        for now in [0, 1_700_000_000, i64::MIN, i64::MAX] {
            let w = SIGNATURE_WINDOW;
            for fresh in [now.saturating_sub(w), now, now.saturating_add(w)] {
                assert_eq!(stamped(&fresh.to_string()).check_fresh(now).unwrap(), fresh);
            }
            let stale = [
                now.checked_sub(w + 1),
                now.checked_add(w + 1),
                now.checked_add(i64::MIN),
                now.checked_sub(i64::MAX),
                now.checked_add(i64::MAX),
            ];
            let far = [0, 1, -1, i64::MIN, i64::MIN + 1, i64::MAX, i64::MAX - 1];
            for time in stale.into_iter().flatten().chain(far) {
                if time.abs_diff(now) > w as u64 {
                    let err = stamped(&time.to_string()).check_fresh(now).unwrap_err();
                    assert!(matches!(err, Error::Unauthenticated(_)), "{time} at {now}");
                }
            }
        }
        for bad in [
            &u64::MAX.to_string(),
            "9223372036854775808",
            "",
            "1e9",
            " 1",
        ] {
            let err = stamped(bad).check_fresh(1_700_000_000).unwrap_err();
            assert!(matches!(err, Error::Unauthenticated(_)), "{bad}");
        }
    }
}
