//! The UI's transfer size: the files as scripts/ui-size.sh measured them (wasm, js and css,
//! raw, gzip -9 and brotli -q 11), and the bytes the real server sends for each file of dist/
//! to a browser that asks with `Accept-Encoding: br, gzip`.

use std::path::Path;

use crate::error::{BenchError, Result};
use crate::server::ServerProcess;
use crate::stats::Figure;

const GROUP: &str = "UI transfer size (release build)";
const WIRE_GROUP: &str = "UI on the wire (the server, Accept-Encoding: br, gzip)";
/// What Chromium asks for over plain HTTP on loopback.
const ACCEPT_ENCODING: &str = "br, gzip";

/// One figure per kind (wasm, js, css, total) and encoding; missing figures if there is no
/// output to read.
pub fn figures(output: Option<&Path>) -> Vec<Figure> {
    let text = match output.map(std::fs::read_to_string) {
        Some(Ok(text)) => text,
        Some(Err(err)) => {
            return vec![Figure::missing(
                GROUP,
                "transfer size",
                "bytes",
                err.to_string(),
            )]
        }
        None => {
            return vec![Figure::missing(
                GROUP,
                "transfer size",
                "bytes",
                "n/a (no scripts/ui-size.sh output given)",
            )]
        }
    };
    figures_of(&text)
}

/// The bytes on the wire for each of the UI's files, summed by kind (wasm, js, css, html) and
/// in total, from `binary` serving `dist` on loopback.
pub async fn wire_figures(binary: &Path, work_dir: &Path, dist: Option<&Path>) -> Vec<Figure> {
    let Some(dist) = dist else {
        return vec![Figure::missing(
            WIRE_GROUP,
            "total",
            "bytes",
            "n/a (no --dist given)",
        )];
    };
    match wire_sizes(binary, work_dir, dist).await {
        Ok(sizes) => {
            let mut figures = Vec::new();
            let mut encodings = Vec::new();
            for kind in ["wasm", "js", "css", "html"] {
                let rows: Vec<&WireSize> = sizes.iter().filter(|row| row.kind == kind).collect();
                if rows.is_empty() {
                    continue;
                }
                let bytes: u64 = rows.iter().map(|row| row.bytes).sum();
                encodings.extend(rows.iter().map(|row| format!("{kind} {}", row.encoding)));
                figures.push(Figure::value(WIRE_GROUP, kind, "bytes", bytes as f64));
            }
            let total: u64 = sizes.iter().map(|row| row.bytes).sum();
            figures.push(
                Figure::value(WIRE_GROUP, "total", "bytes", total as f64)
                    .with_note(format!("Content-Encoding: {}", encodings.join(", "))),
            );
            figures
        }
        Err(err) => vec![Figure::missing(
            WIRE_GROUP,
            "total",
            "bytes",
            format!("failed: {err}"),
        )],
    }
}

/// One file of dist/ as the server sent it.
struct WireSize {
    /// `wasm`, `js`, `css` or `html`.
    kind: String,
    /// The body's length as sent (compressed when the server compressed it).
    bytes: u64,
    /// The `Content-Encoding` it came with (`identity` when none).
    encoding: String,
}

async fn wire_sizes(binary: &Path, work_dir: &Path, dist: &Path) -> Result<Vec<WireSize>> {
    let dist = std::fs::canonicalize(dist).map_err(|err| BenchError::io(dist, err))?;
    let server = ServerProcess::start_with_ui(binary, &work_dir.join("ui-wire"), &dist).await?;
    // The client must not decode: the bench counts the bytes as they travel.
    let http = reqwest::Client::builder().no_gzip().no_brotli().build()?;
    let mut sizes = Vec::new();
    let entries = std::fs::read_dir(&dist).map_err(|err| BenchError::io(&dist, err))?;
    let mut names: Vec<String> = entries
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    for name in names {
        let Some(kind) = name.rsplit_once('.').map(|(_, ext)| ext) else {
            continue;
        };
        if !matches!(kind, "wasm" | "js" | "css" | "html") {
            continue;
        }
        let url = format!("{}/{name}", server.base);
        let response = http
            .get(&url)
            .header("accept-encoding", ACCEPT_ENCODING)
            .send()
            .await?;
        if !response.status().is_success() {
            return Err(BenchError::Status {
                status: response.status().as_u16(),
                url,
            });
        }
        let encoding = response
            .headers()
            .get("content-encoding")
            .and_then(|value| value.to_str().ok())
            .unwrap_or("identity")
            .to_owned();
        let bytes = response.bytes().await?.len() as u64;
        sizes.push(WireSize {
            kind: kind.to_owned(),
            bytes,
            encoding,
        });
    }
    server.stop().await?;
    Ok(sizes)
}

/// The figures of ui-size.sh's output `text`.
fn figures_of(text: &str) -> Vec<Figure> {
    let sizes = parse(text);
    if sizes.is_empty() {
        return vec![Figure::missing(
            GROUP,
            "transfer size",
            "bytes",
            format!("n/a (ui-size.sh printed no sizes: {})", text.trim()),
        )];
    }
    let mut figures = Vec::new();
    for kind in ["wasm", "js", "css", "total"] {
        let rows: Vec<&Sizes> = sizes.iter().filter(|row| row.kind == kind).collect();
        if rows.is_empty() {
            continue;
        }
        let sum = |pick: fn(&Sizes) -> u64| rows.iter().map(|row| pick(row)).sum::<u64>() as f64;
        figures.push(Figure::value(
            GROUP,
            &format!("{kind}: raw"),
            "bytes",
            sum(|r| r.raw),
        ));
        figures.push(Figure::value(
            GROUP,
            &format!("{kind}: gzip"),
            "bytes",
            sum(|r| r.gzip),
        ));
        figures.push(Figure::value(
            GROUP,
            &format!("{kind}: brotli"),
            "bytes",
            sum(|r| r.brotli),
        ));
    }
    figures
}

#[derive(Debug, Clone, PartialEq)]
struct Sizes {
    /// `wasm`, `js`, `css` or `total`.
    kind: String,
    raw: u64,
    gzip: u64,
    brotli: u64,
}

/// The rows `NAME RAW GZIP BROTLI` of ui-size.sh's output.
fn parse(text: &str) -> Vec<Sizes> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [name, raw, gzip, brotli] = fields[..] else {
                return None;
            };
            let kind = if name == "total" {
                "total"
            } else {
                name.rsplit_once('.').map(|(_, ext)| ext)?
            };
            Some(Sizes {
                kind: kind.to_owned(),
                raw: raw.parse().ok()?,
                gzip: gzip.parse().ok()?,
                brotli: brotli.parse().ok()?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_rows_of_ui_size_sh() {
        let text = "file raw gzip brotli\n\
                    signoff-ui-1_bg.wasm 300 120 100\n\
                    signoff-ui-1.js 40 10 9\n\
                    main-2.css 20 5 4\n\
                    total 360 135 113\n\
                    ui size ok: 135 bytes gzip of a 400000 budget\n";
        let figures = figures_of(text);
        let find = |name: &str| {
            figures
                .iter()
                .find(|figure| figure.name == name)
                .and_then(|figure| figure.summary)
                .map(|summary| summary.median)
        };
        assert_eq!(find("wasm: gzip"), Some(120.0));
        assert_eq!(find("js: raw"), Some(40.0));
        assert_eq!(find("css: brotli"), Some(4.0));
        assert_eq!(find("total: gzip"), Some(135.0));
        assert_eq!(figures.len(), 12);
    }
}
