//! Thunder's cryptography (Pinkas–Riva, "PSI in the cloud" in the talk's slides; described
//! in docs/cloud.md, The cryptography) on BLS12-381 with blst.
//!
//! A client holding dataset key K_i uploads each key x as `c = H(x)^{K_i}` in G1 (H: RFC 9380
//! hash to G1, one suite and DST for every client, so equal keys of different clients meet).
//! Two clients that agree on a run key K the server never sees each hand it a token
//! `T_i = h^{K/K_i}` in G2; the server pairs every stored item with its owner's token,
//! `e(c, T_i) = e(H(x), h)^K`, and joins the two sides on digests of those values. A token
//! re-keys one dataset to one run's K: values under (i, j)'s K and (j, k)'s K' cannot be
//! compared, so the server cannot intersect i with k from runs (i, j) and (j, k).
//!
//! **Orientation** (docs/cloud.md): the slides hash items into G2 and tokens into G1; here
//! items are in G1 and tokens in G2, so a token's Miller-loop lines are computed once
//! ([`G2Prepared`]) and evaluated at every item — the slides' "batching pairings with the
//! same element", and items hash 3× faster and store in 48 bytes. SXDH is symmetric in the
//! two groups, and a type-III pairing has no efficient map between them, so nothing is lost.
//!
//! **Three parties** (docs/cloud.md): tokens `h^{R_1/K_1}`, `h^{R_2/K_2}`, `h^{−(R_1+R_2)/K_3}`
//! give values whose product is 1 exactly for a key all three hold.
//!
//! Every point that arrives from outside is decoded with the subgroup check and the
//! identity refused ([`decode_item`], [`decode_token`]): with either factor the identity the
//! pairing is 1 whatever the key.

use blstrs::{
    Bls12, Compress, G1Affine, G1Projective, G2Affine, G2Prepared, G2Projective, Gt, Scalar,
};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use pairing::{MillerLoopResult, MultiMillerLoop};
use rayon::prelude::*;
use sha2::{Digest, Sha256, Sha512};
use venn::{Error, Items, Result};

/// RFC 9380's hash-to-curve suite for G1, under Venn's one domain-separation tag.
pub const DST: &[u8] = b"VENN-THUNDER-V01-CS01-with-BLS12381G1_XMD:SHA-256_SSWU_RO_";
/// Bytes of a stored item (a compressed G1 point).
pub const ITEM_BYTES: usize = 48;
/// Bytes of a token (a compressed G2 point).
pub const TOKEN_BYTES: usize = 96;
/// Bytes of a digest of a paired value: false matches below n_i·n_j / 2^128.
pub const DIGEST_BYTES: usize = 16;
/// Bytes of a paired value kept whole: its twelve F_p coefficients, canonical big-endian.
pub const RAW_VALUE_BYTES: usize = 576;
/// Bytes of a pre-token's precomputed item (docs/cloud.md): the value, then its digest.
pub const PRECOMPUTED_BYTES: usize = RAW_VALUE_BYTES + DIGEST_BYTES;

/// A stored item.
pub type Ciphertext = [u8; ITEM_BYTES];
/// A digest of an item's value in one run.
pub type ValueDigest = [u8; DIGEST_BYTES];

/// A secret exponent: a dataset's key K_i, a run's key K, a three-party share R. Never
/// zero.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Scalar);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// A fresh uniformly random secret from the operating system's generator.
    pub fn random() -> Self {
        loop {
            let s = Scalar::random(rand_core::OsRng);
            if !bool::from(s.is_zero()) {
                return Secret(s);
            }
        }
    }

    /// The secret these 32 bytes encode (little-endian, canonical, not zero).
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<Self> {
        Option::<Scalar>::from(Scalar::from_bytes_le(bytes))
            .filter(|s| !bool::from(s.is_zero()))
            .map(Secret)
            .ok_or_else(|| Error::protocol("a nonzero scalar below r", "another 32 bytes"))
    }

    /// Its encoding.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.0.to_bytes_le()
    }

    /// A secret derived from `parts` under `domain` (each length-prefixed): SHA-512 read
    /// as a 512-bit number and reduced mod r, so uniform within 2^-257.
    pub fn derive(domain: &str, parts: &[&[u8]]) -> Self {
        let mut counter = 0u64;
        loop {
            let mut h = Sha512::new();
            for p in [domain.as_bytes(), &counter.to_le_bytes()]
                .iter()
                .chain(parts)
            {
                h.update((p.len() as u64).to_le_bytes());
                h.update(p);
            }
            let wide = h.finalize();
            // Horner in base 2^64 from the most significant limb.
            let base = Scalar::from(1u64 << 32).square();
            let s = wide.chunks_exact(8).rev().fold(Scalar::ZERO, |s, limb| {
                s * base + Scalar::from(u64::from_le_bytes(limb.try_into().expect("8 bytes")))
            });
            if !bool::from(s.is_zero()) {
                return Secret(s);
            }
            counter += 1;
        }
    }

    /// `−(a + b)`: the third party's share when the first two hold `a` and `b`.
    pub fn negated_sum(a: &Secret, b: &Secret) -> Result<Self> {
        let s = -(a.0 + b.0);
        match bool::from(s.is_zero()) {
            true => Err(Error::Usage("three-party shares that cancel".into())),
            false => Ok(Secret(s)),
        }
    }
}

