//! The built UI (trunk's `dist/`): files with their precompressed brotli and gzip twins
//! (`scripts/build-ui.sh` writes them; `Content-Encoding` follows the request's
//! `Accept-Encoding`), the SPA fallback to `index.html`, and caching: trunk's content-hashed
//! assets are immutable, everything else (`index.html` above all) is revalidated. The files come
//! from `--ui-dir` when it is given (development: a fresh `trunk build` is served at once), else
//! from the copy of `dist/` inside the binary (built with the `embed-ui` feature), else a page
//! says how to build the UI.

use std::borrow::Cow;
use std::path::Path;

use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::Router;
use tower_http::services::{ServeDir, ServeFile};

/// A year: the longest lifetime caches honour; a hashed name never changes its content.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// Revalidate each time: `index.html` names the current hashes, so it must never be stale.
const REVALIDATE: &str = "no-cache";

/// The routes that serve the UI: from `dir` when given, else the embedded copy, else the page
/// that says how to build it. Any path that is no file gets `index.html` (deep links).
pub fn routes<S: Clone + Send + Sync + 'static>(dir: Option<&Path>) -> Router<S> {
    let router = match dir {
        Some(dir) => Router::new().fallback_service(from_dir(dir)),
        None if embedded("index.html").is_some() => from_memory(embedded),
        None => Router::new().fallback(|| async { no_ui() }),
    };
    router.layer(axum::middleware::from_fn(cache_headers))
}

/// The routes that serve the files `lookup` finds.
fn from_memory<S: Clone + Send + Sync + 'static>(lookup: Lookup) -> Router<S> {
    Router::new().fallback(move |request: Request| async move { serve(lookup, &request) })
}

/// Where the UI comes from, for the log line at start.
pub fn source(dir: Option<&Path>) -> String {
    match dir {
        Some(dir) => format!("the folder {}", dir.display()),
        None if embedded("index.html").is_some() => "inside the binary".to_owned(),
        None => "none (built without the embed-ui feature and no --ui-dir)".to_owned(),
    }
}

fn from_dir(dir: &Path) -> ServeDir<ServeFile> {
    let index = ServeFile::new(dir.join("index.html"))
        .precompressed_br()
        .precompressed_gzip();
    ServeDir::new(dir)
        .precompressed_br()
        .precompressed_gzip()
        .fallback(index)
}

/// One file of the UI held in memory, with the SHA-256 of its bytes (its `ETag`).
pub struct Asset {
    bytes: Cow<'static, [u8]>,
    sha256: [u8; 32],
}

/// Finds a file of the UI by its path under `dist/` (`index.html`, `app-<hash>_bg.wasm.br`).
type Lookup = fn(&str) -> Option<Asset>;

/// The copy of `dist/` put into the binary at build time (the `embed-ui` feature; `build.rs`
/// refuses to build it without a built UI). Embedded in debug builds too, so tests serve the
/// bytes a release serves.
#[cfg(feature = "embed-ui")]
#[derive(rust_embed::RustEmbed)]
#[folder = "../../dist/"]
struct Dist;

#[cfg(feature = "embed-ui")]
fn embedded(path: &str) -> Option<Asset> {
    <Dist as rust_embed::RustEmbed>::get(path).map(|file| Asset {
        sha256: file.metadata.sha256_hash(),
        bytes: file.data,
    })
}

#[cfg(not(feature = "embed-ui"))]
fn embedded(_path: &str) -> Option<Asset> {
    None
}

