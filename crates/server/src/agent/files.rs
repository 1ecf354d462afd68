//! The built-in file tools (`list_directory`, `read_file`, `write_file`, `delete_file`) over one
//! sandbox folder. Every path is checked to stay inside the sandbox: no `..`, no absolute path,
//! and no symlink that leads out; and to hold no control character (a newline in a name
//! serves no person, and hides the rest of the name in logs and on cards).
//!
//! The file work runs in place on the caller's thread, like `resolve`'s checks: the sandbox is a
//! local folder, reads are capped at 1 MiB (a write is as large as its `content`: a model's
//! arguments, or edited ones within the request body limit), and a hop to
//! tokio's blocking pool and back costs more than such a file operation. So nothing here may
//! wait: files are opened with `O_NONBLOCK` (opening a named pipe for reading would wait for a
//! writer, for ever) and only regular files and folders are used; a pipe, socket or device
//! planted in the sandbox is refused with a tool error.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::{json, Value};

use signoff_protocol::hitl::Preview;

use super::cedar::ToolHints;
use super::tools::{text_result, ToolError, ToolSource, ToolSpec};

mod preview;

/// Files larger than this are not read whole into a model's context.
pub(super) const MAX_READ_BYTES: u64 = 1024 * 1024;

/// The built-in file tools over `root`.
pub struct FileTools {
    name: String,
    root: PathBuf,
}

impl FileTools {
    /// Serves the sandbox at `root`, creating it if needed.
    pub fn new(name: impl Into<String>, root: PathBuf) -> std::io::Result<FileTools> {
        std::fs::create_dir_all(&root)?;
        let root = root.canonicalize()?;
        Ok(FileTools {
            name: name.into(),
            root,
        })
    }

    /// Creates the demo sandbox with `readme.txt` and `old.txt` if it does not exist yet, so the
    /// README's first prompt works at once.
    pub fn seed_demo(root: &Path) -> std::io::Result<()> {
        if root.exists() {
            return Ok(());
        }
        std::fs::create_dir_all(root)?;
        std::fs::write(
            root.join("readme.txt"),
            "Welcome to the Signoff sandbox. The demo agent can list, read, write and delete \
             files here; writing and deleting wait for your approval.\n",
        )?;
        std::fs::write(
            root.join("old.txt"),
            "An old file, safe to delete once you approve.\n",
        )?;
        Ok(())
    }

    fn specs(&self) -> Vec<ToolSpec> {
        let path = json!({"type": "string", "description": "A path relative to the sandbox"});
        // Listing and reading change nothing; writing and deleting destroy what was there.
        let spec = |name: &str, description: &str, schema: Value| ToolSpec {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema: schema,
            source: self.name.clone(),
            hints: ToolHints {
                read_only: matches!(name, "list_directory" | "read_file"),
                destructive: matches!(name, "write_file" | "delete_file"),
                idempotent: name != "delete_file",
                open_world: false,
            },
        };
        vec![
            spec(
                "list_directory",
                "List the files and folders of a sandbox folder (folders end with /).",
                json!({"type": "object", "properties": {"path": path},
                       "additionalProperties": false}),
            ),
            spec(
                "read_file",
                "Read a text file from the sandbox.",
                json!({"type": "object", "properties": {"path": path}, "required": ["path"],
                       "additionalProperties": false}),
            ),
            spec(
                "write_file",
                "Create or overwrite a text file in the sandbox.",
                json!({"type": "object",
                       "properties": {"path": path, "content": {"type": "string"}},
                       "required": ["path", "content"], "additionalProperties": false}),
            ),
            spec(
                "delete_file",
                "Delete a file from the sandbox.",
                json!({"type": "object", "properties": {"path": path}, "required": ["path"],
                       "additionalProperties": false}),
            ),
        ]
    }

