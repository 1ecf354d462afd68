//! The model seam: one trait for every language model (the offline scripted one, an
//! OpenAI-compatible one, and the conformance agent's), and the transcript type that is the model's memory of a task.

use futures_util::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::tools::ToolSpec;

/// A tool call as the model proposed it.
///
/// A model hands the runtime its calls with the ids it chose; the runtime then gives each call
/// an id of its own ([`ModelToolCall::assign_ids`]) before anything is announced or recorded. The
/// model's id is untrusted: it may be empty, repeated, or shaped like an id the server composes
/// (a subagent's call nested under an agent-tool call is `{call}/{subagent call}`), so it never
/// names a call anywhere but in the model's own transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelToolCall {
    /// The call's id: the model's until the runtime assigns its own, then the server's, which
    /// the event log, the call records, the batch and every decision use.
    pub id: String,
    /// The id the model gave the call, kept only so the model reads its own transcript back in
    /// its own ids. `None` in transcripts stored before ids were assigned, and when the model's
    /// id could not serve (empty, repeated in its turn, or too long): the model then reads the
    /// server's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_id: Option<String>,
    pub name: String,
    pub args: Value,
}

/// The longest model id kept as a label; a longer one is replaced by the server's id in what the
/// model reads back (it would be resent on every turn).
const MAX_MODEL_ID_BYTES: usize = 256;

impl ModelToolCall {
    /// A call as a model proposes it, with the model's id.
    pub fn new(id: impl Into<String>, name: impl Into<String>, args: Value) -> ModelToolCall {
        ModelToolCall {
            id: id.into(),
            model_id: None,
            name: name.into(),
            args,
        }
    }

    /// The id the model knows this call by: its own where it was kept, else the server's.
    pub fn model_label(&self) -> &str {
        self.model_id.as_deref().unwrap_or(&self.id)
    }

    /// Gives the calls of one model turn the server's ids `call_{n}`, numbered on from `earlier`
    /// (the calls the conversation holds already), skipping any id `taken` says is in use. The
    /// model's ids are kept as the labels of what the model reads back only when every one of
    /// them can serve (none empty, repeated in the turn, or too long); else the whole turn reads
    /// back in the server's ids, so the model never sees two calls under one id.
    pub fn assign_ids(calls: &mut [ModelToolCall], earlier: usize, taken: &dyn Fn(&str) -> bool) {
        let labels_serve = {
            let mut seen = std::collections::HashSet::new();
            calls.iter().all(|call| {
                !call.id.is_empty()
                    && call.id.len() <= MAX_MODEL_ID_BYTES
                    && seen.insert(call.id.as_str())
            })
        };
        let mut next = earlier;
        for call in calls.iter_mut() {
            let id = loop {
                next += 1;
                let id = format!("call_{next}");
                if !taken(&id) {
                    break id;
                }
            };
            let model_id = std::mem::replace(&mut call.id, id);
            call.model_id = labels_serve.then_some(model_id);
        }
    }
}

impl ModelToolCall {
    /// [`ModelToolCall::assign_ids`] for a model that reports its calls as it runs them: each
    /// call whose model id can serve as a label is named [`ran_id`] of it (never a `call_{n}` nor
    /// a nested call's id), the one id a report of the same call before it was asked also got;
    /// a call whose id cannot serve, or whose name is `taken`, is numbered as any model's.
    pub fn assign_ran_ids(
        calls: &mut [ModelToolCall],
        earlier: usize,
        taken: &dyn Fn(&str) -> bool,
    ) {
        let mut seen = std::collections::HashSet::new();
        let serves: Vec<bool> = calls
            .iter()
            .map(|call| {
                !call.id.is_empty()
                    && call.id.len() <= MAX_MODEL_ID_BYTES
                    && seen.insert(call.id.clone())
            })
            .collect();
        let named: Vec<Option<String>> = calls
            .iter()
            .zip(&serves)
            .map(|(call, serves)| {
                let id = ran_id(&call.id);
                (*serves && !taken(&id)).then_some(id)
            })
            .collect();
        let mut numbered: Vec<ModelToolCall> = calls
            .iter()
            .zip(&named)
            .filter(|(_, named)| named.is_none())
            .map(|(call, _)| call.clone())
            .collect();
        Self::assign_ids(&mut numbered, earlier, taken);
        let mut numbered = numbered.into_iter();
        for ((call, named), serves) in calls.iter_mut().zip(named).zip(serves) {
            match named {
                Some(id) => call.model_id = Some(std::mem::replace(&mut call.id, id)),
                None => {
                    if let Some(assigned) = numbered.next() {
                        *call = assigned;
                    }
                    // A label that could not serve is never read back as another call's.
                    if !serves {
                        call.model_id = None;
                    }
                }
            }
        }
    }
}

