//! Plaintexts kept between queries. A query's evaluation encodes each bundle's polynomials
//! as plaintexts for products ([`Encoded`]: the slots through the inverse NTT modulo t,
//! then each modulus's NTT — five NTTs a plaintext at N = 8,192 over four moduli, the most
//! of a large set's query), and they are the same for every query until the bundle
//! changes. A database and its clones share what they keep (`Kept`): each block of a
//! bundle's polynomial under the versions its bundle's columns had when it was encoded. A
//! column takes a fresh version, never reused, at each change, so a changed bundle's
//! plaintexts are never taken for its new ones, whichever clone asks.
//!
//! Every database of a process draws on one [`PlaintextBudget`] of bytes, first come:
//! every query reads every bundle whole, so what is kept stays kept while it is current (a
//! least-recently-used policy would evict each block just before it is needed again, and
//! keep nothing useful once the bundles outgrow the budget). A block of a changed bundle is
//! made again when a query next meets it, in the old block's buffers (fresh memory costs
//! the kernel's zeroing of each page: measured as half a first query's time when 6.8 GiB
//! were kept at once), and everything a database lineage keeps is given back when its
//! last clone is dropped.

use crate::he::product::Encoded;
use crate::Result;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The MiB of plaintexts a server keeps unless told otherwise: all of a 2^20-key
/// dataset's for one-key queries (V2M-1: 47 MiB unlabeled, 0.5 GiB with 64-byte labels),
/// a 2^24-key one's for a third of its bundles.
pub const DEFAULT_BUDGET_MIB: u64 = 1024;

/// The bytes a process's databases may keep as plaintexts, and how many they keep.
#[derive(Debug)]
pub struct PlaintextBudget {
    limit: u64,
    used: AtomicU64,
}

impl PlaintextBudget {
    /// A budget of `limit` bytes (0: nothing is kept).
    pub fn new(limit: u64) -> Arc<PlaintextBudget> {
        Arc::new(PlaintextBudget {
            limit,
            used: AtomicU64::new(0),
        })
    }

    /// Its bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The bytes kept now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Takes `bytes` of it, if they fit.
    fn reserve(&self, bytes: u64) -> bool {
        (self.used)
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                (used.checked_add(bytes)).filter(|&u| u <= self.limit)
            })
            .is_ok()
    }

    /// Gives `bytes` back.
    fn release(&self, bytes: u64) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// A bundle by its index and number.
pub(crate) type BundleAt = (u32, usize);

/// A block of a bundle: a polynomial's run of plaintexts by (polynomial, first
/// coefficient).
type BlockAt = (usize, usize);

/// What a database lineage (a database and its clones) keeps, within its budget.
#[derive(Debug, Default)]
pub(crate) struct Kept {
    budget: Option<Arc<PlaintextBudget>>,
    bundles: Mutex<HashMap<BundleAt, KeptBundle>>,
}

/// A bundle's kept blocks under the versions of its columns, and the blocks of its
/// versions before, whose buffers the new ones are made in (memory touched already: on a
/// server updated often, fresh pages would cost more than the encoding saves). `bytes`
/// counts both.
#[derive(Debug)]
struct KeptBundle {
    versions: Vec<u64>,
    blocks: HashMap<BlockAt, Arc<Vec<Encoded>>>,
    spare: HashMap<BlockAt, Arc<Vec<Encoded>>>,
    bytes: u64,
}

impl KeptBundle {
    fn new(versions: &[u64]) -> KeptBundle {
        KeptBundle {
            versions: versions.to_vec(),
            blocks: HashMap::new(),
            spare: HashMap::new(),
            bytes: 0,
        }
    }

    /// At `versions`: where it was at others, its blocks become spares (a spare they
    /// replace given back to `budget`).
    fn at(&mut self, versions: &[u64], budget: &PlaintextBudget) {
        if self.versions == versions {
            return;
        }
        self.versions = versions.to_vec();
        for (at, block) in std::mem::take(&mut self.blocks) {
            if let Some(replaced) = self.spare.insert(at, block) {
                self.bytes -= bytes(&replaced);
                budget.release(bytes(&replaced));
            }
        }
    }
}

/// The bytes of a block's plaintexts.
fn bytes(block: &[Encoded]) -> u64 {
    block.iter().map(|e| e.bytes() as u64).sum()
}

/// Bytes of a budget held while a block is made: given back unless kept.
struct Lent<'a> {
    budget: &'a PlaintextBudget,
    bytes: u64,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

impl Kept {
    /// Keeping within `budget` (nothing without one).
    pub(crate) fn new(budget: Option<Arc<PlaintextBudget>>) -> Kept {
        Kept {
            budget,
            bundles: Mutex::default(),
        }
    }

