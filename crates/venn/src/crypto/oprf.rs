//! The oblivious PRF of RFC 9497 ("Oblivious Pseudorandom Functions (OPRFs) Using
//! Prime-Order Groups"), ciphersuite ristretto255-SHA512, in its base mode (OPRF) and its
//! verifiable mode (VOPRF), batched: the server's key k is long-lived, and a client learns
//! F_k(x) = SHA-512(len(x) ‖ x ‖ len(Z) ‖ Z ‖ "Finalize"), Z = k·HashToGroup(x), for its
//! inputs without the server seeing them (§3.3.1: `Blind`, `BlindEvaluate`, `Finalize`).
//! In the verifiable mode the server proves, with one batched DLEQ proof (§2.2), that it
//! answered every element of a request under the key whose public half pkS = k·G the
//! client holds: a server cannot answer clients under keys of their own.
//!
//! Hashing to the group and to scalars is `expand_message_xmd` with SHA-512 (RFC 9380
//! §5.3.1) to 64 bytes, then the ristretto255 one-way map (`from_uniform_bytes`) or a
//! reduction mod ℓ, with the RFC's domain separation tags (§4.1), so that its test vectors
//! (Appendix A.1.1, A.1.2) are this module's tests. Every element read from a peer is
//! checked as the RFC's `DeserializeElement` asks: a canonical encoding, not the identity.

use super::group::{decode_point, random_scalar};
use super::Prg;
use crate::{Error, Result};
use curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT;
use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{Identity, IsIdentity, VartimeMultiscalarMul};
use rayon::prelude::*;
use sha2::{Digest, Sha512};

/// The bytes of a serialised element (a compressed ristretto255 point) or scalar.
pub const ELEMENT_BYTES: usize = 32;

/// The bytes of a batched DLEQ proof: the challenge c and the response s.
pub const PROOF_BYTES: usize = 64;

/// The bytes of an output: SHA-512's.
pub const OUTPUT_BYTES: usize = 64;

/// The ciphersuite's identifier (§4.1).
const IDENTIFIER: &[u8] = b"ristretto255-SHA512";

/// The RFC's protocol variants this module offers (§3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The base mode: outputs unverified.
    Oprf,
    /// The verifiable mode: each batch of answers comes with a proof against pkS.
    Voprf,
}

impl Mode {
    /// `contextString` = "OPRFV1-" ‖ I2OSP(mode, 1) ‖ "-" ‖ identifier (§3.1).
    fn context(self) -> Vec<u8> {
        let mode = match self {
            Mode::Oprf => 0u8,
            Mode::Voprf => 1,
        };
        [b"OPRFV1-".as_slice(), &[mode], b"-", IDENTIFIER].concat()
    }

    /// The domain separation tag `prefix` ‖ contextString.
    fn dst(self, prefix: &[u8]) -> Vec<u8> {
        [prefix, &self.context()].concat()
    }
}

/// `expand_message_xmd` (RFC 9380 §5.3.1) with SHA-512, for the 64 bytes this suite's
/// hashes take (one block of output: `ell` = 1), over `msg` given in parts.
fn expand_message_xmd(msg: &[&[u8]], dst: &[u8]) -> [u8; 64] {
    // Every DST here is a fixed string far below 256 bytes (RFC 9380's bound).
    debug_assert!(dst.len() < 256);
    let dst_len = [dst.len() as u8];
    let mut h = Sha512::new();
    h.update([0u8; 128]); // Z_pad: SHA-512's block of zeros
    for part in msg {
        h.update(part);
    }
    h.update(64u16.to_be_bytes()); // l_i_b_str
    h.update([0u8]);
    h.update(dst);
    h.update(dst_len);
    let b0 = h.finalize();
    let mut h = Sha512::new();
    h.update(b0);
    h.update([1u8]);
    h.update(dst);
    h.update(dst_len);
    h.finalize().into()
}

/// `HashToGroup` (§4.1): the input's element, never the identity but with negligible
/// probability (`Blind` refuses it then, as the RFC says).
fn hash_to_group(mode: Mode, input: &[u8]) -> RistrettoPoint {
    RistrettoPoint::from_uniform_bytes(&expand_message_xmd(&[input], &mode.dst(b"HashToGroup-")))
}

