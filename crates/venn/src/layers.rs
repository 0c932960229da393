//! The crate's layers, enforced: each module may import only modules of a lower rank
//! (nothing imports upwards). Doc comments may still name a higher layer.

/// Every top-level module and its rank, lowest first.
const RANKS: &[(&str, u8)] = &[
    ("error", 0),
    ("util", 1),
    ("parties", 1),
    ("crypto", 2),
    ("net", 3),
    ("items", 3),
    ("options", 4),
    ("state", 4),
    ("session", 5),
    ("ot", 6),
    ("tables", 6),
    ("okvs", 7),
    ("vole", 7),
    ("gmw", 8),
    ("protocols", 9),
    ("run", 10),
    ("fuzz", 11),
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
        if matches!(top, "lib" | "layers") {
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
