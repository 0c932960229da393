//! PSSZ15 PSI (Pinkas–Schneider–Segev–Zohner, USENIX Security 2015), the baseline KKRT16
//! compares against (Tables 3–5), as KKRT16 §5 describes it: Fig. 3 with the OPRF of §5.1
//! and PSSZ15's permutation-based hashing (phasing).
//!
//! **Items.** An item is an ℓ-bit value x: with `--sigma 32|64` the σ-bit integer itself,
//! otherwise (or where it is shorter) the item hashed to
//! `ℓ_h = ⌈λ + log2 C(n_s + n_r, 2)⌉` bits, so that no two of both parties' items collide
//! but with probability 2^-λ (KKRT16 §5.3, "σ + 2 log n"; PSSZ15's
//! `v' = σ + log(3n²)` plays this part in Table 5).
//!
//! **Phasing.** With b bins, `x = x_R·b + x_L` (`x_L = x mod b`) goes to bin
//! `h_z(x) = (x_L + f_z(x_R)) mod b`, `f_z` a coin-tossed AES PRF, and the bin only needs
//! to compare `x_R`, which has `ℓ − ⌊log2 b⌋` bits: (bin, z, x_R) gives x back. The OPRF
//! input in a bin is `x_R ‖ z`. PSSZ15 compares x_R alone and relies on the rare
//! coincidence of two items' bins; naming z, as KKRT16 Fig. 3 does, makes every input of
//! the sender's PRF calls distinct, and costs two bits.
//!
//! **OPRF** (§5.1). An input of t bytes takes t KK13 1-out-of-256 random OTs, one per byte
//! (choice = the byte), on the Walsh–Hadamard code over a 256-column extension:
//! `F(j, x) = H'(j, ⊕_c m_{o_j + c, x_c})` with `m_{i, v} = H(i, q_i ⊕ (WH(v) ∧ s))`. The
//! outer hash H' is the random oracle of §5.1's `F(x) = H(⊕ m_{i, x[i]})`: without it the
//! sender's values would be XOR-related (four items spanning a "rectangle" of byte values
//! in one bin would XOR to zero), which the receiver could see. The stash compares
//! whole items, with a marker bit: ⌈(ℓ + 1)/8⌉ OTs per stash position,
//! ⌈(ℓ − ⌊log2 b⌋ + 2)/8⌉ per bin.
//!
//! **Dummies.** The receiver fills empty bins and stash positions with inputs the sender
//! never evaluates there (z = 0 in a bin; no marker bit in the stash). Inputs are only a
//! few bytes long, so random dummies would often be one of the sender's inputs — at
//! σ = 32 and 2^20 items a bin input has 14 bits — and the receiver, who sees the sender's
//! values of every instance, would find an item outside the intersection.
//!
//! **Cost of naming z.** The two bits of z take one OT more per bin than KKRT16 Table 5's
//! `⌈(ℓ − log n)/8⌉` when `ℓ − ⌊log2 b⌋` is 7 or 0 mod 8 (for instance σ = 32 at 2^16
//! items: 3 OTs instead of 2); at the sizes of Table 3's 2^20 column they cost nothing.

use super::kkrt16::cuckoo_table;
use super::{BatchedOprf, Hashing, Layout, OprfPsi, Variant};
use crate::crypto::{Aes, Block, Prg, WideHash};
use crate::items::{BlockEncoder, Items};
use crate::net::{Channel, Writer};
use crate::ot::{oprf_receive, OprfRows, WalshHadamard};
use crate::protocols::{
    output_bits, Accepts, Config, Options, OutputKind, ParamTable, Parameters, ProtocolInfo,
    RoleInfo, Security, Sizes,
};
use crate::session::Role;
use crate::tables::HASHES;
use crate::{Error, Result, STATISTICAL_SECURITY};
use std::sync::OnceLock;

/// PSSZ15 PSI.
pub(crate) type Pssz15 = OprfPsi<ByteOts>;

/// The item lengths `--sigma` may name.
const SIGMAS: &[u32] = &[32, 64];

/// What pssz15 takes: σ (`--sigma`) for σ-bit integers, none for keys of any length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pssz15Config {
    /// The bit length of the integers; `None`: keys of any length, hashed.
    pub sigma: Option<u32>,
}