    /// The plaintexts of coefficients `js` of polynomial `p` of the bundle `at`, whose
    /// columns are at `versions`: those kept where they are current, else `make`'s (given
    /// the buffers of the block's spare, if no query holds it), kept if the budget has
    /// room.
    pub(crate) fn block(
        &self,
        at: BundleAt,
        versions: &[u64],
        (p, js): (usize, Range<usize>),
        make: impl FnOnce(Vec<Encoded>) -> Result<Vec<Encoded>>,
    ) -> Result<Arc<Vec<Encoded>>> {
        let Some(budget) = &self.budget else {
            return Ok(Arc::new(make(Vec::new())?));
        };
        let key = (p, js.start);
        let spare = {
            let mut bundles = self.lock();
            let kept = (bundles.entry(at)).or_insert_with(|| KeptBundle::new(versions));
            kept.at(versions, budget);
            if let Some(block) = kept.blocks.get(&key).filter(|b| b.len() == js.len()) {
                return Ok(block.clone());
            }
            let spare = kept.spare.remove(&key);
            let lent = spare.as_deref().map_or(0, |s| bytes(s));
            kept.bytes -= lent;
            spare.map(|s| {
                (
                    s,
                    Lent {
                        budget,
                        bytes: lent,
                    },
                )
            })
        };
        let (buffers, mut lent) = match spare {
            Some((spare, lent)) => (Arc::try_unwrap(spare).unwrap_or_default(), lent),
            None => (Vec::new(), Lent { budget, bytes: 0 }),
        };
        let block = Arc::new(make(buffers)?);
        let size = bytes(&block);
        let mut bundles = self.lock();
        let kept = (bundles.entry(at)).or_insert_with(|| KeptBundle::new(versions));
        // Another query may have kept it meanwhile, or the bundle changed under it.
        let current = kept.versions == versions && !kept.blocks.contains_key(&key);
        let room = match size.checked_sub(lent.bytes) {
            Some(more) => budget.reserve(more),
            None => {
                budget.release(lent.bytes - size);
                lent.bytes = size;
                true
            }
        };
        if current && room {
            kept.blocks.insert(key, block.clone());
            kept.bytes += size;
            lent.bytes = 0;
        }
        Ok(block)
    }

    /// Whether a block of `bytes` of polynomial `p` from coefficient `first` of the
    /// bundle `at` would be kept: it is kept already, or has a spare (at whatever
    /// versions: a block of other versions becomes one), or the budget has room.
    pub(crate) fn fits(&self, at: BundleAt, (p, first): BlockAt, bytes: u64) -> bool {
        let Some(budget) = &self.budget else {
            return false;
        };
        let held = (self.lock().get(&at)).is_some_and(|k| {
            k.blocks.contains_key(&(p, first)) || k.spare.contains_key(&(p, first))
        });
        held || budget.limit.saturating_sub(budget.used()) >= bytes
    }

    /// The bytes it keeps.
    #[cfg(test)]
    fn bytes(&self) -> u64 {
        self.lock().values().map(|k| k.bytes).sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<BundleAt, KeptBundle>> {
        self.bundles.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        if let Some(budget) = &self.budget {
            budget.release(self.lock().values().map(|k| k.bytes).sum());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::he::params::{tensor, Bfv};
    use crate::util::primes::batching_prime;

    /// Blocks are kept while the budget has room and their bundle's versions hold; a
    /// bundle at other versions is made again in its old blocks' buffers (where no query
    /// holds them), the bytes settled; a lineage dropped gives back everything.
    #[test]
    fn blocks_are_kept_within_the_budget_while_current() {
        let par = (Bfv {
            degree: 4096,
            plain: batching_prime(4096, 1 << 16),
            moduli: vec![60],
        })
        .build()
        .unwrap();
        let tensor = tensor(&par).unwrap();
        let size = tensor.encode(&[1]).unwrap().bytes() as u64;
        let budget = PlaintextBudget::new(3 * size);
        let kept = Kept::new(Some(budget.clone()));
        // How many blocks were made, and how many plaintexts in spare buffers.
        let (made, reused) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
        let block = |at, versions: &[u64], js: Range<usize>| {
            let make = |spare: Vec<Encoded>| {
                made.set(made.get() + 1);
                reused.set(reused.get() + spare.len());
                let mut spare = spare.into_iter().map(Encoded::into_buffer);
                (js.clone())
                    .map(|j| tensor.encode_reusing(&[j as u64], spare.next().unwrap_or_default()))
                    .collect()
            };
            kept.block(at, versions, (0, js.clone()), make).unwrap()
        };
        let first = block((0, 0), &[1, 2], 0..2);
        assert!(Arc::ptr_eq(&first, &block((0, 0), &[1, 2], 0..2)));
        assert_eq!((made.get(), budget.used()), (1, 2 * size), "kept");
        block((0, 1), &[3], 0..2);
        assert_eq!(
            (made.get(), budget.used()),
            (2, 2 * size),
            "over the budget"
        );
        block((0, 1), &[3], 0..2);
        assert_eq!(made.get(), 3, "not kept");
        // A new version while a query holds the old block: fresh buffers.
        let again = block((0, 0), &[1, 4], 0..2);
        assert_eq!((made.get(), reused.get(), budget.used()), (4, 0, 2 * size));
        let one = tensor.encode(&[1]).unwrap().into_buffer();
        assert_eq!(again[1].clone().into_buffer(), one);
        drop((first, again));
        // Back to the first version: the second's buffers, no query holding them.
        block((0, 0), &[1, 2], 0..2);
        assert_eq!((made.get(), reused.get(), budget.used()), (5, 2, 2 * size));
        block((0, 0), &[1, 2], 2..3);
        assert_eq!(
            (made.get(), budget.used(), kept.bytes()),
            (6, 3 * size, 3 * size)
        );
        // The budget spent: a block held (or its spare, at any versions) would still be
        // kept, another not.
        assert!(kept.fits((0, 0), (0, 2), size) && kept.fits((0, 0), (0, 0), 2 * size));
        assert!(!kept.fits((0, 1), (0, 0), size) && !kept.fits((0, 0), (0, 4), size));
        // A shorter block in a longer one's buffers gives the rest back.
        block((0, 0), &[5, 2], 0..1);
        assert_eq!(
            (reused.get(), budget.used(), kept.bytes()),
            (4, 2 * size, 2 * size)
        );
        drop(kept);
        assert_eq!(budget.used(), 0);

        let unbudgeted = Kept::new(None);
        for _ in 0..2 {
            let make = |_| Ok(vec![tensor.encode(&[1]).unwrap()]);
            unbudgeted.block((0, 0), &[1], (0, 0..1), make).unwrap();
        }
        assert_eq!(budget.used(), 0, "nothing kept without a budget");
    }
}
