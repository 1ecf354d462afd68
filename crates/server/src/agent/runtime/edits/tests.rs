//! Edits against the routing of what runs: the stricter-than rule on its own, and a property
//! over generated edits decided through the real decision planner of a real runtime (an
//! agents file with `ask` rules to groups and a two-person rule, Cedar policies with `@ask`,
//! `@approvers` and `@requester_may_approve`).

use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Value};
use signoff_protocol::hitl::{ActionRequest, Decision, Dialect, SIGNOFF_WHY};
use signoff_protocol::{Message, Role, TaskState};

use super::*;
use crate::agent::approvals::args_sha256;
use crate::agent::approvals::Actor;
use crate::agent::approvals::Decider;
use crate::agent::cedar::{CedarPolicies, PolicyGate};
use crate::agent::config::AgentsFile;
use crate::agent::config::ApproverEntry;
use crate::agent::model::ModelToolCall;
use crate::agent::notify::Notifications;
use crate::agent::policy::CallApprovers;
use crate::agent::runtime::decide::Count;
use crate::agent::runtime::Limits;
use crate::store::{BatchRow, BatchState, CallStatus, Channel, Database, Store, Verdict};

fn approvers(entries: &[&str], requester_may_approve: bool, quorum: u32) -> CallApprovers {
    CallApprovers {
        entries: entries
            .iter()
            .map(|entry| ApproverEntry::parse(entry).unwrap())
            .collect(),
        requester_may_approve,
        quorum,
        ladder: Default::default(),
        handover_may_widen: false,
    }
}

#[test]
fn an_edit_may_need_fewer_or_the_same_people_never_more() {
    let alone = CallApprovers::requester_alone();
    let sre_two = approvers(&["group:sre"], false, 2);
    let sre = approvers(&["group:sre"], true, 1);
    let wider = approvers(&["group:sre", "group:ops"], true, 1);
    let groups = ["sre".to_owned()];
    let check = |asked: &CallApprovers, edited: &CallApprovers| {
        no_stricter(asked, edited, "carol", &groups)
    };
    assert!(check(&alone, &alone));
    assert!(check(&sre_two, &sre_two));
    // The requester's harmless call edited into one that needs sre under the two-person rule.
    assert!(!check(&alone, &sre_two));
    // More approvals, or the requester shut out, is more.
    assert!(!check(&sre, &approvers(&["group:sre"], true, 2)));
    assert!(!check(&sre, &approvers(&["group:sre"], false, 1)));
    // Other people than those asked (ops is not sre) is more; more of them is not.
    assert!(!check(&sre, &approvers(&["group:ops"], true, 1)));
    assert!(check(&sre, &wider));
    assert!(!check(&wider, &sre));
    // A call asked of sre, edited into one for the requester alone: sre's approvals are not
    // the requester's.
    assert!(!check(&sre, &alone));
    // The requester alone, edited into a call for a group she is in: she still may.
    assert!(check(&alone, &sre));
    assert!(!no_stricter(&alone, &sre, "erin", &["ops".to_owned()]));
    assert!(check(&alone, &approvers(&["user:carol"], true, 1)));
    // Under a two-person rule as asked, the edit's own rule for the requester does not matter.
    assert!(check(&sre_two, &approvers(&["group:sre"], true, 1)));
}

const AGENTS: &str = r#"
[[agents]]
name = "demo"

[[agents.tools]]
kind = "builtin_files"
require_approval = ["write_file", "delete_file"]

[[agents.rules]]
tool = "write_file"
action = "ask"
when = { path = { glob = "prod/**" } }
approvers = ["group:sre"]
requester_may_approve = false
quorum = 2

[[agents.rules]]
tool = "write_file"
action = "ask"
when = { path = { glob = "ops/**" } }
approvers = ["group:sre", "group:ops"]

[[agents.rules]]
tool = "write_file"
action = "allow"
when = { path = { glob = "free/**" } }

[[agents.rules]]
tool = "write_file"
action = "deny"
when = { path = { glob = ".git/**" } }
"#;

const POLICIES: &str = r#"
@id("protected-deletes")
@ask("deleting a protected file")
@approvers("group:sec")
@requester_may_approve("false")
permit (principal, action, resource == Signoff::Tool::"delete_file")
when { context.args.path like "protected*" };

@id("no-secrets")
forbid (principal, action, resource == Signoff::Tool::"write_file")
when { context.args.path like "secrets/*" };
"#;

const PATHS: &[&str] = &[
    "notes/a.txt",
    "prod/deploy.txt",
    "ops/run.txt",
    "free/z.txt",
    ".git/config",
    "secrets/key",
    "protected-1.txt",
    "protected/db",
];

