//! Fig. 4 steps 3–4: the sender opens a random p_chk fraction C of the OTs (sent as a seed);
//! the receiver names the opened OTs R ⊆ C in which it used choice bit 0 and proves it with
//! the aggregate `r* = ⊕_{i∈R} m_{i,0}` (§4.1, "aggregating proofs of choice bits").

use super::Rr17BloomParams;
use crate::crypto::{Aes, Block, Prg};
use crate::net::{Channel, Reader, Writer};
use crate::ot::{KosReceiver, KosSender};
use crate::{Error, Result};
use rayon::prelude::*;

/// `C`: each of the `n_ot` OTs independently with probability `p_chk`, derived from `seed`
/// with integer comparisons only, so both sides derive the same set on any platform: OT
/// `j` is opened when the j-th 64-bit word of the AES-CTR stream under `seed` (the low
/// half of block j/2 for even j, the high half for odd j) is below `p_chk · 2^64`.
/// Computed in parallel chunks. Sorted, as are all the sets of OT indices here.
pub(super) fn challenge_set(seed: Block, p: &Rr17BloomParams) -> Vec<u32> {
    const BLOCKS: usize = 1 << 14;
    let threshold = (p.p_chk * 2f64.powi(64)) as u64;
    let aes = Aes::new(seed);
    let n = p.n_ot as usize;
    let parts: Vec<Vec<u32>> = (0..n.div_ceil(2 * BLOCKS))
        .into_par_iter()
        .map(|c| {
            let first = c * 2 * BLOCKS;
            let count = (n - first).min(2 * BLOCKS);
            let mut words: Vec<Block> = (0..count.div_ceil(2))
                .map(|b| Block::from((first / 2 + b) as u64))
                .collect();
            aes.encrypt_blocks(&mut words);
            let word = |i: usize| (words[i / 2].as_u128() >> (64 * (i % 2))) as u64;
            (0..count)
                .filter(|&i| word(i) < threshold)
                .map(|i| (first + i) as u32)
                .collect()
        })
        .collect();
    parts.concat()
}

fn xor_all(messages: &[Block]) -> Block {
    messages.iter().fold(Block::ZERO, |a, m| a ^ m)
}

/// The sender's side: sends the challenge, checks the response. Returns C.
pub(super) fn challenge(
    chan: &mut dyn Channel,
    ot: &KosSender,
    p: &Rr17BloomParams,
    prg: &mut Prg,
) -> Result<Vec<u32>> {
    let seed = prg.block();
    chan.send(&Writer::new().block(seed).0)?;
    let c = challenge_set(seed, p);
    let msg = chan.recv_exact(c.len().div_ceil(8) + 16, "cut-and-choose response")?;
    let (bits, proof) = msg.split_at(c.len().div_ceil(8));
    let r: Vec<u32> = c
        .iter()
        .enumerate()
        .filter(|(i, _)| bits[i / 8] >> (i % 8) & 1 == 1)
        .map(|(_, &j)| j)
        .collect();
    let ones = (c.len() - r.len()) as u64;
    if ones > p.n_maxones {
        return Err(Error::CheatingDetected(format!(
            "the receiver used choice bit 1 in {ones} of the {} opened OTs; at most {} are allowed",
            c.len(),
            p.n_maxones
        )));
    }
    let r_star = Reader::new(proof, "r*").block()?;
    let mut zeros = Vec::with_capacity(r.len());
    ot.messages(&r, false, &mut zeros);
    if r_star != xor_all(&zeros) {
        return Err(Error::CheatingDetected(
            "the receiver's proof r* of its zero choice bits is wrong".into(),
        ));
    }
    Ok(c)
}

/// The receiver's side: derives C from the seed, answers with R and r*. Returns C.
pub(super) fn respond(
    chan: &mut dyn Channel,
    ot: &KosReceiver,
    p: &Rr17BloomParams,
) -> Result<Vec<u32>> {
    let msg = chan.recv_exact(16, "cut-and-choose seed")?;
    let c = challenge_set(Reader::new(&msg, "seed").block()?, p);
    if c.len() as u64 > p.n_ot - p.n_bf {
        return Err(Error::Protocol {
            expected: format!("at most {} opened OTs", p.n_ot - p.n_bf),
            got: format!(
                "{} (an event of probability ≤ 2^-40 for an honest sender)",
                c.len()
            ),
        });
    }
    let mut bits = vec![0u8; c.len().div_ceil(8)];
    let mut r = Vec::new();
    for (i, &j) in c.iter().enumerate() {
        if !ot.choice(j as usize) {
            bits[i / 8] |= 1 << (i % 8);
            r.push(j);
        }
    }
    let proof = xor_all(&ot.messages(&r));
    chan.send(&Writer::new().bytes(&bits).block(proof).0)?;
    Ok(c)
}
