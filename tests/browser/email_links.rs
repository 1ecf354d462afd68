//! Approvals by email, end to end: the server's email channel sends a waiting batch to a real
//! SMTP server (PyPI's aiosmtpd, `crates/server/tests/email/install.sh`, writing a Maildir);
//! the test parses the message (its text and HTML parts say the same), opens its Approve link
//! in headless Chromium at a phone's width (opening decides nothing), confirms, and the call
//! runs once; the same link again says "already used"; the link of a batch decided over REST
//! says "already decided". Screenshots of the confirm page, light and dark, at a phone's and a
//! desktop's width, go to `tests/artifacts/` (and `$SIGNOFF_SHOTS_DIR` when set).
//! Self-contained: its own server and SMTP server, the shared harness's browser.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use thirtyfour::prelude::*;

use crate::support::harness::{artifacts_dir, browser_turn, Browser};

const WAIT: Duration = Duration::from_secs(40);

/// aiosmtpd on `port`, delivering into the Maildir `maildir`; stopped when dropped.
fn start_smtp(port: u16, maildir: &Path) -> tokio::process::Child {
    let venv = std::env::var_os("SIGNOFF_EMAIL_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(&std::env::var("HOME").unwrap()).join(".cache/signoff/email-venv")
        });
    let python = venv.join("bin/python");
    assert!(
        python.is_file(),
        "no aiosmtpd venv at {}: run crates/server/tests/email/install.sh",
        venv.display()
    );
    tokio::process::Command::new(python)
        .args(["-m", "aiosmtpd", "-n", "-l"])
        .arg(format!("127.0.0.1:{port}"))
        .args(["-c", "aiosmtpd.handlers.Mailbox"])
        .arg(maildir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn wait_for_port(port: u16) {
    let start = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(start.elapsed() < WAIT, "nothing listens on port {port}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A received message: subject, text part, HTML part.
struct Mail {
    subject: String,
    text: String,
    html: String,
}

/// Waits for the Maildir to hold `count` messages; the newest one, parsed.
async fn wait_for_mail(maildir: &Path, count: usize) -> Mail {
    let start = Instant::now();
    loop {
        let mut files: Vec<PathBuf> = std::fs::read_dir(maildir.join("new"))
            .map(|dir| dir.filter_map(|entry| Some(entry.ok()?.path())).collect())
            .unwrap_or_default();
        if files.len() >= count {
            files.sort_by_key(|path| std::fs::metadata(path).unwrap().modified().unwrap());
            let bytes = std::fs::read(files.last().unwrap()).unwrap();
            let message = mail_parser::MessageParser::default().parse(&bytes).unwrap();
            return Mail {
                subject: message.subject().unwrap_or_default().to_owned(),
                text: message.body_text(0).unwrap().into_owned(),
                html: message.body_html(0).unwrap().into_owned(),
            };
        }
        assert!(start.elapsed() < WAIT, "no message number {count} arrived");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The URL after `label: ` in a message's text part.
fn link(text: &str, label: &str) -> String {
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{label}: ")))
        .unwrap_or_else(|| panic!("no {label} link in {text}"))
        .trim()
        .to_owned()
}

async fn rpc(http: &reqwest::Client, base: &str, body: Value) -> Value {
    http.post(format!("{base}/api/a2a/default/demo"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Sends `text` to the demo agent; the task, once it waits for a decision.
async fn paused_task(http: &reqwest::Client, base: &str, text: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "kind": "message", "messageId": format!("m-{text}"), "role": "user",
        "parts": [{"kind": "text", "text": text}]}}});
    let answer = rpc(http, base, body).await;
    assert_eq!(
        answer["result"]["status"]["state"], "input-required",
        "{answer}"
    );
    answer["result"]["id"].as_str().unwrap().to_owned()
}

async fn task_state(http: &reqwest::Client, base: &str, task: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": task}});
    rpc(http, base, body).await["result"]["status"]["state"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn wait_for_state(http: &reqwest::Client, base: &str, task: &str, state: &str) {
    let start = Instant::now();
    while task_state(http, base, task).await != state {
        assert!(start.elapsed() < WAIT, "task {task} never became {state}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the page's `#message` says it is in `state` (`data-state`).
async fn wait_page_state(driver: &WebDriver, state: &str) -> String {
    let start = Instant::now();
    loop {
        if let Ok(message) = driver.find(By::Css("#message")).await {
            if message.attr("data-state").await.unwrap().as_deref() == Some(state) {
                return message.text().await.unwrap();
            }
        }
        assert!(
            start.elapsed() < WAIT,
            "the page never said {state}: {}",
            driver.source().await.unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn color_scheme(driver: &WebDriver, scheme: &str) {
    driver
        .cdp()
        .send_raw(
            "Emulation.setEmulatedMedia",
            json!({ "features": [{ "name": "prefers-color-scheme", "value": scheme }] }),
        )
        .await
        .unwrap();
}

/// The page in light and dark, as `<name>-light.png` and `<name>-dark.png`.
async fn shots(driver: &WebDriver, name: &str) {
    let mut dirs = vec![artifacts_dir()];
    if let Some(extra) = std::env::var_os("SIGNOFF_SHOTS_DIR") {
        std::fs::create_dir_all(&extra).unwrap();
        dirs.push(PathBuf::from(extra));
    }
    for scheme in ["light", "dark"] {
        color_scheme(driver, scheme).await;
        let png = driver.screenshot_as_png().await.unwrap();
        for dir in &dirs {
            std::fs::write(dir.join(format!("{name}-{scheme}.png")), &png).unwrap();
        }
    }
    color_scheme(driver, "light").await;
}

async fn status_of(http: &reqwest::Client, url: &str) -> u16 {
    http.get(url).send().await.unwrap().status().as_u16()
}

/// A notifications file with one email channel to the SMTP server on `smtp_port`, for the
/// batches that start waiting; `local` (the person of `--auth none`) has an address.
fn write_email_channel(path: &Path, smtp_port: u16) {
    std::fs::write(
        path,
        format!(
            r#"
[delivery]
retry_base = "1s"
poll = "200ms"

[[channels]]
name = "mail"
kind = "email"
events = ["batch.pending"]

[channels.email]
smtp_host = "127.0.0.1"
smtp_port = {smtp_port}
tls = "none"
from = "Signoff <signoff@example.test>"
people = {{ local = "Local Person <local@example.test>" }}
"#
        ),
    )
    .unwrap();
}

/// The text of the page's element `css`.
async fn text_of(driver: &WebDriver, css: &str) -> String {
    driver
        .find(By::Css(css))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

#[tokio::test]
async fn an_emailed_approve_link_decides_once_after_its_confirm_page() {
    let _turn = browser_turn().await;
    let scratch = tempfile::tempdir().unwrap();
    let maildir = scratch.path().join("maildir");
    let smtp_port = free_port();
    let _smtp = start_smtp(smtp_port, &maildir);
    wait_for_port(smtp_port).await;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let notifications = scratch.path().join("notifications.toml");
    write_email_channel(&notifications, smtp_port);
    let data = tempfile::tempdir().unwrap();
    let mut config = signoff_server::Config::new(data.path());
    config.notifications = Some(notifications);
    config.public_url = Some(base.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(signoff_server::run(listener, config, async move {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();

    let task = paused_task(&http, &base, "write notes.txt: hi").await;
    let mail = wait_for_mail(&maildir, 1).await;
    assert_eq!(
        mail.subject,
        "default/demo waits for your sign-off (1 calls)"
    );
    let approve = link(&mail.text, "Approve");
    let reject = link(&mail.text, "Reject");
    assert!(approve.starts_with(&format!("{base}/decide/")), "{approve}");
    for part in [&mail.text, &mail.html] {
        for needle in [
            "default/demo",
            "local",
            "write_file",
            "notes.txt",
            &approve,
            &reject,
        ] {
            assert!(part.contains(needle), "{needle} in {part}");
        }
    }

    let browser = Browser::start((390, 844)).await;
    let driver = &browser.driver;
    // Headless Chromium widens a first window narrower than 500 pixels; set again, it keeps 390.
    driver.set_window_rect(0, 0, 390, 844).await.unwrap();
    driver.goto(&approve).await.unwrap();
    assert_eq!(text_of(driver, "#title").await, "Approve 1 call?");
    assert_eq!(text_of(driver, "#agent").await, "default/demo");
    shots(driver, "decision-link-phone").await;
    driver.set_window_rect(0, 0, 1280, 900).await.unwrap();
    shots(driver, "decision-link-desktop").await;
    driver.goto(&reject).await.unwrap();
    shots(driver, "decision-link-reject").await;
    driver.set_window_rect(0, 0, 390, 844).await.unwrap();
    // Opening the links decided nothing.
    assert_eq!(task_state(&http, &base, &task).await, "input-required");
    assert!(!data.path().join("sandbox/notes.txt").exists());

    driver.goto(&approve).await.unwrap();
    driver
        .find(By::Css("#confirm"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let said = wait_page_state(driver, "decided").await;
    assert!(said.contains("Decided as local"), "{said}");
    shots(driver, "decision-link-approved").await;
    wait_for_state(&http, &base, &task, "completed").await;
    assert_eq!(
        std::fs::read_to_string(data.path().join("sandbox/notes.txt")).unwrap(),
        "hi"
    );
    let audit: Value = http
        .get(format!("{base}/api/approvals?state=decided"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let decisions = audit["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), 1, "{audit}");
    assert_eq!(decisions[0]["channel"], "link");
    assert_eq!(decisions[0]["decidedBy"], "local");

    // The same link again.
    driver.goto(&approve).await.unwrap();
    let said = wait_page_state(driver, "used").await;
    assert!(said.contains("already been used"), "{said}");
    shots(driver, "decision-link-used").await;
    assert_eq!(status_of(&http, &approve).await, 410);

    // A batch decided in the UI's way (REST) leaves its emailed links dead.
    let second = paused_task(&http, &base, "delete old.txt").await;
    let mail = wait_for_mail(&maildir, 2).await;
    let approve_second = link(&mail.text, "Approve");
    assert_ne!(approve_second, approve);
    let decided = http
        .post(format!("{base}/api/approvals/{second}"))
        .json(&json!({"decision_type": "deny", "reason": "keep it"}))
        .send()
        .await
        .unwrap();
    assert_eq!(decided.status(), 200);
    driver.goto(&approve_second).await.unwrap();
    let said = wait_page_state(driver, "decided").await;
    assert!(said.contains("Rejected: keep it by local (rest)"), "{said}");
    shots(driver, "decision-link-decided-elsewhere").await;
    assert_eq!(status_of(&http, &approve_second).await, 409);
    assert!(data.path().join("sandbox/old.txt").exists());

    // Quitting the session ends Chromium at once (dropping the driver alone waits on it).
    let _ = browser.driver.clone().quit().await;
    let _ = stop.send(());
    server.await.unwrap().unwrap();
}
