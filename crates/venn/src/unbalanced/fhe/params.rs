//! `ub-fhe`'s parameter sets: the BFV set, how items become slot values, and the
//! polynomials' shape — each set checked for 128-bit security, a false-positive rate of
//! at most 2^-40 a query, and (by a test evaluating its worst case) a noise budget left.
//!
//! An item's 128-bit hash becomes f field elements ("felts") of ⌊log₂ t⌋ bits each, so
//! each is below t (CLR17 §4.2's permutation-based hashing is not used; APSI's item
//! layout). A bundle holds S = ⌊N/f⌋ item columns of f slots; the server's table has
//! T = I·S locations over I bundle indices, each item stored at all of its H locations,
//! the client's items cuckoo-hashed to one each (CHLR18 §4). A bin's polynomial has
//! degree at most d, evaluated by Paterson–Stockmeyer with low degree ℓ from the query's
//! source powers ([`crate::he::polynomial`]).
//!
//! False positives: a client item's f felts all roots of one bin's matching polynomial
//! by chance, for each of the B bundles at its index: at most B·(d/2^felt_bits)^f an item,
//! so m·B·(d/2^felt_bits)^f a query (CHLR18 §5's bound with the bundle count, which
//! APSI's `log2_fpp` leaves out: counted, the spec's V16M-4096 (d = 1,304) and
//! V256M-4096 (d = 4,000, f = 5) shapes allow 2^-35 and 2^-37 a query, so Venn's 16M set
//! for large queries has d = 782 and f = 6, and the 256M shape serves single keys only).
//!
//! [`sets`] are Venn's: each passes [`FheSet::check`] for its sizes, and a test evaluates
//! each one's worst case (random coefficients of full degree) and keeps at least 6 bits
//! of noise budget at the last modulus (the spec's rule: `fhe` samples its secret like
//! its errors, so several of APSI's sets fail to decrypt with it). The test sends its
//! query as a client does, less the low bits of each c₀ coefficient the set drops
//! ([`FheSet::query_drop`]): where products are taken, the relinearisations' noise (a
//! residue times a key's error, 2^60 and more) dwarfs a fresh ciphertext's, so a query
//! may carry 2^40 of rounding in each coefficient unnoticed (V16M's sets, 18 % of their
//! upload; measured: 26 bits of budget left dropping none or 20, 18 dropping 40). Each
//! set drops what leaves it 11 to 29 bits, well above the 6. [`classes`] are the
//! sets a dataset serves, one for each query cap up to its own (1, 256, 4,096), so that
//! a client asking of a few keys takes a set made for them (at 2^20 items up to 256 keys
//! take four bundles and a third of the upload, where the 4,096-item set takes 32
//! bundles), less those that would evaluate nearly the next cap's bundles; a query
//! takes the first whose cap it fits. A dataset declared for fewer keys takes sets of lower degree: a query's work is
//! about the powers it needs plus a Paterson–Stockmeyer block product a bundle (about
//! 2√d + B·√d products), so up to 2^17 keys 256 keys are cheaper at d = 98 in several
//! bundles (at 2^16, 23 products where d = 782 takes 77); and up to 2^21 keys a single
//! key takes no product at all (V2M-1: d = 60 at N = 4,096, every power sent, no
//! relinearisation key — [`FheSet::relinearises`]).

use crate::he::params::Bfv;
use crate::he::powers::PowersDag;
use crate::he::wire::Kind;
use crate::tables::stashless_bins;
use crate::{Error, Result};

/// The statistical parameter: false positives at most 2^-40 a query.
const FALSE_POSITIVE_BITS: f64 = 40.0;

/// A `ub-fhe` parameter set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FheSet {
    /// Its name, for `venn params` and the logs.
    pub name: &'static str,
    /// The BFV set.
    pub bfv: Bfv,
    /// H: the locations of a server item (1 or 3).
    pub hashes: u8,
    /// f: the felts of an item.
    pub felts: u8,
    /// I: the bundle indices (the table has I·S locations).
    pub indices: u32,
    /// d: the most felts a bin holds, its polynomials' degree.
    pub degree: u32,
    /// ℓ: Paterson–Stockmeyer's low degree.
    pub low: u32,
    /// The powers of x a query sends.
    pub sources: Vec<u32>,
    /// The low bits a query drops of each coefficient of its ciphertexts' c₀
    /// ([`Kind::Seeded`]): noise its evaluation leaves room for (the noise test sends
    /// its query so).
    pub query_drop: u8,
    /// The most items a query may hold.
    pub max_query: u32,
    /// The most items the server's set may hold.
    pub max_items: u64,
}

