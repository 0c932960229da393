//! The binary BCH-(511, 76, 171) code of OOS16 1-out-of-N OT extension, as RR17 §7 uses it
//! ("Implementation Details"): narrow-sense and primitive over GF(2^9) with the primitive
//! polynomial x^9 + x^4 + 1, designed distance 171 (roots α^1 … α^170), so its minimum
//! distance d ≥ 171 ≥ κ + λ = 168. It is the largest-dimension BCH code of length 511
//! with d > κ.
//!
//! The generator polynomial g(x) is derived here from the field (the product of the
//! distinct minimal polynomials of α^1 … α^170), not copied; the generator matrix is the
//! reduced row-echelon form of the rows x^i·g(x), i < 76, so that G = [I_76 | P] and an
//! encoding carries its message in its first 76 bits. A codeword is 511 bits kept in 512
//! (four blocks, bit 511 zero, bit j of the little-endian integer = coordinate j), as OOS16
//! runs on 512 columns. Encoding is ten table lookups (one per message byte).

use crate::crypto::Block;
use std::sync::OnceLock;

/// Code length (bits).
pub const LENGTH: usize = 511;
/// Message length (bits).
pub const DIMENSION: usize = 76;
/// Designed (and guaranteed minimum) distance.
pub const DISTANCE: usize = 171;
/// A codeword in blocks: 512 bits, the last always zero.
pub const CODE_BLOCKS: usize = 4;

/// A codeword: bit j of the 512-bit little-endian integer is coordinate j.
pub type Codeword = [Block; CODE_BLOCKS];

/// A binary polynomial of degree below 512, bit i = the coefficient of x^i.
type Poly = [u64; 8];

/// GF(2^9) under x^9 + x^4 + 1: exponent and logarithm tables of α = x.
struct Field {
    exp: [u16; 511],
    log: [u16; 512],
}

impl Field {
    fn new() -> Self {
        let (mut exp, mut log) = ([0u16; 511], [0u16; 512]);
        let mut v: u16 = 1;
        for (i, e) in exp.iter_mut().enumerate() {
            *e = v;
            log[v as usize] = i as u16;
            v <<= 1;
            if v & 0x200 != 0 {
                v ^= 0x211;
            }
        }
        Field { exp, log }
    }

    fn mul(&self, a: u16, b: u16) -> u16 {
        if a == 0 || b == 0 {
            return 0;
        }
        self.exp[(self.log[a as usize] as usize + self.log[b as usize] as usize) % 511]
    }
}

/// The generator polynomial: the product of the minimal polynomials of α^1 … α^170, each
/// once (one per cyclotomic coset of 2 modulo 511).
fn generator_polynomial() -> Poly {
    let field = Field::new();
    let mut covered = [false; 511];
    // Coefficients over GF(2^9), lowest first; the product has binary coefficients.
    let mut g: Vec<u16> = vec![1];
    for i in 1..DISTANCE {
        if covered[i] {
            continue;
        }
        let mut j = i;
        loop {
            covered[j] = true;
            // g ← g · (x + α^j)
            let root = field.exp[j];
            let mut next = vec![0u16; g.len() + 1];
            for (k, &c) in g.iter().enumerate() {
                next[k + 1] ^= c;
                next[k] ^= field.mul(c, root);
            }
            g = next;
            j = j * 2 % 511;
            if j == i {
                break;
            }
        }
    }
    let mut poly = [0u64; 8];
    for (k, &c) in g.iter().enumerate() {
        assert!(c <= 1, "a minimal polynomial's product is binary");
        poly[k / 64] |= (c as u64) << (k % 64);
    }
    poly
}

fn bit(p: &Poly, j: usize) -> bool {
    p[j / 64] >> (j % 64) & 1 == 1
}

/// `p` times x^s (the result must stay below degree 512).
fn shifted(p: &Poly, s: usize) -> Poly {
    let mut out = [0u64; 8];
    for j in (0..512 - s).filter(|&j| bit(p, j)) {
        out[(j + s) / 64] |= 1 << ((j + s) % 64);
    }
    out
}

