//! The options of a party's run — how it reaches its peer, how its keys are taken, its
//! limits and its output — declared once, in [`OPTIONS`], for every front end: the `venn`
//! tool's flags are made from it (with the `clap` feature: [`cli`]), the Python package
//! takes its keywords through it, and docs/cli.md's table of options and the Python
//! package's `PartyOptions` are written from it ([`docs`]; a test fails on any drift). A
//! new option is one entry in the table plus the code that uses the field it sets.

#[cfg(feature = "clap")]
pub mod cli;
pub mod docs;
mod table;

pub use table::OPTIONS;

use crate::input::{Format, KeyOptions};
use crate::join::JoinKind;
use crate::party::{DealerAddr, Link, PartyArgs, PeerAddr, RunSpec};
use crate::transport::TlsArgs;
use std::path::PathBuf;
use std::time::Duration;
use venn::protocols::Accepts;
use venn::session::run_plan::Align;
use venn::{Error, Result};

/// The longest `--timeout` or `--upload-deadline` (a year): deadlines are computed as
/// now + timeout.
pub const MAX_SECONDS: u64 = 365 * 24 * 3600;

/// What an option is about; each command takes the groups it needs (the `venn` tool:
/// `cli::Commands` with the `clap` feature), the Python package every group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// The protocol's own options (`--bins` … `--threshold`).
    Protocol,
    /// How a link is secured.
    Tls,
    /// Where the peer is, what the run is and its limits.
    Link,
    /// The input file and how its keys are taken: a party's, and a Thunder dataset's
    /// (one key a row).
    Keys,
    /// The rest of a party of `venn send` or `venn receive`: what only a run between two
    /// parties has (OR-matching, revealed columns, joins), its output and files.
    Party,
}

/// The kind of value an option takes, and so how each front end reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A switch: `--both`, Python's `both=True`.
    Switch,
    /// A whole number from `min` to `max`.
    Number {
        /// The smallest taken.
        min: u64,
        /// The largest taken.
        max: u64,
    },
    /// A number of seconds, at least one and at most [`MAX_SECONDS`]: whole on the
    /// command line, any in Python.
    Seconds,
    /// A number of bytes: `8G`, `512M`, `64K` or bytes on the command line, bytes in
    /// Python.
    Size,
    /// Text (a name, an address, a word its option parses).
    Text,
    /// One of these words.
    Choice(&'static [&'static str]),
    /// A file or directory.
    Path,
    /// Several texts: comma-separated on the command line, a list (or one text) in
    /// Python.
    List,
}

/// A value as a front end read it, of its option's [`Kind`].
#[derive(Clone, Debug, PartialEq)]
pub enum Given {
    /// For [`Kind::Switch`].
    Switch(bool),
    /// For [`Kind::Number`] and [`Kind::Size`].
    Number(u64),
    /// For [`Kind::Seconds`].
    Seconds(Duration),
    /// For [`Kind::Text`].
    Text(String),
    /// For [`Kind::Path`].
    Path(PathBuf),
    /// For [`Kind::List`].
    List(Vec<String>),
}

/// Which protocols take an option.
#[derive(Clone, Copy)]
pub enum Takes {
    /// Every protocol.
    All,
    /// Those whose [`Accepts`] says so.
    Where(fn(&Accepts) -> bool),
}

/// How the Python package offers an option: always as a keyword named as the flag, with
/// `_` for `-`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Python {
    /// A keyword of every party (`venn.send`, `venn.receive` and the file functions:
    /// `PartyOptions`).
    Options,
    /// A parameter of the file functions (`venn.send_file`, `venn.receive_file`) only.
    File,
    /// Not at all: the command line's only.
    No,
}

/// Sets an option's field from its value, or says why the value is refused.
pub type Setter = fn(&mut RunSettings, Given) -> Result<()>;

