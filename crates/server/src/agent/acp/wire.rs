//! ACP's messages as Signoff reads and writes them: newline-delimited JSON-RPC 2.0 over the
//! agent's stdio. Messages are read as JSON values first and then picked apart by hand: agents
//! send kinds of update this client does not know (and newer ones will), and an unknown update
//! must be skipped, not fail its session.

use serde_json::{json, Value};

/// The ACP protocol version this client speaks.
pub const PROTOCOL_VERSION: u64 = 1;
/// JSON-RPC's "method not found", for requests this client does not serve (it offers no file
/// system and no terminal).
pub const METHOD_NOT_FOUND: i64 = -32601;

/// Why a line from the agent could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WireError {
    #[error("the agent sent a line that is not JSON: {0}")]
    NotJson(String),
    #[error("the agent sent a message that is not JSON-RPC 2.0: {0}")]
    NotJsonRpc(String),
    #[error("the agent's {method} lacks {field}")]
    Missing { method: String, field: &'static str },
}

/// One message from the agent.
#[derive(Debug, Clone, PartialEq)]
pub enum FromAgent {
    /// The answer to one of this client's requests.
    Response {
        id: u64,
        result: Result<Value, String>,
    },
    /// `session/update`.
    Update { session_id: String, update: Update },
    /// `session/request_permission`: `id` is the agent's, answered with [`permission_answer`].
    Permission {
        id: Value,
        request: Box<PermissionRequest>,
    },
    /// Another request (the file system, the terminal): answered with an error.
    OtherRequest { id: Value, method: String },
    /// Another notification: ignored.
    OtherNotification { method: String },
}

/// What a `session/update` says.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// A chunk of the agent's answer.
    Message(String),
    /// A chunk of its thinking.
    Thought(String),
    /// A tool call, new (`tool_call`) or changed (`tool_call_update`).
    ToolCall(Box<ToolCall>),
    /// Its plan, each entry's text and status.
    Plan(Vec<(String, String)>),
    /// A kind this client does not show (commands, modes, the person's own chunks, new kinds).
    Other(String),
}

/// What is known of one tool call; a later message about the same call adds to it
/// ([`ToolCall::merge`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub title: Option<String>,
    pub kind: Option<String>,
    pub status: Option<String>,
    pub raw_input: Option<Value>,
    pub locations: Vec<String>,
    /// File changes it makes: path, old text (`None`: a new file), new text.
    pub diffs: Vec<(String, Option<String>, String)>,
    /// Text it reported (its output): its content's text, else its raw output's (Claude Code
    /// reports a command's or a write's result only there).
    pub text: Vec<String>,
}

/// One option of a permission request.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionOption {
    pub id: String,
    pub name: String,
    /// `allow_once`, `allow_always`, `reject_once` or `reject_always`.
    pub kind: String,
}

/// `session/request_permission`'s params.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionRequest {
    pub session_id: String,
    pub tool_call: ToolCall,
    pub options: Vec<PermissionOption>,
}

impl PermissionRequest {
    /// The id of the first option of one of `kinds`, tried in order: options are picked by
    /// kind, never by id (agents name them differently: `allow`, `proceed_once`).
    pub fn option(&self, kinds: &[&str]) -> Option<&str> {
        kinds.iter().find_map(|kind| {
            self.options
                .iter()
                .find(|option| option.kind == *kind)
                .map(|option| option.id.as_str())
        })
    }
}

impl ToolCall {
    /// Adds what `later` knows of the same call: agents send a call twice (pending without its
    /// input, then with it) and update it as it runs.
    pub fn merge(&mut self, later: ToolCall) {
        let keep = |mine: &mut Option<String>, theirs: Option<String>| {
            if theirs.is_some() {
                *mine = theirs;
            }
        };
        keep(&mut self.title, later.title);
        keep(&mut self.kind, later.kind);
        keep(&mut self.status, later.status);
        if later.raw_input.is_some() {
            self.raw_input = later.raw_input;
        }
        if !later.locations.is_empty() {
            self.locations = later.locations;
        }
        if !later.diffs.is_empty() {
            self.diffs = later.diffs;
        }
        if !later.text.is_empty() {
            self.text = later.text;
        }
    }

