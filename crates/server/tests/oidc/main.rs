//! `--auth oidc` against a real OpenID provider: npm's oidc-provider (certified), started on
//! loopback by each test (`provider.mjs`, installed by `install.sh`), with its own login form.
//! People sign in through that form (driven here over HTTP with a cookie jar, as a browser
//! would), programs present the provider's JWTs, and every hostile case is refused with nothing
//! run. On both backends (`SIGNOFF_TEST_BACKEND=postgres`); run by name, after `install.sh`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code, unused_imports)]
#[path = "../support/mod.rs"]
mod support;

use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

use support::*;

mod email;
mod identity;

/// The provider, running.
struct Provider {
    issuer: String,
    port: u16,
    bases: Vec<String>,
    keys: tempfile::TempDir,
    /// How many times its keys (JWKS) were fetched, across restarts.
    jwks_fetches: Arc<AtomicUsize>,
    child: tokio::process::Child,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Provider {
    /// Starts the provider for Signoff servers at `bases`, with `env` (its TTLs) set.
    async fn start(bases: &[String], env: &[(&str, &str)]) -> Provider {
        let keys = tempfile::tempdir().unwrap();
        let port = free_port();
        let jwks_fetches = Arc::new(AtomicUsize::new(0));
        let child = Self::spawn(port, bases, keys.path(), env, jwks_fetches.clone()).await;
        Provider {
            issuer: format!("http://127.0.0.1:{port}"),
            port,
            bases: bases.to_vec(),
            keys,
            jwks_fetches,
            child,
        }
    }

    /// Stops the provider and starts it again on the same port and keys, with `env`.
    async fn restart(&mut self, env: &[(&str, &str)]) {
        self.child.kill().await.unwrap();
        let fetches = self.jwks_fetches.clone();
        self.child = Self::spawn(self.port, &self.bases, self.keys.path(), env, fetches).await;
    }

    fn jwks_fetches(&self) -> usize {
        self.jwks_fetches.load(Ordering::SeqCst)
    }

    async fn spawn(
        port: u16,
        bases: &[String],
        keys: &Path,
        env: &[(&str, &str)],
        jwks_fetches: Arc<AtomicUsize>,
    ) -> tokio::process::Child {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oidc");
        assert!(
            dir.join("node_modules/oidc-provider").is_dir(),
            "the test provider is not installed: run crates/server/tests/oidc/install.sh"
        );
        let list = |suffix: &str| {
            bases
                .iter()
                .map(|base| format!("{base}{suffix}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        let mut child = tokio::process::Command::new("node")
            .arg(dir.join("provider.mjs"))
            .current_dir(&dir)
            .env("PORT", port.to_string())
            .env("REDIRECT_URIS", list("/auth/callback"))
            .env("POST_LOGOUT_URIS", list("/auth/signed-out"))
            .env("KEY_DIR", keys)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs the test provider");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        within("the provider to listen", async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if line.contains("listening") {
                    return;
                }
            }
            panic!("the provider ended before it listened");
        })
        .await;
        // Read the rest of what it prints (or its next line would end it: EPIPE), counting the
        // fetches of its keys.
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                if line == "jwks" {
                    jwks_fetches.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        child
    }

    fn pem(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.keys.path().join(name)).unwrap()
    }

