//! IKNP random-OT extension (Ishai–Kilian–Nissim–Petrank 2003, as in KKRT16 §2.1):
//! κ = 128 base OTs extended to any number of random OTs, semi-honest secure.
//!
//! Roles: the IKNP *sender* was the base-OT *receiver* (choice bits Δ); the IKNP
//! *receiver* was the base-OT *sender*. Outputs are hashed with the tweakable
//! correlation-robust hash: `m_{j,0} = H(j, q_j)`, `m_{j,1} = H(j, q_j ⊕ Δ)`,
//! receiver `m_{j,r_j} = H(j, t_j)`.

use super::{ExtensionReceiver, ExtensionSender, PrgMatrix, ReceiverSeeds, SenderSeeds};
use crate::crypto::{tccr_hash, Block};
use crate::net::Channel;
use crate::Result;

/// IKNP sender: from its base-OT seeds, produces `count` random OT message pairs.
pub fn iknp_send(
    chan: &mut dyn Channel,
    seeds: &SenderSeeds,
    count: usize,
) -> Result<Vec<[Block; 2]>> {
    let mut q = iknp_send_correlated(chan, seeds, count)?;
    let d = seeds.delta_block();
    let mut q1: Vec<Block> = q.iter().map(|r| r ^ d).collect();
    tccr_hash(0, &mut q);
    tccr_hash(0, &mut q1);
    Ok(q.into_iter().zip(q1).map(|(a, b)| [a, b]).collect())
}

/// IKNP receiver: from its base-OT seeds, receives `m_{j, choices_j}`.
pub fn iknp_receive(
    chan: &mut dyn Channel,
    seeds: &ReceiverSeeds,
    choices: &[bool],
) -> Result<Vec<Block>> {
    let mut t = iknp_receive_correlated(chan, seeds, choices)?;
    tccr_hash(0, &mut t);
    Ok(t)
}

/// IKNP's correlated OTs before the hash, sender's side: the rows `q_j`, whose receiver
/// holds `t_j = q_j ⊕ r_j·Δ` (Δ = [`SenderSeeds::delta_block`]).
pub fn iknp_send_correlated(
    chan: &mut dyn Channel,
    seeds: &SenderSeeds,
    count: usize,
) -> Result<Vec<Block>> {
    ExtensionSender::new(&seeds.keys, &seeds.delta).extend(chan, count, |_| {})
}

/// IKNP's correlated OTs before the hash, receiver's side: the rows `t_j`.
pub fn iknp_receive_correlated(
    chan: &mut dyn Channel,
    seeds: &ReceiverSeeds,
    choices: &[bool],
) -> Result<Vec<Block>> {
    let matrix = extend_rows(chan, &seeds.keys, choices, |_, _| {})?;
    let mut t = vec![Block::ZERO; choices.len().next_multiple_of(128)];
    matrix.par_rows(0, &mut t);
    t.truncate(choices.len());
    Ok(t)
}

/// The IKNP step with codeword `r_j · 1^κ` per row; `tamper(first_row, u)` may alter the
/// rows sent (tests play a cheating receiver with it). Returns the matrix of the
/// receiver's rows `t_j`.
pub(super) fn extend_rows(
    chan: &mut dyn Channel,
    base_keys: &[[Block; 2]],
    choices: &[bool],
    tamper: impl Fn(usize, &mut [Block]) + Sync,
) -> Result<PrgMatrix> {
    let ext = ExtensionReceiver::new(base_keys);
    ext.extend(chan, choices.len(), |first, u| {
        for (u, &c) in u.iter_mut().zip(&choices[first..]) {
            *u ^= if c { Block::ONES } else { Block::ZERO };
        }
        tamper(first, u);
    })?;
    Ok(ext.replay_t())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Prg;
    use crate::net::mem_pair;
    use std::time::Duration;

    #[test]
    fn receiver_gets_exactly_the_chosen_message() {
        let mut prg = Prg::from_seed(Block::from(5));
        let (sender_seeds, receiver_seeds) = super::super::seeds::test_seeds(&mut prg);
        let count = 1000;
        let choices: Vec<bool> = (0..count).map(|_| prg.u64() & 1 == 1).collect();
        let (mut a, mut b) = mem_pair(Duration::from_secs(10));
        let c2 = choices.clone();
        let t = std::thread::spawn(move || iknp_receive(&mut b, &receiver_seeds, &c2).unwrap());
        let sent = iknp_send(&mut a, &sender_seeds, count).unwrap();
        let got = t.join().unwrap();
        assert_eq!(got.len(), count);
        for j in 0..count {
            let c = choices[j] as usize;
            assert_eq!(got[j], sent[j][c], "OT {j}");
            assert_ne!(got[j], sent[j][1 - c], "OT {j}");
        }
    }
}
