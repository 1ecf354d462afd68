//! The decision rules (docs/wire.md, Decision rules): whether a decision fits the pending
//! batch, and what each call then does.

use serde_json::Value;

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
        DecisionKind::ApproveAll => pending.iter().map(|_| (Verdict::Approve, None)).collect(),
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
            let verdicts = pending
                .iter()
                .map(|request| {
                    let verdict = *decisions
                        .get(&request.id)
                        .ok_or_else(|| DecisionError::BatchMissesCall(request.id.clone()))?;
                    Ok((verdict, rejection_reasons.get(&request.id).cloned()))
                })
                .collect::<Result<Vec<_>, DecisionError>>()?;
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
    }
    Ok(pending
        .iter()
        .zip(verdicts)
        .map(|(request, (verdict, reason))| ResolvedCall {
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

impl ResolvedCall {
    /// The arguments the call runs with: the edited ones where given.
    pub fn effective_args(&self) -> &Value {
        self.modified_args.as_ref().unwrap_or(&self.request.args)
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
}
