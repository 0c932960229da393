//! The crate's layers, enforced: each module may import only modules of a lower rank
//! (nothing imports upwards). Doc comments may still name a higher layer.

/// Every top-level module and its rank, lowest first.
const RANKS: &[(&str, u8)] = &[
    ("error", 0),
    ("util", 1),
    ("parties", 1),
    ("crypto", 2),
    ("he", 2),
    ("net", 3),
    ("items", 3),
    ("options", 4),
    ("state", 4),
    ("session", 5),
    ("ot", 6),
    ("tables", 6),
    ("okvs", 7),
    ("vole", 7),
    ("framework", 7),
    ("gmw", 8),
    ("oprf", 8),
    ("unbalanced", 8),
    ("circuit_psi", 9),
    ("protocols", 10),
    ("run", 11),
    ("later_rows", 11),
    ("fuzz", 12),
];

fn rank(module: &str) -> Option<u8> {
    RANKS.iter().find(|(m, _)| *m == module).map(|&(_, r)| r)
}

/// The first segments of the paths after `crate::` in a file's code (comments skipped):
/// `crate::a::b` gives `a`, `crate::{a::b, c}` (over several lines too) gives `a` and `c`.
fn imports(source: &str) -> Vec<String> {
    let code: String = source
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = Vec::new();
    for after in code.split("crate::").skip(1) {
        let Some(group) = after.strip_prefix('{') else {
            found.push(ident(after));
            continue;
        };
        // The group's top-level entries: split at commas outside nested braces.
        let (mut depth, mut start) = (0, 0);
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    found.push(ident(&group[start..i]));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    found.push(ident(&group[start..i]));
                    start = i + 1;
                }
                _ => {}
            }
        }
    }
    found.retain(|name| !name.is_empty());
    found
}

fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn nothing_imports_upwards() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut checked = 0;
    for path in all {
        let relative = path.strip_prefix(&src).unwrap();
        let top = relative.iter().next().unwrap().to_str().unwrap();
        let top = top.strip_suffix(".rs").unwrap_or(top);
        if matches!(top, "lib" | "layers" | "internals") {
            continue;
        }
        let own = rank(top).unwrap_or_else(|| panic!("src/{top}: not in the layer table"));
        let source = std::fs::read_to_string(&path).unwrap();
        for name in imports(&source) {
            if let Some(theirs) = rank(&name).filter(|_| name != top) {
                assert!(
                    theirs < own,
                    "{} imports crate::{name}, a layer not below {top}",
                    relative.display()
                );
            }
        }
        checked += 1;
    }
    assert!(checked > 100, "only {checked} files read");
}

#[test]
fn imports_are_read_from_paths_and_groups() {
    let source = "use crate::ot::x;\nuse crate::{net::{Channel, Reader}, Error}; // crate::run\n\
                  use crate::{\n    items::Items,\n    util::memory,\n};\n";
    assert_eq!(imports(source), ["ot", "net", "Error", "items", "util"]);
}

/// A file's code with comments and its trailing `#[cfg(test)] mod` cut off: what the
/// cycle check reads (a test module may use any of its siblings).
fn production_code(source: &str) -> String {
    let code = source.split("\n#[cfg(test)]\nmod ").next().unwrap_or("");
    code.lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The code's tokens that paths are made of: identifiers, `::`, braces and commas; anything
/// else becomes an empty token that ends a path.
fn tokens(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(c) = rest.chars().next() {
        let len = if c.is_ascii_alphanumeric() || c == '_' {
            rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len())
        } else if rest.starts_with("::") {
            2
        } else {
            c.len_utf8()
        };
        let token = &rest[..len];
        let kept = len > 1 || c.is_ascii_alphanumeric() || "_{},".contains(c);
        if !c.is_whitespace() {
            out.push(if kept { token } else { "" });
        }
        rest = &rest[len..];
    }
    out
}

/// Every path the code names through `crate::`, `super::` or `self::`, resolved against the
/// file's module path (`module`), groups expanded: `super::{a::B, c}` in `m::f` gives
/// `m::a::B` and `m::c`.
fn references(source: &str, module: &[String]) -> Vec<Vec<String>> {
    let code = production_code(source);
    let tokens = tokens(&code);
    let mut found = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let starts = matches!(tokens[i], "crate" | "super" | "self")
            && tokens.get(i + 1) == Some(&"::")
            && (i == 0 || tokens[i - 1] != "::");
        if !starts {
            i += 1;
            continue;
        }
        let mut base: Vec<String> = match tokens[i] {
            "crate" => Vec::new(),
            "self" => module.to_vec(),
            _ => module[..module.len().saturating_sub(1)].to_vec(),
        };
        i += 2;
        while tokens.get(i) == Some(&"super") && tokens.get(i + 1) == Some(&"::") {
            base.pop();
            i += 2;
        }
        i = tree(&tokens, i, base, &mut found);
    }
    found
}

