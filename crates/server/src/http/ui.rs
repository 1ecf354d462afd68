//! The built UI (trunk's `dist/`): files with their precompressed brotli and gzip twins
//! (`scripts/build-ui.sh` writes them; `Content-Encoding` follows the request's
//! `Accept-Encoding`), the SPA fallback to `index.html`, and caching: trunk's content-hashed
//! assets are immutable, everything else (`index.html` above all) is revalidated.

use std::path::Path;

use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use axum::Router;
use tower_http::services::{ServeDir, ServeFile};

/// A year: the longest lifetime caches honour; a hashed name never changes its content.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// Revalidate each time: `index.html` names the current hashes, so it must never be stale.
const REVALIDATE: &str = "no-cache";

/// The routes that serve `dir`; any path that is no file there gets `index.html`.
pub fn routes<S: Clone + Send + Sync + 'static>(dir: &Path) -> Router<S> {
    let index = ServeFile::new(dir.join("index.html"))
        .precompressed_br()
        .precompressed_gzip();
    let files = ServeDir::new(dir)
        .precompressed_br()
        .precompressed_gzip()
        .fallback(index);
    Router::new()
        .fallback_service(files)
        .layer(axum::middleware::from_fn(cache_headers))
}

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

    #[tokio::test]
    async fn files_come_precompressed_as_the_client_accepts_and_cached_by_their_names() {
        let dir = dist();
        let app: Router = routes(dir.path());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let wasm = "/app-0123456789abcdef_bg.wasm";

        let response = get(&base, wasm, Some("br, gzip")).await;
        assert_eq!(response.status(), 200);
        assert_eq!(header_of(&response, "content-encoding"), "br");
        assert_eq!(header_of(&response, "content-type"), "application/wasm");
        assert_eq!(header_of(&response, "cache-control"), IMMUTABLE);
        assert_eq!(header_of(&response, "vary"), "accept-encoding");
        assert_eq!(response.text().await.unwrap(), "brotli");

        let response = get(&base, wasm, Some("gzip")).await;
        assert_eq!(header_of(&response, "content-encoding"), "gzip");
        assert_eq!(response.text().await.unwrap(), "gzip");

        let response = get(&base, wasm, None).await;
        assert_eq!(header_of(&response, "content-encoding"), "");
        assert_eq!(response.text().await.unwrap(), "plain wasm");

        for path in ["/", "/index.html", "/agents/default/demo/chat/s-1"] {
            let response = get(&base, path, Some("gzip, br")).await;
            assert_eq!(response.status(), 200, "{path}");
            assert_eq!(header_of(&response, "cache-control"), REVALIDATE, "{path}");
            assert_eq!(header_of(&response, "content-encoding"), "br", "{path}");
        }
        // A hashed name that is not there falls back to index.html, which is never immutable.
        let response = get(&base, "/app-fedcba9876543210.js", None).await;
        assert_eq!(header_of(&response, "cache-control"), REVALIDATE);
        assert_eq!(
            response.text().await.unwrap(),
            "<!DOCTYPE html><title>Signoff</title>"
        );
    }
}
