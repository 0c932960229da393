//! The coordinator's last step: joining the answers of a run's tasks into each side's
//! matched positions (docs/cloud.md: Runs; Pre-tokens for a preprocessed run; Three
//! parties).

use crate::error::Result;
use crate::store::{blocking, raised_side, write_atomically, Store};
use blst::{blst_fp, blst_fp_add, blst_fp_mul, blst_fp_sub};
use blstrs::Gt;
use group::Group;
use rayon::prelude::*;
use std::path::PathBuf;
use venn_cloud::api::{answer_width, RunKind, VALUE_BYTES};
use venn_cloud::crypto::{DIGEST_BYTES, PRECOMPUTED_BYTES};
use venn_cloud::Error;

/// Joins a run whose tasks are all done: writes each side's result file, marks the run
/// done, removes the answers (and a preprocessed run's pre-tokens' values). A pre-token's
/// run has nothing to join: its answers are kept as the pre-token's values.
pub async fn join(store: &Store, run: &str) -> Result<()> {
    let r = store.run(run).await?;
    if r.kind == RunKind::Precompute {
        return store.finish(run, None).await;
    }
    let datasets = store.run_datasets(run).await?;
    let pretokens = store.run_pretokens(run).await?;
    let mut inputs: Vec<Input> = Vec::with_capacity(datasets.len());
    // The run's own answers, removed once joined.
    let mut own: Vec<PathBuf> = Vec::new();
    for (side, d) in datasets.iter().enumerate() {
        let chunks = store.chunks(d).await?;
        // The larger side of a preprocessed run: its digests were precomputed.
        let target = r.kind == RunKind::Preprocessed
            && side as u64 != raised_side([r.sides[0].items, r.sides[1].items]);
        let (answers, width) = match target {
            true => (Some(&pretokens[side]), PRECOMPUTED_BYTES),
            false => (None, answer_width(r.sides.len() as u64)),
        };
        inputs.push(Input {
            files: (0..chunks.len() as u64)
                .zip(&chunks)
                .map(|(k, c)| {
                    let path = match answers {
                        Some(p) => store.answer_path(p, 0, k),
                        None => store.answer_path(run, side as u64, k),
                    };
                    (path, c.items)
                })
                .collect(),
            width,
        });
        if !target {
            own.extend(inputs[side].files.iter().map(|f| f.0.clone()));
        }
    }
    let results: Vec<PathBuf> = (0..datasets.len())
        .map(|side| store.result_path(run, side as u64))
        .collect();
    let matches = blocking(move || {
        let matched = if inputs.len() == 2 {
            let [a, b] = [&inputs[0], &inputs[1]].map(Input::digests);
            join_two(&a?, &b?).to_vec()
        } else {
            let sides = inputs
                .iter()
                .map(|s| values(&s.read()?))
                .collect::<Result<Vec<_>>>()?;
            join_three(&sides[0], &sides[1], &sides[2]).to_vec()
        };
        for (path, positions) in results.iter().zip(&matched) {
            let bytes: Vec<u8> = positions.iter().flat_map(|p| p.to_le_bytes()).collect();
            write_atomically(path, &bytes)?;
        }
        Ok(matched[0].len() as u64)
    })
    .await?;
    store.finish(run, Some(matches)).await?;
    for p in &pretokens {
        store.remove_files(p)?;
    }
    for f in own {
        let _ = std::fs::remove_file(f);
    }
    Ok(())
}

/// One side's answers: a file per chunk with its items, `width` bytes each.
struct Input {
    files: Vec<(PathBuf, u64)>,
    width: usize,
}

impl Input {
    /// The answers in position order.
    fn read(&self) -> Result<Vec<u8>> {
        read_answers(&self.files, self.width)
    }

    /// The digests in position order: the answers, or the digests at the end of
    /// precomputed items (taken a file at a time: the values are 36× their size).
    fn digests(&self) -> Result<Vec<u8>> {
        if self.width == DIGEST_BYTES {
            return self.read();
        }
        let total: u64 = self.files.iter().map(|c| c.1).sum();
        let mut out = Vec::with_capacity(total as usize * DIGEST_BYTES);
        for file in &self.files {
            let bytes = read_answers(std::slice::from_ref(file), self.width)?;
            let items = bytes.chunks_exact(self.width);
            out.extend(items.flat_map(|item| &item[self.width - DIGEST_BYTES..]));
        }
        Ok(out)
    }
}

