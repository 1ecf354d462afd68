//! Previews of the built-in file tools' held calls (docs/wire.md, Previews): what a
//! `write_file` changes, as a diff against the file's current text, and what a `delete_file`
//! removes. Made at pause time, read only, through the same sandbox checks as the tools
//! themselves (`FileTools::resolve`, no symlink followed, no hard-linked file read), and capped.

use std::io::Read;
use std::path::Path;

use serde_json::Value;
use signoff_protocol::diff::Caps;
use signoff_protocol::hitl::preview::first_lines;
use signoff_protocol::hitl::Preview;

use super::{open_no_links, FileTools, MAX_READ_BYTES};

/// How much of a file to be deleted its preview shows.
const DELETE_CAPS: Caps = Caps {
    max_lines: 10,
    max_bytes: 2 * 1024,
};

/// What is at a path now.
enum Current {
    Missing,
    Text(String),
    /// A file whose content is not shown, as its preview says: binary (not UTF-8, or holding a
    /// NUL byte), too large, or unreadable (a folder, a symlink, a hard link, …).
    Unshown(Preview),
}

/// The preview of a call of `tool` with `args`, and the current text an edit may be diffed
/// against; `None` for a tool that changes nothing or arguments it would refuse.
pub(super) fn preview(
    tools: &FileTools,
    tool: &str,
    args: &Value,
) -> Option<(Preview, Option<String>)> {
    let raw = args.get("path")?.as_str()?;
    match tool {
        "write_file" => {
            let content = args.get("content")?.as_str()?;
            Some(match current(tools, raw) {
                Current::Missing => (
                    Preview::NewFile {
                        size: content.len() as u64,
                    },
                    None,
                ),
                Current::Text(text) => (Preview::of_write(raw, &text, content), Some(text)),
                Current::Unshown(preview) => (preview, None),
            })
        }
        "delete_file" => Some((
            match current(tools, raw) {
                Current::Missing => Preview::Missing,
                Current::Text(text) => {
                    let (shown, more) = first_lines(&text, DELETE_CAPS);
                    Preview::Delete {
                        size: text.len() as u64,
                        first_lines: shown,
                        more_lines: Some(more),
                    }
                }
                Current::Unshown(preview) => preview,
            },
            None,
        )),
        _ => None,
    }
}

/// Reads what is at `raw` without following it out of the sandbox or changing anything.
fn current(tools: &FileTools, raw: &str) -> Current {
    let path = match tools.resolve(raw) {
        Ok(path) => path,
        Err(err) => return unreadable(err.to_string()),
    };
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Current::Missing,
        Err(err) => return unreadable(format!("cannot read {raw}: {err}")),
    };
    // Checked before opening: opening a FIFO for reading would wait for a writer.
    if meta.is_dir() {
        return unreadable(format!("{raw} is a folder"));
    }
    if !meta.is_file() {
        return unreadable(format!("{raw} is not a regular file"));
    }
    if meta.len() > MAX_READ_BYTES {
        return Current::Unshown(Preview::TooLarge { size: meta.len() });
    }
    match read(&path, raw) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) if !text.contains('\0') => Current::Text(text),
            Ok(text) => binary(text.len()),
            Err(err) => binary(err.into_bytes().len()),
        },
        Err(why) => unreadable(why),
    }
}

fn unreadable(why: String) -> Current {
    Current::Unshown(Preview::Unavailable(why))
}

fn binary(size: usize) -> Current {
    Current::Unshown(Preview::Binary { size: size as u64 })
}

