//! The person's choices on a pending batch before they are sent, and the decision they make
//! (docs/wire.md, Decision message): uniform approve -> `approve`, uniform reject -> `deny`,
//! else `batch`; the answers to the batch's questions go with it (`ask_user_answers`).

use std::collections::BTreeMap;

use serde_json::Value;
use signoff_protocol::hitl::question::{self, Answer};
use signoff_protocol::hitl::{ActionRequest, Decision, DecisionKind, Verdict};
use signoff_protocol::Message;

use super::keyed::{KeySet, KeyedMap};
use super::view::PendingBatch;

/// One card's choice.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub verdict: Verdict,
    /// For a rejection: the reason the agent will read.
    pub reason: Option<String>,
}

/// The choices made so far on one batch, with any edited arguments.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchDraft {
    /// The task whose batch this is; a draft for another task is stale.
    pub task_id: String,
    pub choices: KeyedMap<Choice>,
    /// Edited arguments by call id (already checked to be JSON objects).
    pub edited_args: BTreeMap<String, Value>,
    /// The server's refusal of the last decision, by the call it named (shown on that card).
    pub refused: BTreeMap<String, String>,
    /// Answers by question call id: one per question, in order (empty until picked or typed).
    pub answers: KeyedMap<Vec<Answer>>,
    /// Calls whose arguments editor is open: its text is neither saved nor dropped yet, so no
    /// decision goes out (it would run the arguments the person is changing).
    pub editing: KeySet,
}

/// Why a draft cannot be sent yet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DraftError {
    #[error("decide every call first: {0} still waits")]
    Undecided(String),
    #[error("the arguments must be a JSON object")]
    NotAnObject,
    #[error("the arguments are not valid JSON: {0}")]
    InvalidJson(String),
    #[error("{0}")]
    Answer(String),
    #[error("save or cancel your edit of {0} first")]
    Editing(String),
    /// The peer's dialect cannot say this decision.
    #[error("{0}")]
    NotInDialect(String),
}

/// Reads edited arguments: JSON text that must hold an object.
pub fn parse_args(text: &str) -> Result<Value, DraftError> {
    let value: Value =
        serde_json::from_str(text).map_err(|err| DraftError::InvalidJson(err.to_string()))?;
    if value.is_object() {
        Ok(value)
    } else {
        Err(DraftError::NotAnObject)
    }
}

