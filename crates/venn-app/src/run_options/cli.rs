//! The `venn` tool's flags for a run's options, made from [`OPTIONS`]: a command flattens
//! [`Flags`] of the [`Group`]s it takes and gets every option of them, each with its help, default, placeholder, checks and relations, read into
//! [`RunSettings`]. A value the option's setter refuses is refused by clap, as any other
//! bad value is (exit status 2, the setter's reason).

use super::{parse_size, Given, Group, Kind, RunOption, RunSettings, MAX_SECONDS, OPTIONS};
use clap::builder::PossibleValuesParser;
use clap::{Arg, ArgAction, ArgGroup, ArgMatches, Command};
use std::marker::PhantomData;
use std::path::PathBuf;
use std::time::Duration;

/// The groups of options a command takes, as a type ([`Flags`]'s parameter).
pub trait Commands {
    /// The groups.
    const GROUPS: &'static [Group];
}

/// `venn send`'s and `venn receive`'s: every group.
pub struct ForParty;
/// `venn precompute`'s: the protocol's options, the link and how it is secured.
pub struct ForPrecompute;
/// `venn dealer`'s and `venn cloud pair`'s: how a link is secured.
pub struct ForTls;
/// The `venn cloud` commands' that read a file of keys.
pub struct ForKeys;
/// The benchmark's party's: the protocol's options.
pub struct ForProtocol;

impl Commands for ForParty {
    const GROUPS: &'static [Group] = &[
        Group::Protocol,
        Group::Link,
        Group::Tls,
        Group::Keys,
        Group::Party,
    ];
}
impl Commands for ForPrecompute {
    const GROUPS: &'static [Group] = &[Group::Protocol, Group::Link, Group::Tls];
}
impl Commands for ForTls {
    const GROUPS: &'static [Group] = &[Group::Tls];
}
impl Commands for ForKeys {
    const GROUPS: &'static [Group] = &[Group::Keys];
}
impl Commands for ForProtocol {
    const GROUPS: &'static [Group] = &[Group::Protocol];
}

/// The options of the groups `C` takes as a command's flags (`#[command(flatten)]`), read
/// into the settings they give.
pub struct Flags<C> {
    /// What the flags set, the rest at its defaults.
    pub settings: RunSettings,
    commands: PhantomData<C>,
}

fn options_of(groups: &'static [Group]) -> impl Iterator<Item = &'static RunOption> {
    OPTIONS.iter().filter(|o| groups.contains(&o.group))
}

/// `option` as a clap argument.
fn arg(option: &'static RunOption) -> Arg {
    // Without its final stop, as clap's derive writes a doc comment.
    let help = option.help.strip_suffix('.').unwrap_or(option.help);
    let help = match option.default {
        Some(default) => format!("{help} [default: {}]", default()),
        None => help.to_string(),
    };
    let mut arg = Arg::new(option.name).long(option.name).help(help);
    if !option.value_name.is_empty() {
        arg = arg.value_name(option.value_name);
    }
    if option.cli_required {
        arg = arg.required(true);
    }
    for other in option.requires {
        arg = arg.requires(other);
    }
    for other in option.conflicts {
        arg = arg.conflicts_with(other);
    }
    match option.kind {
        Kind::Switch => arg.action(ArgAction::SetTrue),
        Kind::Number { min, max } => arg.value_parser(clap::value_parser!(u64).range(min..=max)),
        Kind::Seconds => arg.value_parser(clap::value_parser!(u64).range(1..=MAX_SECONDS)),
        Kind::Size => arg.value_parser(parse_size),
        Kind::Choice(words) => arg.value_parser(PossibleValuesParser::new(words)),
        Kind::Path => arg.value_parser(clap::value_parser!(PathBuf)),
        Kind::List => arg.value_delimiter(',').action(ArgAction::Append),
        // Checked by the option's own setter, on settings thrown away.
        Kind::Text => arg.value_parser(move |text: &str| {
            (option.set)(&mut RunSettings::default(), Given::Text(text.into()))
                .map(|()| text.to_string())
        }),
    }
}

/// The value `matches` holds for `option`, if it was given.
fn given(option: &RunOption, matches: &ArgMatches) -> Result<Option<Given>, clap::Error> {
    let id = option.name;
    let wrong = |e: clap::parser::MatchesError| {
        clap::Error::raw(clap::error::ErrorKind::ArgumentConflict, e.to_string())
    };
    Ok(match option.kind {
        Kind::Switch => matches.get_flag(id).then_some(Given::Switch(true)),
        Kind::Number { .. } | Kind::Size => {
            (matches.try_get_one::<u64>(id).map_err(wrong)?).map(|&n| Given::Number(n))
        }
        Kind::Seconds => (matches.try_get_one::<u64>(id).map_err(wrong)?)
            .map(|&n| Given::Seconds(Duration::from_secs(n))),
        Kind::Text | Kind::Choice(_) => {
            (matches.try_get_one::<String>(id).map_err(wrong)?).map(|t| Given::Text(t.clone()))
        }
        Kind::Path => {
            (matches.try_get_one::<PathBuf>(id).map_err(wrong)?).map(|p| Given::Path(p.clone()))
        }
        Kind::List => (matches.try_get_many::<String>(id).map_err(wrong)?)
            .map(|l| Given::List(l.cloned().collect())),
    })
}

impl<C: Commands> clap::FromArgMatches for Flags<C> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = Flags {
            settings: RunSettings::default(),
            commands: PhantomData,
        };
        flags.update_from_arg_matches(matches)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        for option in options_of(C::GROUPS) {
            if let Some(value) = given(option, matches)? {
                (self.settings.set(option, value)).map_err(|e| {
                    clap::Error::raw(clap::error::ErrorKind::ValueValidation, e.to_string())
                })?;
            }
        }
        Ok(())
    }
}

impl<C: Commands> clap::Args for Flags<C> {
    fn augment_args(mut cmd: Command) -> Command {
        for option in options_of(C::GROUPS) {
            cmd = cmd.arg(arg(option));
        }
        if C::GROUPS.contains(&Group::Link) {
            let endpoint = ArgGroup::new("endpoint").required(true);
            cmd = cmd.group(endpoint.args(["listen", "connect"]));
        }
        cmd
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}
