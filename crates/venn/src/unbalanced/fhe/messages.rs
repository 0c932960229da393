//! `ub-fhe`'s query and answer as bytes, read strictly before any of them reaches `fhe`
//! (a hostile client's malformed ciphertexts and wrong parameters are refused here).
//!
//! A request is the count of bundle indices (u32) and of sources (u8), which must be the
//! set's, then for each index and each source in the set's order a fresh ciphertext at
//! level 0, seeded ([`crate::he::wire`]'s `Kind::Seeded`: c₀ less the set's
//! [`FheSet::query_drop`] low bits and c₁'s seed, its length
//! (u32) first), then the relinearisation key in `fhe`'s
//! own form (its length (u32) first; length 0 and no key where the set needs no product,
//! [`FheSet::relinearises`], and only there), taken only where its encoding is the one `fhe`
//! writes for it (no stray fields) and whose fields are checked first (`check_key`):
//! `fhe` keeps each polynomial's representation and power-basis values as sent, and a
//! key of another level, a polynomial not in NTT-Shoup form or a value not below its
//! modulus reaches `fhe`'s assertions when the server relinearises (a panic the client
//! would choose). (Its polynomials allow variable-time arithmetic, as `fhe`'s own keys'
//! do: they are public.)
//!
//! An answer is, per index, the count of bundles (u32) and for each bundle 1 + P compact
//! ciphertexts at the last level ([`answer_bits`] kept of each part's coefficients), each after
//! its length (u32).

use super::params::FheSet;
use super::query::{Answer, Request};
use crate::he::bfv;
use crate::he::wire::{decode, encode, wire_len, Kind};
use crate::net::{Reader, Writer};
use crate::{Error, Result};
use fhe::bfv::{BfvParameters, RelinearizationKey};
use fhe_traits::{DeserializeParametrized, Serialize};
use std::sync::Arc;

/// The most bytes of a relinearisation key: 2 polynomials per modulus, per modulus, at 8
/// bytes a coefficient, with room for `fhe`'s framing.
pub(super) fn max_key_bytes(par: &BfvParameters) -> usize {
    let moduli = par.moduli().len();
    2 * moduli * moduli * par.degree() * 8 + 4096
}

/// The bits an answer keeps of each coefficient of c₀ and of c₁ at the last modulus q:
/// t's and 4, and t's, log₂ N and 4. Dropping the low s₀ bits of c₀'s and s₁ of c₁'s adds
/// at most 2^(s₀−1) + 2^(s₁−1)·‖s_key‖₁ to the noise; `fhe`'s secret is a centred
/// binomial of variance 10, so ‖s_key‖₁ is a sum of N terms of mean E|s| ≈ 2.5, within a
/// few percent of 2^(log₂ N + 1.33). With s₀ = log₂ q − log₂ t − 4 and s₁ = s₀ − log₂ N
/// the added noise stays below 2^(log₂ q − log₂ t − 5) + 2^(log₂ q − log₂ t − 3.6): under
/// a quarter of the budget q/(2t), at worst (the sets keep the rest 64 times over).
pub fn answer_bits(par: &BfvParameters) -> [u8; 2] {
    let t_bits = (u64::BITS - par.plaintext().leading_zeros()) as u8;
    let log_n = par.degree().trailing_zeros() as u8;
    [t_bits + 4, t_bits + log_n + 4]
}

/// The bytes of a request of `set` (whose BFV parameters are `par`): its counts, its
/// ciphertexts and a relinearisation key where the set needs one (one made and measured:
/// `fhe`'s coding of a key's coefficients takes their moduli's bits, the same for every
/// key).
pub fn request_len(set: &FheSet, par: &Arc<BfvParameters>) -> Result<usize> {
    use rand::SeedableRng;
    let key = if set.relinearises() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(0);
        let sk = fhe::bfv::SecretKey::random(par, &mut rng);
        let rk = RelinearizationKey::new(&sk, &mut rng).map_err(bfv)?;
        rk.to_bytes().len()
    } else {
        0
    };
    let cts = set.indices as usize * set.sources.len() * (4 + wire_len(par, 0, set.query_kind())?);
    Ok(5 + cts + 4 + key)
}