/// A side's answers in position order, `width` bytes each.
fn read_answers(chunks: &[(PathBuf, u64)], width: usize) -> Result<Vec<u8>> {
    let total: u64 = chunks.iter().map(|c| c.1).sum();
    let mut out = Vec::with_capacity(total as usize * width);
    for (path, items) in chunks {
        let bytes = std::fs::read(path)?;
        if bytes.len() != *items as usize * width {
            return Err(Error::Internal(format!(
                "the answer '{}' has {} bytes for {items} items",
                path.display(),
                bytes.len()
            ))
            .into());
        }
        out.extend_from_slice(&bytes);
    }
    Ok(out)
}

/// Each side's positions of the items whose digests both sides have (sorted): a hash
/// table of the smaller side, probed with the larger.
pub fn join_two(a: &[u8], b: &[u8]) -> [Vec<u32>; 2] {
    let key = |d: &[u8]| u128::from_le_bytes(d.try_into().expect("16 bytes"));
    let (small, large, swapped) = if a.len() <= b.len() {
        (a, b, false)
    } else {
        (b, a, true)
    };
    let table: hashbrown::HashMap<u128, u32> = small
        .chunks_exact(DIGEST_BYTES)
        .enumerate()
        .map(|(i, d)| (key(d), i as u32))
        .collect();
    let mut pairs: Vec<(u32, u32)> = large
        .chunks_exact(DIGEST_BYTES)
        .enumerate()
        .filter_map(|(j, d)| table.get(&key(d)).map(|&i| (i, j as u32)))
        .collect();
    if swapped {
        pairs.iter_mut().for_each(|p| *p = (p.1, p.0));
    }
    sides_of(pairs.iter().map(|&(x, y)| [x, y]))
}

/// Paired values from their 288-byte encodings (checked: in the target group).
fn values(bytes: &[u8]) -> Result<Vec<Gt>> {
    use blstrs::Compress;
    bytes
        .par_chunks_exact(VALUE_BYTES)
        .map(|v| {
            Gt::read_compressed(v)
                .ok()
                .filter(|g| !bool::from(g.is_identity()))
                .ok_or_else(|| Error::Internal("an answer holds no paired value".into()).into())
        })
        .collect()
}

/// A value's fingerprint: the low limb of one coordinate. Only the first of the twelve
/// Fp coefficients, which the inverse (a conjugation) leaves alone, so a·b and its inverse
/// have the same fingerprint.
fn fingerprint(g: &Gt) -> u64 {
    // blst keeps field elements fully reduced in Montgomery form and compares them by
    // their bytes, so the limbs are a canonical encoding.
    venn_cloud::crypto::gt_limbs(g).fp6[0].fp2[0].fp[0].l[0]
}

/// The weights of the bilinear form that gives `fingerprint(x·y)` from `y`'s twelve F_p
/// coefficients (in blst's order, `fp6[i].fp2[j].fp[k]` at 6i + 2j + k). The fingerprint's
/// coefficient is the real part of (x·y)'s first F_p2 coefficient, which is
/// `x00·y00 + ξ·(x01·y02 + x02·y01 + x10·y12 + x11·y11 + x12·y10)` (ξ = u + 1; w² = v,
/// v³ = ξ), and `Re(ξ·a·b) = b_0·(a_0 − a_1) − b_1·(a_0 + a_1)`. So for each x the
/// quadratic loop spends 12 F_p products on a y, not a whole F_p12 product (54).
fn weights(x: &Gt) -> [blst_fp; 12] {
    let x = venn_cloud::crypto::gt_limbs(x);
    let at = |i: usize, j: usize| &x.fp6[i].fp2[j].fp;
    let (add, sub, neg) = (fp(blst_fp_add), fp(blst_fp_sub), |a: &blst_fp| {
        let mut out = blst_fp::default();
        // SAFETY: one element in, one out.
        unsafe { blst::blst_fp_cneg(&mut out, a, true) };
        out
    });
    let mut w = [blst_fp::default(); 12];
    let [a0, a1] = at(0, 0);
    (w[0], w[1]) = (*a0, neg(a1));
    for ((i, j), b) in [
        ((0, 1), 4),
        ((0, 2), 2),
        ((1, 0), 10),
        ((1, 1), 8),
        ((1, 2), 6),
    ] {
        let [a0, a1] = at(i, j);
        (w[b], w[b + 1]) = (sub(a0, a1), neg(&add(a0, a1)));
    }
    w
}