/// One option of a run.
#[derive(Clone, Copy)]
pub struct RunOption {
    /// The flag, without `--`.
    pub name: &'static str,
    /// What it takes.
    pub kind: Kind,
    /// Its value's placeholder in help (`FILE`, `lan|wan`); empty for a switch.
    pub value_name: &'static str,
    /// What it is about: which commands take it.
    pub group: Group,
    /// Which protocols take it.
    pub takes: Takes,
    /// One paragraph: the flag's `--help`.
    pub help: &'static str,
    /// docs/cli.md's cell (Markdown): what the option does, in full.
    pub doc: &'static str,
    /// The default as shown (none where there is none, or it is said in the help).
    pub default: Option<fn() -> String>,
    /// How Python offers it.
    pub python: Python,
    /// Options it needs beside it (their flags).
    pub requires: &'static [&'static str],
    /// Options it cannot be given with (their flags).
    pub conflicts: &'static [&'static str],
    /// Whether the command line requires it (where a command takes it).
    pub cli_required: bool,
    /// Sets its field.
    pub set: Setter,
}

impl RunOption {
    /// An option with no default, help or relations, taken by every protocol, a keyword
    /// of every Python party.
    pub(crate) const fn new(name: &'static str, kind: Kind, group: Group, set: Setter) -> Self {
        RunOption {
            name,
            kind,
            value_name: "",
            group,
            takes: Takes::All,
            help: "",
            doc: "",
            default: None,
            python: Python::Options,
            requires: &[],
            conflicts: &[],
            cli_required: false,
            set,
        }
    }

    pub(crate) const fn value_name(self, value_name: &'static str) -> Self {
        RunOption { value_name, ..self }
    }

    pub(crate) const fn takes(self, takes: fn(&Accepts) -> bool) -> Self {
        RunOption {
            takes: Takes::Where(takes),
            ..self
        }
    }

    pub(crate) const fn help(self, help: &'static str, doc: &'static str) -> Self {
        RunOption { help, doc, ..self }
    }

    pub(crate) const fn default(self, default: fn() -> String) -> Self {
        RunOption {
            default: Some(default),
            ..self
        }
    }

    pub(crate) const fn python(self, python: Python) -> Self {
        RunOption { python, ..self }
    }

    pub(crate) const fn requires(self, requires: &'static [&'static str]) -> Self {
        RunOption { requires, ..self }
    }

    pub(crate) const fn conflicts(self, conflicts: &'static [&'static str]) -> Self {
        RunOption { conflicts, ..self }
    }

    pub(crate) const fn required_on_command_line(self) -> Self {
        RunOption {
            cli_required: true,
            ..self
        }
    }

    /// Its name as an identifier (`max_peer_items`): clap's id for it.
    pub fn id(&self) -> String {
        self.name.replace('-', "_")
    }

    /// Its Python keyword, if Python offers it.
    pub fn keyword(&self) -> Option<String> {
        (self.python != Python::No).then(|| self.id())
    }

    /// The names of the registered protocols that take it (all of them for
    /// [`Takes::All`]).
    pub fn protocols(&self) -> Vec<&'static str> {
        (venn::protocols::registry().iter())
            .filter(|p| match self.takes {
                Takes::All => true,
                Takes::Where(takes) => takes(&p.accepts()),
            })
            .map(|p| p.info().name)
            .collect()
    }
}

/// The option called `name` (its flag without `--`).
pub fn find(name: &str) -> Option<&'static RunOption> {
    OPTIONS.iter().find(|o| o.name == name)
}

/// The option Python names `keyword`, among those it offers.
pub fn by_keyword(keyword: &str) -> Option<&'static RunOption> {
    OPTIONS
        .iter()
        .find(|o| o.keyword().as_deref() == Some(keyword))
}

/// What the options of [`OPTIONS`] set: a party's run as the user gave it, each field at
/// its default until an option sets it.
#[derive(Clone, Debug, Default)]
pub struct RunSettings {
    /// What the run is (`--protocol`, the protocol's options, the limits).
    pub spec: RunSpec,
    /// `--listen`.
    pub listen: Option<String>,
    /// `--connect`.
    pub connect: Option<String>,
    /// How the links are secured.
    pub tls: TlsArgs,
    /// `--dealer`.
    pub dealer: Option<String>,
    /// `--dealer-fingerprint`.
    pub dealer_fingerprint: Option<String>,
    /// `--stats-json`.
    pub stats_json: Option<PathBuf>,
    /// How keys are taken from the input, but for its format ([`Self::key_options`]).
    pub keys: KeyOptions,
    /// `--format`, if given (otherwise the input's name tells: [`Format::of_path`]).
    pub format: Option<Format>,
    /// `--input`.
    pub input: Option<PathBuf>,
    /// `--output`.
    pub output: Option<PathBuf>,
    /// `--both`.
    pub both: bool,
    /// `--peer-columns`.
    pub peer_columns: Vec<String>,
    /// `--join`.
    pub join: JoinKind,
    /// `--align`.
    pub align: Align,
    /// `--state`.
    pub state: Option<PathBuf>,
    /// `--bucket-rows`.
    pub bucket_rows: Option<u64>,
    /// `--bucket-dir`.
    pub bucket_dir: Option<PathBuf>,
}

