//! The browser-test harness: the real server in-process on port 0 with a fresh data directory,
//! chromedriver on a free port, headless Chromium with a fresh profile, and helpers that select
//! by `data-testid`, wait for conditions, collect console errors and save screenshots.

use std::net::TcpListener as StdListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use signoff_server::{run, Config};
use tempfile::TempDir;
use thirtyfour::prelude::*;
use tokio::process::{Child, Command};
use tokio::sync::{oneshot, Mutex, MutexGuard};

/// One browser at a time: two cores do not run several Chromiums and the server well. The
/// binary's tests run on parallel threads; each holds this from `App::start` until its `App`
/// is dropped, so the browser parts of the tests run one after another.
static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

/// The browser's turn, for a test that drives a [`Browser`] of its own rather than an [`App`]:
/// held until dropped.
pub async fn browser_turn() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().await
}

/// How long a condition may take before the test fails (generous: CI machines are slow).
const WAIT: Duration = Duration::from_secs(40);

/// Installed before any page script: records console errors, uncaught errors and rejections.
const ERROR_HOOK: &str = r#"
window.__errors = [];
window.addEventListener('error', (e) => window.__errors.push('error: ' + e.message));
window.addEventListener('unhandledrejection', (e) => window.__errors.push('rejection: ' + String(e.reason)));
window.__warnings = [];
const originalWarn = console.warn;
console.warn = function (...args) {
  window.__warnings.push(args.map(String).join(' '));
  return originalWarn.apply(console, args);
};
const original = console.error;
console.error = function (...args) {
  window.__errors.push('console.error: ' + args.map(String).join(' '));
  return original.apply(console, args);
};
"#;

/// Runs axe over the document; answers its serious and critical violations as strings.
const AXE_RUN: &str = r#"
const done = arguments[arguments.length - 1];
axe.run(document, {
  runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] },
  resultTypes: ['violations'],
}).then((results) => done(results.violations
  .filter((v) => v.impact === 'serious' || v.impact === 'critical')
  .flatMap((v) => v.nodes.map((node) =>
    `${v.id} (${v.impact}): ${v.help} — ${node.target.join(' ')}: ${node.failureSummary}`))))
  .catch((error) => done([`axe failed: ${error}`]));
"#;

