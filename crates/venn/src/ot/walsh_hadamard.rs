//! The Walsh–Hadamard code on bytes, `WH(v)_i = ⟨v, i⟩ mod 2` for `i ∈ [256]`: 256-bit
//! code words any two of which differ in exactly 128 = κ bits. With it the coded OT
//! extension of [`super::kkrt`] is KK13's 1-out-of-256 random OT (KKRT16 §2, §5.3): one
//! 256-bit extension row per OT, whose output for choice `v` is `H(j, q_j ⊕ (WH(v) ∧ s))`.

use super::Code;
use crate::crypto::Block;

/// The code, its 256 code words tabulated (8 KiB).
pub struct WalshHadamard {
    words: Vec<[Block; 2]>,
}

impl WalshHadamard {
    /// The extension width: 256 columns.
    pub const COLUMNS: usize = 256;

    /// Tabulates the code.
    pub fn new() -> Self {
        let word = |v: u32| {
            let mut w = [Block::ZERO; 2];
            for i in 0..256u32 {
                if (v & i).count_ones() % 2 == 1 {
                    w[(i / 128) as usize] |= Block::unit((i % 128) as usize);
                }
            }
            w
        };
        WalshHadamard {
            words: (0..256).map(word).collect(),
        }
    }
}

impl WalshHadamard {
    /// All 256 code words, block-major as [`Code::encode`] writes them: a table the
    /// sender evaluates any choice against.
    pub fn all_words(&self) -> Vec<Block> {
        let bytes: Vec<u8> = (0..=255).collect();
        let mut words = vec![Block::ZERO; 256 * <Self as Code>::BLOCKS];
        self.encode(&bytes, &mut words);
        words
    }
}

impl Default for WalshHadamard {
    fn default() -> Self {
        Self::new()
    }
}

impl Code for WalshHadamard {
    const BLOCKS: usize = 2;
    type Input = u8;

    fn encode(&self, inputs: &[u8], out: &mut [Block]) {
        assert_eq!(out.len(), inputs.len() * 2);
        let (low, high) = out.split_at_mut(inputs.len());
        for ((&v, l), h) in inputs.iter().zip(low).zip(high) {
            let [a, b] = self.words[usize::from(v)];
            (*l, *h) = (a, b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::{Prg, WideHash};
    use crate::net::mem_pair;
    use crate::ot::{oprf_receive, OprfSender};
    use std::time::Duration;

    #[test]
    fn the_receiver_learns_the_output_of_its_choice_and_no_other() {
        let k = WalshHadamard::COLUMNS;
        let mut prg = Prg::from_seed(Block::from(5));
        let s: Vec<bool> = (0..k).map(|_| prg.u64() & 1 == 1).collect();
        let pairs: Vec<[Block; 2]> = (0..k).map(|_| [prg.block(), prg.block()]).collect();
        let chosen: Vec<Block> = pairs.iter().zip(&s).map(|(p, &b)| p[b as usize]).collect();
        let choices: Vec<u8> = (0..300).map(|_| prg.u64() as u8).collect();
        let hash = WideHash::new("test", &[]);
        let (mut a, mut b) = mem_pair(Duration::from_secs(10));
        let (c, h) = (choices.clone(), hash.clone());
        let t = std::thread::spawn(move || {
            oprf_receive(&mut b, &pairs, &WalshHadamard::new(), &c)
                .unwrap()
                .outputs(&h)
        });
        let sender = OprfSender::extend(&mut a, &chosen, &s, choices.len(), |_| {}).unwrap();
        let got = t.join().unwrap();
        let words = WalshHadamard::new().all_words();
        let codes: Vec<u32> = (0..256).collect();
        let mut values = vec![Block::ZERO; 256];
        for (j, &c) in choices.iter().enumerate() {
            let rows = vec![j as u32; 256];
            sender
                .rows()
                .eval_batch(&hash, &rows, &words, &codes, &mut values);
            for (v, &value) in values.iter().enumerate() {
                assert_eq!(value == got[j], v == c as usize, "OT {j}, value {v}");
            }
        }
    }

    #[test]
    fn any_two_code_words_differ_in_exactly_128_bits() {
        let wh = WalshHadamard::new();
        for a in 0..256 {
            for b in 0..a {
                let [x0, x1] = wh.words[a];
                let [y0, y1] = wh.words[b];
                let d = (x0 ^ y0).count_ones() + (x1 ^ y1).count_ones();
                assert_eq!(d, 128, "WH({a}) and WH({b})");
            }
        }
        assert_eq!(wh.words[0], [Block::ZERO; 2]);
        // WH(1)_i is the lowest bit of i: alternating bits.
        assert_eq!(
            wh.words[1][0],
            Block::from_u128(0xaaaa_aaaa_aaaa_aaaa_aaaa_aaaa_aaaa_aaaa)
        );
    }

    #[test]
    fn encodes_block_major() {
        let wh = WalshHadamard::new();
        let mut out = [Block::ZERO; 4];
        wh.encode(&[3, 200], &mut out);
        assert_eq!([out[0], out[2]], wh.words[3]);
        assert_eq!([out[1], out[3]], wh.words[200]);
    }
}