impl Config for Pssz15Config {
    const ACCEPTS: Accepts = Accepts {
        sigma: SIGMAS,
        ..Accepts::NOTHING
    };

    fn from_options(options: &Options) -> Result<Self> {
        Ok(Pssz15Config {
            sigma: options.sigma,
        })
    }

    fn options(&self) -> Options {
        Options {
            sigma: self.sigma,
            ..Options::default()
        }
    }
}

static INFO: ProtocolInfo = ProtocolInfo {
    name: "pssz15",
    paper: "Pinkas, Schneider, Segev, Zohner: Phasing: Private Set Intersection using \
            Permutation-based Hashing (USENIX Security 2015), as run in Kolesnikov et al. \
            (CCS 2016) §5 and Fig. 3: KK13 1-out-of-256 OTs per byte, phasing, cuckoo \
            hashing with a stash",
    security: Security::SemiHonest,
    leakage: "The receiver learns the intersection; the sender learns nothing (with --both, \
              the sender learns the intersection too). Both learn the other's set size. \
              Secure only if both parties follow the protocol. Items are hashed to \
              λ + 2·log2(n) bits, or with --sigma 32|64 are integers below 2^σ. A baseline: \
              kkrt16 gives the same result faster.",
    both_allowed: true,
    roles: &[
        RoleInfo {
            role: Role::Sender,
            security: Security::SemiHonest,
            output: OutputKind::Nothing,
            // The sender's extension rows: 1.2 bins per peer item, up to 16 OTs of 32 bytes each.
            peer_item_bytes: 650,
            own_item_bytes: 400,
        },
        RoleInfo {
            role: Role::Receiver,
            security: Security::SemiHonest,
            output: OutputKind::Indices,
            peer_item_bytes: 16,
            // 1.2 bins per item, up to 16 OTs each: a choice byte and a 16-byte output.
            own_item_bytes: 800,
        },
    ],
};

/// The parameters of one PSSZ15 run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pssz15Params {
    /// Cuckoo bins b and stash size s (as KKRT16's).
    pub layout: Layout,
    /// σ, if the items are integers.
    pub sigma: Option<u32>,
    /// The item length ℓ in bits.
    pub item_bits: u32,
    /// Whether items are hashed to ℓ bits (else they are the σ-bit integers).
    pub hashed: bool,
    /// Bits of `x_R`: `ℓ − ⌊log2 b⌋`.
    pub rep_bits: u32,
}

impl Pssz15Params {
    /// The parameters for these sizes and this configuration.
    pub(crate) fn new(sizes: Sizes, config: Pssz15Config) -> Result<Self> {
        let Pssz15Config { sigma } = config;
        let (bins, stash) = cuckoo_table(sizes.receiver);
        let items = (sizes.sender + sizes.receiver).max(2) as f64;
        let hash_bits = (STATISTICAL_SECURITY as f64 + (items * (items - 1.0) / 2.0).log2()).ceil();
        // One bit above the item marks stash inputs (see `stash_input`).
        if hash_bits > 127.0 {
            return Err(Error::Params(format!(
                "{hash_bits}-bit item hashes would be needed (sets too large)"
            )));
        }
        let hash_bits = hash_bits as u32;
        let item_bits = sigma.map_or(hash_bits, |s| s.min(hash_bits));
        let rep_bits = item_bits.saturating_sub(bins.ilog2());
        let p = Pssz15Params {
            layout: Layout {
                bins,
                stash,
                columns: WalshHadamard::COLUMNS,
                out_bits: output_bits(sizes),
            },
            sigma,
            item_bits,
            hashed: sigma.is_none_or(|s| s > item_bits),
            rep_bits,
        };
        // OT rows are numbered with 32 bits (the hash's index).
        let rows = p.ot_layout().ot_rows(p.layout.instances());
        if rows > u32::MAX as usize {
            return Err(Error::Params(format!(
                "{rows} OTs are more than 2^32 (the receiver's set is too large)"
            )));
        }
        Ok(p)
    }

