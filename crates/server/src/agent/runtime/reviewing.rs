//! The agent's first reviewer in a turn: after screening, each call that would wait on an ask
//! a grant could have answered goes to the reviewer, one after the other, before the commit
//! that records the turn's calls (the review is network I/O, never inside a store write). A
//! call a rule, a grant or a policy settled is never reviewed.
//!
//! Live, an approval runs the call (decided by the reviewer, audited and receipted as such);
//! a denial, an ask, a failure (error, timeout, unreadable answer) or an open circuit breaker
//! leaves it waiting for a person, who reads the verdict on the card. A denied call runs only
//! by a decision that names it (the Override; `hitl::rules`). In shadow mode the verdict is
//! only recorded in the call's why, for `policy replay`.

use std::collections::HashMap;

use signoff_protocol::hitl::{GateOutcome, RecordedDecision, Review, ReviewOutcome, Why, WhyKind};

use crate::agent::metrics::Metrics;
use crate::agent::model::{ChatMessage, ModelToolCall};
use crate::agent::reviewer::{breaker, ReviewRequest};
use crate::store::{AutoDecision, CallRow, Channel, Verdict};

use super::screening::{Requester, Screened};
use super::Agent;

/// What the reviewer reads of the turn: the task's transcript before it, and the turn's text.
pub(super) struct TurnSeen<'a> {
    pub transcript: &'a [ChatMessage],
    pub text: &'a str,
}

/// Reviews the turn's reviewable calls (`screened[i]` is `calls[i]`'s), in order, with the
/// task's earlier verdicts (`earlier`, its call records) for the breaker.
pub(super) async fn review_calls(
    metrics: &Metrics,
    agent: &Agent,
    requester: &Requester<'_>,
    calls: &[ModelToolCall],
    screened: &mut [Screened],
    seen: TurnSeen<'_>,
    earlier: &HashMap<String, CallRow>,
) {
    let Some(reviewer) = agent.reviewer.as_deref() else {
        return;
    };
    if !screened.iter().any(|screened| screened.reviewable) {
        return;
    }
    let mut verdicts = earlier_verdicts(earlier);
    let mut transcript = seen.transcript.to_vec();
    transcript.push(ChatMessage::Assistant {
        text: seen.text.to_owned(),
        tool_calls: calls.to_vec(),
    });
    let key = agent.key();
    for (call, screened) in calls.iter().zip(screened.iter_mut()) {
        let Some(gate) = screened.why.clone().filter(|_| screened.reviewable) else {
            continue;
        };
        let review = if !reviewer.is_shadow() && breaker::is_open(&verdicts) {
            Review {
                outcome: ReviewOutcome::Paused,
                risk: None,
                reason: format!(
                    "The reviewer denied {} calls in a row, or {} of its last {}, in this task: \
                     its calls now wait for a person.",
                    breaker::IN_A_ROW,
                    breaker::IN_WINDOW,
                    breaker::WINDOW
                ),
                shadow: false,
            }
        } else {
            let description = agent
                .tools
                .get(&call.name)
                .map(|tool| tool.spec.description.clone())
                .unwrap_or_default();
            let request = ReviewRequest {
                agent: &key,
                task_id: requester.task_id,
                requester: requester.user,
                call_id: &call.id,
                tool: &call.name,
                description: &description,
                args: &call.args,
                waits_because: &gate.summary,
                transcript: &transcript,
            };
            reviewer.review(&request).await
        };
        metrics.reviewed(review.outcome.as_str(), review.shadow);
        if !review.shadow {
            verdicts.push(review.outcome);
        }
        apply(requester.user, screened, gate, review);
    }
}

/// The task's earlier live verdicts, oldest first, from its call records' whys.
fn earlier_verdicts(earlier: &HashMap<String, CallRow>) -> Vec<ReviewOutcome> {
    let mut reviewed: Vec<(i64, ReviewOutcome)> = earlier
        .values()
        .filter_map(|row| {
            let review = Why::from_value(row.why.as_ref()?)?.review?;
            (!review.shadow).then_some((row.position, review.outcome))
        })
        .collect();
    reviewed.sort_by_key(|(position, _)| *position);
    reviewed.into_iter().map(|(_, outcome)| outcome).collect()
}

