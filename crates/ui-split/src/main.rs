//! Turns the UI's wasm, as cargo links it, into the files the browser loads: the module the chat
//! needs at once and one chunk per split point (`wasm_split_cli_support`, the splitter Leptos's
//! split points are made for), each put through wasm-bindgen and wasm-opt, named by a hash of
//! its content (the server caches such names for a year), with index.html loading the first.
//!
//! ```text
//! signoff-ui-split <cargo's signoff-ui.wasm> <dist folder, holding trunk's index.html>
//! ```
//!
//! trunk 0.21 cannot split a module, so `scripts/build-ui.sh` builds the wasm with cargo, runs
//! this, and leaves the CSS and index.html to trunk (docs/toolchain.md, UI chunks).

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// The name wasm-bindgen gives the main module's files (and trunk gave them before).
const APP: &str = "signoff-ui";
/// The loader the splitter writes: the main module imports each chunk's loader from it.
const LOADER: &str = "__wasm_split";

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("usage: signoff-ui-split <input.wasm> <dist folder>")]
    Usage,
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("splitting the wasm: {0:#}")]
    Split(String),
    #[error("{0} failed: {1}")]
    Tool(String, String),
    #[error("{0} has no </head> to put the loader before")]
    NoHead(PathBuf),
    #[error("{0} does not name {1}, which must be renamed in it")]
    Missing(String, String),
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            // The build script shows this line; there is no logger in a tool this small.
            #[allow(clippy::print_stderr)]
            {
                eprintln!("signoff-ui-split: {err}");
            }
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Error> {
    let mut args = std::env::args_os().skip(1);
    let (Some(input), Some(dist), None) = (args.next(), args.next(), args.next()) else {
        return Err(Error::Usage);
    };
    let (input, dist) = (PathBuf::from(input), PathBuf::from(dist));
    let staging = dist.join(".split-staging");
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|err| Error::Io(staging.clone(), err))?;
    }
    let built = build(&input, &staging)?;
    let names = install(&built, &dist)?;
    add_loader(&dist.join("index.html"), &names)?;
    std::fs::remove_dir_all(&staging).map_err(|err| Error::Io(staging, err))
}

/// What [`build`] leaves in the staging folder: wasm-bindgen's JS and wasm, the splitter's
/// loader and its chunks, all optimized.
struct Built {
    js: PathBuf,
    wasm: PathBuf,
    loader: PathBuf,
    chunks: Vec<PathBuf>,
}

/// Splits `input`, runs wasm-bindgen on the main module and wasm-opt on every module.
fn build(input: &Path, staging: &Path) -> Result<Built, Error> {
    let wasm = read(input)?;
    let split_dir = staging.join("split");
    let main_wasm = split_dir.join("main.wasm");
    let loader_name = format!("./{LOADER}.js");
    let main_module = format!("./{APP}.js");
    let split = wasm_split_cli_support::transform({
        let mut opts = wasm_split_cli_support::Options::new(&wasm);
        opts.output_dir = &split_dir;
        opts.main_out_path = &main_wasm;
        opts.link_name = &loader_name;
        opts.main_module = &main_module;
        opts
    })
    .map_err(|err| Error::Split(format!("{err:#}")))?;

    // The chunks call the main module's functions through the names lld gave them: keep them.
    let bindgen_dir = staging.join("bindgen");
    tool(
        Command::new("wasm-bindgen")
            .arg("--target=web")
            .arg("--no-typescript")
            .arg("--keep-lld-exports")
            .arg("--no-demangle")
            .arg(format!("--out-name={APP}"))
            .arg(format!("--out-dir={}", bindgen_dir.display()))
            .arg(&main_wasm),
    )?;
    let built = Built {
        js: bindgen_dir.join(format!("{APP}.js")),
        wasm: bindgen_dir.join(format!("{APP}_bg.wasm")),
        loader: split_dir.join(format!("{LOADER}.js")),
        chunks: split.split_modules,
    };
    // The same level trunk used (index.html's data-wasm-opt="z" before the split).
    for file in std::iter::once(&built.wasm).chain(&built.chunks) {
        tool(
            Command::new("wasm-opt")
                .arg("-Oz")
                .arg(file)
                .arg("-o")
                .arg(file),
        )?;
    }
    Ok(built)
}

/// The hashed names [`install`] gave the files index.html names.
struct Names {
    js: String,
    wasm: String,
    loader: String,
}

/// Copies the built files into `dist` under names that carry a hash of their content, and
/// rewrites the references between them.
fn install(built: &Built, dist: &Path) -> Result<Names, Error> {
    let mut loader = read_text(&built.loader)?;
    for chunk in &built.chunks {
        let bytes = read(chunk)?;
        let stem = stem(chunk);
        let hashed = format!("{stem}-{}.wasm", hash(&[&bytes]));
        loader = replace(
            &loader,
            LOADER,
            &format!("\"./{stem}.wasm\""),
            &format!("\"./{hashed}\""),
        )?;
        write(&dist.join(&hashed), &bytes)?;
    }
    let wasm = read(&built.wasm)?;
    let wasm_name = format!("{APP}-{}_bg.wasm", hash(&[&wasm]));
    write(&dist.join(&wasm_name), &wasm)?;

    // The JS and the loader import each other, so one hash over both (and the wasm they load)
    // names the pair: a change to either renames both.
    let js = read_text(&built.js)?;
    let pair = hash(&[js.as_bytes(), loader.as_bytes(), wasm_name.as_bytes()]);
    let js_name = format!("{APP}-{pair}.js");
    let loader_name = format!("{LOADER}-{pair}.js");
    // Only the import statements: the wasm's import module keeps its name, and the glue's
    // imports object is keyed by it.
    let js = replace(
        &js,
        APP,
        &format!("from \"./{LOADER}.js\""),
        &format!("from \"./{loader_name}\""),
    )?;
    let loader = replace(
        &loader,
        LOADER,
        &format!("./{APP}.js"),
        &format!("./{js_name}"),
    )?;
    write(&dist.join(&js_name), js.as_bytes())?;
    write(&dist.join(&loader_name), loader.as_bytes())?;
    Ok(Names {
        js: js_name,
        wasm: wasm_name,
        loader: loader_name,
    })
}

