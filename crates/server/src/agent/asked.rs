//! Calls asked for from outside: an MCP client's call through the gateway, a program's
//! permission prompt (Claude Code's `--permission-prompt-tool`), a REST approval request. Such a
//! task is one call, not a conversation: its first transcript entry carries the call
//! ([`AskedCall`]), and the runner takes no model turn for it. [`AskedModel`] stands in for the
//! agent's model: it proposes the asked call (so it is screened, held, decided, audited and run
//! exactly as a model's call is), and once the call has its result it ends the task. What the
//! asker gets back is read from the transcript ([`outcome`]).
//!
//! A permission prompt asks about a tool this server does not run (Claude Code's `Bash`,
//! `Write`, …): [`PermissionPrompts`] is the tool source that answers for any such name, and
//! "running" one of its calls is allowing it, with the arguments that were approved.

use futures_util::future::BoxFuture;
use futures_util::stream;
use futures_util::StreamExt;
use serde_json::{json, Value};
use signoff_protocol::diff::{unified, PREVIEW_CAPS};
use signoff_protocol::hitl::Preview;

pub mod call;
pub mod client;

use super::model::{ChatMessage, Model, ModelEvent, ModelRequest, ModelStream, ModelToolCall};
use super::tools::{result_text, text_result, AnyNameSource, ToolError, ToolSource, ToolSpec};

pub use call::{AskedCall, MAX_TOOL_NAME_BYTES};

/// The asked call of a task's transcript, if the task is one.
pub fn asked_call(transcript: &[ChatMessage]) -> Option<&AskedCall> {
    match transcript.first() {
        Some(ChatMessage::User { asked, .. }) => asked.as_ref(),
        Some(ChatMessage::Assistant { .. } | ChatMessage::Tool { .. }) | None => None,
    }
}

/// What the asker of a call is told once it is settled.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The call was allowed and ran with `args` (the approver's edit, if any); `result` is the
    /// tool's result (for a permission prompt: the allowing itself).
    Ran { args: Value, result: Value },
    /// The call was rejected (by a person, a rule or a policy), with the reason the asker reads.
    Rejected { reason: String },
    /// Nobody decided in time: it did not run.
    NotRun { reason: String },
}

/// The settled outcome of an asked call, once its result is in the transcript.
pub fn outcome(transcript: &[ChatMessage]) -> Option<Outcome> {
    let args = transcript.iter().find_map(|message| match message {
        ChatMessage::Assistant { tool_calls, .. } => tool_calls.first().map(|call| &call.args),
        ChatMessage::User { .. } | ChatMessage::Tool { .. } => None,
    })?;
    transcript.iter().find_map(|message| match message {
        ChatMessage::Tool { response, .. } => Some(settled(args, response)),
        ChatMessage::User { .. } | ChatMessage::Assistant { .. } => None,
    })
}

/// A call's stored result read as what its asker is told: a rejection (`{"status":"rejected",
/// "reason":…}`), or the result of the call that ran.
pub fn settled(args: &Value, response: &Value) -> Outcome {
    let text = |key: &str| {
        response
            .get(key)
            .and_then(Value::as_str)
            .filter(|text| !text.trim().is_empty())
            .map(str::to_owned)
    };
    match response.get("status").and_then(Value::as_str) {
        Some("rejected") => Outcome::Rejected {
            reason: text("reason").unwrap_or_else(|| "rejected without a reason".into()),
        },
        // A rule or a policy refused it; its message names which.
        Some("denied") => Outcome::Rejected {
            reason: text("message").unwrap_or_else(|| "denied by a rule".into()),
        },
        Some("expired") => Outcome::NotRun {
            reason: text("message").unwrap_or_else(|| "nobody decided in time".into()),
        },
        Some(_) | None => Outcome::Ran {
            args: args.clone(),
            result: response.clone(),
        },
    }
}

/// The model of an asked task: its first turn proposes the asked call; its next turn, once the
/// call has its result, ends the task with a line saying what happened.
#[derive(Debug, Default)]
pub struct AskedModel;

