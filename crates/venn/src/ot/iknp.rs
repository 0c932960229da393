//! IKNP random-OT extension (Ishai–Kilian–Nissim–Petrank 2003, as in KKRT16 §2.1):
//! κ = 128 base OTs extended to any number of random OTs, semi-honest secure.
//!
//! Roles: the IKNP *sender* was the base-OT *receiver* (choice bits Δ); the IKNP
//! *receiver* was the base-OT *sender*. Outputs are hashed with the tweakable
//! correlation-robust hash: `m_{j,0} = H(j, q_j)`, `m_{j,1} = H(j, q_j ⊕ Δ)`,
//! receiver `m_{j,r_j} = H(j, t_j)`.

use super::{ExtensionReceiver, ExtensionSender, PrgMatrix, BASE_OTS};
use crate::crypto::{tccr_hash, Block};
use crate::net::Channel;
use crate::Result;

/// IKNP sender: from the base-OT receiver's choice bits `delta` and its keys, produces
/// `count` random OT message pairs.
pub fn iknp_send(
    chan: &mut dyn Channel,
    delta: &[bool],
    base_keys: &[Block],
    count: usize,
) -> Result<Vec<[Block; 2]>> {
    assert_eq!(delta.len(), BASE_OTS);
    let ext = ExtensionSender::new(base_keys, delta);
    let d = ext.s()[0];
    let mut q = ext.extend(chan, count, |_| {})?;
    let mut q1: Vec<Block> = q.iter().map(|r| r ^ d).collect();
    tccr_hash(0, &mut q);
    tccr_hash(0, &mut q1);
    Ok(q.into_iter().zip(q1).map(|(a, b)| [a, b]).collect())
}

/// IKNP receiver: from the base-OT sender's key pairs, receives `m_{j, choices_j}`.
pub fn iknp_receive(
    chan: &mut dyn Channel,
    base_keys: &[[Block; 2]],
    choices: &[bool],
) -> Result<Vec<Block>> {
    assert_eq!(base_keys.len(), BASE_OTS);
    let matrix = extend_rows(chan, base_keys, choices, |_, _| {})?;
    let mut t = vec![0; choices.len().next_multiple_of(128)];
    matrix.par_rows(0, &mut t);
    t.truncate(choices.len());
    tccr_hash(0, &mut t);
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
            *u ^= if c { Block::MAX } else { 0 };
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
        let mut prg = Prg::from_seed(5);
        let delta: Vec<bool> = (0..BASE_OTS).map(|_| prg.u64() & 1 == 1).collect();
        let pairs: Vec<[Block; 2]> = (0..BASE_OTS).map(|_| [prg.block(), prg.block()]).collect();
        let chosen: Vec<Block> = pairs
            .iter()
            .zip(&delta)
            .map(|(p, &d)| p[d as usize])
            .collect();
        let count = 1000;
        let choices: Vec<bool> = (0..count).map(|_| prg.u64() & 1 == 1).collect();
        let (mut a, mut b) = mem_pair(Duration::from_secs(10));
        let c2 = choices.clone();
        let t = std::thread::spawn(move || iknp_receive(&mut b, &pairs, &c2).unwrap());
        let sent = iknp_send(&mut a, &delta, &chosen, count).unwrap();
        let got = t.join().unwrap();
        assert_eq!(got.len(), count);
        for j in 0..count {
            let c = choices[j] as usize;
            assert_eq!(got[j], sent[j][c], "OT {j}");
            assert_ne!(got[j], sent[j][1 - c], "OT {j}");
        }
    }
}
