//! Venn's wire form of BFV ciphertexts, read strictly before `fhe` sees any of it: `fhe`'s
//! own (protobuf) form takes the peer's word on variable-time arithmetic, and a ciphertext
//! of an unexpected level or part count reaches `assert!`s in its operations (a panic the
//! peer chooses).
//!
//! A ciphertext is its kind, its level, the bits kept of each part's coefficients (0 for
//! every bit), and its two parts' coefficients modulo each of its
//! level's moduli q_i, N of them per modulus, each in ⌈log₂ q_i⌉ bits (little-endian bit
//! order); a reader refuses any other length, level, part count, or a coefficient not
//! below its modulus. [`Kind::Full`] carries the coefficients as held (NTT form);
//! [`Kind::Seeded`], for a fresh encryption under a secret key, c₀ so and, in place of c₁,
//! the 32 bytes it was expanded from (`fhe` draws c₁ = a uniform from a seed, CLR17
//! §6.2's "half the ciphertext"), so half the bytes; [`Kind::Compact`], for results at
//! the last level, only the top bits of each power-basis coefficient, as many of c₀'s
//! and of c₁'s as the caller says: dropping the low s₀ bits of c₀'s and s₁ of c₁'s adds
//! at most 2^(s₀−1) + 2^(s₁−1)·‖s_key‖₁ to the decrypted noise — what the caller's choice
//! must leave room for (APSI's responses drop bits so too, `try_clear_irrelevant_bits`;
//! CMdG+21 §5).

use super::bfv;
use crate::{Error, Result};
use fhe::bfv::{BfvParameters, Ciphertext};
use fhe_math::rq::traits::TryConvertFrom;
use fhe_math::rq::{Poly, Representation};
use std::sync::Arc;

/// How a ciphertext's coefficients are carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Every bit, in NTT form, at any level.
    Full,
    /// c₀ as [`Kind::Full`] carries it, then the seed c₁ is expanded from: a fresh
    /// encryption under a secret key only (`fhe` forgets the seed of a ciphertext once it
    /// changes it).
    Seeded,
    /// The top bits of each power-basis coefficient, at the last level only.
    Compact {
        /// The bits kept of each coefficient of c₀ and of c₁.
        keep: [u8; PARTS],
    },
}

/// The bytes before the coefficients: kind, level, the bits kept of c₀'s and c₁'s
/// coefficients (compact; else 0).
const HEAD: usize = 2 + PARTS;

/// A ciphertext's parts.
const PARTS: usize = 2;

/// The bytes of the seed a [`Kind::Seeded`] ciphertext's c₁ is expanded from.
const SEED: usize = 32;

/// The parts whose coefficients a ciphertext of `kind` carries.
fn carried(kind: Kind) -> usize {
    match kind {
        Kind::Seeded => 1,
        Kind::Full | Kind::Compact { .. } => PARTS,
    }
}

/// The bits of a modulus' residues.
fn width(q: u64) -> u32 {
    u64::BITS - q.leading_zeros()
}

/// The bits each coefficient of modulus `q` takes in part `part` of a ciphertext of
/// `kind`, and how many low bits are dropped.
fn bits_of(q: u64, kind: Kind, part: usize) -> Result<(u32, u32)> {
    let Kind::Compact { keep } = kind else {
        return Ok((width(q), 0));
    };
    let keep = u32::from(keep[part]);
    match (1..=width(q)).contains(&keep) {
        true => Ok((keep, width(q) - keep)),
        false => Err(Error::protocol(
            format!("a compact ciphertext keeping 1 to {} bits", width(q)),
            format!("{keep} bits"),
        )),
    }
}

/// The bytes of the wire form of a ciphertext of `kind` at `level` under `par`.
pub fn wire_len(par: &BfvParameters, level: usize, kind: Kind) -> Result<usize> {
    let moduli = moduli_at(par, level)?;
    let mut bits = 0u64;
    for part in 0..carried(kind) {
        for &q in moduli {
            bits += u64::from(bits_of(q, kind, part)?.0) * par.degree() as u64;
        }
    }
    let seed = if kind == Kind::Seeded { SEED } else { 0 };
    Ok(HEAD + bits.div_ceil(8) as usize + seed)
}