/// The requester, then the people who decide: (subject, groups).
const PEOPLE: &[(&str, &[&str])] = &[
    ("carol", &["sre"]),
    ("bob", &["sre"]),
    ("dave", &["sre"]),
    ("erin", &["ops"]),
    ("sam", &["sec"]),
    ("sid", &["sec", "sre"]),
    ("frank", &[]),
];

fn person(index: usize) -> Decider {
    let (subject, groups) = PEOPLE[index];
    Decider {
        subject: subject.to_owned(),
        email: None,
        groups: groups.iter().map(|group| (*group).to_owned()).collect(),
        auth: None,
    }
}

fn args(tool: &str, path: &str) -> Value {
    match tool {
        "write_file" => json!({"path": path, "content": "x"}),
        _ => json!({"path": path}),
    }
}

async fn runtime(dir: &std::path::Path) -> Arc<Runtime> {
    let file = AgentsFile::parse(AGENTS).unwrap();
    let agents = crate::agent::build_agents(&file, dir).await.unwrap();
    let store = Store::open(&Database::Sqlite(dir.to_path_buf()))
        .await
        .unwrap();
    let live = CedarPolicies::parse(&[("t.cedar".into(), POLICIES.into())], "prod").unwrap();
    let gate = PolicyGate { live, shadow: None };
    Runtime::with_notifications(
        store,
        agents,
        Limits::default(),
        Notifications::none(),
        gate,
    )
}

/// The call as the pause stores it (with the gate's `why`), if the gate holds it.
async fn held(runtime: &Runtime, tool: &str, args: Value) -> Option<ActionRequest> {
    let agent = runtime.agent_by_key("default/demo").unwrap();
    let groups = vec!["sre".to_owned()];
    let requester = Requester {
        user: "carol",
        groups: &groups,
        context_id: "ctx",
        task_id: "",
        subagent: false,
    };
    let call = ModelToolCall::new("call_1", tool, args.clone());
    let screened = runtime
        .screen_calls(&agent, &requester, &[call])
        .await
        .unwrap()
        .remove(0);
    if !screened.held {
        return None;
    }
    let mut metadata = signoff_protocol::Metadata::default();
    if let Some(why) = &screened.why {
        metadata.insert(SIGNOFF_WHY.to_owned(), why.to_value());
    }
    let spec = agent.tools.get(tool).unwrap().spec;
    Some(ActionRequest {
        id: "call_1".into(),
        name: tool.into(),
        args,
        description: None,
        server: Some(spec.source),
        approval_id: None,
        via: None,
        metadata,
    })
}

/// Whether the distinct `approvers` satisfy `routing`, by the README's words: with nobody
/// named only the requester approves; else people an entry names, the requester only when
/// the two-person rule is off; at least `quorum` of them.
fn satisfies(routing: &CallApprovers, approvers: &[String]) -> bool {
    let eligible = |subject: &String| {
        let Some((_, groups)) = PEOPLE.iter().find(|(name, _)| name == subject) else {
            return false;
        };
        let requester = subject == "carol";
        if routing.entries.is_empty() {
            return requester;
        }
        (!requester || routing.requester_may_approve)
            && routing.entries.iter().any(|entry| match entry {
                ApproverEntry::Group(group) => groups.contains(&group.as_str()),
                ApproverEntry::User(user) => user == subject,
            })
    };
    approvers.iter().filter(|subject| eligible(subject)).count() as u32 >= routing.quorum
}

/// One vote: who (an index into PEOPLE), an edit to a path (an index into PATHS), approve.
type Vote = (usize, Option<usize>, bool);

