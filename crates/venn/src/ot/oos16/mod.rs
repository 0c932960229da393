//! OOS16 actively secure 1-out-of-N OT extension (Orrù–Orsini–Scholl, CT-RSA 2017) over
//! the BCH-(511, 76, 171) code: RR17's random-oracle F_encode (Fig. 2, §4 and §7). Each
//! instance j encodes one 76-bit word w_j of the receiver; the sender can then encode any
//! word in that instance, and the two encodings of w_j agree.
//!
//! On the extension core ([`ExtensionReceiver`](super::ExtensionReceiver) /
//! [`ExtensionSender`](super::ExtensionSender), 512 columns):
//! the receiver sends `u_j = T⁰_j ⊕ T¹_j ⊕ C(w_j)`; the sender gets
//! `q_j = T⁰_j ⊕ (C(w_j) ∧ Δ)`. Encodings are `⟦w⟧_j = H(j, q_j ⊕ (C(w) ∧ Δ))` for the
//! sender and `⟦w_j⟧_j = H(j, T⁰_j)` for the receiver, `H` a [`RowHash`] (index and
//! session bound in).
//!
//! **The consistency check** (OOS16 §4, as libOTe runs it): the receiver appends
//! s = λ = 40 rows for random words; only once all rows are in does the sender send a
//! seed χ, expanded to bits x_j^(l); the receiver answers, for each l,
//! `t̃ = T⁰_{N+l} ⊕ ⊕_j x_j^(l)·T⁰_j` and `w̃ = w_{N+l} ⊕ ⊕_j x_j^(l)·w_j`, and the sender
//! accepts iff `q̃ ⊕ t̃ = C(w̃) ∧ Δ` for every l (by linearity an honest receiver always
//! passes). A receiver whose rows are not `T⁰ ⊕ T¹ ⊕ C(w)` fails each repetition with
//! probability ≥ 1/2 unless it guesses bits of Δ; encoding a second word in a row would
//! need `(C(w) ⊕ C(w')) ∧ Δ`, at least d − s = 131 unknown bits of Δ. Each answer is
//! masked by its own random padding row and word, so the check tells the sender nothing
//! about the words whatever χ it picks.
//!
//! The 512 column seeds must come from a malicious-secure OT ([`OosSenderSeeds::new`],
//! [`OosReceiverSeeds::new`]: KOS15 random OTs), not from IKNP.

mod check;
mod column_seeds;
mod receiver;
mod sender;

pub use column_seeds::{OosReceiverSeeds, OosSenderSeeds};
pub use receiver::{OosEncoding, OosReceiver, Words};
pub use sender::{OosChallenge, OosIncoming, OosRows, OosSender};

use super::bch::{Codeword, CODE_BLOCKS, LENGTH};
use crate::crypto::{Block, Prg, RowDigest, RowHash};
use crate::net::Channel;
use crate::{Result, STATISTICAL_SECURITY};

/// Columns of the extension (the code's 511, rounded up to whole blocks).
pub const COLUMNS: usize = 128 * CODE_BLOCKS;
/// Repetitions of the consistency check (s = λ).
pub const CHECK_ROWS: usize = STATISTICAL_SECURITY;

const _: () = assert!(LENGTH < COLUMNS && CHECK_ROWS <= 64);

/// A row as a codeword-sized array.
fn row_of(rows: &[Block], j: usize) -> Codeword {
    rows[j * CODE_BLOCKS..(j + 1) * CODE_BLOCKS]
        .try_into()
        .expect("one row")
}

/// Both directions of a dual execution at once (RR17 Fig. 4 step 3; spec §4.3 N2 and N4,
/// "concurrently"): encodes this party's words as the receiver of one extension
/// (`encoding`) while taking the peer's instances as the sender of the other
/// (`incoming`), a batch of each in turn, so that neither party waits for the other's
/// direction; then both checks. The peer runs the same with the two extensions' roles
/// swapped. Returns this party's encodings of its words (as [`OosReceiver::encode`]) and
/// the peer's checked rows. The peer's rows are used for
/// nothing before its check has passed, and this party's words were fixed before any of
/// the peer's rows arrived.
pub fn both_ways(
    chan: &mut dyn Channel,
    mut encoding: OosEncoding,
    mut incoming: OosIncoming,
    prg: &mut Prg,
    hash: &RowHash,
) -> Result<(Vec<RowDigest>, OosRows)> {
    while !encoding.done() || !incoming.done() {
        if !encoding.done() {
            encoding.send_batch(chan)?;
        }
        if !incoming.done() {
            incoming.receive_batch(chan)?;
        }
    }
    let challenge = incoming.challenge(chan, prg)?;
    let own = encoding.prove(chan, hash)?;
    Ok((own, challenge.verify(chan)?))
}

