//! The PSI protocols, all behind one [`Protocol`] interface and one registry. The CLI, the
//! benchmark and the tests iterate over [`registry`]; a protocol that is not implemented
//! is simply not in it. Adding one is its own module (for a circuit PSI, a front end of the
//! generic one), its `mod` line and one entry in [`registry`]; nothing in the runner, the
//! CLI or the benchmark names a protocol.
//!
//! Each implements [`TypedProtocol`] on its own typed [`Config`] (the options it takes,
//! nothing else); the registry hands it out as a [`Protocol`], on the union of a run's
//! [`Options`]. What a protocol implements and works with (the traits, [`Context`],
//! [`Output`], [`Accepts`], [`Security`]) is the framework's, a layer below the protocols and the
//! building blocks they share; it is re-exported here, where users of the library find it.

mod dcw13;
mod dgt12;
mod dkt10;
#[cfg(feature = "test-protocol")]
mod example;
mod hek12;
pub mod kbm23;
mod naive;
mod oprf_psi;
mod psww18;
mod rr17_bloom;
mod rr17_de;
mod rr22;
mod rr22_cpsi;

// The framework, as users of the library reach it, and as the protocol modules import it.
pub use crate::circuit_psi::MAX_VALUE_COLUMNS;
pub(crate) use crate::framework::{
    matching, no_offline_state, output_bits, round_up_to_byte, OutputBits,
};
pub use crate::framework::{
    Accepts, AnyParty, Bins, Config, Context, DealerLink, Offline, Options, Output, OutputKind,
    ParamTable, Parameters, Party, Phase, Progress, Protocol, ProtocolInfo, RoleInfo, Security,
    Stash, TypedProtocol,
};
pub use crate::session::Sizes;

use crate::{Error, Result};

/// Every implemented protocol.
pub fn registry() -> &'static [&'static dyn Protocol] {
    &[
        &oprf_psi::Kkrt16::NEW,
        &rr22::Rr22::SEMI_HONEST,
        &rr22::Rr22::MALICIOUS,
        &oprf_psi::Pssz15::NEW,
        &rr17_bloom::Rr17Bloom,
        &rr17_de::Rr17De::NEW,
        &rr17_de::Rr17Ec,
        &rr17_de::Rr17DeSm::NEW,
        &kbm23::Kbm23,
        &rr22_cpsi::CA,
        &rr22_cpsi::SUM,
        &psww18::CA,
        &psww18::SUM,
        &hek12::CA,
        &dgt12::Dgt12,
        &dkt10::Dkt10,
        &dcw13::Dcw13,
        &naive::Naive,
        #[cfg(feature = "test-protocol")]
        &example::Example,
    ]
}

/// The protocol called `name`.
pub fn find(name: &str) -> Result<&'static dyn Protocol> {
    registry()
        .iter()
        .copied()
        .find(|p| p.info().name == name)
        .ok_or_else(|| {
            let names: Vec<&str> = registry().iter().map(|p| p.info().name).collect();
            Error::Usage(format!(
                "unknown protocol '{name}' (available: {})",
                names.join(", ")
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_refuse_options_they_do_not_take() {
        let kkrt16 = find("kkrt16").unwrap();
        let check = |o: Options| o.check(kkrt16.info(), kkrt16.accepts());
        assert!(check(Options::default()).is_ok());
        let wan = Options {
            bins: Bins::Wan,
            ..Options::default()
        };
        assert!(check(wan).unwrap_err().to_string().contains("--bins"));
        let sigma = Options {
            sigma: Some(32),
            ..Options::default()
        };
        assert!(check(sigma).unwrap_err().to_string().contains("--sigma"));
        let dealer = Options {
            offline: Offline::Dealer,
            ..Options::default()
        };
        assert!(check(dealer).unwrap_err().to_string().contains("--offline"));
        let kbm23 = find("kbm23").unwrap();
        assert!(dealer.check(kbm23.info(), kbm23.accepts()).is_ok());
        let de = find("rr17-de").unwrap();
        assert!(wan.check(de.info(), de.accepts()).is_ok());
    }

    #[test]
    fn parameters_and_checks_refuse_options_the_protocol_does_not_take() {
        let sizes = Sizes {
            sender: 1 << 10,
            receiver: 1 << 10,
        };
        let wan = Options {
            bins: Bins::Wan,
            ..Options::default()
        };
        let kkrt16 = find("kkrt16").unwrap();
        let Err(e) = kkrt16.params(sizes, wan) else {
            panic!("kkrt16's parameters took --bins wan")
        };
        assert!(e.to_string().contains("--bins"), "{e}");
        assert_eq!(
            kkrt16.memory(crate::session::Role::Sender, sizes, wan),
            u64::MAX
        );
        let sigma = Options {
            sigma: Some(32),
            ..Options::default()
        };
        let Err(e) = kkrt16.check_items(sigma, &crate::Items::default()) else {
            panic!("kkrt16 took --sigma 32")
        };
        assert!(e.to_string().contains("--sigma"), "{e}");
        assert!(find("rr17-de").unwrap().params(sizes, wan).is_ok());
    }

    /// A protocol whose items can carry records says what they reveal (`venn params`
    /// prints it), and no other says anything of records.
    #[test]
    fn protocols_with_records_say_what_they_reveal() {
        for p in registry() {
            let name = p.info().name;
            assert_eq!(p.records_leakage().is_some(), p.accepts().payload, "{name}");
        }
    }
}