    fn read(value: &Value) -> Option<ToolCall> {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        let mut call = ToolCall {
            id: text("toolCallId")?,
            title: text("title"),
            kind: text("kind"),
            status: text("status"),
            raw_input: value
                .get("rawInput")
                .filter(|input| !input.is_null())
                .cloned(),
            ..ToolCall::default()
        };
        for location in value
            .get("locations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(path) = location.get("path").and_then(Value::as_str) {
                call.locations.push(path.to_owned());
            }
        }
        for item in value
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match item.get("type").and_then(Value::as_str) {
                Some("diff") => {
                    let field =
                        |key: &str| item.get(key).and_then(Value::as_str).map(str::to_owned);
                    if let (Some(path), Some(new)) = (field("path"), field("newText")) {
                        call.diffs.push((path, field("oldText"), new));
                    }
                }
                Some("content") => {
                    if let Some(text) = item.pointer("/content/text").and_then(Value::as_str) {
                        call.text.push(text.to_owned());
                    }
                }
                Some(_) | None => {}
            }
        }
        if call.text.is_empty() {
            call.text = value.get("rawOutput").map(raw_text).unwrap_or_default();
        }
        Some(call)
    }
}

/// The text of a call's raw output: a string as it is, the text blocks of a list of content
/// blocks, anything else (but null) as its JSON.
fn raw_text(raw: &Value) -> Vec<String> {
    match raw {
        Value::Null => Vec::new(),
        Value::String(text) if text.is_empty() => Vec::new(),
        Value::String(text) => vec![text.clone()],
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .map(str::to_owned)
            .collect(),
        other @ (Value::Bool(_) | Value::Number(_) | Value::Object(_)) => vec![other.to_string()],
    }
}

/// Reads one line the agent wrote.
pub fn read_line(line: &str) -> Result<FromAgent, WireError> {
    let value: Value = serde_json::from_str(line).map_err(|_| WireError::NotJson(clip(line)))?;
    if value.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(WireError::NotJsonRpc(clip(line)));
    }
    let method = value.get("method").and_then(Value::as_str);
    let id = value.get("id").filter(|id| !id.is_null()).cloned();
    match (method, id) {
        (None, Some(id)) => {
            let id = id
                .as_u64()
                .ok_or_else(|| WireError::NotJsonRpc(clip(line)))?;
            let result = match (value.get("result"), value.get("error")) {
                (_, Some(error)) => Err(error_text(error)),
                (Some(result), None) => Ok(result.clone()),
                (None, None) => return Err(WireError::NotJsonRpc(clip(line))),
            };
            Ok(FromAgent::Response { id, result })
        }
        (Some(method), id) => read_call(method, id, value.get("params").unwrap_or(&Value::Null)),
        (None, None) => Err(WireError::NotJsonRpc(clip(line))),
    }
}

/// An error answer's message, with the details agents put in its data (claude-code-acp's
/// "Internal error" says what went wrong only there).
fn error_text(error: &Value) -> String {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("an error without a message");
    match error.pointer("/data/details").and_then(Value::as_str) {
        Some(details) => format!("{message}: {details}"),
        None => message.to_owned(),
    }
}

