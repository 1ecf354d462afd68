//! An ACP agent's permission requests as Signoff calls: each is named by its ACP tool kind
//! (`edit`, `execute`, `read`, …, the same for every agent, so one rule or policy serves them
//! all) with the tool's title, its own input, the paths it names and the changes it makes as
//! arguments. [`AcpCalls`] is the tool source that answers for every kind: "running" an allowed
//! call is telling the agent yes, which it then acts on itself.

use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};
use signoff_protocol::diff::{unified, PREVIEW_CAPS};
use signoff_protocol::hitl::Preview;

use super::wire::ToolCall;
use crate::agent::asked::allowed;
use crate::agent::model::ModelToolCall;
use crate::agent::tools::{AnyNameSource, ToolError, ToolSource, ToolSpec};

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

/// The tool source of an ACP agent's permission requests.
#[derive(Debug)]
pub struct AcpCalls {
    name: String,
}

impl AcpCalls {
    pub fn new(name: impl Into<String>) -> AcpCalls {
        AcpCalls { name: name.into() }
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
        args: Value,
        _timeout: std::time::Duration,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move { Ok(allowed(&args)) })
    }

    /// The changes the call makes, as one diff; a command shows as its arguments.
    fn preview(&self, _tool: &str, args: &Value) -> Option<(Preview, Option<String>)> {
        let changes = args.get("changes")?.as_array()?;
        let diff = changes
            .iter()
            .map(|change| {
                let path = change.get("path")?.as_str()?.trim_start_matches('/');
                let old = change.get("oldText").and_then(Value::as_str).unwrap_or("");
                let new = change.get("newText")?.as_str()?;
                Some(unified(path, old, new, PREVIEW_CAPS))
            })
            .collect::<Option<Vec<_>>>()?
            .concat();
        Some((Preview::Diff(diff), None))
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
        let proposed = proposed(&call);
        assert_eq!(proposed.name, "edit");
        assert_eq!(proposed.args["input"]["content"], "hello\n");
        let Some((Preview::Diff(diff), None)) = AcpCalls::new("c").preview("edit", &proposed.args)
        else {
            panic!()
        };
        assert!(diff.contains("+hello"), "{diff}");
        let bash = proposed_of("execute", json!({"command": "ls"}));
        assert!(AcpCalls::new("c").preview("execute", &bash.args).is_none());
        assert!(!AcpCalls::new("c").takes_edits());
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