/// Reads one use-tree from `tokens[i..]` under `prefix` into `found`; returns where it ends.
fn tree(
    tokens: &[&str],
    mut i: usize,
    mut prefix: Vec<String>,
    found: &mut Vec<Vec<String>>,
) -> usize {
    loop {
        match tokens.get(i) {
            Some(&"{") => {
                i += 1;
                while !matches!(tokens.get(i), None | Some(&"}")) {
                    let end = tree(tokens, i, prefix.clone(), found);
                    // Past the entry's comma, or past what is no path (`*`, `as`'s name).
                    i = end.max(i + 1);
                    if tokens.get(i) == Some(&",") {
                        i += 1;
                    }
                }
                return i + 1;
            }
            Some(t) if !t.is_empty() && !matches!(*t, "::" | "}" | ",") => {
                prefix.push(t.to_string());
                i += 1;
                if tokens.get(i) == Some(&"::") {
                    i += 1;
                    continue;
                }
                found.push(prefix);
                return i;
            }
            end => {
                if !prefix.is_empty() {
                    found.push(prefix);
                }
                // A glob's `*` ends the path and is read; a comma or brace is the caller's.
                return i + usize::from(end == Some(&""));
            }
        }
    }
}

/// A file's module path under its crate's `src`: `okvs/dense.rs` is `okvs::dense`,
/// `okvs/mod.rs` is `okvs`.
fn module_path(relative: &std::path::Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_str().unwrap().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The imports between sibling files of each directory module and of the crate's root,
/// as (module, from, to): a file or subdirectory `from` of `module` (`crate` at the root)
/// names a sibling `to` (the module's own `mod.rs`, or the root's `lib.rs` or `main.rs`,
/// which declares them all, is no sibling).
fn sibling_imports(src: &std::path::Path) -> Vec<(String, String, String)> {
    let mut all = Vec::new();
    files(src, &mut all);
    let mut edges = Vec::new();
    for path in all {
        let module = module_path(path.strip_prefix(src).unwrap());
        if matches!(module.as_slice(), [root] if root == "lib" || root == "main") {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        for target in references(&source, &module) {
            for depth in 0..module.len() {
                let (dir, from) = (&module[..depth], &module[depth]);
                let Some(to) = target.get(depth).filter(|_| target.starts_with(dir)) else {
                    continue;
                };
                let sibling = src.join(dir.join("/"));
                let is_module =
                    sibling.join(format!("{to}.rs")).is_file() || sibling.join(to).is_dir();
                if to != from && is_module {
                    let name = if depth == 0 {
                        "crate".into()
                    } else {
                        dir.join("::")
                    };
                    edges.push((name, from.clone(), to.clone()));
                }
            }
        }
    }
    edges.sort();
    edges.dedup();
    edges
}

/// A cycle among the edges, if any: the files around it, the first repeated at the end.
fn cycle(edges: &[(String, String, String)]) -> Option<Vec<String>> {
    fn visit<'a>(
        node: (&'a str, &'a str),
        edges: &'a [(String, String, String)],
        path: &mut Vec<(&'a str, &'a str)>,
        done: &mut Vec<(&'a str, &'a str)>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|&n| n == node) {
            let mut around: Vec<String> = path[at..]
                .iter()
                .map(|(m, f)| format!("{m}::{f}"))
                .collect();
            around.push(format!("{}::{}", node.0, node.1));
            return Some(around);
        }
        if done.contains(&node) {
            return None;
        }
        path.push(node);
        for (m, f, t) in edges {
            if (m.as_str(), f.as_str()) == node {
                if let Some(found) = visit((m, t), edges, path, done) {
                    return Some(found);
                }
            }
        }
        path.pop();
        done.push(node);
        None
    }
    let mut done = Vec::new();
    edges
        .iter()
        .find_map(|(m, f, _)| visit((m, f), edges, &mut Vec::new(), &mut done))
}

#[test]
fn no_files_of_a_module_import_each_other_in_a_circle() {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut checked = 0;
    for entry in std::fs::read_dir(&crates).unwrap() {
        let src = entry.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        let edges = sibling_imports(&src);
        checked += edges.len();
        if let Some(around) = cycle(&edges) {
            panic!("{}: {}", src.display(), around.join(" → "));
        }
    }
    assert!(
        checked > 50,
        "only {checked} imports between sibling files found"
    );
}

#[test]
fn sibling_imports_are_resolved_and_cycles_found() {
    let module = ["okvs".to_string(), "dense".to_string()];
    let source = "use super::rows::{RowHasher, BATCH};\nuse super::{solve::x, Params, tests::*};\n\
                  use crate::okvs::params::P; // super::gone\nfn f() { self::g(); }\n\
                  #[cfg(test)]\nmod tests { use super::super::late::X; }\n";
    let found: Vec<String> = references(source, &module)
        .iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(
        found,
        [
            "okvs::rows::RowHasher",
            "okvs::rows::BATCH",
            "okvs::solve::x",
            "okvs::Params",
            "okvs::tests",
            "okvs::params::P",
            "okvs::dense::g"
        ]
    );
    let edge = |f: &str, t: &str| ("okvs".to_string(), f.to_string(), t.to_string());
    let chain = [
        edge("params", "dense"),
        edge("dense", "rows"),
        edge("dense", "solve"),
    ];
    assert_eq!(cycle(&chain), None);
    let circle = [&chain[..], &[edge("rows", "params")]].concat();
    assert_eq!(
        cycle(&circle).unwrap(),
        ["okvs::params", "okvs::dense", "okvs::rows", "okvs::params"]
    );
}
