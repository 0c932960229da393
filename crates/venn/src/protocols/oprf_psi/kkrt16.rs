//! KKRT16 PSI (Kolesnikov–Kumaresan–Rosulek–Trieu, CCS 2016): Fig. 3 with the
//! BaRK-OPRF (Fig. 2) and its parameters (§6.1, Table 2): stash size s,
//! pseudorandom-code width k, OPRF output length v, for any pair of set sizes.

use super::{BatchedOprf, Hashing, Layout, OprfPsi, Variant};
use crate::crypto::{Block, Prg, WideHash};
use crate::items::{BlockEncoder, Items};
use crate::net::Channel;
use crate::ot::{oprf_receive, Code, OprfRows, PseudorandomCode, OPRF_BLOCKS};
use crate::protocols::{
    output_bits, round_up_to_byte, OutputKind, ProtocolInfo, RoleInfo, Security, Sizes,
};
use crate::session::Role;
use crate::tables::{pssz15_stash_size, CuckooHash, HASHES};
use crate::{Error, Result, COMPUTATIONAL_SECURITY, STATISTICAL_SECURITY};

/// KKRT16 batched-OPRF PSI.
pub(crate) type Kkrt16 = OprfPsi<Bark>;

/// The BaRK-OPRF with cuckoo hashing of hashed items.
pub(crate) struct Bark {
    code: PseudorandomCode,
    hash: WideHash,
}

static INFO: ProtocolInfo = ProtocolInfo {
    name: "kkrt16",
    paper: "Kolesnikov, Kumaresan, Rosulek, Trieu: Efficient Batched Oblivious PRF with \
            Applications to PSI (CCS 2016), Fig. 2 and Fig. 3",
    security: Security::SemiHonest,
    leakage: "The receiver learns the intersection; the sender learns nothing (with --both, \
              the sender learns the intersection too). Both learn the other's set size. \
              Secure only if both parties follow the protocol.",
    both_allowed: true,
    roles: &[
        RoleInfo {
            role: Role::Sender,
            security: Security::SemiHonest,
            output: OutputKind::Nothing,
            peer_item_bytes: 96,
            own_item_bytes: 384,
        },
        RoleInfo {
            role: Role::Receiver,
            security: Security::SemiHonest,
            output: OutputKind::Indices,
            peer_item_bytes: 16,
            own_item_bytes: 256,
        },
    ],
};

/// Item values keep 126 bits; the top two carry the hash index z ∈ {1,2,3} of the
/// OPRF input `y ‖ z` (z = 0 for stash inputs, and for dummies in bins), so `y ‖ z` is
/// injective. Distinct items
/// collide with probability ≤ n_s·n_r·2^-126, within λ = 40 for sets up to 2^43.
const ITEM_MASK: Block = Block::low_ones(126);

/// Cuckoo hashing of the 126-bit item values, the input in a bin being `y ‖ z`.
pub(crate) struct Cuckoo(CuckooHash);

impl Hashing for Cuckoo {
    fn bins_of(&self, y: &[Block], out: &mut Vec<[u32; HASHES]>) {
        self.0.bins_of(y, out)
    }

    fn input(&self, y: Block, z: usize) -> Block {
        y | Block::from_u128((z as u128) << 126)
    }

    fn stash_input(&self, y: Block) -> Block {
        y
    }

    /// In a bin z = 0, in the stash z = 3: inputs the sender never evaluates there.
    fn dummy(&self, prg: &mut Prg, stash: bool) -> Block {
        let z = if stash { 3 } else { 0 };
        self.input(prg.block() & ITEM_MASK, z)
    }
}

impl BatchedOprf for Bark {
    fn ot_rows(&self, instances: usize) -> usize {
        instances
    }

    fn receive(
        &self,
        chan: &mut dyn Channel,
        seeds: &[[Block; 2]],
        inputs: &[Block],
    ) -> Result<Vec<Block>> {
        Ok(oprf_receive(chan, seeds, &self.code, inputs)?.outputs(&self.hash))
    }

    fn eval(
        &self,
        ot: &OprfRows,
        instances: &[u32],
        inputs: &[Block],
        input_at: &[u32],
        out: &mut [Block],
    ) {
        let mut codewords = vec![Block::ZERO; inputs.len() * OPRF_BLOCKS];
        self.code.encode(inputs, &mut codewords);
        ot.eval_batch(&self.hash, instances, &codewords, input_at, out);
    }
}

impl Variant for Bark {
    const INFO: &'static ProtocolInfo = &INFO;
    /// The key of the pseudorandom code (Fig. 2 step 0) and the seed of the cuckoo hash
    /// functions (Fig. 3 step 1) are coin-tossed in one go: the receiver commits, the
    /// sender answers, the receiver opens. Both are public from then on.
    const SEEDS_TOSS: &'static str = "KKRT16 code key and cuckoo seed";
    type Config = ();
    type Params = Layout;
    type Oprf = Bark;
    type Hashing = Cuckoo;

    fn params(sizes: Sizes, _: ()) -> Result<Layout> {
        kkrt16_layout(sizes.sender, sizes.receiver)
    }

    fn layout(p: &Layout) -> Layout {
        *p
    }

    fn columns(sizes: Sizes) -> Result<usize> {
        Ok(kkrt16_layout(sizes.sender, sizes.receiver)?.columns)
    }

    fn check_items(_: (), _: &Items) -> Result<()> {
        Ok(())
    }

    fn values(_: &Layout, items: &Items, sid: &[u8; 32]) -> Result<Vec<Block>> {
        let encoder = BlockEncoder::new("venn/kkrt16/item", sid);
        Ok(encoder.encode_all(items, ITEM_MASK))
    }

