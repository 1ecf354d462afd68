//! Bench: what the Cedar policies cost a tool call. One call evaluated (entities built, the
//! policies of its tool and the general ones run) against a set of 10 policies and one of 1,000
//! (spread over 100 tools, as a deployment's would be, plus 10 that apply to every tool), many
//! times in a row, and the 1,000 again with a quarter of them reading `context.counts` (the
//! call carrying its counts, as a turn reads them before the evaluation; the store read is
//! not in the figure); prints the median and the 99th percentile per call. Run with
//! `cargo bench -p signoff-server --bench policies`.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use serde_json::json;
use signoff_server::agent::cedar::{CallCounts, CallFacts, CedarPolicies, ToolFacts, ToolHints};

const CALLS: usize = 20_000;

/// `count` policies: one in a hundred for every tool, the rest on tools `tool0`…`tool99`, in
/// the shapes the worked examples use (forbid on an argument, ask with approvers, permit by
/// group, time windows).
fn policy_set(count: usize, counting: bool) -> CedarPolicies {
    let mut text = String::new();
    for index in 0..count {
        let tool = index % 100;
        let policy = match (index % 100 == 0, index % 4) {
            (true, _) => format!(
                "@id(\"general{index}\") forbid (principal, action, resource) \
                 when {{ context.args has path && context.args.path like \"/etc{index}/*\" }};"
            ),
            (false, 0) => format!(
                "@id(\"p{index}\") @reason(\"no\") forbid (principal, action, \
                 resource == Signoff::Tool::\"tool{tool}\") \
                 when {{ context.args has path && context.args.path like \"secret{index}/*\" }};"
            ),
            (false, 1) => format!(
                "@id(\"p{index}\") @ask(\"x\") @approvers(\"group:sre\") @quorum(\"2\") \
                 permit (principal, action, resource == Signoff::Tool::\"tool{tool}\") \
                 when {{ context.environment == \"prod{index}\" }};"
            ),
            (false, 2) => format!(
                "@id(\"p{index}\") permit (principal in Signoff::Group::\"g{index}\", action, \
                 resource == Signoff::Tool::\"tool{tool}\");"
            ),
            (false, _) if counting => format!(
                "@id(\"p{index}\") @ask(\"busy\") permit (principal, action, \
                 resource == Signoff::Tool::\"tool{tool}\") \
                 when {{ context.counts.tool_allowed_by_user_last_hour >= {index} \
                 || !context.counts.approved_in_task.contains(\"run{index}\") \
                 || context.counts.sum_by_user_last_day.mode > {index} }};"
            ),
            (false, _) => format!(
                "@id(\"p{index}\") @ask(\"late\") permit (principal, action, \
                 resource == Signoff::Tool::\"tool{tool}\") \
                 when {{ context.time.hour >= 18 && context.time.unix > {index} }};"
            ),
        };
        text.push_str(&policy);
        text.push('\n');
    }
    CedarPolicies::parse(&[("bench.cedar".into(), text)], "prod").unwrap()
}

fn bench(count: usize, counting: bool) {
    let policies = policy_set(count, counting);
    let counts = CallCounts {
        tool_allowed_in_task: 3,
        tool_allowed_by_user_last_hour: 7,
        approved_in_task: vec!["write_file".into(), "run_tests".into()],
        sum_by_user_last_day: [("mode".to_owned(), 40)].into(),
        ..CallCounts::default()
    };
    let tool = ToolFacts {
        name: "tool7".into(),
        source: "files".into(),
        hints: ToolHints::default(),
    };
    let groups = vec!["sre".to_owned(), "oncall".to_owned()];
    let args = json!({"path": "notes/today.txt", "content": "hello", "mode": 1});
    let now = chrono::Utc::now();
    let call = CallFacts {
        user: "alice",
        groups: &groups,
        tool: &tool,
        args: &args,
        agent: "default/demo",
        subagent: false,
        now,
        counts: counting.then_some(&counts),
    };
    for _ in 0..CALLS / 10 {
        std::hint::black_box(policies.evaluate(&call));
    }
    let mut took: Vec<u128> = (0..CALLS)
        .map(|_| {
            let started = Instant::now();
            std::hint::black_box(policies.evaluate(&call));
            started.elapsed().as_nanos()
        })
        .collect();
    took.sort_unstable();
    let median = took[took.len() / 2] as f64 / 1000.0;
    let p99 = took[took.len() * 99 / 100] as f64 / 1000.0;
    let label = if counting { " with counts" } else { "" };
    println!(
        "{count:>5} policies{label}: {median:>7.1} µs median, {p99:>7.1} µs p99 per call ({CALLS} calls)"
    );
}

fn main() {
    bench(10, false);
    bench(1000, false);
    bench(1000, true);
}