/// Whether `message` mentions the call id `id` as a whole word (`call_1` is not in `call_10`).
fn names_call(message: &str, id: &str) -> bool {
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    message.match_indices(id).any(|(at, _)| {
        let before = message[..at].chars().next_back();
        let after = message[at + id.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

fn clean_reason(reason: Option<&str>) -> Option<String> {
    reason
        .map(str::trim)
        .filter(|reason| !reason.is_empty())
        .map(str::to_owned)
}

impl BatchDraft {
    pub fn new(task_id: &str) -> Self {
        BatchDraft {
            task_id: task_id.to_owned(),
            ..BatchDraft::default()
        }
    }

    pub fn choose(&mut self, id: &str, verdict: Verdict, reason: Option<&str>) {
        let reason = match verdict {
            Verdict::Approve => None,
            Verdict::Deny => clean_reason(reason),
        };
        self.choices
            .insert(id.to_owned(), Choice { verdict, reason });
    }

    /// Picks or unpicks `option` of question `at` (of `count`) of call `id`: a single-choice
    /// question keeps only the latest pick.
    pub fn pick(
        &mut self,
        id: &str,
        at: usize,
        count: usize,
        option: &str,
        multiple: bool,
        on: bool,
    ) {
        let answer = self.answer_mut(id, at, count);
        answer.retain(|picked| picked != option && multiple);
        if on {
            answer.push(option.to_owned());
        }
    }

    /// Sets the free text of question `at` (of `count`) of call `id`.
    pub fn write(&mut self, id: &str, at: usize, count: usize, text: &str) {
        *self.answer_mut(id, at, count) = vec![text.to_owned()];
    }

    fn answer_mut(&mut self, id: &str, at: usize, count: usize) -> &mut Answer {
        let answers = self.answers.get_or_default(id);
        if answers.len() < count {
            answers.resize(count, Vec::new());
        }
        self.refused.remove(id);
        &mut answers[at]
    }

    /// The answer given so far to question `at` of call `id`.
    pub fn answer(&self, id: &str, at: usize) -> Answer {
        self.answers
            .get(id)
            .and_then(|answers| answers.get(at))
            .cloned()
            .unwrap_or_default()
    }

    /// The answers to every question of the batch, in order, checked as the server will.
    fn batch_answers(&self, batch: &PendingBatch) -> Result<Vec<Answer>, DraftError> {
        let mut asked = Vec::new();
        let mut given = Vec::new();
        for request in &batch.requests {
            let Some(questions) = request.questions() else {
                continue;
            };
            let answers = self.answers.get(&request.id);
            for at in 0..questions.len() {
                given.push(
                    answers
                        .and_then(|answers| answers.get(at))
                        .cloned()
                        .unwrap_or_default(),
                );
            }
            asked.extend(questions);
        }
        if asked.is_empty() {
            return Ok(Vec::new());
        }
        question::check_answers(&asked, &given)
            .map_err(|err| DraftError::Answer(err.to_string()))?;
        Ok(question::clean_answers(&given))
    }

    /// The decision of a batch that holds questions: the answers, and for each other call its
    /// choice. Against a peer whose answers approve every call (kagent 0.10), the only decision
    /// with answers is "answer and approve everything" (docs/wire.md, Questions).
    pub fn submit(&self, batch: &PendingBatch) -> Result<Decision, DraftError> {
        let answers = self.batch_answers(batch)?;
        if batch.dialect.answers_approve_every_call() {
            return Ok(Decision::answer(answers));
        }
        let mut decision = self.decision(batch)?;
        decision.answers = answers;
        Ok(decision)
    }

    pub fn undo(&mut self, id: &str) {
        self.choices.remove(id);
    }

    /// Saves the edited arguments of call `id`, which closes its editor.
    pub fn edit(&mut self, id: &str, args: Value) {
        self.edited_args.insert(id.to_owned(), args);
        self.editing.remove(id);
        self.refused.remove(id);
    }

    /// The arguments editor of call `id` opened or closed.
    pub fn set_editing(&mut self, id: &str, open: bool) {
        if open {
            self.editing.insert(id.to_owned());
        } else {
            self.editing.remove(id);
        }
    }

    /// Refuses while a call of the batch has its arguments editor open.
    fn check_no_open_editor(&self, batch: &PendingBatch) -> Result<(), DraftError> {
        match batch
            .requests
            .iter()
            .find(|request| self.editing.contains(&request.id))
        {
            Some(request) => Err(DraftError::Editing(request.name.clone())),
            None => Ok(()),
        }
    }

    /// The server refused the decision. When its message names exactly one call of the batch
    /// (an edit that does not fit the tool's schema, a reason too long), that call's choice is
    /// undone so the card can be decided again, the message is kept for the card, and the
    /// call's id is returned; otherwise nothing changes and `None` says to show it elsewhere.
    pub fn refuse(&mut self, batch: &PendingBatch, message: &str) -> Option<String> {
        let mut named = batch
            .requests
            .iter()
            .filter(|request| names_call(message, &request.id));
        let (Some(request), None) = (named.next(), named.next()) else {
            return None;
        };
        let id = request.id.clone();
        self.choices.remove(&id);
        self.refused.insert(id.clone(), message.to_owned());
        Some(id)
    }

    /// Every call of the batch has a choice (a question call is answered instead).
    pub fn is_complete(&self, batch: &PendingBatch) -> bool {
        batch
            .requests
            .iter()
            .all(|request| is_question(request) || self.choices.contains_key(&request.id))
    }

    /// Edited arguments of the approved calls only (docs/wire.md, Decision rules: `modified_args`
    /// must name approved calls).
    fn modified_args(&self, approved: impl Fn(&str) -> bool) -> BTreeMap<String, Value> {
        // A loop that inserts: a `BTreeMap` built by `collect` sorts, and each sort is kilobytes
        // of the download.
        let mut args = BTreeMap::new();
        for (id, edited) in &self.edited_args {
            if approved(id) {
                args.insert(id.clone(), edited.clone());
            }
        }
        args
    }

    /// The decision these choices make, once every call has one. A question call is approved:
    /// its answers go with [`BatchDraft::submit`].
    pub fn decision(&self, batch: &PendingBatch) -> Result<Decision, DraftError> {
        self.check_no_open_editor(batch)?;
        let answered = Choice {
            verdict: Verdict::Approve,
            reason: None,
        };
        let mut verdicts = Vec::new();
        for request in &batch.requests {
            let choice = match self.choices.get(&request.id) {
                Some(choice) => choice,
                None if is_question(request) => &answered,
                None => return Err(DraftError::Undecided(request.name.clone())),
            };
            verdicts.push((request.id.clone(), choice));
        }
        // An approval of a call the reviewer denied must name it (the server reads "approve"
        // as leaving such a call denied).
        let all_approve = verdicts
            .iter()
            .all(|(_, choice)| choice.verdict == Verdict::Approve)
            && !batch.requests.iter().any(reviewer_denied);
        let first_reason = verdicts
            .first()
            .and_then(|(_, choice)| choice.reason.clone());
        let all_deny_alike = verdicts
            .iter()
            .all(|(_, choice)| choice.verdict == Verdict::Deny && choice.reason == first_reason);
        let kind = if all_approve {
            DecisionKind::ApproveAll
        } else if all_deny_alike {
            DecisionKind::DenyAll {
                reason: first_reason,
            }
        } else {
            let mut decisions = BTreeMap::new();
            let mut rejection_reasons = BTreeMap::new();
            for (id, choice) in &verdicts {
                decisions.insert(id.clone(), choice.verdict);
                if let Some(reason) = &choice.reason {
                    rejection_reasons.insert(id.clone(), reason.clone());
                }
            }
            DecisionKind::Batch {
                decisions,
                rejection_reasons,
            }
        };
        let approved = |id: &str| {
            verdicts
                .iter()
                .any(|(call, choice)| call == id && choice.verdict == Verdict::Approve)
        };
        Ok(Decision {
            kind,
            modified_args: self.modified_args(approved),
            answers: Vec::new(),
        })
    }

    /// "Approve all": every call still undecided approved (but one the reviewer denied, which
    /// is rejected: only its card's Override approves it), with any saved edited arguments; a
    /// choice already made on a card (a rejection with its reason) stands. Refused while an
    /// editor is open. Returns the draft with those approvals chosen, and its decision.
    pub fn approve_rest(&self, batch: &PendingBatch) -> Result<(BatchDraft, Decision), DraftError> {
        self.check_no_open_editor(batch)?;
        let mut draft = self.clone();
        for request in &batch.requests {
            if draft.choices.contains_key(&request.id) {
                continue;
            }
            // Only the card's Override approves a call the reviewer denied.
            match reviewer_denied(request) {
                true => draft.choose(&request.id, Verdict::Deny, Some("Denied by the reviewer")),
                false => draft.choose(&request.id, Verdict::Approve, None),
            }
        }
        let decision = draft.decision(batch)?;
        Ok((draft, decision))
    }

    /// How many of the batch's calls are still undecided (what "Approve all" approves).
    pub fn undecided(&self, batch: &PendingBatch) -> usize {
        batch
            .requests
            .iter()
            .filter(|request| !self.choices.contains_key(&request.id))
            .count()
    }
}

/// Whether the agent's reviewer denied the call (its `signoff_why`).
fn reviewer_denied(request: &ActionRequest) -> bool {
    request
        .metadata
        .get(signoff_protocol::hitl::SIGNOFF_WHY)
        .is_some_and(super::why::reviewer_denied)
}

fn is_question(request: &ActionRequest) -> bool {
    request.questions().is_some()
}

/// "Reject all" with one optional reason.
pub fn reject_all(reason: Option<&str>) -> Decision {
    Decision {
        kind: DecisionKind::DenyAll {
            reason: clean_reason(reason),
        },
        modified_args: BTreeMap::new(),
        answers: Vec::new(),
    }
}

/// The message that carries `decision` on the batch's task, in the batch's dialect; refused
/// when the dialect cannot say it (kagent's HITL extension: no edits, no rejected lone question).
pub fn decision_message(
    batch: &PendingBatch,
    decision: &Decision,
    message_id: String,
) -> Result<Message, DraftError> {
    let mut message = decision
        .to_message(batch.dialect, &batch.requests, message_id)
        .map_err(|err| DraftError::NotInDialect(err.to_string()))?;
    message.task_id = Some(batch.task_id.clone());
    message.context_id = batch.context_id.clone();
    Ok(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use signoff_protocol::hitl::{ActionRequest, Dialect};

    fn batch() -> PendingBatch {
        let request = |id: &str, name: &str| ActionRequest {
            id: id.to_owned(),
            name: name.to_owned(),
            args: json!({"path": "a.txt"}),
            description: None,
            server: None,
            approval_id: None,
            via: None,
            metadata: Default::default(),
        };
        PendingBatch {
            task_id: "t-1".to_owned(),
            context_id: Some("s-1".to_owned()),
            dialect: Dialect::Native,
            requests: vec![
                request("call_1", "write_file"),
                request("call_2", "delete_file"),
            ],
            keys: vec!["t-1:call_1".to_owned(), "t-1:call_2".to_owned()],
            expires_at: None,
        }
    }

    fn data(decision: &Decision, dialect: Dialect) -> Value {
        decision.to_data(dialect)
    }

    #[test]
    fn uniform_choices_give_approve_or_deny_and_mixed_ones_a_batch() {
        let batch = batch();
        let mut draft = BatchDraft::new("t-1");
        draft.choose("call_1", Verdict::Approve, None);
        assert_eq!(
            draft.decision(&batch),
            Err(DraftError::Undecided("delete_file".to_owned()))
        );
        draft.choose("call_2", Verdict::Approve, Some("ignored"));
        assert_eq!(
            data(&draft.decision(&batch).unwrap(), Dialect::Native),
            json!({"decision_type": "approve"})
        );

        draft.choose("call_1", Verdict::Deny, Some(" too risky "));
        draft.choose("call_2", Verdict::Deny, Some("too risky"));
        assert_eq!(
            data(&draft.decision(&batch).unwrap(), Dialect::Native),
            json!({"decision_type": "deny", "reason": "too risky"})
        );

        draft.choose("call_1", Verdict::Approve, None);
        draft.edit("call_1", json!({"path": "safe.txt"}));
        draft.edit("call_2", json!({"path": "never-sent.txt"}));
        let mixed = draft.decision(&batch).unwrap();
        assert_eq!(
            data(&mixed, Dialect::Native),
            json!({"decision_type": "batch",
                   "decisions": {"call_1": "approve", "call_2": "deny"},
                   "rejection_reasons": {"call_2": "too risky"},
                   "modified_args": {"call_1": {"path": "safe.txt"}}})
        );
        assert_eq!(
            data(&mixed, Dialect::Kagent)["decisions"],
            json!({"call_1": "approve", "call_2": "reject"})
        );
    }

    #[test]
    fn only_the_cards_override_approves_a_call_the_reviewer_denied() {
        let mut batch = batch();
        batch.requests[1].metadata.insert(
            signoff_protocol::hitl::SIGNOFF_WHY.to_owned(),
            json!({"by": "reviewer", "id": "reviewer", "outcome": "ask", "summary": "s",
                   "review": {"outcome": "deny", "risk": "high", "reason": "deletes"}}),
        );
        let (_, all) = BatchDraft::new("t-1").approve_rest(&batch).unwrap();
        assert_eq!(
            data(&all, Dialect::Native),
            json!({"decision_type": "batch",
                   "decisions": {"call_1": "approve", "call_2": "deny"},
                   "rejection_reasons": {"call_2": "Denied by the reviewer"}})
        );
        let mut draft = BatchDraft::new("t-1");
        draft.choose("call_2", Verdict::Approve, None);
        let (_, overridden) = draft.approve_rest(&batch).unwrap();
        assert_eq!(
            data(&overridden, Dialect::Native),
            json!({"decision_type": "batch",
                   "decisions": {"call_1": "approve", "call_2": "approve"}})
        );
    }

    #[test]
    fn reject_all_speaks_each_dialect() {
        let decision = reject_all(Some("no"));
        assert_eq!(
            data(&decision, Dialect::Native),
            json!({"decision_type": "deny", "reason": "no"})
        );
        assert_eq!(
            data(&decision, Dialect::Kagent)["decision_type"],
            json!("reject")
        );
        let message = decision_message(&batch(), &decision, "m-1".to_owned()).unwrap();
        assert_eq!(message.task_id.as_deref(), Some("t-1"));
        assert_eq!(message.context_id.as_deref(), Some("s-1"));
        assert_eq!(Decision::from_message(&message).unwrap(), Some(decision));
    }

    /// A question and a gated call waiting together, in `dialect`.
    fn question_batch(dialect: Dialect) -> PendingBatch {
        let mut batch = batch();
        batch.dialect = dialect;
        batch.requests[0] = ActionRequest {
            id: "call_ask".to_owned(),
            name: "ask_user".to_owned(),
            args: json!({"questions": [
                {"question": "Which database?", "choices": ["PostgreSQL", "SQLite"]},
                {"question": "Which features?", "choices": ["metrics", "tracing"], "multiple": true},
                {"question": "Anything else?"}]}),
            description: None,
            server: None,
            approval_id: None,
            via: None,
            metadata: Default::default(),
        };
        batch
    }

    #[test]
    fn answers_go_with_the_decision_on_the_other_calls() {
        let batch = question_batch(Dialect::Native);
        let mut draft = BatchDraft::new("t-1");
        draft.pick("call_ask", 0, 3, "PostgreSQL", false, true);
        draft.pick("call_ask", 0, 3, "SQLite", false, true);
        draft.pick("call_ask", 1, 3, "metrics", true, true);
        draft.pick("call_ask", 1, 3, "tracing", true, true);
        draft.pick("call_ask", 1, 3, "metrics", true, false);
        assert_eq!(
            draft.submit(&batch),
            Err(DraftError::Answer(
                "no answer to the question \"Anything else?\"".to_owned()
            ))
        );
        draft.write("call_ask", 2, 3, " keep it small ");
        assert!(matches!(
            draft.submit(&batch),
            Err(DraftError::Undecided(name)) if name == "delete_file"
        ));
        draft.choose("call_2", Verdict::Deny, Some("not now"));
        assert!(draft.is_complete(&batch));
        assert_eq!(
            data(&draft.submit(&batch).unwrap(), Dialect::Native),
            json!({"decision_type": "batch",
                   "decisions": {"call_ask": "approve", "call_2": "deny"},
                   "rejection_reasons": {"call_2": "not now"},
                   "ask_user_answers": [{"answer": ["SQLite"]}, {"answer": ["tracing"]},
                                        {"answer": ["keep it small"]}]})
        );

        // kagent 0.10 runs every call of a message with answers: only that is offered.
        let kagent = question_batch(Dialect::Kagent);
        assert_eq!(
            data(&draft.submit(&kagent).unwrap(), Dialect::Kagent),
            json!({"decision_type": "approve",
                   "ask_user_answers": [{"answer": ["SQLite"]}, {"answer": ["tracing"]},
                                        {"answer": ["keep it small"]}]})
        );
    }

    #[test]
    fn no_decision_goes_out_while_an_arguments_editor_is_open() {
        let batch = batch();
        let mut draft = BatchDraft::new("t-1");
        draft.set_editing("call_1", true);
        let open = Err(DraftError::Editing("write_file".to_owned()));
        assert_eq!(
            draft.approve_rest(&batch).map(|(_, decision)| decision),
            open
        );
        draft.choose("call_1", Verdict::Approve, None);
        draft.choose("call_2", Verdict::Approve, None);
        assert_eq!(draft.decision(&batch), open);

        // Saving the edit closes the editor, and the edit goes with the decision.
        draft.edit("call_1", json!({"path": "edited.txt"}));
        assert_eq!(
            data(&draft.approve_rest(&batch).unwrap().1, Dialect::Native),
            json!({"decision_type": "approve",
                   "modified_args": {"call_1": {"path": "edited.txt"}}})
        );
        // Cancelling closes it too.
        draft.set_editing("call_2", true);
        assert!(draft.decision(&batch).is_err());
        draft.set_editing("call_2", false);
        assert!(draft.decision(&batch).is_ok());
    }

    #[test]
    fn edited_arguments_must_be_a_json_object() {
        assert_eq!(parse_args(r#"{"a": 1}"#), Ok(json!({"a": 1})));
        assert_eq!(parse_args("[1]"), Err(DraftError::NotAnObject));
        assert!(matches!(parse_args("{"), Err(DraftError::InvalidJson(_))));
    }

    #[test]
    fn approve_all_approves_what_is_undecided_and_keeps_a_rejection() {
        let batch = batch();
        let mut draft = BatchDraft::new("t-1");
        assert_eq!(draft.undecided(&batch), 2);
        draft.choose("call_2", Verdict::Deny, Some("not that file"));
        assert_eq!(draft.undecided(&batch), 1);
        let (after, decision) = draft.approve_rest(&batch).unwrap();
        assert_eq!(
            data(&decision, Dialect::Native),
            json!({"decision_type": "batch",
                   "decisions": {"call_1": "approve", "call_2": "deny"},
                   "rejection_reasons": {"call_2": "not that file"}})
        );
        assert_eq!(after.undecided(&batch), 0);
        assert_eq!(
            after.choices.get("call_2").map(|choice| choice.verdict),
            Some(Verdict::Deny)
        );
    }
}
