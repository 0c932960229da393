//! Choices a user makes for one run that change a protocol's parameters: `--bins lan|wan`
//! (RR17's number of bins, §6.6), `--sigma 32|64` (the bit length of the items of a
//! standard-model protocol, RR17 §7), `--offline ot|dealer|bfv|iknp` (where KBM23's tuples
//! come from, §IV, or a GMW circuit's triples), `--stash combined|separate` (PSWW18's stash) and `--threshold T` (a
//! cardinality protocol's answer reduced to "at least T or not"), and the widths of the
//! records each side's items carry to the other (PSI with payloads). Both parties must make
//! the same choices: they are announced in the handshake, and a peer that made others is
//! refused by name. Below [`crate::session`], which carries them: this union is what the
//! front ends fill and the handshake announces; which protocol takes which, and as what
//! typed configuration, is each protocol's `Config` to say (`crate::framework`).

use crate::items::Items;
use crate::net::{Reader, Writer};
use crate::parties::Role;
use crate::{Error, Result};

/// The widest record an item may carry ([`Options::payload`]): a frame of records holds
/// at least one.
pub(crate) const MAX_RECORD_WIDTH: usize = 1 << 16;

/// How many bins RR17's hashing uses (§6.6: "m = n/10 minimises communication", used for
/// the WAN; m = n/4 costs less computation, used on the LAN).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Bins {
    /// m = ⌊n/4⌋.
    #[default]
    Lan,
    /// m = ⌊n/10⌋.
    Wan,
}

impl Bins {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Bins::Lan => "lan",
            Bins::Wan => "wan",
        }
    }

    /// The bins for sets of at most `n` items: ⌊n/4⌋ or ⌊n/10⌋, at least 1.
    pub fn count(self, n: u64) -> u64 {
        let per_bin = match self {
            Bins::Lan => 4,
            Bins::Wan => 10,
        };
        (n / per_bin).max(1)
    }

    /// `lan` or `wan`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "lan" => Ok(Bins::Lan),
            "wan" => Ok(Bins::Wan),
            _ => Err(Error::Usage(format!("--bins wants lan or wan, got '{s}'"))),
        }
    }

    fn code(self) -> u8 {
        self as u8
    }
}

/// Where a protocol's offline phase gets its correlated randomness (KBM23 §IV): from OT or
/// homomorphic encryption between the two parties, or from a trusted dealer, a third
/// process that never sees the inputs but must not collude with either party. For a GMW
/// circuit's Beaver triples: silent OT, or IKNP for comparison.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Offline {
    /// Oblivious transfer between the parties (KBM23 §IV-D; a GMW circuit's triples from
    /// silent OT): no one else is trusted.
    #[default]
    Ot,
    /// A trusted dealer (`venn dealer`, KBM23 §IV-A).
    Dealer,
    /// BFV homomorphic encryption between the parties (KBM23 §IV-B): no one else is
    /// trusted.
    Bfv,
    /// A GMW circuit's triples from IKNP OT extension (as ABY), not silent OT: 256 bits
    /// of traffic a triple; kept to compare.
    Iknp,
}

impl Offline {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Offline::Ot => "ot",
            Offline::Dealer => "dealer",
            Offline::Bfv => "bfv",
            Offline::Iknp => "iknp",
        }
    }

    /// `ot`, `dealer`, `bfv` or `iknp`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "ot" => Ok(Offline::Ot),
            "dealer" => Ok(Offline::Dealer),
            "bfv" => Ok(Offline::Bfv),
            "iknp" => Ok(Offline::Iknp),
            _ => Err(Error::Usage(format!(
                "--offline wants ot, dealer, bfv or iknp, got '{s}'"
            ))),
        }
    }

    fn code(self) -> u8 {
        self as u8
    }
}

/// Where PSWW18's cuckoo side puts the items that fit in neither table: one stash for both
/// tables (the slides' best variant, the default) or one per table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Stash {
    /// One stash for both tables.
    #[default]
    Combined,
    /// A stash per table.
    Separate,
}

impl Stash {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Stash::Combined => "combined",
            Stash::Separate => "separate",
        }
    }

    /// `combined` or `separate`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "combined" => Ok(Stash::Combined),
            "separate" => Ok(Stash::Separate),
            _ => Err(Error::Usage(format!(
                "--stash wants combined or separate, got '{s}'"
            ))),
        }
    }
}

