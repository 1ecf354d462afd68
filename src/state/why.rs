//! A card's "Why?" in plain words: which policy (and its file), argument rule, grant (and what
//! is left of it) or the agent's `require_approval` setting let a call run, made it wait or
//! refused it, from the call's `signoff_why` (docs/policies.md).

use serde_json::Value;

/// What a person reads under "Why?": the sentence that says what decided, then a line for
/// each detail an ask carries (who approves, how many, the risk, the two-person rule).
/// `None` when `why` is not one (then the card offers no "Why?").
///
/// The keys are read from the JSON as `hitl::Why` spells them, not through its deserializer,
/// which would cost the cards' chunk more than these few reads.
/// `waiting`: the call still waits; once decided, an ask reads in the past ("Asked for a
/// decision"), as what made it wait, not as where it stands. `local_time` writes a grant's
/// end (an RFC 3339 timestamp) as the person's clock reads it.
pub fn explain(
    why: &Value,
    tool: &str,
    waiting: bool,
    local_time: &dyn Fn(&str) -> String,
) -> Option<Vec<String>> {
    let text = |key: &str| why.get(key).and_then(Value::as_str);
    let (by, outcome, id) = (text("by")?, text("outcome")?, text("id")?);
    let verb = match outcome {
        "allow" => "Allowed without asking",
        "ask" if waiting => "Waits for a decision",
        "ask" => "Asked for a decision",
        "deny" => "Refused",
        _ => return None,
    };
    let reason = text("reason")
        .map(|reason| format!(": {reason}"))
        .unwrap_or_default();
    let mut lines = vec![match by {
        "policy" => {
            let file = text("file")
                .map(|file| format!(" in {file}"))
                .unwrap_or_default();
            format!("{verb} by the policy \u{201c}{id}\u{201d}{file}{reason}.")
        }
        "policy_error" => format!(
            "{verb} because a policy could not be evaluated{reason}. Such a call \
             never runs unasked."
        ),
        "rule" => format!("{verb} by the agent's argument rule {id}."),
        // The grant's end as the person's clock reads it, never the raw timestamp.
        "grant" => {
            let summary = text("summary")?;
            let summary = match summary.rsplit_once(", until ") {
                Some((base, until)) => format!("{base}, until {}", local_time(until)),
                None => summary.to_owned(),
            };
            format!("{verb} by your \u{201c}Always allow\u{201d}: {summary}.")
        }
        // The reviewer's verdict and reason; a denial says how to override it.
        "reviewer" => match why.get("review").and_then(|review| review.get("outcome")) {
            Some(Value::String(said)) if said == "deny" => {
                format!("Denied by the agent's reviewer{reason}. Override runs this call only.")
            }
            _ => format!("{verb} by the agent's reviewer{reason}."),
        },
        "default" if outcome == "ask" => format!(
            "{verb} because of the agent's require_approval setting: {tool} is \
             in it, and no policy, rule or grant decided otherwise."
        ),
        "default" => format!(
            "Allowed without asking: no policy or rule applies, and the agent's \
             require_approval setting does not list {tool}."
        ),
        _ => return None,
    }];
    let approvers: Vec<&str> = why
        .get("approvers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if !approvers.is_empty() {
        lines.push(format!("Who may approve: {}.", approvers.join(", ")));
    }
    if let Some(quorum) = why.get("quorum").and_then(Value::as_u64).filter(|n| *n > 1) {
        lines.push(format!("Approvals needed: {quorum} different people."));
    }
    if let Some(review) = why.get("review").filter(|_| by != "reviewer") {
        let said = review.get("outcome").and_then(Value::as_str).unwrap_or("");
        lines.push(format!("The reviewer (shadow) would {said}."));
    }
    if let Some(risk) = text("risk") {
        lines.push(format!("Risk: {risk}."));
    }
    if why.get("requesterMayApprove").and_then(Value::as_bool) == Some(false) {
        lines.push(
            "Two-person rule: the person it runs for may reject it but not approve it.".into(),
        );
    }
    Some(lines)
}

/// The agent's reviewer's verdict on the call of this `signoff_why`, as a line of its card:
/// "Reviewer: deny, high risk: deletes the database". None where no live reviewer looked (a
/// shadow reviewer's verdict is for `policy replay` and "Why?", not the card).
pub fn review_line(why: &Value) -> Option<String> {
    let review = why.get("review")?;
    if review.get("shadow") == Some(&Value::Bool(true)) {
        return None;
    }
    let text = |key: &str| review.get(key).and_then(Value::as_str).unwrap_or_default();
    let risk = match text("risk") {
        "" => String::new(),
        risk => format!(", {risk} risk"),
    };
    let reason = match text("reason") {
        "" => String::new(),
        reason => format!(": {reason}"),
    };
    Some(format!("Reviewer: {}{risk}{reason}", text("outcome")))
}