/// Decides the call `asked` with `votes`, one after the other, through the real planner; when
/// a vote lets the call run, checks that its approvers satisfy the routing the gate gives the
/// arguments that run.
fn run_case(
    rt: &tokio::runtime::Runtime,
    runtime: &Runtime,
    tool: &str,
    asked: usize,
    votes: &[Vote],
) -> Result<(), TestCaseError> {
    let Some(request) = rt.block_on(held(runtime, tool, args(tool, PATHS[asked]))) else {
        return Ok(());
    };
    let mut row = TaskRow::new(
        "t-1".into(),
        "ctx".into(),
        "carol".into(),
        "default/demo".into(),
        TaskState::InputRequired,
        "[]".into(),
    );
    row.requester_groups = vec!["sre".into()];
    let mut batch = BatchRow {
        id: 1,
        task_id: "t-1".into(),
        state: BatchState::Pending,
        requests: Value::Array(vec![request.to_value()]),
        created_at: crate::store::now(),
        decided_at: None,
        expires_at: None,
        votes: Vec::new(),
        handed_to: Default::default(),
    };
    for &(who, edit, approve) in votes {
        let mut data = json!({"decision_type": if approve { "approve" } else { "deny" }});
        if let (Some(edit), true) = (edit, approve) {
            data["modified_args"] = json!({"call_1": args(tool, PATHS[edit])});
        }
        let decision = Decision::from_data(&data).unwrap();
        let echo = Message::new("m", Role::User, decision.to_parts(Dialect::Native));
        let by = Actor {
            channel: Channel::Rest,
            decider: person(who),
            auth: None,
        };
        let Ok(planned) = runtime.plan_decision(by, &row, &batch, &decision, echo, Count::Votes)
        else {
            continue; // refused: nothing changes
        };
        if planned.batch_state == BatchState::Pending {
            batch.votes.extend(planned.votes);
            continue;
        }
        let verdict = &planned.verdicts[0];
        if verdict.status != CallStatus::Approved {
            return Ok(());
        }
        let ran = verdict.run_args.clone().unwrap();
        let sha = args_sha256(&ran);
        let mut approvers: Vec<String> = Vec::new();
        for vote in batch.votes.iter().chain(&planned.votes) {
            if vote.verdict == Verdict::Approve
                && vote.args_sha256 == sha
                && !approvers.contains(&vote.user_id)
            {
                approvers.push(vote.user_id.clone());
            }
        }
        // The routing of what runs, as if the model had asked for it.
        let Some(own) = rt.block_on(held(runtime, tool, ran.clone())) else {
            let agent = runtime.agent_by_key("default/demo").unwrap();
            let tool = agent.tools.get(tool).unwrap();
            let groups = vec!["sre".to_owned()];
            let requester = Requester {
                user: "carol",
                groups: &groups,
                context_id: "ctx",
                task_id: "",
                subagent: false,
            };
            let (_, decided) =
                runtime.gate(&agent, &requester, &tool, &ran, chrono::Utc::now(), None);
            prop_assert_ne!(decided.outcome(), GateOutcome::Deny, "denied {} ran", ran);
            return Ok(());
        };
        let routing = runtime
            .approvals
            .approvers()
            .approvers_of("default/demo", &own);
        prop_assert!(
            satisfies(&routing, &approvers),
            "{} ran on the approvals of {:?}, but {}",
            ran,
            approvers,
            routing.requirement()
        );
        return Ok(());
    }
    Ok(())
}

#[test]
fn what_runs_satisfies_the_routing_of_what_runs() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let runtime = rt.block_on(runtime(dir.path()));
    let vote = (
        0..PEOPLE.len(),
        proptest::option::weighted(0.6, 0..PATHS.len()),
        proptest::bool::weighted(0.85),
    );
    let case = (
        prop_oneof![Just("write_file"), Just("delete_file")],
        0..PATHS.len(),
        proptest::collection::vec(vote, 1..7),
    );
    let mut runner = TestRunner::new(Config::with_cases(1500));
    runner
        .run(&case, |(tool, asked, votes)| {
            run_case(&rt, &runtime, tool, asked, &votes)
        })
        .unwrap();
}

/// Both cases of an edit past a stricter rule, by hand: the requester's harmless call, approved
/// by her with edited arguments that need sre under the two-person rule, or a policy's
/// approvers, is refused.
#[test]
fn the_requester_cannot_edit_her_call_past_a_stricter_rule() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let runtime = rt.block_on(runtime(dir.path()));
    for (tool, edited) in [
        ("write_file", "prod/deploy.txt"),
        ("delete_file", "protected-1.txt"),
    ] {
        let request = rt
            .block_on(held(&runtime, tool, args(tool, "notes/a.txt")))
            .unwrap();
        let resolved = signoff_protocol::hitl::resolve(
            &[request],
            &Decision::from_data(
                &json!({"decision_type": "approve", "modified_args": {"call_1": args(tool, edited)}}),
            )
            .unwrap(),
        )
        .unwrap();
        let mut row = TaskRow::new(
            "t-1".into(),
            "ctx".into(),
            "carol".into(),
            "default/demo".into(),
            TaskState::InputRequired,
            "[]".into(),
        );
        row.requester_groups = vec!["sre".into()];
        let err = runtime
            .check_decided_calls(&row, &resolved)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!(
                "modified_args for call_1 ({tool}) need more than the call as asked"
            )),
            "{err}"
        );
        assert!(err.contains("the requester may not approve"), "{err}");
    }
}