/// `HashToScalar` (§4.1) of `msg` under the tag `dst`.
fn hash_to_scalar(msg: &[&[u8]], dst: &[u8]) -> Scalar {
    Scalar::from_bytes_mod_order_wide(&expand_message_xmd(msg, dst))
}

/// I2OSP(`n`, 2): a length or an index in a transcript (callers keep `n` below 2^16).
fn two_bytes(n: usize) -> [u8; 2] {
    debug_assert!(n <= u16::MAX as usize);
    (n as u16).to_be_bytes()
}

/// The longest input: its length is two bytes of `Finalize`'s transcript.
pub const MAX_INPUT_BYTES: usize = u16::MAX as usize;

/// `HashToGroup` of an input the RFC takes: at most [`MAX_INPUT_BYTES`], and not one
/// whose element is the identity (`InvalidInputError`, negligibly likely).
fn input_element(mode: Mode, input: &[u8]) -> Result<RistrettoPoint> {
    if input.len() > MAX_INPUT_BYTES {
        return Err(Error::Usage(format!(
            "an OPRF input of {} bytes: at most {MAX_INPUT_BYTES}",
            input.len()
        )));
    }
    let element = hash_to_group(mode, input);
    match element.is_identity() {
        true => Err(Error::Usage("an input that hashes to the identity".into())),
        false => Ok(element),
    }
}

/// Reads an element from a peer (`DeserializeElement`, §4.1 and §2.1): refused if it is
/// not the canonical encoding of a ristretto255 point, or if it is the identity.
pub fn read_element(bytes: &[u8]) -> Result<RistrettoPoint> {
    if bytes.len() != ELEMENT_BYTES {
        return Err(Error::protocol(
            "a 32-byte ristretto255 element",
            format!("{} bytes", bytes.len()),
        ));
    }
    let point = decode_point(bytes)?;
    if point.is_identity() {
        return Err(Error::protocol("a ristretto255 element", "the identity"));
    }
    Ok(point)
}

/// Elements with their encodings: those read from a peer keep the bytes they came in,
/// new ones are compressed once, so that a proof's transcript hashes the same bytes
/// without compressing every element again (a compression costs a field inversion).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Elements {
    points: Vec<RistrettoPoint>,
    encoded: Vec<[u8; ELEMENT_BYTES]>,
}

impl Elements {
    /// The doubles of `halves`, compressed in batches (a batch shares one field
    /// inversion: ristretto255's `double_and_compress_batch`) on the current rayon pool's
    /// threads. Who computes s·P can compute (s/2)·P as cheaply and save each
    /// compression's own inversion.
    pub fn of_halves(halves: Vec<RistrettoPoint>) -> Elements {
        let points = halves.par_iter().map(|h| h + h).collect();
        let encoded = compress_doubles(&halves);
        Elements { points, encoded }
    }

    /// The points.
    pub fn points(&self) -> &[RistrettoPoint] {
        &self.points
    }

    /// Their encodings.
    pub fn encoded(&self) -> &[[u8; ELEMENT_BYTES]] {
        &self.encoded
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Their encodings one after another, as sent.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.encoded.concat()
    }
}

/// Points compressed in one batch each: a batch shares its field inversion.
const COMPRESS_BATCH: usize = 256;

/// The encodings of the doubles of `halves`, in batches on the current rayon pool.
fn compress_doubles(halves: &[RistrettoPoint]) -> Vec<[u8; ELEMENT_BYTES]> {
    (halves.par_chunks(COMPRESS_BATCH))
        .flat_map_iter(RistrettoPoint::double_and_compress_batch)
        .map(|c| c.to_bytes())
        .collect()
}

/// A half: the scalar 1/2, for [`Elements::of_halves`].
fn half() -> Scalar {
    Scalar::from(2u8).invert()
}

/// Reads `count` elements, one after another, from a body of exactly that many
/// (checked before anything is allocated).
pub fn read_elements(bytes: &[u8], count: usize) -> Result<Elements> {
    match count.checked_mul(ELEMENT_BYTES) {
        Some(expected) if expected == bytes.len() => {}
        _ => {
            return Err(Error::protocol(
                format!("{count} elements of {ELEMENT_BYTES} bytes"),
                format!("{} bytes", bytes.len()),
            ))
        }
    }
    let points = bytes
        .par_chunks_exact(ELEMENT_BYTES)
        .map(read_element)
        .collect::<Result<_>>()?;
    let encoded = (bytes.chunks_exact(ELEMENT_BYTES))
        .map(|e| e.try_into().expect("32 bytes"))
        .collect();
    Ok(Elements { points, encoded })
}

