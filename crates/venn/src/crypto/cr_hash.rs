//! Tweakable circular correlation-robust hash from fixed-key AES
//! (Guo–Katz–Wang–Yu, "Efficient and secure multiparty computation from fixed-key block
//! ciphers", S&P 2020, §7.4): `H(i, x) = π(π(x) ⊕ i) ⊕ π(x)`.

use super::{Aes, Block};

/// Replaces each `x[j]` by `H(first_tweak + j, x[j])`, in batches.
pub fn tccr_hash(first_tweak: u64, x: &mut [Block]) {
    const BATCH: usize = 128;
    let pi = Aes::fixed();
    let mut px = [0 as Block; BATCH];
    for (c, chunk) in x.chunks_mut(BATCH).enumerate() {
        let px = &mut px[..chunk.len()];
        px.copy_from_slice(chunk);
        pi.encrypt_blocks(px);
        let base = first_tweak + (c * BATCH) as u64;
        for (j, (y, p)) in chunk.iter_mut().zip(px.iter()).enumerate() {
            *y = p ^ (base + j as u64) as Block;
        }
        pi.encrypt_blocks(chunk);
        for (y, p) in chunk.iter_mut().zip(px.iter()) {
            *y ^= p;
        }
    }
}
