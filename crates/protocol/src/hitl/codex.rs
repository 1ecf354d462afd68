//! Codex's approval requests (`codex mcp-server`, docs in crates/server/README.md, Codex as a
//! tool): an `elicitation/create` whose form is empty and whose extra `codex_*` fields say what
//! Codex would do, a command (`exec-approval`) or a patch (`patch-approval`). Signoff shows it
//! as an approval ([`Mode::Approval`](super::elicitation::Mode::Approval)): the command and its
//! folder, or the files the patch changes, approved or rejected like a tool call. Codex wants
//! the answer as `{"decision": ...}` ([`decision`]), not as MCP's `ElicitResult`.

use serde_json::{json, Map, Value};

use super::elicitation::{Approval, ElicitationError, Reply};
use super::preview::Preview;
use crate::diff::{self, PREVIEW_CAPS};

/// The field that marks Codex's approval requests, and names which one it is.
pub const MARK: &str = "codex_elicitation";
/// Codex asks to run a command.
pub const EXEC: &str = "exec-approval";
/// Codex asks to apply a patch.
pub const PATCH: &str = "patch-approval";

/// Whether an `elicitation/create` request's params are one of Codex's approval requests that
/// Signoff shows as an approval (an unknown `codex_elicitation` is read as the form it is).
pub fn is_approval(params: &Value) -> bool {
    matches!(params.get(MARK).and_then(Value::as_str), Some(EXEC | PATCH))
}