fn read_call(method: &str, id: Option<Value>, params: &Value) -> Result<FromAgent, WireError> {
    let missing = |field| WireError::Missing {
        method: method.to_owned(),
        field,
    };
    let session_id = || {
        params
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| missing("sessionId"))
    };
    match (method, id) {
        ("session/update", None) => {
            let update = params.get("update").ok_or_else(|| missing("update"))?;
            Ok(FromAgent::Update {
                session_id: session_id()?,
                update: read_update(update).ok_or_else(|| missing("a readable update"))?,
            })
        }
        ("session/request_permission", Some(id)) => {
            let tool_call = params
                .get("toolCall")
                .and_then(ToolCall::read)
                .ok_or_else(|| missing("toolCall"))?;
            let options = params
                .get("options")
                .and_then(Value::as_array)
                .ok_or_else(|| missing("options"))?
                .iter()
                .map(|option| {
                    let text =
                        |key: &str| option.get(key).and_then(Value::as_str).map(str::to_owned);
                    Some(PermissionOption {
                        id: text("optionId")?,
                        name: text("name").unwrap_or_default(),
                        kind: text("kind")?,
                    })
                })
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| missing("options with optionId and kind"))?;
            Ok(FromAgent::Permission {
                id,
                request: Box::new(PermissionRequest {
                    session_id: session_id()?,
                    tool_call,
                    options,
                }),
            })
        }
        (method, Some(id)) => Ok(FromAgent::OtherRequest {
            id,
            method: method.to_owned(),
        }),
        (method, None) => Ok(FromAgent::OtherNotification {
            method: method.to_owned(),
        }),
    }
}

fn read_update(update: &Value) -> Option<Update> {
    let kind = update.get("sessionUpdate").and_then(Value::as_str)?;
    let chunk = || {
        update
            .pointer("/content/text")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    Some(match kind {
        "agent_message_chunk" => Update::Message(chunk().unwrap_or_default()),
        "agent_thought_chunk" => Update::Thought(chunk().unwrap_or_default()),
        "tool_call" | "tool_call_update" => Update::ToolCall(Box::new(ToolCall::read(update)?)),
        "plan" => Update::Plan(
            update
                .get("entries")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|entry| {
                    let text = |key: &str| {
                        entry
                            .get(key)
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned()
                    };
                    (text("content"), text("status"))
                })
                .collect(),
        ),
        other => Update::Other(other.to_owned()),
    })
}

/// The start of a bad line, for its error (a whole line may be megabytes).
fn clip(line: &str) -> String {
    let mut end = line.len().min(120);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line[..end].to_owned()
}