    /// A JWT for a program, from the provider's token endpoint (client credentials).
    async fn program_token(&self) -> String {
        let response = reqwest::Client::new()
            .post(format!("{}/token", self.issuer))
            .basic_auth("ci-job", Some("ci-secret"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body("grant_type=client_credentials&scope=api")
            .send()
            .await
            .unwrap();
        let body: Value = response.json().await.unwrap();
        body["access_token"]
            .as_str()
            .expect("an access token")
            .to_owned()
    }
}

fn configure(config: &mut signoff_server::Config, issuer: &str, base: &str) {
    config.auth = signoff_server::AuthMode::Oidc;
    config.oidc_issuer = Some(issuer.to_owned());
    config.oidc_client_id = Some("signoff".into());
    config.oidc_client_secret = Some("signoff-secret".into());
    config.oidc_scopes = vec![
        "openid".into(),
        "profile".into(),
        "email".into(),
        "groups".into(),
        "offline_access".into(),
    ];
    config.oidc_audience = Some("signoff-api".into());
    config.public_url = Some(base.to_owned());
}

/// `count` Signoff servers on one store (replicas on PostgreSQL) and the provider they use.
async fn start(count: usize) -> (Provider, Vec<TestApp>) {
    start_with(count, &[], |_| {}).await
}

/// [`start`], with `env` for the provider (its token lifetimes) and `tweak` for each server.
async fn start_with(
    count: usize,
    env: &[(&str, &str)],
    tweak: impl Fn(&mut signoff_server::Config),
) -> (Provider, Vec<TestApp>) {
    let mut listeners = Vec::new();
    for _ in 0..count {
        listeners.push(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap());
    }
    let bases: Vec<String> = listeners
        .iter()
        .map(|listener| format!("http://{}", listener.local_addr().unwrap()))
        .collect();
    let provider = Provider::start(&bases, env).await;
    // One store: the first server's (on SQLite there is one server; replicas need PostgreSQL).
    let first_dir = tempfile::tempdir().unwrap();
    let database = database_url(first_dir.path()).await;
    let mut dirs = vec![first_dir];
    dirs.extend((1..count).map(|_| tempfile::tempdir().unwrap()));
    let mut apps = Vec::new();
    for ((listener, base), dir) in listeners.into_iter().zip(&bases).zip(dirs) {
        let issuer = provider.issuer.clone();
        let (database, tweak) = (database.clone(), &tweak);
        let app = spawn_on(listener, dir, |config| {
            configure(config, &issuer, base);
            tweak(config);
            if database.is_some() {
                config.database_url = database;
            }
        })
        .await;
        apps.push(app);
    }
    (provider, apps)
}

/// A browser: a cookie jar shared across the provider and the servers, following redirects.
fn browser() -> (reqwest::Client, Arc<reqwest::cookie::Jar>) {
    let jar = Arc::new(reqwest::cookie::Jar::default());
    let client = reqwest::Client::builder()
        .cookie_provider(jar.clone())
        .build()
        .unwrap();
    (client, jar)
}

/// The hidden inputs of the form in a page, as a form body (`prompt=login`), then `extra`.
fn form_body(page: &str, extra: &str) -> String {
    let mut fields = Vec::new();
    for input in page.split("<input").skip(1) {
        let input = input.split('>').next().unwrap_or("");
        let attribute = |name: &str| {
            let at = input.find(&format!("{name}=\""))? + name.len() + 2;
            input[at..].split('"').next().map(str::to_owned)
        };
        if attribute("type").as_deref() == Some("hidden") {
            if let (Some(name), Some(value)) = (attribute("name"), attribute("value")) {
                fields.push(format!("{name}={value}"));
            }
        }
    }
    if !extra.is_empty() {
        fields.push(extra.to_owned());
    }
    fields.join("&")
}

/// The `action` of the form in a page.
fn form_action(page: &str) -> String {
    let at = page
        .find("action=\"")
        .unwrap_or_else(|| panic!("a form in {page}"))
        + "action=\"".len();
    page[at..].split('"').next().unwrap().replace("&amp;", "&")
}

/// Opens `path` on `base` as a browser opening a page: signed out, it goes to the provider's
/// login form; signs in there as `who` and consents; the final URL the browser lands on.
async fn sign_in(browser: &reqwest::Client, base: &str, path: &str, who: &str) -> String {
    let page = browser
        .get(format!("{base}{path}"))
        .header("accept", "text/html")
        .header("sec-fetch-dest", "document")
        .send()
        .await
        .unwrap();
    let at = page.url().clone();
    let login_form = page.text().await.unwrap();
    assert!(login_form.contains("name=\"login\""), "{login_form}");
    let consent = browser
        .post(at.join(&form_action(&login_form)).unwrap())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_body(&login_form, &format!("login={who}&password=any")))
        .send()
        .await
        .unwrap();
    let at = consent.url().clone();
    let consent_form = consent.text().await.unwrap();
    let landed = browser
        .post(at.join(&form_action(&consent_form)).unwrap())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_body(&consent_form, ""))
        .send()
        .await
        .unwrap();
    landed.url().to_string()
}

/// The session cookie the jar holds for `base`.
fn session_cookie(jar: &reqwest::cookie::Jar, base: &str) -> String {
    use reqwest::cookie::CookieStore;
    let cookies = jar.cookies(&base.parse().unwrap()).expect("cookies");
    cookies
        .to_str()
        .unwrap()
        .split("; ")
        .find(|pair| pair.starts_with("signoff_session="))
        .expect("a session cookie")
        .to_owned()
}