/// The moduli of `level`, refused past the last.
fn moduli_at(par: &BfvParameters, level: usize) -> Result<&[u64]> {
    let moduli = par.moduli();
    match level <= par.max_level() {
        true => Ok(&moduli[..moduli.len() - level]),
        false => Err(Error::protocol(
            format!("a ciphertext of level 0 to {}", par.max_level()),
            format!("level {level}"),
        )),
    }
}

/// `ct` in its wire form of `kind` (a compact one only at the last level, a seeded one
/// only fresh): refused for a ciphertext of another part count (one not relinearised).
pub fn encode(ct: &Ciphertext, par: &BfvParameters, kind: Kind) -> Result<Vec<u8>> {
    let Some(first) = ct.first() else {
        return Err(Error::Usage("a ciphertext without parts".into()));
    };
    let level = par.level_of_context(first.ctx()).map_err(bfv)?;
    if ct.len() != PARTS || (matches!(kind, Kind::Compact { .. }) && level != par.max_level()) {
        return Err(Error::Usage(format!(
            "a ciphertext of {} parts at level {level} sent as {kind:?}",
            ct.len()
        )));
    }
    let moduli = moduli_at(par, level)?;
    let keep = match kind {
        Kind::Compact { keep } => keep,
        Kind::Full | Kind::Seeded => [0; PARTS],
    };
    let seed = match kind {
        Kind::Seeded => Some(seed_of(ct)?),
        Kind::Full | Kind::Compact { .. } => None,
    };
    let mut out = Vec::with_capacity(wire_len(par, level, kind)?);
    out.extend_from_slice(&[kind_byte(kind), level as u8]);
    out.extend_from_slice(&keep);
    let mut bits = BitWriter::new(out);
    for (at, part) in ct.iter().take(carried(kind)).enumerate() {
        let mut part = part.clone();
        if let Kind::Compact { .. } = kind {
            part.change_representation(Representation::PowerBasis);
        }
        for (row, &q) in part.coefficients().outer_iter().zip(moduli) {
            let (kept, dropped) = bits_of(q, kind, at)?;
            for &c in row {
                // The top bits; the reader puts back the middle of what was dropped.
                bits.push(c >> dropped, kept);
            }
        }
    }
    let mut out = bits.finish();
    out.extend(seed.iter().flatten());
    Ok(out)
}

/// The seed a fresh ciphertext's c₁ was expanded from (`fhe` tells it only in its own
/// wire form): refused for a ciphertext that has none.
fn seed_of(ct: &Ciphertext) -> Result<[u8; SEED]> {
    let proto = fhe::proto::bfv::Ciphertext::from(ct);
    (proto.seed[..]).try_into().map_err(|_| {
        Error::Usage("a ciphertext sent seeded is not a fresh secret-key encryption".into())
    })
}

/// The kind's byte on the wire.
fn kind_byte(kind: Kind) -> u8 {
    match kind {
        Kind::Full => b'F',
        Kind::Seeded => b'S',
        Kind::Compact { .. } => b'C',
    }
}

