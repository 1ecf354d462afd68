//! The decision (docs/wire.md, Decision message): what a person decided, read from and written
//! to a decision DataPart in either dialect. Text decisions are in [`super::text`]; whether a
//! decision fits the pending batch is [`super::resolve`].

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::question::{self, Answer};
use super::{ActionRequest, Dialect};
use crate::model::{Message, Part, Role};

/// A verdict on one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    Approve,
    Deny,
}

/// What the person decided, as the decision DataPart says it (before validation).
#[derive(Debug, Clone, PartialEq)]
pub enum DecisionKind {
    ApproveAll,
    DenyAll {
        reason: Option<String>,
    },
    Batch {
        decisions: BTreeMap<String, Verdict>,
        rejection_reasons: BTreeMap<String, String>,
    },
}

/// A decision message's DataPart, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub kind: DecisionKind,
    /// Edited arguments by call id; each must belong to an approved call.
    pub modified_args: BTreeMap<String, Value>,
    /// Answers to the pending questions (`ask_user_answers`), one per question in order; empty
    /// when the decision answers none.
    pub answers: Vec<Answer>,
}

/// Why a decision was refused. Each message names the problem; the server sends it as the
/// `-32602` error message, so it must make sense to the person who clicked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecisionError {
    #[error("a decision must be a JSON object")]
    NotAnObject,
    #[error("decision_type must be a string")]
    TypeNotAString,
    #[error(
        "unknown decision_type \"{0}\" (expected \"approve\", \"deny\", \"reject\" or \"batch\")"
    )]
    UnknownType(String),
    #[error("{0} must be a string")]
    NotAString(&'static str),
    #[error("a batch decision needs a decisions object keyed by call id")]
    MissingDecisions,
    #[error("decision for {id} must be \"approve\" or \"deny\", not {value}")]
    BadVerdict { id: String, value: String },
    #[error("rejection_reasons must be an object of strings keyed by call id")]
    BadRejectionReasons,
    #[error("modified_args must be an object keyed by call id")]
    BadModifiedArgs,
    #[error("batch misses pending call {0}")]
    BatchMissesCall(String),
    #[error("batch names {0}, which is not pending")]
    BatchNamesUnknownCall(String),
    #[error("rejection reason for {0}, which is not pending")]
    ReasonForUnknownCall(String),
    #[error("rejection reason for {0}, which is not rejected")]
    ReasonForApprovedCall(String),
    #[error("modified_args for {0}, which is not pending")]
    ModifiedArgsForUnknownCall(String),
    #[error("modified_args for {0}, which is not approved")]
    ModifiedArgsForUnapprovedCall(String),
    #[error("modified_args for {0}, which is a question: answer it with ask_user_answers")]
    ModifiedArgsForQuestion(String),
    #[error("modified_args for {0} must be an object")]
    ModifiedArgsNotAnObject(String),
    #[error("no decision: say approve or reject")]
    NoDecision,
    #[error("ask_user_answers must be a list of {{\"answer\": [strings]}}, one per question")]
    BadAnswers,
    #[error("ask_user_answers given, but no pending question is approved to take them")]
    AnswersWithoutQuestion,
    #[error("{answers} answers given, but only {questions} questions were asked")]
    AnswerToQuestionNotAsked { answers: usize, questions: usize },
    #[error("no answer to the question \"{0}\"")]
    MissingAnswer(String),
    #[error("the answer to \"{question}\" {reason}")]
    BadAnswer { question: String, reason: String },
    #[error("the question \"{0}\" takes one answer")]
    OneAnswerOnly(String),
    #[error("\"{option}\" is not an option of the question \"{question}\"")]
    UnknownOption { question: String, option: String },
    #[error("modified_args for {0}: kagent's HITL extension cannot carry edited arguments")]
    EditsNotCarried(String),
    #[error("the question {0} must be answered: kagent's HITL extension cannot reject it")]
    QuestionNotAnswered(String),
    #[error(
        "answers for {0}: kagent's HITL extension cannot answer a question that waits beside \
         calls to approve; reject it"
    )]
    AnswersBesideCalls(String),
    #[error("call {0} has no approval id of kagent's HITL extension")]
    NoApprovalId(String),
}

const DECISION_TYPE: &str = "decision_type";

