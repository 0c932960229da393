//! The base VOLE under the silent one: a few hundred correlations β_i = z_i + y_i·Δ, where
//! S holds Δ and the β_i and R holds its chosen y_i and the z_i, by Gilboa's OT
//! multiplication (Gilboa, CRYPTO 1999): one OT per bit j of Δ with S choosing Δ_j; R sends
//! d_j = r0_j + r1_j + y·X^j, so that S's r_{Δ_j,j} + Δ_j·d_j = r0_j + Δ_j·y·X^j and the
//! sum over j is z + y·Δ with z = Σ_j r0_j.
//!
//! Against a malicious R ([`challenge`], [`answer`], [`verify`]): nothing above makes R use
//! one y in all 128 OTs. With y_j varying by j, S would hold β = z + M(Δ) for a GF(2)-linear
//! M of R's choosing, every later comparison would leak bits of Δ, and with Δ R could
//! evaluate S's OPRF anywhere (rr22.md §1.2 item 1c — the check volePSI lacks). So S
//! checks a random combination, as COPEe's and Wolverine's base sVOLE do (WYKW21 §4,
//! Fig. 5): from a seed S draws after every d_j is in, χ_i = AES_seed(i), R opens
//! Y = Σ_i χ_i·y_i + y_mask and Z = Σ_i χ_i·z_i + z_mask (the last correlation, used for
//! nothing else, masks the y_i), and S checks Σ_i χ_i·β_i + β_mask = Z + Y·Δ. Inconsistent
//! y_j pass only where R guessed an affine function of Δ's bits: a pass with probability
//! 2^-k tells it k bits, the key-query leakage Wolverine's functionality allows.

use crate::crypto::{gf128, Aes, Block, Prg};
use crate::net::Channel;
use crate::{Error, Result};

/// `count` blocks expanded from an OT message.
fn expand_seed(seed: Block, count: usize) -> Vec<Block> {
    let mut out = vec![Block::ZERO; count];
    Prg::from_seed(seed).fill_blocks(&mut out);
    out
}

/// S's side, from the messages of its 128 OTs (choice j the bit j of `delta`): the β_i
/// for `count` correlations.
pub(super) fn send(
    chan: &mut dyn Channel,
    chosen: &[Block],
    delta: Block,
    count: usize,
) -> Result<Vec<Block>> {
    let mut beta = vec![Block::ZERO; count];
    let mut d = Vec::new();
    for (j, &m) in chosen.iter().enumerate() {
        chan.recv_blocks(count, &mut d, "a base-VOLE row")?;
        let r = expand_seed(m, count);
        let bit = delta.bit(j);
        for ((b, r), d) in beta.iter_mut().zip(&r).zip(&d) {
            *b ^= r ^ if bit { *d } else { Block::ZERO };
        }
    }
    Ok(beta)
}

/// R's side, as the sender of the 128 OTs (`pairs`), for its values `y`: the z_i.
pub(super) fn receive(
    chan: &mut dyn Channel,
    pairs: &[[Block; 2]],
    y: &[Block],
) -> Result<Vec<Block>> {
    let mut z = vec![Block::ZERO; y.len()];
    for (j, pair) in pairs.iter().enumerate() {
        let (r0, r1) = (expand_seed(pair[0], y.len()), expand_seed(pair[1], y.len()));
        let d: Vec<Block> = (0..y.len())
            .map(|i| r0[i] ^ r1[i] ^ (y[i] * Block::unit(j)))
            .collect();
        chan.send_blocks(&d)?;
        z.iter_mut().zip(&r0).for_each(|(z, r)| *z ^= r);
    }
    Ok(z)
}

/// `Σ_i χ_i·v_i + v_last` over all but the last of `values` (the mask), χ_i = AES_seed(i).
fn combine(seed: Block, values: &[Block]) -> Block {
    let (last, rest) = values.split_last().expect("a mask correlation");
    let mut chi: Vec<Block> = (0..rest.len() as u64).map(Block::from).collect();
    Aes::new(seed).encrypt_blocks(&mut chi);
    gf128::inner_product(&chi, rest) ^ last
}

/// S's challenge, drawn and sent once every d_j is in.
pub(super) fn challenge(chan: &mut dyn Channel, prg: &mut Prg) -> Result<Block> {
    let seed = prg.block();
    chan.send_blocks(&[seed])?;
    Ok(seed)
}

/// R's answer to the challenge `seed`: (Y, Z).
pub(super) fn answer(seed: Block, y: &[Block], z: &[Block]) -> [Block; 2] {
    [combine(seed, y), combine(seed, z)]
}

/// S's verdict on R's answer.
pub(super) fn verify(seed: Block, beta: &[Block], delta: Block, [y, z]: [Block; 2]) -> Result<()> {
    if combine(seed, beta) != z ^ (y * delta) {
        return Err(Error::CheatingDetected(
            "base-VOLE consistency check failed: the VOLE receiver did not use one noise value \
             in every OT"
                .into(),
        ));
    }
    Ok(())
}
