//! `ub-fhe`'s server database: each item's felts at each of its H locations, in bundles,
//! with every bin's matching polynomial M(x) = Π (x − a) over the felts it holds kept up
//! to date per insert and delete in O(d) (M·(x − a), and synthetic division by (x − a)),
//! where APSI rebuilds a touched bundle's every polynomial from its roots (O(d²) a bin;
//! the spec's §2.1–2.2).
//!
//! A location L is bundle index ⌊L/S⌋ and column L mod S; an item goes, at each distinct
//! location, into the first bundle of that index whose column has room (fewer than d
//! items), else a new one (CHLR18 §4.1, APSI's first fit). Each location keeps its own
//! stack of columns, one a bundle: locations change independently, and an index has as
//! many bundles as its fullest location (the others' missing columns hold nothing). A
//! column is shared between a database and its clones until one changes it (copy on
//! write): a server applies an update to a clone of the database its sessions answer
//! from, copying only the columns the update touches. Column c's f bins are slots
//! f·c … f·c + f − 1 of the bundle's plaintexts; plaintext j holds every bin's
//! coefficient j (CLR17 §4).
//!
//! Labels (CLR17 §4.5's labeled PSI, CMdG+21 §5): an item's sealed label is cut into P·f
//! felts, and part p's bin k holds the interpolation polynomial L_{p,k} with
//! L_{p,k}(felt_k) = label felt (p, k) for each item of the column. A bin of a labeled
//! database never holds one felt twice (an x cannot map to two labels): an item goes to
//! the first bundle where none of its felts is already a root of its bins. Each change is
//! O(d) a bin too (the spec's §2.2): an insert adds (v − L(a))·M(x)/M(a) with the old M;
//! a delete subtracts the top coefficient times the new M (which vanishes at every root
//! left, and drops the degree); a relabel adds (v′ − L(a))·M_a(x)/M_a(a), M_a = M/(x − a).

use super::params::FheSet;
use super::plaintexts::{Kept, PlaintextBudget};
use crate::crypto::Block;
#[cfg(test)]
use crate::crypto::Prg;
use crate::he::polynomial;
use crate::he::product::{Encoded, Tensor};
use crate::net::{Reader, Writer};
use crate::tables::CuckooHash;
use crate::{Error, Result};
use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A column of a bundle: the items at its location, its f bins' matching polynomials
/// (coefficients, lowest first; monic, of degree the item count) and, labeled, each
/// part's f interpolation polynomials (as many coefficients as items), at a version of
/// its own (what plaintexts kept between queries are checked against).
#[derive(Clone, Debug)]
struct Column {
    items: Vec<u128>,
    polys: Vec<Vec<u32>>,
    labels: Vec<Vec<Vec<u32>>>,
    version: u64,
}

/// Columns are equal where their contents are, whatever their versions.
impl PartialEq for Column {
    fn eq(&self, other: &Column) -> bool {
        (&self.items, &self.polys, &self.labels) == (&other.items, &other.polys, &other.labels)
    }
}

impl Eq for Column {}

/// A version no column of this process has had (from 1: 0 is a missing column's).
fn fresh_version() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// `column` to change: its own copy where a clone shares it, at a fresh version.
fn edit(column: &mut Arc<Column>) -> &mut Column {
    let column = Arc::make_mut(column);
    column.version = fresh_version();
    column
}

/// The server's items as bundles of matching polynomials.
#[derive(Clone)]
pub struct Database {
    set: FheSet,
    /// P: the label parts of an item (0 unlabeled), and the bytes of a sealed label.
    parts: usize,
    label_bytes: usize,
    hash: CuckooHash,
    /// Per location, its column in each bundle that has one (bundle b's is entry b): the
    /// locations change independently, so a build runs them in parallel.
    stacks: Vec<Vec<Arc<Column>>>,
    items: u64,
    /// The plaintexts it and its clones keep between queries.
    kept: Arc<Kept>,
}

/// `a · b mod t`.
fn mul_mod(a: u32, b: u32, t: u32) -> u32 {
    (u64::from(a) * u64::from(b) % u64::from(t)) as u32
}

/// `a^e mod t`.
fn pow_mod(a: u32, mut e: u32, t: u32) -> u32 {
    let (mut result, mut a) = (1u32, a);
    while e > 0 {
        if e & 1 == 1 {
            result = mul_mod(result, a, t);
        }
        a = mul_mod(a, a, t);
        e >>= 1;
    }
    result
}

/// `a + b mod t` for a, b < t (t < 2^31, as every set's is: below 2^24).
fn add_mod(a: u32, b: u32, t: u32) -> u32 {
    let sum = a + b;
    if sum >= t {
        sum - t
    } else {
        sum
    }
}

