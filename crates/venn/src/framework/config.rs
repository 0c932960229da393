//! A protocol's own configuration: the knobs of a run's [`Options`] it takes, typed. The
//! union [`Options`] carries the user's choices from the front ends to the handshake (its
//! bytes are the wire's); a protocol's code sees only its [`Config`], made from the union
//! once it has been checked against what the protocol takes ([`Options::check`]).

use super::{Accepts, Bins, Options};
use crate::Result;
use std::fmt::Debug;

/// A protocol's configuration: which options it takes, and how they map to the union.
pub trait Config: Copy + Debug + PartialEq + Send + Sync + 'static {
    /// The options it holds and the values of each it takes: what refuses the others by
    /// name ([`Options::check`]), and what `venn params` and the docs read.
    const ACCEPTS: Accepts;

    /// Its part of `options`, which [`Options::check`] has checked against
    /// [`Config::ACCEPTS`]; an error only where it cannot hold what `options` says (a
    /// `--sigma` it needs but was not given).
    fn from_options(options: &Options) -> Result<Self>;

    /// The options that give it, the rest at their defaults: the canonical union the
    /// handshake announces and a state's header keeps.
    fn options(&self) -> Options;
}

/// No options: a protocol with nothing to choose.
impl Config for () {
    const ACCEPTS: Accepts = Accepts::NOTHING;

    fn from_options(_: &Options) -> Result<()> {
        Ok(())
    }

    fn options(&self) -> Options {
        Options::default()
    }
}

/// RR17's bins alone (`--bins`).
impl Config for Bins {
    const ACCEPTS: Accepts = Accepts {
        bins: true,
        ..Accepts::NOTHING
    };

    fn from_options(options: &Options) -> Result<Bins> {
        Ok(options.bins)
    }

    fn options(&self) -> Options {
        Options {
            bins: *self,
            ..Options::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_alone_survive_the_union() {
        for bins in [Bins::Lan, Bins::Wan] {
            assert_eq!(Bins::from_options(&bins.options()).unwrap(), bins);
        }
        assert_eq!(().options(), Options::default());
    }
}