    /// The sandbox folder (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a relative path inside the sandbox, refusing anything that leaves it and any
    /// control character, whatever the rules allowed.
    pub(super) fn resolve(&self, raw: &str) -> Result<PathBuf, ToolError> {
        if let Some(control) = raw.chars().find(|c| c.is_control()) {
            return Err(ToolError::InvalidArgs(format!(
                "path {raw:?} holds the control character {control:?}; a path may not hold \
                 newlines, tabs or other control characters"
            )));
        }
        let relative = Path::new(raw);
        let mut clean = PathBuf::new();
        for component in relative.components() {
            match component {
                Component::Normal(part) => clean.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    return Err(ToolError::Failed(format!(
                        "path {raw:?} leaves the sandbox: `..` is not allowed"
                    )))
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(ToolError::Failed(format!(
                        "path {raw:?} leaves the sandbox: use a path relative to the sandbox"
                    )))
                }
            }
        }
        let full = self.root.join(&clean);
        // The deepest part of the path that exists, with symlinks resolved, must stay inside.
        let mut existing = full.as_path();
        loop {
            if existing.symlink_metadata().is_ok() {
                break;
            }
            match existing.parent() {
                Some(parent) => existing = parent,
                None => break,
            }
        }
        let real = existing
            .canonicalize()
            .map_err(|err| ToolError::Failed(format!("cannot resolve {raw:?}: {err}")))?;
        if !real.starts_with(&self.root) {
            return Err(ToolError::Failed(format!(
                "path {raw:?} leaves the sandbox through a symlink"
            )));
        }
        Ok(full)
    }

    async fn run(&self, tool: &str, args: Value) -> Result<Value, ToolError> {
        match tool {
            "list_directory" => {
                let raw = optional_str(&args, "path")?.unwrap_or(".");
                let dir = self.resolve(raw)?;
                let entries = std::fs::read_dir(&dir).map_err(|err| io_error("list", raw, &err))?;
                let mut names = Vec::new();
                for entry in entries {
                    let entry = entry.map_err(|err| io_error("list", raw, &err))?;
                    let mut name = entry.file_name().to_string_lossy().into_owned();
                    if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                        name.push('/');
                    }
                    names.push(name);
                }
                names.sort();
                if names.is_empty() {
                    return Ok(text_result("(empty)"));
                }
                Ok(json!({
                    "content": names.iter().map(|name| json!({"type": "text", "text": name})).collect::<Vec<_>>(),
                    "isError": false,
                }))
            }
            "read_file" => {
                let raw = required_str(&args, "path", tool)?;
                let path = self.resolve(raw)?;
                let bytes = read_no_links(&path, raw)?;
                let text = String::from_utf8(bytes)
                    .map_err(|_| ToolError::Failed(format!("{raw} is not a UTF-8 text file")))?;
                Ok(text_result(text))
            }
            "write_file" => {
                let raw = required_str(&args, "path", tool)?;
                let content = required_str(&args, "content", tool)?;
                let path = self.resolve(raw)?;
                if path == self.root {
                    return Err(ToolError::Failed("write_file needs a file name".to_owned()));
                }
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(|err| io_error("write", raw, &err))?;
                }
                write_no_links(&path, raw, content.as_bytes())?;
                Ok(text_result(format!(
                    "Wrote {} bytes to {raw}",
                    content.len()
                )))
            }
            "delete_file" => {
                let raw = required_str(&args, "path", tool)?;
                let path = self.resolve(raw)?;
                let meta = std::fs::symlink_metadata(&path)
                    .map_err(|err| io_error("delete", raw, &err))?;
                if meta.is_dir() {
                    return Err(ToolError::Failed(format!(
                        "{raw} is a folder; delete_file deletes files only"
                    )));
                }
                // A symlink is removed itself, never followed; other special files are refused.
                if !meta.is_symlink() {
                    only_regular(&meta, raw)?;
                }
                std::fs::remove_file(&path).map_err(|err| io_error("delete", raw, &err))?;
                Ok(text_result(format!("Deleted {raw}")))
            }
            other => Err(ToolError::Unknown(other.to_owned())),
        }
    }
}

/// Opens `path` without following a symlink at its last component (the components before it
/// were checked by `resolve`) and without waiting (`O_NONBLOCK`: a named pipe opened for reading
/// would wait for a writer), then refuses what is not a regular file, as the opened file's
/// metadata says (what is at the path may have changed since any earlier look), and a file with
/// more than one hard link: a link made inside the sandbox to a file outside it would otherwise
/// be read or overwritten. `O_NONBLOCK` changes nothing for a regular file's reads and writes.
pub(super) fn open_no_links(
    path: &Path,
    raw: &str,
    action: &str,
    options: &mut std::fs::OpenOptions,
) -> Result<std::fs::File, ToolError> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let file = options
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|err| match err.raw_os_error() {
            Some(libc::ELOOP) => ToolError::Failed(format!(
                "{raw} is a symlink; the file tools do not follow them"
            )),
            // A named pipe without a reader, opened for writing without waiting.
            Some(libc::ENXIO) => std::fs::symlink_metadata(path)
                .ok()
                .and_then(|meta| only_regular(&meta, raw).err())
                .unwrap_or_else(|| {
                    ToolError::Failed(format!(
                        "{raw} is not a regular file; the file tools use regular files only"
                    ))
                }),
            _ => io_error(action, raw, &err),
        })?;
    let meta = file.metadata().map_err(|err| io_error(action, raw, &err))?;
    if meta.is_dir() {
        return Err(ToolError::Failed(format!("{raw} is a folder, not a file")));
    }
    only_regular(&meta, raw)?;
    if meta.nlink() > 1 {
        return Err(ToolError::Failed(format!(
            "{raw} has {} hard links; the file tools refuse to {action} a file linked from elsewhere",
            meta.nlink()
        )));
    }
    Ok(file)
}

