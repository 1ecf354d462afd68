//! The binary built with the `embed-ui` feature carries the built UI (the workspace's `dist/`,
//! from `scripts/build-ui.sh`) inside it: started with no `--ui-dir`, it serves `index.html` at
//! `/` and at deep links, trunk's hashed assets in the encoding the client asks for with
//! immutable caching, and `--ui-dir` still overrides the embedded copy.
//!
//! Run by name, with `SIGNOFF_EMBEDDED_BIN` naming such a build of the current `dist/`
//! (`scripts/test.sh` gives it the static build):
//! `scripts/build-static.sh --ui-built --profile static-check && SIGNOFF_EMBEDDED_BIN=$PWD/target/static-static-check/signoff cargo test -p signoff-server --test embedded_ui`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// Shared by every test crate; each uses part of it.
#[allow(dead_code, unused_imports)]
#[path = "../support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};

use support::*;

const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The build with the UI inside, which the test command names.
fn embedded_binary() -> PathBuf {
    let Some(path) = std::env::var_os("SIGNOFF_EMBEDDED_BIN") else {
        panic!(
            "SIGNOFF_EMBEDDED_BIN must name a signoff built with the embed-ui feature \
             (scripts/build-static.sh --ui-built --profile static-check builds one at \
             target/static-static-check/signoff)"
        );
    };
    PathBuf::from(path)
}

/// The folder the binary embedded (build.rs checked it has an index.html).
fn dist() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../dist")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(dist().join(name)).unwrap_or_else(|err| panic!("dist/{name}: {err}"))
}

/// trunk's content-hashed files in dist/ (`name-<hex hash>.js`, `…_bg.wasm`, `….css`).
fn hashed_assets() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dist())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| {
            let Some((stem, extension)) = name.rsplit_once('.') else {
                return false;
            };
            let stem = stem.strip_suffix("_bg").unwrap_or(stem);
            ["js", "wasm", "css"].contains(&extension)
                && stem.rsplit_once('-').is_some_and(|(_, hash)| {
                    (8..=16).contains(&hash.len()) && hash.bytes().all(|b| b.is_ascii_hexdigit())
                })
        })
        .collect();
    names.sort();
    names
}

async fn get(base: &str, path: &str, accept: Option<&str>) -> reqwest::Response {
    // The client decompresses nothing: bodies arrive as sent.
    let mut request = reqwest::Client::new().get(format!("{base}{path}"));
    if let Some(accept) = accept {
        request = request.header("accept-encoding", accept);
    }
    request.send().await.unwrap()
}

fn header(response: &reqwest::Response, name: &str) -> String {
    response
        .headers()
        .get(name)
        .map(|value| value.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

#[tokio::test]
async fn the_binary_serves_the_ui_inside_it_precompressed_and_cached() {
    let data = tempfile::tempdir().unwrap();
    let server = start_binary_at(&embedded_binary(), data.path(), &[], &[]).await;
    let base = &server.base;

    for path in ["/", "/agents/default/demo/chat/s-1"] {
        let response = get(base, path, Some("gzip, br")).await;
        assert_eq!(response.status(), 200, "{path}");
        assert!(header(&response, "content-type").starts_with("text/html"));
        assert_eq!(header(&response, "content-encoding"), "br", "{path}");
        assert_eq!(header(&response, "cache-control"), "no-cache", "{path}");
        assert_eq!(response.bytes().await.unwrap(), read("index.html.br"));
    }
    let response = get(base, "/", None).await;
    assert_eq!(header(&response, "content-encoding"), "");
    assert_eq!(response.bytes().await.unwrap(), read("index.html"));

    let assets = hashed_assets();
    assert!(
        !assets.is_empty(),
        "no hashed asset in {}",
        dist().display()
    );
    for name in &assets {
        let path = format!("/{name}");
        let response = get(base, &path, Some("br")).await;
        assert_eq!(response.status(), 200, "{name}");
        assert_eq!(header(&response, "content-encoding"), "br", "{name}");
        assert_eq!(header(&response, "cache-control"), IMMUTABLE, "{name}");
        assert_eq!(header(&response, "vary"), "accept-encoding", "{name}");
        let kind = header(&response, "content-type");
        let expected = match name.rsplit_once('.').unwrap().1 {
            "wasm" => "application/wasm",
            "css" => "text/css",
            _ => "javascript",
        };
        assert!(kind.contains(expected), "{name}: {kind}");
        let etag = header(&response, "etag");
        assert_eq!(response.bytes().await.unwrap(), read(&format!("{name}.br")));

        let response = get(base, &path, Some("gzip")).await;
        assert_eq!(header(&response, "content-encoding"), "gzip", "{name}");
        assert_eq!(response.bytes().await.unwrap(), read(&format!("{name}.gz")));

        let again = reqwest::Client::new()
            .get(format!("{base}{path}"))
            .header("accept-encoding", "br")
            .header("if-none-match", &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304, "{name}");
    }
}

#[tokio::test]
async fn ui_dir_overrides_the_ui_inside_the_binary() {
    let data = tempfile::tempdir().unwrap();
    let ui = tempfile::tempdir().unwrap();
    let page = "<!DOCTYPE html><title>from a folder</title>";
    std::fs::write(ui.path().join("index.html"), page).unwrap();
    let ui_dir = ["--ui-dir", ui.path().to_str().unwrap()];
    let server = start_binary_at(&embedded_binary(), data.path(), &ui_dir, &[]).await;
    for path in ["/", "/agents/default/demo/chat/s-1"] {
        let response = get(&server.base, path, Some("br, gzip")).await;
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(header(&response, "content-encoding"), "", "{path}");
        assert_eq!(response.text().await.unwrap(), page, "{path}");
    }
}
