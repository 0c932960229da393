//! The coordinator's last step: joining the answers of a run's tasks into each side's
//! matched positions (spec A.3 for two parties, A.5 for three).

use crate::api::VALUE_BYTES;
use crate::crypto::DIGEST_BYTES;
use crate::error::{Error, Result};
use crate::store::{blocking, write_atomically, Store};
use blstrs::Gt;
use group::Group;
use rayon::prelude::*;
use std::path::PathBuf;

/// Joins a run whose tasks are all done: writes each side's result file, marks the run
/// done, removes the answers.
pub async fn join(store: &Store, run: &str) -> Result<()> {
    let datasets = store.run_datasets(run).await?;
    let mut answers: Vec<Vec<(PathBuf, u64)>> = Vec::with_capacity(datasets.len());
    for (side, d) in datasets.iter().enumerate() {
        let chunks = store.chunks(d).await?;
        answers.push(
            chunks
                .iter()
                .enumerate()
                .map(|(k, c)| (store.answer_path(run, side as u64, k as u64), c.0))
                .collect(),
        );
    }
    let results: Vec<PathBuf> = (0..datasets.len())
        .map(|side| store.result_path(run, side as u64))
        .collect();
    let files: Vec<PathBuf> = answers.iter().flatten().map(|a| a.0.clone()).collect();
    let matches = blocking(move || {
        let matched = if answers.len() == 2 {
            let a = read_answers(&answers[0], DIGEST_BYTES)?;
            let b = read_answers(&answers[1], DIGEST_BYTES)?;
            join_two(&a, &b).to_vec()
        } else {
            let sides = answers
                .iter()
                .map(|s| values(&read_answers(s, VALUE_BYTES)?))
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
    store.finish(run, matches).await?;
    for f in files {
        let _ = std::fs::remove_file(f);
    }
    Ok(())
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
            )));
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
                .ok_or_else(|| Error::Internal("an answer holds no paired value".into()))
        })
        .collect()
}

/// A value's fingerprint: the low limb of one coordinate. Only the first of the twelve
/// Fp coefficients, which the inverse (a conjugation) leaves alone, so a·b and its inverse
/// have the same fingerprint.
fn fingerprint(g: &Gt) -> u64 {
    // blst keeps field elements fully reduced in Montgomery form and compares them by
    // their bytes, so the limbs are a canonical encoding.
    crate::crypto::gt_limbs(g).fp6[0].fp2[0].fp[0].l[0]
}

/// Each side's positions of the triples whose values multiply to 1 (spec A.5): every
/// pair of the first two sides against a fingerprint table of the third, n_1·n_2 products
/// in all (a 3SUM in a group without structure: no faster way is known).
pub fn join_three(a: &[Gt], b: &[Gt], c: &[Gt]) -> [Vec<u32>; 3] {
    let mut table: hashbrown::HashMap<u64, Vec<u32>> = hashbrown::HashMap::new();
    for (k, v) in c.iter().enumerate() {
        table.entry(fingerprint(v)).or_default().push(k as u32);
    }
    let triples: Vec<[u32; 3]> = a
        .par_iter()
        .enumerate()
        .flat_map_iter(|(i, x)| {
            let table = &table;
            b.iter().enumerate().flat_map(move |(j, y)| {
                let xy = x + y;
                table
                    .get(&fingerprint(&xy))
                    .into_iter()
                    .flatten()
                    .filter(move |&&k| bool::from((xy + c[k as usize]).is_identity()))
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
    use crate::crypto::{self, encrypt, token, value, PreparedToken, Secret};
    use venn::Items;

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