/// Refuses anything but a regular file, naming what it is.
pub(super) fn only_regular(meta: &std::fs::Metadata, raw: &str) -> Result<(), ToolError> {
    use std::os::unix::fs::FileTypeExt;
    let kind = meta.file_type();
    let what = if kind.is_file() {
        return Ok(());
    } else if kind.is_fifo() {
        "a named pipe"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    };
    Err(ToolError::Failed(format!(
        "{raw} is {what}; the file tools use regular files only"
    )))
}

fn read_no_links(path: &Path, raw: &str) -> Result<Vec<u8>, ToolError> {
    use std::io::Read;
    let file = open_no_links(path, raw, "read", std::fs::OpenOptions::new().read(true))?;
    let len = file
        .metadata()
        .map_err(|err| io_error("read", raw, &err))?
        .len();
    if len > MAX_READ_BYTES {
        return Err(ToolError::Failed(format!(
            "{raw} is larger than {MAX_READ_BYTES} bytes"
        )));
    }
    let mut bytes = Vec::new();
    file.take(MAX_READ_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|err| io_error("read", raw, &err))?;
    Ok(bytes)
}

fn write_no_links(path: &Path, raw: &str, content: &[u8]) -> Result<(), ToolError> {
    use std::io::Write;
    // No truncate on open: the link checks run before the old content is touched.
    let mut file = open_no_links(
        path,
        raw,
        "write",
        std::fs::OpenOptions::new().write(true).create(true),
    )?;
    file.set_len(0)
        .and_then(|()| file.write_all(content))
        .map_err(|err| io_error("write", raw, &err))
}

fn optional_str<'a>(args: &'a Value, key: &str) -> Result<Option<&'a str>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(ToolError::InvalidArgs(format!("`{key}` must be a string"))),
    }
}

fn required_str<'a>(args: &'a Value, key: &str, tool: &str) -> Result<&'a str, ToolError> {
    optional_str(args, key)?
        .ok_or_else(|| ToolError::InvalidArgs(format!("{tool} needs a string `{key}`")))
}

fn io_error(action: &str, raw: &str, err: &std::io::Error) -> ToolError {
    // io::ErrorKind is open-ended, so compare rather than match.
    let kind = err.kind();
    if kind == std::io::ErrorKind::NotFound {
        ToolError::Failed(format!("no such file or folder: {raw}"))
    } else if kind == std::io::ErrorKind::PermissionDenied {
        ToolError::Failed(format!("permission denied to {action} {raw}"))
    } else {
        ToolError::Failed(format!("could not {action} {raw}: {err}"))
    }
}

impl ToolSource for FileTools {
    fn name(&self) -> &str {
        &self.name
    }

    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ToolSpec>, ToolError>> {
        let specs = self.specs();
        async move { Ok(specs) }.boxed()
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        args: Value,
        _timeout: Duration,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        self.run(tool, args).boxed()
    }

