//! The session layer, between the framed channels of [`crate::net`] and the protocols:
//! who plays which role, the run plan that opens a run ([`run_plan`]), the handshake that fixes what a run is about (and its session id),
//! coin tossing, and the confirmation that both parties saw the same transcript before any
//! output is used.
//!
//! What this layer guarantees, over a plain link, is integrity against a faulty network or
//! a relay that alters frames without rewriting the checks: a frame altered, dropped,
//! reordered or replayed from another session makes the handshake hashes or the
//! transcript digests differ, and the run fails without output. An active attacker on an
//! unauthenticated link sees every frame and can rewrite those checks too (or play both
//! ends); only an authenticated channel (TLS with pinned keys) stops that. One exception:
//! the online run of a precomputation is keyed with the secret the two parties agreed on
//! in it, so there the checks hold against anyone who was not in the middle of the
//! precomputation.

mod coin_toss;
mod confirmation;
mod handshake;
mod key_agreement;
pub mod run_plan;

pub use crate::parties::{Role, Sizes, VERSION};
pub use coin_toss::{CoinToss, CoinTossReply, ShareSent};
pub use confirmation::Confirming;
pub use handshake::{
    handshake, looks_like_hello, Hello, Mode, Resume, Session, WireParams, HELLO_PREFIX,
};
pub use key_agreement::agree_secret;