/// `a − b mod t` for a, b < t.
fn sub_mod(a: u32, b: u32, t: u32) -> u32 {
    add_mod(a, t - b, t)
}

/// Multiplication mod t by a fixed w < t, Shoup's way (the NTT libraries' `MulShoup`):
/// with w′ = ⌊w · 2^32 / t⌋ made once, w·x mod t for x < t is w·x − ⌊w′·x / 2^32⌋·t,
/// which is below 2t, less t if need be — a multiply-high instead of a division in the
/// O(d) loops of every insert, delete and relabel (8 label parts' polynomials each).
#[derive(Clone, Copy)]
struct Times {
    w: u32,
    shoup: u32,
    t: u32,
}

impl Times {
    /// Checked, not only in debug builds: a w of t or more would give wrong products
    /// silently (once a loop of d, not a coefficient).
    fn new(w: u32, t: u32) -> Times {
        assert!(w < t && t < 1 << 31, "a Shoup multiplier {w} mod {t}");
        let shoup = ((u64::from(w) << 32) / u64::from(t)) as u32;
        Times { w, shoup, t }
    }

    /// `w · x mod t` for x < t.
    fn of(self, x: u32) -> u32 {
        let q = (u64::from(self.shoup) * u64::from(x)) >> 32;
        let r = (u64::from(self.w) * u64::from(x)).wrapping_sub(q * u64::from(self.t)) as u32;
        if r >= self.t {
            r - self.t
        } else {
            r
        }
    }
}

/// `poly(x)` mod t.
fn eval(poly: &[u32], x: u32, t: u32) -> u32 {
    let x = Times::new(x, t);
    (poly.iter().rev()).fold(0, |acc, &c| add_mod(x.of(acc), c, t))
}

/// `poly + c·other` mod t, `poly` grown to `other`'s length.
fn add_multiple(poly: &mut Vec<u32>, c: u32, other: &[u32], t: u32) {
    poly.resize(poly.len().max(other.len()), 0);
    let c = Times::new(c, t);
    for (p, &o) in poly.iter_mut().zip(other) {
        *p = add_mod(*p, c.of(o), t);
    }
}

/// `1 / m(a)` mod t, by Fermat (m(a) ≠ 0: `a` is not a root of `m`): one a felt, shared
/// by its label parts' [`correction`]s.
fn inverse_at(m: &[u32], a: u32, t: u32) -> u32 {
    pow_mod(eval(m, a, t), t - 2, t)
}

/// `(v − label(a)) · inverse` mod t, `inverse` = 1 / m(a) ([`inverse_at`]): the multiple of
/// `m` that makes `label` take `v` at `a`.
fn correction(label: &[u32], inverse: u32, a: u32, v: u32, t: u32) -> u32 {
    mul_mod(sub_mod(v, eval(label, a, t), t), inverse, t)
}

/// `poly · (x − root)` mod t.
fn with_root(poly: &mut Vec<u32>, root: u32, t: u32) {
    poly.push(0);
    let root = Times::new(root, t);
    for k in (0..poly.len()).rev() {
        let below = if k > 0 { poly[k - 1] } else { 0 };
        poly[k] = sub_mod(below, root.of(poly[k]), t);
    }
}

/// `poly / (x − root)` mod t, `root` one of its roots (synthetic division).
fn without_root(poly: &mut Vec<u32>, root: u32, t: u32) {
    let degree = poly.len() - 1;
    let mut carry = poly[degree];
    let root = Times::new(root, t);
    for k in (0..degree).rev() {
        let next = add_mod(poly[k], root.of(carry), t);
        poly[k] = carry;
        carry = next;
    }
    debug_assert_eq!(carry, 0, "the remainder of a root's division");
    poly.pop();
}

impl Database {
    /// An empty database of `set`, its items' locations chosen by `seed` (public: a
    /// client places its items alike), with sealed labels of `label_bytes` bytes if its
    /// items carry labels.
    pub fn new(set: FheSet, seed: Block, label_bytes: Option<usize>) -> Database {
        let hash = CuckooHash::new(seed, set.locations() as usize);
        let stacks = vec![Vec::new(); set.locations() as usize];
        let label_bytes = label_bytes.unwrap_or(0);
        Database {
            parts: set.label_parts(label_bytes),
            label_bytes,
            set,
            hash,
            stacks,
            items: 0,
            kept: Arc::default(),
        }
    }

    /// It and its clones to come keeping plaintexts between queries within `budget`
    /// (`None`: keeping none), what it kept dropped.
    pub fn keep_plaintexts(&mut self, budget: Option<Arc<PlaintextBudget>>) {
        self.kept = Arc::new(Kept::new(budget));
    }

    /// P: the label parts of an item (0 unlabeled).
    pub fn label_parts(&self) -> usize {
        self.parts
    }

