//! Translation across versions (docs/wire.md, Translation), as the relay uses it for a remote
//! agent that offers only v1.0: kagent's HITL extension streams (v1.0, tests/fixtures/kagent-
//! hitl-v1) read in v0.3 as the same events, a v0.3 request written in v1.0 as the same call,
//! errors mapped, and what does not translate answered with a clear JSON-RPC error.

// Helpers outside #[test] functions panic on bad input too; that is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use serde_json::{json, Value};
use signoff_protocol::codec::{self, translate, v03_only, CardFlavor, Method};
use signoff_protocol::jsonrpc::{ErrorObject, Id, Response};
use signoff_protocol::sse::SseFrame;
use signoff_protocol::{ProtocolVersion, SendMessageParams};

const V03: ProtocolVersion = ProtocolVersion::V0_3;
const V10: ProtocolVersion = ProtocolVersion::V1_0;

fn hitl_fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kagent-hitl-v1")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The `data` of each event of an SSE stream.
fn event_data(bytes: &[u8]) -> Vec<String> {
    common::parse_chunks([bytes])
        .into_iter()
        .filter_map(|frame| match frame {
            SseFrame::Event(event) => Some(event.data),
            SseFrame::Done => None,
        })
        .collect()
}

fn error_of(json: &str) -> ErrorObject {
    let value: Value = serde_json::from_str(json).unwrap();
    Response::from_value(value).unwrap().outcome.unwrap_err()
}

#[test]
fn a_v10_stream_reads_in_v03_as_the_same_events_and_ends_where_v03_ends() {
    for (name, method) in [
        ("p1_tool_approval_request.sse", Method::SendStreamingMessage),
        ("p2_tool_approval_resume.sse", Method::SendStreamingMessage),
        ("q1_ask_user_request.sse", Method::SendStreamingMessage),
        ("q2_ask_user_resume.sse", Method::SubscribeToTask),
    ] {
        let events = event_data(&hitl_fixture(name));
        let client_id = Id::String(format!("ui-{name}"));
        let mut ends = Vec::new();
        for data in &events {
            let translated = translate::response(method, V10, V03, &client_id, data.as_bytes());
            let original = codec::decode_stream_response(V10, data).unwrap().unwrap();
            let read = v03_only::decode_stream_response(&translated.json)
                .unwrap()
                .unwrap();
            assert_eq!(read, original, "{name}: {data}");
            let value: Value = serde_json::from_str(&translated.json).unwrap();
            assert_eq!(value["id"], json!(format!("ui-{name}")), "the client's id");
            assert!(value["result"]["kind"].is_string(), "v0.3 shape: {value}");
            ends.push(translated.ends_stream);
        }
        let last = ends.pop().unwrap();
        assert!(last, "{name}: its last event ends a v0.3 stream");
        assert!(
            ends.iter().all(|ends| !ends),
            "{name}: only the last ends it"
        );
    }
}

#[test]
fn a_v03_stream_reads_in_v10_and_back_unchanged() {
    let events = common::stream_events("c1_interrupt.sse");
    for event in events {
        let v03 = Response::success(Id::Number(1), codec::encode_event(V03, &event)).to_json();
        let v10 = translate::response(
            Method::SendStreamingMessage,
            V03,
            V10,
            &Id::Number(1),
            v03.as_bytes(),
        );
        let back = translate::response(
            Method::SendStreamingMessage,
            V10,
            V03,
            &Id::Number(1),
            v10.json.as_bytes(),
        );
        assert_eq!(
            v03_only::decode_stream_response(&back.json)
                .unwrap()
                .unwrap(),
            event
        );
    }
}

#[test]
fn a_v03_request_is_written_as_the_same_v10_call() {
    // The documented v1.0 answer to a pause, as the UI writes it in v0.3.
    let documented: Value =
        serde_json::from_slice(&hitl_fixture("p2_tool_approval_response.request.json")).unwrap();
    let params = codec::decode_send_params(V10, &documented["params"]).unwrap();
    let sent = json!({"jsonrpc": "2.0", "id": "ui-7", "method": "message/stream",
                      "params": v03_only::encode_send_params(&params)});
    let translated = translate::request(V03, V10, sent.to_string().as_bytes()).unwrap();
    assert_eq!(translated.method, Method::SendStreamingMessage);
    assert_eq!(translated.body["method"], "SendStreamingMessage");
    assert_eq!(translated.body["id"], "ui-7");
    assert_eq!(
        codec::decode_send_params(V10, &translated.body["params"]).unwrap(),
        params
    );
    assert_eq!(
        translated.body["params"]["message"]["metadata"],
        documented["params"]["message"]["metadata"],
        "the extension's response travels as it was"
    );

    // A queued message's `blocking: false` is v1.0's `returnImmediately`.
    let queued = SendMessageParams {
        configuration: Some(signoff_protocol::SendConfiguration {
            blocking: Some(false),
            push: None,
            ..Default::default()
        }),
        ..params
    };
    let sent = json!({"jsonrpc": "2.0", "id": 8, "method": "message/send",
                      "params": v03_only::encode_send_params(&queued)});
    let translated = translate::request(V03, V10, sent.to_string().as_bytes()).unwrap();
    assert_eq!(translated.body["method"], "SendMessage");
    assert_eq!(
        translated.body["params"]["configuration"]["returnImmediately"],
        true
    );

    for (v03_name, v10_name) in [
        ("tasks/get", "GetTask"),
        ("tasks/cancel", "CancelTask"),
        ("tasks/resubscribe", "SubscribeToTask"),
    ] {
        let sent = json!({"jsonrpc": "2.0", "id": 9, "method": v03_name,
                          "params": {"id": "task-123"}});
        let translated = translate::request(V03, V10, sent.to_string().as_bytes()).unwrap();
        assert_eq!(translated.body["method"], v10_name);
        assert_eq!(translated.body["params"]["id"], "task-123");
    }
}

