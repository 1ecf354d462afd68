//! The decision rules (docs/wire.md, Decision rules): whether a decision fits the pending
//! batch, and what each call then does.

use serde_json::Value;

use super::question::{self, Answer};
use super::{ActionRequest, Decision, DecisionError, DecisionKind, Verdict};

/// A validated decision: one resolved verdict per pending call, in the batch's order.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedCall {
    pub request: ActionRequest,
    pub verdict: Verdict,
    /// For a rejected call: the reason the model will read, if any.
    pub reason: Option<String>,
    /// For an approved call with edited arguments: what will run instead of `request.args`.
    pub modified_args: Option<Value>,
    /// For an approved question call: its answers, one per question (checked, trimmed).
    pub answers: Option<Vec<Answer>>,
}

/// The decision rules (docs/wire.md, Decision rules) as a pure function: one [`ResolvedCall`]
/// per pending request, in order, or the first rule the decision breaks. Nothing may execute
/// unless this returns `Ok`.
pub fn resolve(
    pending: &[ActionRequest],
    decision: &Decision,
) -> Result<Vec<ResolvedCall>, DecisionError> {
    let is_pending = |id: &str| pending.iter().any(|request| request.id == id);
    let verdicts: Vec<(Verdict, Option<String>)> = match &decision.kind {
        // A call the reviewer denied is approved only by a decision that names it (the
        // Override): approving the whole batch leaves it rejected, with the reviewer's reason.
        DecisionKind::ApproveAll => pending
            .iter()
            .map(|request| match reviewer_denial(request) {
                Some(reason) => (Verdict::Deny, Some(reason)),
                None => (Verdict::Approve, None),
            })
            .collect(),
        DecisionKind::DenyAll { reason } => pending
            .iter()
            .map(|_| (Verdict::Deny, reason.clone()))
            .collect(),
        DecisionKind::Batch {
            decisions,
            rejection_reasons,
        } => {
            if let Some(id) = decisions.keys().find(|id| !is_pending(id)) {
                return Err(DecisionError::BatchNamesUnknownCall(id.clone()));
            }
            let mut verdicts = Vec::with_capacity(pending.len());
            for request in pending {
                let verdict = *decisions
                    .get(&request.id)
                    .ok_or_else(|| DecisionError::BatchMissesCall(request.id.clone()))?;
                verdicts.push((verdict, rejection_reasons.get(&request.id).cloned()));
            }
            for id in rejection_reasons.keys() {
                match decisions.get(id) {
                    None => return Err(DecisionError::ReasonForUnknownCall(id.clone())),
                    Some(Verdict::Approve) => {
                        return Err(DecisionError::ReasonForApprovedCall(id.clone()))
                    }
                    Some(Verdict::Deny) => {}
                }
            }
            verdicts
        }
    };
    for (id, args) in &decision.modified_args {
        let index = pending
            .iter()
            .position(|request| &request.id == id)
            .ok_or_else(|| DecisionError::ModifiedArgsForUnknownCall(id.clone()))?;
        match verdicts.get(index) {
            Some((Verdict::Approve, _)) => {}
            Some((Verdict::Deny, _)) | None => {
                return Err(DecisionError::ModifiedArgsForUnapprovedCall(id.clone()))
            }
        }
        if !args.is_object() {
            return Err(DecisionError::ModifiedArgsNotAnObject(id.clone()));
        }
        // A question is answered, not edited.
        if pending[index].questions().is_some() {
            return Err(DecisionError::ModifiedArgsForQuestion(id.clone()));
        }
    }
    let mut answers = answers_by_call(pending, &verdicts, decision)?.into_iter();
    Ok(pending
        .iter()
        .zip(verdicts)
        .map(|(request, (verdict, reason))| ResolvedCall {
            answers: answers.next().flatten(),
            request: request.clone(),
            verdict,
            reason: match verdict {
                Verdict::Approve => None,
                Verdict::Deny => reason,
            },
            modified_args: match verdict {
                Verdict::Approve => decision.modified_args.get(&request.id).cloned(),
                Verdict::Deny => None,
            },
        })
        .collect())
}