/// `H(x)`: the key's point in G1 (the normalised key bytes, length-prefixed).
pub fn item_point(key: &[u8]) -> G1Projective {
    let mut msg = Vec::with_capacity(8 + key.len());
    msg.extend_from_slice(&(key.len() as u64).to_le_bytes());
    msg.extend_from_slice(key);
    G1Projective::hash_to_curve(&msg, DST, &[])
}

/// The ciphertexts `H(x)^{K_i}` of `keys` under a dataset's key, in parallel.
pub fn encrypt(keys: &Items, dataset: &Secret) -> Vec<Ciphertext> {
    (0..keys.len())
        .into_par_iter()
        .with_min_len(64)
        .map(|i| {
            (item_point(keys.get(i)) * dataset.0)
                .to_affine()
                .to_compressed()
        })
        .collect()
}

/// The token `h^{run/K_i}` handing a dataset keyed with `dataset` to a run keyed with
/// `run` (K for two parties, a party's share R for three).
pub fn token(run: &Secret, dataset: &Secret) -> [u8; TOKEN_BYTES] {
    let inverse = dataset.0.invert().expect("secrets are nonzero");
    (G2Projective::generator() * (run.0 * inverse))
        .to_affine()
        .to_compressed()
}

/// A stored item from outside: a compressed G1 point in the prime-order subgroup, not the
/// identity.
pub fn decode_item(bytes: &Ciphertext) -> Result<G1Affine> {
    Option::<G1Affine>::from(G1Affine::from_compressed(bytes))
        .filter(|p| !bool::from(p.is_identity()))
        .ok_or_else(|| Error::protocol("a G1 point of the subgroup", "another 48 bytes"))
}

/// A token from outside: a compressed G2 point in the prime-order subgroup, not the
/// identity.
pub fn decode_token(bytes: &[u8; TOKEN_BYTES]) -> Result<G2Affine> {
    Option::<G2Affine>::from(G2Affine::from_compressed(bytes))
        .filter(|p| !bool::from(p.is_identity()))
        .ok_or_else(|| Error::protocol("a G2 point of the subgroup", "another 96 bytes"))
}

/// A token prepared for pairing with many items: blst's Miller-loop lines, and where the
/// CPU has AVX-512 IFMA the same lines for pairing eight items at once.
pub struct PreparedToken {
    prepared: G2Prepared,
    #[cfg(target_arch = "x86_64")]
    lanes: Option<crate::batch_pairing::Lines>,
}

impl PreparedToken {
    /// Prepares a decoded token (its Miller-loop lines, once).
    pub fn new(token: &G2Affine) -> Self {
        PreparedToken {
            prepared: G2Prepared::from(*token),
            #[cfg(target_arch = "x86_64")]
            lanes: crate::batch_pairing::Lines::new(token),
        }
    }

