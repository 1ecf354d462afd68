//! Call ids chosen by the model decide nothing. An OpenAI-compatible endpoint (played by a
//! loopback server) answers with tool calls whose ids it picks: shaped like the ids the server
//! composes for a subagent's nested calls (`{call}/{subagent call}`), repeated, empty, very
//! long, Unicode. Whatever they are, the batch shows exactly the calls that wait, nothing runs
//! before a person decides, and what runs is what the person approved.

use std::collections::BTreeMap;
use std::sync::Mutex;

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestCaseError, TestRunner};
use serde_json::{json, Value};

use crate::stub::{json_response, sse, Stub};
use crate::support::*;

const BOSS: &str = "/api/a2a/default/boss";
/// The agent tool through which the boss asks `default/files`.
const DELEGATE: &str = "default__files";

/// The boss on the endpoint at `base`, with `default/files` (the scripted model) as its subagent;
/// both gate writes and deletes.
fn agents_toml(base: &str) -> String {
    format!(
        r#"
[[agents]]
name = "files"
namespace = "default"

[[agents.tools]]
kind = "builtin_files"
require_approval = ["write_file", "delete_file"]

[[agents]]
name = "boss"
namespace = "default"
model = {{ kind = "openai", base_url = "{base}/v1", model = "m" }}
agents = ["default/files"]

[[agents.tools]]
kind = "builtin_files"
require_approval = ["write_file", "delete_file"]
"#
    )
}

/// One call the model proposes: the id it picks, the tool, the arguments.
#[derive(Debug, Clone)]
struct Proposed {
    id: String,
    name: &'static str,
    args: Value,
}

/// The model's answer with `calls`, as OpenAI streams it: each call's id, name and arguments in
/// one delta, then the finish.
fn tool_calls_sse(calls: &[Proposed]) -> Vec<u8> {
    let mut out = String::new();
    for (index, call) in calls.iter().enumerate() {
        let chunk = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{
            "index": index, "id": call.id, "type": "function",
            "function": {"name": call.name, "arguments": call.args.to_string()}}]},
            "finish_reason": null}]});
        out.push_str(&format!("data: {chunk}\n\n"));
    }
    let finish = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]});
    out.push_str(&format!("data: {finish}\n\ndata: [DONE]\n\n"));
    out.into_bytes()
}

fn text_sse(text: &str) -> Vec<u8> {
    let chunk =
        json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    let finish = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    format!("data: {chunk}\n\ndata: {finish}\n\ndata: [DONE]\n\n").into_bytes()
}

/// An endpoint that proposes `calls` for the person's message and answers "Done." once it has
/// read tool results.
async fn model_proposing(calls: Vec<Proposed>) -> Stub {
    let calls = Mutex::new(calls);
    Stub::start(move |request| {
        let body = request.json();
        let Some(messages) = body["messages"].as_array() else {
            return json_response(400, &json!({"error": "no messages"}));
        };
        if messages.last().is_some_and(|last| last["role"] == "tool") {
            return sse(text_sse("Done."));
        }
        sse(tool_calls_sse(&calls.lock().unwrap()))
    })
    .await
}

/// What a person is asked about, or what runs: a tool and its arguments.
type Shown = (String, Value);

/// The calls a turn of `proposed` must put before the person: each gated call of the boss, and
/// the subagent's delete for each agent-tool call (the agent-tool call itself runs unasked).
fn expected_batch(proposed: &[Proposed]) -> Vec<Shown> {
    let mut shown: Vec<Shown> = proposed
        .iter()
        .filter_map(|call| match call.name {
            "write_file" => Some(("write_file".to_owned(), call.args.clone())),
            DELEGATE => {
                let request = call.args["request"].as_str().unwrap();
                let path = request.strip_prefix("delete ").unwrap();
                Some(("delete_file".to_owned(), json!({"path": path})))
            }
            _ => None,
        })
        .collect();
    shown.sort_by_key(|(name, args)| format!("{name}{args}"));
    shown
}

/// The action requests of the last interrupt in `results`.
fn action_requests(results: &[Value]) -> Vec<Value> {
    let interrupts = data_parts(results, "interrupt_data");
    let last = interrupts.last().expect("an interrupt");
    last["action_requests"].as_array().unwrap().clone()
}