impl RunSettings {
    /// Sets `option` to `value`, refusing a value of another kind than it takes.
    pub fn set(&mut self, option: &RunOption, value: Given) -> Result<()> {
        let fits = matches!(
            (option.kind, &value),
            (Kind::Switch, Given::Switch(_))
                | (Kind::Number { .. } | Kind::Size, Given::Number(_))
                | (Kind::Seconds, Given::Seconds(_))
                | (Kind::Text | Kind::Choice(_), Given::Text(_))
                | (Kind::Path, Given::Path(_))
                | (Kind::List, Given::List(_))
        );
        if !fits {
            return Err(Error::Usage(format!(
                "--{} takes {}, not {value:?}",
                option.name,
                option.kind.noun()
            )));
        }
        match (option.kind, &value) {
            (Kind::Number { min, max }, Given::Number(n)) if !(min..=max).contains(n) => {
                return Err(Error::Usage(format!(
                    "--{} is a whole number from {min} to {max}, not {n}",
                    option.name
                )));
            }
            (Kind::Choice(words), Given::Text(word)) if !words.contains(&word.as_str()) => {
                return Err(Error::Usage(format!(
                    "--{} is one of {}, not '{word}'",
                    option.name,
                    words.join(", ")
                )));
            }
            _ => {}
        }
        (option.set)(self, value)
    }

    /// The link these settings give: where the peer is, the run and how the links are
    /// secured (the TLS files loaded).
    pub fn link(&self) -> Result<Link> {
        let peer = match (&self.listen, &self.connect) {
            (Some(addr), None) => PeerAddr::Listen(addr.clone()),
            (None, Some(addr)) => PeerAddr::Connect(addr.clone()),
            (Some(_), Some(_)) | (None, None) => {
                return Err(Error::Usage(
                    "give one of --listen and --connect (in Python, listen= and connect=)".into(),
                ))
            }
        };
        let dealer = DealerAddr::new(
            self.spec.options.offline,
            self.dealer.clone(),
            self.dealer_fingerprint.clone(),
            &self.tls,
        )?;
        Ok(Link {
            spec: self.spec.clone(),
            dealer,
            peer,
            stats_json: self.stats_json.clone(),
            transport: self.tls.clone().load()?,
        })
    }

    /// `--input`.
    pub fn input(&self) -> Result<&std::path::Path> {
        (self.input.as_deref())
            .ok_or_else(|| Error::Usage("the keys' file is missing: --input FILE".into()))
    }

    /// How keys are taken from `--input`: [`Self::keys`] in the format `--format` names,
    /// or the input's name tells.
    pub fn key_options(&self) -> Result<KeyOptions> {
        let format = match self.format {
            Some(format) => format,
            None => Format::of_path(self.input()?),
        };
        Ok(KeyOptions {
            format,
            ..self.keys.clone()
        })
    }

    /// A party of `venn send` or `venn receive` on the file `--input`.
    pub fn party_args(self) -> Result<PartyArgs> {
        let link = self.link()?;
        let input = self.input()?.to_path_buf();
        let keys = self.key_options()?;
        Ok(PartyArgs {
            link,
            input,
            output: self.output,
            keys,
            both: self.both,
            peer_columns: self.peer_columns,
            join: self.join,
            align: self.align,
            state: self.state,
            bucket_rows: self.bucket_rows,
            bucket_dir: self.bucket_dir,
        })
    }
}

impl Given {
    fn kind_error(&self, wanted: &str) -> Error {
        Error::Usage(format!("{wanted} was wanted, not {self:?}"))
    }

    /// The text of a [`Kind::Text`] or [`Kind::Choice`].
    pub fn text(self) -> Result<String> {
        match self {
            Given::Text(t) => Ok(t),
            other => Err(other.kind_error("text")),
        }
    }

