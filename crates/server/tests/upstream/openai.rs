//! The OpenAI-compatible model against a local server replaying recorded-shape streams: the
//! requests it sends, the events it makes of the answers, its errors, and a whole agent run
//! through the A2A endpoint.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{json, Value};
use signoff_server::agent::model::{
    ChatMessage, Model, ModelError, ModelEvent, ModelRequest, ModelToolCall, Usage,
};
use signoff_server::agent::openai::{OpenAiConfig, OpenAiModel};
use signoff_server::agent::tools::{error_result, text_result, ToolSpec};
use tokio::sync::oneshot;

use crate::stub::{fixture, held_sse, json_response, sse, Stub};
use crate::support::{
    answer_text, context_id, data_parts, decision, message_v03, send_stream, spawn_with_agents,
    states, task_id, within,
};

fn config(base: &str, key: Option<&str>) -> OpenAiConfig {
    OpenAiConfig {
        base_url: format!("{base}/v1"),
        model: "gpt-4o-mini".into(),
        api_key: key.map(str::to_owned),
        api_key_env: key.map(|_| "TEST_OPENAI_KEY".to_owned()),
        timeout: Duration::from_secs(10),
        temperature: None,
        max_tokens: None,
    }
}

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "read_file".into(),
            description: "Reads a file".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}},
                                 "required": ["path"]}),
            source: "files".into(),
            hints: Default::default(),
        },
        ToolSpec {
            name: "write_file".into(),
            description: "Writes a file".into(),
            input_schema: json!({"type": "object",
                                 "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                                 "required": ["path", "content"]}),
            source: "files".into(),
            hints: Default::default(),
        },
    ]
}

fn request(messages: Vec<ChatMessage>) -> ModelRequest {
    ModelRequest {
        context_id: "c".into(),
        instruction: "You help with files.".into(),
        messages,
        tools: tools(),
    }
}

fn user(text: &str) -> ChatMessage {
    ChatMessage::User {
        text: text.into(),
        message_id: None,
        asked: None,
    }
}

async fn turn(model: &OpenAiModel, request: ModelRequest) -> Vec<Result<ModelEvent, ModelError>> {
    within("a model turn", model.turn(request).collect::<Vec<_>>()).await
}

fn text(chunk: &str) -> Result<ModelEvent, ModelError> {
    Ok(ModelEvent::Text(chunk.into()))
}

/// The tool definitions OpenAI expects for `tools()`.
/// Replaces each tool call's `arguments` string with the JSON it holds, so comparisons do not
/// depend on key order (serde_json's `preserve_order` may be on in a workspace build).
fn parse_arguments(messages: &mut Value) {
    for message in messages.as_array_mut().into_iter().flatten() {
        let calls = message.get_mut("tool_calls").and_then(Value::as_array_mut);
        for call in calls.into_iter().flatten() {
            let arguments = &mut call["function"]["arguments"];
            if let Some(text) = arguments.as_str() {
                *arguments = serde_json::from_str(text).unwrap();
            }
        }
    }
}