/// Puts the tags that load the app before `</head>` of trunk's index.html: the two modules and
/// the main wasm fetched at once (preloads), then the module script that starts the app.
fn add_loader(index: &Path, names: &Names) -> Result<(), Error> {
    let html = read_text(index)?;
    let Names { js, wasm, loader } = names;
    let tags = format!(
        "<link rel=\"modulepreload\" href=\"/{js}\">\
         <link rel=\"modulepreload\" href=\"/{loader}\">\
         <link rel=\"preload\" href=\"/{wasm}\" as=\"fetch\" type=\"application/wasm\" crossorigin>\
         <script type=\"module\">import init from \"/{js}\";init({{module_or_path:\"/{wasm}\"}});</script>"
    );
    let Some(at) = html.find("</head>") else {
        return Err(Error::NoHead(index.to_path_buf()));
    };
    let html = format!("{}{tags}{}", &html[..at], &html[at..]);
    write(index, html.as_bytes())
}

/// Runs a build tool, failing with its output when it fails.
fn tool(command: &mut Command) -> Result<(), Error> {
    let name = command.get_program().to_string_lossy().into_owned();
    let output = command
        .output()
        .map_err(|err| Error::Tool(name.clone(), err.to_string()))?;
    if output.status.success() {
        return Ok(());
    }
    let mut said = String::from_utf8_lossy(&output.stderr).into_owned();
    said.push_str(&String::from_utf8_lossy(&output.stdout));
    Err(Error::Tool(name, said))
}

/// The first 16 hex digits of the SHA-256 of `parts` in order (the server's cache rule reads
/// 8 to 16 hex digits after the last `-` as a content hash).
fn hash(parts: &[&[u8]]) -> String {
    let mut digest = Sha256::new();
    for part in parts {
        digest.update((part.len() as u64).to_le_bytes());
        digest.update(part);
    }
    digest.finalize()[..8]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// `text` with `from` replaced by `to`; an error when `from` is not there, since a reference
/// left unrenamed would load a file that does not exist.
fn replace(text: &str, file: &str, from: &str, to: &str) -> Result<String, Error> {
    if !text.contains(from) {
        return Err(Error::Missing(file.to_owned(), from.to_owned()));
    }
    Ok(text.replace(from, to))
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn read(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|err| Error::Io(path.to_path_buf(), err))
}

fn read_text(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|err| Error::Io(path.to_path_buf(), err))
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    std::fs::write(path, bytes).map_err(|err| Error::Io(path.to_path_buf(), err))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_sixteen_hex_digits_that_change_with_any_part() {
        let one = hash(&[b"ab", b"c"]);
        assert_eq!(one.len(), 16);
        assert!(one.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(one, hash(&[b"ab", b"c"]));
        // Lengths are hashed too: moving a byte between parts is another content.
        assert_ne!(one, hash(&[b"a", b"bc"]));
    }

    #[test]
    fn a_reference_that_is_not_there_is_an_error_not_a_silent_miss() {
        assert_eq!(
            replace("import \"./a.js\"", "x", "./a.js", "./a-1.js").unwrap(),
            "import \"./a-1.js\""
        );
        let err = replace("import \"./b.js\"", "x", "./a.js", "./a-1.js").unwrap_err();
        assert!(err.to_string().contains("./a.js"), "{err}");
    }

    #[test]
    fn the_loader_goes_into_the_head_and_a_page_without_one_is_refused() {
        let dir = std::env::temp_dir().join(format!("ui-split-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let index = dir.join("index.html");
        let names = Names {
            js: "signoff-ui-1.js".into(),
            wasm: "signoff-ui-2_bg.wasm".into(),
            loader: "__wasm_split-1.js".into(),
        };
        std::fs::write(
            &index,
            "<html><head><title>x</title></head><body></body></html>",
        )
        .unwrap();
        add_loader(&index, &names).unwrap();
        let html = std::fs::read_to_string(&index).unwrap();
        let script = html.find("import init from \"/signoff-ui-1.js\"").unwrap();
        assert!(script < html.find("</head>").unwrap(), "{html}");
        assert!(
            html.contains("module_or_path:\"/signoff-ui-2_bg.wasm\""),
            "{html}"
        );
        assert!(html.contains("href=\"/__wasm_split-1.js\""), "{html}");

        std::fs::write(&index, "<html><body></body></html>").unwrap();
        assert!(matches!(add_loader(&index, &names), Err(Error::NoHead(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