impl Verdict {
    fn from_value(id: &str, value: &Value) -> Result<Verdict, DecisionError> {
        match value.as_str() {
            Some("approve") => Ok(Verdict::Approve),
            Some("deny" | "reject") => Ok(Verdict::Deny),
            Some(_) | None => Err(DecisionError::BadVerdict {
                id: id.to_owned(),
                // `serde_json::to_string`, not `Value`'s `Display`: the browser's wasm already
                // has the one and would carry the other for this message alone.
                value: serde_json::to_string(value).unwrap_or_default(),
            }),
        }
    }
}

fn optional_string(
    object: &serde_json::Map<String, Value>,
    key: &'static str,
) -> Result<Option<String>, DecisionError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(DecisionError::NotAString(key)),
    }
}

impl Decision {
    pub fn approve_all() -> Decision {
        Decision {
            kind: DecisionKind::ApproveAll,
            modified_args: BTreeMap::new(),
            answers: Vec::new(),
        }
    }

    /// Approves every pending call and answers the pending questions.
    pub fn answer(answers: Vec<Answer>) -> Decision {
        Decision {
            answers,
            ..Decision::approve_all()
        }
    }

    pub fn deny_all(reason: Option<String>) -> Decision {
        Decision {
            kind: DecisionKind::DenyAll { reason },
            modified_args: BTreeMap::new(),
            answers: Vec::new(),
        }
    }

    /// Parses a decision DataPart's `data`, every variant and synonym of docs/wire.md (Decision
    /// message): `reject` = `deny`, top-level `rejection_reason` = `reason`.
    pub fn from_data(data: &Value) -> Result<Decision, DecisionError> {
        let object = data.as_object().ok_or(DecisionError::NotAnObject)?;
        let decision_type = match object.get(DECISION_TYPE) {
            Some(Value::String(name)) => name.as_str(),
            Some(_) => return Err(DecisionError::TypeNotAString),
            None => return Err(DecisionError::NoDecision),
        };
        let kind = match decision_type {
            "approve" => DecisionKind::ApproveAll,
            "deny" | "reject" => {
                let reason = match optional_string(object, "reason")? {
                    Some(reason) => Some(reason),
                    None => optional_string(object, "rejection_reason")?,
                };
                DecisionKind::DenyAll { reason }
            }
            "batch" => {
                // Loops that insert, not `collect`s: a `BTreeMap` built by `collect` sorts its
                // input, and each sort is kilobytes of the browser's download.
                let mut decisions = BTreeMap::new();
                let verdicts = object
                    .get("decisions")
                    .and_then(Value::as_object)
                    .ok_or(DecisionError::MissingDecisions)?;
                for (id, verdict) in verdicts {
                    decisions.insert(id.clone(), Verdict::from_value(id, verdict)?);
                }
                let mut rejection_reasons = BTreeMap::new();
                match object.get("rejection_reasons") {
                    None | Some(Value::Null) => {}
                    Some(Value::Object(reasons)) => {
                        for (id, reason) in reasons {
                            let reason =
                                reason.as_str().ok_or(DecisionError::BadRejectionReasons)?;
                            rejection_reasons.insert(id.clone(), reason.to_owned());
                        }
                    }
                    Some(_) => return Err(DecisionError::BadRejectionReasons),
                }
                DecisionKind::Batch {
                    decisions,
                    rejection_reasons,
                }
            }
            other => return Err(DecisionError::UnknownType(other.to_owned())),
        };
        let mut modified_args = BTreeMap::new();
        match object.get("modified_args") {
            None | Some(Value::Null) => {}
            Some(Value::Object(args)) => {
                for (id, call_args) in args {
                    modified_args.insert(id.clone(), call_args.clone());
                }
            }
            Some(_) => return Err(DecisionError::BadModifiedArgs),
        }
        let answers = match object.get(question::ANSWERS) {
            None | Some(Value::Null) => Vec::new(),
            Some(value) => question::answers_from_value(value)?,
        };
        Ok(Decision {
            kind,
            modified_args,
            answers,
        })
    }

    /// The decision in a message: its first DataPart with a `decision_type`; `None` if it has none.
    pub fn from_message(message: &Message) -> Result<Option<Decision>, DecisionError> {
        let data = message
            .parts
            .iter()
            .filter_map(Part::as_data)
            .find(|data| data.get(DECISION_TYPE).is_some());
        data.map(Decision::from_data).transpose()
    }