impl Model for AskedModel {
    fn turn(&self, request: ModelRequest) -> ModelStream {
        let event = match request.messages.last() {
            Some(ChatMessage::User {
                asked: Some(asked), ..
            }) => ModelEvent::ToolCall(ModelToolCall::new(
                asked.asker_id.clone().unwrap_or_default(),
                asked.name.clone(),
                asked.args.clone(),
            )),
            Some(ChatMessage::Tool { name, response, .. }) => {
                ModelEvent::Message(closing_line(name, response))
            }
            Some(ChatMessage::User { .. } | ChatMessage::Assistant { .. }) | None => {
                ModelEvent::Message("This request is settled.".into())
            }
        };
        stream::iter([Ok(event)]).boxed()
    }
}

/// What the task's last message says of its call.
fn closing_line(name: &str, response: &Value) -> String {
    match settled(&Value::Null, response) {
        Outcome::Rejected { reason } => format!("{name} was rejected: {reason}"),
        Outcome::NotRun { reason } => format!("{name} did not run: {reason}"),
        Outcome::Ran { result, .. } if result.get("isError") == Some(&Value::Bool(true)) => {
            format!("{name} failed: {}", result_text(&result))
        }
        Outcome::Ran { .. } => format!("{name} was allowed."),
    }
}

/// The tool source of permission prompts: it answers for any tool name a program asks about,
/// and "running" a call allows it with the arguments that were approved (the program runs the
/// tool itself).
#[derive(Debug)]
pub struct PermissionPrompts {
    name: String,
}

impl PermissionPrompts {
    pub fn new(name: impl Into<String>) -> PermissionPrompts {
        PermissionPrompts { name: name.into() }
    }

    /// The spec a prompted tool gets: no description, any arguments object.
    pub fn spec(&self, tool: &str) -> ToolSpec {
        ToolSpec {
            name: tool.to_owned(),
            description: String::new(),
            input_schema: json!({"type": "object"}),
            source: self.name.clone(),
            hints: Default::default(),
        }
    }
}

/// The result a permission prompt's allowed call gets: what the program is told to run.
pub fn allowed(args: &Value) -> Value {
    text_result(json!({"behavior": "allow", "updatedInput": args}).to_string())
}

impl AnyNameSource for PermissionPrompts {
    fn spec(&self, name: &str) -> ToolSpec {
        PermissionPrompts::spec(self, name)
    }
}

impl ToolSource for PermissionPrompts {
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