    /// How the OPRF instances map to OTs.
    pub(crate) fn ot_layout(&self) -> OtLayout {
        OtLayout {
            stash: self.layout.stash,
            // The item and the stash marker bit: ⌈(ℓ + 1)/8⌉.
            stash_bytes: (self.item_bits + 1).div_ceil(8) as usize,
            // x_R and z: ⌈(|x_R| + 2)/8⌉.
            bin_bytes: (self.rep_bits + 2).div_ceil(8) as usize,
        }
    }
}

/// The OTs of the OPRF instances, stash positions first: one per byte of the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OtLayout {
    /// Stash positions s.
    pub stash: usize,
    /// OTs per stash position.
    pub stash_bytes: usize,
    /// OTs per bin.
    pub bin_bytes: usize,
}

impl OtLayout {
    /// The OTs of instances `0..instances` (so the first OT of instance `instances`).
    pub(crate) fn ot_rows(&self, instances: usize) -> usize {
        instances.min(self.stash) * self.stash_bytes
            + instances.saturating_sub(self.stash) * self.bin_bytes
    }

    /// The OTs (bytes) of instance `j`.
    fn bytes(&self, j: usize) -> usize {
        if j < self.stash {
            self.stash_bytes
        } else {
            self.bin_bytes
        }
    }
}

impl Parameters for Pssz15Params {
    fn encode(&self) -> Vec<u8> {
        let mut out = self.layout.encode();
        out.extend(
            Writer::new()
                .u64(self.sigma.unwrap_or(0) as u64)
                .u64(self.item_bits as u64)
                .0,
        );
        out
    }

    fn table(&self) -> ParamTable {
        let (l, ots) = (&self.layout, self.ot_layout());
        let mut table = vec![("l", self.item_bits.to_string())];
        if let Some(s) = self.sigma {
            table.push(("sigma", s.to_string()));
        }
        table.extend([
            ("hashed", if self.hashed { "yes" } else { "no" }.to_string()),
            ("bin_input_bits", (self.rep_bits + 2).to_string()),
            ("ots_per_bin", ots.bin_bytes.to_string()),
            ("ots_per_stash", ots.stash_bytes.to_string()),
            ("ots", ots.ot_rows(l.instances()).to_string()),
            ("s", l.stash.to_string()),
            ("k", l.columns.to_string()),
            ("v", l.out_bits.to_string()),
            ("bins", l.bins.to_string()),
        ]);
        ParamTable(table)
    }
}

/// Phasing into b bins with three coin-tossed functions `f_z`.
pub(crate) struct Phasing {
    f: Aes,
    bins: u64,
    item_bits: u32,
    rep_bits: u32,
}

impl Phasing {
    /// `(x_L, x_R)`: the item as an integer, divided by the bin count.
    fn split(&self, x: Block) -> (u64, Block) {
        let (x, b) = (x.as_u128(), u128::from(self.bins));
        ((x % b) as u64, Block::from_u128(x / b))
    }
}

impl Hashing for Phasing {
    fn bins_of(&self, y: &[Block], out: &mut Vec<[u32; HASHES]>) {
        let mut f = [Block::ZERO; HASHES];
        out.clear();
        out.extend(y.iter().map(|&x| {
            let (low, rep) = self.split(x);
            for (z, f) in f.iter_mut().enumerate() {
                *f = rep | Block::from_u128((z as u128 + 1) << 126);
            }
            self.f.encrypt_blocks(&mut f);
            // f_z(x_R) in [b] by multiply-shift (bias ≤ b/2^64), then the bin.
            f.map(|f| {
                let fz = ((f.low_u64() as u128 * self.bins as u128) >> 64) as u64;
                ((low + fz) % self.bins) as u32
            })
        }));
    }

    fn input(&self, y: Block, z: usize) -> Block {
        self.split(y).1 | Block::from_u128((z as u128) << self.rep_bits)
    }

    /// The item with bit ℓ set, which dummies leave clear.
    fn stash_input(&self, y: Block) -> Block {
        y | Block::unit(self.item_bits as usize)
    }

    /// In a bin a random x_R with z = 0, in the stash a random ℓ-bit value without the
    /// stash marker: both shorter than a byte-aligned random block would be, and of a form
    /// the sender never evaluates (an ℓ-bit dummy could otherwise be one of its items,
    /// with probability n_s/2^ℓ: 2^-12 at σ = 32 and 2^20 items).
    fn dummy(&self, prg: &mut Prg, stash: bool) -> Block {
        let bits = if stash { self.item_bits } else { self.rep_bits };
        prg.block() & Block::low_ones(bits as usize)
    }
}