    /// `e(c, T)` for up to eight stored items, which were checked when they were stored
    /// (so decoded here without the subgroup check; an encoding that is no point at all,
    /// or the identity, is still refused).
    fn pair(&self, items: &[Ciphertext]) -> Result<Vec<Gt>> {
        let points = items
            .iter()
            .map(|c| {
                Option::<G1Affine>::from(G1Affine::from_compressed_unchecked(c))
                    .filter(|p| !bool::from(p.is_identity()))
                    .ok_or_else(|| Error::State("a stored item that is not a G1 point".into()))
            })
            .collect::<Result<Vec<_>>>()?;
        #[cfg(target_arch = "x86_64")]
        if let Some(lanes) = self
            .lanes
            .as_ref()
            .filter(|_| crate::batch_pairing::available())
        {
            use crate::batch_pairing::LANES;
            assert!(!points.is_empty() && points.len() <= LANES);
            let batch: [G1Affine; LANES] =
                std::array::from_fn(|k| *points.get(k).unwrap_or(&points[0]));
            let values = lanes.pairings(&batch);
            return Ok(values[..points.len()]
                .iter()
                .map(|f| gt_from_limbs(*f))
                .collect());
        }
        Ok(points
            .iter()
            .map(|p| Bls12::multi_miller_loop(&[(p, &self.prepared)]).final_exponentiation())
            .collect())
    }
}

/// Items paired per step: the lanes of the batch pairing.
const BATCH: usize = 8;

/// `f(e(c, T))` for every stored item `c`, in order, in parallel.
pub fn paired<T: Send>(
    items: &[Ciphertext],
    token: &PreparedToken,
    f: impl Fn(&Gt) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let batches = items
        .par_chunks(BATCH)
        .with_min_len(2)
        .map(|batch| token.pair(batch)?.iter().map(&f).collect())
        .collect::<Result<Vec<Vec<T>>>>()?;
    Ok(batches.into_iter().flatten().collect())
}

/// `e(c, T)` for one stored item.
pub fn value(item: &Ciphertext, token: &PreparedToken) -> Result<Gt> {
    Ok(token.pair(std::slice::from_ref(item))?.remove(0))
}

// --- runs from precomputed values (docs/cloud.md, Pre-tokens) -----------------------------
//
// Offline, a client hands the service a *pre-token* `h^{R/K_i}` for a fresh share R (made
// like a token: [`token`]`(R, K_i)`), and the service stores its items' values
// `e(H(x), h)^R` ([`precomputed`]). Online, the two clients agree on K as for a run and each
// hands over only the scalar `δ = K / R` ([`delta`]); the service raises the smaller
// side's values to `δ_i / δ_j = R_j / R_i` ([`ratio`], [`raised`]) and compares them with
// the other side's: a G_T exponentiation for one side instead of a pairing for both.
// Its view is the base protocol's (a pre-token raised to δ is the token `h^{K/K_i}`), as
// long as each pre-token serves one run: with R_i used in runs (i, j) and (i, k), the
// scalars give R_k / R_j and the service could intersect j with k (see the tests).

/// The precomputed items of pre-token `pretoken` (its id) for stored `items`: each
/// value whole, to be raised when its side is the smaller of a run, and its digest under
/// the pre-token, to be compared with the other side's raised values when it is the larger.
pub fn precomputed(
    items: &[Ciphertext],
    token: &PreparedToken,
    pretoken: &[u8],
) -> Result<Vec<[u8; PRECOMPUTED_BYTES]>> {
    paired(items, token, |v| {
        let mut out = [0u8; PRECOMPUTED_BYTES];
        out[..RAW_VALUE_BYTES].copy_from_slice(&value_bytes(v));
        out[RAW_VALUE_BYTES..].copy_from_slice(&digest(pretoken, v)?);
        Ok(out)
    })
}

/// The digests under pre-token `target` of precomputed items raised to `exponent`
/// (the online step for the smaller side: docs/cloud.md, Pre-tokens), in parallel.
pub fn raised_digests(
    precomputed: &[[u8; PRECOMPUTED_BYTES]],
    exponent: &Secret,
    target: &[u8],
) -> Result<Vec<ValueDigest>> {
    let values = precomputed
        .par_iter()
        .map(|p| value_from_bytes(p[..RAW_VALUE_BYTES].try_into().expect("576 bytes")))
        .collect::<Result<Vec<Gt>>>()?;
    raised(&values, exponent)
        .par_iter()
        .map(|v| digest(target, v))
        .collect()
}