/// A server's key: the scalar k and its public half pkS = k·G (the verifiable mode's).
#[derive(Clone)]
pub struct ServerKey {
    mode: Mode,
    secret: Scalar,
    public: RistrettoPoint,
}

impl std::fmt::Debug for ServerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerKey")
            .field("mode", &self.mode)
            .field("public", &self.public.compress())
            .finish_non_exhaustive()
    }
}

impl ServerKey {
    /// A fresh random key.
    pub fn random(mode: Mode, prg: &mut Prg) -> ServerKey {
        ServerKey::of(mode, nonzero_scalar(prg))
    }

    /// `DeriveKeyPair(seed, info)` (§3.2.1): the key a 32-byte `seed` and an `info`
    /// string determine.
    pub fn derive(mode: Mode, seed: &[u8; 32], info: &[u8]) -> Result<ServerKey> {
        let info_len = u16::try_from(info.len())
            .map_err(|_| Error::Usage("a key's info string is at most 65,535 bytes".into()))?;
        let dst = mode.dst(b"DeriveKeyPair");
        for counter in 0..=255u8 {
            let secret = hash_to_scalar(&[seed, &info_len.to_be_bytes(), info, &[counter]], &dst);
            if secret != Scalar::ZERO {
                return Ok(ServerKey::of(mode, secret));
            }
        }
        Err(Error::Usage(
            "DeriveKeyPair found no key in 256 tries".into(),
        ))
    }

    /// The key whose secret is `bytes` (a canonical, non-zero scalar: a key file's).
    pub fn from_bytes(mode: Mode, bytes: &[u8; 32]) -> Result<ServerKey> {
        match Option::<Scalar>::from(Scalar::from_canonical_bytes(*bytes)) {
            Some(secret) if secret != Scalar::ZERO => Ok(ServerKey::of(mode, secret)),
            _ => Err(Error::Usage(
                "an OPRF key is a canonical non-zero scalar".into(),
            )),
        }
    }

    fn of(mode: Mode, secret: Scalar) -> ServerKey {
        ServerKey {
            mode,
            secret,
            public: secret * RISTRETTO_BASEPOINT_POINT,
        }
    }

    /// Its mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The secret scalar's bytes (`skSm`), for the owner's key file.
    pub fn secret_bytes(&self) -> [u8; 32] {
        self.secret.to_bytes()
    }

    /// The public key pkS, serialised (`pkSm`).
    pub fn public(&self) -> [u8; 32] {
        self.public.compress().to_bytes()
    }

    /// F_k(`input`) computed directly (the server's own set, §3.3.1's `Evaluate`).
    pub fn evaluate(&self, input: &[u8]) -> Result<[u8; OUTPUT_BYTES]> {
        Ok(self.evaluate_all(&[input])?[0])
    }

    /// [`ServerKey::evaluate`] of each of `inputs`, on the current rayon pool's threads,
    /// the elements compressed in batches ([`Elements::of_halves`]). Its memory is about
    /// 230 bytes an input: callers with many pass a slice at a time.
    pub fn evaluate_all(&self, inputs: &[&[u8]]) -> Result<Vec<[u8; OUTPUT_BYTES]>> {
        let half_key = self.secret * half();
        let halves = (inputs.par_iter())
            .map(|input| Ok(half_key * input_element(self.mode, input)?))
            .collect::<Result<Vec<_>>>()?;
        let encoded = compress_doubles(&halves);
        Ok((inputs.par_iter().zip(&encoded))
            .map(|(input, e)| finalize_one(input, e))
            .collect())
    }

    /// `BlindEvaluate` of each of a request's `blinded` elements (read with
    /// [`read_elements`]), on the current rayon pool's threads; in the verifiable mode
    /// with the batch's proof (`GenerateProof`, §2.2.1), its random scalar from `prg`.
    pub fn blind_evaluate(
        &self,
        blinded: &Elements,
        prg: &mut Prg,
    ) -> (Elements, Option<[u8; PROOF_BYTES]>) {
        let half_key = self.secret * half();
        let halves = blinded.points.par_iter().map(|b| half_key * b).collect();
        let evaluated = Elements::of_halves(halves);
        let proof = match self.mode {
            Mode::Oprf => None,
            Mode::Voprf => Some(self.prove(blinded, &evaluated, random_scalar(prg))),
        };
        (evaluated, proof)
    }

