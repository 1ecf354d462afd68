//! The policies' unit tests: reading, annotations, evaluation, counts and sums.

use super::*;
use serde_json::json;

fn policies(text: &str) -> CedarPolicies {
    CedarPolicies::parse(&[("p.cedar".into(), text.into())], "prod").unwrap()
}

fn tool(name: &str) -> ToolFacts {
    ToolFacts {
        name: name.into(),
        source: "files".into(),
        hints: ToolHints::default(),
    }
}

fn eval(set: &CedarPolicies, tool: &ToolFacts, groups: &[&str], args: Value) -> CedarOutcome {
    let groups: Vec<String> = groups.iter().map(|group| (*group).to_owned()).collect();
    set.evaluate(&CallFacts {
        user: "alice",
        groups: &groups,
        tool,
        args: &args,
        agent: "default/demo",
        subagent: false,
        counts: None,
        now: DateTime::parse_from_rfc3339("2026-11-26T22:30:00Z")
            .unwrap()
            .with_timezone(&Utc),
    })
}

fn eval_counted(
    set: &CedarPolicies,
    tool: &ToolFacts,
    counts: Option<&CallCounts>,
) -> CedarOutcome {
    set.evaluate(&CallFacts {
        user: "alice",
        groups: &[],
        tool,
        args: &json!({}),
        agent: "default/demo",
        subagent: false,
        counts,
        now: Utc::now(),
    })
}

const COUNTING: &str = r#"
    @id("reads")
    permit (principal, action, resource == Signoff::Tool::"read_file")
    when { context.counts.tool_allowed_by_user_last_hour < 2
           && context.counts.tool_allowed_in_task < 5 };
    @id("deploy-after-tests")
    forbid (principal, action, resource == Signoff::Tool::"deploy")
    unless { context.counts.approved_in_task.contains("run_tests") };
    "#;

const CAPPED: &str = r#"
    @id("spend-cap")
    @ask("over the day's spending cap")
    permit (principal, action, resource == Signoff::Tool::"pay")
    when { context.args has amount
           && context.counts.sum_by_user_last_day.amount + context.args.amount > 100 };
    @id("small-payments")
    permit (principal, action, resource == Signoff::Tool::"pay")
    when { context.args has amount
           && context.counts.sum_by_user_last_day.amount + context.args.amount <= 100 };
    "#;

#[test]
fn a_cap_reads_the_sum_of_an_argument_and_a_first_call_sums_to_zero() {
    let set = policies(CAPPED);
    let pay = tool("pay");
    let eval = |amount: i64, counts: &CallCounts| {
        set.evaluate(&CallFacts {
            user: "alice",
            groups: &[],
            tool: &pay,
            args: &json!({"amount": amount, "to": "bob"}),
            agent: "default/demo",
            subagent: false,
            counts: Some(counts),
            now: Utc::now(),
        })
    };
    // No earlier payment: the sum is there, at 0.
    let mut counts = CallCounts::default();
    assert_eq!(
        eval(60, &counts),
        CedarOutcome::Allow {
            policy: "small-payments".into()
        }
    );
    counts.add_allowed(&json!({"amount": 60, "to": "bob"}));
    assert_eq!(counts.sum_by_user_last_day.get("amount"), Some(&60));
    assert!(matches!(
        eval(50, &counts),
        CedarOutcome::Ask(ask) if ask.policy == "spend-cap"
    ));
    assert_eq!(
        eval(40, &counts),
        CedarOutcome::Allow {
            policy: "small-payments".into()
        }
    );
    // A fractional amount counts rounded up.
    counts.add_allowed(&json!({"amount": 0.25}));
    assert_eq!(counts.sum_in_task.get("amount"), Some(&61));
}