    /// The set it is of.
    pub fn set(&self) -> &FheSet {
        &self.set
    }

    /// How many items it holds.
    pub fn len(&self) -> u64 {
        self.items
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.items == 0
    }

    /// The bundles of index `index`: its fullest location's.
    pub fn bundles(&self, index: u32) -> usize {
        let columns = self.set.columns() as usize;
        let stacks = self.stacks.chunks(columns).nth(index as usize);
        stacks.map_or(0, |s| s.iter().map(Vec::len).max().unwrap_or(0))
    }

    /// The database of `set` (locations by `seed`) holding `hashes` (distinct), with their
    /// sealed `labels` where its items carry labels (`label_bytes` each): the items as
    /// [`Database::insert`] would add them one by one, the locations filled in parallel on
    /// the current rayon pool.
    pub fn build(
        set: FheSet,
        seed: Block,
        hashes: &[u128],
        labels: Option<(&[&[u8]], usize)>,
    ) -> Result<Database> {
        let mut db = Database::new(set, seed, labels.map(|(_, bytes)| bytes));
        if labels.is_some_and(|(l, _)| l.len() != hashes.len()) {
            return Err(Error::Usage("a label for every item".into()));
        }
        let at = db.by_location(hashes);
        let (set, parts) = (&db.set, db.parts);
        (db.stacks.par_iter_mut().zip(at)).try_for_each(|(stack, items)| {
            for item in items {
                let hash = hashes[item as usize];
                let label = labels.map(|(l, _)| l[item as usize]);
                let values = label_felts(set, parts, db.label_bytes, label)?;
                add_to(stack, set, hash, &values);
            }
            Ok::<_, Error>(())
        })?;
        db.items = hashes.len() as u64;
        Ok(db)
    }

    /// The distinct locations of an item's hash.
    fn locations(&self, hash: u128) -> Vec<u32> {
        locations(&self.hash, &self.set, hash)
    }

    /// For each location, the positions among `hashes` of the items it takes, in order
    /// (the locations found in parallel on the current rayon pool).
    fn by_location(&self, hashes: &[u128]) -> Vec<Vec<u32>> {
        let located: Vec<Vec<u32>> = hashes.par_iter().map(|&h| self.locations(h)).collect();
        let mut at: Vec<Vec<u32>> = vec![Vec::new(); self.stacks.len()];
        for (item, locations) in located.iter().enumerate() {
            (locations.iter()).for_each(|&l| at[l as usize].push(item as u32));
        }
        at
    }

    /// Adds the item of 128-bit hash `hash` (its OPRF value's), with its sealed label
    /// where the database's items carry labels: refused where it is held already.
    pub fn insert(&mut self, hash: u128, label: Option<&[u8]>) -> Result<()> {
        let values = label_felts(&self.set, self.parts, self.label_bytes, label)?;
        let locations = self.locations(hash);
        if (locations.iter()).any(|&l| self.holds_at(l, hash)) {
            return Err(Error::State("a ub-fhe insert of an item held".into()));
        }
        for location in locations {
            let stack = &mut self.stacks[location as usize];
            change_at(stack, &self.set, Change::Insert(hash, label), &values);
        }
        self.items += 1;
        Ok(())
    }

    /// Whether location `location` holds the item of hash `hash`.
    fn holds_at(&self, location: u32, hash: u128) -> bool {
        (self.stacks[location as usize].iter()).any(|c| c.items.contains(&hash))
    }

    /// Whether it holds the item of hash `hash`.
    #[cfg(test)]
    fn contains(&self, hash: u128) -> bool {
        (self.locations(hash).into_iter()).any(|l| self.holds_at(l, hash))
    }

    /// Removes the item of hash `hash`; whether it was held.
    pub fn remove(&mut self, hash: u128) -> bool {
        let found = self.at_each(Change::Remove(hash), &[]);
        self.items -= u64::from(found);
        found
    }

    /// Gives the held item of hash `hash` the sealed label `label`; whether it was held.
    pub fn relabel(&mut self, hash: u128, label: &[u8]) -> Result<bool> {
        let values = label_felts(&self.set, self.parts, self.label_bytes, Some(label))?;
        Ok(self.at_each(Change::Relabel(hash, label), &values))
    }

    /// Makes `change` (of label felts `values`) at each of its item's locations; whether
    /// any held the item.
    fn at_each(&mut self, change: Change, values: &[Vec<u32>]) -> bool {
        let mut found = false;
        for location in self.locations(change.hash()) {
            let stack = &mut self.stacks[location as usize];
            found |= change_at(stack, &self.set, change, values);
        }
        found
    }