/// A call's screening with the reviewer's verdict: a live approval decides it; anything else
/// leaves it waiting, its why the reviewer's (live) or the gate's with the verdict beside it
/// (shadow).
fn apply(user: &str, screened: &mut Screened, gate: Why, review: Review) {
    if review.shadow {
        let mut why = gate;
        why.review = Some(review);
        screened.why = Some(why);
        return;
    }
    let why = reviewer_why(gate, review);
    if why.outcome == GateOutcome::Allow {
        let review = why.review.clone();
        let (risk, reason) = review
            .map(|review| (review.risk.unwrap_or_default(), review.reason))
            .unwrap_or_default();
        screened.held = false;
        screened.auto = Some(AutoDecision {
            user_id: user.to_owned(),
            channel: Channel::Reviewer,
            verdict: Verdict::Approve,
            reason: None,
            decision: RecordedDecision::Reviewer { risk, reason }.to_value(),
            summary: why.summary.clone(),
        });
    }
    screened.why = Some(why);
}

/// The why of a call the live reviewer saw: its verdict, risk and reason, and the gate's
/// approvers, should a person decide it.
pub(super) fn reviewer_why(gate: Why, review: Review) -> Why {
    let reason = review.reason.clone();
    let (outcome, summary) = match review.outcome {
        ReviewOutcome::Approve => (
            GateOutcome::Allow,
            format!("Approved by the reviewer: {reason}"),
        ),
        ReviewOutcome::Deny => (
            GateOutcome::Ask,
            format!("Denied by the reviewer: {reason} Only an override of this call runs it."),
        ),
        ReviewOutcome::Ask => (
            GateOutcome::Ask,
            format!("The reviewer asks a person: {reason}"),
        ),
        ReviewOutcome::Failed | ReviewOutcome::Paused => (
            GateOutcome::Ask,
            format!("{reason} The call waits for a person."),
        ),
    };
    Why {
        by: WhyKind::Reviewer,
        id: "reviewer".to_owned(),
        outcome,
        summary,
        risk: review.risk.clone(),
        reason: Some(reason),
        file: None,
        review: Some(review),
        ..gate
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn gate() -> Why {
        Why {
            by: WhyKind::Default,
            id: "require_approval".into(),
            outcome: GateOutcome::Ask,
            summary: "The tool requires approval".into(),
            approvers: vec!["group:sre".into()],
            quorum: Some(2),
            risk: None,
            reason: None,
            file: None,
            requester_may_approve: None,
            review: None,
        }
    }

    fn held() -> Screened {
        Screened {
            held: true,
            auto: None,
            decided_by: None,
            why: Some(gate()),
            reviewable: true,
        }
    }

    fn review(outcome: ReviewOutcome, shadow: bool) -> Review {
        Review {
            outcome,
            risk: Some("high".into()),
            reason: "it deletes".into(),
            shadow,
        }
    }

    #[test]
    fn only_a_live_approval_decides_and_the_rest_keep_the_gates_approvers() {
        let mut approved = held();
        apply(
            "alice",
            &mut approved,
            gate(),
            review(ReviewOutcome::Approve, false),
        );
        assert!(!approved.held);
        let auto = approved.auto.unwrap();
        assert_eq!(auto.channel, Channel::Reviewer);
        assert_eq!(
            RecordedDecision::from_value(&auto.decision).unwrap(),
            RecordedDecision::Reviewer {
                risk: "high".into(),
                reason: "it deletes".into()
            }
        );
        for outcome in [
            ReviewOutcome::Deny,
            ReviewOutcome::Ask,
            ReviewOutcome::Failed,
            ReviewOutcome::Paused,
        ] {
            let mut waiting = held();
            apply("alice", &mut waiting, gate(), review(outcome, false));
            assert!(waiting.held && waiting.auto.is_none(), "{outcome:?}");
            let why = waiting.why.unwrap();
            assert_eq!(why.by, WhyKind::Reviewer);
            assert_eq!(why.outcome, GateOutcome::Ask);
            assert_eq!(why.approvers, vec!["group:sre".to_owned()]);
            assert_eq!(why.quorum, Some(2));
            assert_eq!(why.reviewer_denied(), outcome == ReviewOutcome::Deny);
        }
        let mut shadowed = held();
        apply(
            "alice",
            &mut shadowed,
            gate(),
            review(ReviewOutcome::Approve, true),
        );
        assert!(shadowed.held && shadowed.auto.is_none());
        let why = shadowed.why.unwrap();
        assert_eq!(why.by, WhyKind::Default);
        assert_eq!(why.review.unwrap().outcome, ReviewOutcome::Approve);
    }
}
