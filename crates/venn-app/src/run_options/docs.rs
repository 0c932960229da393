//! What the table of options writes outside the code: docs/cli.md's table of `venn send`
//! and `venn receive`'s options, and the Python package's `PartyOptions`. Each sits in its
//! file between two marker lines; the tests below fail when either differs from the
//! table, and rewrite both when run with `VENN_WRITE_GENERATED=1`.

use super::{Kind, Python, RunOption, OPTIONS};

/// The line before docs/cli.md's table of options.
pub const CLI_BEGIN: &str =
    "<!-- Written from crates/venn-app/src/run_options/table.rs: edit it there (docs/testing.md). -->";
/// The line after it.
pub const CLI_END: &str = "<!-- End of the table's options. -->";
/// The line before `PartyOptions`' keywords from the table.
pub const PYTHON_BEGIN: &str =
    "    # Written from crates/venn-app/src/run_options/table.rs: edit it there (docs/testing.md).";
/// The line after them.
pub const PYTHON_END: &str = "    # End of the table's options.";

/// docs/cli.md's table: a row an option, the flag (with its placeholder) and its docs.
pub fn cli_table() -> String {
    let mut out = String::from("| option | meaning |\n| --- | --- |\n");
    for option in OPTIONS {
        let flag = match (option.kind, option.value_name) {
            (Kind::Switch, _) => format!("--{}", option.name),
            (Kind::Choice(words), _) => format!("--{} {}", option.name, words.join("|")),
            (Kind::List, value) => format!("--{} {value}[,{value}…]", option.name),
            (_, value) => format!("--{} {value}", option.name),
        };
        let cell = |s: &str| s.replace('|', "\\|");
        let doc = option.doc.replace("\\|", "|");
        out.push_str(&format!("| `{}` | {} |\n", cell(&flag), cell(&doc)));
    }
    out
}

/// The Python type of an option's keyword.
fn python_type(option: &RunOption) -> &'static str {
    match option.kind {
        Kind::Switch => "bool",
        Kind::Number { .. } | Kind::Size => "int",
        Kind::Seconds => "float",
        Kind::Text | Kind::Choice(_) => "str",
        Kind::Path => "Path",
        Kind::List => "Union[str, Sequence[str]]",
    }
}

/// `PartyOptions`' keywords from the table: those every Python party takes.
pub fn python_options() -> String {
    (OPTIONS.iter())
        .filter(|o| o.python == Python::Options)
        .map(|o| format!("    {}: {}\n", o.id(), python_type(o)))
        .collect()
}

/// `text` with what lies between the lines `begin` and `end` replaced by `block`, or
/// `None` where the markers are missing.
pub fn replace_between(text: &str, begin: &str, end: &str, block: &str) -> Option<String> {
    let start = text.find(&format!("{begin}\n"))? + begin.len() + 1;
    let stop = start + text[start..].find(&format!("{end}\n"))?;
    Some(format!("{}{block}{}", &text[..start], &text[stop..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_options::{Group, Takes};
    use std::path::PathBuf;

    fn repo() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    /// Checks (or with `VENN_WRITE_GENERATED=1` writes) the block of `file` between
    /// `begin` and `end`.
    fn holds(file: &str, begin: &str, end: &str, block: &str) {
        let path = repo().join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let want = replace_between(&text, begin, end, block)
            .unwrap_or_else(|| panic!("{file} lacks the lines {begin:?} and {end:?}"));
        if std::env::var_os("VENN_WRITE_GENERATED").is_some() {
            std::fs::write(&path, &want).unwrap();
        } else {
            assert!(
                text == want,
                "{file} differs from the table of options: run \
                 `VENN_WRITE_GENERATED=1 cargo test -p venn-app run_options` and review the diff"
            );
        }
    }

    #[test]
    fn the_cli_docs_list_the_tables_options() {
        holds("docs/cli.md", CLI_BEGIN, CLI_END, &cli_table());
    }

    #[test]
    fn python_party_options_are_the_tables() {
        let init = "crates/venn-python/python/venn/__init__.py";
        holds(init, PYTHON_BEGIN, PYTHON_END, &python_options());
    }

    /// The file functions' own parameters are the table's [`Python::File`] options: each
    /// is a parameter of `venn.send_file`, and of the native party's stub.
    #[test]
    fn the_file_functions_take_the_tables_file_options() {
        let init =
            std::fs::read_to_string(repo().join("crates/venn-python/python/venn/__init__.py"))
                .unwrap();
        let stub = std::fs::read_to_string(repo().join("crates/venn-python/python/venn/_venn.pyi"))
            .unwrap();
        let signature = |text: &str, def: &str| -> String {
            let start = text.find(def).unwrap_or_else(|| panic!("no {def}"));
            text[start..start + text[start..].find(") ->").unwrap()].to_string()
        };
        let send_file = signature(&init, "def send_file(");
        let party = signature(&stub, "class Party:");
        for option in OPTIONS.iter().filter(|o| o.python == Python::File) {
            let name = format!("{}:", option.id());
            assert!(send_file.contains(&name), "send_file lacks {name}");
            assert!(party.contains(&name), "_venn.pyi's Party lacks {name}");
        }
    }

    /// A Thunder pairing links to its partners itself, with the party's TLS options: each
    /// of the table's TLS keywords is a parameter of `venn.cloud.Client.pair` and of the
    /// native client's stub (the native side reads them through the table).
    #[test]
    fn a_thunder_pairing_takes_the_tables_tls_options() {
        let read = |file: &str| std::fs::read_to_string(repo().join(file)).unwrap();
        let (cloud, stub) = (
            read("crates/venn-python/python/venn/cloud.py"),
            read("crates/venn-python/python/venn/_venn.pyi"),
        );
        let pair = |text: &str| -> String {
            let start = text.find("def pair(").expect("no def pair(");
            text[start..start + text[start..].find(") ->").unwrap()].to_string()
        };
        for option in OPTIONS.iter().filter(|o| o.group == Group::Tls) {
            let name = format!("{}:", option.id());
            assert!(pair(&cloud).contains(&name), "cloud.py's pair lacks {name}");
            assert!(pair(&stub).contains(&name), "_venn.pyi's pair lacks {name}");
        }
    }

    /// Each protocol that takes an option is named in the option's docs, so the docs
    /// follow the registry: a protocol that comes to take one must be added there.
    #[test]
    fn an_options_docs_name_the_protocols_that_take_it() {
        let unnamed: Vec<String> = (OPTIONS.iter())
            .filter(|o| matches!(o.takes, Takes::Where(_)))
            .flat_map(|o| {
                (o.protocols().into_iter())
                    .filter(|p| !o.doc.contains(&format!("`{p}`")))
                    .map(move |p| format!("--{} takes {p}", o.name))
            })
            .collect();
        assert!(unnamed.is_empty(), "docs that do not say so: {unnamed:?}");
    }

    #[test]
    fn replace_between_keeps_what_is_around() {
        let text = "a\nB\nold\nE\nz\n";
        assert_eq!(
            replace_between(text, "B", "E", "new\n").unwrap(),
            "a\nB\nnew\nE\nz\n"
        );
        assert_eq!(replace_between(text, "X", "E", "new\n"), None);
    }
}