fn shown(requests: &[Value]) -> Vec<Shown> {
    let mut shown: Vec<Shown> = requests
        .iter()
        .map(|request| {
            (
                request["name"].as_str().unwrap().to_owned(),
                request["args"].clone(),
            )
        })
        .collect();
    shown.sort_by_key(|(name, args)| format!("{name}{args}"));
    shown
}

/// Seeds the sandbox with the file each delegation of `proposed` asks to delete.
fn seed_victims(app: &TestApp, proposed: &[Proposed]) {
    std::fs::create_dir_all(app.sandbox()).unwrap();
    for (_, args) in expected_batch(proposed) {
        let path = args["path"].as_str().unwrap();
        if path.starts_with("victim-") {
            std::fs::write(app.sandbox().join(path), "keep me").unwrap();
        }
    }
}

/// Whether what the `requests` asked would have changed the sandbox has happened.
fn effect_done(app: &TestApp, name: &str, args: &Value) -> bool {
    let path = app.sandbox().join(args["path"].as_str().unwrap());
    match name {
        "write_file" => std::fs::read_to_string(&path).ok().as_deref() == args["content"].as_str(),
        "delete_file" => !path.exists(),
        other => panic!("no effect known for {other}"),
    }
}

/// Runs one chat turn of `proposed` and decides its batch with `verdicts` (one per shown call,
/// in the batch's order; `true` approves). Checks that nothing runs before the decision, that
/// the batch shows exactly the gated calls, and that exactly the approved ones run.
async fn check_turn(proposed: Vec<Proposed>, verdicts: Vec<bool>) -> Result<(), TestCaseError> {
    let model = model_proposing(proposed.clone()).await;
    let app = spawn_with_agents(&agents_toml(&model.base), |_| {}).await;
    seed_victims(&app, &proposed);

    let paused = send_stream(&app, BOSS, message_v03("go", None, None)).await;
    let paused_state = states(&paused).pop();
    prop_assert_eq!(paused_state.as_deref(), Some("input-required"));
    let requests = action_requests(&paused);
    prop_assert_eq!(
        shown(&requests),
        expected_batch(&proposed),
        "{:#?}",
        requests
    );
    for (name, args) in shown(&requests) {
        prop_assert!(
            !effect_done(&app, &name, &args),
            "{name} {args} ran before anyone decided"
        );
    }
    // The inbox shows the same batch, as the only one waiting.
    let (_, inbox) = app.get("/api/approvals").await;
    let batches = inbox["approvals"].as_array().unwrap();
    prop_assert_eq!(batches.len(), 1, "{}", inbox);
    prop_assert_eq!(
        shown(batches[0]["calls"].as_array().unwrap()),
        shown(&requests)
    );

    let (task, context) = (task_id(&paused), context_id(&paused));
    let mut decisions = BTreeMap::new();
    for (request, approve) in requests.iter().zip(verdicts.iter().cycle()) {
        let id = request["id"].as_str().unwrap().to_owned();
        decisions.insert(id, if *approve { "approve" } else { "deny" });
    }
    prop_assert_eq!(
        decisions.len(),
        requests.len(),
        "every shown call has its own id"
    );
    let decided = send_stream(
        &app,
        BOSS,
        decision(
            &task,
            &context,
            json!({"decision_type": "batch", "decisions": decisions}),
        ),
    )
    .await;
    let decided_state = states(&decided).pop();
    prop_assert_eq!(decided_state.as_deref(), Some("completed"));
    for (request, approve) in requests.iter().zip(verdicts.iter().cycle()) {
        let name = request["name"].as_str().unwrap();
        prop_assert_eq!(
            effect_done(&app, name, &request["args"]),
            *approve,
            "{} {} was {}",
            name,
            request["args"],
            if *approve { "approved" } else { "rejected" }
        );
    }
    app.stop().await;
    Ok(())
}

fn read(id: &str) -> Proposed {
    Proposed {
        id: id.to_owned(),
        name: "read_file",
        args: json!({"path": "readme.txt"}),
    }
}

fn write(id: &str, k: usize) -> Proposed {
    Proposed {
        id: id.to_owned(),
        name: "write_file",
        args: json!({"path": format!("harmless-{k}.txt"), "content": "fine"}),
    }
}

fn delegate(id: &str, k: usize) -> Proposed {
    Proposed {
        id: id.to_owned(),
        name: DELEGATE,
        args: json!({"request": format!("delete victim-{k}.txt")}),
    }
}