/// What one of Codex's approval requests shows: for a command, the command line (the script
/// itself when it is a `bash -lc SCRIPT`), its words and folder; for a patch, each file's
/// change, and the folder Codex asks to write in, if any. Codex's reason goes with either.
pub fn approval(params: &Value) -> Result<Approval, ElicitationError> {
    let kind = params
        .get(MARK)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut details = Map::new();
    let keep = |details: &mut Map<String, Value>, key: &str, from: &str| {
        if let Some(value) = params.get(from).filter(|value| !value.is_null()) {
            details.insert(key.to_owned(), value.clone());
        }
    };
    match kind.as_str() {
        EXEC => {
            let argv: Vec<String> = params
                .get("codex_command")
                .and_then(Value::as_array)
                .map(|words| {
                    words
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .filter(|words: &Vec<String>| !words.is_empty())
                .ok_or_else(|| bad("an exec approval without `codex_command`"))?;
            details.insert("command".to_owned(), json!(command_line(&argv)));
            details.insert("argv".to_owned(), json!(argv));
            keep(&mut details, "cwd", "codex_cwd");
            keep(&mut details, "reason", "codex_reason");
        }
        PATCH => {
            let changes = params
                .get("codex_changes")
                .and_then(Value::as_object)
                .ok_or_else(|| bad("a patch approval without `codex_changes`"))?;
            details.insert("changes".to_owned(), Value::Object(changes.clone()));
            keep(&mut details, "grant_root", "codex_grant_root");
            keep(&mut details, "reason", "codex_reason");
        }
        other => return Err(bad(&format!("an unknown Codex approval {other:?}"))),
    }
    Ok(Approval { kind, details })
}

/// The decision Codex expects for a reply (its `ReviewDecision`): an approval runs the command
/// or applies the patch once, a rejection is `denied`. A question nobody answered (expired,
/// cancelled) is `denied` too: Codex's `abort` ends its turn without answering the tool call,
/// which would then hang until its timeout.
pub fn decision(reply: &Reply) -> Value {
    let decision = match reply {
        Reply::Accept(_) => "approved",
        Reply::Decline | Reply::Cancel => "denied",
    };
    json!({ "decision": decision })
}

/// A patch approval's changes as one unified diff, for the card's preview: each file's
/// change as Codex sent it (`{"type": "add", "content"}`, `{"type": "delete", "content"}`,
/// `{"type": "update", "unified_diff", "move_path"}`), capped as any preview. `None` for a
/// command, or a patch with no change this can read.
pub fn patch_preview(approval: &Approval) -> Option<Preview> {
    if approval.kind != PATCH {
        return None;
    }
    let changes = approval.details.get("changes")?.as_object()?;
    let mut text = String::new();
    for (path, change) in changes {
        let field = |name: &str| change.get(name).and_then(Value::as_str);
        let path = path.trim_start_matches('/');
        let one = match field("type") {
            Some("add") => diff::unified(path, "", field("content")?, PREVIEW_CAPS),
            Some("delete") => {
                diff::unified(path, field("content").unwrap_or_default(), "", PREVIEW_CAPS)
            }
            Some("update") => {
                let to = field("move_path").map_or(path, |to| to.trim_start_matches('/'));
                format!("--- a/{path}\n+++ b/{to}\n{}", field("unified_diff")?)
            }
            _ => continue,
        };
        text.push_str(&one);
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    if text.is_empty() {
        return None;
    }
    Some(Preview::Diff(capped(&text)))
}

/// `text` within the preview's caps, the lines past them counted.
fn capped(text: &str) -> String {
    let mut out = String::new();
    let mut more = 0;
    for line in text.split_inclusive('\n') {
        let full = out.lines().count() >= PREVIEW_CAPS.max_lines
            || out.len() + line.len() > PREVIEW_CAPS.max_bytes;
        if more > 0 || full {
            more += 1;
        } else {
            out.push_str(line);
        }
    }
    if more > 0 {
        out.push_str(&format!("… {more} more lines\n"));
    }
    out
}

fn bad(reason: &str) -> ElicitationError {
    ElicitationError::BadApproval(reason.to_owned())
}

/// A command's words as one line a person reads: a shell's `-c`/`-lc` script as the script,
/// anything else quoted where a shell would need it.
fn command_line(argv: &[String]) -> String {
    if let [shell, flag, script] = argv {
        let name = shell.rsplit('/').next().unwrap_or(shell);
        if matches!(name, "bash" | "sh" | "zsh" | "dash") && matches!(flag.as_str(), "-c" | "-lc") {
            return script.clone();
        }
    }
    argv.iter()
        .map(|word| quoted(word))
        .collect::<Vec<_>>()
        .join(" ")
}

fn quoted(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hitl::elicitation::{AskedBy, Elicitation, Mode};

    /// The params Codex 0.153.4 sent for an exec approval (crates/server/tests/codex, recorded).
    fn exec() -> Value {
        json!({
            "message": "Allow Codex to run `/bin/bash -lc 'touch marker'` in `/tmp/probe/work`?",
            "requestedSchema": {"type": "object", "properties": {}},
            "threadId": "01a250d3-5b6a-74d2-8689-2051e3ef1aab",
            "codex_elicitation": "exec-approval",
            "codex_mcp_tool_call_id": "3",
            "codex_event_id": "01a250d3-5b7c-7520-8fed-351771923b4d",
            "codex_call_id": "call_scripted_1",
            "codex_command": ["/bin/bash", "-lc", "touch marker"],
            "codex_cwd": "/tmp/probe/work",
            "codex_parsed_cmd": [{"type": "unknown", "cmd": "touch marker"}],
        })
    }

    #[test]
    fn an_exec_approval_shows_its_command_and_folder_and_reads_back_from_its_card() {
        assert!(is_approval(&exec()));
        let elicitation = Elicitation::from_request(&exec()).unwrap();
        let Mode::Approval(approval) = &elicitation.mode else {
            panic!("an approval, not {:?}", elicitation.mode)
        };
        assert_eq!(approval.kind, EXEC);
        assert_eq!(approval.details["command"], json!("touch marker"));
        assert_eq!(approval.details["cwd"], json!("/tmp/probe/work"));
        let asked_by = AskedBy {
            server: "codex".into(),
            tool: "codex".into(),
            call_id: "call_1".into(),
        };
        let args = elicitation.to_args(&asked_by);
        assert_eq!(args["mode"], json!("approval"));
        assert_eq!(args["command"], json!("touch marker"));
        assert!(args.get("questions").is_none(), "approved, not answered");
        assert_eq!(Elicitation::from_args(&args), Some((elicitation, asked_by)));
    }

    #[test]
    fn a_patch_approval_shows_each_file_change_as_a_diff() {
        // As Codex 0.153.4 sent it (recorded), with an update and a reason beside the add.
        let params = json!({
            "message": "Allow Codex to apply proposed code changes?",
            "requestedSchema": {"type": "object", "properties": {}},
            "threadId": "01a250de-1ea2-7f13-8526-a1c8acac9c02",
            "codex_elicitation": "patch-approval",
            "codex_mcp_tool_call_id": "3",
            "codex_event_id": "01a250de-1ec4-73e3-8bd3-b0cf256ee4f3",
            "codex_call_id": "call_scripted_1",
            "codex_reason": "fix the typo",
            "codex_changes": {
                "/w/new.txt": {"type": "add", "content": "hello\n"},
                "/w/a.txt": {"type": "update", "unified_diff": "@@ -1 +1 @@\n-teh\n+the\n", "move_path": null},
            },
        });
        let Mode::Approval(approval) = Elicitation::from_request(&params).unwrap().mode else {
            panic!("an approval")
        };
        assert_eq!(approval.kind, PATCH);
        assert_eq!(approval.details["reason"], json!("fix the typo"));
        assert_eq!(
            approval.details["changes"]["/w/new.txt"]["type"],
            json!("add")
        );
        let Some(Preview::Diff(text)) = patch_preview(&approval) else {
            panic!("a diff")
        };
        assert!(
            text.contains("--- a/w/a.txt\n+++ b/w/a.txt\n@@ -1 +1 @@\n-teh\n+the\n"),
            "{text}"
        );
        assert!(
            text.contains("+++ b/w/new.txt\n@@ -0,0 +1 @@\n+hello\n"),
            "{text}"
        );
        let mut broken = params.clone();
        broken["codex_changes"] = json!(null);
        assert!(Elicitation::from_request(&broken).is_err());
    }

    #[test]
    fn replies_become_the_decisions_codex_expects() {
        assert_eq!(
            decision(&Reply::Accept(None)),
            json!({"decision": "approved"})
        );
        assert_eq!(decision(&Reply::Decline), json!({"decision": "denied"}));
        assert_eq!(decision(&Reply::Cancel), json!({"decision": "denied"}));
    }

    #[test]
    fn command_words_read_as_one_line() {
        let words = |list: &[&str]| list.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
        assert_eq!(command_line(&words(&["bash", "-c", "ls -la"])), "ls -la");
        assert_eq!(
            command_line(&words(&["rm", "-rf", "my dir", "it's"])),
            r"rm -rf 'my dir' 'it'\''s'"
        );
        // Another Codex kind, or none, is not an approval: it is read as the form it is.
        let mut other = exec();
        other["codex_elicitation"] = json!("user-input");
        assert!(!is_approval(&other));
        assert!(matches!(
            Elicitation::from_request(&other).unwrap().mode,
            Mode::Form { .. }
        ));
    }
}
