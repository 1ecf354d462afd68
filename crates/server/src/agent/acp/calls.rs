//! An ACP agent's permission requests as Signoff calls: each is named by its ACP tool kind
//! (`edit`, `execute`, `read`, …, the same for every agent, so one rule or policy serves them
//! all) with the tool's title, its own input, the paths it names and the changes it makes as
//! arguments. [`AcpCalls`] is the tool source that answers for every kind: "running" an allowed
//! call is telling the agent yes, which it then acts on itself.

use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};
use signoff_protocol::diff::{unified, PREVIEW_CAPS};
use signoff_protocol::hitl::Preview;

use std::path::{Path, PathBuf};

use super::wire::ToolCall;
use crate::agent::model::ModelToolCall;
use crate::agent::tools::{text_result, AnyNameSource, ToolError, ToolSource, ToolSpec};

/// The call Signoff decides for one permission request.
pub fn proposed(call: &ToolCall) -> ModelToolCall {
    let mut args = Map::new();
    args.insert(
        "title".into(),
        json!(call.title.clone().unwrap_or_default()),
    );
    args.insert(
        "input".into(),
        call.raw_input.clone().unwrap_or_else(|| json!({})),
    );
    if !call.locations.is_empty() {
        args.insert("locations".into(), json!(call.locations));
    }
    if !call.diffs.is_empty() {
        let changes: Vec<Value> = call
            .diffs
            .iter()
            .map(|(path, old, new)| json!({"path": path, "oldText": old, "newText": new}))
            .collect();
        args.insert("changes".into(), Value::Array(changes));
    }
    let kind = call.kind.clone().unwrap_or_else(|| "other".into());
    ModelToolCall::new(call.id.clone(), kind, Value::Object(args))
}

/// The changes a call's arguments hold (`changes`): one new file as such, else one diff of them
/// all (a new file among them diffed against nothing), each path shown relative to the working
/// folder `cwd` when it is inside it. A command has none.
pub fn changes_preview(cwd: &Path, args: &Value) -> Option<Preview> {
    let changes = args.get("changes")?.as_array()?;
    if let [only] = changes.as_slice() {
        if only.get("oldText").is_none_or(Value::is_null) {
            let new = only.get("newText")?.as_str()?;
            return Some(Preview::NewFile {
                size: new.len() as u64,
            });
        }
    }
    let shown = |path: &str| {
        Path::new(path)
            .strip_prefix(cwd)
            .map(|inside| inside.to_string_lossy().into_owned())
            .unwrap_or_else(|_| path.trim_start_matches('/').to_owned())
    };
    let diff = changes
        .iter()
        .map(|change| {
            let path = shown(change.get("path")?.as_str()?);
            let old = change.get("oldText").and_then(Value::as_str).unwrap_or("");
            let new = change.get("newText")?.as_str()?;
            Some(unified(&path, old, new, PREVIEW_CAPS))
        })
        .collect::<Option<Vec<_>>>()?
        .concat();
    Some(Preview::Diff(diff))
}

/// The tool source of an ACP agent's permission requests.
#[derive(Debug)]
pub struct AcpCalls {
    name: String,
    /// The agent's working folder: a change's path is shown relative to it.
    cwd: PathBuf,
}

/// What an allowed call's result says: the agent runs the tool itself once told yes, and
/// reports how it went in the chat.
pub const ALLOWED: &str = "Allowed: the coding agent runs it now.";

impl AcpCalls {
    pub fn new(name: impl Into<String>, cwd: PathBuf) -> AcpCalls {
        AcpCalls {
            name: name.into(),
            cwd,
        }
    }
}

impl AnyNameSource for AcpCalls {
    fn spec(&self, name: &str) -> ToolSpec {
        ToolSpec {
            name: name.to_owned(),
            description: String::new(),
            input_schema: json!({"type": "object"}),
            source: self.name.clone(),
            hints: Default::default(),
        }
    }
}

impl ToolSource for AcpCalls {
    fn name(&self) -> &str {
        &self.name
    }

    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ToolSpec>, ToolError>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn call<'a>(
        &'a self,
        _tool: &'a str,
        _args: Value,
        _timeout: std::time::Duration,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move { Ok(text_result(ALLOWED)) })
    }

    fn preview(&self, _tool: &str, args: &Value) -> Option<(Preview, Option<String>)> {
        changes_preview(&self.cwd, args).map(|preview| (preview, None))
    }

    fn takes_edits(&self) -> bool {
        false
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_write_is_an_edit_call_shown_as_its_diff() {
        let call = ToolCall {
            id: "toolu_1".into(),
            title: Some("Write /w/a.txt".into()),
            kind: Some("edit".into()),
            raw_input: Some(json!({"file_path": "/w/a.txt", "content": "hello\n"})),
            locations: vec!["/w/a.txt".into()],
            diffs: vec![("/w/a.txt".into(), None, "hello\n".into())],
            ..ToolCall::default()
        };
        let calls = AcpCalls::new("c", PathBuf::from("/w"));
        let asked = proposed(&call);
        assert_eq!(asked.name, "edit");
        assert_eq!(asked.args["input"]["content"], "hello\n");
        assert_eq!(
            calls
                .preview("edit", &asked.args)
                .map(|(preview, _)| preview),
            Some(Preview::NewFile { size: 6 })
        );
        let changed = ToolCall {
            diffs: vec![("/w/a.txt".into(), Some("hi\n".into()), "hello\n".into())],
            ..call
        };
        let Some((Preview::Diff(diff), None)) = calls.preview("edit", &proposed(&changed).args)
        else {
            panic!()
        };
        assert!(diff.contains("+hello") && diff.contains("-hi"), "{diff}");
        assert!(diff.contains("a/a.txt"), "shown inside its folder: {diff}");
        let bash = proposed_of("execute", json!({"command": "ls"}));
        assert!(calls.preview("execute", &bash.args).is_none());
        assert!(!calls.takes_edits());
    }

    fn proposed_of(kind: &str, input: Value) -> ModelToolCall {
        proposed(&ToolCall {
            id: "t".into(),
            kind: Some(kind.into()),
            raw_input: Some(input),
            ..ToolCall::default()
        })
    }

    #[test]
    fn a_call_of_no_kind_is_other() {
        assert_eq!(proposed(&ToolCall::default()).name, "other");
    }
}