/// The bytes of one result in an answer (a bundle's, or one label part's), its length
/// included.
pub fn result_len(par: &BfvParameters) -> Result<usize> {
    let keep = answer_bits(par);
    Ok(4 + wire_len(par, par.max_level(), Kind::Compact { keep })?)
}

/// A request's wire form.
pub fn request_to_bytes(request: &Request, set: &FheSet, par: &BfvParameters) -> Result<Vec<u8>> {
    let sources = request.indices.first().map_or(0, Vec::len);
    let mut w = Writer::new()
        .u32(request.indices.len() as u32)
        .u8(sources as u8);
    for (_, ct) in request.indices.iter().flatten() {
        let bytes = encode(ct, par, set.query_kind())?;
        w = w.u32(bytes.len() as u32).bytes(&bytes);
    }
    let rk = request
        .rk
        .as_ref()
        .map(|rk| rk.to_bytes())
        .unwrap_or_default();
    Ok(w.u32(rk.len() as u32).bytes(&rk).0)
}

/// Reads a request for `set` (whose BFV parameters are `par`): refused unless it has the
/// set's indices and sources, every ciphertext reads at level 0, a key is there exactly
/// where the set needs one and reads as `fhe` encodes it, and nothing follows.
pub fn request_from_bytes(bytes: &[u8], set: &FheSet, par: &Arc<BfvParameters>) -> Result<Request> {
    let mut r = Reader::new(bytes, "a ub-fhe query");
    let (indices, sources) = (r.u32()?, r.u8()?);
    if indices != set.indices || usize::from(sources) != set.sources.len() {
        return Err(Error::protocol(
            format!(
                "a query of {} indices and {} sources (the set {})",
                set.indices,
                set.sources.len(),
                set.name
            ),
            format!("{indices} indices and {sources} sources"),
        ));
    }
    let ct_len = wire_len(par, 0, set.query_kind())?;
    let mut all = Vec::with_capacity(indices as usize);
    for _ in 0..indices {
        let mut index = Vec::with_capacity(set.sources.len());
        for &power in &set.sources {
            let len = r.u32()? as usize;
            if len != ct_len {
                return Err(Error::protocol(
                    format!("a query ciphertext of {ct_len} bytes"),
                    format!("{len} bytes"),
                ));
            }
            index.push((power, decode(r.bytes(len)?, par, set.query_kind(), 0)?));
        }
        all.push(index);
    }
    let len = r.u32()? as usize;
    if (len == 0) == set.relinearises() || len > max_key_bytes(par) {
        let expected = match set.relinearises() {
            true => format!("a relinearisation key of 1 to {} bytes", max_key_bytes(par)),
            false => format!("no relinearisation key (the set {} needs none)", set.name),
        };
        return Err(Error::protocol(expected, format!("{len} bytes")));
    }
    let key = r.bytes(len)?;
    r.finish()?;
    let rk = (len > 0).then(|| read_key(key, par)).transpose()?;
    Ok(Request { indices: all, rk })
}

/// A relinearisation key of `par` from `key`: refused unless its fields check
/// ([`check_key`]) and `fhe` encodes what it reads as `key`.
fn read_key(key: &[u8], par: &Arc<BfvParameters>) -> Result<RelinearizationKey> {
    check_key(key, par)?;
    let rk = RelinearizationKey::from_bytes(key, par)
        .map_err(|e| Error::protocol("a relinearisation key", e.to_string()))?;
    if rk.to_bytes() != key {
        return Err(Error::protocol(
            "a relinearisation key as `fhe` encodes it",
            "another encoding",
        ));
    }
    Ok(rk)
}