/// Answers `request` from the files `lookup` finds: the file the path names (or `index.html`),
/// in the best encoding the client accepts that has a twin, with an `ETag` of the bytes sent.
fn serve(lookup: Lookup, request: &Request) -> Response {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = StatusCode::METHOD_NOT_ALLOWED.into_response();
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let path = percent_encoding::percent_decode_str(request.uri().path()).decode_utf8_lossy();
    let path = path.trim_start_matches('/');
    let (name, plain) = match lookup(path) {
        Some(asset) => (path, asset),
        None => match lookup("index.html") {
            Some(index) => ("index.html", index),
            None => return no_ui(),
        },
    };
    let (coding, asset) = negotiate(request.headers())
        .into_iter()
        .find_map(|(coding, suffix)| lookup(&format!("{name}{suffix}")).map(|twin| (coding, twin)))
        .map_or((None, plain), |(coding, twin)| (Some(coding), twin));
    let etag = etag(&asset.sha256);
    let mut response = if if_none_match(request.headers(), &etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut response = asset.bytes.into_owned().into_response();
        let kind = mime_guess::from_path(name).first_or_octet_stream();
        if let Ok(kind) = HeaderValue::from_str(kind.as_ref()) {
            response.headers_mut().insert(header::CONTENT_TYPE, kind);
        }
        if let Some(coding) = coding {
            response
                .headers_mut()
                .insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding));
        }
        response
    };
    if let Ok(etag) = HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, etag);
    }
    response
}

/// The precompressed twins the client accepts, best first: (`Content-Encoding`, file suffix).
/// Brotli before gzip unless the client weighs gzip higher; a coding at `q=0` is refused.
fn negotiate(headers: &HeaderMap) -> Vec<(&'static str, &'static str)> {
    let mut weighed: Vec<(&'static str, &'static str, f32)> = Vec::new();
    for (coding, suffix) in [("br", ".br"), ("gzip", ".gz")] {
        let q = accept_weight(headers, coding);
        if q > 0.0 {
            weighed.push((coding, suffix, q));
        }
    }
    // A stable sort keeps brotli first between equals.
    weighed.sort_by(|a, b| b.2.total_cmp(&a.2));
    weighed
        .into_iter()
        .map(|(coding, suffix, _)| (coding, suffix))
        .collect()
}

/// The weight `Accept-Encoding` gives `coding`: its own `q` (1 without one), else that of `*`,
/// else 0.
fn accept_weight(headers: &HeaderMap, coding: &str) -> f32 {
    let mut star = 0.0;
    for value in headers.get_all(header::ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let name = parts.next().unwrap_or_default().trim();
            let q = parts
                .filter_map(|param| param.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            if name.eq_ignore_ascii_case(coding) {
                return q;
            }
            if name == "*" {
                star = q;
            }
        }
    }
    star
}

fn etag(sha256: &[u8; 32]) -> String {
    let hex: String = sha256[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

/// Whether `If-None-Match` names `etag` (or is `*`).
fn if_none_match(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == etag || tag == "*")
}

/// The page a binary without a UI shows at every path outside the API: 503, saying how to get
/// one (the API, health and metrics work as ever).
fn no_ui() -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, Html(NO_UI_PAGE)).into_response()
}

const NO_UI_PAGE: &str = r#"<!DOCTYPE html>
<html lang="en">
<meta charset="utf-8">
<title>Signoff: this build has no UI</title>
<h1>Signoff is running, but this build has no UI</h1>
<p>This <code>signoff</code> binary was built without the browser UI inside it, and was not
given a folder to serve it from. Either:</p>
<ul>
<li>build the binary with the UI inside: <code>./scripts/build-ui.sh</code>, then
<code>cargo build --release -p signoff-server --features embed-ui</code>
(<code>./scripts/run.sh</code> does both), or</li>
<li>serve a built UI from its folder: <code>signoff --ui-dir dist</code>.</li>
</ul>
<p>The A2A and REST endpoints under <code>/api/</code>, <code>/healthz</code>,
<code>/readyz</code> and <code>/metrics</code> work without it.</p>
</html>
"#;

async fn cache_headers(request: Request, next: Next) -> Response {
    let hashed = is_hashed_asset(request.uri().path());
    let mut response = next.run(request).await;
    let is_html = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/html"));
    let policy = if hashed && !is_html && response.status() == StatusCode::OK {
        IMMUTABLE
    } else {
        REVALIDATE
    };
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(policy));
    // The same URL answers in brotli, gzip or plain: a shared cache must keep them apart.
    headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    response
}

