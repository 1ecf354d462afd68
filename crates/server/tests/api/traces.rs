//! Traces and JSON logs with the real binary: a small OTLP/HTTP receiver on port 0 takes what
//! the server exports (protobuf, decoded with the OpenTelemetry protocol's own types), and a
//! chat with a decision arrives as the spans of its task, each under the one that caused it.
//! The endpoint is set in the child's environment only, so no other test exports anything.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use axum::Router;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::{json, Value};

use crate::hitl::pause;
use crate::support::*;

type Bodies = Arc<Mutex<Vec<Bytes>>>;

/// An OTLP/HTTP trace receiver: keeps every body POSTed to `/v1/traces`.
struct Receiver {
    base: String,
    bodies: Bodies,
}

async fn export(State(bodies): State<Bodies>, body: Bytes) -> impl axum::response::IntoResponse {
    bodies.lock().unwrap().push(body);
    // An empty ExportTraceServiceResponse: everything accepted.
    (
        [("content-type", "application/x-protobuf")],
        Vec::<u8>::new(),
    )
}

async fn start_receiver() -> Receiver {
    let bodies = Bodies::default();
    let app = Router::new()
        .route("/v1/traces", post(export))
        .with_state(bodies.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Receiver { base, bodies }
}

/// A string attribute's value.
fn attribute(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|pair| pair.key == key)
        .and_then(|pair| pair.value.as_ref()?.value.as_ref())
        .and_then(|value| match value {
            AnyValue::StringValue(text) => Some(text.clone()),
            AnyValue::BoolValue(_)
            | AnyValue::IntValue(_)
            | AnyValue::DoubleValue(_)
            | AnyValue::ArrayValue(_)
            | AnyValue::KvlistValue(_)
            | AnyValue::BytesValue(_)
            | AnyValue::StringValueStrindex(_) => None,
        })
}

impl Receiver {
    /// Every span received, with its resource's service name.
    fn spans(&self) -> Vec<(String, Span)> {
        let bodies = self.bodies.lock().unwrap();
        let mut spans = Vec::new();
        for body in bodies.iter() {
            let request = ExportTraceServiceRequest::decode(body.as_ref()).unwrap();
            for resource_spans in request.resource_spans {
                let resource = resource_spans.resource.unwrap_or_default();
                let service = attribute(&resource.attributes, "service.name").unwrap_or_default();
                for scope_spans in resource_spans.scope_spans {
                    for span in scope_spans.spans {
                        spans.push((service.clone(), span));
                    }
                }
            }
        }
        spans
    }
}

/// The one span named `name` among `spans`.
fn one<'a>(spans: &[&'a Span], name: &str) -> &'a Span {
    let named: Vec<&Span> = spans
        .iter()
        .copied()
        .filter(|span| span.name == name)
        .collect();
    assert_eq!(named.len(), 1, "one {name} span: {named:#?}");
    named[0]
}

/// The spans named `name` whose parent is `parent`.
fn children<'a>(spans: &[&'a Span], name: &str, parent: &Span) -> Vec<&'a Span> {
    spans
        .iter()
        .copied()
        .filter(|span| {
            span.name == name
                && span.parent_span_id == parent.span_id
                && span.trace_id == parent.trace_id
        })
        .collect()
}

#[tokio::test]
async fn a_chat_with_a_decision_is_traced_over_otlp_and_logged_as_json() {
    let receiver = start_receiver().await;
    let data_dir = tempfile::tempdir().unwrap();
    let server = start_binary(
        data_dir.path(),
        &["--log-format", "json"],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.base.as_str())],
    )
    .await;
    let logged: Value = serde_json::from_str(&server.listening_line)
        .unwrap_or_else(|err| panic!("{err}: {}", server.listening_line));
    assert_eq!(logged["level"], "INFO");
    assert!(logged["fields"]["message"]
        .as_str()
        .unwrap()
        .starts_with("listening on http://"));

    let app = TestApp::external(server.base.clone(), data_dir);
    let (task, context) = pause(&app, None).await;
    let results = decide(&app, &task, &context, json!({"decision_type": "approve"})).await;
    assert_eq!(results.last().unwrap()["status"]["state"], "completed");
    // A graceful stop flushes the spans still batched.
    let status = server.terminate().await;
    assert!(status.success(), "{status}");

    let received = receiver.spans();
    assert!(
        received.iter().all(|(service, _)| service == "signoff"),
        "service names: {:?}",
        received
            .iter()
            .map(|(service, _)| service)
            .collect::<Vec<_>>()
    );
    let spans: Vec<&Span> = received
        .iter()
        .map(|(_, span)| span)
        .filter(|span| attribute(&span.attributes, "task.id").as_deref() == Some(task.as_str()))
        .collect();
    // The first message: message -> run -> model_turn, tool_call (the read), pause.
    let run = one(&spans, "run");
    assert_eq!(
        attribute(&run.attributes, "context.id").as_deref(),
        Some(context.as_str())
    );
    let first_message = spans
        .iter()
        .copied()
        .find(|span| span.name == "message" && span.span_id == run.parent_span_id)
        .expect("the run's parent is its message");
    assert_eq!(first_message.trace_id, run.trace_id);
    assert_eq!(
        attribute(&first_message.attributes, "context.id").as_deref(),
        Some(context.as_str())
    );
    assert_eq!(children(&spans, "model_turn", run).len(), 1);
    let reads = children(&spans, "tool_call", run);
    assert_eq!(reads.len(), 1);
    assert_eq!(
        attribute(&reads[0].attributes, "tool").as_deref(),
        Some("read_file")
    );
    assert_eq!(children(&spans, "pause", run).len(), 1);

    // The decision: message -> decision -> resume -> tool_call (write, delete), model_turn.
    let decision = one(&spans, "decision");
    assert_eq!(
        attribute(&decision.attributes, "channel").as_deref(),
        Some("a2a")
    );
    assert!(
        spans.iter().any(|span| span.name == "message"
            && span.span_id == decision.parent_span_id
            && span.trace_id == decision.trace_id),
        "the decision's parent is the message that carried it"
    );
    let resume = one(&spans, "resume");
    assert_eq!(resume.parent_span_id, decision.span_id);
    let mut ran: Vec<String> = children(&spans, "tool_call", resume)
        .iter()
        .filter_map(|span| attribute(&span.attributes, "tool"))
        .collect();
    ran.sort();
    assert_eq!(ran, ["delete_file", "write_file"]);
    assert_eq!(children(&spans, "model_turn", resume).len(), 1);
}