#[test]
fn a_request_that_does_not_translate_is_a_clear_error() {
    let refused = |body: &str| translate::request(V03, V10, body.as_bytes()).unwrap_err();
    let error = refused("{nope");
    assert_eq!(error.code, -32700);
    let error = refused(r#"{"jsonrpc":"1.0","id":1,"method":"tasks/get","params":{"id":"t"}}"#);
    assert_eq!((error.code, error.data), (-32600, None));
    let error = refused(r#"{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set"}"#);
    assert_eq!(error.code, -32601);
    assert_eq!(
        error.message,
        "method tasks/pushNotificationConfig/set is not relayed to this agent, which speaks A2A \
         1.0 only: the relay translates message/send, message/stream, tasks/get, tasks/cancel, \
         tasks/resubscribe"
    );
    let error = refused(r#"{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}"#);
    assert_eq!(error.code, -32601);
    let error = refused(
        r#"{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"messageId":"m","role":"user","parts":[{"text":"hi"}]}}}"#,
    );
    assert_eq!(error.code, -32602);
    assert_eq!(
        error.message,
        "params.message.parts[0].kind: missing (a v0.3 part says \"text\", \"data\" or \"file\")"
    );
}

#[test]
fn errors_keep_their_code_and_lose_what_v03_does_not_have() {
    let v10_error = |code: i64, reason: &str| {
        json!({"jsonrpc": "2.0", "id": 3, "error": {"code": code, "message": "no", "data": [{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "domain": "a2a-protocol.org", "reason": reason}]}})
        .to_string()
    };
    let translated = translate::response(
        Method::GetTask,
        V10,
        V03,
        &Id::Number(3),
        v10_error(-32001, "TASK_NOT_FOUND").as_bytes(),
    );
    assert!(translated.ends_stream);
    assert_eq!(
        error_of(&translated.json),
        ErrorObject {
            code: -32001,
            message: "no".to_owned(),
            data: None
        }
    );
    let translated = translate::response(
        Method::SendStreamingMessage,
        V10,
        V03,
        &Id::Number(3),
        v10_error(-32009, "VERSION_NOT_SUPPORTED").as_bytes(),
    );
    let error = error_of(&translated.json);
    assert_eq!(error.code, -32603);
    assert_eq!(
        error.message,
        "no (A2A v1.0 error -32009, which v0.3 does not have)"
    );
    // The other way, v1.0's detail is written.
    let error = translate::error(
        V03,
        V10,
        ErrorObject {
            code: -32002,
            message: "ended".to_owned(),
            data: None,
        },
    );
    assert_eq!(error.data.unwrap()[0]["reason"], "TASK_NOT_CANCELABLE");
}

#[test]
fn an_answer_that_is_not_the_peers_version_is_a_clear_error() {
    for (data, problem) in [
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"working"}}}}"#,
            "result.statusUpdate.status.state",
        ),
        (r#"{"jsonrpc":"2.0","id":1,"result""#, "not JSON"),
        (r#"{"id":1}"#, "not a JSON-RPC response"),
    ] {
        let translated = translate::response(
            Method::SendStreamingMessage,
            V10,
            V03,
            &Id::String("ui-1".to_owned()),
            data.as_bytes(),
        );
        assert!(translated.ends_stream, "{data}");
        let error = error_of(&translated.json);
        assert_eq!(error.code, -32603, "{data}");
        assert!(
            error.message.starts_with(
                "the agent's answer is not A2A 1.0 as it should be, so it cannot be passed on in 0.3: "
            ) && error.message.contains(problem),
            "{}",
            error.message
        );
    }
    // A unary method's answer must be its result's kind.
    let update = r#"{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}}"#;
    let translated = translate::response(
        Method::SendMessage,
        V10,
        V03,
        &Id::Number(1),
        update.as_bytes(),
    );
    assert_eq!(error_of(&translated.json).code, -32603);
}

#[test]
fn a_v10_card_offers_v03_at_the_relay() {
    let card: Value = serde_json::from_slice(&hitl_fixture("agent_card.json")).unwrap();
    let interfaces = |card: &Value| {
        codec::decode_card_interfaces(card)
            .into_iter()
            .map(|interface| (interface.url, interface.version))
            .collect::<Vec<_>>()
    };
    let relay = "http://us/api/a2a/kagent/k8s-agent";
    let mut lenient = card.clone();
    codec::offer_card_interface(&mut lenient, relay, V03, CardFlavor::Lenient);
    assert_eq!(lenient["url"], relay);
    assert_eq!(lenient["protocolVersion"], "0.3.0");
    assert!(interfaces(&lenient).contains(&(relay.to_owned(), V03)));
    let mut strict = card.clone();
    codec::offer_card_interface(&mut strict, relay, V03, CardFlavor::StrictV1);
    assert!(
        strict.get("url").is_none(),
        "no v0.3 field in a strict card"
    );
    assert!(interfaces(&strict).contains(&(relay.to_owned(), V03)));
    // Offered twice, listed once.
    codec::offer_card_interface(&mut strict, relay, V03, CardFlavor::StrictV1);
    assert_eq!(interfaces(&strict).len(), interfaces(&card).len() + 1);
    // Its extensions and skills are the remote's.
    assert_eq!(
        codec::decode_card_extensions(&lenient),
        codec::decode_card_extensions(&card)
    );
    assert!(matches!(
        codec::decode_agent_card(&lenient).map(|card| card.skills.len()),
        Ok(1)
    ));
}
