//! A `ub-fhe` query (CHLR18 Fig. 1; CMdG+21 §4): the client cuckoo-hashes its items'
//! OPRF hashes into the table's locations (one each, no stash), and for each bundle index
//! sends x^s slot-wise for each source power s, encrypted under a fresh key, with its
//! relinearisation key where the set needs products; the server derives the powers it needs ([`powers`]), evaluates
//! every bundle's matching polynomials at them ([`evaluate`]) and answers each bundle's
//! result switched to its last modulus (and each label part's, in a labeled database);
//! the client decrypts, and an item matches where a bundle's f slots of its column are
//! all 0, its sealed label then in the same slots of that bundle's label parts.

use super::database::{locations, Database};
use super::params::FheSet;
use crate::crypto::{Block, Prg};
use crate::he::bfv;
use crate::he::params::tensor;
use crate::he::polynomial::{evaluate, high_powers, powers};
use crate::he::powers::PowersDag;
use crate::tables::{cuckoo_insert, CuckooHash};
use crate::util::primes::pow_mod;
use crate::{Error, Result};
use fhe::bfv::{BfvParameters, Ciphertext, Encoding, Plaintext, RelinearizationKey, SecretKey};
use fhe_traits::{FheDecoder, FheDecrypter, FheEncoder, FheEncrypter};
use rand::SeedableRng;
use rayon::prelude::*;
use std::sync::Arc;

/// What a client sends: per bundle index, each source power's ciphertext, and the key
/// the server relinearises with where the set needs products ([`FheSet::relinearises`]).
pub struct Request {
    /// Per index, (source power, its ciphertext), in the set's source order.
    pub indices: Vec<Vec<(u32, Ciphertext)>>,
    /// The relinearisation key (level 0), if the set needs one.
    pub rk: Option<RelinearizationKey>,
}