/// Whether the agent's reviewer denied the call of this `signoff_why`: only a decision that
/// names the call approves it (the card's Override), never "Approve all".
pub fn reviewer_denied(why: &Value) -> bool {
    why.get("review").is_some_and(|review| {
        review.get("outcome") == Some(&Value::from("deny"))
            && review.get("shadow") != Some(&Value::Bool(true))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A clock that reads the time of day out of the timestamp.
    fn clock(at: &str) -> String {
        at.get(11..16).unwrap_or(at).to_owned()
    }

    #[test]
    fn a_live_reviewers_verdict_is_a_line_of_the_card_and_a_shadows_is_not() {
        let denied = json!({"by": "reviewer", "outcome": "ask", "review":
            {"outcome": "deny", "risk": "high", "reason": "deletes the database"}});
        assert_eq!(
            review_line(&denied).unwrap(),
            "Reviewer: deny, high risk: deletes the database"
        );
        let asked = json!({"by": "reviewer", "review": {"outcome": "ask", "risk": "medium"}});
        assert_eq!(review_line(&asked).unwrap(), "Reviewer: ask, medium risk");
        let shadow = json!({"by": "default", "review": {"outcome": "deny", "shadow": true}});
        assert_eq!(review_line(&shadow), None);
        assert_eq!(review_line(&json!({"by": "default"})), None);
    }

    #[test]
    fn each_kind_of_why_reads_in_plain_words() {
        let policy = json!({"by": "policy", "id": "no-etc", "outcome": "deny",
            "summary": "Denied by policy no-etc", "reason": "nothing under /etc",
            "file": "main.cedar"});
        assert_eq!(
            explain(&policy, "write_file", true, &clock).unwrap(),
            ["Refused by the policy \u{201c}no-etc\u{201d} in main.cedar: nothing under /etc."]
        );
        let ask = json!({"by": "policy", "id": "two", "outcome": "ask", "summary": "s",
            "approvers": ["group:sre"], "quorum": 2, "risk": "high",
            "requesterMayApprove": false, "file": "ops.cedar"});
        assert_eq!(
            explain(&ask, "delete_file", true, &clock).unwrap(),
            [
                "Waits for a decision by the policy \u{201c}two\u{201d} in ops.cedar.",
                "Who may approve: group:sre.",
                "Approvals needed: 2 different people.",
                "Risk: high.",
                "Two-person rule: the person it runs for may reject it but not approve it.",
            ]
        );
        let rule = json!({"by": "rule", "id": "#1 (write_file when path matches notes/**)",
            "outcome": "allow", "summary": "s"});
        assert_eq!(
            explain(&rule, "write_file", true, &clock).unwrap(),
            [
                "Allowed without asking by the agent's argument rule #1 (write_file when path \
              matches notes/**)."
            ]
        );
        let grant = json!({"by": "grant", "id": "g", "outcome": "allow",
            "summary": "write_file with any arguments, in this chat, 1 more call"});
        assert_eq!(
            explain(&grant, "write_file", true, &clock).unwrap(),
            [
                "Allowed without asking by your \u{201c}Always allow\u{201d}: write_file with any \
              arguments, in this chat, 1 more call."
            ]
        );
        let default = json!({"by": "default", "id": "require_approval", "outcome": "ask",
            "summary": "s"});
        assert!(explain(&default, "write_file", true, &clock).unwrap()[0]
            .contains("the agent's require_approval setting: write_file is in it"));
        let error = json!({"by": "policy_error", "id": "policy-error", "outcome": "ask",
            "summary": "s", "reason": "no attribute path"});
        assert!(explain(&error, "t", true, &clock).unwrap()[0]
            .contains("could not be evaluated: no attribute"));
        assert_eq!(explain(&json!({"by": "nobody"}), "t", true, &clock), None);
        // Decided, an ask says what made it wait; a grant's end is not a raw timestamp.
        assert_eq!(
            explain(&ask, "delete_file", false, &clock).unwrap()[0],
            "Asked for a decision by the policy \u{201c}two\u{201d} in ops.cedar."
        );
        let timed = json!({"by": "grant", "id": "g", "outcome": "allow",
            "summary": "write_file with any arguments, in this chat, until 2026-12-01T23:25:44.743Z"});
        assert_eq!(
            explain(&timed, "write_file", true, &clock).unwrap()[0],
            "Allowed without asking by your \u{201c}Always allow\u{201d}: write_file with any \
             arguments, in this chat, until 23:25."
        );
        let denied = json!({"by": "reviewer", "id": "reviewer", "outcome": "ask",
            "summary": "s", "risk": "high", "reason": "it deletes the repo",
            "review": {"outcome": "deny", "risk": "high", "reason": "it deletes the repo"}});
        assert_eq!(
            explain(&denied, "delete_file", true, &clock).unwrap(),
            [
                "Denied by the agent's reviewer: it deletes the repo. Override runs this call only.",
                "Risk: high."
            ]
        );
        assert!(reviewer_denied(&denied));
        let approved = json!({"by": "reviewer", "id": "reviewer", "outcome": "allow",
            "summary": "s", "reason": "reads only", "review": {"outcome": "approve", "reason": "r"}});
        assert_eq!(
            explain(&approved, "read_file", true, &clock).unwrap()[0],
            "Allowed without asking by the agent's reviewer: reads only."
        );
        assert!(!reviewer_denied(&approved));
        let shadow = json!({"by": "default", "id": "require_approval", "outcome": "ask",
            "summary": "s", "review": {"outcome": "deny", "reason": "r", "shadow": true}});
        assert_eq!(
            explain(&shadow, "write_file", true, &clock).unwrap()[1],
            "The reviewer (shadow) would deny."
        );
        assert!(
            !reviewer_denied(&shadow),
            "a shadow verdict decides nothing"
        );
        // The keys read are the protocol's own spelling of a why.
        let typed = signoff_protocol::hitl::Why {
            by: signoff_protocol::hitl::WhyKind::Policy,
            id: "two".into(),
            outcome: signoff_protocol::hitl::GateOutcome::Ask,
            summary: "s".into(),
            approvers: vec!["group:sre".into()],
            quorum: Some(2),
            risk: Some("high".into()),
            reason: None,
            file: Some("ops.cedar".into()),
            requester_may_approve: Some(false),
            review: None,
        };
        assert_eq!(
            explain(&typed.to_value(), "delete_file", true, &clock),
            explain(&ask, "delete_file", true, &clock)
        );
    }
}