    /// An `Edit` (or each edit of a `MultiEdit`) shown as the diff it makes; other prompts
    /// show their arguments (the file a `Write` replaces is on the asker's machine, not here).
    fn preview(&self, tool: &str, args: &Value) -> Option<(Preview, Option<String>)> {
        let path = args.get("file_path").and_then(Value::as_str)?;
        let edit_diff = |edit: &Value| {
            let old = edit.get("old_string").and_then(Value::as_str)?;
            let new = edit.get("new_string").and_then(Value::as_str)?;
            // The strings are pieces of a file, not whole files: no "no newline at end".
            let line = |text: &str| match text.ends_with('\n') {
                true => text.to_owned(),
                false => format!("{text}\n"),
            };
            let path = path.trim_start_matches('/');
            Some(unified(path, &line(old), &line(new), PREVIEW_CAPS))
        };
        let diff = match tool {
            "Edit" => edit_diff(args)?,
            "MultiEdit" => args
                .get("edits")?
                .as_array()?
                .iter()
                .map(edit_diff)
                .collect::<Option<Vec<_>>>()?
                .concat(),
            _ => return None,
        };
        Some((Preview::Diff(diff), None))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn asked_transcript() -> Vec<ChatMessage> {
        vec![ChatMessage::User {
            text: "Bash".into(),
            message_id: None,
            asked: Some(AskedCall::checked("Bash", json!({"command": "ls"}), None).unwrap()),
        }]
    }

    #[test]
    fn only_a_named_tool_with_an_arguments_object_can_be_asked_for() {
        assert!(AskedCall::checked("", json!({}), None).is_err());
        assert!(AskedCall::checked("Bash", json!("ls"), None).is_err());
        assert!(AskedCall::checked("Ba\nsh", json!({}), None).is_err());
        assert!(AskedCall::checked(&"x".repeat(201), json!({}), None).is_err());
        assert!(AskedCall::checked("Bash", json!({"command": "ls"}), None).is_ok());
    }

    #[test]
    fn the_first_turn_proposes_the_asked_call_and_the_next_one_ends_the_task() {
        let mut transcript = asked_transcript();
        assert!(asked_call(&transcript).is_some());
        let request = |messages: Vec<ChatMessage>| ModelRequest {
            context_id: "c".into(),
            instruction: String::new(),
            messages,
            tools: Vec::new(),
        };
        let first: Vec<_> =
            futures_executor(AskedModel.turn(request(transcript.clone())).collect());
        let [Ok(ModelEvent::ToolCall(call))] = first.as_slice() else {
            panic!("{first:?}")
        };
        assert_eq!(
            (call.name.as_str(), &call.args),
            ("Bash", &json!({"command": "ls"}))
        );
        transcript.push(ChatMessage::Assistant {
            text: String::new(),
            tool_calls: vec![call.clone()],
        });
        transcript.push(ChatMessage::Tool {
            call_id: call.id.clone(),
            name: "Bash".into(),
            response: json!({"status": "rejected", "reason": "not on prod"}),
            edited_from: None,
            reply_message_id: None,
        });
        let next: Vec<_> = futures_executor(AskedModel.turn(request(transcript.clone())).collect());
        assert!(
            matches!(next.as_slice(), [Ok(ModelEvent::Message(line))] if line.contains("not on prod"))
        );
        assert_eq!(
            outcome(&transcript),
            Some(Outcome::Rejected {
                reason: "not on prod".into()
            })
        );
    }

    #[test]
    fn an_allowed_prompt_runs_with_the_approved_arguments() {
        let edited = json!({"command": "ls -l"});
        let transcript = vec![
            asked_transcript().remove(0),
            ChatMessage::Assistant {
                text: String::new(),
                tool_calls: vec![ModelToolCall::new("call_1", "Bash", edited.clone())],
            },
            ChatMessage::Tool {
                call_id: "call_1".into(),
                name: "Bash".into(),
                response: allowed(&edited),
                edited_from: Some(json!({"command": "ls"})),
                reply_message_id: None,
            },
        ];
        let Some(Outcome::Ran { args, result }) = outcome(&transcript) else {
            panic!()
        };
        assert_eq!(args, edited);
        let told: Value = serde_json::from_str(&result_text(&result)).unwrap();
        assert_eq!(told, json!({"behavior": "allow", "updatedInput": edited}));
    }

    #[test]
    fn a_calls_gist_names_its_tool_and_its_telling_argument() {
        let call = |name: &str, args: Value| AskedCall::checked(name, args, None).unwrap();
        assert_eq!(
            call("Bash", json!({"command": "ls\nrm x"})).gist(),
            "Bash ls"
        );
        assert_eq!(
            call("Write", json!({"file_path": "/a/b", "content": "x"})).gist(),
            "Write /a/b"
        );
        assert_eq!(call("Task", json!({"prompt": "x"})).gist(), "Task");
        let long = call("Bash", json!({"command": "x".repeat(100)})).gist();
        assert_eq!(long.chars().count(), 85, "{long}");
    }

    #[test]
    fn an_edit_prompt_is_shown_as_the_diff_it_makes() {
        let prompts = PermissionPrompts::new("claude-code");
        let args = json!({"file_path": "/w/notes.txt", "old_string": "line two",
                          "new_string": "line 2", "replace_all": false});
        let Some((Preview::Diff(diff), None)) = prompts.preview("Edit", &args) else {
            panic!()
        };
        assert!(
            diff.contains("-line two") && diff.contains("+line 2"),
            "{diff}"
        );
        assert!(prompts
            .preview("Write", &json!({"file_path": "/w/a", "content": "x"}))
            .is_none());
        assert!(prompts
            .preview("Edit", &json!({"file_path": "/w/a"}))
            .is_none());
    }

    /// Runs a future to its end on this thread (the asked model's streams are ready at once).
    fn futures_executor<F: std::future::Future>(future: F) -> F::Output {
        futures_util::FutureExt::now_or_never(future).unwrap()
    }
}
