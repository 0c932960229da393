//! Oblivious transfer: base OTs over Ristretto255, IKNP and KOS15 random-OT extension,
//! KK13 1-out-of-256 OT and the KKRT16 batched related-key OPRF, all built on one row-wise
//! extension core.

mod base;
pub mod bch;
mod extension;
mod iknp;
mod kkrt;
mod kos15;
pub mod oos16;
mod prg_matrix;
mod seeds;
mod walsh_hadamard;

pub use base::{BaseOt, MasnyRindal, BASE_OTS};
pub use extension::{ExtensionReceiver, ExtensionSender, IncomingRows, OutgoingRows};
pub use iknp::{iknp_receive, iknp_receive_correlated, iknp_send, iknp_send_correlated};
pub use kkrt::{
    oprf_receive, Code, OprfReceiver, OprfRows, OprfSender, PseudorandomCode, OPRF_BLOCKS,
};
pub use kos15::{
    kos_receive, kos_send, KosChallenge, KosReceiver, KosReceiving, KosSender, KosSending,
};
pub use prg_matrix::PrgMatrix;
#[cfg(test)]
pub(crate) use seeds::test_seeds;
pub use seeds::{ReceiverSeeds, SenderSeeds};
pub use walsh_hadamard::WalshHadamard;
