//! The two parties of a run, as every layer names them: their roles, the set sizes a
//! run is computed for, and the wire-format version they speak. Below [`crate::session`]
//! (which re-exports them) so that [`crate::state`], which the session layer does not
//! need, can name them without importing it.

use crate::{Error, Result};

/// Wire-format version; bumped on any incompatible change (7: the GMW circuits' triples
/// from silent OT).
pub const VERSION: u16 = 7;

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