/// One entry of the conversation the model sees. Stored per task as JSON, so a restarted server
/// resumes with exactly what the model saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    User {
        text: String,
        /// The A2A `messageId` the person's client gave the message (absent in transcripts
        /// stored before it was kept). Models other than the conformance agent ignore it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        /// The call this task asks for, when it arrived from outside rather than from a person
        /// talking to the model (`agent::asked`). Models ignore it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        asked: Option<super::asked::call::AskedCall>,
    },
    Assistant {
        text: String,
        #[serde(default)]
        tool_calls: Vec<ModelToolCall>,
    },
    /// The result of one tool call; a rejection is `{"status":"rejected","reason":…}`.
    Tool {
        call_id: String,
        name: String,
        response: Value,
        /// The arguments the model proposed, when the person edited them before the call ran
        /// (the assistant entry then holds the edited ones, which are what ran).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        edited_from: Option<Value>,
        /// For a call rejected by the person's text reply (the text is the rejection's reason):
        /// that reply's A2A `messageId`. Models other than the conformance agent ignore it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply_message_id: Option<String>,
    },
}

/// What a model turn gets: the agent's instruction, the conversation, the tools it may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The chat (A2A context) the turn is of: a model that keeps a session per chat (an ACP
    /// agent) finds it by this.
    pub context_id: String,
    pub instruction: String,
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSpec>,
}

/// Token counts of one turn, reported under `signoff_protocol::hitl::keys::USAGE_METADATA`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// An artifact a model produces whole: its name and parts.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelArtifact {
    pub name: String,
    pub parts: Vec<signoff_protocol::Part>,
}

/// One piece of a streamed model turn.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    /// A chunk of answer text, shown as it arrives.
    Text(String),
    /// A complete tool call; all calls of one turn form one batch.
    ToolCall(ModelToolCall),
    /// The turn's whole answer as one agent message, instead of streamed text: the task
    /// completes with it as its status message, and a blocking `message/send` / `SendMessage`
    /// is answered with that Message rather than the task (docs/wire.md, Methods). A turn that
    /// sends this sends no `Text`.
    Message(String),
    /// A whole artifact of its own (a file, structured data), sent as one artifact update
    /// beside the answer text. It is not kept in the transcript: the model does not read its
    /// own artifacts back.
    Artifact(ModelArtifact),
    /// A tool call the agent ran itself without asking (a coding agent over ACP), reported
    /// anew as it changes: shown as its card, never screened, run or kept in the transcript.
    /// Its `id` is the agent's; the runtime gives it its own ([`ran_id`]). A report whose id is
    /// a call the task holds is dropped: that call's end comes as `Reported`.
    Ran(signoff_protocol::hitl::RanCall),
    /// How a call the model asked for, and was allowed, went once the agent ran it (a coding
    /// agent runs its tools itself once told yes): shown as the call's result, never kept in the
    /// transcript (whose result says it was allowed). Its `id` is the server's; the runtime
    /// takes it only for an allowed call of the task that ran, once it ended.
    Reported(signoff_protocol::hitl::RanCall),
    /// A thought of the agent's, shown folded away beside the answer.
    Thought(String),
    Usage(Usage),
}

/// The server's id for a call the agent ran itself, made from the agent's id `label`: the same
/// label always gives the same id (the agent reports a call several times), and no label can
/// give a `call_{n}` or a nested call's id, so a report can never touch a call Signoff holds.
pub fn ran_id(label: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(label.as_bytes());
    let hex: String = digest[..8]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("ran_{hex}")
}

/// Why a model turn failed. The text is shown to a person as the task's failure, so it says
/// what happened without internals (details go to the log where the model is implemented).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("the model could not be reached")]
    Unreachable,
    #[error("the model refused the request: {0}")]
    Refused(String),
    #[error("the model sent an answer that could not be read")]
    BadAnswer,
    /// Anything else, in words a person understands (no keys, no raw bodies).
    #[error("{0}")]
    Failed(String),
}