/// `GET /api/me` with only this `Cookie` header.
async fn me_with_cookie(base: &str, cookie: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .get(format!("{base}/api/me"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test]
async fn a_program_acts_as_its_jwt_subject_with_its_groups() {
    let (provider, apps) = start(1).await;
    let app = &apps[0];
    let token = provider.program_token().await;
    let (status, me) = app.get_as("/api/me", Some(&token)).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(
        me,
        json!({"user": "ci-job", "groups": ["ci"], "auth": "oidc"})
    );
    let message = a2a::message_request("message/send", a2a::message_v03("hello", None, None));
    let (status, answer) = app.post_json_as(DEMO, Some(&token), &message).await;
    assert_eq!(status, 200, "{answer}");
    let (_, sessions) = app.get_as("/api/sessions", Some(&token)).await;
    assert_eq!(sessions["sessions"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn an_mcp_endpoint_names_the_provider_and_takes_its_programs_jwts() {
    let agents_dir = tempfile::tempdir().unwrap();
    let agents = write_agents(
        agents_dir.path(),
        "[[agents]]\nname = \"gate\"\nserve_mcp = true\n\n[[agents.tools]]\nkind = \"permission_prompts\"\n",
    );
    let (provider, apps) = start_with(1, &[], |config| {
        config.agents_file = Some(agents.clone());
    })
    .await;
    let app = &apps[0];
    let (status, metadata) = app
        .get("/.well-known/oauth-protected-resource/api/mcp/default/gate")
        .await;
    assert_eq!(status, 200, "{metadata}");
    assert_eq!(
        metadata["authorization_servers"],
        json!([provider.issuer]),
        "{metadata}"
    );
    assert_eq!(metadata["resource"], app.url("/api/mcp/default/gate"));
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let (status, _) = app.post_json_as("/api/mcp/default/gate", None, &ping).await;
    assert_eq!(status, 401);
    let token = provider.program_token().await;
    let (status, answer) = app
        .post_json_as("/api/mcp/default/gate", Some(&token), &ping)
        .await;
    assert_eq!((status, &answer["result"]), (200, &json!({})), "{answer}");
}

#[tokio::test]
async fn hostile_jwts_are_refused_with_401_and_nothing_runs() {
    let (provider, apps) = start(1).await;
    let app = &apps[0];
    let key = EncodingKey::from_rsa_pem(&provider.pem("provider.pem")).unwrap();
    let rogue = EncodingKey::from_rsa_pem(&provider.pem("rogue.pem")).unwrap();
    let public_pem = provider.pem("provider.pub.pem");
    let signed = |header: Header, claims: &Value, key: &EncodingKey| {
        jsonwebtoken::encode(&header, claims, key).unwrap()
    };
    let rs256 = |kid: &str| {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(kid.to_owned());
        header
    };
    let claims = |changes: Value| {
        let mut claims = json!({"iss": provider.issuer, "aud": "signoff-api", "sub": "mallory",
                                "iat": now(), "exp": now() + 600});
        for (name, value) in changes.as_object().unwrap() {
            claims[name] = value.clone();
        }
        claims
    };
    let b64 = |value: &Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string().as_bytes())
    };
    let mut hs256 = Header::new(Algorithm::HS256);
    hs256.kid = Some("provider-key-1".into());
    let hostile = [
        (
            "expired",
            signed(
                rs256("provider-key-1"),
                &claims(json!({"exp": now() - 3600})),
                &key,
            ),
        ),
        (
            "not yet valid",
            signed(
                rs256("provider-key-1"),
                &claims(json!({"nbf": now() + 3600})),
                &key,
            ),
        ),
        (
            "wrong issuer",
            signed(
                rs256("provider-key-1"),
                &claims(json!({"iss": "http://127.0.0.1:1"})),
                &key,
            ),
        ),
        (
            "wrong audience",
            signed(
                rs256("provider-key-1"),
                &claims(json!({"aud": "another-api"})),
                &key,
            ),
        ),
        (
            "alg none",
            format!(
                "{}.{}.",
                b64(&json!({"alg": "none", "kid": "provider-key-1"})),
                b64(&claims(json!({})))
            ),
        ),
        (
            "HS256 signed with the public key",
            signed(
                hs256,
                &claims(json!({})),
                &EncodingKey::from_secret(&public_pem),
            ),
        ),
        (
            "unknown kid",
            signed(rs256("rogue-key"), &claims(json!({})), &rogue),
        ),
        (
            "another key under the provider's kid",
            signed(rs256("provider-key-1"), &claims(json!({})), &rogue),
        ),
    ];
    let message = a2a::message_request("message/send", a2a::message_v03("rm -rf", None, None));
    for (case, token) in &hostile {
        let (status, body) = app.post_json_as(DEMO, Some(token), &message).await;
        assert_eq!(status, 401, "{case}: {body}");
        let (status, _) = app.get_as("/api/sessions", Some(token)).await;
        assert_eq!(status, 401, "{case}");
    }
    // The same claims, rightly signed, are taken: mallory exists and nothing of hers ran.
    let good = signed(rs256("provider-key-1"), &claims(json!({})), &key);
    let (status, sessions) = app.get_as("/api/sessions", Some(&good)).await;
    assert_eq!(status, 200, "{sessions}");
    assert_eq!(sessions["sessions"], json!([]));
    let text = app.client.get(app.url("/metrics")).send().await.unwrap();
    let text = text.text().await.unwrap();
    assert!(
        text.contains("signoff_auth_events_total{mode=\"oidc\",event=\"refused\"} 16"),
        "{text}"
    );
}

#[tokio::test]
async fn a_page_opened_signed_out_signs_in_at_the_provider_and_comes_back() {
    let (_provider, apps) = start(1).await;
    let app = &apps[0];
    let (browser, jar) = browser();
    let landed = sign_in(&browser, &app.base, "/approvals?from=test", "alice").await;
    assert_eq!(landed, app.url("/approvals?from=test"));
    let (status, me) = browser
        .get(app.url("/api/me"))
        .send()
        .await
        .map(|r| (r.status().as_u16(), r))
        .unwrap();
    let me: Value = me.json().await.unwrap();
    assert_eq!(status, 200, "{me}");
    assert_eq!(
        me,
        json!({"user": "alice", "name": "Alice Example", "email": "alice@example.com",
               "groups": ["oncall", "sre"], "auth": "oidc"})
    );
    // The cookie is opaque: no name, no token in it.
    let cookie = session_cookie(&jar, &app.base);
    assert!(!cookie.contains("alice"), "{cookie}");
}

#[tokio::test]
async fn tampered_and_logged_out_cookies_are_refused() {
    let (provider, apps) = start(1).await;
    let app = &apps[0];
    let (browser, jar) = browser();
    sign_in(&browser, &app.base, "/", "bob").await;
    let cookie = session_cookie(&jar, &app.base);
    assert_eq!(me_with_cookie(&app.base, &cookie).await.0, 200);
    let mut tampered = cookie.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    assert_eq!(me_with_cookie(&app.base, &tampered).await.0, 401);

    let logout = reqwest::Client::new()
        .post(app.url("/auth/logout"))
        .header("cookie", &cookie)
        .header("origin", &app.base)
        .send()
        .await
        .unwrap();
    assert_eq!(logout.status(), 200);
    let cleared = logout.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(cleared.starts_with("signoff_session=;"), "{cleared}");
    assert!(cleared.contains("Max-Age=0"), "{cleared}");
    let next: Value = logout.json().await.unwrap();
    let next = next["next"].as_str().unwrap();
    // RP-initiated logout at the provider, which comes back to the signed-out page.
    assert!(
        next.starts_with(&format!("{}/session/end?", provider.issuer)),
        "{next}"
    );
    assert!(next.contains("id_token_hint="), "{next}");
    assert_eq!(me_with_cookie(&app.base, &cookie).await.0, 401);
    // Counted, by mode and event.
    let text = app.client.get(app.url("/metrics")).send().await.unwrap();
    let text = text.text().await.unwrap();
    for line in [
        "signoff_auth_events_total{mode=\"oidc\",event=\"sign_in\"} 1",
        "signoff_auth_events_total{mode=\"oidc\",event=\"sign_out\"} 1",
        "signoff_auth_events_total{mode=\"oidc\",event=\"refused\"} 2",
    ] {
        assert!(text.contains(line), "{line} in {text}");
    }
}

#[tokio::test]
async fn a_cross_site_post_with_the_cookie_is_refused() {
    let (_provider, apps) = start(1).await;
    let app = &apps[0];
    let (browser, jar) = browser();
    sign_in(&browser, &app.base, "/", "alice").await;
    let cookie = session_cookie(&jar, &app.base);
    let message = a2a::message_request("message/send", a2a::message_v03("hello", None, None));
    let post = |headers: &'static [(&'static str, &'static str)]| {
        let mut request = reqwest::Client::new()
            .post(app.url(DEMO))
            .header("cookie", &cookie)
            .json(&message);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send()
    };
    for headers in [
        &[("sec-fetch-site", "cross-site")][..],
        &[("sec-fetch-site", "same-site")][..],
        &[("origin", "http://evil.example")][..],
        &[][..],
    ] {
        let response = post(headers).await.unwrap();
        assert_eq!(response.status(), 403, "{headers:?}");
    }
    let (_, sessions) = me_sessions(&app.base, &cookie).await;
    assert_eq!(sessions["sessions"], json!([]), "nothing ran");
    let response = post(&[("sec-fetch-site", "same-origin")]).await.unwrap();
    assert_eq!(response.status(), 200);
    let (_, sessions) = me_sessions(&app.base, &cookie).await;
    assert_eq!(sessions["sessions"].as_array().unwrap().len(), 1);
}

async fn me_sessions(base: &str, cookie: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .get(format!("{base}/api/sessions"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test]
async fn an_open_redirect_through_the_return_path_is_refused() {
    let (_provider, apps) = start(1).await;
    let app = &apps[0];
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for target in [
        "//evil.example/",
        "https://evil.example/",
        "/\\evil.example",
        "%2F%2Fevil.example",
    ] {
        let response = client
            .get(app.url(&format!("/auth/login?return_to={target}")))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{target}");
    }
    let response = client
        .get(app.url("/auth/login?return_to=%2Fapprovals"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
}

#[tokio::test]
async fn a_sign_in_holds_on_every_replica_and_across_a_restart() {
    let count = if on_postgres() { 2 } else { 1 };
    let (provider, mut apps) = start(count).await;
    let (browser, jar) = browser();
    sign_in(&browser, &apps[0].base, "/", "alice").await;
    let cookie = session_cookie(&jar, &apps[0].base);
    for app in &apps {
        let (status, me) = me_with_cookie(&app.base, &cookie).await;
        assert_eq!(
            (status, me["user"].clone()),
            (200, json!("alice")),
            "{}",
            app.base
        );
    }
    // A restart keeps the session: it is in the store.
    let first = apps.remove(0);
    let base = first.base.clone();
    let data_dir = first.stop().await;
    let listener = tokio::net::TcpListener::bind(base.trim_start_matches("http://"))
        .await
        .unwrap();
    let issuer = provider.issuer.clone();
    let again = spawn_on(listener, data_dir, |config| {
        configure(config, &issuer, &base)
    })
    .await;
    let (status, me) = me_with_cookie(&again.base, &cookie).await;
    assert_eq!((status, me["user"].clone()), (200, json!("alice")));
}

/// The number of stored sessions of `subject` (`with_refresh`: only those holding a refresh
/// token).
async fn sessions_of(app: &TestApp, subject: &str, with_refresh: bool) -> i64 {
    let sql = if with_refresh {
        "SELECT COUNT(*) FROM logins WHERE subject = ?1 AND refresh_token IS NOT NULL"
    } else {
        "SELECT COUNT(*) FROM logins WHERE subject = ?1"
    };
    sql_count(app.data_dir.path(), sql, subject).await
}

#[tokio::test]
async fn a_session_is_renewed_with_its_refresh_token_and_ends_when_that_fails() {
    // ID tokens live 5 s, refresh tokens 20 s (not rotated before 70% of their life).
    let (_provider, apps) = start_with(
        1,
        &[("ID_TOKEN_TTL", "5"), ("REFRESH_TOKEN_TTL", "20")],
        |_| {},
    )
    .await;
    let app = &apps[0];
    let (browser, jar) = browser();
    sign_in(&browser, &app.base, "/", "alice").await;
    let signed_in = Instant::now();
    let cookie = session_cookie(&jar, &app.base);
    assert_eq!(sessions_of(app, "alice", true).await, 1, "a refresh token");
    assert_eq!(me_with_cookie(&app.base, &cookie).await.0, 200);
    // Past the ID token's expiry: the session is renewed with the refresh token.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let (status, me) = me_with_cookie(&app.base, &cookie).await;
    assert_eq!((status, me["user"].clone()), (200, json!("alice")));
    let text = app.client.get(app.url("/metrics")).send().await.unwrap();
    let text = text.text().await.unwrap();
    let renewed = "signoff_auth_events_total{mode=\"oidc\",event=\"refreshed\"} 1";
    assert!(text.contains(renewed), "{text}");
    // Past the refresh token's life too: the provider refuses to renew, the session ends and
    // its row is gone.
    tokio::time::sleep(
        (signed_in + Duration::from_secs(22)).saturating_duration_since(Instant::now()),
    )
    .await;
    assert_eq!(me_with_cookie(&app.base, &cookie).await.0, 401);
    assert_eq!(sessions_of(app, "alice", false).await, 0);
    assert_eq!(me_with_cookie(&app.base, &cookie).await.0, 401);
}

#[tokio::test]
async fn a_rotated_key_is_fetched_again_for_sign_ins_and_programs_at_most_once_a_minute() {
    let (mut provider, apps) = start(1).await;
    let app = &apps[0];
    let kid = |token: &str| jsonwebtoken::decode_header(token).unwrap().kid.unwrap();
    let old_key = provider.program_token().await;
    assert_eq!(kid(&old_key), "provider-key-1");
    assert_eq!(app.get_as("/api/me", Some(&old_key)).await.0, 200);
    // The server fetched the keys before it answered.
    let fetched_at = Instant::now();
    provider.restart(&[("ROTATED", "1")]).await;
    let new_key = provider.program_token().await;
    assert_eq!(kid(&new_key), "provider-key-2");
    // Within a minute of the last fetch an unknown kid is refused without asking the provider.
    let fetches = provider.jwks_fetches();
    assert_eq!(app.get_as("/api/me", Some(&new_key)).await.0, 401);
    assert_eq!(provider.jwks_fetches(), fetches);
    // A minute on, a sign-in whose ID token the new key signed fetches the keys once.
    let minute_on = fetched_at + jwt_refetch() + Duration::from_secs(1);
    tokio::time::sleep(minute_on.saturating_duration_since(Instant::now())).await;
    let (browser, jar) = browser();
    let landed = sign_in(&browser, &app.base, "/approvals", "alice").await;
    assert_eq!(landed, app.url("/approvals"));
    let cookie = session_cookie(&jar, &app.base);
    assert_eq!(me_with_cookie(&app.base, &cookie).await.0, 200);
    assert_eq!(provider.jwks_fetches(), fetches + 1);
    // Both keys are taken now; a kid the provider never published is still refused, and does
    // not make the server ask again.
    assert_eq!(app.get_as("/api/me", Some(&new_key)).await.0, 200);
    assert_eq!(app.get_as("/api/me", Some(&old_key)).await.0, 200);
    let rogue = EncodingKey::from_rsa_pem(&provider.pem("rogue.pem")).unwrap();
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("rogue-key".into());
    let claims = json!({"iss": provider.issuer, "aud": "signoff-api", "sub": "mallory",
                        "iat": now(), "exp": now() + 600});
    let forged = jsonwebtoken::encode(&header, &claims, &rogue).unwrap();
    let message = a2a::message_request("message/send", a2a::message_v03("rm -rf", None, None));
    let (status, body) = app.post_json_as(DEMO, Some(&forged), &message).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(provider.jwks_fetches(), fetches + 1);
}

/// How long the server waits between two fetches of the provider's keys.
fn jwt_refetch() -> Duration {
    signoff_server::http::auth::jwt::REFETCH_EVERY
}

#[tokio::test]
async fn expired_sessions_and_abandoned_sign_ins_are_swept_by_every_replica() {
    // Two replicas on PostgreSQL sweep the same rows at once; one server on SQLite.
    let count = if on_postgres() { 2 } else { 1 };
    let (_provider, apps) = start_with(count, &[], |config| {
        config.login_sweep_every = Duration::from_millis(200);
    })
    .await;
    let app = &apps[0];
    // A live sign-in, made the usual way, stays.
    let (browser, jar) = browser();
    sign_in(&browser, &app.base, "/", "alice").await;
    let cookie = session_cookie(&jar, &app.base);
    let at = |delta: chrono::TimeDelta| {
        (chrono::Utc::now() + delta).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    };
    let hour = chrono::TimeDelta::hours(1);
    let session = |id: &str, refresh: &str, expires: &str| {
        format!(
            "INSERT INTO logins (id_sha256, subject, name, email, groups_json, refresh_token,
                                 id_token, expires_at, created_at)
             VALUES ('{id}', 'swept', NULL, NULL, '[]', {refresh}, NULL, '{expires}', '{now}')",
            now = at(chrono::TimeDelta::zero())
        )
    };
    let attempt = |state: &str, created: &str| {
        format!(
            "INSERT INTO login_attempts (state_sha256, pkce_verifier, nonce, return_to, created_at)
             VALUES ('{state}', 'v', 'n', '/', '{created}')"
        )
    };
    sql_execute(
        app.data_dir.path(),
        &[
            // Gone: expired without a refresh token; unused for over a week with one; a
            // sign-in started an hour ago.
            &session("expired", "NULL", &at(-hour)),
            &session("idle", "'r'", &at(-chrono::TimeDelta::days(8))),
            &attempt("abandoned", &at(-hour)),
            // Kept: expired an hour ago but renewable; not expired; a sign-in on its way.
            &session("renewable", "'r'", &at(-hour)),
            &session("live", "NULL", &at(hour)),
            &attempt("on-its-way", &at(chrono::TimeDelta::zero())),
        ],
    )
    .await;
    let count_of = |table: &'static str, key: &'static str, id: &'static str| {
        let dir = app.data_dir.path().to_owned();
        async move {
            let sql = format!("SELECT COUNT(*) FROM {table} WHERE {key} = ?1");
            sql_count(&dir, &sql, id).await
        }
    };
    eventually("the expired rows to be swept", || async {
        let left = count_of("logins", "id_sha256", "expired").await
            + count_of("logins", "id_sha256", "idle").await
            + count_of("login_attempts", "state_sha256", "abandoned").await;
        (left == 0).then_some(())
    })
    .await;
    // A few more sweeps (of every replica) later, the rest is still there.
    tokio::time::sleep(Duration::from_secs(1)).await;
    for id in ["renewable", "live"] {
        assert_eq!(count_of("logins", "id_sha256", id).await, 1, "{id}");
    }
    assert_eq!(
        count_of("login_attempts", "state_sha256", "on-its-way").await,
        1
    );
    assert_eq!(sessions_of(app, "alice", false).await, 1);
    assert_eq!(me_with_cookie(&app.base, &cookie).await.0, 200);
}

#[tokio::test]
async fn decisions_record_whether_a_session_or_a_jwt_authenticated_the_decider() {
    let (provider, apps) = start(1).await;
    let app = &apps[0];
    let prompt = "write notes.txt: hi and delete old.txt and read readme.txt";
    let pause = |cookie: Option<String>, token: Option<String>| {
        let message = a2a::message_request("message/send", a2a::message_v03(prompt, None, None));
        let mut request = reqwest::Client::new().post(app.url(DEMO)).json(&message);
        if let Some(cookie) = cookie {
            request = request
                .header("cookie", cookie)
                .header("sec-fetch-site", "same-origin");
        }
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        async move {
            let answer: Value = request.send().await.unwrap().json().await.unwrap();
            answer["result"]["id"].as_str().expect("a task").to_owned()
        }
    };
    let decide = |task: String, cookie: Option<String>, token: Option<String>| {
        let mut request = reqwest::Client::new()
            .post(app.url(&format!("/api/approvals/{task}")))
            .json(&json!({"decision_type": "approve"}));
        if let Some(cookie) = cookie {
            request = request
                .header("cookie", cookie)
                .header("sec-fetch-site", "same-origin");
        }
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.unwrap())
        }
    };
    let (browser, jar) = browser();
    sign_in(&browser, &app.base, "/", "alice").await;
    let cookie = session_cookie(&jar, &app.base);
    let task = pause(Some(cookie.clone()), None).await;
    let (status, body) = eventually("alice's batch to wait", || {
        let decided = decide(task.clone(), Some(cookie.clone()), None);
        async move {
            let (status, body) = decided.await;
            (status != 409).then_some((status, body))
        }
    })
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["decision"]["deciderAuth"], "oidc_session");
    let token = provider.program_token().await;
    let task = pause(None, Some(token.clone())).await;
    let (status, body) = eventually("the program's batch to wait", || {
        let decided = decide(task.clone(), None, Some(token.clone()));
        async move {
            let (status, body) = decided.await;
            (status != 409).then_some((status, body))
        }
    })
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["decision"]["deciderAuth"], "oidc_jwt");
}