/// A value's coefficients, canonical big-endian, in blst's order.
fn value_bytes(g: &Gt) -> [u8; RAW_VALUE_BYTES] {
    let mut out = [0u8; RAW_VALUE_BYTES];
    let coefficients = gt_limbs(g)
        .fp6
        .iter()
        .flat_map(|c| &c.fp2)
        .flat_map(|c| &c.fp);
    for (slot, c) in out.chunks_exact_mut(48).zip(coefficients) {
        // SAFETY: 48 bytes out, one element in.
        unsafe { blst::blst_bendian_from_fp(slot.as_mut_ptr(), c) };
    }
    out
}

/// A value from [`value_bytes`]: every coefficient below p, not the identity. Not
/// checked to be in G_T (a subgroup check costs about what raising does): the values are
/// the service's own, computed by its workers.
fn value_from_bytes(bytes: &[u8; RAW_VALUE_BYTES]) -> Result<Gt> {
    let mut f = blst::blst_fp12::default();
    let coefficients = f
        .fp6
        .iter_mut()
        .flat_map(|c| &mut c.fp2)
        .flat_map(|c| &mut c.fp);
    for (c, slot) in coefficients.zip(bytes.as_chunks::<48>().0) {
        let mut back = [0u8; 48];
        // SAFETY: 48 bytes in, one element out; and back.
        unsafe {
            blst::blst_fp_from_bendian(c, slot.as_ptr());
            blst::blst_bendian_from_fp(back.as_mut_ptr(), c);
        }
        // A number from p up comes back reduced.
        if back != *slot {
            return Err(Error::State(
                "a precomputed value that is not in F_p^12".into(),
            ));
        }
    }
    let g = gt_from_limbs(f);
    match bool::from(g.is_identity()) {
        true => Err(Error::State("a precomputed value of 1".into())),
        false => Ok(g),
    }
}

/// The online scalar `K / R` for a run keyed `run` and the pre-token of share `share`.
pub fn delta(run: &Secret, share: &Secret) -> Secret {
    Secret(run.0 * share.0.invert().expect("secrets are nonzero"))
}

/// The exponent that takes side i's precomputed values to side j's: `δ_i / δ_j`.
pub fn ratio(delta_i: &Secret, delta_j: &Secret) -> Secret {
    delta(delta_i, delta_j)
}

/// `v^e` for every value, in order, in parallel (eight at a time on AVX-512 IFMA).
pub fn raised(values: &[Gt], e: &Secret) -> Vec<Gt> {
    #[cfg(target_arch = "x86_64")]
    if crate::batch_pairing::available() {
        use crate::batch_pairing::{powers, Exponent, LANES};
        let bytes = e.0.to_bytes_le();
        let limbs: [u64; 4] =
            std::array::from_fn(|i| u64::from_le_bytes(bytes[8 * i..][..8].try_into().expect("8")));
        let exponent = Exponent::new(&limbs);
        let batches: Vec<Vec<Gt>> = values
            .par_chunks(LANES)
            .with_min_len(2)
            .map(|batch| {
                let lanes = std::array::from_fn(|k| *gt_limbs(batch.get(k).unwrap_or(&batch[0])));
                powers(&lanes, &exponent)[..batch.len()]
                    .iter()
                    .map(|f| gt_from_limbs(*f))
                    .collect()
            })
            .collect();
        return batches.into_iter().flatten().collect();
    }
    values.par_iter().map(|v| v * e.0).collect()
}

// blstrs 0.7 declares `Gt(Fp12)` and `Fp12(blst_fp12)` #[repr(transparent)] but exports
// no conversion between a Gt and blst's element; these two are the casts that layout allows.
const _: () = assert!(std::mem::size_of::<Gt>() == std::mem::size_of::<blst::blst_fp12>());

/// A value as blst's element (the service's three-party join reads its limbs).
pub fn gt_limbs(g: &Gt) -> &blst::blst_fp12 {
    // SAFETY: the same layout (above), and every blst_fp12 bit pattern blstrs makes is one.
    unsafe { &*(g as *const Gt as *const blst::blst_fp12) }
}

/// blst's element as a value (blstrs assumes `f` is in G_T: a value that is not gives
/// wrong answers, nothing worse).
fn gt_from_limbs(f: blst::blst_fp12) -> Gt {
    // SAFETY: the same layout (above).
    unsafe { std::mem::transmute::<blst::blst_fp12, Gt>(f) }
}