#[cfg(test)]
mod tests {
    use super::check::Challenge;
    use super::*;
    use crate::net::{mem_pair, Reader, Writer};
    use crate::ot::bch::{Bch511, DIMENSION};
    use crate::Error;
    use std::time::Duration;

    /// Seeds for both sides without running OTs.
    fn seeds(prg: &mut Prg) -> (OosSenderSeeds, OosReceiverSeeds) {
        let (delta, keys, pairs) = super::super::seeds::test_columns(prg, COLUMNS);
        (
            OosSenderSeeds { delta, keys },
            OosReceiverSeeds { keys: pairs },
        )
    }

    fn words(prg: &mut Prg, n: usize) -> Vec<Block> {
        (0..n)
            .map(|_| prg.block() & Block::low_ones(DIMENSION))
            .collect()
    }

    fn test_hash() -> RowHash {
        RowHash::new("test", b"sid")
    }

    /// What a cheating receiver does to a chunk of its corrections (first row, rows).
    type Tamper = dyn Fn(usize, &mut [Block]) + Send + Sync;
    /// What one party of [`both_ways_run`] got: its row digests and its rows.
    type BothWays = Result<(Vec<RowDigest>, OosRows)>;

    /// Runs one direction; `cheat` may change the receiver's corrections before they are
    /// sent (it then answers the check as for its words). Returns the sender's rows and the
    /// receiver's encodings of the instances that hold a word (under [`test_hash`]).
    fn run(
        n: usize,
        receiver_words: Words,
        cheat: Option<Box<Tamper>>,
    ) -> (Result<OosRows>, Vec<RowDigest>) {
        let mut prg = Prg::from_seed(Block::from(3));
        let (s, r) = seeds(&mut prg);
        let (mut a, mut b) = mem_pair(Duration::from_secs(20));
        let t = std::thread::spawn(move || {
            let receiver = OosReceiver::new(&r);
            let mut prg = Prg::from_seed(Block::from(4));
            let (w, h) = (receiver_words, &test_hash());
            match cheat {
                None => receiver.encode(&mut b, w, &mut prg, h),
                Some(cheat) => receiver.encode_then(&mut b, w, &mut prg, h, cheat),
            }
        });
        let rows = OosSender::new(&s).receive(&mut a, n, &mut Prg::from_seed(Block::from(5)));
        drop(a);
        let encoded = t.join().unwrap();
        (rows, encoded.expect("the receiver finishes"))
    }