/// What a client keeps of its query: the key, and which of its items sits at each
/// location.
pub struct Pending {
    sk: SecretKey,
    /// Per location, the index of the item placed there.
    placed: Vec<Option<usize>>,
    items: usize,
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
    let rk = (set.relinearises())
        .then(|| RelinearizationKey::new(&sk, &mut rng).map_err(bfv))
        .transpose()?;
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
            let xs: Vec<u64> = x.iter().map(|&v| pow_mod(v, u64::from(s), t)).collect();
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

/// What a server answers: per bundle index, per bundle, the matching result then each
/// label part's, at the last modulus.
pub type Answer = Vec<Vec<Vec<Ciphertext>>>;

/// The server's answer to `request` from `db`. The indices run on the current rayon pool.
pub fn answer(db: &Database, par: &Arc<BfvParameters>, request: &Request) -> Result<Answer> {
    let set = db.set();
    if request.indices.len() != set.indices as usize {
        return Err(Error::protocol(
            format!("a query of {} indices", set.indices),
            format!("{}", request.indices.len()),
        ));
    }
    let dag = PowersDag::new(&set.sources, &db.targets())?;
    let tensor = tensor(par)?;
    let high = high_powers(set.degree, set.low);
    let powers = (request.indices.par_iter())
        .map(|sources| powers(&dag, sources.clone(), &high, request.rk.as_ref(), par))
        .collect::<Result<Vec<_>>>()?;
    // Every bundle of every index, on the pool together (an index may hold most of them).
    let bundles: Vec<(usize, usize)> = (0..powers.len())
        .flat_map(|index| (0..db.bundles(index as u32)).map(move |bundle| (index, bundle)))
        .collect();
    let results = (bundles.par_iter())
        .map(|&(index, bundle)| {
            let bundle = db.bundle(index as u32, bundle)?;
            (0..bundle.polynomials())
                .map(|p| {
                    let plaintexts = |js| bundle.plaintexts(p, js, &tensor);
                    let (degree, powers) = (bundle.degree(p), &powers[index]);
                    let rk = request.rk.as_ref();
                    let mut result = evaluate(degree, &plaintexts, set.low, powers, rk)?;
                    result.switch_to_level(par.max_level()).map_err(bfv)?;
                    Ok(result)
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    let mut answer: Answer = vec![Vec::new(); powers.len()];
    for (&(index, _), result) in bundles.iter().zip(results) {
        answer[index].push(result);
    }
    Ok(answer)
}

impl Pending {
    /// Which of the query's items the database holds, from the server's `answer`, each
    /// with its sealed label of `label_bytes` bytes (empty where the database's items
    /// carry none: `label_bytes` 0).
    pub fn matches(
        &self,
        set: &FheSet,
        answer: &Answer,
        label_bytes: usize,
    ) -> Result<Vec<Option<Vec<u8>>>> {
        let (f, columns) = (usize::from(set.felts), set.columns() as usize);
        let parts = set.label_parts(label_bytes);
        let mut found = vec![None; self.items];
        for (index, bundles) in answer.iter().enumerate() {
            for results in bundles {
                if results.len() != 1 + parts {
                    return Err(Error::protocol(
                        format!("a bundle's result and {parts} label parts"),
                        format!("{} results", results.len()),
                    ));
                }
                let slots = (results.iter())
                    .map(|result| {
                        let pt = self.sk.try_decrypt(result).map_err(bfv)?;
                        Vec::<u64>::try_decode(&pt, Encoding::simd()).map_err(bfv)
                    })
                    .collect::<Result<Vec<_>>>()?;
                for c in 0..columns {
                    let Some(item) = self.placed[index * columns + c] else {
                        continue;
                    };
                    if slots[0][f * c..f * c + f].iter().any(|&v| v != 0) {
                        continue;
                    }
                    let felts: Vec<Vec<u32>> = (slots[1..].iter())
                        .map(|part| part[f * c..f * c + f].iter().map(|&v| v as u32).collect())
                        .collect();
                    // A felt too wide is a false positive's: no label, no match. The first
                    // bundle to match stands (a later one matching too is a false
                    // positive's, whose label would not open).
                    if found[item].is_none() {
                        found[item] = set.label_of(&felts, label_bytes);
                    }
                }
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::unbalanced::fhe::database::random_hashes;

    /// V128K-256: V1M-4096's shape with one bundle index.
    pub(crate) fn small_set() -> FheSet {
        let mut sets = crate::unbalanced::fhe::params::sets().into_iter();
        sets.find(|s| s.name == "V128K-256").unwrap()
    }

    /// An unlabeled database of `set` under `seed` holding `count` random items, and the
    /// items.
    pub(crate) fn filled(
        set: &FheSet,
        seed: Block,
        count: usize,
        prg: &mut Prg,
    ) -> (Database, Vec<u128>) {
        let mut db = Database::new(set.clone(), seed, None);
        let held = random_hashes(count, prg);
        held.iter().for_each(|&h| db.insert(h, None).unwrap());
        (db, held)
    }

    /// A query of members and non-members finds exactly the members, through inserts and
    /// deletes, over several bundles; a query over the cap is refused.
    #[test]
    fn queries_find_the_members() {
        let set = small_set();
        set.check().unwrap();
        let par = set.bfv.build().unwrap();
        let mut prg = Prg::from_seed(Block::from(12));
        let seed = Block::from(77);
        // About 110 items a column: two bundles or three.
        let (mut db, held) = filled(&set, seed, 50_000, &mut prg);
        assert!((2..=set.bundles_for(50_000) as usize).contains(&db.bundles(0)));
        let removed = &held[..40];
        removed.iter().for_each(|&h| assert!(db.remove(h)));
        assert!(!db.remove(removed[0]), "removed already");
        let strangers = random_hashes(100, &mut prg);
        let asked: Vec<u128> = (held[..120].iter()).chain(&strangers).copied().collect();
        let (pending, request) = query(&set, &par, seed, &asked, &mut prg).unwrap();
        let answer = answer(&db, &par, &request).unwrap();
        let found: Vec<bool> = (pending.matches(&set, &answer, 0).unwrap().iter())
            .map(Option::is_some)
            .collect();
        let expected: Vec<bool> = (0..asked.len()).map(|i| (40..120).contains(&i)).collect();
        assert_eq!(found, expected);
        let many = random_hashes(257, &mut prg);
        assert!(query(&set, &par, seed, &many, &mut prg).is_err());
    }

    /// A database keeping its plaintexts answers as one that keeps none, and so do its
    /// clones as they and it change, in turns: no clone takes another's plaintexts.
    #[test]
    fn kept_plaintexts_answer_as_made_ones() {
        use crate::unbalanced::fhe::database::Change;
        use crate::unbalanced::fhe::plaintexts::PlaintextBudget;
        let set = small_set();
        let par = set.bfv.build().unwrap();
        let mut prg = Prg::from_seed(Block::from(14));
        let seed = Block::from(79);
        let (mut db, held) = filled(&set, seed, 20_000, &mut prg);
        let budget = PlaintextBudget::new(1 << 30);
        db.keep_plaintexts(Some(budget.clone()));
        let strangers = random_hashes(100, &mut prg);
        let asked: Vec<u128> = held[..100].iter().chain(&strangers).copied().collect();
        let found = |db: &Database, prg: &mut Prg| -> Vec<bool> {
            let (pending, request) = query(&set, &par, seed, &asked, prg).unwrap();
            let answer = answer(db, &par, &request).unwrap();
            (pending.matches(&set, &answer, 0).unwrap().iter())
                .map(Option::is_some)
                .collect()
        };
        let tensor = crate::he::params::tensor(&par).unwrap();
        db.warm(&tensor, &|| true).unwrap();
        assert_eq!(budget.used(), 0, "stopped at once");
        db.warm(&tensor, &|| false).unwrap();
        let all = db.bundles(0) as u64 * set.plaintext_bytes();
        assert_eq!(budget.used(), all, "every bundle's plaintexts");
        let mut expected: Vec<bool> = (0..asked.len()).map(|i| i < 100).collect();
        assert_eq!(found(&db, &mut prg), expected);
        assert_eq!(found(&db, &mut prg), expected);
        assert_eq!(budget.used(), all, "kept once");
        let small = PlaintextBudget::new(all / 2);
        let mut half = db.clone();
        half.keep_plaintexts(Some(small.clone()));
        half.warm(&tensor, &|| false).unwrap();
        assert!(
            small.used() <= all / 2 && small.used() > all / 4,
            "{}",
            small.used()
        );
        drop(half);
        // A clone changed: half the members out, half the strangers in.
        let mut changed = db.clone();
        let changes: Vec<Change> = (held[..50].iter().map(|&h| Change::Remove(h)))
            .chain(strangers[..50].iter().map(|&h| Change::Insert(h, None)))
            .collect();
        changed.apply(&changes).unwrap();
        let mut after = expected.clone();
        (0..50).for_each(|i| after[i] = false);
        (100..150).for_each(|i| after[i] = true);
        for _ in 0..2 {
            assert_eq!(found(&changed, &mut prg), after);
            assert_eq!(found(&db, &mut prg), expected);
        }
        // The first changed in place: its changed bundles' plaintexts made again.
        expected[0] = false;
        db.apply(&[Change::Remove(held[0])]).unwrap();
        assert_eq!(found(&db, &mut prg), expected);
        drop((db, changed));
        assert_eq!(budget.used(), 0, "all given back");
    }

    /// A labeled database through inserts, relabels and deletes: each member gets its
    /// label as last sealed (opening under its key), a non-member none; a label of
    /// another size is refused.
    #[test]
    fn members_get_their_labels() {
        use crate::unbalanced::labels::{open, seal, sealed_len};
        let set = small_set();
        let par = set.bfv.build().unwrap();
        let mut prg = Prg::from_seed(Block::from(13));
        let seed = Block::from(78);
        let bytes = sealed_len(16);
        let mut db = Database::new(set.clone(), seed, Some(bytes));
        assert_eq!(db.label_parts(), 4, "296 bits in 96-bit parts");
        let key = |h: u128| [h as u8; 32];
        let label = |h: u128, round: u8, prg: &mut Prg| {
            let text = [round; 16];
            seal(&key(h), &text[..(h % 17) as usize], 16, prg).unwrap()
        };
        let held = random_hashes(3000, &mut prg);
        let mut model = std::collections::HashMap::new();
        for &h in &held {
            let sealed = label(h, 0, &mut prg);
            db.insert(h, Some(&sealed)).unwrap();
            model.insert(h, sealed);
        }
        for &h in &held[..30] {
            let sealed = label(h, 1, &mut prg);
            assert!(db.relabel(h, &sealed).unwrap());
            model.insert(h, sealed);
        }
        for &h in &held[30..60] {
            assert!(db.remove(h));
            model.remove(&h);
        }
        assert!(
            db.insert(7, Some(&[0; 3])).is_err(),
            "a label of another size"
        );
        let strangers = random_hashes(60, &mut prg);
        let asked: Vec<u128> = held[..120].iter().chain(&strangers).copied().collect();
        let (pending, request) = query(&set, &par, seed, &asked, &mut prg).unwrap();
        let answer = answer(&db, &par, &request).unwrap();
        let found = pending.matches(&set, &answer, bytes).unwrap();
        for (h, got) in asked.iter().zip(&found) {
            assert_eq!(got.as_ref(), model.get(h), "{h:#x}");
            if let Some(sealed) = got {
                let opened = open(&key(*h), sealed, 16).unwrap().unwrap();
                assert_eq!(opened.len(), (h % 17) as usize);
            }
        }
    }
}
