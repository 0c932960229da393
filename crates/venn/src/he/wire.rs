//! Venn's wire form of BFV ciphertexts, read strictly before `fhe` sees any of it: `fhe`'s
//! own (protobuf) form takes the peer's word on variable-time arithmetic, and a ciphertext
//! of an unexpected level or part count reaches `assert!`s in its operations (a panic the
//! peer chooses).
//!
//! A ciphertext is its kind, its level, two bytes of bits (compact: kept of c₀'s and c₁'s
//! coefficients; seeded: dropped of c₀'s, and 0; else 0 and 0), and its two parts'
//! coefficients modulo each of its
//! level's moduli q_i, N of them per modulus, each in ⌈log₂ q_i⌉ bits (little-endian bit
//! order); a reader refuses any other length, level, part count, or a coefficient not
//! below its modulus. [`Kind::Full`] carries the coefficients as held (NTT form);
//! [`Kind::Seeded`], for a fresh encryption under a secret key, c₀ and, in place of c₁,
//! the 32 bytes it was expanded from (`fhe` draws c₁ = a uniform from a seed, CLR17
//! §6.2's "half the ciphertext"), so half the bytes — c₀ in power basis and mixed radix
//! (`to_mixed`), less the low bits the caller drops of each coefficient: a fresh
//! ciphertext's noise grows by at most their half-range, which the caller's evaluation
//! must leave room for; [`Kind::Compact`], for results at the last level, only the top
//! bits of each power-basis coefficient, as many of c₀'s
//! and of c₁'s as the caller says: dropping the low s₀ bits of c₀'s and s₁ of c₁'s adds
//! at most 2^(s₀−1) + 2^(s₁−1)·‖s_key‖₁ to the decrypted noise — what the caller's choice
//! must leave room for (APSI's responses drop bits so too, `try_clear_irrelevant_bits`;
//! CMdG+21 §5).

use super::bfv;
use super::product::Prime;
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
    /// c₀ in mixed radix less its low `drop` bits, then the seed c₁ is expanded from: a
    /// fresh encryption under a secret key only (`fhe` forgets the seed of a ciphertext
    /// once it changes it).
    Seeded {
        /// The low bits dropped of each coefficient of c₀ (of its mixed-radix digit
        /// below the first modulus).
        drop: u8,
    },
    /// The top bits of each power-basis coefficient, at the last level only.
    Compact {
        /// The bits kept of each coefficient of c₀ and of c₁.
        keep: [u8; PARTS],
    },
}

/// The bytes before the coefficients: kind, level, the bits kept of c₀'s and c₁'s
/// coefficients (compact), or dropped of c₀'s and 0 (seeded), else 0 and 0.
const HEAD: usize = 2 + PARTS;

/// A ciphertext's parts.
const PARTS: usize = 2;

/// The bytes of the seed a [`Kind::Seeded`] ciphertext's c₁ is expanded from.
const SEED: usize = 32;

/// The parts whose coefficients a ciphertext of `kind` carries.
fn carried(kind: Kind) -> usize {
    match kind {
        Kind::Seeded { .. } => 1,
        Kind::Full | Kind::Compact { .. } => PARTS,
    }
}

/// The bits of a modulus' residues.
fn width(q: u64) -> u32 {
    u64::BITS - q.leading_zeros()
}

/// The bits each coefficient of the `row`th modulus `q` takes in part `part` of a
/// ciphertext of `kind`, and how many low bits are dropped.
fn bits_of(q: u64, row: usize, kind: Kind, part: usize) -> Result<(u32, u32)> {
    let keep = match kind {
        Kind::Full => width(q),
        Kind::Seeded { drop } if row == 0 => width(q).saturating_sub(u32::from(drop)),
        Kind::Seeded { .. } => width(q),
        Kind::Compact { keep } => u32::from(keep[part]),
    };
    match (1..=width(q)).contains(&keep) {
        true => Ok((keep, width(q) - keep)),
        false => Err(Error::protocol(
            format!(
                "a ciphertext keeping 1 to {} bits of a coefficient",
                width(q)
            ),
            format!("{keep} bits ({kind:?})"),
        )),
    }
}