    #[test]
    fn both_sides_agree_on_the_receivers_words_and_only_on_them() {
        let n = 5000;
        let mut prg = Prg::from_seed(Block::from(9));
        let w = words(&mut prg, n);
        let (rows, mine) = run(n, Words::dense(w.clone()), None);
        let rows = rows.expect("an honest receiver passes the check");
        let hash = test_hash();
        for j in [0, 1, 127, 128, 4095, 4096, n - 1] {
            let mut theirs = Vec::new();
            rows.encode(
                &hash,
                j,
                1,
                &[w[j], w[j] ^ Block::ONE, w[(j + 1) % n]],
                &mut theirs,
            );
            assert_eq!(theirs[0], mine[j], "instance {j}: the receiver's word");
            assert_ne!(theirs[1], mine[j], "instance {j}: another word");
            assert_ne!(theirs[2], mine[j], "instance {j}: another word");
        }
        // The index is bound in: equal rows in two instances give different encodings.
        let mut a = Vec::new();
        hash.hash(
            &[[Block::from(7); CODE_BLOCKS]; 2],
            |e| e as u64 + 1,
            &mut a,
        );
        assert_ne!(a[0], a[1]);
        // Several instances at once: instance-major, then word.
        let mut many = Vec::new();
        rows.encode(&hash, 10, 3, &[w[10], w[11], w[12]], &mut many);
        assert_eq!([many[0], many[4], many[8]], [mine[10], mine[11], mine[12]]);
        // One word in a run of instances longer than a batch of hashes.
        let mut one = Vec::new();
        rows.encode_word(&hash, 3, 11, w[12], &mut one);
        assert_eq!(one.len(), 11);
        assert_eq!(one[9], mine[12]);
        let mut each = Vec::new();
        rows.encode(&hash, 3, 11, &[w[12]], &mut each);
        assert_eq!(one, each);
        // Rows freed from an instance on give their memory back and leave the others as
        // they were.
        let mut rows = rows;
        rows.release(n + 1);
        assert_eq!(rows.len(), n);
        rows.release(4097);
        assert_eq!(rows.len(), 4097);
        assert_eq!(rows.q.capacity(), 4097 * CODE_BLOCKS);
        for j in [0, 4095, 4096] {
            let mut theirs = Vec::new();
            rows.encode(&hash, j, 1, &[w[j]], &mut theirs);
            assert_eq!(theirs[0], mine[j], "instance {j} after a release");
        }
    }

    #[test]
    fn instances_without_a_word_hold_the_zero_word() {
        // Words in a few instances, across batch and fold boundaries; the rest hold 0.
        let n = 9000;
        let at: Vec<u32> = vec![0, 5, 127, 128, 4095, 4096, 8191, 8192, 8999];
        let mut prg = Prg::from_seed(Block::from(13));
        let w = words(&mut prg, at.len());
        let (rows, mine) = run(n, Words::new(n, at.clone(), w.clone()), None);
        let rows = rows.expect("an honest receiver passes the check");
        assert_eq!(mine.len(), at.len(), "an encoding for each word");
        let hash = test_hash();
        for (k, &j) in at.iter().enumerate() {
            let mut theirs = Vec::new();
            rows.encode(&hash, j as usize, 1, &[w[k], Block::ZERO], &mut theirs);
            assert_eq!(theirs[0], mine[k], "instance {j}");
            assert_ne!(theirs[1], mine[k], "instance {j}");
        }
        // An empty instance holds the zero word: the same seeds and receiver coins with
        // dense zero words give the same receiver rows T⁰_j, so the sender's encoding of 0
        // there is the dense receiver's own encoding.
        let (_, zeros) = run(n, Words::dense(vec![Block::ZERO; n]), None);
        for j in [1, 126, 129, 4097, 8998] {
            let mut theirs = Vec::new();
            rows.encode(&hash, j, 1, &[Block::ZERO, w[0]], &mut theirs);
            assert_eq!(theirs[0], zeros[j], "instance {j}");
            assert_ne!(theirs[1], zeros[j], "instance {j}");
        }
    }

    /// Two parties running [`both_ways`] against each other, each the receiver of one
    /// extension and the sender of the other, with unequal instance counts; `cheat` may
    /// change the second party's corrections. Returns what each party got.
    fn both_ways_run(words: [Vec<Block>; 2], cheat: Option<Box<Tamper>>) -> [BothWays; 2] {
        let mut prg = Prg::from_seed(Block::from(20));
        let (s_ab, r_ab) = seeds(&mut prg);
        let (s_ba, r_ba) = seeds(&mut prg);
        let (mut a, mut b) = mem_pair(Duration::from_secs(20));
        let [wa, wb] = words;
        let (na, nb) = (wa.len(), wb.len());
        let t = std::thread::spawn(move || {
            // Party b: receiver of b→a (its words wb), sender of a→b (na instances).
            let (receiver, sender) = (OosReceiver::new(&r_ba), OosSender::new(&s_ab));
            let mut prg = Prg::from_seed(Block::from(22));
            let mut encoding = receiver.start(Words::dense(wb), &mut prg);
            let incoming = sender.start(na, false);
            if let Some(cheat) = cheat {
                while !encoding.done() {
                    encoding.send_batch_then(&mut b, &cheat)?;
                }
            }
            both_ways(&mut b, encoding, incoming, &mut prg, &test_hash())
        });
        let (receiver, sender) = (OosReceiver::new(&r_ab), OosSender::new(&s_ba));
        let mut prg = Prg::from_seed(Block::from(21));
        let encoding = receiver.start(Words::dense(wa), &mut prg);
        let incoming = sender.start(nb, false);
        let first = both_ways(&mut a, encoding, incoming, &mut prg, &test_hash());
        drop(a);
        [first, t.join().unwrap()]
    }