fn tools_json() -> Value {
    json!([
        {"type": "function", "function": {"name": "read_file", "description": "Reads a file",
          "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                         "required": ["path"]}}},
        {"type": "function", "function": {"name": "write_file", "description": "Writes a file",
          "parameters": {"type": "object",
                         "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                         "required": ["path", "content"]}}}
    ])
}

#[tokio::test]
async fn streams_text_deltas_and_sends_the_request_openai_expects() {
    let stub = Stub::start(|_| sse(fixture("openai/text.sse"))).await;
    let model = OpenAiModel::new(config(&stub.base, Some("sk-test-123"))).unwrap();
    let events = turn(&model, request(vec![user("hi")])).await;
    assert_eq!(
        events,
        vec![
            text("Hello"),
            text("!"),
            text(" I can list"),
            text(","),
            text(" read, write"),
            text(" and delete files"),
            text(" in your sandbox."),
            Ok(ModelEvent::Usage(Usage {
                prompt_tokens: 212,
                completion_tokens: 14
            })),
        ]
    );
    let requests = stub.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.uri, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test-123"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(
        sent.json(),
        json!({
            "model": "gpt-4o-mini",
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [
                {"role": "system", "content": "You help with files."},
                {"role": "user", "content": "hi"}
            ],
            "tools": tools_json(),
        })
    );
}

#[tokio::test]
async fn assembles_parallel_tool_calls_from_their_deltas() {
    let stub = Stub::start(|_| sse(fixture("openai/tool_calls.sse"))).await;
    let model = OpenAiModel::new(config(&stub.base, None)).unwrap();
    let events = turn(
        &model,
        request(vec![user("write notes.txt and read readme.txt")]),
    )
    .await;
    assert_eq!(
        events,
        vec![
            Ok(ModelEvent::Usage(Usage {
                prompt_tokens: 298,
                completion_tokens: 51
            })),
            Ok(ModelEvent::ToolCall(ModelToolCall {
                id: "call_Wq7dNn2sF1xKpR3tYbLc9vEa".into(),
                model_id: None,
                name: "write_file".into(),
                args: json!({"path": "notes.txt", "content": "hi there"}),
            })),
            Ok(ModelEvent::ToolCall(ModelToolCall {
                id: "call_Rd2mK8pQx4ZsT7vNwB1yHcLf".into(),
                model_id: None,
                name: "read_file".into(),
                args: json!({"path": "readme.txt"}),
            })),
        ]
    );
    // No key configured: no Authorization header (local servers such as Ollama).
    assert_eq!(stub.requests()[0].header("authorization"), None);
}

#[tokio::test]
async fn maps_the_history_to_openai_messages() {
    let stub = Stub::start(|_| sse(fixture("openai/text.sse"))).await;
    let model = OpenAiModel::new(config(&stub.base, None)).unwrap();
    let history = vec![
        user("write notes.txt, delete old.txt and read a.txt"),
        ChatMessage::Assistant {
            text: String::new(),
            tool_calls: vec![
                // The person edited this call's arguments; the transcript holds what ran.
                ModelToolCall {
                    id: "call_1".into(),
                    model_id: None,
                    name: "write_file".into(),
                    args: json!({"path": "safe.txt", "content": "hi"}),
                },
                ModelToolCall {
                    id: "call_2".into(),
                    model_id: None,
                    name: "delete_file".into(),
                    args: json!({"path": "old.txt"}),
                },
                ModelToolCall {
                    id: "call_3".into(),
                    model_id: None,
                    name: "read_file".into(),
                    args: json!({"path": "a.txt"}),
                },
            ],
        },
        ChatMessage::Tool {
            call_id: "call_1".into(),
            name: "write_file".into(),
            response: text_result("Wrote 2 bytes to safe.txt"),
            edited_from: Some(json!({"path": "notes.txt", "content": "hi"})),
            reply_message_id: None,
        },
        ChatMessage::Tool {
            call_id: "call_2".into(),
            name: "delete_file".into(),
            response: json!({"status": "rejected", "reason": "keep it"}),
            edited_from: None,
            reply_message_id: None,
        },
        ChatMessage::Tool {
            call_id: "call_3".into(),
            name: "read_file".into(),
            response: error_result("no such file: a.txt"),
            edited_from: None,
            reply_message_id: None,
        },
        ChatMessage::Assistant {
            text: "Done, except the deletion.".into(),
            tool_calls: Vec::new(),
        },
        user("thanks"),
    ];
    turn(&model, request(history)).await;
    let sent = stub.requests()[0].json();
    let tool_content = |index: usize| -> Value {
        serde_json::from_str(sent["messages"][index]["content"].as_str().unwrap()).unwrap()
    };
    assert_eq!(
        tool_content(3),
        json!({"note": "the person edited the arguments before the call ran",
               "proposed": {"path": "notes.txt", "content": "hi"},
               "result": "Wrote 2 bytes to safe.txt"})
    );
    assert_eq!(
        tool_content(4),
        json!({"status": "rejected", "reason": "keep it"})
    );
    assert_eq!(tool_content(5), json!({"error": "no such file: a.txt"}));
    let mut messages = sent["messages"].clone();
    for index in 3..=5 {
        messages[index]["content"] = json!("(checked above)");
    }
    parse_arguments(&mut messages);
    assert_eq!(
        messages,
        json!([
            {"role": "system", "content": "You help with files."},
            {"role": "user", "content": "write notes.txt, delete old.txt and read a.txt"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "write_file", "arguments": {"content": "hi", "path": "safe.txt"}}},
                {"id": "call_2", "type": "function",
                 "function": {"name": "delete_file", "arguments": {"path": "old.txt"}}},
                {"id": "call_3", "type": "function",
                 "function": {"name": "read_file", "arguments": {"path": "a.txt"}}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "(checked above)"},
            {"role": "tool", "tool_call_id": "call_2", "content": "(checked above)"},
            {"role": "tool", "tool_call_id": "call_3", "content": "(checked above)"},
            {"role": "assistant", "content": "Done, except the deletion."},
            {"role": "user", "content": "thanks"}
        ])
    );
}

#[tokio::test]
async fn arguments_that_are_not_json_end_the_turn_with_a_clear_error() {
    let stub = Stub::start(|_| sse(fixture("openai/bad_arguments.sse"))).await;
    let model = OpenAiModel::new(config(&stub.base, None)).unwrap();
    let events = turn(&model, request(vec![user("write it")])).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let Err(ModelError::Failed(message)) = &events[0] else {
        panic!("expected a failure, got {events:?}");
    };
    assert!(
        message.starts_with("the model called write_file with arguments that are not valid JSON"),
        "{message}"
    );
}

#[tokio::test]
async fn http_errors_become_messages_a_person_understands() {
    let secret_body = json!({"error": {"message": "Incorrect API key provided: sk-test-***123",
                                       "type": "invalid_request_error", "code": "invalid_api_key"}});
    for (status, key, expected) in [
        (
            401,
            Some("sk-test-123"),
            "the model endpoint did not accept the API key from TEST_OPENAI_KEY (HTTP 401)",
        ),
        (
            401,
            None,
            "the model endpoint wants an API key; set api_key_env in the agents file (HTTP 401)",
        ),
        (
            404,
            None,
            "the model endpoint has no model \"gpt-4o-mini\" or no chat completions API at its \
             base URL (HTTP 404)",
        ),
        (
            429,
            None,
            "the model endpoint is rate limiting or out of quota; try again later (HTTP 429)",
        ),
        (500, None, "the model service failed on its side (HTTP 500)"),
    ] {
        let body = secret_body.clone();
        let stub = Stub::start(move |_| json_response(status, &body)).await;
        let model = OpenAiModel::new(config(&stub.base, key)).unwrap();
        let events = turn(&model, request(vec![user("hi")])).await;
        assert_eq!(
            events,
            vec![Err(ModelError::Failed(expected.to_owned()))],
            "HTTP {status}"
        );
    }
}

#[tokio::test]
async fn a_closed_port_is_unreachable() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let model = OpenAiModel::new(config(&base, None)).unwrap();
    let events = turn(&model, request(vec![user("hi")])).await;
    assert_eq!(events, vec![Err(ModelError::Unreachable)]);
}

#[tokio::test]
async fn dropping_the_stream_aborts_the_request() {
    let (dropped, was_dropped) = oneshot::channel();
    let dropped = Mutex::new(Some(dropped));
    // The first two events of the text answer (the role, then "Hello"), then silence.
    let recorded = String::from_utf8(fixture("openai/text.sse")).unwrap();
    let first: String = recorded.split_inclusive("\n\n").take(2).collect();
    let stub = Stub::start(move |_| {
        held_sse(
            first.clone().into_bytes(),
            dropped.lock().unwrap().take().unwrap(),
        )
    })
    .await;
    let model = OpenAiModel::new(config(&stub.base, None)).unwrap();
    let mut stream = model.turn(request(vec![user("hi")]));
    let first_event = within("the first delta", stream.next()).await;
    assert_eq!(first_event, Some(text("Hello")));
    drop(stream);
    within("the upstream to see the request end", was_dropped)
        .await
        .unwrap();
}

// ---- a whole agent on this model, through the A2A endpoint --------------------------------------

/// The A2A endpoint of the agent `agents_toml` declares.
const GPT: &str = "/api/a2a/default/gpt";

fn agents_toml(base: &str) -> String {
    format!(
        r#"
[[agents]]
name = "gpt"
namespace = "default"
description = "Files, with an OpenAI-compatible model"
instruction = "You help with files."
model = {{ kind = "openai", base_url = "{base}/v1", model = "gpt-4o-mini" }}

[[agents.tools]]
kind = "builtin_files"
require_approval = ["write_file", "delete_file"]
"#
    )
}

#[tokio::test]
async fn an_agent_answers_pauses_for_approval_and_resumes_on_this_model() {
    let replies = Mutex::new(VecDeque::from([
        "openai/text.sse",
        "openai/tool_calls.sse",
        "openai/after_tools.sse",
    ]));
    let stub = Stub::start(move |_| match replies.lock().unwrap().pop_front() {
        Some(name) => sse(fixture(name)),
        None => json_response(500, &json!({"error": "no more scripted answers"})),
    })
    .await;
    let app = spawn_with_agents(&agents_toml(&stub.base), |_| {}).await;
    let say = |text: &str, context: Option<&str>| {
        send_stream(&app, GPT, message_v03(text, None, context))
    };

    // 1. A plain answer, streamed, with the model's token counts.
    let first = say("hi", None).await;
    assert_eq!(states(&first), ["submitted", "working", "completed"]);
    assert_eq!(
        answer_text(&first),
        "Hello! I can list, read, write and delete files in your sandbox."
    );
    let last = first.last().unwrap();
    assert_eq!(
        last["metadata"]["kagent_usage_metadata"],
        json!({"promptTokenCount": 212, "candidatesTokenCount": 14, "totalTokenCount": 226})
    );
    let context = context_id(&first);

    // 2. Two parallel calls: read_file runs, write_file waits for a person.
    let second = say("write notes.txt and read readme.txt", Some(&context)).await;
    assert_eq!(states(&second).last().unwrap(), "input-required");
    let calls = data_parts(&second, "function_call");
    assert_eq!(
        calls,
        [
            json!({"id": "call_1", "name": "write_file",
                   "args": {"path": "notes.txt", "content": "hi there"}}),
            json!({"id": "call_2", "name": "read_file",
                   "args": {"path": "readme.txt"}}),
        ]
    );
    let responses = data_parts(&second, "function_response");
    assert_eq!(responses.len(), 1, "only read_file ran: {responses:?}");
    assert_eq!(responses[0]["name"], "read_file");
    let interrupt = data_parts(&second, "interrupt_data");
    // The calls go by the server's ids; the model's stay in what the model reads.
    assert_eq!(interrupt[0]["action_requests"][0]["id"], "call_1");
    assert!(
        !app.sandbox().join("notes.txt").exists(),
        "nothing written before approval"
    );
    let task = task_id(&second);

    // 3. Approved with edited arguments: the edited call runs, the model hears about it.
    let data = json!({"decision_type": "approve",
          "modified_args": {"call_1": {"path": "notes.txt", "content": "edited"}}});
    let third = send_stream(&app, GPT, decision(&task, &context, data)).await;
    assert_eq!(states(&third).last().unwrap(), "completed");
    assert_eq!(
        answer_text(&third),
        "I wrote notes.txt (with the content you chose) and read readme.txt: it welcomes you to \
         the sandbox."
    );
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("notes.txt")).unwrap(),
        "edited"
    );

    // What the model was sent on each turn.
    let sent: Vec<Value> = stub
        .requests()
        .iter()
        .map(|request| request.json())
        .collect();
    assert_eq!(sent.len(), 3);
    for request in &sent {
        assert_eq!(request["model"], "gpt-4o-mini");
        assert_eq!(request["stream"], true);
        assert_eq!(
            request["messages"][0],
            json!({"role": "system", "content": "You help with files."})
        );
        let names: Vec<&str> = request["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["list_directory", "read_file", "write_file", "delete_file"]
        );
    }
    assert_eq!(
        sent[1]["messages"].as_array().unwrap()[1..],
        [
            json!({"role": "user", "content": "hi"}),
            json!({"role": "assistant",
                   "content": "Hello! I can list, read, write and delete files in your sandbox."}),
            json!({"role": "user", "content": "write notes.txt and read readme.txt"}),
        ]
    );
    let turn3 = sent[2]["messages"].as_array().unwrap();
    let tail = &turn3[turn3.len() - 3..];
    assert_eq!(
        serde_json::from_str::<Value>(
            tail[0]["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .unwrap()
        )
        .unwrap(),
        json!({"content": "edited", "path": "notes.txt"}),
        "the assistant turn carries the arguments that ran"
    );
    let read_back: Vec<&str> = tail[0]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        read_back,
        [
            "call_Wq7dNn2sF1xKpR3tYbLc9vEa",
            "call_Rd2mK8pQx4ZsT7vNwB1yHcLf"
        ],
        "the model reads its calls back in its own ids"
    );
    let by_call = |id: &str| -> &Value {
        tail.iter()
            .find(|message| message["tool_call_id"] == id)
            .unwrap_or_else(|| panic!("no tool message for {id}: {tail:?}"))
    };
    assert!(by_call("call_Rd2mK8pQx4ZsT7vNwB1yHcLf")["content"]
        .as_str()
        .unwrap()
        .starts_with("Welcome to the Signoff sandbox."));
    let edited: Value = serde_json::from_str(
        by_call("call_Wq7dNn2sF1xKpR3tYbLc9vEa")["content"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        edited["note"],
        "the person edited the arguments before the call ran"
    );
    assert_eq!(
        edited["proposed"],
        json!({"path": "notes.txt", "content": "hi there"})
    );
    app.stop().await;
}

#[tokio::test]
async fn a_refusing_endpoint_fails_the_task_with_a_clear_message() {
    let stub = Stub::start(|_| {
        json_response(
            401,
            &json!({"error": {"message": "Incorrect API key provided: sk-abc***xyz"}}),
        )
    })
    .await;
    let app = spawn_with_agents(&agents_toml(&stub.base), |_| {}).await;
    let events = send_stream(&app, GPT, message_v03("hi", None, None)).await;
    assert_eq!(states(&events).last().unwrap(), "failed");
    let last = events.last().unwrap();
    let text = last["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert_eq!(
        text,
        "The model failed: the model endpoint wants an API key; set api_key_env in the agents \
         file (HTTP 401). Try again, or check the model's configuration."
    );
    app.stop().await;
}