    /// Makes `changes` in order, each location's share on the current rayon pool (the
    /// locations change independently, as in [`Database::build`]): the database the
    /// changes one by one make. Refused where a label is of another size (before any
    /// change), or a remove or relabel finds its item not held, or an insert finds it held
    /// (the database then part-changed: a caller drops it).
    pub fn apply(&mut self, changes: &[Change]) -> Result<()> {
        let (set, parts, bytes) = (&self.set, self.parts, self.label_bytes);
        let values = (changes.par_iter())
            .map(|change| match *change {
                Change::Remove(_) => Ok(Vec::new()),
                Change::Relabel(_, label) => label_felts(set, parts, bytes, Some(label)),
                Change::Insert(_, label) => label_felts(set, parts, bytes, label),
            })
            .collect::<Result<Vec<_>>>()?;
        let at = self.by_location(&changes.iter().map(Change::hash).collect::<Vec<_>>());
        // An item is at all of its locations or none: a change that fails at one fails
        // at every one.
        let failed = (self.stacks.par_iter_mut().zip(at))
            .map(|(stack, mine)| {
                (mine.into_iter()).find(|&c| {
                    let c = c as usize;
                    !change_at(stack, set, changes[c], &values[c])
                })
            })
            .flatten()
            .min();
        if let Some(c) = failed {
            let what = match changes[c as usize] {
                Change::Remove(_) => "removes an item not held",
                Change::Relabel(..) => "relabels an item not held",
                Change::Insert(..) => "inserts an item held",
            };
            return Err(Error::State(format!("a ub-fhe update {what}")));
        }
        for change in changes {
            match change {
                Change::Remove(_) => self.items -= 1,
                Change::Insert(..) => self.items += 1,
                Change::Relabel(..) => {}
            }
        }
        Ok(())
    }

