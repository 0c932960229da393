//! A `ub-fhe` query (CHLR18 Fig. 1; CMdG+21 §4): the client cuckoo-hashes its items'
//! OPRF hashes into the table's locations (one each, no stash), and for each bundle index
//! sends x^s slot-wise for each source power s, encrypted under a fresh key with its
//! relinearisation key; the server derives the powers it needs ([`powers`]), evaluates
//! every bundle's matching polynomials at them ([`evaluate`]) and answers each bundle's
//! result switched to its last modulus; the client decrypts, and an item matches where a
//! bundle's f slots of its column are all 0.

use super::database::{locations, Database};
use super::params::FheSet;
use crate::crypto::{Block, Prg};
use crate::he::polynomial::{evaluate, powers};
use crate::he::powers::PowersDag;
use crate::tables::{cuckoo_insert, CuckooHash};
use crate::{Error, Result};
use fhe::bfv::{BfvParameters, Ciphertext, Encoding, Plaintext, RelinearizationKey, SecretKey};
use fhe_traits::{FheDecoder, FheDecrypter, FheEncoder, FheEncrypter};
use rand::SeedableRng;
use rayon::prelude::*;
use std::sync::Arc;

/// What a client sends: per bundle index, each source power's ciphertext, and the key
/// the server relinearises with.
pub struct Request {
    /// Per index, (source power, its ciphertext), in the set's source order.
    pub indices: Vec<Vec<(u32, Ciphertext)>>,
    /// The relinearisation key (level 0).
    pub rk: RelinearizationKey,
}

/// What a client keeps of its query: the key, and which of its items sits at each
/// location.
pub struct Pending {
    sk: SecretKey,
    /// Per location, the index of the item placed there.
    placed: Vec<Option<usize>>,
    items: usize,
}

/// `base^exponent mod t`.
fn pow_mod(base: u64, exponent: u32, t: u64) -> u64 {
    let (mut result, mut base, mut e) = (1u128, u128::from(base), exponent);
    while e > 0 {
        if e & 1 == 1 {
            result = result * base % u128::from(t);
        }
        base = base * base % u128::from(t);
        e >>= 1;
    }
    result as u64
}

/// The client's query of `items` (their 128-bit OPRF hashes, distinct, at most the set's
/// cap) under `set` and the database's location seed `seed`: refused where they do not
/// fit the table without a stash.
pub fn query(
    set: &FheSet,
    par: &Arc<BfvParameters>,
    seed: Block,
    items: &[u128],
    prg: &mut Prg,
) -> Result<(Pending, Request)> {
    if items.len() > set.max_query as usize {
        return Err(Error::Usage(format!(
            "a query of {} items: the set answers at most {}",
            items.len(),
            set.max_query
        )));
    }
    let hash = CuckooHash::new(seed, set.locations() as usize);
    // The first H bins: a location an item has twice is one.
    let bins: Vec<[u32; 3]> = (items.iter())
        .map(|&h| {
            let mut l = locations(&hash, set, h);
            l.resize(3, l[0]);
            [l[0], l[1], l[2]]
        })
        .collect();
    let table = cuckoo_insert(&bins, set.locations() as usize, 0, prg)?;
    let placed: Vec<Option<usize>> = (0..set.locations() as usize)
        .map(|l| table.bin(l).map(|(item, _)| item))
        .collect();
    let mut rng =
        rand::rngs::StdRng::from_seed(prg.block().to_le_bytes().repeat(2).try_into().expect("32"));
    let sk = SecretKey::random(par, &mut rng);
    let rk = RelinearizationKey::new(&sk, &mut rng).map_err(bfv)?;
    let (n, f, t) = (par.degree(), usize::from(set.felts), par.plaintext());
    let columns = set.columns() as usize;
    let mut indices = Vec::with_capacity(set.indices as usize);
    for index in 0..set.indices as usize {
        let mut x = vec![0u64; n];
        for c in 0..columns {
            if let Some(item) = placed[index * columns + c] {
                for (k, felt) in set.felts_of(items[item]).enumerate() {
                    x[f * c + k] = u64::from(felt);
                }
            }
        }
        let mut sources = Vec::with_capacity(set.sources.len());
        for &s in &set.sources {
            let xs: Vec<u64> = x.iter().map(|&v| pow_mod(v, s, t)).collect();
            let pt = Plaintext::try_encode(&xs, Encoding::simd(), par).map_err(bfv)?;
            sources.push((s, sk.try_encrypt(&pt, &mut rng).map_err(bfv)?));
        }
        indices.push(sources);
    }
    let pending = Pending {
        sk,
        placed,
        items: items.len(),
    };
    Ok((pending, Request { indices, rk }))
}