    fn oprf(_: &Layout, code_key: Block, sid: &[u8; 32]) -> Bark {
        Bark {
            code: PseudorandomCode::new(code_key),
            hash: WideHash::new("venn/kkrt16/oprf", sid),
        }
    }

    fn hashing(p: &Layout, seed: Block) -> Cuckoo {
        Cuckoo(CuckooHash::new(seed, p.bins))
    }
}

/// The receiver's table is never sized for fewer items than this (KKRT16 Table 2 starts
/// here; below it the stash sizes of PSSZ15 are not tabulated).
const MIN_TABLE_ITEMS: u64 = 1 << 8;
/// Widest code the OPRF rows hold (four blocks, less the 32-bit row index of the hash).
const MAX_CODE_BITS: usize = 480;

/// The parameters of one KKRT16 run (§6.1): the cuckoo table for the receiver's set, and
/// the pseudorandom code wide enough for the sender's (3 + s)·n_sender evaluations.
pub(super) fn kkrt16_layout(n_sender: u64, n_receiver: u64) -> Result<Layout> {
    let (bins, stash) = cuckoo_table(n_receiver);
    // Lemma 5 / §6.1: the sender evaluates the PRF on m = (3 + s)·n_sender points, so
    // the code must be a (d = κ, ε = σ + log2 m) pseudorandom code.
    let evaluations = (3 + stash) as f64 * n_sender.max(1) as f64;
    let epsilon = STATISTICAL_SECURITY as f64 + evaluations.log2();
    let columns = code_width(COMPUTATIONAL_SECURITY, epsilon);
    if columns > MAX_CODE_BITS {
        return Err(Error::Params(format!(
            "a {columns}-bit code is wider than the supported {MAX_CODE_BITS} bits (sets too large)"
        )));
    }
    Ok(Layout {
        bins,
        stash,
        columns,
        out_bits: output_bits(Sizes {
            sender: n_sender,
            receiver: n_receiver,
        }),
    })
}

/// The receiver's cuckoo table for `n_receiver` items: 1.2·n bins (n at least 2^8) and
/// the stash size of PSSZ15 for n (KKRT16 §6.1).
pub(super) fn cuckoo_table(n_receiver: u64) -> (usize, usize) {
    let table_items = n_receiver.max(MIN_TABLE_ITEMS);
    let bins = (table_items * 6).div_ceil(5) as usize;
    (bins, pssz15_stash_size(table_items))
}

/// The smallest k (rounded up to a byte) such that a random function with k output bits is
/// a (d, ε) pseudorandom code (Lemma 3): `2^-k · Σ_{i<d} C(k, i) ≤ 2^-ε`.
pub(super) fn code_width(d: usize, epsilon: f64) -> usize {
    let mut k = d;
    while log2_binomial_prefix(k, d) - k as f64 > -epsilon {
        k += 1;
    }
    round_up_to_byte(k as f64)
}

/// `log2 Σ_{i<d} C(k, i)`, summed in log space.
fn log2_binomial_prefix(k: usize, d: usize) -> f64 {
    let mut ln_c = 0.0f64; // ln C(k, 0)
    let mut ln_sum = f64::NEG_INFINITY;
    for i in 0..d.min(k + 1) {
        let (hi, lo) = (ln_sum.max(ln_c), ln_sum.min(ln_c));
        ln_sum = hi + (lo - hi).exp().ln_1p();
        ln_c += ((k - i) as f64).ln() - ((i + 1) as f64).ln();
    }
    ln_sum / std::f64::consts::LN_2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dummies_are_never_inputs_the_sender_evaluates() {
        let h = Cuckoo(CuckooHash::new(Block::from(1), 1000));
        let mut prg = Prg::from_seed(Block::from(2));
        let y = prg.block() & ITEM_MASK;
        let z_of = |x: Block| (x.as_u128() >> 126) as usize;
        for _ in 0..100 {
            assert_eq!(
                z_of(h.dummy(&mut prg, false)),
                0,
                "bins evaluate z = 1, 2, 3"
            );
            assert_eq!(z_of(h.dummy(&mut prg, true)), 3, "stash inputs have z = 0");
        }
        assert_eq!(z_of(h.stash_input(y)), 0);
        assert!((1..=3).all(|z| z_of(h.input(y, z)) == z));
    }

    #[test]
    fn reproduces_table_2() {
        // KKRT16 Table 2: n, s, k, v.
        let table = [
            (8, 12, 424, 56),
            (12, 6, 432, 64),
            (16, 4, 440, 72),
            (20, 3, 448, 80),
            (24, 2, 448, 88),
        ];
        for (log_n, s, k, v) in table {
            let n = 1u64 << log_n;
            let p = kkrt16_layout(n, n).unwrap();
            assert_eq!((p.stash, p.columns, p.out_bits), (s, k, v), "n = 2^{log_n}");
            assert_eq!(p.bins, (n as usize * 6).div_ceil(5));
        }
    }

    #[test]
    fn unequal_and_tiny_sets() {
        let p = kkrt16_layout(1 << 12, 1 << 4).unwrap();
        assert_eq!(
            p.stash, 12,
            "tiny receiver tables are sized as for 2^8 items"
        );
        assert_eq!(p.bins, 308);
        assert_eq!(p.out_bits, 56, "40 + 12 + 4 = 56");
        let p = kkrt16_layout(0, 0).unwrap();
        assert_eq!(p.out_bits, 40);
    }

    #[test]
    fn binomial_prefix_is_exact_for_small_cases() {
        // Σ_{i<3} C(5, i) = 1 + 5 + 10 = 16.
        assert!((log2_binomial_prefix(5, 3) - 4.0).abs() < 1e-9);
    }
}