/// Reads a ciphertext under `par` of the kind (and bits kept) `expected` at `level`, as
/// the protocol has it: refused unless its head says so, its length is that level's and
/// kind's, it has two parts and every coefficient is below its modulus — before any of it
/// reaches `fhe`.
pub fn decode(
    bytes: &[u8],
    par: &Arc<BfvParameters>,
    expected: Kind,
    level: usize,
) -> Result<Ciphertext> {
    let bad = |why: String| Error::protocol("a BFV ciphertext", why);
    let [kind, at, keep @ ..] = *bytes
        .first_chunk::<HEAD>()
        .ok_or_else(|| bad("no head".into()))?;
    let kind = match kind {
        b'F' => Kind::Full,
        b'S' => Kind::Seeded,
        b'C' => Kind::Compact { keep },
        other => return Err(bad(format!("the kind {other}"))),
    };
    let compact = matches!(kind, Kind::Compact { .. });
    if (kind, usize::from(at)) != (expected, level)
        || (!compact && keep != [0; 2])
        || (compact && level != par.max_level())
    {
        return Err(bad(format!(
            "{kind:?} at level {at}, not {expected:?} at level {level}"
        )));
    }
    let moduli = moduli_at(par, level)?;
    if bytes.len() != wire_len(par, level, kind)? {
        return Err(bad(format!(
            "{} bytes, not the {} of its level",
            bytes.len(),
            wire_len(par, level, kind)?
        )));
    }
    let ctx = par.context_at_level(level).map_err(bfv)?;
    let n = par.degree();
    let (coefficients, seed) = match kind {
        Kind::Seeded => bytes[HEAD..].split_at(bytes.len() - HEAD - SEED),
        Kind::Full | Kind::Compact { .. } => (&bytes[HEAD..], &[][..]),
    };
    let mut reader = BitReader::new(coefficients);
    let mut parts = Vec::with_capacity(PARTS);
    for part in 0..carried(kind) {
        let mut coefficients = Vec::with_capacity(moduli.len() * n);
        for &q in moduli {
            let (kept, dropped) = bits_of(q, kind, part)?;
            let half = (1u64 << dropped) >> 1;
            for _ in 0..n {
                let c = (reader.take(kept) << dropped) | half;
                if c >= q && dropped == 0 {
                    return Err(bad(format!("a coefficient {c} not below its modulus {q}")));
                }
                // A dropped tail put back past q: the largest residue is as near.
                coefficients.push(c.min(q - 1));
            }
        }
        let representation = match kind {
            Kind::Full | Kind::Seeded => Representation::Ntt,
            Kind::Compact { .. } => Representation::PowerBasis,
        };
        let mut poly = Poly::try_convert_from(coefficients, ctx, false, representation)
            .map_err(|e| bad(e.to_string()))?;
        poly.change_representation(Representation::Ntt);
        parts.push(poly);
    }
    if reader.left_over() {
        return Err(bad("bits set past its last coefficient".into()));
    }
    if let Ok(seed) = <[u8; SEED]>::try_from(seed) {
        // As `fhe` expands it when it encrypts (any seed gives a uniform c₁).
        parts.push(Poly::random_from_seed(ctx, Representation::Ntt, seed));
    }
    Ciphertext::new(parts, par).map_err(|e| bad(e.to_string()))
}

/// Packs values of up to 64 bits, little-endian bit order, after a head.
struct BitWriter {
    out: Vec<u8>,
    acc: u128,
    filled: u32,
}

impl BitWriter {
    fn new(out: Vec<u8>) -> BitWriter {
        BitWriter {
            out,
            acc: 0,
            filled: 0,
        }
    }

    /// Appends the low `bits` bits of `value`.
    fn push(&mut self, value: u64, bits: u32) {
        self.acc |= u128::from(value & mask(bits)) << self.filled;
        self.filled += bits;
        while self.filled >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.filled -= 8;
        }
    }

    fn finish(mut self) -> Vec<u8> {
        if self.filled > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}

/// The low `bits` bits set.
fn mask(bits: u32) -> u64 {
    match bits {
        64 => u64::MAX,
        b => (1u64 << b) - 1,
    }
}

/// Reads what [`BitWriter`] packs (the caller has checked the length).
struct BitReader<'a> {
    bytes: &'a [u8],
    at: usize,
    acc: u128,
    filled: u32,
}