/// The bits of noise budget a set must keep, evaluated at its worst.
pub const MIN_MARGIN_BITS: i64 = 6;

/// Venn's sets: of each query cap, the cheapest first.
pub fn sets() -> Vec<FheSet> {
    use crate::util::primes::batching_prime;
    let (t16, t20, t24) = (
        65537,
        batching_prime(8192, (1 << 20) - (1 << 16)),
        batching_prime(8192, (1 << 24) - (1 << 18)),
    );
    let bfv = |plain, moduli: &[usize]| Bfv {
        degree: 8192,
        plain,
        moduli: moduli.to_vec(),
    };
    vec![
        // No product of ciphertexts, so no relinearisation key (the spec's "VA", APSI's
        // 1M-1 shape): the client sends every power to d, the server sums d + 1
        // ciphertext × plaintext terms a bundle at N = 4,096 over one 60-bit prime.
        // 1.8 MiB up, 27 KiB a bundle down (24 bundles at 2^20 keys, 47 at 2^21).
        FheSet {
            name: "V2M-1",
            bfv: Bfv {
                degree: 4096,
                plain: t16,
                moduli: vec![60],
            },
            hashes: 1,
            felts: 5,
            indices: 1,
            degree: 60,
            low: 60,
            sources: (1..=60).collect(),
            query_drop: 6,
            max_query: 1,
            max_items: 1 << 21,
        },
        // V1M-4096's evaluation shape (BFV set, d, ℓ, sources) in one bundle index, for
        // datasets declared small: up to 256 keys up to 2^17 (four bundles: 53 products
        // where V16M-256 takes 77).
        FheSet {
            name: "V128K-256",
            bfv: bfv(t16, &[56, 56, 56, 50]),
            hashes: 3,
            felts: 6,
            indices: 1,
            degree: 98,
            low: 8,
            sources: vec![1, 3, 4, 9, 27],
            query_drop: 52,
            max_query: 256,
            max_items: 1 << 17,
        },
        FheSet {
            name: "V1M-4096",
            bfv: bfv(t16, &[56, 56, 56, 50]),
            hashes: 3,
            felts: 6,
            indices: 4,
            degree: 98,
            low: 8,
            sources: vec![1, 3, 4, 9, 27],
            query_drop: 52,
            max_query: 4096,
            max_items: 1 << 21,
        },
        FheSet {
            name: "V16M-1",
            bfv: bfv(t20, &[56, 56, 56, 50]),
            hashes: 1,
            felts: 5,
            indices: 1,
            degree: 782,
            low: 26,
            sources: vec![1, 5, 8, 27, 135],
            query_drop: 40,
            max_query: 1,
            max_items: 1 << 25,
        },
        // V16M-4096's evaluation shape in one bundle index, for queries of up to 256
        // keys: the powers computed once and 1.9 MiB up; at 2^24 server keys as many
        // bundles as V16M-4096 (the same work less three indices' powers), at 2^20 four
        // where V1M-4096 takes 32. (f = 5 would fit more columns, but its false
        // positives, 2^-36 a query at 2^21 keys, do not pass.)
        FheSet {
            name: "V16M-256",
            bfv: bfv(t20, &[56, 56, 56, 50]),
            hashes: 3,
            felts: 6,
            indices: 1,
            degree: 782,
            low: 26,
            sources: vec![1, 5, 8, 27, 135],
            query_drop: 40,
            max_query: 256,
            max_items: 1 << 24,
        },
        FheSet {
            name: "V16M-4096",
            bfv: bfv(t20, &[56, 56, 56, 50]),
            hashes: 3,
            felts: 6,
            indices: 4,
            degree: 782,
            low: 26,
            sources: vec![1, 5, 8, 27, 135],
            query_drop: 40,
            max_query: 4096,
            max_items: 1 << 24,
        },
        FheSet {
            name: "V256M-1",
            bfv: bfv(t24, &[50, 50, 50, 38, 30]),
            hashes: 1,
            felts: 5,
            indices: 1,
            degree: 4000,
            low: 310,
            sources: vec![1, 4, 10, 11, 28, 33, 78, 118, 143, 311, 1555],
            query_drop: 28,
            max_query: 1,
            max_items: 1 << 29,
        },
    ]
}