/// A request of this client's, as one line.
pub fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A notification of this client's, as one line.
pub fn notification(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

/// The answer to one of the agent's requests, as one line.
pub fn response(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// An error answer to one of the agent's requests, as one line.
pub fn error_response(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// `initialize`'s params: this client offers no file system and no terminal, so the agent
/// uses its own (within its working folder).
pub fn initialize() -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
        "clientInfo": {"name": "signoff", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// `session/new`'s params.
pub fn new_session(cwd: &str) -> Value {
    json!({"cwd": cwd, "mcpServers": []})
}

/// `session/load`'s params: the session to load again, in the same folder.
pub fn load_session(session_id: &str, cwd: &str) -> Value {
    json!({"sessionId": session_id, "cwd": cwd, "mcpServers": []})
}

/// `session/prompt`'s params: one text block.
pub fn prompt(session_id: &str, text: &str) -> Value {
    json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]})
}

/// `session/cancel`'s params.
pub fn cancel(session_id: &str) -> Value {
    json!({"sessionId": session_id})
}

/// The answer to a permission request: the option chosen, or `None` for "cancelled".
pub fn permission_answer(option_id: Option<&str>) -> Value {
    match option_id {
        Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
        None => json!({"outcome": {"outcome": "cancelled"}}),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_permission_request_is_read_with_its_options_picked_by_kind() {
        let line = r#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"toolu_1","title":"Write /w/a.txt","kind":"edit","rawInput":{"file_path":"/w/a.txt","content":"hi"}},"options":[{"kind":"allow_always","name":"Always Allow","optionId":"allow_always"},{"kind":"allow_once","name":"Allow","optionId":"allow"},{"kind":"reject_once","name":"Reject","optionId":"reject"}]}}"#;
        let FromAgent::Permission { id, request } = read_line(line).unwrap() else {
            panic!()
        };
        assert_eq!(id, json!(0));
        assert_eq!(request.tool_call.kind.as_deref(), Some("edit"));
        assert_eq!(request.option(&["allow_once"]), Some("allow"));
        assert_eq!(
            request.option(&["reject_always", "reject_once"]),
            Some("reject")
        );
        assert_eq!(request.option(&["proceed"]), None);
    }

    #[test]
    fn a_tool_call_sent_twice_keeps_what_the_later_one_knows() {
        let read = |line: &str| {
            let FromAgent::Update {
                update: Update::ToolCall(call),
                ..
            } = read_line(line).unwrap()
            else {
                panic!("{line}")
            };
            *call
        };
        let mut call = read(
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"Write","kind":"edit","status":"pending","rawInput":{}}}}"#,
        );
        call.merge(read(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"Write /w/a","kind":"edit","status":"pending","rawInput":{"file_path":"/w/a","content":"x"},"content":[{"type":"diff","path":"/w/a","oldText":null,"newText":"x"}],"locations":[{"path":"/w/a"}]}}}"#));
        assert_eq!(call.title.as_deref(), Some("Write /w/a"));
        assert_eq!(call.diffs, [("/w/a".to_owned(), None, "x".to_owned())]);
        assert_eq!(call.locations, ["/w/a"]);
        assert_eq!(
            call.raw_input,
            Some(json!({"file_path": "/w/a", "content": "x"}))
        );
    }

    #[test]
    fn a_calls_output_is_its_contents_text_else_its_raw_outputs() {
        let read = |update: &str| {
            let line = format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{update}}}}}"#
            );
            let Ok(FromAgent::Update {
                update: Update::ToolCall(call),
                ..
            }) = read_line(&line)
            else {
                panic!("{line}")
            };
            call.text
        };
        assert_eq!(
            read(
                r#"{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed","rawOutput":"hi\n"}"#
            ),
            ["hi\n"]
        );
        assert_eq!(
            read(
                r#"{"sessionUpdate":"tool_call_update","toolCallId":"t","rawOutput":[{"type":"text","text":"a"},{"type":"image"}]}"#
            ),
            ["a"]
        );
        assert_eq!(
            read(
                r#"{"sessionUpdate":"tool_call_update","toolCallId":"t","content":[{"type":"content","content":{"type":"text","text":"shown"}}],"rawOutput":"raw"}"#
            ),
            ["shown"]
        );
        assert!(read(r#"{"sessionUpdate":"tool_call_update","toolCallId":"t"}"#).is_empty());
    }

    #[test]
    fn an_unknown_update_is_kept_and_a_bad_line_names_what_it_was() {
        let other = read_line(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":3}}}"#).unwrap();
        assert!(
            matches!(other, FromAgent::Update { update: Update::Other(kind), .. } if kind == "usage_update")
        );
        assert!(
            matches!(read_line("Debugger attached."), Err(WireError::NotJson(text)) if text == "Debugger attached.")
        );
        assert!(matches!(
            read_line(r#"{"id":1,"result":{}}"#),
            Err(WireError::NotJsonRpc(_))
        ));
        let missing = read_line(r#"{"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":{"sessionId":"s"}}"#).unwrap_err();
        assert_eq!(
            missing.to_string(),
            "the agent's session/request_permission lacks toolCall"
        );
        assert!(matches!(
            read_line(r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"boom"}}"#).unwrap(),
            FromAgent::Response { id: 4, result: Err(message) } if message == "boom"
        ));
        assert!(matches!(
            read_line(r#"{"jsonrpc":"2.0","id":"x","method":"fs/read_text_file","params":{}}"#).unwrap(),
            FromAgent::OtherRequest { method, .. } if method == "fs/read_text_file"
        ));
    }

    #[test]
    fn answers_are_one_of_the_options_or_cancelled() {
        assert_eq!(
            permission_answer(Some("allow")),
            json!({"outcome": {"outcome": "selected", "optionId": "allow"}})
        );
        assert_eq!(
            permission_answer(None),
            json!({"outcome": {"outcome": "cancelled"}})
        );
        let line: Value =
            serde_json::from_str(&response(&json!(7), permission_answer(None))).unwrap();
        assert_eq!(line["id"], json!(7));
    }
}
