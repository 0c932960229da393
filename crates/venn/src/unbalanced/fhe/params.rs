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
//! APSI's `log2_fpp` leaves out).

use crate::he::params::Bfv;
use crate::he::powers::PowersDag;
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
    /// The most items a query may hold.
    pub max_query: u32,
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
    /// bits, a query's false positives stay below 2^-40 against `max_items` server
    /// items, the query's cuckoo table is at most 3/4 full, and the sources reach every
    /// power Paterson–Stockmeyer needs.
    pub fn check(&self, max_items: u64) -> Result<()> {
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
        if u64::from(self.max_query) * 4 > u64::from(self.locations()) * 3 {
            return bad(format!(
                "queries of {} items in {} locations",
                self.max_query,
                self.locations()
            ));
        }
        if self.low == 0 || self.low >= self.degree {
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