/// PSSZ15's OPRF from KK13 1-out-of-256 OTs, one per byte of the input.
pub(crate) struct ByteOts {
    code: WalshHadamard,
    /// All 256 code words, block-major.
    words: Vec<Block>,
    ot_hash: WideHash,
    outer: WideHash,
    ots: OtLayout,
    /// The sender's outputs of the stash OTs for all 256 choices, OT by OT: every item is
    /// evaluated on every stash position, so the s·⌈ℓ/8⌉ stash OTs are best tabulated
    /// whole (PSZ14's sender computes all messages of its OTs), once their rows arrived.
    stash_table: OnceLock<Vec<Block>>,
}

impl ByteOts {
    fn new(p: &Pssz15Params, sid: &[u8; 32]) -> Self {
        let code = WalshHadamard::new();
        ByteOts {
            words: code.all_words(),
            code,
            ot_hash: WideHash::new("venn/pssz15/ot", sid),
            outer: WideHash::new("venn/pssz15/oprf", sid),
            ots: p.ot_layout(),
            stash_table: OnceLock::new(),
        }
    }

    /// Byte `c` of `x`: the choice of the input's `c`-th OT.
    fn byte(x: Block, c: usize) -> u8 {
        x.to_le_bytes()[c]
    }

    /// The stash OTs' outputs for every choice (see [`ByteOts::stash_table`]'s field),
    /// computed from `ot` on first use.
    fn stash_table(&self, ot: &OprfRows) -> &[Block] {
        self.stash_table.get_or_init(|| {
            let rows = self.ots.ot_rows(self.ots.stash) as u32;
            let ot_rows: Vec<u32> = (0..rows).flat_map(|r| [r; 256]).collect();
            let codes: Vec<u32> = (0..rows).flat_map(|_| 0..256).collect();
            let mut table = vec![Block::ZERO; ot_rows.len()];
            ot.eval_batch(&self.ot_hash, &ot_rows, &self.words, &codes, &mut table);
            table
        })
    }

    /// `out[e] = H'(instances[e], folded[e])`.
    fn outer(&self, instances: &[u32], folded: &[Block], out: &mut [Block]) {
        let mut rows = vec![Block::ZERO; instances.len() * WideHash::ROW_BLOCKS];
        for (row, &f) in rows.chunks_exact_mut(WideHash::ROW_BLOCKS).zip(folded) {
            row[0] = f;
        }
        self.outer.hash_rows(instances, &mut rows, 16, out);
    }
}

impl BatchedOprf for ByteOts {
    fn ot_rows(&self, instances: usize) -> usize {
        self.ots.ot_rows(instances)
    }

    fn receive(
        &self,
        chan: &mut dyn Channel,
        seeds: &[[Block; 2]],
        inputs: &[Block],
    ) -> Result<Vec<Block>> {
        let mut choices = Vec::with_capacity(self.ot_rows(inputs.len()));
        for (j, &x) in inputs.iter().enumerate() {
            choices.extend((0..self.ots.bytes(j)).map(|c| Self::byte(x, c)));
        }
        let ot = oprf_receive(chan, seeds, &self.code, &choices)?.outputs(&self.ot_hash);
        let mut rest = &ot[..];
        let folded: Vec<Block> = (0..inputs.len())
            .map(|j| {
                let (mine, next) = rest.split_at(self.ots.bytes(j));
                rest = next;
                mine.iter().fold(Block::ZERO, |a, &m| a ^ m)
            })
            .collect();
        let instances: Vec<u32> = (0..inputs.len() as u32).collect();
        let mut out = vec![Block::ZERO; inputs.len()];
        self.outer(&instances, &folded, &mut out);
        Ok(out)
    }