/// The options of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Options {
    /// RR17's number of bins.
    pub bins: Bins,
    /// The bit length of the items, for a protocol that runs on σ-bit integers.
    pub sigma: Option<u32>,
    /// Where the offline phase's randomness comes from.
    pub offline: Offline,
    /// PSWW18's stash.
    pub stash: Stash,
    /// Output only whether the intersection has at least this many items.
    pub threshold: Option<u64>,
    /// The bytes of the record each sender item carries to the receiver, which reads the
    /// records of the items it matched (PSI with payloads); `None`, no records.
    pub payload: Option<u32>,
    /// The bytes of the record each receiver item carries to the sender, which reads the
    /// records of the items it matched (with `--both` only); `None`, no records.
    pub receiver_payload: Option<u32>,
}

impl Options {
    /// The command-line arguments that give these options (none for the defaults).
    pub fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if self.bins != Bins::Lan {
            args.extend(["--bins".to_string(), self.bins.name().to_string()]);
        }
        if let Some(s) = self.sigma {
            args.extend(["--sigma".to_string(), s.to_string()]);
        }
        if self.offline != Offline::Ot {
            args.extend(["--offline".to_string(), self.offline.name().to_string()]);
        }
        if self.stash != Stash::Combined {
            args.extend(["--stash".to_string(), self.stash.name().to_string()]);
        }
        if let Some(t) = self.threshold {
            args.extend(["--threshold".to_string(), t.to_string()]);
        }
        args
    }

    /// The width of the records `role`'s items carry to the peer in this run, if any.
    pub fn records(&self, role: Role) -> Option<u32> {
        match role {
            Role::Sender => self.payload,
            Role::Receiver => self.receiver_payload,
        }
    }

    /// Refuses `items` of `role` whose records are not the run's: none where it carries
    /// none, and each of the agreed width where it does ([`Options::records`]).
    pub fn check_records(&self, role: Role, items: &Items) -> Result<()> {
        let want = self.records(role).map(u64::from);
        let have = items.records().map(|(_, width)| width as u64);
        if have == want {
            return Ok(());
        }
        let role = role.name();
        Err(Error::Usage(match (have, want) {
            (None, Some(w)) => {
                format!("the run carries records of {w} bytes, and the {role}'s items have none")
            }
            (have, want) => format!(
                "the {role}'s items carry records of {} bytes, the run {}",
                have.unwrap_or(0),
                want.map_or("none".into(), |w| format!("{w} bytes"))
            ),
        }))
    }

    /// [`Options::args`] as a user would type them (empty for the defaults).
    pub fn flags(&self) -> String {
        self.args().join(" ")
    }

    /// The options as a message names them: [`Options::flags`], then the widths of the
    /// records each side's items carry (which the tool's run plans agree from the
    /// columns revealed, and no flag gives).
    pub fn describe(&self) -> String {
        let widths = [
            ("sender", self.payload),
            ("receiver", self.receiver_payload),
        ];
        let records = (widths.into_iter())
            .filter_map(|(role, w)| w.map(|w| format!("{role}'s records of {w} bytes")));
        let flags = self.flags();
        (!flags.is_empty())
            .then_some(flags)
            .into_iter()
            .chain(records)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Appends the options to a handshake message.
    pub fn write(&self, w: Writer) -> Writer {
        let sigma = self.sigma.unwrap_or(0);
        assert!(sigma <= u16::MAX as u32, "σ fits 16 bits");
        // Bits 1 and 2 of the stash's byte say the sender's and the receiver's record
        // widths follow the threshold, in that order, so that options without records
        // keep the bytes they always had.
        let flags =
            (self.payload.is_some() as u8) << 1 | (self.receiver_payload.is_some() as u8) << 2;
        let w = w
            .u8(self.bins.code())
            .u16(sigma as u16)
            .u8(self.offline.code())
            .u8(self.stash as u8 | flags)
            .u8(self.threshold.is_some() as u8)
            .u64(self.threshold.unwrap_or(0));
        [self.payload, self.receiver_payload]
            .into_iter()
            .flatten()
            .fold(w, Writer::u32)
    }

    /// Reads what [`Options::write`] wrote.
    pub fn read(r: &mut Reader) -> Result<Self> {
        let bins = match r.u8()? {
            0 => Bins::Lan,
            1 => Bins::Wan,
            b => return Err(Error::protocol("a bins code of 0 or 1", b.to_string())),
        };
        let sigma = match r.u16()? {
            0 => None,
            s => Some(s as u32),
        };
        let offline = match r.u8()? {
            0 => Offline::Ot,
            1 => Offline::Dealer,
            2 => Offline::Bfv,
            3 => Offline::Iknp,
            o => return Err(Error::protocol("an offline code of 0 to 3", o.to_string())),
        };
        let stash_byte = r.u8()?;
        let stash = match stash_byte & 1 {
            0 => Stash::Combined,
            _ => Stash::Separate,
        };
        if stash_byte > 7 {
            return Err(Error::protocol(
                "a stash code of 0 or 1 (+2, +4 with records)",
                stash_byte.to_string(),
            ));
        }
        let threshold = match (r.u8()?, r.u64()?) {
            (0, 0) => None,
            (1, t) => Some(t),
            (f, t) => {
                return Err(Error::protocol(
                    "a threshold flag of 0 (with 0) or 1",
                    format!("{f} with {t}"),
                ))
            }
        };
        let mut width = |flag: u8| match stash_byte & flag {
            0 => Ok(None),
            _ => r.u32().map(Some),
        };
        let payload = width(2)?;
        let receiver_payload = width(4)?;
        Ok(Options {
            bins,
            sigma,
            offline,
            stash,
            threshold,
            payload,
            receiver_payload,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_survive_the_wire() {
        for bins in [Bins::Lan, Bins::Wan] {
            for sigma in [None, Some(32), Some(64)] {
                for offline in [Offline::Ot, Offline::Dealer, Offline::Bfv, Offline::Iknp] {
                    let (stash, threshold, payload, receiver_payload) = match offline {
                        Offline::Ot => (Stash::Combined, None, None, None),
                        Offline::Dealer => (Stash::Separate, Some(0), Some(1), Some(300)),
                        Offline::Bfv => (Stash::Combined, Some(u64::MAX), Some(u32::MAX), None),
                        Offline::Iknp => (Stash::Separate, Some(7), None, Some(u32::MAX)),
                    };
                    let o = Options {
                        bins,
                        sigma,
                        offline,
                        stash,
                        threshold,
                        payload,
                        receiver_payload,
                    };
                    let bytes = o.write(Writer::new()).0;
                    let mut r = Reader::new(&bytes, "options");
                    assert_eq!(Options::read(&mut r).unwrap(), o);
                    r.finish().unwrap();
                }
            }
        }
    }

    /// A message names the records' widths beside the flags, which give none.
    #[test]
    fn described_options_name_the_records() {
        let o = Options {
            threshold: Some(5),
            payload: Some(36),
            ..Options::default()
        };
        assert_eq!(o.describe(), "--threshold 5, sender's records of 36 bytes");
        let receivers = Options {
            receiver_payload: Some(8),
            ..Options::default()
        };
        assert_eq!(receivers.describe(), "receiver's records of 8 bytes");
        assert_eq!(Options::default().describe(), "");
    }

    /// Options without records are written as they were before records existed (the
    /// fuzz corpora's and older peers' bytes); the sender's records add bit 1 and a width,
    /// the receiver's bit 2 and a width after it; a stash byte above 7 is refused.
    #[test]
    fn options_without_records_keep_their_bytes() {
        let o = Options {
            stash: Stash::Separate,
            threshold: Some(5),
            ..Options::default()
        };
        let bytes = o.write(Writer::new()).0;
        assert_eq!(bytes, [0, 0, 0, 0, 1, 1, 5, 0, 0, 0, 0, 0, 0, 0]);
        let with = Options {
            payload: Some(48),
            ..o
        }
        .write(Writer::new())
        .0;
        assert_eq!((with[4], &with[14..]), (3, &[48, 0, 0, 0][..]));
        let receivers = Options {
            receiver_payload: Some(300),
            ..o
        };
        let bytes_of = |o: Options| o.write(Writer::new()).0;
        let only = bytes_of(receivers);
        assert_eq!((only[4], &only[..4]), (5, &bytes[..4]));
        assert_eq!(
            (&only[5..14], &only[14..]),
            (&bytes[5..], &[44, 1, 0, 0][..])
        );
        let both = bytes_of(Options {
            payload: Some(48),
            ..receivers
        });
        assert_eq!((both[4], &both[14..]), (7, &[48, 0, 0, 0, 44, 1, 0, 0][..]));
        let mut bad = bytes.clone();
        bad[4] = 8;
        let err = Options::read(&mut Reader::new(&bad, "options")).unwrap_err();
        assert!(err.to_string().contains("stash code"), "{err}");
    }

    #[test]
    fn bins_are_a_quarter_or_a_tenth() {
        assert_eq!(Bins::Lan.count(1 << 20), 1 << 18);
        assert_eq!(Bins::Wan.count(1 << 20), 104_857);
        assert_eq!(Bins::Wan.count(5), 1);
        assert_eq!(Bins::parse("wan").unwrap(), Bins::Wan);
        assert!(Bins::parse("WAN").is_err());
    }
}