/// The digest of a value in run `run`: SHA-256 of the run and the value's canonical
/// 288-byte torus encoding, cut to [`DIGEST_BYTES`]. The identity (which no pair of a valid
/// item and token gives) is refused: it has no such encoding.
pub fn digest(run: &[u8], value: &Gt) -> Result<ValueDigest> {
    if bool::from(value.is_identity()) {
        return Err(Error::State(
            "a paired value of 1: an item or token is the identity".into(),
        ));
    }
    let mut encoded = [0u8; 288];
    value.write_compressed(&mut encoded[..]).expect("288 bytes");
    let mut h = Sha256::new();
    h.update(b"venn-thunder-digest");
    h.update((run.len() as u64).to_le_bytes());
    h.update(run);
    h.update(encoded);
    Ok(h.finalize()[..DIGEST_BYTES].try_into().expect("16 bytes"))
}

/// The digests of stored items under a token in run `run`, in parallel.
pub fn digests(
    items: &[Ciphertext],
    token: &PreparedToken,
    run: &[u8],
) -> Result<Vec<ValueDigest>> {
    paired(items, token, |v| digest(run, v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use venn::util::cpu::{pool_at, Level};

    fn keys(names: &[&str]) -> Items {
        names.iter().collect()
    }

    /// Digests of a dataset's items in a run.
    fn side(names: &[&str], dataset: &Secret, run: &Secret, id: &[u8]) -> Vec<ValueDigest> {
        let stored = encrypt(&keys(names), dataset);
        let t = decode_token(&token(run, dataset)).unwrap();
        digests(&stored, &PreparedToken::new(&t), id).unwrap()
    }

    #[test]
    fn two_parties_meet_on_equal_keys_only() {
        let (ki, kj, k) = (Secret::random(), Secret::random(), Secret::random());
        let a = side(&["ann", "bob", "cat"], &ki, &k, b"run 1");
        let b = side(&["dan", "cat", "ann", "eve"], &kj, &k, b"run 1");
        let common: Vec<(usize, usize)> = (0..a.len())
            .flat_map(|x| (0..b.len()).map(move |y| (x, y)))
            .filter(|&(x, y)| a[x] == b[y])
            .collect();
        assert_eq!(common, [(0, 2), (2, 1)]);
        // Another run key, or a token made with the wrong dataset key: nothing meets.
        let other = side(&["ann", "bob", "cat"], &ki, &Secret::random(), b"run 1");
        assert!(other.iter().all(|d| !b.contains(d)));
        let stored = encrypt(&keys(&["ann"]), &ki);
        let wrong = decode_token(&token(&k, &kj)).unwrap();
        let d = digests(&stored, &PreparedToken::new(&wrong), b"run 1").unwrap();
        assert!(!b.contains(&d[0]));
    }

    /// Runs (i, j) under K and (j, k) under K' leave the server values of i under K and
    /// of k under K': they never meet, so i and k are not intersected.
    #[test]
    fn tokens_of_two_runs_do_not_intersect_a_third_pair() {
        let (ki, kk) = (Secret::random(), Secret::random());
        let (k_ij, k_jk) = (Secret::random(), Secret::random());
        let shared = ["ann", "bob"];
        let i = side(&shared, &ki, &k_ij, b"r");
        let k = side(&shared, &kk, &k_jk, b"r");
        assert!(i.iter().all(|d| !k.contains(d)));
        // The same run id too, and i's token of run (i, j) used on k's items: nothing.
        let stored_k = encrypt(&keys(&shared), &kk);
        let t_i = decode_token(&token(&k_ij, &ki)).unwrap();
        let mixed = digests(&stored_k, &PreparedToken::new(&t_i), b"r").unwrap();
        assert!(mixed.iter().all(|d| !i.contains(d)));
    }

    #[test]
    fn three_parties_multiply_to_one_on_common_keys() {
        let ks = [Secret::random(), Secret::random(), Secret::random()];
        let (r1, r2) = (Secret::random(), Secret::random());
        let r3 = Secret::negated_sum(&r1, &r2).unwrap();
        let sets = [
            &["ann", "bob", "cat"][..],
            &["cat", "bob"],
            &["bob", "dan", "cat"],
        ];
        let values: Vec<Vec<Gt>> = (0..3)
            .map(|p| {
                let run = [&r1, &r2, &r3][p];
                let t = PreparedToken::new(&decode_token(&token(run, &ks[p])).unwrap());
                let stored = encrypt(&keys(sets[p]), &ks[p]);
                stored.iter().map(|c| value(c, &t).unwrap()).collect()
            })
            .collect();
        let mut triples = Vec::new();
        for (a, x) in values[0].iter().enumerate() {
            for (b, y) in values[1].iter().enumerate() {
                for (c, z) in values[2].iter().enumerate() {
                    if bool::from((x + y + z).is_identity()) {
                        triples.push((a, b, c));
                    }
                }
            }
        }
        assert_eq!(triples, [(1, 1, 0), (2, 0, 2)]);
    }

    /// Batches of any length (padded to the lanes) give each item's own pairing, in order:
    /// at each level (eight lanes on IFMA, blst one item at a time below), on threads at it.
    #[test]
    fn batches_pair_every_item_in_order() {
        let k = Secret::random();
        let names: Vec<String> = (0..19).map(|i| format!("item {i}")).collect();
        let stored = encrypt(&names.iter().collect(), &k);
        let t = decode_token(&token(&Secret::random(), &k)).unwrap();
        let prepared = G2Prepared::from(t);
        let want: Vec<Gt> = stored
            .iter()
            .map(|c| {
                let p = decode_item(c).unwrap();
                Bls12::multi_miller_loop(&[(&p, &prepared)]).final_exponentiation()
            })
            .collect();
        for level in Level::ALL {
            pool_at(level, 2).unwrap().install(|| {
                let token = PreparedToken::new(&t);
                for n in [1, 7, 8, 9, 19] {
                    let got = paired(&stored[..n], &token, |v| Ok(*v)).unwrap();
                    assert_eq!(got, want[..n], "{level:?}, {n} items");
                }
                let identity = G1Affine::identity().to_compressed();
                assert!(paired(&[stored[0], identity], &token, |v| Ok(*v)).is_err());
            });
        }
    }

    /// Pre-tokens: precomputed values raised to the ratio of the two scalars meet the other
    /// side's on the common keys — and a pre-token used twice lets the service intersect
    /// two datasets that never had a run together, which is why each serves one run.
    #[test]
    fn precomputed_runs_match_and_pre_tokens_serve_one_run() {
        let sets = [
            &["ann", "bob", "cat"][..],
            &["cat", "dan", "ann"],
            &["eve", "cat"],
        ];
        let ks = [Secret::random(), Secret::random(), Secret::random()];
        let stored: Vec<Vec<Ciphertext>> =
            (0..3).map(|p| encrypt(&keys(sets[p]), &ks[p])).collect();
        // Each client's pre-token for a share R; the service's values under it.
        let precomputed = |p: usize, share: &Secret| {
            let t = PreparedToken::new(&decode_token(&token(share, &ks[p])).unwrap());
            paired(&stored[p], &t, |v| Ok(*v)).unwrap()
        };
        let meet = |a: &[Gt], b: &[Gt]| -> Vec<(usize, usize)> {
            (0..a.len())
                .flat_map(|x| (0..b.len()).map(move |y| (x, y)))
                .filter(|&(x, y)| a[x] == b[y])
                .collect()
        };
        let shares = [Secret::random(), Secret::random(), Secret::random()];
        let w: Vec<Vec<Gt>> = (0..3).map(|p| precomputed(p, &shares[p])).collect();
        // Run (0, 1) under K.
        let k = Secret::random();
        let (d0, d1) = (delta(&k, &shares[0]), delta(&k, &shares[1]));
        let raised0 = raised(&w[0], &ratio(&d0, &d1));
        assert_eq!(meet(&raised0, &w[1]), [(0, 2), (2, 0)]);
        // Run (0, 2) under K', the pre-token of 0 used again: the scalars of both runs
        // take 1's values to 2's, and 1 and 2 meet on "cat".
        let k2 = Secret::random();
        let (d0_again, d2) = (delta(&k2, &shares[0]), delta(&k2, &shares[2]));
        let link = Secret(ratio(&d0_again, &d0).0 * ratio(&d1, &d2).0);
        assert_eq!(meet(&raised(&w[1], &link), &w[2]), [(0, 1)]);
        // With a fresh pre-token for the second run, the same computation finds nothing.
        let fresh = Secret::random();
        let d0_fresh = delta(&k2, &fresh);
        let link = Secret(ratio(&d0_fresh, &d0).0 * ratio(&d1, &d2).0);
        assert!(meet(&raised(&w[1], &link), &w[2]).is_empty());
        // Raising equals blstrs for every batch length, at each level (on the lanes where
        // it allows IFMA), on threads at it.
        let e = Secret::random();
        let values: Vec<Gt> = (0..17).map(|_| Gt::random(rand_core::OsRng)).collect();
        let want: Vec<Gt> = values.iter().map(|v| v * e.0).collect();
        for level in Level::ALL {
            pool_at(level, 2).unwrap().install(|| {
                for n in [0, 1, 3, 8, 9, 17] {
                    assert_eq!(raised(&values[..n], &e), want[..n], "{level:?}, {n} values");
                }
            });
        }
    }

    /// The service's form of pre-tokens: precomputed items carry their value whole and its
    /// digest under their pre-token; the smaller side's raised values digest, under the
    /// other pre-token, to that side's precomputed digests on the common keys.
    #[test]
    fn raised_precomputed_items_meet_the_other_sides_digests() {
        let (ki, kj) = (Secret::random(), Secret::random());
        let (ri, rj) = (Secret::random(), Secret::random());
        let side = |names: &[&str], k: &Secret, r: &Secret, id: &[u8]| {
            let t = PreparedToken::new(&decode_token(&token(r, k)).unwrap());
            precomputed(&encrypt(&keys(names), k), &t, id).unwrap()
        };
        let i = side(&["ann", "bob", "cat"], &ki, &ri, b"pre-token i");
        let j = side(&["cat", "dan", "ann", "eve"], &kj, &rj, b"pre-token j");
        let k = Secret::random();
        let e = ratio(&delta(&k, &ri), &delta(&k, &rj));
        let raised = raised_digests(&i, &e, b"pre-token j").unwrap();
        let digests_j: Vec<&[u8]> = j.iter().map(|p| &p[RAW_VALUE_BYTES..]).collect();
        let meet: Vec<usize> = (0..raised.len())
            .filter(|&x| digests_j.contains(&&raised[x][..]))
            .collect();
        assert_eq!(meet, [0, 2]);
        // Values survive their encoding; a coefficient from p up, or 1, is refused.
        let v = Gt::random(rand_core::OsRng);
        assert_eq!(value_from_bytes(&value_bytes(&v)).unwrap(), v);
        let mut bad = value_bytes(&v);
        bad[..48].fill(0xff);
        assert!(value_from_bytes(&bad).is_err());
        assert!(value_from_bytes(&value_bytes(&Gt::identity())).is_err());
    }

    #[test]
    fn points_from_outside_are_checked() {
        let k = Secret::random();
        let good = encrypt(&keys(&["x"]), &k)[0];
        assert!(decode_item(&good).is_ok());
        let identity = G1Affine::identity().to_compressed();
        assert!(decode_item(&identity).is_err(), "the identity");
        assert!(decode_item(&[0xff; 48]).is_err(), "not an encoding");
        let t = token(&Secret::random(), &k);
        assert!(decode_token(&t).is_ok());
        assert!(decode_token(&G2Affine::identity().to_compressed()).is_err());
        assert!(decode_token(&[0x80; 96]).is_err());
        // A point on the curve outside the prime-order subgroup (as almost every curve
        // point is: the cofactor is about 2^125): the first small x that is on the curve.
        let outside = (1u8..)
            .map(|x| {
                let mut bytes = [0u8; 48];
                bytes[0] = 0x80; // compressed, not the identity
                bytes[47] = x;
                bytes
            })
            .find(|b| bool::from(G1Affine::from_compressed_unchecked(b).is_some()))
            .unwrap();
        assert!(decode_item(&outside).is_err(), "outside the subgroup");
    }

    #[test]
    fn secrets_are_nonzero_and_encoded_canonically() {
        assert!(Secret::from_bytes(&[0; 32]).is_err());
        assert!(Secret::from_bytes(&[0xff; 32]).is_err(), "not below r");
        let s = Secret::random();
        assert_eq!(Secret::from_bytes(&s.to_bytes()).unwrap(), s);
        let d = Secret::derive("test", &[b"a", b"bc"]);
        assert_eq!(d, Secret::derive("test", &[b"a", b"bc"]));
        assert_ne!(
            d,
            Secret::derive("test", &[b"ab", b"c"]),
            "parts are length-prefixed"
        );
        assert_eq!(format!("{s:?}"), "Secret(..)");
    }
}