#[test]
fn counts_reach_the_policies() {
    let set = policies(COUNTING);
    assert!(set.reads_counts());
    assert!(!policies("permit (principal, action, resource);").reads_counts());
    let read = tool("read_file");
    let mut counts = CallCounts {
        tool_allowed_by_user_last_hour: 1,
        ..CallCounts::default()
    };
    assert_eq!(
        eval_counted(&set, &read, Some(&counts)),
        CedarOutcome::Allow {
            policy: "reads".into()
        }
    );
    counts.tool_allowed_by_user_last_hour = 2;
    assert_eq!(
        eval_counted(&set, &read, Some(&counts)),
        CedarOutcome::NoOpinion
    );
    let deploy = tool("deploy");
    assert!(matches!(
        eval_counted(&set, &deploy, Some(&counts)),
        CedarOutcome::Deny { policy, .. } if policy == "deploy-after-tests"
    ));
    counts.approved_in_task = vec!["run_tests".into()];
    assert_eq!(
        eval_counted(&set, &deploy, Some(&counts)),
        CedarOutcome::NoOpinion
    );
}

#[test]
fn a_policy_reading_counts_without_them_asks_never_allows() {
    let set = policies(COUNTING);
    assert!(matches!(
        eval_counted(&set, &tool("read_file"), None),
        CedarOutcome::Error { .. }
    ));
}

#[test]
fn a_forbid_wins_and_says_why() {
    let set = policies(
        r#"
        @id("anything")
        permit (principal, action, resource);
        @id("etc")
        @reason("nothing under /etc")
        forbid (principal, action == Signoff::Action::"call", resource == Signoff::Tool::"write_file")
        when { context.args.path like "/etc/*" };
        "#,
    );
    let write = tool("write_file");
    assert_eq!(
        eval(&set, &write, &[], json!({"path": "/etc/passwd"})),
        CedarOutcome::Deny {
            policy: "etc".into(),
            reason: Some("nothing under /etc".into())
        }
    );
    assert_eq!(
        eval(&set, &write, &[], json!({"path": "notes/a"})),
        CedarOutcome::Allow {
            policy: "anything".into()
        }
    );
}

#[test]
fn a_missing_attribute_never_allows() {
    let set = policies(
        r#"permit (principal, action, resource) when { context.args.path like "notes/*" };"#,
    );
    // No `path`: the permit errors, and the call must not run unasked.
    let outcome = eval(&set, &tool("write_file"), &[], json!({"content": "x"}));
    let CedarOutcome::Error { message } = outcome else {
        panic!("{outcome:?}")
    };
    assert!(message.contains("path"), "{message}");
    // A null is a missing attribute too.
    assert!(matches!(
        eval(&set, &tool("write_file"), &[], json!({"path": null})),
        CedarOutcome::Error { .. }
    ));
    // A forbid that errors does not allow either.
    let forbid = policies(
        r#"permit (principal, action, resource);
           forbid (principal, action, resource) when { context.args.path like "/etc/*" };"#,
    );
    assert!(matches!(
        eval(&forbid, &tool("write_file"), &[], json!({})),
        CedarOutcome::Error { .. }
    ));
}

#[test]
fn asks_carry_approvers_quorum_and_risk_and_groups_come_from_the_sign_in() {
    let set = policies(
        r#"
        @id("oncall")
        @ask("production deploys need the on-call engineer")
        @approvers("group:sre")
        @risk("medium")
        permit (principal, action, resource == Signoff::Tool::"deploy")
        when { context.environment == "prod" };
        @id("two-person")
        @ask("two people")
        @approvers("group:sre, user:bob")
        @quorum("2")
        @risk("high")
        permit (principal, action, resource == Signoff::Tool::"deploy");
        @id("sre-reads")
        permit (principal in Signoff::Group::"sre", action, resource)
        when { resource.readOnlyHint };
        "#,
    );
    let deploy = tool("deploy");
    let outcome = eval(&set, &deploy, &[], json!({}));
    let CedarOutcome::Ask(spec) = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(spec.policy, "oncall");
    assert_eq!(spec.approvers, vec!["group:sre", "user:bob"]);
    assert_eq!(spec.quorum, Some(2));
    assert_eq!(spec.risk, Some(Risk::High));
    assert_eq!(
        spec.reason.as_deref(),
        Some("production deploys need the on-call engineer")
    );
    let mut read = tool("read_file");
    read.hints.read_only = true;
    assert_eq!(
        eval(&set, &read, &["sre"], json!({})),
        CedarOutcome::Allow {
            policy: "sre-reads".into()
        }
    );
    assert_eq!(
        eval(&set, &read, &["dev"], json!({})),
        CedarOutcome::NoOpinion
    );
    assert_eq!(
        eval(&set, &tool("write_file"), &["sre"], json!({})),
        CedarOutcome::NoOpinion
    );
}