    /// Stash instances are looked up in the table of their OTs' outputs; bin instances
    /// are evaluated OT by OT.
    fn eval(
        &self,
        ot: &OprfRows,
        instances: &[u32],
        inputs: &[Block],
        input_at: &[u32],
        out: &mut [Block],
    ) {
        let input = |e: usize| inputs[input_at[e] as usize];
        let (mut rows, mut codes) = (Vec::new(), Vec::new());
        for (e, &j) in instances.iter().enumerate() {
            let (j, first) = (j as usize, self.ots.ot_rows(j as usize));
            if j >= self.ots.stash {
                for c in 0..self.ots.bin_bytes {
                    rows.push((first + c) as u32);
                    codes.push(Self::byte(input(e), c) as u32);
                }
            }
        }
        let mut values = vec![Block::ZERO; rows.len()];
        ot.eval_batch(&self.ot_hash, &rows, &self.words, &codes, &mut values);
        let stash_table = match instances.iter().any(|&j| (j as usize) < self.ots.stash) {
            true => self.stash_table(ot),
            false => &[],
        };
        let mut bins = values.chunks_exact(self.ots.bin_bytes);
        let folded: Vec<Block> = (0..instances.len())
            .map(|e| {
                let j = instances[e] as usize;
                if j < self.ots.stash {
                    let first = self.ots.ot_rows(j);
                    (0..self.ots.stash_bytes)
                        .map(|c| stash_table[(first + c) * 256 + Self::byte(input(e), c) as usize])
                        .fold(Block::ZERO, |a, m| a ^ m)
                } else {
                    let mine = bins.next().expect("a value per bin OT");
                    mine.iter().fold(Block::ZERO, |a, &m| a ^ m)
                }
            })
            .collect();
        self.outer(instances, &folded, out);
    }
}

impl Variant for ByteOts {
    const INFO: &'static ProtocolInfo = &INFO;
    /// The toss gives a code key and a hash seed, as for kkrt16; the Walsh–Hadamard code
    /// has no key, so only the seed is used.
    const SEEDS_TOSS: &'static str = "PSSZ15 phasing seed";
    type Config = Pssz15Config;
    type Params = Pssz15Params;
    type Oprf = ByteOts;
    type Hashing = Phasing;

    fn params(sizes: Sizes, config: Pssz15Config) -> Result<Pssz15Params> {
        Pssz15Params::new(sizes, config)
    }

    fn layout(p: &Pssz15Params) -> Layout {
        p.layout
    }

    fn columns(_: Sizes) -> Result<usize> {
        Ok(WalshHadamard::COLUMNS)
    }

    fn check_items(config: Pssz15Config, items: &Items) -> Result<()> {
        items.check_integers(INFO.name, config.sigma)
    }

    fn values(p: &Pssz15Params, items: &Items, sid: &[u8; 32]) -> Result<Vec<Block>> {
        if let (Some(sigma), false) = (p.sigma, p.hashed) {
            return Ok(items
                .integers(sigma)?
                .into_iter()
                .map(Block::from)
                .collect());
        }
        let encoder = BlockEncoder::new("venn/pssz15/item", sid);
        let mask = Block::low_ones(p.item_bits as usize);
        Ok(encoder.encode_all(items, mask))
    }

    fn oprf(p: &Pssz15Params, _: Block, sid: &[u8; 32]) -> ByteOts {
        ByteOts::new(p, sid)
    }

