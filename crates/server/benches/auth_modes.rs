//! Bench: what each `--auth` mode costs a request. The same cheap route (`GET /api/me`) many
//! times in a row on one keep-alive connection, against a server in each mode: a static token
//! (`tokens`, the baseline), an authenticating proxy's headers (`proxy`), a bearer JWT checked
//! with the provider's cached key (`oidc`, no store read) and a session cookie (`oidc`, one store
//! read). Prints each median and its difference from `tokens`. The provider is the tests' real
//! one (npm's oidc-provider: run crates/server/tests/oidc/install.sh first). Run with
//! `cargo bench -p signoff-server --bench auth_modes`.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use signoff_server::store::{Database, LoginRow, Store};
use signoff_server::{AuthMode, Config};
use tokio::io::{AsyncBufReadExt, BufReader};

const REQUESTS: usize = 3000;
const WARM_UP: usize = 300;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(bench());
}

/// A server in-process on port 0; its base URL.
async fn serve(data: &Path, configure: impl FnOnce(&mut Config)) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut config = Config::new(data);
    config.public_url = Some(base.clone());
    configure(&mut config);
    tokio::spawn(signoff_server::run(
        listener,
        config,
        std::future::pending(),
    ));
    for _ in 0..100 {
        if reqwest::get(format!("{base}/healthz")).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    base
}

/// Starts the tests' provider; its issuer and process.
async fn provider(keys: &Path) -> (String, tokio::process::Child) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oidc");
    assert!(
        dir.join("node_modules/oidc-provider").is_dir(),
        "run crates/server/tests/oidc/install.sh first"
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
        .env("KEY_DIR", keys)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while let Some(line) = lines.next_line().await.unwrap() {
        if line.contains("listening") {
            break;
        }
    }
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (format!("http://127.0.0.1:{port}"), child)
}

/// The median time of `GET {base}/api/me` with `headers`, one request after another.
async fn median(base: &str, headers: &[(&str, String)]) -> Duration {
    let client = reqwest::Client::new();
    let url = format!("{base}/api/me");
    let mut times = Vec::with_capacity(REQUESTS);
    for round in 0..WARM_UP + REQUESTS {
        let mut request = client.get(&url);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let started = Instant::now();
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200, "{headers:?}");
        response.bytes().await.unwrap();
        if round >= WARM_UP {
            times.push(started.elapsed());
        }
    }
    times.sort();
    times[times.len() / 2]
}

async fn bench() {
    let work = tempfile::tempdir().unwrap();
    let dir = |name: &str| {
        let path = work.path().join(name);
        std::fs::create_dir_all(&path).unwrap();
        path
    };
    let (issuer, _provider) = provider(&dir("keys")).await;
    let tokens = serve(&dir("tokens"), |config| {
        config.auth = AuthMode::Tokens;
        config.tokens = vec!["bench-token=alice:sre+oncall".into()];
    })
    .await;
    let proxy = serve(&dir("proxy"), |config| {
        config.auth = AuthMode::Proxy;
        config.trusted_proxies = vec!["127.0.0.1".into()];
    })
    .await;
    let oidc_dir = dir("oidc");
    let oidc = serve(&oidc_dir, |config| {
        config.auth = AuthMode::Oidc;
        config.oidc_issuer = Some(issuer.clone());
        config.oidc_client_id = Some("signoff".into());
        config.oidc_client_secret = Some("signoff-secret".into());
        config.oidc_audience = Some("signoff-api".into());
    })
    .await;
    let jwt: serde_json::Value = reqwest::Client::new()
        .post(format!("{issuer}/token"))
        .basic_auth("ci-job", Some("ci-secret"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("grant_type=client_credentials&scope=api")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let jwt = jwt["access_token"].as_str().unwrap().to_owned();
    // A signed-in session, put in the server's store as a sign-in would.
    let store = Store::open(&Database::Sqlite(oidc_dir)).await.unwrap();
    store
        .put_login(LoginRow {
            id_sha256: signoff_server::http::auth::oidc::sha256_hex("bench-cookie"),
            subject: "alice".into(),
            name: Some("Alice".into()),
            email: None,
            groups: vec!["oncall".into(), "sre".into()],
            refresh_token: None,
            id_token: None,
            expires_at: "9999-12-31T00:00:00.000Z".into(),
            created_at: signoff_server::store::now(),
        })
        .await
        .unwrap();

    let baseline = median(&tokens, &[("authorization", "Bearer bench-token".into())]).await;
    let rows = [
        ("tokens (static bearer token)", baseline),
        (
            "proxy (trusted proxy headers)",
            median(
                &proxy,
                &[
                    ("x-auth-request-user", "alice".into()),
                    ("x-auth-request-groups", "sre,oncall".into()),
                ],
            )
            .await,
        ),
        (
            "oidc (bearer JWT, cached key)",
            median(&oidc, &[("authorization", format!("Bearer {jwt}"))]).await,
        ),
        (
            "oidc (session cookie, store read)",
            median(&oidc, &[("cookie", "signoff_session=bench-cookie".into())]).await,
        ),
    ];
    println!("GET /api/me, median of {REQUESTS} requests one after another:");
    for (mode, took) in rows {
        let above = took.as_secs_f64() - baseline.as_secs_f64();
        println!(
            "  {mode:<36} {:>8.1} µs   {:>+8.1} µs vs tokens",
            took.as_secs_f64() * 1e6,
            above * 1e6
        );
    }
}