    /// `GenerateProof` (§2.2.1) that `evaluated` = k·`blinded` and pkS = k·G, with the
    /// proof's random scalar `r`.
    fn prove(&self, blinded: &Elements, evaluated: &Elements, r: Scalar) -> [u8; PROOF_BYTES] {
        let (m, z) = composites(
            self.mode,
            &self.public,
            blinded,
            evaluated,
            Some(&self.secret),
        );
        let t2 = r * RISTRETTO_BASEPOINT_POINT;
        let t3 = r * m;
        let c = challenge(self.mode, &self.public, [&m, &z, &t2, &t3]);
        let s = r - c * self.secret;
        let mut proof = [0u8; PROOF_BYTES];
        proof[..32].copy_from_slice(&c.to_bytes());
        proof[32..].copy_from_slice(&s.to_bytes());
        proof
    }
}

/// `ComputeComposites` (§2.2.1, §2.2.2): M = Σ dᵢ·Cᵢ and Z = Σ dᵢ·Dᵢ, or Z = k·M where the
/// prover knows k (`ComputeCompositesFast`), the dᵢ hashed from pkS and the elements.
fn composites(
    mode: Mode,
    public: &RistrettoPoint,
    c: &Elements,
    d: &Elements,
    secret: Option<&Scalar>,
) -> (RistrettoPoint, RistrettoPoint) {
    let bm = public.compress().to_bytes();
    let seed_dst = mode.dst(b"Seed-");
    let seed: [u8; 64] = Sha512::new()
        .chain_update(two_bytes(bm.len()))
        .chain_update(bm)
        .chain_update(two_bytes(seed_dst.len()))
        .chain_update(&seed_dst)
        .finalize()
        .into();
    let scalar_dst = mode.dst(b"HashToScalar-");
    let weights: Vec<Scalar> = (c.encoded.par_iter().zip(&d.encoded).enumerate())
        .map(|(i, (ci_bytes, di_bytes))| {
            hash_to_scalar(
                &[
                    &two_bytes(seed.len()),
                    &seed,
                    &two_bytes(i),
                    &two_bytes(ELEMENT_BYTES),
                    ci_bytes,
                    &two_bytes(ELEMENT_BYTES),
                    di_bytes,
                    b"Composite",
                ],
                &scalar_dst,
            )
        })
        .collect();
    // The elements and weights are public: one variable-time multiscalar
    // multiplication each (the secret k only ever in a constant-time product).
    let msm = |points: &[RistrettoPoint]| parallel_msm(&weights, points);
    match secret {
        Some(k) => {
            let m = msm(&c.points);
            (m, k * m)
        }
        // A verifier's two sums, side by side.
        None => rayon::join(|| msm(&c.points), || msm(&d.points)),
    }
}

/// Σ `weights`ᵢ·`points`ᵢ in variable time (public data only), a part of the sum on each
/// of the current rayon pool's threads.
fn parallel_msm(weights: &[Scalar], points: &[RistrettoPoint]) -> RistrettoPoint {
    let part = weights
        .len()
        .div_ceil(rayon::current_num_threads())
        .max(256);
    (weights.par_chunks(part).zip(points.par_chunks(part)))
        .map(|(w, p)| RistrettoPoint::vartime_multiscalar_mul(w, p))
        .reduce(RistrettoPoint::identity, |a, b| a + b)
}

/// The proof's challenge: `HashToScalar` of pkS and the four elements, each with its
/// length, then "Challenge" (§2.2.1).
fn challenge(mode: Mode, public: &RistrettoPoint, points: [&RistrettoPoint; 4]) -> Scalar {
    let bytes: Vec<[u8; 32]> = std::iter::once(public)
        .chain(points)
        .map(|p| p.compress().to_bytes())
        .collect();
    let len = two_bytes(ELEMENT_BYTES);
    let mut parts: Vec<&[u8]> = Vec::with_capacity(11);
    for b in &bytes {
        parts.push(&len);
        parts.push(b);
    }
    parts.push(b"Challenge");
    hash_to_scalar(&parts, &mode.dst(b"HashToScalar-"))
}