/// The reason a live reviewer denied `request`, if it did (its `signoff_why`'s `review`, read
/// key by key: the UI resolves decisions too, and `Why`'s deserializer would cost its wasm).
fn reviewer_denial(request: &ActionRequest) -> Option<String> {
    let review = request.metadata.get(super::SIGNOFF_WHY)?.get("review")?;
    let text = |key: &str| review.get(key).and_then(Value::as_str);
    let denied =
        text("outcome") == Some("deny") && review.get("shadow") != Some(&Value::Bool(true));
    denied.then(|| {
        format!(
            "denied by the reviewer: {}",
            text("reason").unwrap_or_default()
        )
    })
}

/// The answers of each pending call, in order: `Some` for an approved question call. The
/// questions of all approved question calls are answered in turn by the decision's answers
/// (docs/wire.md, Questions); a question call may not run without them.
fn answers_by_call(
    pending: &[ActionRequest],
    verdicts: &[(Verdict, Option<String>)],
    decision: &Decision,
) -> Result<Vec<Option<Vec<Answer>>>, DecisionError> {
    let asked: Vec<Option<Vec<question::Question>>> = pending
        .iter()
        .zip(verdicts)
        .map(|(request, (verdict, _))| match verdict {
            Verdict::Approve => request.questions(),
            Verdict::Deny => None,
        })
        .collect();
    let all: Vec<question::Question> = asked.iter().flatten().flatten().cloned().collect();
    if all.is_empty() {
        return match decision.answers.is_empty() {
            true => Ok(pending.iter().map(|_| None).collect()),
            false => Err(DecisionError::AnswersWithoutQuestion),
        };
    }
    question::check_answers(&all, &decision.answers)?;
    let mut given = question::clean_answers(&decision.answers).into_iter();
    Ok(asked
        .iter()
        .map(|questions| {
            questions
                .as_ref()
                .map(|questions| given.by_ref().take(questions.len()).collect())
        })
        .collect())
}

impl ResolvedCall {
    /// The arguments the call runs with: the edited ones where given.
    pub fn effective_args(&self) -> &Value {
        self.modified_args.as_ref().unwrap_or(&self.request.args)
    }