/// The server's answer to `request` from `db`: per bundle index, each bundle's result at
/// the last modulus. The indices run on the current rayon pool.
pub fn answer(
    db: &Database,
    par: &Arc<BfvParameters>,
    request: &Request,
) -> Result<Vec<Vec<Ciphertext>>> {
    let set = db.set();
    if request.indices.len() != set.indices as usize {
        return Err(Error::protocol(
            format!("a query of {} indices", set.indices),
            format!("{}", request.indices.len()),
        ));
    }
    let dag = PowersDag::new(&set.sources, &db.targets())?;
    (request.indices.par_iter().enumerate())
        .map(|(index, sources)| {
            let xs = powers(&dag, sources.clone(), &request.rk)?;
            (0..db.bundles(index as u32))
                .map(|bundle| {
                    let coefficients = db.plaintexts(index as u32, bundle, par)?;
                    let mut result = evaluate(&coefficients, set.low, &xs, &request.rk)?;
                    result.switch_to_level(par.max_level()).map_err(bfv)?;
                    Ok(result)
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect()
}

impl Pending {
    /// Which of the query's items the database holds, from the server's `answer`.
    pub fn matches(&self, set: &FheSet, answer: &[Vec<Ciphertext>]) -> Result<Vec<bool>> {
        let (f, columns) = (usize::from(set.felts), set.columns() as usize);
        let mut found = vec![false; self.items];
        for (index, bundles) in answer.iter().enumerate() {
            for result in bundles {
                let pt = self.sk.try_decrypt(result).map_err(bfv)?;
                let slots = Vec::<u64>::try_decode(&pt, Encoding::simd()).map_err(bfv)?;
                for c in 0..columns {
                    if let Some(item) = self.placed[index * columns + c] {
                        found[item] |= slots[f * c..f * c + f].iter().all(|&v| v == 0);
                    }
                }
            }
        }
        Ok(found)
    }
}

/// `fhe`'s error as Venn's.
fn bfv(e: fhe::Error) -> Error {
    Error::Params(format!("BFV: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::he::params::Bfv;
    use crate::unbalanced::fhe::database::random_hashes;

    /// V1M-4096's shape with one bundle index: a query of members and non-members finds
    /// exactly the members, through inserts and deletes, over several bundles; a query
    /// over the cap is refused.
    #[test]
    fn queries_find_the_members() {
        let set = FheSet {
            name: "test",
            bfv: Bfv {
                degree: 8192,
                plain: 65537,
                moduli: vec![56, 56, 56, 50],
            },
            hashes: 3,
            felts: 6,
            indices: 1,
            degree: 98,
            low: 8,
            sources: vec![1, 3, 4, 9, 27],
            max_query: 256,
        };
        set.check(1 << 16).unwrap();
        let par = set.bfv.build().unwrap();
        let mut prg = Prg::from_seed(Block::from(12));
        let seed = Block::from(77);
        let mut db = Database::new(set.clone(), seed);
        // About 110 items a column: two bundles or three.
        let held = random_hashes(50_000, &mut prg);
        held.iter().for_each(|&h| db.insert(h));
        assert!((2..=set.bundles_for(50_000) as usize).contains(&db.bundles(0)));
        let removed = &held[..40];
        removed.iter().for_each(|&h| assert!(db.remove(h)));
        assert!(!db.remove(removed[0]), "removed already");
        let strangers = random_hashes(100, &mut prg);
        let asked: Vec<u128> = (held[..120].iter()).chain(&strangers).copied().collect();
        let (pending, request) = query(&set, &par, seed, &asked, &mut prg).unwrap();
        let answer = answer(&db, &par, &request).unwrap();
        let found = pending.matches(&set, &answer).unwrap();
        let expected: Vec<bool> = (0..asked.len()).map(|i| (40..120).contains(&i)).collect();
        assert_eq!(found, expected);
        let many = random_hashes(257, &mut prg);
        assert!(query(&set, &par, seed, &many, &mut prg).is_err());
    }
}