/// `Finalize`'s hash (§3.3.1) of one input and its unblinded element's encoding.
fn finalize_one(input: &[u8], unblinded: &[u8; ELEMENT_BYTES]) -> [u8; OUTPUT_BYTES] {
    Sha512::new()
        .chain_update(two_bytes(input.len()))
        .chain_update(input)
        .chain_update(two_bytes(ELEMENT_BYTES))
        .chain_update(unblinded)
        .chain_update(b"Finalize")
        .finalize()
        .into()
}

/// A client's blinded batch: what it keeps (its inputs' blinds) and what it sends.
pub struct Blinded {
    mode: Mode,
    blinds: Vec<Scalar>,
    /// The blinded elements, to send.
    pub elements: Elements,
}

impl Blinded {
    /// `Blind` (§3.3.1) of each input, its blind from `prg`.
    pub fn new(mode: Mode, inputs: &[&[u8]], prg: &mut Prg) -> Result<Blinded> {
        let blinds = inputs.iter().map(|_| nonzero_scalar(prg)).collect();
        Blinded::with_blinds(mode, inputs, blinds)
    }

    /// `Blind` with the given blinds (the RFC's test vectors fix them), on the current
    /// rayon pool's threads.
    pub fn with_blinds(mode: Mode, inputs: &[&[u8]], blinds: Vec<Scalar>) -> Result<Blinded> {
        let half = half();
        let halves = (inputs.par_iter().zip(&blinds))
            .map(|(input, blind)| Ok((blind * half) * input_element(mode, input)?))
            .collect::<Result<_>>()?;
        Ok(Blinded {
            mode,
            blinds,
            elements: Elements::of_halves(halves),
        })
    }

    /// Its mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The elements to send, serialised one after another.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.elements.to_bytes()
    }

    /// `Finalize` (§3.3.1) of the server's answers to the same `inputs` (read with
    /// [`read_elements`]): each input's F_k(x); in the verifiable mode after the batch's
    /// `proof` has been checked against the server's public key `public` (§2.2.2), a
    /// failed proof refused as cheating. The blinds are inverted in one batch; the rest
    /// runs on the current rayon pool's threads.
    pub fn finalize(
        &self,
        inputs: &[&[u8]],
        evaluated: &Elements,
        proof: Option<(&[u8; PROOF_BYTES], &[u8; 32])>,
    ) -> Result<Vec<[u8; OUTPUT_BYTES]>> {
        if inputs.len() != self.blinds.len() || evaluated.len() != self.blinds.len() {
            return Err(Error::protocol(
                format!("{} evaluated elements", self.blinds.len()),
                format!("{} for {} inputs", evaluated.len(), inputs.len()),
            ));
        }
        if self.mode == Mode::Voprf {
            let Some((proof, public)) = proof else {
                return Err(Error::protocol("a proof of the answers", "none"));
            };
            verify(
                self.mode,
                &read_element(public)?,
                &self.elements,
                evaluated,
                proof,
            )?;
        }
        let mut inverses = self.blinds.clone();
        Scalar::batch_invert(&mut inverses);
        let half = half();
        let halves: Vec<RistrettoPoint> = (inverses.par_iter().zip(&evaluated.points))
            .map(|(inverse, element)| (inverse * half) * element)
            .collect();
        let unblinded = compress_doubles(&halves);
        Ok((inputs.par_iter().zip(&unblinded))
            .map(|(input, element)| finalize_one(input, element))
            .collect())
    }
}

/// A uniformly random non-zero scalar.
fn nonzero_scalar(prg: &mut Prg) -> Scalar {
    loop {
        let s = random_scalar(prg);
        if s != Scalar::ZERO {
            return s;
        }
    }
}

