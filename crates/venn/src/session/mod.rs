//! The session layer, between the framed channels of [`crate::net`] and the protocols:
//! who plays which role, the handshake that fixes what a run is about (and its session id),
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

pub use coin_toss::{CoinToss, CoinTossReply, ShareSent};
pub use confirmation::Confirming;
pub use handshake::{
    handshake, looks_like_hello, Hello, Mode, Resume, Session, WireParams, HELLO_PREFIX, VERSION,
};
pub use key_agreement::agree_secret;

use crate::{Error, Result};

/// The set sizes a run's parameters are computed for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// The sender's set size (or, for a precomputed state, the most it may bring).
    pub sender: u64,
    /// The receiver's set size (or, for a precomputed state, the most it may bring).
    pub receiver: u64,
}

/// Which side of a two-party protocol a party plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Contributes its set; learns the intersection only with `--both`.
    Sender,
    /// Learns the intersection.
    Receiver,
}

impl Role {
    pub(crate) fn code(self) -> u8 {
        match self {
            Role::Sender => 0,
            Role::Receiver => 1,
        }
    }

    pub(crate) fn from_code(code: u8) -> Result<Self> {
        match code {
            0 => Ok(Role::Sender),
            1 => Ok(Role::Receiver),
            _ => Err(Error::Handshake(format!(
                "the peer announced unknown role {code}"
            ))),
        }
    }

    /// The other role.
    pub fn other(self) -> Role {
        match self {
            Role::Sender => Role::Receiver,
            Role::Receiver => Role::Sender,
        }
    }

    /// The lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Role::Sender => "sender",
            Role::Receiver => "receiver",
        }
    }
}