    /// Bundle `bundle` of index `index`, whose polynomials' plaintexts a query's
    /// evaluation takes as it goes ([`Bundle::plaintexts`]).
    pub fn bundle(&self, index: u32, bundle: usize) -> Result<Bundle<'_>> {
        if bundle >= self.bundles(index) {
            return Err(Error::Usage(format!("no bundle {bundle} of index {index}")));
        }
        let columns = self.set.columns() as usize;
        let stacks = &self.stacks[index as usize * columns..][..columns];
        let columns: Vec<Option<&Column>> = (stacks.iter())
            .map(|s| s.get(bundle).map(|c| &**c))
            .collect();
        Ok(Bundle {
            db: self,
            at: (index, bundle),
            versions: (columns.iter())
                .map(|c| c.map_or(0, |c| c.version))
                .collect(),
            columns,
        })
    }

    /// Makes the plaintexts its queries take, bundle by bundle in index order, each
    /// polynomial's blocks as an evaluation asks for them, while the next block would be
    /// kept (it is, or its old version's buffers are, or the budget has room) and `stop`
    /// says not to stop: what a server does after a load or a publish, so that no
    /// client's query pays for them (the first fill of fresh memory costs more than the
    /// encoding).
    pub fn warm(&self, tensor: &Tensor, stop: &dyn Fn() -> bool) -> Result<()> {
        let set = &self.set;
        let per_plaintext = set.plaintext_bytes() / (u64::from(set.degree) + 1);
        for index in 0..set.indices {
            for b in 0..self.bundles(index) {
                let bundle = self.bundle(index, b)?;
                for p in 0..bundle.polynomials() {
                    for js in polynomial::blocks(bundle.degree(p), set.low) {
                        let bytes = js.len() as u64 * per_plaintext;
                        if stop() || !self.kept.fits(bundle.at, (p, js.start), bytes) {
                            return Ok(());
                        }
                        bundle.plaintexts(p, js, tensor)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The polynomials' low degree and the powers evaluating them needs.
    pub fn targets(&self) -> Vec<u32> {
        polynomial::targets(self.set.degree, self.set.low)
    }

    /// Its bytes, for a server to keep (read back by [`Database::from_bytes`]): the
    /// item and location counts and the sealed label's bytes, then per location its
    /// columns, each its items (u128) and every polynomial after its length.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new()
            .bytes(DATABASE_MAGIC)
            .u64(self.items)
            .u32(self.label_bytes as u32)
            .u32(self.stacks.len() as u32);
        for stack in &self.stacks {
            w = w.u32(stack.len() as u32);
            for column in stack {
                w = w.u32(column.items.len() as u32);
                for &item in &column.items {
                    w = w.bytes(&item.to_le_bytes());
                }
                for poly in column.polys.iter().chain(column.labels.iter().flatten()) {
                    w = w.u32(poly.len() as u32);
                    for &c in poly {
                        w = w.u32(c);
                    }
                }
            }
        }
        w.0
    }

    /// The database of `set` (locations by `seed`) whose bytes are `bytes`, its sealed
    /// labels of `label_bytes` if its items carry labels: refused unless they read as
    /// [`Database::to_bytes`] writes them, every shape in the set's bounds and every
    /// coefficient below t (a server's own file, hash-checked by its caller: this keeps
    /// a damaged one from answering wrongly).
    pub fn from_bytes(
        set: FheSet,
        seed: Block,
        label_bytes: Option<usize>,
        bytes: &[u8],
    ) -> Result<Database> {
        let mut db = Database::new(set, seed, label_bytes);
        let mut r = Reader::new(bytes, "a ub-fhe database");
        let bad = |why: String| Error::protocol("a ub-fhe database of this dataset", why);
        if r.bytes(DATABASE_MAGIC.len())? != DATABASE_MAGIC {
            return Err(bad("another file".into()));
        }
        let (items, label_bytes, locations) = (r.u64()?, r.u32()? as usize, r.u32()? as usize);
        if label_bytes != db.label_bytes || locations != db.stacks.len() {
            return Err(bad(format!(
                "labels of {label_bytes} bytes, {locations} locations"
            )));
        }
        let (t, f, d) = (
            db.set.bfv.plain as u32,
            usize::from(db.set.felts),
            db.set.degree as usize,
        );
        let (mut held, parts) = (0u64, db.parts);
        for stack in &mut db.stacks {
            let columns = r.u32()? as usize;
            if columns > MAX_BUNDLES {
                return Err(bad(format!("{columns} bundles at a location")));
            }
            for _ in 0..columns {
                let k = r.u32()? as usize;
                if k > d {
                    return Err(bad(format!("a column of {k} items")));
                }
                let items = (0..k)
                    .map(|_| Ok(u128::from_le_bytes(r.array()?)))
                    .collect::<Result<Vec<_>>>()?;
                let mut poly = |want: usize| -> Result<Vec<u32>> {
                    let len = r.u32()? as usize;
                    if len != want {
                        return Err(bad(format!("a polynomial of {len} coefficients")));
                    }
                    let coefficients = (0..len).map(|_| r.u32()).collect::<Result<Vec<_>>>()?;
                    match coefficients.iter().all(|&c| c < t) {
                        true => Ok(coefficients),
                        false => Err(bad("a coefficient not below t".into())),
                    }
                };
                let polys = (0..f).map(|_| poly(k + 1)).collect::<Result<Vec<_>>>()?;
                let labels = (0..parts)
                    .map(|_| (0..f).map(|_| poly(k)).collect::<Result<Vec<_>>>())
                    .collect::<Result<Vec<_>>>()?;
                held += k as u64;
                stack.push(Arc::new(Column {
                    items,
                    polys,
                    labels,
                    version: fresh_version(),
                }));
            }
        }
        r.finish()?;
        // Each item sits at each of its distinct locations.
        let counted = (db.stacks.iter().enumerate()).try_fold(0u64, |sum, (l, stack)| {
            let mut sum = sum;
            for item in stack.iter().flat_map(|c| &c.items) {
                let at = db.locations(*item);
                if at.binary_search(&(l as u32)).is_err() {
                    return Err(bad("an item away from its locations".into()));
                }
                sum += (at.first() == Some(&(l as u32))) as u64;
            }
            Ok(sum)
        })?;
        if counted != items || held < items {
            return Err(bad(format!("{items} items where {counted} are held")));
        }
        db.items = items;
        Ok(db)
    }
}

/// A database's bytes begin so.
const DATABASE_MAGIC: &[u8] = b"venn ub-fhe db 1";

/// The most bundles a location's stack may hold in a database read back: a set's most
/// items, each at one location, fill at most this many at d a column for any of Venn's
/// sets (2^29 items / d = 4,000: 134,218).
const MAX_BUNDLES: usize = 1 << 18;

/// A bundle of a [`Database`]: its columns (none where a location has fewer bundles),
/// whose bins' polynomials are the plaintexts' slots (CLR17 §4).
pub struct Bundle<'a> {
    db: &'a Database,
    /// Its index and number.
    at: (u32, usize),
    columns: Vec<Option<&'a Column>>,
    /// Its columns' versions (0 where it has none).
    versions: Vec<u64>,
}

impl Bundle<'_> {
    /// Its polynomials: the matching polynomial, then each label part's (1 + P).
    pub fn polynomials(&self) -> usize {
        1 + self.db.parts
    }

    /// The degree of polynomial `p`: d for the matching one (monic, d + 1 coefficients),
    /// d − 1 for a label part's.
    pub fn degree(&self, p: usize) -> u32 {
        self.db.set.degree - u32::from(p > 0)
    }

    /// Plaintexts `js` of polynomial `p` (of [`Bundle::polynomials`]) for products by
    /// `tensor`: those its database's lineage keeps where they are current, else the
    /// bundle's slots encoded (and kept where the budget has room).
    pub fn plaintexts(
        &self,
        p: usize,
        js: Range<usize>,
        tensor: &Tensor,
    ) -> Result<Arc<Vec<Encoded>>> {
        let make = |spare: Vec<Encoded>| {
            let mut buffers = spare.into_iter().map(Encoded::into_buffer);
            (self.slots(p, js.clone()).iter())
                .map(|s| tensor.encode_reusing(s, buffers.next().unwrap_or_default()))
                .collect()
        };
        self.db
            .kept
            .block(self.at, &self.versions, (p, js.clone()), make)
    }

    /// The slots of plaintexts `js` of polynomial `p` (of [`Bundle::polynomials`]): every
    /// bin's coefficients j ∈ `js`, 0 past its degree. A slot of no column — past the
    /// columns, or a column this bundle lacks — holds the matching polynomial 1, which no
    /// x makes 0, and label polynomials 0. Each bin is read once, its coefficients in
    /// order.
    fn slots(&self, p: usize, js: Range<usize>) -> Vec<Vec<u64>> {
        let f = usize::from(self.db.set.felts);
        let mut slots: Vec<Vec<u64>> = (js.clone())
            .map(|j| vec![u64::from(p == 0 && j == 0); self.db.set.bfv.degree])
            .collect();
        for (c, column) in self.columns.iter().enumerate() {
            let Some(column) = column else { continue };
            for k in 0..f {
                let bin = match p {
                    0 => &column.polys[k],
                    p => &column.labels[p - 1][k],
                };
                let held = bin.get(js.start..js.end.min(bin.len())).unwrap_or_default();
                for (plaintext, &v) in slots.iter_mut().zip(held) {
                    plaintext[f * c + k] = u64::from(v);
                }
                for plaintext in slots.iter_mut().skip(held.len()) {
                    plaintext[f * c + k] = 0;
                }
            }
        }
        slots
    }
}

/// A column holding nothing: f matching polynomials 1, and P empty label polynomials each.
fn empty_column(set: &FheSet, parts: usize) -> Column {
    let f = usize::from(set.felts);
    Column {
        items: Vec::new(),
        polys: vec![vec![1]; f],
        labels: vec![vec![Vec::new(); f]; parts],
        version: fresh_version(),
    }
}

/// The label felts of `label` (a sealed label of `bytes` bytes, in a database of `parts`
/// label parts; none where it has none), part by part.
fn label_felts(
    set: &FheSet,
    parts: usize,
    bytes: usize,
    label: Option<&[u8]>,
) -> Result<Vec<Vec<u32>>> {
    match (label, parts) {
        (None, 0) => Ok(Vec::new()),
        (Some(label), _) if parts > 0 && label.len() == bytes => Ok(set.label_felts(label, parts)),
        _ => Err(Error::Usage(format!(
            "a label of {} bytes where the database's are {bytes}",
            label.map_or(0, <[u8]>::len),
        ))),
    }
}

/// Adds the item of `hash` (label felts `values`) to the first column of `stack` (a
/// location's, bundle by bundle) with room — fewer than d items and, labeled, none of its
/// felts a root already — or to a new one.
fn add_to(stack: &mut Vec<Arc<Column>>, set: &FheSet, hash: u128, values: &[Vec<u32>]) {
    let t = set.bfv.plain as u32;
    let felts: Vec<u32> = set.felts_of(hash).collect();
    let (degree, parts) = (set.degree as usize, values.len());
    let fits = |c: &Column| {
        c.items.len() < degree
            && (parts == 0 || felts.iter().zip(&c.polys).all(|(&a, m)| eval(m, a, t) != 0))
    };
    let at = match stack.iter().position(|c| fits(c)) {
        Some(at) => at,
        None => {
            stack.push(Arc::new(empty_column(set, parts)));
            stack.len() - 1
        }
    };
    let column = edit(&mut stack[at]);
    column.items.push(hash);
    for (k, &a) in felts.iter().enumerate() {
        if parts > 0 {
            let inverse = inverse_at(&column.polys[k], a, t);
            for (p, part) in column.labels.iter_mut().enumerate() {
                let c = correction(&part[k], inverse, a, values[p][k], t);
                add_multiple(&mut part[k], c, &column.polys[k], t);
            }
        }
        with_root(&mut column.polys[k], a, t);
    }
}

/// One change of a database ([`Database::apply`]): an item by its hash, with its sealed
/// label where the database's items carry labels.
#[derive(Clone, Copy, Debug)]
pub enum Change<'a> {
    /// The item removed.
    Remove(u128),
    /// The item given a new label.
    Relabel(u128, &'a [u8]),
    /// The item added.
    Insert(u128, Option<&'a [u8]>),
}

impl Change<'_> {
    /// The hash of its item.
    fn hash(&self) -> u128 {
        match *self {
            Change::Remove(hash) | Change::Relabel(hash, _) | Change::Insert(hash, _) => hash,
        }
    }
}

/// Makes `change` (its label felts `values`) at one of its item's locations, `stack`:
/// whether it could — a remove or relabel finding the item there, an insert not.
fn change_at(
    stack: &mut Vec<Arc<Column>>,
    set: &FheSet,
    change: Change,
    values: &[Vec<u32>],
) -> bool {
    let t = set.bfv.plain as u32;
    let hash = change.hash();
    let held = stack.iter().position(|c| c.items.contains(&hash));
    let column = match (change, held) {
        (Change::Insert(..), None) => {
            add_to(stack, set, hash, values);
            return true;
        }
        (Change::Insert(..), Some(_)) | (_, None) => return false,
        (_, Some(at)) => edit(&mut stack[at]),
    };
    let felts: Vec<u32> = set.felts_of(hash).collect();
    for (k, &a) in felts.iter().enumerate() {
        if let Change::Remove(_) = change {
            without_root(&mut column.polys[k], a, t);
            for part in &mut column.labels {
                let top = part[k].last().copied().unwrap_or(0);
                add_multiple(&mut part[k], sub_mod(0, top, t), &column.polys[k], t);
                part[k].pop();
            }
            continue;
        }
        // A relabel: (v′ − L(a))·M_a(x)/M_a(a), M_a = M/(x − a).
        let mut others = column.polys[k].clone();
        without_root(&mut others, a, t);
        let inverse = inverse_at(&others, a, t);
        for (p, part) in column.labels.iter_mut().enumerate() {
            let c = correction(&part[k], inverse, a, values[p][k], t);
            add_multiple(&mut part[k], c, &others, t);
        }
    }
    if let Change::Remove(_) = change {
        column.items.retain(|&h| h != hash);
    }
    true
}

/// The distinct locations, among `set`'s, of an item's hash under `hash`'s functions:
/// the first H of its cuckoo bins.
pub(crate) fn locations(hash: &CuckooHash, set: &FheSet, item: u128) -> Vec<u32> {
    let mut bins = Vec::with_capacity(1);
    hash.bins_of(&[Block::from_u128(item)], &mut bins);
    let mut out: Vec<u32> = bins[0][..usize::from(set.hashes)].to_vec();
    out.sort_unstable();
    out.dedup();
    out
}

/// Random hashes, for tests.
#[cfg(test)]
pub(crate) fn random_hashes(count: usize, prg: &mut Prg) -> Vec<u128> {
    (0..count).map(|_| prg.block().as_u128()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Polynomials grown root by root and shrunk by synthetic division are those of
    /// their roots: zero exactly there.
    #[test]
    fn roots_come_and_go() {
        let t = 65537u32;
        let mut prg = Prg::from_seed(Block::from(5));
        let roots: Vec<u32> = (0..40).map(|_| prg.below(u64::from(t)) as u32).collect();
        let mut poly = vec![1u32];
        roots.iter().for_each(|&r| with_root(&mut poly, r, t));
        let eval = |poly: &[u32], x: u32| {
            poly.iter().rev().fold(0u32, |acc, &c| {
                ((u64::from(mul_mod(acc, x, t)) + u64::from(c)) % u64::from(t)) as u32
            })
        };
        assert!(roots.iter().all(|&r| eval(&poly, r) == 0));
        for &r in &roots[..30] {
            without_root(&mut poly, r, t);
        }
        assert_eq!(poly.len(), 11);
        assert!(roots[30..].iter().all(|&r| eval(&poly, r) == 0));
        let mut fresh = vec![1u32];
        roots[30..]
            .iter()
            .for_each(|&r| with_root(&mut fresh, r, t));
        assert_eq!(poly, fresh);
    }

    /// Shoup's multiplication and the additions agree with the division's, for every
    /// set's modulus t and the largest t they allow (2^31 − 1), at the edges (0, 1, t − 1)
    /// and between.
    #[test]
    fn shoup_products_are_the_divisions() {
        let mut prg = Prg::from_seed(Block::from(4));
        let mut moduli: Vec<u32> = (crate::unbalanced::fhe::params::sets().iter())
            .map(|set| set.bfv.plain as u32)
            .collect();
        moduli.dedup();
        for t in moduli.into_iter().chain([(1 << 31) - 1]) {
            let mut values: Vec<u32> = vec![0, 1, t - 1, t - 2];
            values.extend((0..200).map(|_| prg.below(u64::from(t)) as u32));
            for &w in &values {
                let times = Times::new(w, t);
                for &x in &values {
                    assert_eq!(times.of(x), mul_mod(w, x, t), "{w} · {x} mod {t}");
                    assert_eq!(
                        add_mod(w, x, t),
                        ((u64::from(w) + u64::from(x)) % u64::from(t)) as u32
                    );
                    assert_eq!(
                        sub_mod(w, x, t),
                        ((u64::from(w) + u64::from(t - x)) % u64::from(t)) as u32
                    );
                }
            }
        }
    }

    /// A database built in parallel holds what inserting the items one by one makes,
    /// labels included; a label count other than the items' is refused. A clone changed
    /// leaves the database it came from as it was, sharing the columns it did not touch.
    #[test]
    fn a_build_is_its_inserts() {
        let set = crate::unbalanced::fhe::query::tests::small_set();
        let mut prg = Prg::from_seed(Block::from(6));
        let hashes = random_hashes(20_000, &mut prg);
        let labels: Vec<Vec<u8>> = (0..hashes.len()).map(|i| vec![i as u8; 9]).collect();
        let refs: Vec<&[u8]> = labels.iter().map(Vec::as_slice).collect();
        let built = Database::build(set.clone(), Block::from(8), &hashes, Some((&refs, 9)));
        let built = built.unwrap();
        let mut one_by_one = Database::new(set.clone(), Block::from(8), Some(9));
        for (&h, label) in hashes.iter().zip(&refs) {
            one_by_one.insert(h, Some(label)).unwrap();
        }
        assert!(built.stacks == one_by_one.stacks && built.len() == one_by_one.len());
        assert!(built.bundles(0) >= 2, "{} bundles", built.bundles(0));
        let mut changed = built.clone();
        assert!(changed.remove(hashes[0]) && changed.contains(hashes[1]));
        assert!(!changed.contains(hashes[0]) && built.contains(hashes[0]));
        assert!(built.stacks == one_by_one.stacks && changed.stacks != built.stacks);
        let columns = |db: &Database| -> Vec<Arc<Column>> { db.stacks.concat() };
        let shared = (columns(&built).iter().zip(columns(&changed)))
            .filter(|(a, b)| Arc::ptr_eq(a, b))
            .count();
        let touched = changed.locations(hashes[0]).len();
        assert_eq!(shared, columns(&built).len() - touched);
        let short = Database::build(set, Block::from(8), &hashes, Some((&refs[1..], 9)));
        assert!(short.is_err());
    }

    /// A batch of changes — removes, relabels, inserts, one item removed and inserted
    /// again with another label — makes the database the same changes one by one make;
    /// a batch removing an item not held, relabelling one not held, inserting one held
    /// or with a label of another size is refused.
    #[test]
    fn a_batch_is_its_changes_one_by_one() {
        let set = crate::unbalanced::fhe::query::tests::small_set();
        let mut prg = Prg::from_seed(Block::from(9));
        let hashes = random_hashes(6_000, &mut prg);
        let label = |i: usize, round: u8| vec![i as u8 ^ round; 9];
        let labels: Vec<Vec<u8>> = (0..hashes.len()).map(|i| label(i, 0)).collect();
        let refs: Vec<&[u8]> = labels.iter().map(Vec::as_slice).collect();
        let base = Database::build(set.clone(), Block::from(8), &hashes, Some((&refs, 9)));
        let base = base.unwrap();
        let fresh = random_hashes(300, &mut prg);
        let (new, again) = (label(1, 7), label(2, 9));
        let changes: Vec<Change> = (hashes[..200].iter().map(|&h| Change::Remove(h)))
            .chain(hashes[200..400].iter().map(|&h| Change::Relabel(h, &new)))
            .chain(fresh.iter().map(|&h| Change::Insert(h, Some(&new))))
            .chain([Change::Insert(hashes[0], Some(&again))])
            .collect();
        let mut batched = base.clone();
        batched.apply(&changes).unwrap();
        let mut one_by_one = base.clone();
        for change in &changes {
            match *change {
                Change::Remove(h) => assert!(one_by_one.remove(h)),
                Change::Relabel(h, l) => assert!(one_by_one.relabel(h, l).unwrap()),
                Change::Insert(h, l) => one_by_one.insert(h, l).unwrap(),
            }
        }
        assert!(batched.stacks == one_by_one.stacks);
        assert_eq!(batched.len(), 6_000 - 200 + 300 + 1);
        assert!(batched.contains(hashes[0]) && !batched.contains(hashes[1]));
        for refused in [
            vec![
                Change::Remove(fresh[0]),
                Change::Remove(random_hashes(1, &mut prg)[0]),
            ],
            vec![Change::Relabel(hashes[1], &new)],
            vec![Change::Insert(hashes[500], Some(&new))],
            vec![Change::Insert(
                random_hashes(1, &mut prg)[0],
                Some(&new[..8]),
            )],
        ] {
            let mut db = batched.clone();
            assert!(db.apply(&refused).is_err(), "{refused:?}");
        }
    }
}
