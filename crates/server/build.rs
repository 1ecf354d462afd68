//! Build facts for the `signoff` binary: the git commit it is built from (for `--version`),
//! each backend's list of migrations (every file of `migrations/{sqlite,postgres}/`, in order),
//! and, with the `embed-ui` feature, a check that the built UI is there to be put inside it.

// Cargo reads a build script's directives from its standard output; a build that cannot go on
// stops with a panic, which cargo shows as the build's error.
#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    println!(
        "cargo:rustc-env=SIGNOFF_GIT_COMMIT={}",
        git_commit(&manifest)
    );
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    for backend in ["sqlite", "postgres"] {
        list_migrations(&manifest.join("migrations").join(backend), &out, backend);
    }
    if std::env::var_os("CARGO_FEATURE_EMBED_UI").is_some() {
        check_built_ui(&manifest.join("../../dist"));
    }
}

/// `SIGNOFF_GIT_COMMIT` when set (a build from a source archive can say), else
/// `git rev-parse --short HEAD`, else "unknown". The build runs again when HEAD moves.
fn git_commit(manifest: &Path) -> String {
    println!("cargo:rerun-if-env-changed=SIGNOFF_GIT_COMMIT");
    if let Some(given) = std::env::var("SIGNOFF_GIT_COMMIT")
        .ok()
        .and_then(|commit| hex(&commit))
    {
        return given;
    }
    let Some(commit) = git(manifest, &["rev-parse", "--short", "HEAD"]).and_then(|c| hex(&c))
    else {
        return "unknown".to_owned();
    };
    // HEAD names the branch; a commit moves the branch's ref (a loose file, or packed-refs).
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    watched.extend(git(manifest, &["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(manifest, &["rev-parse", "--git-path", &name]) {
            let path = manifest.join(path);
            // Only paths that exist: cargo reruns a script whose watched path is missing on
            // every build, and every build would then compile this crate again.
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    commit
}

/// `git ARGS` run in `dir`: its first line of output, if it succeeded.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let line = text.lines().next()?.trim().to_owned();
    (output.status.success() && !line.is_empty()).then_some(line)
}

/// `text` trimmed, if it is a plausible abbreviated commit (hex digits only).
fn hex(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty() && text.len() <= 40 && text.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| text.to_owned())
}

/// The `embed-ui` feature puts `dist/` into the binary: without a built UI there, the build
/// stops and says how to make one (instead of a binary that quietly serves no UI). Any change
/// under `dist/` (a new `trunk build`) builds the crate again.
fn check_built_ui(dist: &Path) {
    println!("cargo:rerun-if-changed={}", dist.display());
    if !dist.join("index.html").is_file() {
        panic!(
            "the embed-ui feature puts the built UI into the binary, and {} has no index.html: \
             build the UI first (./scripts/build-ui.sh), or build without --features embed-ui",
            dist.display()
        );
    }
}

/// Writes `{backend}_migrations.rs` in `out`: an array of the `include_str!`s of every `.sql`
/// file in `dir`, oldest first, so a new migration is a new file and nothing else. The files
/// must be numbered `0001_…`, `0002_…` without a gap: a database records how many it has
/// applied, so a missing or doubled number would skip or repeat one.
fn list_migrations(dir: &Path, out: &Path, backend: &str) {
    println!("cargo:rerun-if-changed={}", dir.display());
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|err| panic!("reading the migrations in {}: {err}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "sql"))
        .collect();
    files.sort();
    let mut array = String::from("[\n");
    for (index, file) in files.iter().enumerate() {
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        let expected = format!("{:04}_", index + 1);
        if !name.starts_with(&expected) {
            panic!(
                "migrations/{backend}/{name}: expected a file named {expected}…; migrations are \
                 numbered from 0001 without a gap"
            );
        }
        array.push_str(&format!(
            "    include_str!({:?}),\n",
            file.display().to_string()
        ));
    }
    array.push(']');
    let target = out.join(format!("{backend}_migrations.rs"));
    std::fs::write(&target, array)
        .unwrap_or_else(|err| panic!("writing {}: {err}", target.display()));
}