fn codeword(p: &Poly) -> Codeword {
    std::array::from_fn(|b| Block::from_halves(p[2 * b], p[2 * b + 1]))
}

/// The generator matrix [I_76 | P]: row i encodes the message with only bit i set.
fn generator_matrix() -> [Codeword; DIMENSION] {
    let g = generator_polynomial();
    // Row i = x^i·g(x) has lowest set bit i (g(0) = 1), and keeps it through elimination:
    // clearing column c from the other rows, in increasing c, never touches a bit below
    // a row's own index.
    let mut rows: Vec<Poly> = (0..DIMENSION).map(|i| shifted(&g, i)).collect();
    for c in 0..DIMENSION {
        let pivot = rows[c];
        for (r, row) in rows.iter_mut().enumerate() {
            if r != c && bit(row, c) {
                for (w, p) in row.iter_mut().zip(&pivot) {
                    *w ^= p;
                }
            }
        }
    }
    std::array::from_fn(|i| codeword(&rows[i]))
}

/// The encoder: `tables[k][v]` is the codeword of the message byte `v` at byte `k`.
pub struct Bch511 {
    rows: [Codeword; DIMENSION],
    tables: Vec<[Codeword; 256]>,
}

impl Bch511 {
    /// The code (built once per process).
    pub fn get() -> &'static Bch511 {
        static CODE: OnceLock<Bch511> = OnceLock::new();
        CODE.get_or_init(|| {
            let rows = generator_matrix();
            let tables = (0..DIMENSION.div_ceil(8))
                .map(|k| {
                    let mut t = [[Block::ZERO; CODE_BLOCKS]; 256];
                    for v in 1..256usize {
                        // t[v] = t[v without its lowest bit] ⊕ the row of that bit.
                        let low = v.trailing_zeros() as usize;
                        let row = rows.get(8 * k + low).copied().unwrap_or_default();
                        t[v] = std::array::from_fn(|b| t[v & (v - 1)][b] ^ row[b]);
                    }
                    t
                })
                .collect();
            Bch511 { rows, tables }
        })
    }

    /// The rows of the generator matrix.
    pub fn rows(&self) -> &[Codeword; DIMENSION] {
        &self.rows
    }

    /// The codeword of `message` (its bits from 76 on must be zero).
    pub fn encode(&self, message: Block) -> Codeword {
        debug_assert!(
            message.as_u128() >> DIMENSION == 0,
            "a BCH-511 message has 76 bits"
        );
        let mut out = [Block::ZERO; CODE_BLOCKS];
        for (table, &byte) in self.tables.iter().zip(&message.to_le_bytes()) {
            let word = &table[usize::from(byte)];
            for (o, w) in out.iter_mut().zip(word) {
                *o ^= w;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    fn hex(c: &Codeword) -> String {
        c.iter().rev().map(|b| format!("{b:032x}")).collect()
    }

    #[test]
    fn the_generator_polynomial_is_the_published_one() {
        let g = generator_polynomial();
        let degree = (0..512).rev().find(|&j| bit(&g, j)).unwrap();
        assert_eq!(degree, LENGTH - DIMENSION, "deg g = 511 - 76");
        let weight: u32 = g.iter().map(|w| w.count_ones()).sum();
        assert_eq!(weight, 227);
        let text: String = codeword(&g)
            .iter()
            .rev()
            .map(|b| format!("{b:032x}"))
            .collect::<String>()
            .trim_start_matches('0')
            .to_string();
        assert_eq!(
            text,
            "ad98bf9547f24b8a971bba5f0c3b524c0f6f91dbe79d89b207848ffad3b37791732ac9184a83a6e7cf2e2c8aaaae28d8c59a7e1153e45"
        );
    }

    /// α^1 … α^170 are roots of g: by the BCH bound, every nonzero codeword (a multiple of
    /// g) then has weight at least 171.
    #[test]
    fn the_designed_distance_holds() {
        let field = Field::new();
        let g = generator_polynomial();
        for i in 1..DISTANCE {
            let root = field.exp[i];
            // Horner's rule from the top coefficient.
            let value = (0..512)
                .rev()
                .fold(0u16, |acc, j| field.mul(acc, root) ^ bit(&g, j) as u16);
            assert_eq!(value, 0, "g(α^{i}) = 0");
        }
        let root = field.exp[DISTANCE];
        let value = (0..512)
            .rev()
            .fold(0u16, |acc, j| field.mul(acc, root) ^ bit(&g, j) as u16);
        assert_ne!(
            value, 0,
            "α^171 is not a root: the code is no smaller than it must be"
        );
    }

    #[test]
    fn the_generator_matrix_has_the_published_fingerprint() {
        let code = Bch511::get();
        let mut h = Sha256::new();
        for row in code.rows() {
            for b in row {
                h.update(b.to_le_bytes());
            }
        }
        let fp: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            fp,
            "230cd77d2e54cffb4a6c1fcb5118ccebb9310e04b0fd1fa119f393326ec19921"
        );
    }

    #[test]
    fn encodings_match_the_test_vectors_and_are_systematic() {
        let code = Bch511::get();
        assert_eq!(
            hex(&code.encode(Block::from(1))),
            "2d98bf9547f24b8a971bba5f0c3b524c0f6f91dbe79d89b207848ffad3b37791732ac9184a83a6e7cf2e2c8aaaae28d8c59a7e1153e450000000000000000001"
        );
        assert_eq!(
            hex(&code.encode(Block::from_u128(0x0123456789abcdef0123))),
            "4e3241b8df1db7910f4d2cbfc0e159dd1febf2ddcc9fabd5cd0c4e7a39eff35e4a039e873fee2ad34081bcc231b2d3b36bf64a33786fd123456789abcdef0123"
        );
        assert_eq!(code.encode(Block::ZERO), [Block::ZERO; CODE_BLOCKS]);
        let all = code.encode(Block::low_ones(DIMENSION));
        assert_eq!(
            all[..3],
            [Block::ONES; 3],
            "the all-ones message gives 1^511"
        );
        assert_eq!(all[3], Block::low_ones(127));
        let w = Block::from_u128(0xABC_DEF0_1234_5678_9ABC);
        assert_eq!(code.encode(w)[0] & Block::low_ones(DIMENSION), w);
    }

    /// Every codeword is a multiple of g(x) (so the code is the cyclic BCH code), and
    /// encoding is linear.
    #[test]
    fn codewords_are_multiples_of_g_and_encoding_is_linear() {
        let code = Bch511::get();
        let g = generator_polynomial();
        let remainder = |c: &Codeword| {
            let mut p: Poly =
                std::array::from_fn(|i| (c[i / 2].as_u128() >> (64 * (i % 2))) as u64);
            for j in (LENGTH - DIMENSION..512).rev() {
                if bit(&p, j) {
                    let s = shifted(&g, j - (LENGTH - DIMENSION));
                    for (w, x) in p.iter_mut().zip(&s) {
                        *w ^= x;
                    }
                }
            }
            p
        };
        let mut prg = crate::crypto::Prg::from_seed(Block::from(7));
        for _ in 0..200 {
            let (a, b) = (
                prg.block() & Block::low_ones(DIMENSION),
                prg.block() & Block::low_ones(DIMENSION),
            );
            let (ca, cb, cab) = (code.encode(a), code.encode(b), code.encode(a ^ b));
            assert_eq!(remainder(&ca), [0; 8], "a multiple of g");
            assert_eq!(cab, std::array::from_fn(|i| ca[i] ^ cb[i]), "linear");
        }
    }

    /// No low-weight codeword among many: each random nonzero message's codeword has
    /// weight ≥ 171 (the BCH bound guarantees it; this catches a wrong matrix).
    #[test]
    fn random_codewords_have_weight_at_least_the_distance() {
        let code = Bch511::get();
        let mut prg = crate::crypto::Prg::from_seed(Block::from(11));
        for i in 0..2000 {
            let m = match i {
                0..76 => Block::unit(i),
                _ => prg.block() & Block::low_ones(DIMENSION),
            };
            let weight: u32 = code.encode(m).iter().map(|b| b.count_ones()).sum();
            assert!(
                m == Block::ZERO || weight >= DISTANCE as u32,
                "{m:x}: weight {weight}"
            );
        }
    }
}
