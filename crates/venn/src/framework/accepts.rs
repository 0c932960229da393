//! Which of a run's options ([`crate::options`]) each protocol takes — declared by its
//! [`Config`](super::Config) — and the check that refuses the others before anything is
//! sent.

use super::ProtocolInfo;
pub use crate::options::{Bins, Offline, Options, Stash};
use crate::{Error, Result};

/// Which options a protocol takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accepts {
    /// Whether it hashes into RR17's bins (`--bins`).
    pub bins: bool,
    /// The integer lengths it can run on (`--sigma`); empty: it takes no `--sigma`.
    pub sigma: &'static [u32],
    /// Whether it takes items of any length, without `--sigma`.
    pub any_items: bool,
    /// The sources of its offline phase's randomness it can use (`--offline`); empty: it
    /// makes no such choice (its offline phase, if any, is its own).
    pub offline: &'static [Offline],
    /// Whether it has a stash to choose (`--stash`).
    pub stash: bool,
    /// Whether it can output only whether a count reaches a threshold (`--threshold`).
    pub threshold: bool,
    /// How many values per item of the sender's it sums, each column apart
    /// (`--value-column`): 0, it sums none.
    pub value_columns: usize,
    /// Whether its sender holds the receiver's upload to a deadline the user may set
    /// (`--upload-deadline`).
    pub upload_deadline: bool,
    /// Whether its items can carry records to the peer: the sender's, which the receiver
    /// reads for its matches, and with `--both` the receiver's, which the sender gets for
    /// its matches.
    pub payload: bool,
}

impl Accepts {
    /// No options.
    pub const NOTHING: Accepts = Accepts {
        bins: false,
        sigma: &[],
        any_items: true,
        offline: &[],
        stash: false,
        threshold: false,
        value_columns: 0,
        upload_deadline: false,
        payload: false,
    };

    /// The option sets to show or run a protocol with: each of `bins` and `sigmas` it
    /// takes (all it takes where these are empty; `None` in `sigmas` is keys of any
    /// length), each of `offlines` it takes (the default where none), and each stash.
    /// No threshold: that is a number the user picks.
    pub fn variants(
        &self,
        bins: &[Bins],
        sigmas: &[Option<u32>],
        offlines: &[Offline],
    ) -> Vec<Options> {
        let mut offlines: Vec<Offline> = (offlines.iter())
            .filter(|o| self.offline.contains(o))
            .copied()
            .collect();
        if offlines.is_empty() {
            offlines.push(Offline::default());
        }
        let offlines = &offlines;
        let bins = match (self.bins, bins.is_empty()) {
            (false, _) => vec![Bins::Lan],
            (true, true) => vec![Bins::Lan, Bins::Wan],
            (true, false) => bins.to_vec(),
        };
        let sigmas: Vec<Option<u32>> = match self.sigma {
            [] => vec![None],
            _ if sigmas.is_empty() => (self.any_items.then_some(None))
                .into_iter()
                .chain(self.sigma.iter().copied().map(Some))
                .collect(),
            _ => sigmas.to_vec(),
        };
        let stashes: &[Stash] = match self.stash {
            true => &[Stash::Combined, Stash::Separate],
            false => &[Stash::Combined],
        };
        bins.iter()
            .flat_map(|&bins| {
                sigmas.iter().flat_map(move |&sigma| {
                    offlines.iter().flat_map(move |&offline| {
                        stashes.iter().map(move |&stash| Options {
                            bins,
                            sigma,
                            offline,
                            stash,
                            threshold: None,
                            payload: None,
                            receiver_payload: None,
                        })
                    })
                })
            })
            .collect()
    }
}

impl Options {
    /// Refuses options `info`'s protocol does not take (or a missing `--sigma` it needs).
    pub fn check(&self, info: &ProtocolInfo, accepts: Accepts) -> Result<()> {
        let name = info.name;
        if self.bins != Bins::Lan && !accepts.bins {
            return Err(Error::Usage(format!(
                "protocol '{name}' has no bins to choose (--bins)"
            )));
        }
        if self.offline != Offline::Ot && !accepts.offline.contains(&self.offline) {
            return Err(Error::Usage(format!(
                "protocol '{name}' cannot take its offline phase from --offline {}",
                self.offline.name()
            )));
        }
        if self.stash != Stash::Combined && !accepts.stash {
            return Err(Error::Usage(format!(
                "protocol '{name}' has no stash to choose (--stash)"
            )));
        }
        let records = [
            (self.payload, "the sender's columns to the receiver"),
            (
                self.receiver_payload,
                "the receiver's columns to the sender",
            ),
        ];
        if let Some((_, what)) = records.iter().find(|r| r.0.is_some() && !accepts.payload) {
            return Err(Error::Usage(format!(
                "protocol '{name}' cannot carry {what}"
            )));
        }
        if self.threshold.is_some() && !accepts.threshold {
            return Err(Error::Usage(format!(
                "protocol '{name}' cannot output a threshold's answer alone (--threshold)"
            )));
        }
        match (self.sigma, accepts.sigma) {
            (Some(_), []) => Err(Error::Usage(format!(
                "protocol '{name}' takes items of any length (no --sigma)"
            ))),
            (None, [_, ..]) if !accepts.any_items => Err(Error::Usage(format!(
                "protocol '{name}' runs on integers of a fixed bit length: pass --sigma {}",
                join(accepts.sigma, "|")
            ))),
            (Some(s), sigmas) if !sigmas.contains(&s) => Err(Error::Usage(format!(
                "protocol '{name}' runs on items of {} bits, not {s} (--sigma)",
                join(sigmas, " or ")
            ))),
            _ => Ok(()),
        }
    }
}

fn join(values: &[u32], separator: &str) -> String {
    let parts: Vec<String> = values.iter().map(u32::to_string).collect();
    parts.join(separator)
}