/// How much more bundle work (bundles an index times indices) a cap's set may take than
/// the cap below's and still serve that cap's queries too.
const NEARLY: f64 = 1.1;

/// The sets a dataset of up to `items` items and queries of up to `query` items serves,
/// one for each of Venn's query caps, smallest first, up to the first cap of at least
/// `query`: for each, the first set of that cap serving `items` — less a cap whose set
/// evaluates as the next cap's does and nearly as many bundles (`NEARLY`): its queries
/// take the next cap's set (more upload and more indices' powers, the same bundles), and
/// the server keeps a database and its plaintexts fewer (at 2^24 items V16M-256's 49
/// bundles against V16M-4096's 52: 1.4 GiB and 9.2 GiB). A client takes the first whose
/// cap its query fits.
pub fn classes(items: u64, query: u32) -> Result<Vec<FheSet>> {
    let all = sets();
    let mut caps: Vec<u32> = all.iter().map(|s| s.max_query).collect();
    caps.sort_unstable();
    caps.dedup();
    let mut classes: Vec<FheSet> = Vec::new();
    for cap in caps {
        if let Some(set) = (all.iter()).find(|s| s.max_query == cap && s.max_items >= items) {
            classes.push(set.clone());
        }
        if cap >= query {
            break;
        }
    }
    let work = |set: &FheSet| (set.bundles_for(items) * u64::from(set.indices)) as f64;
    let nearly = |w: &[FheSet]| w[0].evaluates_like(&w[1]) && work(&w[1]) <= NEARLY * work(&w[0]);
    let kept: Vec<bool> = (classes.windows(2).map(|w| !nearly(w)))
        .chain([true])
        .collect();
    let mut kept = kept.into_iter();
    classes.retain(|_| kept.next().unwrap_or(true));
    match classes.last() {
        Some(set) if set.max_query >= query => Ok(classes),
        _ => Err(Error::Params(format!(
            "no ub-fhe set serves {items} server items with queries of {query}: up to 2^24 \
             items for queries of up to 4,096, 2^29 for single keys"
        ))),
    }
}

impl FheSet {
    /// S: the item columns of a bundle.
    pub fn columns(&self) -> u32 {
        (self.bfv.degree / usize::from(self.felts)) as u32
    }

    /// T: the locations of the table.
    pub fn locations(&self) -> u32 {
        self.columns() * self.indices
    }

    /// The bits of a felt: ⌊log₂ t⌋, so that every felt is below t.
    pub fn felt_bits(&self) -> u32 {
        u64::BITS - 1 - self.bfv.plain.leading_zeros()
    }

    /// The bits of an item's hash the felts carry.
    pub fn item_bits(&self) -> u32 {
        self.felt_bits() * u32::from(self.felts)
    }

