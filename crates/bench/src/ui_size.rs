//! The UI's transfer size, read from what scripts/ui-size.sh printed (it stays the one place
//! that measures it): wasm, js and css, raw, gzip -9 and brotli -q 11.

use std::path::Path;

use crate::stats::Figure;

const GROUP: &str = "UI transfer size (release build)";

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