    #[test]
    fn both_ways_agree_in_each_direction() {
        // Unequal counts; with the check's 40 rows, 8192 rows are whole batches and
        // 8320 one row block past them.
        for (na, nb) in [(9000, 5000), (8192 - CHECK_ROWS, 8320 - CHECK_ROWS)] {
            let mut prg = Prg::from_seed(Block::from(23));
            let (wa, wb) = (words(&mut prg, na), words(&mut prg, nb));
            let [a, b] = both_ways_run([wa.clone(), wb.clone()], None);
            let ((mine_a, rows_from_b), (mine_b, rows_from_a)) = (a.unwrap(), b.unwrap());
            assert_eq!((rows_from_a.len(), rows_from_b.len()), (na, nb));
            let hash = test_hash();
            for (mine, rows, w) in [(&mine_a, &rows_from_a, &wa), (&mine_b, &rows_from_b, &wb)] {
                for j in 0..w.len() {
                    let mut theirs = Vec::new();
                    rows.encode(&hash, j, 1, &[w[j], w[j] ^ Block::ONE], &mut theirs);
                    assert_eq!(theirs[0], mine[j], "instance {j}");
                    assert_ne!(theirs[1], mine[j], "instance {j}: another word");
                }
            }
        }
    }

    #[test]
    fn both_ways_catch_a_cheating_receiver() {
        let mut prg = Prg::from_seed(Block::from(24));
        let (wa, wb) = (words(&mut prg, 5000), words(&mut prg, 5000));
        let flip = |first: usize, rows: &mut [Block]| {
            if first == 4096 {
                rows[3 * CODE_BLOCKS + 1] ^= Block::from_u128(u128::from(u64::MAX) << 30);
            }
        };
        let [a, _] = both_ways_run([wa, wb], Some(Box::new(flip)));
        assert!(
            matches!(a, Err(Error::CheatingDetected(_))),
            "{:?}",
            a.err()
        );
    }

    #[test]
    fn a_receiver_whose_rows_encode_no_codeword_is_caught() {
        let n = 3000;
        let mut prg = Prg::from_seed(Block::from(10));
        let w = words(&mut prg, n);
        // 64 bits flipped in one row: that row is T⁰ ⊕ T¹ ⊕ (a non-codeword). (A flip
        // where Δ is 0 changes nothing for the sender, so one bit would go unseen half the
        // time; 64 go unseen only if all 64 bits of Δ there are 0.)
        let flip = |first: usize, rows: &mut [Block]| {
            if (first..first + rows.len() / CODE_BLOCKS).contains(&1234) {
                rows[(1234 - first) * CODE_BLOCKS + 2] ^=
                    Block::from_u128(u128::from(u64::MAX) << 40);
            }
        };
        let (rows, _) = run(n, Words::dense(w), Some(Box::new(flip)));
        assert!(
            matches!(rows, Err(Error::CheatingDetected(_))),
            "{:?}",
            rows.err()
        );
    }

    #[test]
    fn a_receiver_that_encodes_another_word_than_it_claims_is_caught() {
        let n = 3000;
        let mut prg = Prg::from_seed(Block::from(11));
        let w = words(&mut prg, n);
        // Row 17 carries C(w ⊕ 5) although the check is answered for w: rows and
        // answers disagree by a codeword.
        let other = Bch511::get().encode(Block::from(5));
        let swap = move |first: usize, rows: &mut [Block]| {
            if first == 0 {
                for (x, c) in rows[17 * CODE_BLOCKS..18 * CODE_BLOCKS]
                    .iter_mut()
                    .zip(other)
                {
                    *x ^= c;
                }
            }
        };
        let (rows, _) = run(n, Words::dense(w), Some(Box::new(swap)));
        assert!(matches!(rows, Err(Error::CheatingDetected(_))));
    }