#[tokio::test]
async fn a_read_whose_id_names_a_subagents_call_does_not_approve_it() {
    // The read runs at once under the id the subagent's delete would get nested under the
    // agent-tool call; the delete must still wait for a person, who rejects it.
    check_turn(
        vec![read("call_1/call_1"), delegate("call_1", 0)],
        vec![false],
    )
    .await
    .unwrap();
    // The same with a made-up tool and agent-tool id.
    check_turn(
        vec![
            Proposed {
                id: "x/call_1".into(),
                name: "no_such_tool",
                args: json!({}),
            },
            delegate("x", 0),
        ],
        vec![false],
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn a_write_whose_id_names_a_subagents_call_does_not_hide_it() {
    // The batch shows both the harmless write and the subagent's delete; the person approves
    // the write only, and only the write runs.
    check_turn(
        vec![delegate("call_1", 0), write("call_1/call_1", 0)],
        vec![true, false],
    )
    .await
    .unwrap();
    check_turn(
        vec![delegate("call_1", 0), write("call_1/call_1", 0)],
        vec![false, true],
    )
    .await
    .unwrap();
}

/// An id the server itself gives, or a plain one a model might.
fn base_id() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["call_1", "call_2", "x", ""]).prop_map(str::to_owned)
}

/// Ids a model could pick: the server's own shapes and the nested shape built on them (the ones
/// that try to pass for a subagent's call), separators, repeats, empty, long, Unicode.
fn chosen_id() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => base_id(),
        3 => (base_id(), 1u8..3).prop_map(|(base, n)| format!("{base}/call_{n}")),
        1 => prop::sample::select(vec![
            "/".to_owned(),
            "x/".to_owned(),
            "a".repeat(5000),
            "调用/🙂\u{202e}".to_owned(),
            "call_1\n".to_owned(),
        ]),
        1 => "[a-z_0-9/]{1,12}",
    ]
}

/// How a generated call's id is picked: on its own, or after an earlier call's id of the same
/// turn (its very id, or the id a subagent's call would get nested under it).
#[derive(Debug, Clone)]
enum IdChoice {
    Own(String),
    SameAs(usize),
    NestedUnder(usize, u8),
}

fn id_choice() -> impl Strategy<Value = IdChoice> {
    prop_oneof![
        chosen_id().prop_map(IdChoice::Own),
        any::<usize>().prop_map(IdChoice::SameAs),
        (any::<usize>(), 1u8..3).prop_map(|(index, n)| IdChoice::NestedUnder(index, n)),
    ]
}

/// The ids of a turn from their choices; an earlier call is picked by index modulo the calls
/// before it.
fn resolve_ids(first: String, choices: &[IdChoice]) -> Vec<String> {
    let mut ids = vec![first];
    for choice in choices {
        let earlier = |index: usize| ids[index % ids.len()].clone();
        let id = match choice {
            IdChoice::Own(id) => id.clone(),
            IdChoice::SameAs(index) => earlier(*index),
            IdChoice::NestedUnder(index, n) => format!("{}/call_{n}", earlier(*index)),
        };
        ids.push(id);
    }
    ids
}

#[test]
fn model_chosen_ids_never_decide_what_runs_or_what_is_shown() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 32,
        // A failing case can wait out a bound of the test's waits: shrink only a little.
        max_shrink_iters: 8,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let strategy = (
        chosen_id(),
        prop::collection::vec((0u8..3, id_choice()), 1..4),
        prop::collection::vec(any::<bool>(), 1..4),
    );
    runner
        .run(&strategy, |(first, calls, verdicts)| {
            let choices: Vec<IdChoice> = calls.iter().map(|(_, choice)| choice.clone()).collect();
            let ids = resolve_ids(first, &choices);
            // A delegation first, so a subagent's call is there to be approved or hidden.
            let mut proposed = vec![delegate(&ids[0], 0)];
            for (k, ((kind, _), id)) in calls.iter().zip(&ids[1..]).enumerate() {
                let k = k + 1;
                proposed.push(match kind {
                    0 => read(id),
                    1 => write(id, k),
                    _ => delegate(id, k),
                });
            }
            runtime.block_on(check_turn(proposed, verdicts))
        })
        .unwrap();
}
