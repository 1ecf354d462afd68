//! Browser test of `--auth oidc`: headless Chromium signs in through a real OpenID provider's
//! own login form (npm's oidc-provider, `crates/server/tests/oidc`, installed by its
//! `install.sh`), comes back to the page it opened, sees who it is in the account menu, signs
//! out through the provider's logout, and lands signed out. Screenshots of the signed-in menu
//! and the signed-out page go to `tests/artifacts/`. Self-contained: its own server and
//! provider, the shared harness's browser.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::harness::{artifacts_dir, browser_turn, dist_dir, Browser};
use thirtyfour::prelude::*;
use tokio::io::{AsyncBufReadExt, BufReader};

const WAIT: Duration = Duration::from_secs(40);

/// Waits until `css` matches an element whose text holds `text`.
async fn wait_text(driver: &WebDriver, css: &str, text: &str) -> WebElement {
    let start = Instant::now();
    loop {
        if let Ok(element) = driver.find(By::Css(css)).await {
            if element.text().await.unwrap_or_default().contains(text) {
                return element;
            }
        }
        assert!(
            start.elapsed() < WAIT,
            "no {css} with {text:?}; at {}",
            driver.current_url().await.unwrap()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn shot(driver: &WebDriver, name: &str) {
    let png = driver.screenshot_as_png().await.unwrap();
    std::fs::write(artifacts_dir().join(format!("{name}.png")), png).unwrap();
}

/// Starts the test provider for a Signoff server at `base`; its issuer URL and process.
async fn start_provider(base: &str, keys: &Path) -> (String, tokio::process::Child) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/server/tests/oidc");
    assert!(
        dir.join("node_modules/oidc-provider").is_dir(),
        "the test provider is not installed: run crates/server/tests/oidc/install.sh"
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = tokio::process::Command::new("node")
        .arg(dir.join("provider.mjs"))
        .current_dir(&dir)
        .env("PORT", port.to_string())
        .env("REDIRECT_URIS", format!("{base}/auth/callback"))
        .env("POST_LOGOUT_URIS", format!("{base}/auth/signed-out"))
        .env("KEY_DIR", keys)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("listening") {
                return;
            }
        }
        panic!("the provider ended before it listened");
    })
    .await
    .expect("the provider listens");
    // Read the rest of what it prints, or its next line would end it (EPIPE).
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (format!("http://127.0.0.1:{port}"), child)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_signs_in_at_the_provider_sees_their_account_and_signs_out() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let keys = tempfile::tempdir().unwrap();
    let (issuer, _provider) = start_provider(&base, keys.path()).await;
    let data = tempfile::tempdir().unwrap();
    let mut config = signoff_server::Config::new(data.path());
    config.ui_dir = Some(dist_dir());
    config.auth = signoff_server::AuthMode::Oidc;
    config.oidc_issuer = Some(issuer.clone());
    config.oidc_client_id = Some("signoff".into());
    config.oidc_client_secret = Some("signoff-secret".into());
    config.oidc_scopes = ["openid", "profile", "email", "groups"]
        .map(str::to_owned)
        .to_vec();
    config.public_url = Some(base.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(signoff_server::run(listener, config, async move {
        let _ = stopped.await;
    }));

    let _turn = browser_turn().await;
    let browser = Browser::start((1280, 800)).await;
    let driver = &browser.driver;
    // Signed out, a page goes to the provider's own login form.
    driver.goto(format!("{base}/approvals")).await.unwrap();
    wait_text(driver, "body", "Sign-in").await;
    assert!(driver
        .current_url()
        .await
        .unwrap()
        .as_str()
        .starts_with(&issuer));
    driver
        .find(By::Css("input[name=login]"))
        .await
        .unwrap()
        .send_keys("alice")
        .await
        .unwrap();
    driver
        .find(By::Css("input[name=password]"))
        .await
        .unwrap()
        .send_keys("any")
        .await
        .unwrap();
    driver
        .find(By::Css("button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    // The provider's consent, then back to the page first opened.
    wait_text(driver, "body", "Authorize").await;
    driver
        .find(By::Css("button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let name = wait_text(driver, "[data-testid=account-name]", "Alice Example").await;
    assert_eq!(
        driver.current_url().await.unwrap().as_str(),
        format!("{base}/approvals")
    );
    name.click().await.unwrap();
    wait_text(
        driver,
        "[data-testid=account-groups]",
        "Groups: oncall, sre",
    )
    .await;
    shot(driver, "signin-signed-in").await;

    // Sign out: the session ends here and at the provider, which sends the browser back to
    // the signed-out page.
    driver
        .find(By::Css("[data-testid=sign-out]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_text(driver, "body", "sign-out").await;
    driver
        .find(By::Css("button[value=yes]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_text(driver, "#signed-out", "You are signed out").await;
    shot(driver, "signin-signed-out").await;
    let cookies = driver.get_all_cookies().await.unwrap();
    assert!(
        cookies
            .iter()
            .all(|cookie| cookie.name != "signoff_session"),
        "{cookies:?}"
    );
    // Opening the app again asks the provider again.
    driver.goto(format!("{base}/")).await.unwrap();
    wait_text(driver, "body", "Sign-in").await;
    assert!(driver
        .current_url()
        .await
        .unwrap()
        .as_str()
        .starts_with(&issuer));

    let _ = stop.send(());
    server.await.unwrap().unwrap();
}