fn read(path: &Path, raw: &str) -> Result<Vec<u8>, String> {
    let file = open_no_links(path, raw, "read", std::fs::OpenOptions::new().read(true))
        .map_err(|err| err.to_string())?;
    let mut bytes = Vec::new();
    file.take(MAX_READ_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|err| format!("cannot read {raw}: {err}"))?;
    Ok(bytes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tools() -> (tempfile::TempDir, FileTools) {
        let dir = tempfile::tempdir().unwrap();
        let tools = FileTools::new("files", dir.path().join("sandbox")).unwrap();
        (dir, tools)
    }

    fn write(tools: &FileTools, path: &str, content: &str) -> Preview {
        preview(
            tools,
            "write_file",
            &json!({"path": path, "content": content}),
        )
        .unwrap()
        .0
    }

    #[test]
    fn writes_preview_as_diff_new_file_binary_and_too_large() {
        let (_dir, tools) = tools();
        let root = tools.root();
        std::fs::write(root.join("a.txt"), "one\ntwo\n").unwrap();
        let (diff, base) = preview(
            &tools,
            "write_file",
            &json!({"path": "a.txt", "content": "one\n2\n"}),
        )
        .unwrap();
        assert_eq!(
            diff,
            Preview::Diff("--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n".into())
        );
        assert_eq!(base.as_deref(), Some("one\ntwo\n"));
        assert_eq!(
            write(&tools, "new/b.txt", "hey"),
            Preview::NewFile { size: 3 }
        );
        assert!(!root.join("new").exists(), "a preview creates nothing");
        std::fs::write(root.join("bin"), [0xff, 0xfe, 0]).unwrap();
        assert_eq!(write(&tools, "bin", "x"), Preview::Binary { size: 3 });
        std::fs::write(root.join("nul.txt"), "a\0b").unwrap();
        assert_eq!(write(&tools, "nul.txt", "x"), Preview::Binary { size: 3 });
        let big = vec![b'x'; MAX_READ_BYTES as usize + 1];
        std::fs::write(root.join("big.txt"), &big).unwrap();
        assert_eq!(
            write(&tools, "big.txt", "x"),
            Preview::TooLarge {
                size: MAX_READ_BYTES + 1
            }
        );
        assert_eq!(std::fs::read(root.join("a.txt")).unwrap(), b"one\ntwo\n");
    }

    #[test]
    fn deletes_preview_first_lines_or_missing() {
        let (_dir, tools) = tools();
        let text: String = (0..25).map(|line| format!("line {line}\n")).collect();
        std::fs::write(tools.root().join("old.txt"), &text).unwrap();
        let delete = |path: &str| {
            preview(&tools, "delete_file", &json!({"path": path}))
                .unwrap()
                .0
        };
        let Preview::Delete {
            size,
            first_lines,
            more_lines,
        } = delete("old.txt")
        else {
            panic!("not a delete preview");
        };
        assert_eq!(size, text.len() as u64);
        assert_eq!(first_lines.lines().count(), 10);
        assert_eq!(more_lines, Some(15));
        assert_eq!(delete("gone.txt"), Preview::Missing);
        assert!(tools.root().join("old.txt").exists());
    }

    #[test]
    fn previews_never_leave_the_sandbox() {
        let (dir, tools) = tools();
        std::fs::write(dir.path().join("secret.txt"), "secret\n").unwrap();
        std::os::unix::fs::symlink(dir.path(), tools.root().join("out")).unwrap();
        std::os::unix::fs::symlink(
            dir.path().join("secret.txt"),
            tools.root().join("alias.txt"),
        )
        .unwrap();
        std::fs::hard_link(dir.path().join("secret.txt"), tools.root().join("hard.txt")).unwrap();
        for path in [
            "../secret.txt",
            "/etc/passwd",
            "out/secret.txt",
            "alias.txt",
            "hard.txt",
        ] {
            let preview = write(&tools, path, "x");
            let Preview::Unavailable(why) = &preview else {
                panic!("{path}: {preview:?}");
            };
            assert!(!why.contains("secret\n"), "{why}");
        }
        let fifo = tools.root().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|status| status.success()) {
            assert_eq!(
                write(&tools, "pipe", "x"),
                Preview::Unavailable("pipe is not a regular file".into())
            );
        }
        assert_eq!(preview(&tools, "read_file", &json!({"path": "a"})), None);
    }
}
