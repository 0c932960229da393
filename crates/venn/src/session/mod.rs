//! The session layer, between the framed channels of [`crate::net`] and the protocols:
//! who plays which role, the handshake that fixes what a run is about (and its session id),
//! coin tossing, and the confirmation that both parties saw the same transcript before any
//! output is used.
//!
//! What this layer guarantees is integrity against a faulty or meddling network between
//! two honest parties: a frame altered, dropped, reordered or replayed from another
//! session makes both handshake hashes or transcript digests differ, and the run fails
//! without output. It does not authenticate the peer: a party in the middle that plays
//! both ends is stopped only by an authenticated channel (TLS with pinned keys).

mod coin_toss;
mod confirmation;
mod handshake;

pub use coin_toss::{CoinToss, CoinTossReply};
pub use confirmation::Confirming;
pub use handshake::{handshake, Hello, Resume, Session, WireParams, VERSION};

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

    fn from_code(code: u8) -> Result<Self> {
        match code {
            0 => Ok(Role::Sender),
            1 => Ok(Role::Receiver),
            _ => Err(Error::Handshake(format!(
                "the peer announced unknown role {code}"
            ))),
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