/// A polynomial in `fhe`'s form (`fhe_math`'s `Rq` message, which it keeps private).
#[derive(Clone, PartialEq, prost::Message)]
struct PolyForm {
    /// 1 power basis, 2 NTT, 3 NTT-Shoup.
    #[prost(int32, tag = "1")]
    representation: i32,
    #[prost(uint32, tag = "2")]
    degree: u32,
    /// Per modulus, its N power-basis values in ⌈log₂ q_i⌉ bits each, LSB first.
    #[prost(bytes = "vec", tag = "3")]
    coefficients: Vec<u8>,
    /// Whether arithmetic on it may take variable time (so for `fhe`'s keys: they are
    /// public).
    #[prost(bool, tag = "4")]
    allow_variable_time: bool,
}

/// NTT-Shoup, the form of a genuine key's polynomials.
const NTT_SHOUP: i32 = 3;

/// Refuses a relinearisation key (`fhe`'s form) unless it is for level-0 ciphertexts at
/// level 0 without decomposition, with one c0 per modulus and one c1 each or a 32-byte
/// seed, every polynomial in NTT-Shoup form of degree N, its values below their moduli.
fn check_key(key: &[u8], par: &BfvParameters) -> Result<()> {
    use prost::Message;
    let bad = |why: String| Error::protocol("a level-0 relinearisation key of this set", why);
    let rk = fhe::proto::bfv::RelinearizationKey::decode(key).map_err(|e| bad(e.to_string()))?;
    let ksk = rk.ksk.ok_or_else(|| bad("no key".into()))?;
    let moduli = par.moduli();
    let c1_ok = (ksk.seed.is_empty() && ksk.c1.len() == moduli.len())
        || (ksk.seed.len() == 32 && ksk.c1.is_empty());
    if (ksk.ciphertext_level, ksk.ksk_level, ksk.log_base) != (0, 0, 0)
        || ksk.c0.len() != moduli.len()
        || !c1_ok
    {
        return Err(bad(format!(
            "levels {} and {}, base 2^{}, {} and {} polynomials",
            ksk.ciphertext_level,
            ksk.ksk_level,
            ksk.log_base,
            ksk.c0.len(),
            ksk.c1.len()
        )));
    }
    let n = par.degree();
    for bytes in ksk.c0.iter().chain(&ksk.c1) {
        let poly = PolyForm::decode(&bytes[..]).map_err(|e| bad(e.to_string()))?;
        if poly.representation != NTT_SHOUP || poly.degree as usize != n {
            return Err(bad("a polynomial of another form or degree".into()));
        }
        let widths: Vec<u32> = moduli
            .iter()
            .map(|&q| u64::BITS - (q - 1).leading_zeros())
            .collect();
        let expected: usize = widths.iter().map(|&w| w as usize * n / 8).sum();
        if poly.coefficients.len() != expected {
            return Err(bad("a polynomial of another length".into()));
        }
        let mut at = 0;
        for (&q, &w) in moduli.iter().zip(&widths) {
            let block = &poly.coefficients[at..at + w as usize * n / 8];
            at += block.len();
            let (mut acc, mut filled, mut read) = (0u128, 0u32, 0usize);
            for &byte in block {
                acc |= u128::from(byte) << filled;
                filled += 8;
                while filled >= w && read < n {
                    let value = (acc & ((1u128 << w) - 1)) as u64;
                    if value >= q {
                        return Err(bad(format!("a value not below its modulus {q}")));
                    }
                    acc >>= w;
                    filled -= w;
                    read += 1;
                }
            }
        }
    }
    Ok(())
}

/// An answer's wire form: compact ciphertexts at the last level.
pub fn answer_to_bytes(answer: &Answer, par: &BfvParameters) -> Result<Vec<u8>> {
    let keep = answer_bits(par);
    let mut w = Writer::new();
    for bundles in answer {
        w = w.u32(bundles.len() as u32);
        for ct in bundles.iter().flatten() {
            let bytes = encode(ct, par, Kind::Compact { keep })?;
            w = w.u32(bytes.len() as u32).bytes(&bytes);
        }
    }
    Ok(w.0)
}

