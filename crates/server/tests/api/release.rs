//! The released binary as an operator meets it: `signoff --version` names the commit it was
//! built from, and a binary built without the UI (no `embed-ui` feature, no `--ui-dir`) answers
//! every page with one that says how to build the UI, while the API works.

use std::process::Command;

use crate::support::*;

#[test]
fn version_names_the_package_version_and_the_git_commit() {
    let output = Command::new(env!("CARGO_BIN_EXE_signoff"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(output.status.success());
    let printed = String::from_utf8(output.stdout).unwrap();
    // What build.rs reads; "unknown" when this is no git checkout.
    let commit = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8(output.stdout).unwrap().trim().to_owned())
        .unwrap_or_else(|| "unknown".to_owned());
    assert_eq!(
        printed.trim(),
        format!("signoff {} (commit {commit})", env!("CARGO_PKG_VERSION"))
    );
}

#[cfg(not(feature = "embed-ui"))]
#[tokio::test]
async fn a_binary_without_the_ui_says_how_to_build_it_and_serves_the_api() {
    let data = tempfile::tempdir().unwrap();
    let server = start_binary(data.path(), &[], &[]).await;
    assert!(
        server.listening_line.contains("listening on"),
        "{}",
        server.listening_line
    );
    let client = reqwest::Client::new();
    for path in ["/", "/agents/default/demo/chat/s-1", "/index.html"] {
        let response = client
            .get(format!("{}{path}", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 503, "{path}");
        let kind = response.headers()["content-type"].to_str().unwrap();
        assert!(kind.starts_with("text/html"), "{path}: {kind}");
        let page = response.text().await.unwrap();
        assert!(page.contains("./scripts/build-ui.sh"), "{page}");
        assert!(page.contains("--features embed-ui"), "{page}");
        assert!(page.contains("--ui-dir"), "{page}");
    }
    let agents = client
        .get(format!("{}/api/agents", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(agents.status(), 200);
    let ready = client
        .get(format!("{}/readyz", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
}

/// The agents files the deployments ship (deploy/kubernetes) load as the server loads them.
#[test]
fn the_shipped_agents_files_load() {
    let deploy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy");
    for file in [
        "kubernetes/base/agents.toml",
        "kubernetes/overlays/kagent/agents.toml",
    ] {
        let loaded = signoff_server::agent::AgentsFile::load(&deploy.join(file));
        assert!(loaded.is_ok(), "{file}: {:?}", loaded.err());
    }
}
