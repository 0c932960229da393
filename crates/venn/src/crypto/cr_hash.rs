//! Tweakable circular correlation-robust hash from fixed-key AES
//! (Guo–Katz–Wang–Yu, "Efficient and secure multiparty computation from fixed-key block
//! ciphers", S&P 2020, §7.4): `H(i, x) = π(π(x) ⊕ i) ⊕ π(x)`.

use super::{Aes, Block};

/// Replaces each `x[j]` by `H(tweaks[j], x[j])`, in batches.
pub fn tccr_hash_with(tweaks: &[u64], x: &mut [Block]) {
    assert_eq!(tweaks.len(), x.len());
    const BATCH: usize = 128;
    let pi = Aes::fixed();
    let mut px = [Block::ZERO; BATCH];
    for (chunk, tweaks) in x.chunks_mut(BATCH).zip(tweaks.chunks(BATCH)) {
        let px = &mut px[..chunk.len()];
        px.copy_from_slice(chunk);
        pi.encrypt_blocks(px);
        for ((y, p), &t) in chunk.iter_mut().zip(px.iter()).zip(tweaks) {
            *y = p ^ Block::from(t);
        }
        pi.encrypt_blocks(chunk);
        for (y, p) in chunk.iter_mut().zip(px.iter()) {
            *y ^= p;
        }
    }
}

/// Replaces each `x[j]` by `H(first_tweak + j, x[j])`.
pub fn tccr_hash(first_tweak: u64, x: &mut [Block]) {
    let mut tweaks = [0u64; 128];
    for (c, chunk) in x.chunks_mut(tweaks.len()).enumerate() {
        let base = first_tweak + (c * tweaks.len()) as u64;
        for (i, t) in tweaks.iter_mut().enumerate() {
            *t = base + i as u64;
        }
        tccr_hash_with(&tweaks[..chunk.len()], chunk);
    }
}