/// Whether `path` names one of trunk's content-hashed files: `name-<hash>.js`,
/// `name-<hash>_bg.wasm`, `main-<hash>.css`. trunk writes the 64-bit hash in hex without leading
/// zeros (up to 16 digits); fewer than 8 digits is taken for an ordinary name.
fn is_hashed_asset(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    let Some((stem, extension)) = file.rsplit_once('.') else {
        return false;
    };
    if !matches!(extension, "js" | "wasm" | "css") {
        return false;
    }
    let stem = stem.strip_suffix("_bg").unwrap_or(stem);
    stem.rsplit_once('-').is_some_and(|(name, hash)| {
        !name.is_empty()
            && (8..=16).contains(&hash.len())
            && hash.bytes().all(|b| b.is_ascii_hexdigit())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest;

    #[test]
    fn only_trunks_hashed_names_count_as_immutable() {
        assert!(is_hashed_asset("/signoff-ui-64712e61f0b672b8_bg.wasm"));
        assert!(is_hashed_asset("/signoff-ui-64712e61f0b672b8.js"));
        assert!(is_hashed_asset("/main-a46b4f6a929dfbc9.css"));
        assert!(is_hashed_asset("/signoff-ui-e6ee9a71cba5ad5_bg.wasm"));
        assert!(!is_hashed_asset("/index.html"));
        assert!(!is_hashed_asset("/"));
        assert!(!is_hashed_asset("/main.css"));
        assert!(!is_hashed_asset("/signoff-ui-64712e61f0b672b8.html"));
        assert!(!is_hashed_asset("/app-64712e6.js"));
        assert!(!is_hashed_asset("/app-64712e61f0b672b8a.js"));
        assert!(!is_hashed_asset("/app-64712e61f0b672zz.js"));
        assert!(!is_hashed_asset("/agents/default/demo/chat/s-1"));
    }

    /// A dist folder as build-ui.sh leaves it: each file with its .br and .gz twins (their
    /// content says which one was served).
    fn dist() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, body) in [
            ("index.html", "<!DOCTYPE html><title>Signoff</title>"),
            ("app-0123456789abcdef_bg.wasm", "plain wasm"),
        ] {
            std::fs::write(dir.path().join(name), body).unwrap();
            std::fs::write(dir.path().join(format!("{name}.br")), "brotli").unwrap();
            std::fs::write(dir.path().join(format!("{name}.gz")), "gzip").unwrap();
        }
        dir
    }

    async fn get(base: &str, path: &str, accept: Option<&str>) -> reqwest::Response {
        // No decompression features in the test client: bodies arrive as sent.
        let mut request = reqwest::Client::new().get(format!("{base}{path}"));
        if let Some(accept) = accept {
            request = request.header("accept-encoding", accept);
        }
        request.send().await.unwrap()
    }

    fn header_of(response: &reqwest::Response, name: &str) -> String {
        response
            .headers()
            .get(name)
            .map(|value| value.to_str().unwrap().to_owned())
            .unwrap_or_default()
    }

    /// Serves `app` on a free loopback port; its base URL.
    async fn serve_on(app: Router) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        base
    }

    /// What a UI source must do, on disk or in memory alike.
    async fn assert_precompressed_and_cached(base: &str) {
        let wasm = "/app-0123456789abcdef_bg.wasm";

        let response = get(base, wasm, Some("br, gzip")).await;
        assert_eq!(response.status(), 200);
        assert_eq!(header_of(&response, "content-encoding"), "br");
        assert_eq!(header_of(&response, "content-type"), "application/wasm");
        assert_eq!(header_of(&response, "cache-control"), IMMUTABLE);
        assert_eq!(header_of(&response, "vary"), "accept-encoding");
        assert_eq!(response.text().await.unwrap(), "brotli");

        let response = get(base, wasm, Some("gzip")).await;
        assert_eq!(header_of(&response, "content-encoding"), "gzip");
        assert_eq!(response.text().await.unwrap(), "gzip");

        let response = get(base, wasm, None).await;
        assert_eq!(header_of(&response, "content-encoding"), "");
        assert_eq!(response.text().await.unwrap(), "plain wasm");

        for path in ["/", "/index.html", "/agents/default/demo/chat/s-1"] {
            let response = get(base, path, Some("gzip, br")).await;
            assert_eq!(response.status(), 200, "{path}");
            assert_eq!(header_of(&response, "cache-control"), REVALIDATE, "{path}");
            assert_eq!(header_of(&response, "content-encoding"), "br", "{path}");
            assert!(
                header_of(&response, "content-type").starts_with("text/html"),
                "{path}"
            );
        }
        // A hashed name that is not there falls back to index.html, which is never immutable.
        let response = get(base, "/app-fedcba9876543210.js", None).await;
        assert_eq!(header_of(&response, "cache-control"), REVALIDATE);
        assert_eq!(
            response.text().await.unwrap(),
            "<!DOCTYPE html><title>Signoff</title>"
        );
    }

    #[tokio::test]
    async fn files_come_precompressed_as_the_client_accepts_and_cached_by_their_names() {
        let dir = dist();
        let base = serve_on(routes(Some(dir.path()))).await;
        assert_precompressed_and_cached(&base).await;
    }

    /// The same files as [`dist`], held in memory as the embedded copy is.
    fn in_memory(path: &str) -> Option<Asset> {
        let bytes: &'static [u8] = match path {
            "index.html" => b"<!DOCTYPE html><title>Signoff</title>",
            "app-0123456789abcdef_bg.wasm" => b"plain wasm",
            "index.html.br" | "app-0123456789abcdef_bg.wasm.br" => b"brotli",
            "index.html.gz" | "app-0123456789abcdef_bg.wasm.gz" => b"gzip",
            _ => return None,
        };
        Some(Asset {
            bytes: Cow::Borrowed(bytes),
            sha256: sha2::Sha256::digest(bytes).into(),
        })
    }

    #[tokio::test]
    async fn files_in_memory_come_precompressed_and_cached_as_files_on_disk_do() {
        let app: Router = from_memory(in_memory).layer(axum::middleware::from_fn(cache_headers));
        let base = serve_on(app).await;
        assert_precompressed_and_cached(&base).await;

        // A refused coding is never sent; a preferred one wins.
        let wasm = "/app-0123456789abcdef_bg.wasm";
        let response = get(&base, wasm, Some("br;q=0, gzip")).await;
        assert_eq!(header_of(&response, "content-encoding"), "gzip");
        let response = get(&base, wasm, Some("br;q=0.5, gzip;q=0.9")).await;
        assert_eq!(header_of(&response, "content-encoding"), "gzip");
        let response = get(&base, wasm, Some("*")).await;
        assert_eq!(header_of(&response, "content-encoding"), "br");
        let response = get(&base, wasm, Some("identity")).await;
        assert_eq!(header_of(&response, "content-encoding"), "");

        // Each encoding has its own ETag; a conditional GET that names it gets 304, no body.
        let response = get(&base, wasm, Some("br")).await;
        let etag = header_of(&response, "etag");
        assert!(etag.starts_with('"') && etag.len() == 34, "{etag}");
        let again = reqwest::Client::new()
            .get(format!("{base}{wasm}"))
            .header("accept-encoding", "br")
            .header("if-none-match", &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304);
        assert_eq!(header_of(&again, "etag"), etag);
        assert_eq!(again.bytes().await.unwrap().len(), 0);
        let gzip = get(&base, wasm, Some("gzip")).await;
        assert_ne!(header_of(&gzip, "etag"), etag);

        let response = reqwest::Client::new()
            .post(format!("{base}/"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405);
        assert_eq!(header_of(&response, "allow"), "GET, HEAD");
    }

    #[tokio::test]
    async fn without_a_ui_every_page_says_how_to_build_one() {
        // A test build has the embedded copy only with the embed-ui feature.
        if embedded("index.html").is_some() {
            return;
        }
        let base = serve_on(routes(None)).await;
        for path in [
            "/",
            "/agents/default/demo/chat/s-1",
            "/app-0123456789abcdef.js",
        ] {
            let response = get(&base, path, None).await;
            assert_eq!(response.status(), 503, "{path}");
            assert!(header_of(&response, "content-type").starts_with("text/html"));
            assert_eq!(header_of(&response, "cache-control"), REVALIDATE);
            let page = response.text().await.unwrap();
            assert!(page.contains("./scripts/build-ui.sh"), "{page}");
            assert!(page.contains("--features embed-ui"), "{page}");
            assert!(page.contains("--ui-dir"), "{page}");
        }
    }
}