/// Reads an answer for `set` with `parts` label parts a bundle and at most `max_bundles`
/// bundles an index: refused unless each ciphertext reads, compact at the last level with
/// [`answer_bits`] kept, and nothing follows.
pub fn answer_from_bytes(
    bytes: &[u8],
    set: &FheSet,
    par: &Arc<BfvParameters>,
    parts: usize,
    max_bundles: u32,
) -> Result<Answer> {
    let keep = answer_bits(par);
    let kind = Kind::Compact { keep };
    let ct_len = wire_len(par, par.max_level(), kind)?;
    let mut r = Reader::new(bytes, "a ub-fhe answer");
    let mut answer = Vec::with_capacity(set.indices as usize);
    for _ in 0..set.indices {
        let bundles = r.u32()?;
        if bundles > max_bundles {
            return Err(Error::protocol(
                format!("at most {max_bundles} bundles an index"),
                format!("{bundles}"),
            ));
        }
        // Grown as the bundles read: the count is the peer's.
        let mut index = Vec::new();
        for _ in 0..bundles {
            let mut results = Vec::with_capacity(1 + parts);
            for _ in 0..1 + parts {
                let len = r.u32()? as usize;
                if len != ct_len {
                    return Err(Error::protocol(
                        format!("an answer ciphertext of {ct_len} bytes"),
                        format!("{len} bytes"),
                    ));
                }
                results.push(decode(r.bytes(len)?, par, kind, par.max_level())?);
            }
            index.push(results);
        }
        answer.push(index);
    }
    r.finish()?;
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::{Block, Prg};
    use crate::unbalanced::fhe::database::{random_hashes, Database};
    use crate::unbalanced::fhe::query::{answer, query};
    use crate::unbalanced::labels::sealed_len;

    /// A labeled query through bytes both ways finds the members with their labels; each
    /// malformed request or answer is refused: other counts, a ciphertext cut or deeper, a
    /// key that does not read, is too long, of another level, not in NTT-Shoup form or not
    /// reduced, bytes left over or missing.
    #[test]
    fn queries_and_answers_cross_as_bytes() {
        let set = crate::unbalanced::fhe::query::tests::small_set();
        let par = set.bfv.build().unwrap();
        let mut prg = Prg::from_seed(Block::from(14));
        let seed = Block::from(79);
        let bytes = sealed_len(8);
        let mut db = Database::new(set.clone(), seed, Some(bytes));
        let held = random_hashes(500, &mut prg);
        for (i, &h) in held.iter().enumerate() {
            db.insert(h, Some(&vec![i as u8; bytes])).unwrap();
        }
        let asked: Vec<u128> = held[..20]
            .iter()
            .copied()
            .chain(random_hashes(20, &mut prg))
            .collect();
        let (pending, request) = query(&set, &par, seed, &asked, &mut prg).unwrap();
        let wire = request_to_bytes(&request, &set, &par).unwrap();
        let read = request_from_bytes(&wire, &set, &par).unwrap();
        let answered = answer(&db, &par, &read).unwrap();
        let parts = db.label_parts();
        let back = answer_to_bytes(&answered, &par).unwrap();
        let answered = answer_from_bytes(&back, &set, &par, parts, 4).unwrap();
        let found = pending.matches(&set, &answered, bytes).unwrap();
        for (i, got) in found.iter().enumerate() {
            assert_eq!(
                got.clone(),
                (i < 20).then(|| vec![i as u8; bytes]),
                "item {i}"
            );
        }

        let refused = |bytes: &[u8]| request_from_bytes(bytes, &set, &par).is_err();
        assert!(refused(&wire[..wire.len() - 1]), "cut short");
        assert!(refused(&[&wire[..], &[0]].concat()), "a byte more");
        let mut indices = wire.clone();
        indices[0] = 2;
        assert!(refused(&indices), "two indices");
        let mut sources = wire.clone();
        sources[4] = 4;
        assert!(refused(&sources), "four sources");
        // The first ciphertext's level byte (after the counts, its length and its kind).
        let mut deeper = wire.clone();
        deeper[5 + 4 + 1] = 1;
        assert!(refused(&deeper), "a deeper ciphertext");
        // A key that is not one (its length before it).
        let key = request.rk.as_ref().unwrap().to_bytes();
        let key_at = wire.len() - key.len() - 4;
        let keyless = [&wire[..key_at], &0u32.to_le_bytes()].concat();
        assert!(refused(&keyless), "no key where products need one");
        let garbage = [&wire[..key_at], &64u32.to_le_bytes(), &[0xff; 64]].concat();
        assert!(refused(&garbage), "not a key");
        let huge = [&wire[..key_at], &u32::MAX.to_le_bytes()].concat();
        assert!(refused(&huge), "a key longer than any");
        // Keys that read but are not a level-0 key in NTT-Shoup form, reduced.
        use prost::Message;
        let genuine = fhe::proto::bfv::RelinearizationKey::decode(&key[..]);
        let genuine = genuine.unwrap();
        let with_key = |rk: &fhe::proto::bfv::RelinearizationKey| {
            let rk = rk.encode_to_vec();
            [&wire[..key_at], &(rk.len() as u32).to_le_bytes(), &rk].concat()
        };
        assert!(!refused(&with_key(&genuine)), "the genuine key, re-encoded");
        let mut levels = genuine.clone();
        levels.ksk.as_mut().unwrap().ciphertext_level = 1;
        assert!(refused(&with_key(&levels)), "another level");
        let mut form = genuine.clone();
        let c0 = &mut form.ksk.as_mut().unwrap().c0[0];
        let mut poly = PolyForm::decode(&c0[..]).unwrap();
        poly.representation = 1;
        *c0 = poly.encode_to_vec();
        assert!(refused(&with_key(&form)), "a power-basis polynomial");
        let mut unreduced = genuine.clone();
        let c0 = &mut unreduced.ksk.as_mut().unwrap().c0[0];
        let mut poly = PolyForm::decode(&c0[..]).unwrap();
        poly.coefficients[..7].fill(0xff);
        *c0 = poly.encode_to_vec();
        assert!(
            refused(&with_key(&unreduced)),
            "a value not below its modulus"
        );
        let answer_refused = |b: &[u8], max| answer_from_bytes(b, &set, &par, parts, max).is_err();
        assert!(answer_refused(&back[..back.len() - 1], 4));
        assert!(answer_refused(&[&back[..], &[0]].concat(), 4));
        assert!(answer_refused(&back, 0), "more bundles than allowed");
        assert!(
            answer_from_bytes(&back, &set, &par, parts + 1, 4).is_err(),
            "a part more"
        );
    }

    /// A set without products (ℓ = d, every power sent): a query through bytes carries no
    /// key and finds its member, not a non-member; a request with a key is refused.
    #[test]
    fn keyless_queries_cross_as_bytes() {
        let set = (crate::unbalanced::fhe::params::sets().into_iter())
            .find(|s| !s.relinearises())
            .unwrap();
        let par = set.bfv.build().unwrap();
        let mut prg = Prg::from_seed(Block::from(15));
        let seed = Block::from(80);
        // About 61 items a column: one bundle full, a second begun.
        let (db, held) = crate::unbalanced::fhe::query::tests::filled(&set, seed, 50_000, &mut prg);
        assert!(db.bundles(0) >= 2, "{} bundles", db.bundles(0));
        for (asked, member) in [(held[7], true), (random_hashes(1, &mut prg)[0], false)] {
            let (pending, request) = query(&set, &par, seed, &[asked], &mut prg).unwrap();
            assert!(request.rk.is_none());
            let wire = request_to_bytes(&request, &set, &par).unwrap();
            assert_eq!(wire.len(), request_len(&set, &par).unwrap());
            let read = request_from_bytes(&wire, &set, &par).unwrap();
            let back = answer_to_bytes(&answer(&db, &par, &read).unwrap(), &par).unwrap();
            let answered = answer_from_bytes(&back, &set, &par, 0, 64).unwrap();
            let found = pending.matches(&set, &answered, 0).unwrap();
            assert_eq!(found[0].is_some(), member);
            let keyed = [&wire[..wire.len() - 4], &64u32.to_le_bytes(), &[1; 64]].concat();
            let e = request_from_bytes(&keyed, &set, &par).err().unwrap();
            assert!(e.to_string().contains("no relinearisation key"), "{e}");
        }
    }
}