    fn hashing(p: &Pssz15Params, seed: Block) -> Phasing {
        Phasing {
            f: Aes::new(seed),
            bins: p.layout.bins as u64,
            item_bits: p.item_bits,
            rep_bits: p.rep_bits,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Prg;

    fn params(log_n: u32, sigma: Option<u32>) -> Pssz15Params {
        let n = 1u64 << log_n;
        let sizes = Sizes {
            sender: n,
            receiver: n,
        };
        Pssz15Params::new(sizes, Pssz15Config { sigma }).unwrap()
    }

    #[test]
    fn ots_per_bin_follow_kkrt16_table_5() {
        // KKRT16 Table 5: ⌈(min(v', ℓ) − log n)/8⌉ OTs per bin, here with two more bits
        // for z (module doc): the same at 2^20; one more at 2^16, where ℓ − 16 is 0 mod 8.
        for (log_n, sigma, per_bin) in [(20, 32, 2), (20, 64, 6), (16, 32, 3), (16, 64, 7)] {
            let p = params(log_n, Some(sigma));
            assert!(!p.hashed);
            let ots = p.ot_layout();
            assert_eq!(ots.bin_bytes, per_bin, "2^{log_n}, σ = {sigma}");
            assert_eq!(ots.stash_bytes, sigma as usize / 8 + 1, "the marker bit");
        }
        // Hashed items: λ + log2 C(2^21, 2) = 81 bits, 61 of them compared in a bin.
        let p = params(20, None);
        let ots = p.ot_layout();
        assert_eq!((p.item_bits, p.rep_bits), (81, 61));
        assert_eq!((ots.bin_bytes, ots.stash_bytes), (8, 11));
        assert_eq!(ots.ot_rows(p.layout.instances()), 3 * 11 + 1_258_292 * 8);
        assert_eq!(p.layout.out_bits, 80);
        assert_eq!((p.layout.bins, p.layout.stash), (1_258_292, 3));
        // Where the hash is shorter than σ, the items are hashed.
        let p = params(8, Some(64));
        assert!(p.hashed);
        assert_eq!(p.item_bits, 57);
    }

    #[test]
    fn phasing_gives_the_item_back_from_its_bin_and_input() {
        let p = params(12, None);
        let h = ByteOts::hashing(&p, Block::from(99));
        let mut prg = Prg::from_seed(Block::from(4));
        let y: Vec<Block> = (0..2000)
            .map(|_| prg.block() & Block::low_ones(p.item_bits as usize))
            .collect();
        let mut bins = Vec::new();
        h.bins_of(&y, &mut bins);
        let b = p.layout.bins as u128;
        for (&x, bins) in y.iter().zip(&bins) {
            for (z, &bin) in bins.iter().enumerate() {
                let input = h.input(x, z + 1).as_u128();
                assert_eq!(input >> p.rep_bits, z as u128 + 1, "z is named");
                let rep = input & Block::low_ones(p.rep_bits as usize).as_u128();
                let mut f = [Block::from_u128(rep | (z as u128 + 1) << 126)];
                h.f.encrypt_blocks(&mut f);
                let fz = (f[0].low_u64() as u128 * b) >> 64;
                let low = (bin as u128 + b - fz) % b;
                assert_eq!(rep * b + low, x.as_u128());
            }
        }
    }

    #[test]
    fn dummies_are_never_inputs_the_sender_evaluates() {
        for sigma in [Some(32), Some(64), None] {
            let p = params(16, sigma);
            let h = ByteOts::hashing(&p, Block::from(5));
            let ots = p.ot_layout();
            let mut prg = Prg::from_seed(Block::from(6));
            let x = prg.block() & Block::low_ones(p.item_bits as usize);
            let input = |z| h.input(x, z).as_u128();
            let stash_input = h.stash_input(x).as_u128();
            for _ in 0..1000 {
                let bin = h.dummy(&mut prg, false).as_u128();
                assert_eq!(bin >> p.rep_bits, 0, "z = 0");
                assert!(bin < 1 << (8 * ots.bin_bytes));
                let stash = h.dummy(&mut prg, true).as_u128();
                assert_eq!(stash >> p.item_bits, 0, "no marker");
                assert!(stash < 1 << (8 * ots.stash_bytes));
            }
            for z in 1..=3 {
                assert_ne!(input(z) >> p.rep_bits, 0);
                assert!(input(z) < 1 << (8 * ots.bin_bytes));
            }
            assert_eq!(stash_input >> p.item_bits, 1);
            assert!(stash_input < 1 << (8 * ots.stash_bytes));
        }
    }

    #[test]
    fn integers_are_refused_unless_they_fit_sigma() {
        let o = |sigma| Pssz15Config { sigma: Some(sigma) };
        let items: Items = ["1", "4294967296"].into_iter().collect();
        assert!(ByteOts::check_items(o(64), &items).is_ok());
        let err = ByteOts::check_items(o(32), &items).unwrap_err().to_string();
        assert!(err.contains("key number 2"), "{err}");
        let words: Items = ["alice@example.com"].into_iter().collect();
        assert!(ByteOts::check_items(Pssz15Config::default(), &words).is_ok());
        assert!(ByteOts::check_items(o(64), &words).is_err());
    }
}