/// The bytes of the wire form of a ciphertext of `kind` at `level` under `par`.
pub fn wire_len(par: &BfvParameters, level: usize, kind: Kind) -> Result<usize> {
    let moduli = moduli_at(par, level)?;
    let mut bits = 0u64;
    for part in 0..carried(kind) {
        for (row, &q) in moduli.iter().enumerate() {
            bits += u64::from(bits_of(q, row, kind, part)?.0) * par.degree() as u64;
        }
    }
    let seed = match kind {
        Kind::Seeded { .. } => SEED,
        Kind::Full | Kind::Compact { .. } => 0,
    };
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
    let keep = head_bits(kind);
    let seed = match kind {
        Kind::Seeded { .. } => Some(seed_of(ct)?),
        Kind::Full | Kind::Compact { .. } => None,
    };
    let mut out = Vec::with_capacity(wire_len(par, level, kind)?);
    out.extend_from_slice(&[kind_byte(kind), level as u8]);
    out.extend_from_slice(&keep);
    let mut bits = BitWriter::new(out);
    for (at, part) in ct.iter().take(carried(kind)).enumerate() {
        let mut part = part.clone();
        if kind != Kind::Full {
            part.change_representation(Representation::PowerBasis);
        }
        // A seeded c₀'s rows in mixed radix; any other part's as held.
        let mixed = matches!(kind, Kind::Seeded { .. }).then(|| {
            let mut rows = part.coefficients().to_owned();
            let flat = rows
                .as_slice_mut()
                .expect("a polynomial's rows are contiguous");
            to_mixed(flat, moduli);
            rows
        });
        let rows = mixed
            .as_ref()
            .map_or(part.coefficients(), |rows| rows.view());
        for (row, (values, &q)) in rows.outer_iter().zip(moduli).enumerate() {
            let (kept, dropped) = bits_of(q, row, kind, at)?;
            for &c in values {
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
        Kind::Seeded { .. } => b'S',
        Kind::Compact { .. } => b'C',
    }
}

/// The head's two bytes of bits: kept of c₀'s and c₁'s (compact), dropped of c₀'s
/// (seeded), else none.
fn head_bits(kind: Kind) -> [u8; PARTS] {
    match kind {
        Kind::Compact { keep } => keep,
        Kind::Seeded { drop } => [drop, 0],
        Kind::Full => [0; PARTS],
    }
}

/// Power-basis coefficients mod q₀, q₁, … (`rows`: a row of N per modulus) into mixed
/// radix: each c becomes its digit a₀ = c mod q₀ (row 0) and the residues of
/// R = (c − a₀)/q₀ mod q₁, q₂, … (the other rows), so that c = a₀ + q₀·R with R below
/// q₁q₂⋯. A change to a₀ moves c by as much and no more — which dropping low bits of
/// a residue in RNS form would not (CRT spreads it over all of Q).
fn to_mixed(rows: &mut [u64], moduli: &[u64]) {
    let n = rows.len() / moduli.len();
    let (first, rest) = rows.split_at_mut(n);
    let q0 = moduli[0];
    for (row, &q) in rest.chunks_exact_mut(n).zip(&moduli[1..]) {
        let prime = Prime::new(q);
        let inverse = prime.shoup(prime.inverse(q0));
        for (r, &a0) in row.iter_mut().zip(&*first) {
            *r = prime.mul_shoup(below(*r + q - a0 % q, q), inverse);
        }
    }
}

/// [`to_mixed`] undone: c mod qᵢ = a₀ + q₀·R mod qᵢ.
fn from_mixed(rows: &mut [u64], moduli: &[u64]) {
    let n = rows.len() / moduli.len();
    let (first, rest) = rows.split_at_mut(n);
    let q0 = moduli[0];
    for (row, &q) in rest.chunks_exact_mut(n).zip(&moduli[1..]) {
        let prime = Prime::new(q);
        let q0 = prime.shoup(q0 % q);
        for (r, &a0) in row.iter_mut().zip(&*first) {
            *r = below(a0 % q + prime.mul_shoup(*r, q0), q);
        }
    }
}

/// `x` mod q for x below 2q.
fn below(x: u64, q: u64) -> u64 {
    if x >= q {
        x - q
    } else {
        x
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
        b'S' => Kind::Seeded { drop: keep[0] },
        b'C' => Kind::Compact { keep },
        other => return Err(bad(format!("the kind {other}"))),
    };
    let compact = matches!(kind, Kind::Compact { .. });
    if (kind, usize::from(at)) != (expected, level)
        || keep != head_bits(kind)
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
        Kind::Seeded { .. } => bytes[HEAD..].split_at(bytes.len() - HEAD - SEED),
        Kind::Full | Kind::Compact { .. } => (&bytes[HEAD..], &[][..]),
    };
    let mut reader = BitReader::new(coefficients);
    let mut parts = Vec::with_capacity(PARTS);
    for part in 0..carried(kind) {
        let mut coefficients = Vec::with_capacity(moduli.len() * n);
        for (row, &q) in moduli.iter().enumerate() {
            let (kept, dropped) = bits_of(q, row, kind, part)?;
            let half = (1u64 << dropped) >> 1;
            for _ in 0..n {
                let top = reader.take(kept) << dropped;
                // One coding: what was dropped of a value below q leaves one below q.
                if top >= q {
                    return Err(bad(format!(
                        "a coefficient {top} not below its modulus {q}"
                    )));
                }
                // A dropped tail put back past q: the largest residue is as near.
                coefficients.push((top | half).min(q - 1));
            }
        }
        if let Kind::Seeded { .. } = kind {
            from_mixed(&mut coefficients, moduli);
        }
        let representation = match kind {
            Kind::Full => Representation::Ntt,
            Kind::Seeded { .. } | Kind::Compact { .. } => Representation::PowerBasis,
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
        let seeded = encode(&fresh, &par, Kind::Seeded { drop: 0 }).unwrap();
        let full = encode(&fresh, &par, Kind::Full).unwrap();
        assert_eq!(
            seeded.len(),
            wire_len(&par, 0, Kind::Seeded { drop: 0 }).unwrap()
        );
        assert_eq!(seeded.len(), HEAD + (full.len() - HEAD) / 2 + SEED);
        let read = decode(&seeded, &par, Kind::Seeded { drop: 0 }, 0).unwrap();
        let c = |ct: &Ciphertext, i: usize| ct[i].coefficients().to_owned();
        let decrypted = sk.try_decrypt(&read).unwrap();
        assert_eq!(
            Vec::<u64>::try_decode(&decrypted, Encoding::simd()).unwrap(),
            values
        );
        assert!((0..PARTS).all(|i| c(&read, i) == c(&fresh, i)));
        // Dropping 20 bits of c₀: 20 bits fewer a coefficient, about 2^19 more noise (not
        // the 2^80 a residue's bits dropped would spread), the same slots.
        let drop = Kind::Seeded { drop: 20 };
        let lean = encode(&fresh, &par, drop).unwrap();
        assert_eq!(lean.len(), wire_len(&par, 0, drop).unwrap());
        assert_eq!(lean.len(), seeded.len() - 4096 * 20 / 8);
        let read = decode(&lean, &par, drop, 0).unwrap();
        let decrypted = sk.try_decrypt(&read).unwrap();
        let slots = Vec::<u64>::try_decode(&decrypted, Encoding::simd()).unwrap();
        assert_eq!(slots, values);
        // SAFETY: variable time in the noise, which a test may learn.
        let noise = unsafe { sk.measure_noise(&read) }.unwrap();
        assert!((17..=21).contains(&noise), "{noise} bits of noise");
        assert!(decode(&lean, &par, Kind::Seeded { drop: 19 }, 0).is_err());
        assert!(decode(&seeded, &par, drop, 0).is_err());
        let mut changed = fresh.clone();
        changed += &fresh;
        assert!(
            encode(&changed, &par, Kind::Seeded { drop: 0 }).is_err(),
            "not fresh"
        );
        let mut last = fresh.clone();
        last.switch_to_level(par.max_level()).unwrap();
        assert!(
            encode(&last, &par, Kind::Seeded { drop: 0 }).is_err(),
            "switched"
        );
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
        let seeded = encode(&ct, &par, Kind::Seeded { drop: 0 }).unwrap();
        for bad in [&seeded[..seeded.len() - 1], &[&seeded[..], &[0]].concat()] {
            assert!(
                decode(bad, &par, Kind::Seeded { drop: 0 }, 0).is_err(),
                "a seeded one cut or long"
            );
        }
        let mut other_seed = seeded.clone();
        *other_seed.last_mut().unwrap() ^= 1;
        let read = decode(&other_seed, &par, Kind::Seeded { drop: 0 }, 0).unwrap();
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