    /// Spec §9 test 5: the verifier picks the check's seed, so a malicious one may pick
    /// any (here the zero seed). The proof stays independent of the receiver's words: each
    /// answer carries one padding row, fresh and uniform, with coefficient exactly one, so
    /// `w̃_l = Σ_j x_j^(l)·w_j ⊕ w_{n+l}` — for all-zero words the padding word itself.
    #[test]
    fn the_proof_is_masked_by_a_fresh_padding_row_whatever_the_seed() {
        let n = 1000;
        for zero_words in [true, false] {
            let mut prg = Prg::from_seed(Block::from(12));
            let w = match zero_words {
                true => vec![Block::ZERO; n],
                false => words(&mut prg, n),
            };
            let (s, r) = seeds(&mut prg);
            let (mut a, mut b) = mem_pair(Duration::from_secs(20));
            // All-zero words as a table with no item in it.
            let words = match zero_words {
                true => Words::new(n, Vec::new(), Vec::new()),
                false => Words::dense(w.clone()),
            };
            let t = std::thread::spawn(move || {
                let mut prg = Prg::from_seed(Block::from(4));
                OosReceiver::new(&r).encode(&mut b, words, &mut prg, &test_hash())
            });
            let verifier: &mut dyn Channel = &mut a;
            OosSender::new(&s)
                .ext
                .extend(verifier, n + CHECK_ROWS, |_| {})
                .unwrap();
            verifier.send(&Writer::new().block(Block::ZERO).0).unwrap();
            let len = CHECK_ROWS * (CODE_BLOCKS + 1) * 16;
            let proof = verifier.recv_exact(len, "proof").unwrap();
            t.join().unwrap().unwrap();
            // The receiver's padding words are the first draws of its PRG.
            let mut padding_prg = Prg::from_seed(Block::from(4));
            let padding: Vec<Block> = (0..CHECK_ROWS)
                .map(|_| padding_prg.block() & Block::low_ones(DIMENSION))
                .collect();
            let mut sums = [Block::ZERO; CHECK_ROWS];
            let mut challenge = Challenge::new(Block::ZERO);
            for &w in &w {
                let x = challenge.next_row();
                for (l, sum) in sums.iter_mut().enumerate() {
                    if x >> l & 1 == 1 {
                        *sum ^= w;
                    }
                }
            }
            let mut r = Reader::new(&proof, "proof");
            for l in 0..CHECK_ROWS {
                for _ in 0..CODE_BLOCKS {
                    r.block().unwrap();
                }
                let answer = r.block().unwrap();
                assert_eq!(answer, sums[l] ^ padding[l], "answer {l}");
                if zero_words {
                    assert_eq!(answer, padding[l], "answer {l} is the padding word");
                }
            }
            assert!(padding.iter().all(|&p| p != Block::ZERO));
        }
    }

    #[test]
    fn seeds_from_kos15_make_a_working_extension() {
        let (mut a, mut b) = mem_pair(Duration::from_secs(30));
        let t = std::thread::spawn(move || {
            let mut prg = Prg::from_seed(Block::from(1));
            let seeds = OosReceiverSeeds::new(&mut b, &mut prg, &[7; 32]).unwrap();
            let w = Words::dense(vec![Block::from(1), Block::from(2), Block::from(3)]);
            OosReceiver::new(&seeds)
                .encode(&mut b, w, &mut prg, &RowHash::new("t", b""))
                .unwrap()
        });
        let mut prg = Prg::from_seed(Block::from(2));
        let seeds = OosSenderSeeds::new(&mut a, &mut prg, &[7; 32]).unwrap();
        let rows = OosSender::new(&seeds).receive(&mut a, 3, &mut prg).unwrap();
        let mine = t.join().unwrap();
        let hash = RowHash::new("t", b"");
        for (j, m) in mine.iter().enumerate() {
            let mut theirs = Vec::new();
            rows.encode(&hash, j, 1, &[Block::from(j as u64 + 1)], &mut theirs);
            assert_eq!(&theirs[0], m);
        }
    }
}