pub fn dist_dir() -> PathBuf {
    let dir = std::env::var_os("SIGNOFF_UI_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("dist"));
    assert!(
        dir.join("index.html").is_file(),
        "no built UI at {}: run `trunk build --release --offline` first (scripts/build-ui.sh), \
         or point SIGNOFF_UI_DIR at trunk's dist folder",
        dir.display()
    );
    dir
}

pub fn artifacts_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub async fn wait_for_port(port: u16) {
    let start = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(start.elapsed() < WAIT, "nothing listens on port {port}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A running server, browser and page.
pub struct App {
    pub driver: WebDriver,
    pub base: String,
    pub data: TempDir,
    pub http: reqwest::Client,
    name: String,
    shutdown: Option<oneshot::Sender<()>>,
    /// The running server, and how to start it again (`stop_server`, `start_server`).
    server: Option<tokio::task::JoinHandle<()>>,
    config: Config,
    _browser: Browser,
    _guard: MutexGuard<'static, ()>,
}

/// A headless Chromium with a fresh profile, driven through its own chromedriver: a second
/// one is a second person (its own storage) on the same server.
pub struct Browser {
    pub driver: WebDriver,
    _chromedriver: Child,
    profile: TempDir,
}

impl Browser {
    /// The port of Chromium's own DevTools endpoint (chromedriver starts it with
    /// `--remote-debugging-port=0`; Chromium writes the port it took into the profile), for
    /// what chromedriver cannot reach: a service worker's own target.
    pub fn devtools_port(&self) -> u16 {
        let written = std::fs::read_to_string(self.profile.path().join("DevToolsActivePort"))
            .expect("Chromium writes DevToolsActivePort into its profile");
        written.lines().next().unwrap().trim().parse().unwrap()
    }

    /// Starts chromedriver and Chromium with a window of `size`.
    pub async fn start(size: (u32, u32)) -> Browser {
        let port = free_port();
        let chromedriver =
            std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".to_owned());
        let child = Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {chromedriver}: {err}"));
        wait_for_port(port).await;

        let profile = TempDir::new().unwrap();
        let mut caps = DesiredCapabilities::chrome();
        caps.set_binary(
            &std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned()),
        )
        .unwrap();
        for arg in [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
        ] {
            caps.add_arg(arg).unwrap();
        }
        caps.add_arg(&format!("--window-size={},{}", size.0, size.1))
            .unwrap();
        caps.add_arg(&format!("--user-data-dir={}", profile.path().display()))
            .unwrap();
        let driver = WebDriver::new(format!("http://127.0.0.1:{port}"), caps)
            .await
            .unwrap();
        driver
            .cdp()
            .send_raw(
                "Page.addScriptToEvaluateOnNewDocument",
                json!({ "source": ERROR_HOOK }),
            )
            .await
            .unwrap();
        Browser {
            driver,
            _chromedriver: child,
            profile,
        }
    }
}

pub struct Options {
    /// An agents file to load instead of the demo agent.
    pub agents_toml: Option<String>,
    /// Window width and height.
    pub size: (u32, u32),
    /// `--stream-idle-timeout`, when a test needs a short one.
    pub stream_idle_timeout_secs: Option<u64>,
    /// `--auth tokens` with these `TOKEN=USER` pairs; none: `--auth none`.
    pub tokens: Option<Vec<String>>,
    /// Cedar policies, written as `policies/main.cedar` and loaded with `--policies`.
    pub cedar: Option<String>,
    /// A notifications file, loaded with `--notifications` (`--public-url` the server's own,
    /// loopback allowed for push URLs).
    pub notifications: Option<String>,
}

impl Options {
    /// The defaults, with this agents file.
    pub fn with_agents(toml: impl Into<String>) -> Options {
        Options {
            agents_toml: Some(toml.into()),
            ..Options::default()
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            agents_toml: None,
            size: (1280, 900),
            stream_idle_timeout_secs: None,
            tokens: None,
            cedar: None,
            notifications: None,
        }
    }
}

impl App {
    pub async fn start(name: &str) -> App {
        App::start_with(name, Options::default()).await
    }

    pub async fn start_with(name: &str, options: Options) -> App {
        let guard = ONE_AT_A_TIME.lock().await;
        let dist = dist_dir();
        let data = TempDir::new().unwrap();
        let mut config = Config::new(data.path());
        config.ui_dir = Some(dist);
        if let Some(secs) = options.stream_idle_timeout_secs {
            config.stream_idle_timeout_secs = secs;
        }
        if let Some(tokens) = &options.tokens {
            config.auth = signoff_server::AuthMode::Tokens;
            config.tokens = tokens.clone();
        }
        if let Some(cedar) = &options.cedar {
            let dir = data.path().join("policies");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("main.cedar"), cedar).unwrap();
            config.policies_dir = Some(dir);
        }
        if let Some(toml) = &options.agents_toml {
            let path = data.path().join("agents.toml");
            std::fs::write(&path, toml).unwrap();
            config.agents_file = Some(path);
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        if let Some(toml) = &options.notifications {
            let path = data.path().join("notifications.toml");
            std::fs::write(&path, toml).unwrap();
            config.notifications = Some(path);
            config.public_url = Some(base.clone());
            config.push_allow = vec!["127.0.0.1/32".into()];
        }
        let (shutdown, server) = serve(listener, config.clone());

        let browser = Browser::start(options.size).await;
        let http = reqwest::Client::new();
        let app = App {
            driver: browser.driver.clone(),
            base,
            data,
            http,
            name: name.to_owned(),
            shutdown: Some(shutdown),
            server: Some(server),
            config,
            _browser: browser,
            _guard: guard,
        };
        app.wait_for_server().await;
        app
    }

    /// Stops the server gracefully (as SIGTERM does: open streams end, runners stop between
    /// steps) and waits until it has stopped.
    pub async fn stop_server(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(server) = self.server.take() {
            server.await.unwrap();
        }
    }

    /// Starts the server again on the same address and data directory (tasks left running
    /// resume), and waits until it answers.
    pub async fn start_server(&mut self) {
        let address = self.base.trim_start_matches("http://").to_owned();
        let listener = tokio::net::TcpListener::bind(address).await.unwrap();
        let (shutdown, server) = serve(listener, self.config.clone());
        self.shutdown = Some(shutdown);
        self.server = Some(server);
        self.wait_for_server().await;
    }

    async fn wait_for_server(&self) {
        let start = Instant::now();
        loop {
            if let Ok(response) = self.http.get(format!("{}/healthz", self.base)).send().await {
                if response.status().is_success() {
                    return;
                }
            }
            assert!(start.elapsed() < WAIT, "the server did not come up");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Loads `path` and waits for the app to render its sidebar.
    /// The port of this browser's own DevTools endpoint ([`Browser::devtools_port`]).
    pub fn devtools_port(&self) -> u16 {
        self._browser.devtools_port()
    }

    pub async fn open(&self, path: &str) {
        self.driver
            .goto(format!("{}{path}", self.base))
            .await
            .unwrap();
        self.wait_for("the app renders", "[data-testid=sidebar]")
            .await;
    }

    /// Opens the demo agent's new chat.
    pub async fn open_new_chat(&self) {
        self.open_new_chat_of("/agents/default/demo/chat").await;
    }

    /// Opens a new chat at `path` and waits until it can send.
    pub async fn open_new_chat_of(&self, path: &str) {
        self.open(path).await;
        self.wait_for("the agent list loads", "[data-testid=agent-item]")
            .await;
        self.wait_until("the composer is ready", || async {
            self.find("[data-testid=composer-input]")
                .await?
                .is_enabled()
                .await
        })
        .await;
    }

    pub async fn find(&self, css: &str) -> WebDriverResult<WebElement> {
        self.driver.find(By::Css(css)).await
    }

    pub async fn find_all(&self, css: &str) -> Vec<WebElement> {
        self.driver.find_all(By::Css(css)).await.unwrap_or_default()
    }

    pub async fn texts(&self, css: &str) -> Vec<String> {
        let mut out = Vec::new();
        for element in self.find_all(css).await {
            out.push(element.text().await.unwrap_or_default());
        }
        out
    }

    /// Polls `check` until it holds; on timeout saves a screenshot and fails naming `what`.
    pub async fn wait_until<F, Fut>(&self, what: &str, check: F)
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = WebDriverResult<bool>>,
    {
        let start = Instant::now();
        loop {
            if let Ok(true) = check().await {
                return;
            }
            if start.elapsed() > WAIT {
                self.shot(&format!("timeout-{}", what.replace(' ', "-")))
                    .await;
                let errors = self.errors().await;
                panic!(
                    "{}: timed out waiting until {what} (console errors: {errors:?})",
                    self.name
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until an element matches `css`.
    pub async fn wait_for(&self, what: &str, css: &str) -> WebElement {
        self.wait_until(what, || async { Ok(!self.find_all(css).await.is_empty()) })
            .await;
        self.find(css).await.unwrap()
    }

    /// Waits until the element matching `css` contains `text`.
    pub async fn wait_for_text(&self, css: &str, text: &str) {
        let what = format!("{css} shows {text:?}");
        self.wait_until(&what, || async {
            Ok(self
                .texts(css)
                .await
                .iter()
                .any(|shown| shown.contains(text)))
        })
        .await;
    }

    /// The text of the element matching `css` (fails when none does).
    pub async fn text(&self, css: &str) -> String {
        self.find(css).await.unwrap().text().await.unwrap()
    }

    /// Attribute `name` of the element matching `css`; empty when either is missing.
    pub async fn attribute(&self, css: &str, name: &str) -> String {
        match self.find(css).await {
            Ok(element) => element.attr(name).await.ok().flatten().unwrap_or_default(),
            Err(_) => String::new(),
        }
    }

    pub async fn status(&self) -> String {
        self.attribute("[data-testid=chat-status]", "data-status")
            .await
    }

    pub async fn wait_for_status(&self, status: &str) {
        let what = format!("the chat status is {status}");
        self.wait_until(&what, || async { Ok(self.status().await == status) })
            .await;
    }

    /// Runs the steps of `person`'s browser with the app's helpers until another is put back;
    /// returns the browser that ran them until now.
    pub fn switch(&mut self, person: &WebDriver) -> WebDriver {
        std::mem::replace(&mut self.driver, person.clone())
    }

    /// Types `text` into the composer and presses Enter.
    pub async fn send(&self, text: &str) {
        let input = self.find("[data-testid=composer-input]").await.unwrap();
        self.wait_until("the composer is enabled", || async {
            input.is_enabled().await
        })
        .await;
        input.send_keys(text).await.unwrap();
        input.send_keys(Key::Enter).await.unwrap();
    }

    /// Runs `script` before the page's own scripts on every page this tab loads from now on
    /// (stubs and taps a test installs).
    pub async fn before_each_page(&self, script: &str) {
        self.driver
            .cdp()
            .send_raw(
                "Page.addScriptToEvaluateOnNewDocument",
                json!({ "source": script }),
            )
            .await
            .unwrap();
    }

    pub async fn js(&self, script: &str) -> Value {
        self.driver
            .execute(script, Vec::new())
            .await
            .unwrap()
            .json()
            .clone()
    }

    /// Errors the page reported since it loaded.
    pub async fn errors(&self) -> Vec<String> {
        match self
            .driver
            .execute("return window.__errors || []", Vec::new())
            .await
        {
            Ok(answer) => serde_json::from_value(answer.json().clone()).unwrap_or_default(),
            Err(_) => Vec::new(),
        }
    }

    pub async fn assert_no_errors(&self) {
        let errors = self.errors().await;
        assert!(
            errors.is_empty(),
            "{}: the page reported errors: {errors:?}",
            self.name
        );
    }

    /// Saves a screenshot to tests/artifacts/<name>.png.
    pub async fn shot(&self, name: &str) {
        if let Ok(png) = self.driver.screenshot_as_png().await {
            let _ = std::fs::write(artifacts_dir().join(format!("{name}.png")), png);
        }
    }

    /// Runs axe-core (npm `axe-core`, installed by scripts/setup.sh into tools/web) over the page
    /// as it is now, for WCAG 2.x A and AA, and returns its serious and critical violations,
    /// each as "rule (impact): help — target: what failed".
    pub async fn axe_violations(&self) -> Vec<String> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tools/web/node_modules/axe-core/axe.min.js");
        let source = std::fs::read_to_string(&path).unwrap_or_else(|err| {
            panic!(
                "cannot read {}: {err} (scripts/setup.sh installs it)",
                path.display()
            )
        });
        self.driver.execute(&source, Vec::new()).await.unwrap();
        let found = self
            .driver
            .execute_async(AXE_RUN, Vec::new())
            .await
            .unwrap();
        serde_json::from_value(found.json().clone()).unwrap()
    }

    /// Light and dark screenshots of the page as it is now (`<name>-light`, `<name>-dark`).
    pub async fn shots(&self, name: &str) {
        self.color_scheme("light").await;
        self.shot(&format!("{name}-light")).await;
        self.color_scheme("dark").await;
        self.shot(&format!("{name}-dark")).await;
        self.color_scheme("light").await;
    }

    /// Approves every call of the first task of chat `session` (which `owner_token`'s holder
    /// owns) over REST as `approver_token`'s holder, as another person's client would; the
    /// answer's status.
    pub async fn approve_over_rest(
        &self,
        session: &str,
        owner_token: &str,
        approver_token: &str,
    ) -> reqwest::StatusCode {
        let chat: Value = self
            .http
            .get(format!("{}/api/sessions/{session}", self.base))
            .bearer_auth(owner_token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let task = chat["tasks"][0]["id"].as_str().unwrap().to_owned();
        self.http
            .post(format!("{}/api/approvals/{task}", self.base))
            .bearer_auth(approver_token)
            .json(&json!({"decision_type": "approve"}))
            .send()
            .await
            .unwrap()
            .status()
    }

    /// A phone's screen for the page: 390 by 844 CSS pixels, and touch, no mouse. Headless
    /// Chromium keeps its window at least 500 px wide, so the width is emulated (and checked).
    pub async fn phone(&self) {
        let cdp = self.driver.cdp();
        cdp.send_raw(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": true}),
        )
        .await
        .unwrap();
        cdp.send_raw(
            "Emulation.setTouchEmulationEnabled",
            json!({"enabled": true, "maxTouchPoints": 5}),
        )
        .await
        .unwrap();
        // A page already open takes the phone's viewport when it loads again.
        if self.js("return location.protocol").await.as_str() == Some("http:") {
            self.driver.refresh().await.unwrap();
            self.assert_phone_width().await;
        }
    }

    /// The page is laid out at a phone's width.
    pub async fn assert_phone_width(&self) {
        self.wait_until("the page is 390 px wide", || async {
            Ok(self.js("return window.innerWidth").await == 390)
        })
        .await;
    }

    /// Switches the emulated colour scheme (`light` or `dark`).
    pub async fn color_scheme(&self, scheme: &str) {
        self.driver
            .cdp()
            .send_raw(
                "Emulation.setEmulatedMedia",
                json!({ "features": [{ "name": "prefers-color-scheme", "value": scheme }] }),
            )
            .await
            .unwrap();
    }

    pub async fn current_path(&self) -> String {
        self.js("return window.location.pathname")
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// The session id in the address bar, once a chat has one.
    pub async fn session_id(&self) -> String {
        self.wait_until("the URL names the session", || async {
            Ok(self.current_path().await.split('/').count() == 6)
        })
        .await;
        self.current_path()
            .await
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_owned()
    }

    /// `GET {path}` on the server, as JSON.
    pub async fn get_json(&self, path: &str) -> Value {
        self.http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// `GET /api/sessions/{id}`: the stored tasks.
    pub async fn stored_tasks(&self, session: &str) -> Vec<Value> {
        let body = self.get_json(&format!("/api/sessions/{session}")).await;
        body["tasks"].as_array().cloned().unwrap_or_default()
    }

    pub fn sandbox(&self, file: &str) -> PathBuf {
        self.data.path().join("sandbox").join(file)
    }

    /// The text of `file` in the demo agent's sandbox; `None` when it does not exist.
    pub fn read_sandbox(&self, file: &str) -> Option<String> {
        std::fs::read_to_string(self.sandbox(file)).ok()
    }

    pub async fn finish(mut self) {
        self.assert_no_errors().await;
        let _ = self.driver.clone().quit().await;
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// Runs the server on `listener` until the returned sender fires (or is dropped).
fn serve(
    listener: tokio::net::TcpListener,
    config: Config,
) -> (oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let (shutdown, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        if let Err(err) = run(listener, config, async {
            let _ = stopped.await;
        })
        .await
        {
            panic!("the server failed: {err}");
        }
    });
    (shutdown, server)
}

/// Any card of a call that waits for a decision.
pub const PENDING_CARD: &str = "[data-testid=tool-card][data-status=pending]";

/// The card of the call to `tool`.
pub fn card(tool: &str) -> String {
    format!("[data-testid=tool-card][data-tool={tool}]")
}

/// The card of call `id` (call ids count over the conversation: call_1, call_2, …).
pub fn call_card(id: &str) -> String {
    format!("[data-testid=tool-card][data-call-id={id}]")
}

/// The status of the card `card_css` (`card` or `call_card`); empty while it is not shown.
pub async fn card_status(app: &App, card_css: &str) -> String {
    app.attribute(card_css, "data-status").await
}

/// Waits until the card `card_css` (`card` or `call_card`) shows `status`.
pub async fn wait_card(app: &App, card_css: &str, status: &str) {
    let what = format!("the card {card_css} is {status}");
    app.wait_until(&what, || async {
        Ok(card_status(app, card_css).await == status)
    })
    .await;
}

/// Opens the pending card's arguments editor (its only Edit) and types `args` over them.
pub async fn edit_args(app: &App, what: &str, args: &str) {
    click(app, "[data-testid=edit-button]").await;
    let editor = app.wait_for(what, "[data-testid=args-editor]").await;
    editor.clear().await.unwrap();
    editor.send_keys(args).await.unwrap();
}

/// Clicks `css` once it shows and is enabled.
pub async fn click(app: &App, css: &str) {
    let element = app.wait_for(&format!("{css} shows"), css).await;
    app.wait_until(&format!("{css} is enabled"), || async {
        element.is_enabled().await
    })
    .await;
    // To the middle of the view first, as a person scrolls to what they click: chromedriver
    // scrolls only until the element's edge shows, where the composer below the transcript
    // may still cover its middle.
    let _ = app
        .driver
        .execute(
            "arguments[0].scrollIntoView({block: 'center'})",
            vec![element.to_json().unwrap()],
        )
        .await;
    element.click().await.unwrap();
}

/// Rejects the pending call to `tool` with `reason`, as a person does: the card's Reject, the
/// reason typed in the box that opens, then its confirm button.
pub async fn reject_with_reason(app: &App, tool: &str, reason: &str) {
    click(app, &format!("{} [data-testid=reject-button]", card(tool))).await;
    let text = app
        .wait_for("the reason box opens", "[data-testid=reject-reason]")
        .await;
    text.send_keys(reason).await.unwrap();
    click(app, &format!("{} [data-testid=reject-confirm]", card(tool))).await;
}