    /// The decision DataPart's `data` in a dialect. kagent's terms: `reject` (it does not know
    /// `deny`), `rejection_reason`, and batch keys that are the ORIGINAL call ids (the ids of
    /// [`super::ActionRequest`] already are). kagent's HITL extension has no decision DataPart
    /// (its decisions are [`super::extension::decision_message`]); it gets the native terms.
    pub fn to_data(&self, dialect: Dialect) -> Value {
        let (deny, reason_key) = match dialect {
            Dialect::Native | Dialect::KagentExtension => ("deny", "reason"),
            Dialect::Kagent => ("reject", "rejection_reason"),
        };
        let verdict_name = |verdict: &Verdict| match verdict {
            Verdict::Approve => "approve",
            Verdict::Deny => deny,
        };
        let mut data = serde_json::Map::new();
        match &self.kind {
            DecisionKind::ApproveAll => {
                data.insert(DECISION_TYPE.to_owned(), json!("approve"));
            }
            DecisionKind::DenyAll { reason } => {
                data.insert(DECISION_TYPE.to_owned(), json!(deny));
                if let Some(reason) = reason {
                    data.insert(reason_key.to_owned(), json!(reason));
                }
            }
            DecisionKind::Batch {
                decisions,
                rejection_reasons,
            } => {
                data.insert(DECISION_TYPE.to_owned(), json!("batch"));
                let mut verdicts = serde_json::Map::new();
                for (id, verdict) in decisions {
                    verdicts.insert(id.clone(), json!(verdict_name(verdict)));
                }
                let decisions = verdicts;
                data.insert("decisions".to_owned(), Value::Object(decisions));
                if !rejection_reasons.is_empty() {
                    data.insert("rejection_reasons".to_owned(), json!(rejection_reasons));
                }
            }
        }
        if !self.modified_args.is_empty() {
            data.insert("modified_args".to_owned(), json!(self.modified_args));
        }
        if !self.answers.is_empty() {
            data.insert(
                question::ANSWERS.to_owned(),
                question::answers_to_value(&self.answers),
            );
        }
        Value::Object(data)
    }

    /// The decision in words, for the TextPart beside the DataPart, and for logs.
    pub fn summary(&self) -> String {
        let verdict = match &self.kind {
            // kagent's own UI says this beside answers; its model never reads it.
            DecisionKind::ApproveAll if !self.answers.is_empty() => "Answered questions".to_owned(),
            DecisionKind::ApproveAll => "Approved".to_owned(),
            DecisionKind::DenyAll {
                reason: Some(reason),
            } => format!("Rejected: {reason}"),
            DecisionKind::DenyAll { reason: None } => "Rejected".to_owned(),
            DecisionKind::Batch { decisions, .. } => {
                let approved = decisions
                    .values()
                    .filter(|verdict| **verdict == Verdict::Approve)
                    .count();
                let rejected = decisions.len() - approved;
                format!("Batch decision: {approved} approved, {rejected} rejected")
            }
        };
        let verdict = match &self.kind {
            DecisionKind::DenyAll { .. } | DecisionKind::Batch { .. }
                if !self.answers.is_empty() =>
            {
                format!("{verdict}; questions answered")
            }
            DecisionKind::ApproveAll
            | DecisionKind::DenyAll { .. }
            | DecisionKind::Batch { .. } => verdict,
        };
        if self.modified_args.is_empty() {
            verdict
        } else {
            let ids: Vec<&str> = self.modified_args.keys().map(String::as_str).collect();
            format!("{verdict} (edited arguments: {})", ids.join(", "))
        }
    }

    /// The decision message on the task's pause of `requests`, in its dialect: the decision
    /// DataPart and its summary, or for kagent's HITL extension its response (refused when the
    /// extension cannot say it; [`super::extension::response_payload`]).
    pub fn to_message(
        &self,
        dialect: Dialect,
        requests: &[ActionRequest],
        message_id: String,
    ) -> Result<Message, DecisionError> {
        match dialect {
            Dialect::KagentExtension => {
                super::extension::decision_message(requests, self, message_id)
            }
            Dialect::Native | Dialect::Kagent => {
                Ok(Message::new(message_id, Role::User, self.to_parts(dialect)))
            }
        }
    }

    /// The parts of a decision message: the decision DataPart, then its summary as text.
    pub fn to_parts(&self, dialect: Dialect) -> Vec<Part> {
        vec![
            Part::data(self.to_data(dialect)),
            Part::text(self.summary()),
        ]
    }
}