    /// What an approved call runs with, as the audit records it: a question call's arguments
    /// with its answers added (they are what it returns), else the edited arguments where
    /// given, else the proposed ones. `None` for a rejected call, which never runs. One mapping
    /// for every chat, local or relayed, so the record of a call agrees wherever it ran.
    pub fn run_args(&self) -> Option<Value> {
        match self.verdict {
            Verdict::Deny => None,
            Verdict::Approve => Some(match &self.answers {
                Some(answers) => question::args_with_answers(&self.request.args, answers),
                None => self.effective_args().clone(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hitl::test_request as request;
    use serde_json::json;

    #[test]
    fn resolve_applies_a_batch_in_pending_order() {
        let pending = [
            request("call_1", "write_file", json!({"path": "a"})),
            request("call_2", "delete_file", json!({"path": "b"})),
        ];
        let decision = Decision::from_data(&json!({
            "decision_type": "batch",
            "decisions": {"call_2": "reject", "call_1": "approve"},
            "rejection_reasons": {"call_2": "keep it"},
            "modified_args": {"call_1": {"path": "safe"}},
        }))
        .unwrap();
        let resolved = resolve(&pending, &decision).unwrap();
        assert_eq!(resolved[0].verdict, Verdict::Approve);
        assert_eq!(resolved[0].effective_args(), &json!({"path": "safe"}));
        assert_eq!(resolved[1].verdict, Verdict::Deny);
        assert_eq!(resolved[1].reason.as_deref(), Some("keep it"));
    }

    #[test]
    fn only_a_decision_that_names_a_reviewer_denied_call_approves_it() {
        let mut denied = request("call_2", "delete_file", json!({"path": "b"}));
        denied.metadata.insert(
            crate::hitl::SIGNOFF_WHY.to_owned(),
            json!({"by": "reviewer", "id": "reviewer", "outcome": "ask", "summary": "s",
                   "review": {"outcome": "deny", "risk": "high", "reason": "deletes"}}),
        );
        let pending = [
            request("call_1", "write_file", json!({"path": "a"})),
            denied,
        ];
        let all = Decision::from_data(&json!({"decision_type": "approve"})).unwrap();
        let resolved = resolve(&pending, &all).unwrap();
        assert_eq!(resolved[0].verdict, Verdict::Approve);
        assert_eq!(resolved[1].verdict, Verdict::Deny);
        assert_eq!(
            resolved[1].reason.as_deref(),
            Some("denied by the reviewer: deletes")
        );
        let named = Decision::from_data(&json!({"decision_type": "batch",
            "decisions": {"call_1": "reject", "call_2": "approve"}}))
        .unwrap();
        let resolved = resolve(&pending, &named).unwrap();
        assert_eq!(resolved[0].verdict, Verdict::Deny);
        assert_eq!(resolved[1].verdict, Verdict::Approve, "the override");
    }

    #[test]
    fn answers_go_to_the_approved_question_calls_in_order() {
        let pending = [
            request(
                "call_ask",
                "ask_user",
                json!({"questions": [{"question": "Which database?", "choices": ["PostgreSQL", "SQLite"]}]}),
            ),
            request("call_1", "write_file", json!({"path": "a"})),
        ];
        let decide =
            |data: serde_json::Value| resolve(&pending, &Decision::from_data(&data).unwrap());
        let resolved = decide(
            json!({"decision_type": "approve", "ask_user_answers": [{"answer": [" SQLite "]}]}),
        )
        .unwrap();
        assert_eq!(resolved[0].answers, Some(vec![vec!["SQLite".to_owned()]]));
        assert_eq!(resolved[1].answers, None);
        assert_eq!(
            decide(json!({"decision_type": "approve"})),
            Err(DecisionError::MissingAnswer("Which database?".to_owned()))
        );
        // A rejected question takes no answers; a question with a gated call can be answered
        // while the call is rejected.
        assert_eq!(
            decide(json!({"decision_type": "deny", "ask_user_answers": [{"answer": ["SQLite"]}]})),
            Err(DecisionError::AnswersWithoutQuestion)
        );
        let mixed = decide(json!({"decision_type": "batch",
            "decisions": {"call_ask": "approve", "call_1": "deny"},
            "ask_user_answers": [{"answer": ["SQLite"]}]}))
        .unwrap();
        assert_eq!(mixed[1].verdict, Verdict::Deny);
        assert!(mixed[0].answers.is_some());
    }

    #[test]
    fn run_args_carry_answers_or_edits_and_a_rejected_call_runs_nothing() {
        let asked = json!({"questions": [{"question": "Which database?", "choices": ["SQLite"]}]});
        let pending = [
            request("call_ask", "ask_user", asked.clone()),
            request("call_1", "write_file", json!({"path": "a"})),
            request("call_2", "delete_file", json!({"path": "b"})),
        ];
        let decision = Decision::from_data(&json!({"decision_type": "batch",
            "decisions": {"call_ask": "approve", "call_1": "approve", "call_2": "deny"},
            "modified_args": {"call_1": {"path": "safe"}},
            "ask_user_answers": [{"answer": ["SQLite"]}]}))
        .unwrap();
        let resolved = resolve(&pending, &decision).unwrap();
        let answered = resolved[0].run_args().unwrap();
        assert_eq!(
            question::answers_from_args(&answered),
            Some(vec![vec!["SQLite".to_owned()]])
        );
        assert_eq!(answered["questions"], asked["questions"]);
        assert_eq!(resolved[1].run_args(), Some(json!({"path": "safe"})));
        assert_eq!(resolved[2].run_args(), None);
    }
}