    /// The number of a [`Kind::Number`] or [`Kind::Size`].
    pub fn number(self) -> Result<u64> {
        match self {
            Given::Number(n) => Ok(n),
            other => Err(other.kind_error("a number")),
        }
    }

    /// The time of a [`Kind::Seconds`].
    pub fn seconds(self) -> Result<Duration> {
        match self {
            Given::Seconds(d) => Ok(d),
            other => Err(other.kind_error("a number of seconds")),
        }
    }

    /// The path of a [`Kind::Path`].
    pub fn path(self) -> Result<PathBuf> {
        match self {
            Given::Path(p) => Ok(p),
            other => Err(other.kind_error("a path")),
        }
    }

    /// The state of a [`Kind::Switch`].
    pub fn switch(self) -> Result<bool> {
        match self {
            Given::Switch(b) => Ok(b),
            other => Err(other.kind_error("true or false")),
        }
    }

    /// The texts of a [`Kind::List`].
    pub fn list(self) -> Result<Vec<String>> {
        match self {
            Given::List(l) => Ok(l),
            other => Err(other.kind_error("a list of texts")),
        }
    }
}

impl Kind {
    /// What it takes, as an error names it.
    fn noun(self) -> &'static str {
        match self {
            Kind::Switch => "true or false",
            Kind::Number { .. } => "a whole number",
            Kind::Seconds => "a number of seconds",
            Kind::Size => "a number of bytes",
            Kind::Text => "text",
            Kind::Choice(_) => "one of its words",
            Kind::Path => "a path",
            Kind::List => "a list of texts",
        }
    }
}

/// A number of seconds as Python gives it: positive, at most [`MAX_SECONDS`].
pub fn seconds(value: f64) -> std::result::Result<Duration, String> {
    if value.is_finite() && value > 0.0 && value <= MAX_SECONDS as f64 {
        Ok(Duration::from_secs_f64(value))
    } else {
        Err(format!(
            "a positive number of seconds, at most {MAX_SECONDS}, not {value}"
        ))
    }
}

/// `8G`, `512M`, `64K` or a number of bytes (a unit's `B` or `iB` may follow; binary
/// units).
pub fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, ""),
    };
    let shift = match unit
        .to_ascii_uppercase()
        .trim_end_matches("IB")
        .trim_end_matches('B')
    {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(format!("'{s}' is not a size like 8G, 512M or 1048576")),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| format!("'{s}' is not a size like 8G, 512M or 1048576"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_is_named_once_documented_and_related_to_options() {
        let mut names = std::collections::HashSet::new();
        for o in OPTIONS {
            assert!(names.insert(o.name), "--{} twice", o.name);
            assert!(
                !o.help.is_empty() && !o.doc.is_empty(),
                "--{} undocumented",
                o.name
            );
            let switch = o.kind == Kind::Switch;
            assert_eq!(
                o.value_name.is_empty(),
                switch,
                "--{}'s placeholder",
                o.name
            );
            for other in o.requires.iter().chain(o.conflicts) {
                assert!(find(other).is_some(), "--{} names --{other}", o.name);
            }
        }
    }

    #[test]
    fn a_value_of_another_kind_or_out_of_range_is_refused() {
        let mut settings = RunSettings::default();
        let threads = find("threads").unwrap();
        let err = settings.set(threads, Given::Text("2".into())).unwrap_err();
        assert!(
            err.to_string().contains("--threads takes a whole number"),
            "{err}"
        );
        let rows = find("bucket-rows").unwrap();
        let err = settings.set(rows, Given::Number(0)).unwrap_err();
        assert!(err.to_string().contains("from 1 to"), "{err}");
        let format = find("format").unwrap();
        let err = settings.set(format, Given::Text("xml".into())).unwrap_err();
        assert!(
            err.to_string().contains("one of csv, lines, parquet"),
            "{err}"
        );
        settings.set(threads, Given::Number(3)).unwrap();
        settings.set(format, Given::Text("lines".into())).unwrap();
        assert_eq!(
            (settings.spec.threads, settings.format),
            (3, Some(Format::Lines))
        );
    }

    #[test]
    fn python_keywords_are_the_flags_with_underscores() {
        assert_eq!(by_keyword("max_peer_items").unwrap().name, "max-peer-items");
        assert!(
            by_keyword("stats_json").is_none(),
            "the command line's only"
        );
        assert!(by_keyword("max-peer-items").is_none());
    }
}
