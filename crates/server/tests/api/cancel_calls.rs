//! A task canceled while an approved call runs: the call's record gets a result saying so, so
//! the audit never shows an approved call without an outcome (it showed `approve` and nothing
//! more, whether the call had run or not).

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::StreamExt;
use serde_json::{json, Value};
use signoff_protocol::hitl::Decision;
use signoff_protocol::rest::AuditVerdict;
use signoff_protocol::{Message, Part, Role};
use signoff_server::agent::approvals::{Actor, Channel, Command};
use signoff_server::agent::model::{Model, ModelEvent, ModelRequest, ModelStream, ModelToolCall};
use signoff_server::agent::tools::{ToolError, ToolSource, ToolSpec, Toolbox};
use signoff_server::agent::{Agent, Decider, Limits, Runtime};
use signoff_server::store::Store;
use tokio::sync::mpsc;

use crate::support::*;

/// A model that asks for one call of `slow`.
struct AsksForSlow;

impl Model for AsksForSlow {
    fn turn(&self, _request: ModelRequest) -> ModelStream {
        let call = ModelToolCall {
            id: "call_1".into(),
            model_id: None,
            name: "slow".into(),
            args: json!({}),
        };
        futures_util::stream::iter([Ok(ModelEvent::ToolCall(call))]).boxed()
    }
}

/// A tool that says it started, then never finishes.
struct Slow {
    started: mpsc::UnboundedSender<()>,
}

impl ToolSource for Slow {
    fn name(&self) -> &str {
        "slow"
    }

    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ToolSpec>, ToolError>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn call<'a>(
        &'a self,
        _tool: &'a str,
        _args: Value,
        _timeout: Duration,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        let _ = self.started.send(());
        Box::pin(futures_util::future::pending())
    }
}

#[tokio::test]
async fn a_call_running_when_its_task_is_canceled_gets_a_result_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&test_database(dir.path()).await).await.unwrap();
    let (started, mut has_started) = mpsc::unbounded_channel();
    let mut tools = Toolbox::new();
    let spec = ToolSpec {
        name: "slow".into(),
        description: "Takes its time.".into(),
        input_schema: json!({"type": "object"}),
        source: "slow".into(),
        hints: Default::default(),
    };
    tools.add(spec, true, Arc::new(Slow { started }));
    let agent = Arc::new(Agent {
        namespace: "default".into(),
        name: "slow".into(),
        description: String::new(),
        instruction: String::new(),
        model: Arc::new(AsksForSlow),
        tools,
        approvals: Default::default(),
        subagents: Default::default(),
        serve_mcp: false,
        reviewer: None,
    });
    let runtime = Runtime::new(store.clone(), vec![agent.clone()], Limits::default());
    let message = Message::new("m-1".to_owned(), Role::User, vec![Part::text("go")]);
    let sent = runtime
        .send(&Decider::subject("local"), &agent, message)
        .await
        .unwrap();
    runtime.log().wait_final(&sent.task_id, 0).await.unwrap();

    let local = Actor {
        channel: Channel::Rest,
        decider: Decider::subject("local"),
        auth: None,
    };
    let approve = Command::decide(Decision::approve_all());
    let (_, batch, _) = runtime
        .apply(&sent.task_id, &local, approve)
        .await
        .unwrap()
        .into_decided()
        .unwrap();
    within("the approved call to start", has_started.recv())
        .await
        .unwrap();
    let canceling = Actor {
        channel: Channel::Cancel,
        ..local
    };
    runtime
        .apply(&sent.task_id, &canceling, Command::Cancel)
        .await
        .unwrap();

    let entry = runtime
        .approvals()
        .batch_outcome(&sent.task_id, batch)
        .await
        .unwrap()
        .unwrap();
    let call = &entry.calls[0];
    assert_eq!(call.verdict, AuditVerdict::Approve);
    let result = call
        .result
        .as_ref()
        .expect("the canceled call has a result");
    assert_eq!(result["isError"], true, "{result}");
    let said = result["content"][0]["text"].as_str().unwrap();
    assert!(said.contains("canceled"), "{said}");
    runtime.shutdown(Duration::from_secs(5)).await;
    store.close().await;
}
