//! ARCHITECTURE.md stays true: every module or item its code map names in backticks exists, so a
//! rename that forgets the map fails here instead of misleading the next reader.

use std::fs;
use std::path::{Path, PathBuf};

/// The repository's root (this package's manifest folder).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The code map's paragraphs, each with the folder its bold heading names.
fn code_map(text: &str) -> Vec<(String, String)> {
    let start = text.find("## Code map").unwrap_or(0);
    let end = text[start..]
        .find("## Invariants")
        .map_or(text.len(), |end| start + end);
    text[start..end]
        .split("\n\n")
        .filter_map(|paragraph| {
            let heading = paragraph.strip_prefix("**`")?;
            let folder = &heading[..heading.find('`')?];
            Some((
                folder.trim_end_matches('/').to_owned(),
                paragraph.to_owned(),
            ))
        })
        .collect()
}

/// The backticked names of a paragraph that look like a module, an item or a path of them
/// (`runner`, `notify/`, `agent::decision::decide`); prose in backticks (flags, SQL, types with
/// fields) is left alone.
fn names(paragraph: &str) -> Vec<String> {
    paragraph
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|name| {
            !name.is_empty()
                && !name.starts_with('-')
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_:/-".contains(c))
        })
        .map(|name| name.trim_end_matches('/').to_owned())
        .collect()
}

/// Every Rust file under `folder`, with its text.
fn rust_files(folder: &Path, into: &mut Vec<(PathBuf, String)>) {
    let Ok(entries) = fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let text = fs::read_to_string(&path).unwrap_or_default();
            into.push((path, text));
        }
    }
}

/// Whether `name` is a module (a file or folder) or an item (a function, type, field, constant,
/// macro or module) of the code under `files`.
fn defined(name: &str, files: &[(PathBuf, String)]) -> bool {
    let module = |path: &Path| {
        path.file_stem().is_some_and(|stem| stem == name)
            || path
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|dir| dir == name)
    };
    let item = |text: &str| {
        [
            "fn ", "struct ", "enum ", "trait ", "type ", "mod ", "const ",
        ]
        .iter()
        .any(|kind| text.contains(&format!("{kind}{name}")))
            || text.contains(&format!("pub {name}:"))
            || text.contains(&format!("macro_rules! {name}"))
    };
    files.iter().any(|(path, text)| module(path) || item(text))
}

#[test]
fn every_name_in_the_code_map_exists() {
    let text = fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let mut everything = Vec::new();
    rust_files(&root().join("crates"), &mut everything);
    rust_files(&root().join("src"), &mut everything);
    let mut missing = Vec::new();
    let map = code_map(&text);
    assert!(map.len() >= 5, "the code map's paragraphs were not found");
    for (folder, paragraph) in map {
        let path = root().join(&folder);
        assert!(
            path.exists(),
            "the code map names {folder}, which does not exist"
        );
        let mut here = Vec::new();
        rust_files(&path, &mut here);
        for name in names(&paragraph) {
            if name.contains('/') {
                // A path: from the repository's root, or from the paragraph's folder.
                let exists = |base: &Path| {
                    base.join(&name).exists() || base.join(format!("{name}.rs")).exists()
                };
                if !exists(&root()) && !exists(&path) {
                    missing.push(format!("{folder}: {name}"));
                }
                continue;
            }
            // `a::b::c`: each segment is defined somewhere in the code; a plain name is defined
            // in the paragraph's own folder.
            let found = match name.contains("::") {
                true => name
                    .split("::")
                    .all(|segment| defined(segment, &everything)),
                false => defined(&name, &here),
            };
            if !found {
                missing.push(format!("{folder}: {name}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names what the code does not have:\n{}",
        missing.join("\n")
    );
}

#[test]
fn a_renamed_module_is_caught() {
    let files = vec![(
        PathBuf::from("crates/x/src/runner.rs"),
        "pub fn drive() {}".to_owned(),
    )];
    assert!(defined("runner", &files));
    assert!(defined("drive", &files));
    assert!(!defined("gate", &files));
    let paragraph =
        "**`crates/x/src`** has `runner`, `gate/`, `--auth`, `--auth proxy` and `Identity { a }`.";
    assert_eq!(names(paragraph), ["crates/x/src", "runner", "gate"]);
}
