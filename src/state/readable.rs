//! A call's arguments as a person reads them, beside the JSON: a shell command as a command
//! line, and a file's new content as text with its real line breaks (the JSON shows `\n`).
//! Edits are diffs already (`preview`). A coding agent's call over ACP holds its tool's own
//! input under `input` (`{"title": …, "input": {"command": …}, …}`), read the same way.

use serde_json::Value;

/// What a card shows above its arguments: a title and the text under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readable {
    pub title: String,
    pub text: String,
}

/// The readable form of a call's arguments, when they have one: a `command` string (Claude
/// Code's `Bash`, a shell tool), or a `content` string with line breaks (a `Write`), titled
/// with its `file_path` or `path`; for a coding agent's call over ACP, those of its tool's
/// `input`. Invisible characters are written as escapes, as in the JSON.
pub fn readable(args: &Value) -> Option<Readable> {
    let args = acp_input(args).unwrap_or(args);
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    if let Some(command) = text("command") {
        return Some(Readable {
            title: "Command".to_owned(),
            text: super::hidden::reveal(&format!("$ {command}")),
        });
    }
    let content = text("content").filter(|content| content.contains('\n'))?;
    let title = match text("file_path").or_else(|| text("path")) {
        Some(path) => format!("New content of {path}"),
        None => "New content".to_owned(),
    };
    Some(Readable {
        title: super::hidden::reveal(&title),
        text: super::hidden::reveal(content),
    })
}

/// The tool's own input of a coding agent's permission request over ACP: arguments with a
/// `title` string and an `input` object (the server's `execute`, `edit`, … calls).
fn acp_input(args: &Value) -> Option<&Value> {
    let input = args.get("input").filter(|input| input.is_object())?;
    args.get("title")
        .is_some_and(Value::is_string)
        .then_some(input)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_command_reads_as_a_command_line() {
        let shown =
            readable(&json!({"command": "kubectl rollout restart deploy/api", "description": "x"}));
        assert_eq!(
            shown,
            Some(Readable {
                title: "Command".into(),
                text: "$ kubectl rollout restart deploy/api".into()
            })
        );
    }

    #[test]
    fn a_files_content_reads_with_its_line_breaks_and_its_path() {
        let shown =
            readable(&json!({"file_path": "/srv/prod.yaml", "content": "a: 1\nb: 2\n"})).unwrap();
        assert_eq!(shown.title, "New content of /srv/prod.yaml");
        assert_eq!(shown.text, "a: 1\nb: 2\n");
    }

    #[test]
    fn one_line_content_and_other_arguments_are_left_to_the_json() {
        assert_eq!(readable(&json!({"path": "a.txt", "content": "hi"})), None);
        assert_eq!(readable(&json!({"url": "https://example.com"})), None);
    }

    #[test]
    fn a_coding_agents_command_reads_from_its_tools_input() {
        let shown = readable(&json!({
            "title": "`ls -la > listing.txt`",
            "input": {"command": "ls -la > listing.txt", "description": "List files"},
            "locations": [],
        }));
        assert_eq!(
            shown,
            Some(Readable {
                title: "Command".into(),
                text: "$ ls -la > listing.txt".into()
            })
        );
    }

    #[test]
    fn a_coding_agents_write_reads_from_its_tools_input() {
        let shown = readable(&json!({
            "title": "Write /abs/notes.md",
            "input": {"file_path": "/abs/notes.md", "content": "# Notes\n\n- one\n"},
            "locations": [{"path": "/abs/notes.md"}],
            "changes": [{"path": "/abs/notes.md", "oldText": null, "newText": "# Notes\n\n- one\n"}],
        }))
        .unwrap();
        assert_eq!(shown.title, "New content of /abs/notes.md");
        assert_eq!(shown.text, "# Notes\n\n- one\n");
        let hidden = readable(&json!({"title": "x", "input": {"command": "rm\u{202e}txt"}}));
        assert!(!hidden.unwrap().text.contains('\u{202e}'));
    }

    #[test]
    fn an_input_is_read_only_in_the_acp_shape() {
        // No title beside it, or a title that is not a string: some tool's own `input`.
        assert_eq!(readable(&json!({"input": {"command": "ls"}})), None);
        assert_eq!(
            readable(&json!({"title": 1, "input": {"command": "ls"}})),
            None
        );
        // A string `input` is not a tool's input.
        assert_eq!(
            readable(&json!({"title": "t", "input": "ls", "command": "pwd"})),
            Some(Readable {
                title: "Command".into(),
                text: "$ pwd".into()
            })
        );
        // An ACP call whose tool has no command or content: left to the JSON.
        assert_eq!(
            readable(&json!({"title": "Fetch", "input": {"url": "https://example.com"}})),
            None
        );
    }

    #[test]
    fn hidden_characters_stay_visible() {
        let shown = readable(&json!({"command": "rm\u{202e}txt"})).unwrap();
        assert!(!shown.text.contains('\u{202e}'), "{shown:?}");
    }
}