/// A binary F_p operation of blst as a function.
fn fp(
    op: unsafe extern "C" fn(*mut blst_fp, *const blst_fp, *const blst_fp),
) -> impl Fn(&blst_fp, &blst_fp) -> blst_fp {
    move |a, b| {
        let mut out = blst_fp::default();
        // SAFETY: two elements in, one out.
        unsafe { op(&mut out, a, b) };
        out
    }
}

/// `fingerprint(x·y)` from x's [`weights`].
fn product_fingerprint(weights: &[blst_fp; 12], y: &Gt) -> u64 {
    let y = venn_cloud::crypto::gt_limbs(y);
    let (add, mul) = (fp(blst_fp_add), fp(blst_fp_mul));
    let coefficients = y.fp6.iter().flat_map(|c| &c.fp2).flat_map(|c| &c.fp);
    let sum = weights
        .iter()
        .zip(coefficients)
        .fold(blst_fp::default(), |sum, (w, c)| add(&sum, &mul(w, c)));
    sum.l[0]
}

/// Each side's positions of the triples whose values multiply to 1 (docs/cloud.md):
/// every pair of the first two sides against a fingerprint table of the third, n_1·n_2
/// fingerprints of products in all (a 3SUM in a group without structure: no faster way is
/// known); a product is computed whole only where its fingerprint is in the table.
pub fn join_three(a: &[Gt], b: &[Gt], c: &[Gt]) -> [Vec<u32>; 3] {
    let mut table: hashbrown::HashMap<u64, Vec<u32>> = hashbrown::HashMap::new();
    for (k, v) in c.iter().enumerate() {
        table.entry(fingerprint(v)).or_default().push(k as u32);
    }
    let triples: Vec<[u32; 3]> = a
        .par_iter()
        .enumerate()
        .flat_map_iter(|(i, x)| {
            let (table, w) = (&table, weights(x));
            b.iter().enumerate().flat_map(move |(j, y)| {
                table
                    .get(&product_fingerprint(&w, y))
                    .into_iter()
                    .flatten()
                    .filter(move |&&k| bool::from((x + y + c[k as usize]).is_identity()))
                    .map(move |&k| [i as u32, j as u32, k])
            })
        })
        .collect();
    sides_of(triples.into_iter())
}

/// The sorted positions of each side in a list of matched tuples.
fn sides_of<const N: usize>(tuples: impl Iterator<Item = [u32; N]>) -> [Vec<u32>; N] {
    let mut sides: [Vec<u32>; N] = std::array::from_fn(|_| Vec::new());
    for t in tuples {
        for (side, &p) in sides.iter_mut().zip(&t) {
            side.push(p);
        }
    }
    for s in &mut sides {
        s.sort_unstable();
    }
    sides
}

#[cfg(test)]
mod tests {
    use super::*;
    use venn::Items;
    use venn_cloud::crypto::{self, encrypt, token, value, PreparedToken, Secret};

    #[test]
    fn fingerprints_are_canonical_and_ignore_inversion() {
        let k = Secret::random();
        let t = PreparedToken::new(&crypto::decode_token(&token(&Secret::random(), &k)).unwrap());
        let c = encrypt(&["a", "b"].iter().collect::<Items>(), &k);
        let (x, y) = (value(&c[0], &t).unwrap(), value(&c[1], &t).unwrap());
        // The same element reached two ways.
        assert_eq!(fingerprint(&(x + y)), fingerprint(&(y + x + x - x)));
        assert_eq!(fingerprint(&(x + y)), fingerprint(&-(x + y)));
        assert_ne!(fingerprint(&x), fingerprint(&y));
        // The bilinear shortcut gives the product's fingerprint.
        for (p, q) in [
            (x, y),
            (y, x),
            (x + y, -x),
            (Gt::random(rand_core::OsRng), x),
        ] {
            assert_eq!(product_fingerprint(&weights(&p), &q), fingerprint(&(p + q)));
        }
    }

    #[test]
    fn two_sides_join_on_equal_digests() {
        let d = |xs: &[u8]| -> Vec<u8> { xs.iter().flat_map(|&x| [x; DIGEST_BYTES]).collect() };
        assert_eq!(
            join_two(&d(&[1, 2, 3, 4]), &d(&[9, 4, 1])),
            [vec![0, 3], vec![1, 2]]
        );
        assert_eq!(
            join_two(&d(&[9, 4, 1]), &d(&[1, 2, 3, 4])),
            [vec![1, 2], vec![0, 3]]
        );
        assert_eq!(join_two(&d(&[]), &d(&[1])), [Vec::<u32>::new(), vec![]]);
    }
}