    /// The felts of an item's 128-bit hash: f chunks of its low item bits.
    pub fn felts_of(&self, hash: u128) -> impl Iterator<Item = u32> + '_ {
        let bits = self.felt_bits();
        let mask = (1u128 << bits) - 1;
        (0..u32::from(self.felts)).map(move |k| ((hash >> (k * bits)) & mask) as u32)
    }

    /// P: the label parts a sealed label of `bytes` bytes takes (0 for none), f felts of
    /// [`FheSet::felt_bits`] each.
    pub fn label_parts(&self, bytes: usize) -> usize {
        (8 * bytes).div_ceil(self.item_bits() as usize)
    }

    /// The felts of a sealed label, `parts` parts of f: its bits in order, little-endian,
    /// zeros past its end.
    pub fn label_felts(&self, label: &[u8], parts: usize) -> Vec<Vec<u32>> {
        let bits = self.felt_bits() as usize;
        let bit = |i: usize| label.get(i / 8).map_or(0, |&b| u32::from(b >> (i % 8)) & 1);
        (0..parts)
            .map(|p| {
                (0..usize::from(self.felts))
                    .map(|k| {
                        let first = (p * usize::from(self.felts) + k) * bits;
                        (0..bits).fold(0, |v, i| v | (bit(first + i) << i))
                    })
                    .collect()
            })
            .collect()
    }

    /// The sealed label of `bytes` bytes whose felts are `felts` (part by part): refused
    /// where a felt has more bits than a felt carries, or bits set past the label's end
    /// (a non-member's slots, random).
    pub fn label_of(&self, felts: &[Vec<u32>], bytes: usize) -> Option<Vec<u8>> {
        let bits = self.felt_bits() as usize;
        let mut label = vec![0u8; bytes];
        for (j, &felt) in felts.iter().flatten().enumerate() {
            if felt >> bits != 0 {
                return None;
            }
            for i in 0..bits {
                let at = j * bits + i;
                let set = (felt >> i) & 1 == 1;
                match label.get_mut(at / 8) {
                    Some(byte) => *byte |= u8::from(set) << (at % 8),
                    None if set => return None,
                    None => {}
                }
            }
        }
        Some(label)
    }

    /// Whether its queries need products of ciphertexts, so a relinearisation key: not
    /// where ℓ = d (one Paterson–Stockmeyer block) and the sources are every power to d
    /// (nothing to derive).
    pub fn relinearises(&self) -> bool {
        self.low < self.degree || !(1..=self.degree).all(|p| self.sources.contains(&p))
    }

    /// Whether `other` evaluates its bundles as this set does (the same BFV set, item
    /// layout, polynomials and query powers), whatever its bundle indices and sizes.
    pub fn evaluates_like(&self, other: &FheSet) -> bool {
        (self.bfv == other.bfv && self.hashes == other.hashes && self.felts == other.felts)
            && (self.degree == other.degree && self.low == other.low)
            && (self.sources == other.sources && self.query_drop == other.query_drop)
    }

    /// How a query's ciphertexts cross: seeded, dropping [`FheSet::query_drop`] bits.
    pub fn query_kind(&self) -> Kind {
        Kind::Seeded {
            drop: self.query_drop,
        }
    }

    /// The bytes of a bundle's polynomial as plaintexts kept for products (its d + 1
    /// coefficients' plaintexts, each N values a modulus in NTT form; a labeled bundle
    /// has 1 + P polynomials, one degree lower each label part's).
    pub fn plaintext_bytes(&self) -> u64 {
        let (n, k) = (self.bfv.degree as u64, self.bfv.moduli.len() as u64);
        (u64::from(self.degree) + 1) * n * k * 8
    }

    /// log₂ of the chance that a non-member matches, per query item and bundle.
    pub fn log2_false_positive(&self) -> f64 {
        f64::from(self.felts) * (f64::from(self.degree).log2() - f64::from(self.felt_bits()))
    }

    /// The bundles an index needs for `items` server items at the fullest location with
    /// overwhelming probability: a location receives Binomial(n·H, 1/T) items, at most
    /// μ + √(2μ ln T) + 20 of them (μ = n·H/T), in bundles of d.
    pub fn bundles_for(&self, items: u64) -> u64 {
        let mu = items as f64 * f64::from(self.hashes) / f64::from(self.locations());
        let fullest = mu + (2.0 * mu * f64::from(self.locations()).ln()).sqrt() + 20.0;
        (fullest / f64::from(self.degree)).ceil().max(1.0) as u64
    }

    /// Refuses the set unless its BFV set is secure and usable, items carry 80 to 128
    /// bits, a query's false positives stay below 2^-40 against its most server items,
    /// the query's cuckoo table is as large as a stash-free one must be to fail at most
    /// once in 2^40 ([`stashless_bins`]), and the sources reach every power
    /// Paterson–Stockmeyer needs.
    pub fn check(&self) -> Result<()> {
        let max_items = self.max_items;
        self.bfv.check()?;
        let bad = |why: String| {
            Err(Error::Params(format!(
                "the ub-fhe set {}: {why}",
                self.name
            )))
        };
        if !(80..=128).contains(&self.item_bits()) {
            return bad(format!("items of {} bits, not 80 to 128", self.item_bits()));
        }
        if !matches!(self.hashes, 1 | 3) || (self.hashes == 1 && self.max_query != 1) {
            return bad(format!(
                "{} hash functions for queries of {}",
                self.hashes, self.max_query
            ));
        }
        let bundles = self.bundles_for(max_items) as f64;
        let fpp = self.log2_false_positive() + bundles.log2() + f64::from(self.max_query).log2();
        if fpp > -FALSE_POSITIVE_BITS {
            return bad(format!("false positives of 2^{fpp:.1} a query"));
        }
        if stashless_bins(u64::from(self.max_query)) > u64::from(self.locations()) {
            return bad(format!(
                "queries of {} items in {} locations",
                self.max_query,
                self.locations()
            ));
        }
        if self.low == 0 || self.low > self.degree {
            return bad(format!(
                "low degree {} for degree {}",
                self.low, self.degree
            ));
        }
        PowersDag::new(
            &self.sources,
            &crate::he::polynomial::targets(self.degree, self.low),
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::he::params::tensor;
    use crate::he::polynomial::{encoded, evaluate, high_powers, powers, targets};
    use crate::he::wire::{decode, encode};
    use fhe::bfv::{Ciphertext, Encoding, Plaintext, RelinearizationKey, SecretKey};
    use fhe_traits::{FheDecoder, FheDecrypter, FheEncoder, FheEncrypter};
    use rand::{Rng, SeedableRng};

    /// `a · b mod t`.
    fn mul(a: u64, b: u64, t: u64) -> u64 {
        ((u128::from(a) * u128::from(b)) % u128::from(t)) as u64
    }

    /// Every set passes its checks; a dataset serves a set for each query cap up to its
    /// own, and a query takes the cheapest that serves it; sizes past every set are
    /// refused; a set whose bundles make false positives too likely is
    /// refused.
    /// The set of a dataset of `items` declared for queries of `query` items: its last.
    fn for_sizes(items: u64, query: u32) -> Result<FheSet> {
        Ok(classes(items, query)?
            .pop()
            .expect("classes are never empty"))
    }

    #[test]
    fn sets_are_checked_and_chosen_by_size() {
        for set in sets() {
            set.check().unwrap();
        }
        assert_eq!(for_sizes(1 << 20, 4096).unwrap().name, "V1M-4096");
        assert_eq!(for_sizes(1 << 24, 1).unwrap().name, "V16M-1");
        assert_eq!(for_sizes(1 << 20, 1).unwrap().name, "V2M-1");
        assert_eq!(for_sizes(1 << 24, 256).unwrap().name, "V16M-256");
        assert_eq!(for_sizes(1 << 24, 257).unwrap().name, "V16M-4096");
        assert_eq!(for_sizes(1 << 28, 1).unwrap().name, "V256M-1");
        assert!(for_sizes(1 << 28, 2).is_err());
        assert!(for_sizes(1 << 30, 1).is_err());
        let names = |items, query| -> Vec<&str> {
            (classes(items, query).unwrap().iter())
                .map(|s| s.name)
                .collect()
        };
        assert_eq!(names(1 << 20, 4096), ["V2M-1", "V16M-256", "V1M-4096"]);
        assert_eq!(names(1 << 17, 4096), ["V2M-1", "V128K-256", "V1M-4096"]);
        assert_eq!(names(1 << 18, 256), ["V2M-1", "V16M-256"]);
        assert_eq!(names(1 << 21, 1), ["V2M-1"]);
        assert_eq!(names(1 << 22, 1), ["V16M-1"]);
        assert_eq!(names(1 << 20, 200), ["V2M-1", "V16M-256"]);
        // V16M-256 evaluates 49 bundles at 2^24, V16M-4096 52: 256 keys take the latter.
        assert_eq!(names(1 << 24, 300), ["V16M-1", "V16M-4096"]);
        assert_eq!(names(1 << 24, 256), ["V16M-1", "V16M-256"]);
        assert_eq!(names(1 << 22, 4096), ["V16M-1", "V16M-256", "V16M-4096"]);
        assert_eq!(names(1 << 28, 1), ["V256M-1"]);
        assert!(classes(1 << 28, 2).is_err());
        let apsi_16m_4096 = FheSet {
            degree: 1304,
            low: 44,
            sources: vec![1, 3, 11, 18, 45, 225],
            ..for_sizes(1 << 24, 4096).unwrap()
        };
        assert!(apsi_16m_4096.check().is_err(), "2^-35 a query");
    }

    /// Each of Venn's evaluation shapes (BFV set, degree, low degree, sources, the bits
    /// its query drops), at its worst — every coefficient random, x random in every
    /// slot, the query read from its wire form — decrypts to the plain
    /// values at the last modulus with at least [`MIN_MARGIN_BITS`] of noise budget left.
    #[test]
    fn sets_keep_their_noise_margin() {
        let mut shapes: Vec<FheSet> = Vec::new();
        for set in sets() {
            if !shapes.iter().any(|s| s.evaluates_like(&set)) {
                shapes.push(set);
            }
        }
        for set in shapes {
            let par = set.bfv.build().unwrap();
            let (n, t) = (par.degree(), par.plaintext());
            let mut rng = rand::rngs::StdRng::seed_from_u64(u64::from(set.degree));
            let sk = SecretKey::random(&par, &mut rng);
            let rk = (set.relinearises()).then(|| RelinearizationKey::new(&sk, &mut rng).unwrap());
            let x: Vec<u64> = (0..n).map(|_| rng.random_range(0..t)).collect();
            let sent: Vec<(u32, Ciphertext)> = (set.sources.iter())
                .map(|&s| {
                    let xs: Vec<u64> = x
                        .iter()
                        .map(|&v| (0..s).fold(1, |a, _| mul(a, v, t)))
                        .collect();
                    let pt = Plaintext::try_encode(&xs, Encoding::simd(), &par).unwrap();
                    let ct: Ciphertext = sk.try_encrypt(&pt, &mut rng).unwrap();
                    // As it crosses, less the bits the set drops.
                    let wire = encode(&ct, &par, set.query_kind()).unwrap();
                    (s, decode(&wire, &par, set.query_kind(), 0).unwrap())
                })
                .collect();
            let dag = PowersDag::new(&set.sources, &targets(set.degree, set.low)).unwrap();
            let high = high_powers(set.degree, set.low);
            let xs = powers(&dag, sent, &high, rk.as_ref(), &par).unwrap();
            let coefficients: Vec<Vec<u64>> = (0..=set.degree)
                .map(|_| (0..n).map(|_| rng.random_range(0..t)).collect())
                .collect();
            let tensor = tensor(&par).unwrap();
            let encode = |js| encoded(&tensor, &coefficients, js);
            let mut result = evaluate(set.degree, &encode, set.low, &xs, rk.as_ref()).unwrap();
            result.switch_to_level(par.max_level()).unwrap();
            let decrypted = sk.try_decrypt(&result).unwrap();
            let got = Vec::<u64>::try_decode(&decrypted, Encoding::simd()).unwrap();
            let expected: Vec<u64> = (0..n)
                .map(|s| {
                    (coefficients.iter().rev()).fold(0, |acc, c| (mul(acc, x[s], t) + c[s]) % t)
                })
                .collect();
            assert_eq!(got, expected, "{}", set.name);
            // SAFETY: variable time in the noise, which a test may learn.
            let noise = unsafe { sk.measure_noise(&result) }.unwrap() as i64;
            // The last level keeps the first modulus.
            let last = par.moduli_sizes()[0] as i64;
            let margin = last - i64::from(u64::BITS - t.leading_zeros()) - noise - 1;
            eprintln!("{}: {margin} bits of noise budget left", set.name);
            assert!(
                margin >= MIN_MARGIN_BITS,
                "{}: {margin} bits left",
                set.name
            );
        }
    }
}