/// The stream of one model turn. Dropping it cancels the turn (the runtime drops it on cancel
/// and on timeout), so implementations must not need an explicit stop call.
pub type ModelStream = BoxStream<'static, Result<ModelEvent, ModelError>>;

/// A language model: one turn at a time, history and tool specs in, text chunks and tool calls
/// out.
pub trait Model: Send + Sync + 'static {
    fn turn(&self, request: ModelRequest) -> ModelStream;
    /// The chat's task was canceled while no turn ran (it waited on a decision). Only a model
    /// that keeps a session per chat has anything to stop.
    fn cancelled(&self, _context_id: &str) {}
    /// Whether the model also reports the calls it asks for as calls it runs (`Ran`, under its
    /// own ids): such calls are named by [`ran_id`] of the model's id, so that its report of a
    /// call before it asked and the call held then are one call ([`ModelToolCall::assign_ran_ids`]).
    fn reports_its_calls(&self) -> bool {
        false
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn proposed(ids: &[&str]) -> Vec<ModelToolCall> {
        ids.iter()
            .map(|id| ModelToolCall::new(*id, "read_file", json!({})))
            .collect()
    }

    fn ids(calls: &[ModelToolCall]) -> Vec<(&str, Option<&str>)> {
        calls
            .iter()
            .map(|call| (call.id.as_str(), call.model_id.as_deref()))
            .collect()
    }

    #[test]
    fn a_ran_calls_id_is_the_same_for_its_label_and_never_a_held_calls_shape() {
        assert_eq!(ran_id("toolu_1"), ran_id("toolu_1"));
        assert_ne!(ran_id("toolu_1"), ran_id("toolu_2"));
        for label in ["call_1", "call_1/call_2", "", &"x".repeat(10_000)] {
            let id = ran_id(label);
            assert!(id.starts_with("ran_") && id.len() == 20, "{id}");
            assert!(id[4..].chars().all(|c| c.is_ascii_hexdigit()), "{id}");
        }
    }

    #[test]
    fn a_reported_calls_id_is_its_ran_id_unless_its_label_cannot_serve_or_the_id_is_taken() {
        let mut calls = proposed(&["toolu_1", "toolu_1", "", "toolu_2"]);
        let taken = ran_id("toolu_2");
        ModelToolCall::assign_ran_ids(&mut calls, 3, &|id| id == taken);
        assert_eq!(
            ids(&calls),
            [
                (ran_id("toolu_1").as_str(), Some("toolu_1")),
                ("call_4", None),
                ("call_5", None),
                ("call_6", None),
            ]
        );
    }

    #[test]
    fn the_server_numbers_calls_on_from_the_conversation_and_keeps_usable_model_ids_as_labels() {
        let mut calls = proposed(&["call_Wq7", "call_1/call_1"]);
        ModelToolCall::assign_ids(&mut calls, 3, &|_| false);
        assert_eq!(
            ids(&calls),
            [
                ("call_4", Some("call_Wq7")),
                ("call_5", Some("call_1/call_1"))
            ]
        );
        assert_eq!(calls[1].model_label(), "call_1/call_1");
    }

    #[test]
    fn a_turn_with_an_empty_repeated_or_overlong_id_reads_back_in_the_servers_ids() {
        let long = "a".repeat(MAX_MODEL_ID_BYTES + 1);
        for turn in [vec!["", "b"], vec!["a", "a"], vec![long.as_str(), "b"]] {
            let mut calls = proposed(&turn);
            ModelToolCall::assign_ids(&mut calls, 0, &|_| false);
            assert_eq!(ids(&calls), [("call_1", None), ("call_2", None)]);
            assert_eq!(calls[0].model_label(), "call_1");
        }
    }

    #[test]
    fn an_id_in_use_is_skipped() {
        let mut calls = proposed(&["x", "y"]);
        ModelToolCall::assign_ids(&mut calls, 0, &|id| id == "call_1");
        assert_eq!(ids(&calls), [("call_2", Some("x")), ("call_3", Some("y"))]);
    }

    #[test]
    fn a_transcript_stored_before_ids_were_assigned_reads_back_unchanged() {
        let stored = json!({"id": "call_9", "name": "read_file", "args": {}});
        let call: ModelToolCall = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(call.model_label(), "call_9");
        assert_eq!(serde_json::to_value(&call).unwrap(), stored);
    }
}