    fn preview(&self, tool: &str, args: &Value) -> Option<(Preview, Option<String>)> {
        preview::preview(self, tool, args)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn tools() -> (tempfile::TempDir, FileTools) {
        let dir = tempfile::tempdir().unwrap();
        let tools = FileTools::new("files", dir.path().join("sandbox")).unwrap();
        (dir, tools)
    }

    #[tokio::test]
    async fn refuses_paths_that_leave_the_sandbox() {
        let (dir, tools) = tools();
        std::fs::write(dir.path().join("secret.txt"), "s").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.path(), tools.root.join("out")).unwrap();
        for (args, expect) in [
            (json!({"path": "../secret.txt"}), "`..` is not allowed"),
            (json!({"path": "/etc/passwd"}), "relative to the sandbox"),
            (json!({"path": "out/secret.txt"}), "through a symlink"),
        ] {
            let err = tools.run("read_file", args).await.unwrap_err();
            assert!(err.to_string().contains(expect), "{err}");
        }
        let err = tools
            .run("write_file", json!({"path": "out/new.txt", "content": "x"}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("through a symlink"), "{err}");
        assert!(!dir.path().join("new.txt").exists());
    }

    #[tokio::test]
    async fn refuses_paths_with_control_characters() {
        let (_dir, tools) = tools();
        for path in [
            "notes/x\npre-commit",
            "a\tb.txt",
            "a\rb",
            "nul\0",
            "del\u{7f}",
            "c1\u{85}",
        ] {
            for (tool, args) in [
                ("write_file", json!({"path": path, "content": "x"})),
                ("read_file", json!({"path": path})),
                ("delete_file", json!({"path": path})),
                ("list_directory", json!({"path": path})),
            ] {
                let err = tools.run(tool, args).await.unwrap_err();
                assert!(
                    err.to_string()
                        .contains("a path may not hold newlines, tabs or other"),
                    "{tool} {path:?}: {err}"
                );
            }
        }
        assert_eq!(
            std::fs::read_dir(&tools.root).unwrap().count(),
            0,
            "nothing written"
        );
    }

    #[tokio::test]
    async fn writes_reads_lists_and_deletes() {
        let (_dir, tools) = tools();
        tools
            .run("write_file", json!({"path": "a/b.txt", "content": "hi"}))
            .await
            .unwrap();
        let read = tools
            .run("read_file", json!({"path": "a/b.txt"}))
            .await
            .unwrap();
        assert_eq!(super::super::tools::result_text(&read), "hi");
        let list = tools.run("list_directory", json!({})).await.unwrap();
        assert_eq!(super::super::tools::result_text(&list), "a/");
        tools
            .run("delete_file", json!({"path": "a/b.txt"}))
            .await
            .unwrap();
        let err = tools
            .run("read_file", json!({"path": "a/b.txt"}))
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "no such file or folder: a/b.txt");
    }

    #[tokio::test]
    async fn refuses_hard_links_and_a_symlink_as_the_last_component() {
        let (dir, tools) = tools();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "keep me").unwrap();
        std::fs::hard_link(&outside, tools.root.join("linked.txt")).unwrap();
        let err = tools
            .run(
                "write_file",
                json!({"path": "linked.txt", "content": "overwritten"}),
            )
            .await
            .unwrap_err();
        assert!(err.to_string().contains("hard links"), "{err}");
        let err = tools
            .run("read_file", json!({"path": "linked.txt"}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("hard links"), "{err}");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep me");

        std::fs::write(tools.root.join("inside.txt"), "inside").unwrap();
        std::os::unix::fs::symlink(tools.root.join("inside.txt"), tools.root.join("alias.txt"))
            .unwrap();
        let err = tools
            .run("write_file", json!({"path": "alias.txt", "content": "x"}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("symlink"), "{err}");
        assert_eq!(
            std::fs::read_to_string(tools.root.join("inside.txt")).unwrap(),
            "inside"
        );
    }

    /// Opens the other end of `fifo` whenever a tool call waits in `open` for it (as one did
    /// before opens stopped waiting), so such a call returns and the test fails instead of
    /// hanging; says whether it ever had to.
    fn rescue_stuck_calls(fifo: PathBuf) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
        use std::os::unix::fs::OpenOptionsExt;
        let rescued = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = rescued.clone();
        std::thread::spawn(move || {
            let mut options = std::fs::OpenOptions::new();
            options.custom_flags(libc::O_NONBLOCK);
            for round in 0..600 {
                std::thread::sleep(Duration::from_millis(100));
                // Opening the writing end without waiting works only while a reader has it open.
                if options.clone().write(true).open(&fifo).is_ok() {
                    flag.store(true, std::sync::atomic::Ordering::SeqCst);
                }
                // A writer waiting for a reader: opening the reading end never waits.
                if round % 50 == 49 {
                    let _ = options.clone().read(true).open(&fifo);
                }
            }
        });
        rescued
    }

    #[tokio::test]
    async fn a_named_pipe_is_refused_without_waiting_for_its_other_end() {
        let (_dir, tools) = tools();
        let fifo = tools.root.join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success(), "mkfifo");
        let rescued = rescue_stuck_calls(fifo.clone());
        let refused = "pipe is a named pipe; the file tools use regular files only";
        let err = tools
            .run("read_file", json!({"path": "pipe"}))
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), refused);
        let err = tools
            .run("write_file", json!({"path": "pipe", "content": "x"}))
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), refused);
        let err = tools
            .run("delete_file", json!({"path": "pipe"}))
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), refused);
        assert!(fifo.exists());
        assert!(
            !rescued.load(std::sync::atomic::Ordering::SeqCst),
            "a call waited for the pipe's other end"
        );
        let list = tools.run("list_directory", json!({})).await.unwrap();
        assert_eq!(super::super::tools::result_text(&list), "pipe");
    }
}