/// `VerifyProof` (§2.2.2): that `evaluated` = k·`blinded` for the k of `public`.
fn verify(
    mode: Mode,
    public: &RistrettoPoint,
    blinded: &Elements,
    evaluated: &Elements,
    proof: &[u8; PROOF_BYTES],
) -> Result<()> {
    let scalar = |bytes: &[u8]| -> Result<Scalar> {
        let bytes: [u8; 32] = bytes.try_into().expect("32 bytes");
        Option::from(Scalar::from_canonical_bytes(bytes))
            .ok_or_else(|| Error::protocol("a canonical scalar in the proof", "another encoding"))
    };
    let (c, s) = (scalar(&proof[..32])?, scalar(&proof[32..])?);
    let (m, z) = composites(mode, public, blinded, evaluated, None);
    let t2 = s * RISTRETTO_BASEPOINT_POINT + c * public;
    let t3 = s * m + c * z;
    match challenge(mode, public, [&m, &z, &t2, &t3]) == c {
        true => Ok(()),
        false => Err(Error::CheatingDetected(
            "the OPRF server's proof does not hold: its answers are not under its published \
             key"
            .into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn scalar(s: &str) -> Scalar {
        Scalar::from_canonical_bytes(hex(s).try_into().unwrap()).unwrap()
    }

    fn bytes(p: &RistrettoPoint) -> Vec<u8> {
        p.compress().to_bytes().to_vec()
    }

    /// RFC 9497, Appendix A: every key derived from Seed = a3…a3 and KeyInfo = "test key".
    const SEED: [u8; 32] = [0xa3; 32];
    const KEY_INFO: &[u8] = b"test key";
    /// The blinds and the proofs' random scalars of Appendix A.1.
    const BLIND_1: &str = "64d37aed22a27f5191de1c1d69fadb899d8862b58eb4220029e036ec4c1f6706";
    const BLIND_2: &str = "222a5e897cf59db8145db8d16e597e8facb80ae7d4e26d9881aa6f61d645fc0e";
    const INPUT_2: &str = "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a";

    /// A.1.1: the base mode's key, blinded and evaluated elements and outputs, for both
    /// test vectors; the same outputs by the server's direct evaluation.
    #[test]
    fn rfc_9497_base_mode_vectors() {
        let key = ServerKey::derive(Mode::Oprf, &SEED, KEY_INFO).unwrap();
        assert_eq!(
            key.secret_bytes().to_vec(),
            hex("5ebcea5ee37023ccb9fc2d2019f9d7737be85591ae8652ffa9ef0f4d37063b0e")
        );
        let vectors = [
            (
                "00",
                "609a0ae68c15a3cf6903766461307e5c8bb2f95e7e6550e1ffa2dc99e412803c",
                "7ec6578ae5120958eb2db1745758ff379e77cb64fe77b0b2d8cc917ea0869c7e",
                "527759c3d9366f277d8c6020418d96bb393ba2afb20ff90df23fb7708264e2f3ab9135e3bd69955851de4b1f9fe8a0973396719b7912ba9ee8aa7d0b5e24bcf6",
            ),
            (
                INPUT_2,
                "da27ef466870f5f15296299850aa088629945a17d1f5b7f5ff043f76b3c06418",
                "b4cbf5a4f1eeda5a63ce7b77c7d23f461db3fcab0dd28e4e17cecb5c90d02c25",
                "f4a74c9c592497375e796aa837e907b1a045d34306a749db9f34221f7e750cb4f2a6413a6bf6fa5e19ba6348eb673934a722a7ede2e7621306d18951e7cf2c73",
            ),
        ];
        let mut prg = Prg::from_seed(crate::crypto::Block::from(1));
        for (input, blinded, evaluated, output) in vectors {
            let input = hex(input);
            let inputs = [input.as_slice()];
            let client = Blinded::with_blinds(Mode::Oprf, &inputs, vec![scalar(BLIND_1)]).unwrap();
            assert_eq!(client.elements.encoded()[0].to_vec(), hex(blinded));
            let (answers, proof) = key.blind_evaluate(&client.elements, &mut prg);
            assert!(proof.is_none());
            assert_eq!(answers.encoded()[0].to_vec(), hex(evaluated));
            let outputs = client.finalize(&inputs, &answers, None).unwrap();
            assert_eq!(outputs[0].to_vec(), hex(output));
            assert_eq!(key.evaluate(&input).unwrap().to_vec(), hex(output));
        }
    }

    /// A.1.2: the verifiable mode's key pair, elements, proofs (with the vectors' random
    /// scalars) and outputs, for the two single inputs and the batch of both.
    #[test]
    fn rfc_9497_verifiable_mode_vectors() {
        let key = ServerKey::derive(Mode::Voprf, &SEED, KEY_INFO).unwrap();
        assert_eq!(
            key.secret_bytes().to_vec(),
            hex("e6f73f344b79b379f1a0dd37e07ff62e38d9f71345ce62ae3a9bc60b04ccd909")
        );
        assert_eq!(
            key.public().to_vec(),
            hex("c803e2cc6b05fc15064549b5920659ca4a77b2cca6f04f6b357009335476ad4e")
        );
        let out_1 = "b58cfbe118e0cb94d79b5fd6a6dafb98764dff49c14e1770b566e42402da1a7da4d8527693914139caee5bd03903af43a491351d23b430948dd50cde10d32b3c";
        let out_2 = "8a9a2f3c7f085b65933594309041fc1898d42d0858e59f90814ae90571a6df60356f4610bf816f27afdd84f47719e480906d27ecd994985890e5f539e7ea74b6";
        // (inputs, blinds, blinded elements, evaluated elements, proof, its r, outputs)
        type Vector<'a> = (
            &'a [&'a str],
            &'a [&'a str],
            &'a [&'a str],
            &'a [&'a str],
            &'a str,
            &'a str,
            &'a [&'a str],
        );
        let vectors: [Vector; 3] = [
            (
                &["00"],
                &[BLIND_1],
                &["863f330cc1a1259ed5a5998a23acfd37fb4351a793a5b3c090b642ddc439b945"],
                &["aa8fa048764d5623868679402ff6108d2521884fa138cd7f9c7669a9a014267e"],
                "ddef93772692e535d1a53903db24367355cc2cc78de93b3be5a8ffcc6985dd066d4346421d17bf5117a2a1ff0fcb2a759f58a539dfbe857a40bce4cf49ec600d",
                BLIND_2,
                &[out_1],
            ),
            (
                &[INPUT_2],
                &[BLIND_1],
                &["cc0b2a350101881d8a4cba4c80241d74fb7dcbfde4a61fde2f91443c2bf9ef0c"],
                &["60a59a57208d48aca71e9e850d22674b611f752bed48b36f7a91b372bd7ad468"],
                "401a0da6264f8cf45bb2f5264bc31e109155600babb3cd4e5af7d181a2c9dc0a67154fabf031fd936051dec80b0b6ae29c9503493dde7393b722eafdf5a50b02",
                BLIND_2,
                &[out_2],
            ),
            (
                &["00", INPUT_2],
                &[BLIND_1, BLIND_2],
                &[
                    "863f330cc1a1259ed5a5998a23acfd37fb4351a793a5b3c090b642ddc439b945",
                    "90a0145ea9da29254c3a56be4fe185465ebb3bf2a1801f7124bbbadac751e654",
                ],
                &[
                    "aa8fa048764d5623868679402ff6108d2521884fa138cd7f9c7669a9a014267e",
                    "cc5ac221950a49ceaa73c8db41b82c20372a4c8d63e5dded2db920b7eee36a2a",
                ],
                "cc203910175d786927eeb44ea847328047892ddf8590e723c37205cb74600b0a5ab5337c8eb4ceae0494c2cf89529dcf94572ed267473d567aeed6ab873dee08",
                "419c4f4f5052c53c45f3da494d2b67b220d02118e0857cdbcf037f9ea84bbe0c",
                &[out_1, out_2],
            ),
        ];
        for (inputs, blinds, blinded, evaluated, proof, r, outputs) in vectors {
            let inputs: Vec<Vec<u8>> = inputs.iter().map(|i| hex(i)).collect();
            let inputs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
            let blinds = blinds.iter().map(|b| scalar(b)).collect();
            let client = Blinded::with_blinds(Mode::Voprf, &inputs, blinds).unwrap();
            let sent: Vec<Vec<u8>> = client.elements.points().iter().map(bytes).collect();
            assert_eq!(sent, blinded.iter().map(|b| hex(b)).collect::<Vec<_>>());
            let half_key = key.secret * half();
            let answers = Elements::of_halves(
                client
                    .elements
                    .points()
                    .iter()
                    .map(|e| half_key * e)
                    .collect(),
            );
            let got: Vec<Vec<u8>> = answers.points().iter().map(bytes).collect();
            assert_eq!(got, evaluated.iter().map(|e| hex(e)).collect::<Vec<_>>());
            let made = key.prove(&client.elements, &answers, scalar(r));
            assert_eq!(made.to_vec(), hex(proof));
            let finals = client
                .finalize(&inputs, &answers, Some((&made, &key.public())))
                .unwrap();
            let finals: Vec<Vec<u8>> = finals.iter().map(|o| o.to_vec()).collect();
            assert_eq!(finals, outputs.iter().map(|o| hex(o)).collect::<Vec<_>>());
        }
    }

    /// A batch with random blinds gives each input the server's own evaluation (one by
    /// one or all at once; elements compressed in batches are their points'); the
    /// verifiable mode's proof holds for the key that answered and fails, as cheating,
    /// for another key, a changed answer or a changed proof.
    #[test]
    fn batches_round_trip_and_proofs_bind_the_key() {
        let mut prg = Prg::from_seed(crate::crypto::Block::from(7));
        let inputs: Vec<Vec<u8>> = (0..40u32)
            .map(|i| format!("item {i}").into_bytes())
            .collect();
        let inputs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        for mode in [Mode::Oprf, Mode::Voprf] {
            let key = ServerKey::random(mode, &mut prg);
            let client = Blinded::new(mode, &inputs, &mut prg).unwrap();
            let received = read_elements(&client.to_bytes(), inputs.len()).unwrap();
            let (answers, proof) = key.blind_evaluate(&received, &mut prg);
            let proof = proof.map(|p| (p, key.public()));
            let proof_ref = proof.as_ref().map(|(p, k)| (p, k));
            let outputs = client.finalize(&inputs, &answers, proof_ref).unwrap();
            for (input, output) in inputs.iter().zip(&outputs) {
                assert_eq!(*output, key.evaluate(input).unwrap());
            }
            assert_eq!(key.evaluate_all(&inputs).unwrap(), outputs);
            let doubled = Elements::of_halves(received.points().to_vec());
            for (point, encoded) in doubled.points().iter().zip(doubled.encoded()) {
                assert_eq!(point.compress().to_bytes(), *encoded);
            }
            let Some((proof, public)) = proof else {
                continue;
            };
            let other = ServerKey::random(mode, &mut prg);
            let (theirs, their_proof) = other.blind_evaluate(&received, &mut prg);
            let cheated = client.finalize(&inputs, &theirs, Some((&their_proof.unwrap(), &public)));
            assert!(
                matches!(cheated, Err(Error::CheatingDetected(_))),
                "another key"
            );
            let mut changed = answers.points().to_vec();
            changed[3] += RISTRETTO_BASEPOINT_POINT;
            let changed = Elements::of_halves(changed.iter().map(|p| half() * p).collect());
            let cheated = client.finalize(&inputs, &changed, Some((&proof, &public)));
            assert!(
                matches!(cheated, Err(Error::CheatingDetected(_))),
                "a changed answer"
            );
            let mut bent = proof;
            bent[40] ^= 1;
            assert!(client
                .finalize(&inputs, &answers, Some((&bent, &public)))
                .is_err());
            let unproven = client.finalize(&inputs, &answers, None);
            assert!(unproven.is_err(), "the verifiable mode needs its proof");
        }
    }

    /// What a server reads from a client is refused unless every element is a canonical,
    /// non-identity encoding and the body holds exactly the count announced.
    #[test]
    fn malformed_elements_are_refused() {
        let mut prg = Prg::from_seed(crate::crypto::Block::from(9));
        let good = Blinded::new(Mode::Oprf, &[b"a", b"b"], &mut prg)
            .unwrap()
            .to_bytes();
        assert_eq!(read_elements(&good, 2).unwrap().len(), 2);
        // The body shorter or longer than the count says, and a count whose bytes
        // overflow: refused before anything is read.
        assert!(read_elements(&good, 3).is_err());
        assert!(read_elements(&good[..63], 2).is_err());
        assert!(read_elements(&good, usize::MAX / 16).is_err());
        // The identity (all zeros), a non-canonical field element (p + 1 < 2^255) and
        // bytes that are no point.
        assert!(read_element(&[0u8; 32]).is_err());
        let mut above_p = [0xffu8; 32];
        above_p[0] = 0xee;
        above_p[31] = 0x7f;
        assert!(read_element(&above_p).is_err());
        let mut flipped = good[..32].to_vec();
        flipped[0] ^= 1;
        assert!(read_element(&flipped).is_err());
        assert!(read_element(&good[..31]).is_err());
        // An input too long for Finalize's two-byte length.
        let long = vec![0u8; MAX_INPUT_BYTES + 1];
        assert!(Blinded::new(Mode::Oprf, &[&long], &mut prg).is_err());
        // A key file holding zero or a non-canonical scalar.
        assert!(ServerKey::from_bytes(Mode::Oprf, &[0; 32]).is_err());
        assert!(ServerKey::from_bytes(Mode::Oprf, &[0xff; 32]).is_err());
    }
}