impl<'a> BitReader<'a> {
    fn new(bytes: &'a [u8]) -> BitReader<'a> {
        BitReader {
            bytes,
            at: 0,
            acc: 0,
            filled: 0,
        }
    }

    /// The next `bits` bits (zeros past the end, which a checked length never reaches).
    fn take(&mut self, bits: u32) -> u64 {
        while self.filled < bits {
            let byte = self.bytes.get(self.at).copied().unwrap_or(0);
            self.acc |= u128::from(byte) << self.filled;
            self.at += 1;
            self.filled += 8;
        }
        let value = (self.acc as u64) & mask(bits);
        self.acc >>= bits;
        self.filled -= bits;
        value
    }

    /// Whether the last byte's unused bits, or bytes past what was read, are not zero
    /// (one coding of a ciphertext only).
    fn left_over(&self) -> bool {
        self.acc != 0
            || self.bytes[self.at.min(self.bytes.len())..]
                .iter()
                .any(|&b| b != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::he::params::Bfv;
    use crate::util::primes::batching_prime;
    use fhe::bfv::{Encoding, Plaintext, SecretKey};
    use fhe_traits::{FheDecoder, FheDecrypter, FheEncoder, FheEncrypter};
    use rand::SeedableRng;

    /// A small set (N = 4096, a 20-bit t, three moduli) and a key.
    fn setup() -> (Arc<BfvParameters>, SecretKey, rand::rngs::StdRng) {
        let t = batching_prime(4096, 1 << 19);
        let par = (Bfv {
            degree: 4096,
            plain: t,
            moduli: vec![40, 34, 34],
        })
        .build()
        .unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let sk = SecretKey::random(&par, &mut rng);
        (par, sk, rng)
    }

    /// Ciphertexts at every level read back as written, decrypting as before; compact ones
    /// at the last level decrypt to the same slots in fewer bytes.
    #[test]
    fn ciphertexts_read_back_as_written() {
        let (par, sk, mut rng) = setup();
        let t = par.plaintext();
        let values: Vec<u64> = (0..4096u64).map(|i| (i * 7919 + 3) % t).collect();
        let pt = Plaintext::try_encode(&values, Encoding::simd(), &par).unwrap();
        let fresh: Ciphertext = sk.try_encrypt(&pt, &mut rng).unwrap();
        for level in 0..=par.max_level() {
            let mut ct = fresh.clone();
            ct.switch_to_level(level).unwrap();
            let wire = encode(&ct, &par, Kind::Full).unwrap();
            assert_eq!(wire.len(), wire_len(&par, level, Kind::Full).unwrap());
            let read = decode(&wire, &par, Kind::Full, level).unwrap();
            // The same parts (`fhe`'s own fields, the seed and the timing flag, aside).
            let same = read.len() == ct.len()
                && read
                    .iter()
                    .zip(ct.iter())
                    .all(|(a, b)| a.ctx() == b.ctx() && a.coefficients() == b.coefficients());
            assert!(same, "level {level}");
            assert!(
                decode(&wire, &par, Kind::Full, level + 1).is_err(),
                "shallower than asked"
            );
        }
        // Fresh: c₀ and the seed, decrypting as before in half the bytes and a seed's.
        let seeded = encode(&fresh, &par, Kind::Seeded).unwrap();
        let full = encode(&fresh, &par, Kind::Full).unwrap();
        assert_eq!(seeded.len(), wire_len(&par, 0, Kind::Seeded).unwrap());
        assert_eq!(seeded.len(), HEAD + (full.len() - HEAD) / 2 + SEED);
        let read = decode(&seeded, &par, Kind::Seeded, 0).unwrap();
        let c = |ct: &Ciphertext, i: usize| ct[i].coefficients().to_owned();
        let decrypted = sk.try_decrypt(&read).unwrap();
        assert_eq!(
            Vec::<u64>::try_decode(&decrypted, Encoding::simd()).unwrap(),
            values
        );
        assert!((0..PARTS).all(|i| c(&read, i) == c(&fresh, i)));
        let mut changed = fresh.clone();
        changed += &fresh;
        assert!(encode(&changed, &par, Kind::Seeded).is_err(), "not fresh");
        let mut last = fresh.clone();
        last.switch_to_level(par.max_level()).unwrap();
        assert!(encode(&last, &par, Kind::Seeded).is_err(), "switched");
        let full = encode(&last, &par, Kind::Full).unwrap();
        let t_bits = (u64::BITS - t.leading_zeros()) as u8;
        let keep = [t_bits + 4, t_bits + 12 + 4];
        let compact = encode(&last, &par, Kind::Compact { keep }).unwrap();
        // 24 and 36 of the last modulus' 40 bits.
        assert_eq!(compact.len(), HEAD + 4096 * (24 + 36) / 8);
        assert!(compact.len() < full.len());
        let read = decode(&compact, &par, Kind::Compact { keep }, par.max_level()).unwrap();
        let decrypted = sk.try_decrypt(&read).unwrap();
        let slots = Vec::<u64>::try_decode(&decrypted, Encoding::simd()).unwrap();
        assert_eq!(slots, values);
        assert!(
            encode(&fresh, &par, Kind::Compact { keep }).is_err(),
            "not the last level"
        );
    }

    /// Every malformed ciphertext is refused with an error, never a panic: cut short or
    /// long, another kind or level, a coefficient not below its modulus, more bits kept
    /// than a modulus has; random bytes of the right length read or are refused.
    #[test]
    fn malformed_ciphertexts_are_refused() {
        let (par, sk, mut rng) = setup();
        let pt = Plaintext::try_encode(&[1u64, 2, 3], Encoding::simd(), &par).unwrap();
        let ct: Ciphertext = sk.try_encrypt(&pt, &mut rng).unwrap();
        let wire = encode(&ct, &par, Kind::Full).unwrap();
        let seeded = encode(&ct, &par, Kind::Seeded).unwrap();
        for bad in [&seeded[..seeded.len() - 1], &[&seeded[..], &[0]].concat()] {
            assert!(
                decode(bad, &par, Kind::Seeded, 0).is_err(),
                "a seeded one cut or long"
            );
        }
        let mut other_seed = seeded.clone();
        *other_seed.last_mut().unwrap() ^= 1;
        let read = decode(&other_seed, &par, Kind::Seeded, 0).unwrap();
        assert!(
            sk.try_decrypt(&read).unwrap() != pt,
            "another seed, another c₁"
        );
        assert!(decode(&wire[..wire.len() - 1], &par, Kind::Full, 0).is_err());
        assert!(decode(&[&wire[..], &[0]].concat(), &par, Kind::Full, 0).is_err());
        assert!(decode(&[], &par, Kind::Full, 0).is_err());
        for (at, value) in [(0, b'X'), (1, 9), (2, 5), (3, 1)] {
            let mut bad = wire.clone();
            bad[at] = value;
            assert!(
                decode(&bad, &par, Kind::Full, 0).is_err(),
                "byte {at} = {value}"
            );
        }
        // The first coefficient all ones: at least its modulus.
        let mut over = wire.clone();
        over[HEAD..HEAD + 5].fill(0xff);
        assert!(decode(&over, &par, Kind::Full, 0).is_err());
        let mut last = ct.clone();
        last.switch_to_level(par.max_level()).unwrap();
        let compact = encode(&last, &par, Kind::Compact { keep: [30, 30] }).unwrap();
        let last_level = par.max_level();
        // Another split of the same bits: the same length, refused.
        let split = encode(&last, &par, Kind::Compact { keep: [29, 31] }).unwrap();
        assert_eq!(split.len(), compact.len());
        let thirty = Kind::Compact { keep: [30, 30] };
        assert!(
            decode(&split, &par, thirty, last_level).is_err(),
            "another split"
        );
        assert!(
            decode(&compact, &par, Kind::Full, last_level).is_err(),
            "another kind"
        );
        let mut tail = compact.clone();
        *tail.last_mut().unwrap() |= 0x80;
        // 2 × 4096 × 30 bits fill their bytes: the top bit is the last coefficient's.
        assert!(decode(&tail, &par, Kind::Compact { keep: [30, 30] }, last_level).is_ok());
        let mut padded = encode(&last, &par, Kind::Compact { keep: [29, 29] }).unwrap();
        assert!(decode(&padded, &par, Kind::Compact { keep: [29, 29] }, last_level).is_ok());
        *padded.last_mut().unwrap() |= 0x80;
        // 2 × 4096 × 29 bits leave no byte part-used either; a wrong length is refused.
        assert!(decode(
            &padded[..padded.len() - 1],
            &par,
            Kind::Compact { keep: [29, 29] },
            last_level
        )
        .is_err());
        for at in [2, 3] {
            let mut keep = compact.clone();
            keep[at] = 60;
            assert!(
                decode(&keep, &par, Kind::Compact { keep: [30, 30] }, last_level).is_err(),
                "more bits kept than its modulus has"
            );
        }
        for _ in 0..8 {
            let mut noise = vec![0u8; wire.len()];
            rand::RngCore::fill_bytes(&mut rng, &mut noise);
            noise[..HEAD].copy_from_slice(&wire[..HEAD]);
            // Refused where a coefficient is at or above its modulus, else a ciphertext of
            // two parts at level 0: never a panic.
            if let Ok(read) = decode(&noise, &par, Kind::Full, 0) {
                assert_eq!(read.len(), PARTS);
            }
        }
    }
}