#[test]
fn an_argument_cannot_name_an_entity() {
    let set = policies(
        r#"permit (principal, action, resource) when { context.args.who == Signoff::User::"root" };"#,
    );
    let args = json!({"who": {"__entity": {"type": "Signoff::User", "id": "root"}}});
    assert!(matches!(
        eval(&set, &tool("x"), &[], args),
        CedarOutcome::NoOpinion | CedarOutcome::Error { .. }
    ));
}

#[test]
fn the_time_reaches_policies_as_numbers() {
    let set = policies(
        r#"@ask("outside working hours")
           permit (principal, action, resource)
           when { context.time.hour < 8 || context.time.hour >= 18 || context.time.weekday > 5 };"#,
    );
    // 22:30 on a Thursday.
    assert!(matches!(
        eval(&set, &tool("x"), &[], json!({})),
        CedarOutcome::Ask(_)
    ));
}

#[test]
fn the_two_person_rule_of_one_asking_policy_holds_over_another() {
    let set = policies(
        r#"
        @id("strict") @ask("x") @approvers("group:sre") @requester_may_approve("false")
        permit (principal, action, resource == Signoff::Tool::"deploy");
        @id("lenient") @ask("y") @approvers("group:ops") @requester_may_approve("true")
        permit (principal, action, resource);
        "#,
    );
    let CedarOutcome::Ask(spec) = eval(&set, &tool("deploy"), &[], json!({})) else {
        panic!("an ask")
    };
    assert_eq!(spec.requester_may_approve, Some(false));
    let CedarOutcome::Ask(spec) = eval(&set, &tool("other"), &[], json!({})) else {
        panic!("an ask")
    };
    assert_eq!(spec.requester_may_approve, Some(true));
    assert_eq!(set.file_of("strict").as_deref(), Some("p.cedar"));
}

#[test]
fn bad_annotations_and_duplicate_ids_are_refused_with_the_place() {
    let bad = |text: &str| {
        CedarPolicies::parse(&[("bad.cedar".into(), text.into())], "")
            .unwrap_err()
            .0
    };
    assert!(
        bad(r#"@ask("x") @quorum("two") permit (principal, action, resource);"#)
            .contains("bad.cedar: policy bad.cedar#1: @quorum")
    );
    assert!(
        bad(r#"@approvers("sre") @ask("x") permit (principal, action, resource);"#)
            .contains("neither group:NAME nor user:NAME")
    );
    assert!(bad(r#"@ask("x") forbid (principal, action, resource);"#).contains("permit"));
    assert!(
        bad(r#"@approvers("group:a") permit (principal, action, resource);"#).contains("need @ask")
    );
    assert!(
        bad(r#"@ask("x") @quorum("2") permit (principal, action, resource);"#)
            .contains("@quorum above 1 needs @approvers")
    );
    assert!(bad(
        r#"@ask("x") @approvers("group:a") @quorum("21") permit (principal, action, resource);"#
    )
    .contains("between 1 and 20"));
    assert!(
        bad(r#"@risk("extreme") @ask("x") permit (principal, action, resource);"#)
            .contains("@risk")
    );
    assert!(
        bad(r#"@colour("red") permit (principal, action, resource);"#)
            .contains("unknown annotation @colour")
    );
    assert!(
        bad(r#"@ask("x") @requester_may_approve("no") permit (principal, action, resource);"#)
            .contains("is not true or false")
    );
    assert!(bad(
        r#"@ask("x") @requester_may_approve("false") permit (principal, action, resource);"#
    )
    .contains("needs @approvers"));
    assert!(bad(
        r#"@approvers("group:a") @requester_may_approve("false") permit (principal, action, resource);"#
    )
    .contains("need @ask"));
    assert!(bad("permit (principal, action, resource").starts_with("bad.cedar: "));
    let twice = CedarPolicies::parse(
        &[
            (
                "a.cedar".into(),
                r#"@id("x") permit (principal, action, resource);"#.into(),
            ),
            (
                "b.cedar".into(),
                r#"@id("x") permit (principal, action, resource);"#.into(),
            ),
        ],
        "",
    );
    assert!(twice.unwrap_err().0.contains("used twice"));
}
