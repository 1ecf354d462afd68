//! Questions from the agent (docs/wire.md, Questions): the `ask_user` tool's questions, the
//! person's answers in a decision (`ask_user_answers`), the checks an answer must pass, and the
//! tool result that carries them back to the model. kagent 0.10's `ask_user` and Signoff's own
//! share this shape, so one decision answers either.

use serde_json::{json, Map, Value};

pub use super::field::{AnswerKind, NO, YES};
use super::DecisionError;

/// The name of the question tool (kagent adds it to every agent; Signoff's is built in).
pub const ASK_USER: &str = "ask_user";
/// The decision key holding the answers: one `{"answer": [strings]}` per question, in order.
pub const ANSWERS: &str = "ask_user_answers";
/// The key of the answers inside the run arguments of an answered question call (Signoff's
/// server keeps the answers with the call, so the tool can return them).
pub const RUN_ANSWERS: &str = "answers";

/// Whether a call of this name asks questions (given in its arguments): the model's
/// `ask_user`, or an MCP server's form ([`super::elicitation::ELICITATION`]).
pub fn asks_questions(name: &str) -> bool {
    name == ASK_USER || name == super::elicitation::ELICITATION
}

/// One question as the model asked it: `{"question", "choices"?, "multiple"?}`; a form field of
/// an MCP server's question (`elicitation`) adds what its answer must be (`kind` and the rest).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Question {
    pub question: String,
    /// The options; none means the answer is free text.
    pub choices: Vec<String>,
    /// Whether several choices may be picked.
    pub multiple: bool,
    /// What a free-text answer must be (a form field's type and format).
    pub kind: AnswerKind,
    /// It may be left unanswered (a form field the server does not require).
    pub optional: bool,
    /// The form field's key, which the answer is sent back under.
    pub field: Option<String>,
    /// More words on what is asked (a field's description).
    pub hint: Option<String>,
    /// The value sent for each choice, where it differs from the choice's label.
    pub values: Vec<String>,
}

/// One question's answer: always a list (one entry for a single choice or free text).
pub type Answer = Vec<String>;

impl Question {
    /// The questions of an `ask_user` call's arguments (`{"questions": […]}`); `None` if the
    /// arguments hold none or a question is not an object with a string `question`.
    pub fn list_from_args(args: &Value) -> Option<Vec<Question>> {
        let items = args.get("questions")?.as_array()?;
        if items.is_empty() {
            return None;
        }
        let mut questions = Vec::with_capacity(items.len());
        for item in items {
            questions.push(Question::from_value(item)?);
        }
        Some(questions)
    }

    fn from_value(value: &Value) -> Option<Question> {
        let question = value.get("question")?.as_str()?.to_owned();
        let choices = match value.get("choices") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => strings(items)?,
            Some(_) => return None,
        };
        let multiple = value.get("multiple").and_then(Value::as_bool) == Some(true);
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        let values = match value.get("values") {
            Some(Value::Array(items)) => strings(items)?,
            _ => Vec::new(),
        };
        Some(Question {
            question,
            choices,
            multiple,
            kind: AnswerKind::from_value(value),
            optional: value.get("optional").and_then(Value::as_bool) == Some(true),
            field: text("field"),
            hint: text("hint"),
            values,
        })
    }

    pub fn to_value(&self) -> Value {
        let mut object = Map::new();
        object.insert("question".to_owned(), json!(self.question));
        if !self.choices.is_empty() {
            object.insert("choices".to_owned(), json!(self.choices));
        }
        if self.multiple {
            object.insert("multiple".to_owned(), json!(true));
        }
        self.kind.write(&mut object);
        if self.optional {
            object.insert("optional".to_owned(), json!(true));
        }
        if let Some(field) = &self.field {
            object.insert("field".to_owned(), json!(field));
        }
        if let Some(hint) = &self.hint {
            object.insert("hint".to_owned(), json!(hint));
        }
        if !self.values.is_empty() {
            object.insert("values".to_owned(), json!(self.values));
        }
        Value::Object(object)
    }

    /// The value sent for an answer entry: the choice's own value where it has one.
    pub fn value_of<'a>(&'a self, entry: &'a str) -> &'a str {
        match self.choices.iter().position(|choice| choice == entry) {
            Some(at) => self.values.get(at).map(String::as_str).unwrap_or(entry),
            None => entry,
        }
    }

    /// A question without choices takes free text.
    pub fn is_free_text(&self) -> bool {
        self.choices.is_empty()
    }

    /// Whether `answer` fits: at least one entry, one unless `multiple`, each a choice (or
    /// non-blank text for a free-text question).
    fn check(&self, answer: &[String]) -> Result<(), DecisionError> {
        let values: Vec<&str> = answer
            .iter()
            .map(|value| value.trim())
            .filter(|value| !value.is_empty())
            .collect();
        if values.is_empty() {
            return match self.optional {
                true => Ok(()),
                false => Err(DecisionError::MissingAnswer(self.question.clone())),
            };
        }
        if values.len() > 1 && !self.multiple {
            return Err(DecisionError::OneAnswerOnly(self.question.clone()));
        }
        if self.is_free_text() {
            return match self.kind.check(values[0]) {
                Ok(()) => Ok(()),
                Err(reason) => Err(DecisionError::BadAnswer {
                    question: self.question.clone(),
                    reason,
                }),
            };
        }
        match values
            .iter()
            .find(|value| !self.choices.iter().any(|choice| choice == *value))
        {
            Some(value) => Err(DecisionError::UnknownOption {
                question: self.question.clone(),
                option: (*value).to_owned(),
            }),
            None => Ok(()),
        }
    }
}

/// The questions as `ask_user` arguments: `{"questions": […]}`.
pub fn questions_to_args(questions: &[Question]) -> Value {
    json!({"questions": questions.iter().map(Question::to_value).collect::<Vec<_>>()})
}

/// The decision's `ask_user_answers`: `[{"answer": […]}, …]`.
pub fn answers_to_value(answers: &[Answer]) -> Value {
    Value::Array(
        answers
            .iter()
            .map(|answer| json!({"answer": answer}))
            .collect(),
    )
}

/// Reads `ask_user_answers`: a list of `{"answer": [strings]}`.
pub fn answers_from_value(value: &Value) -> Result<Vec<Answer>, DecisionError> {
    let items = value.as_array().ok_or(DecisionError::BadAnswers)?;
    let mut answers = Vec::with_capacity(items.len());
    for item in items {
        let entries = item.get("answer").and_then(Value::as_array);
        answers.push(
            entries
                .and_then(|entries| strings(entries))
                .ok_or(DecisionError::BadAnswers)?,
        );
    }
    Ok(answers)
}

/// Checks `answers` against every question asked, in order: one answer per question, each
/// fitting its question. `questions` empty means none was asked.
pub fn check_answers(questions: &[Question], answers: &[Answer]) -> Result<(), DecisionError> {
    if questions.is_empty() {
        return Err(DecisionError::AnswersWithoutQuestion);
    }
    if answers.len() > questions.len() {
        return Err(DecisionError::AnswerToQuestionNotAsked {
            answers: answers.len(),
            questions: questions.len(),
        });
    }
    for (at, question) in questions.iter().enumerate() {
        question.check(answers.get(at).map(Vec::as_slice).unwrap_or(&[]))?;
    }
    Ok(())
}

/// The answers trimmed as they are checked, so what runs is what was checked.
pub fn clean_answers(answers: &[Answer]) -> Vec<Answer> {
    answers
        .iter()
        .map(|answer| {
            answer
                .iter()
                .map(|value| value.trim().to_owned())
                .filter(|value| !value.is_empty())
                .collect()
        })
        .collect()
}

/// The question call's tool result, as kagent 0.10 writes it: a JSON **string** of
/// `[{"question", "answer"}]` under `result`, so the model reads each answer beside its question.
pub fn answered_result(questions: &[Question], answers: &[Answer]) -> Value {
    let pairs: Vec<Value> = questions
        .iter()
        .enumerate()
        .map(|(at, question)| {
            json!({"question": question.question, "answer": answers.get(at).cloned().unwrap_or_default()})
        })
        .collect();
    let pairs = serde_json::to_string(&pairs).unwrap_or_default();
    json!({ "result": pairs })
}

/// The question and answer pairs in a question call's result, if it is one.
pub fn answers_from_result(response: &Value) -> Option<Vec<(String, Answer)>> {
    let text = response.get("result")?.as_str()?;
    let pairs: Value = serde_json::from_str(text).ok()?;
    let mut answered = Vec::new();
    for pair in pairs.as_array()? {
        let question = pair.get("question")?.as_str()?.to_owned();
        let answer = strings(pair.get("answer")?.as_array()?)?;
        answered.push((question, answer));
    }
    Some(answered)
}

/// Every item as a string; `None` if one is not a string. A loop rather than a `collect` into
/// `Option`: each such `collect` is its own adapter in the browser's download.
fn strings(items: &[Value]) -> Option<Vec<String>> {
    let mut strings = Vec::with_capacity(items.len());
    for item in items {
        strings.push(item.as_str()?.to_owned());
    }
    Some(strings)
}

/// A question call's run arguments with its answers (Signoff's server stores these as what the
/// approved call runs with).
pub fn args_with_answers(args: &Value, answers: &[Answer]) -> Value {
    let mut args = args.clone();
    if let Some(object) = args.as_object_mut() {
        object.insert(RUN_ANSWERS.to_owned(), answers_to_value(answers));
    }
    args
}

/// The answers inside run arguments written by [`args_with_answers`].
pub fn answers_from_args(args: &Value) -> Option<Vec<Answer>> {
    answers_from_value(args.get(RUN_ANSWERS)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn questions() -> Vec<Question> {
        Question::list_from_args(&json!({"questions": [
            {"question": "Which database?", "choices": ["PostgreSQL", "SQLite"]},
            {"question": "Which features?", "choices": ["metrics", "tracing"], "multiple": true},
            {"question": "Anything else?"},
        ]}))
        .unwrap()
    }

    fn answers(value: Value) -> Vec<Answer> {
        answers_from_value(&value).unwrap()
    }

    #[test]
    fn questions_round_trip_through_args() {
        let questions = questions();
        assert!(questions[2].is_free_text() && questions[1].multiple);
        assert_eq!(
            Question::list_from_args(&questions_to_args(&questions)),
            Some(questions)
        );
        assert_eq!(Question::list_from_args(&json!({"questions": []})), None);
        assert_eq!(
            Question::list_from_args(&json!({"questions": [{"choices": []}]})),
            None
        );
    }

    #[test]
    fn answers_are_checked_against_the_questions() {
        let questions = questions();
        let good = answers(
            json!([{"answer": ["SQLite"]}, {"answer": ["metrics", "tracing"]}, {"answer": ["no"]}]),
        );
        assert_eq!(check_answers(&questions, &good), Ok(()));
        let check = |value: Value| check_answers(&questions, &answers(value)).unwrap_err();
        assert_eq!(
            check(json!([{"answer": ["MySQL"]}, {"answer": ["metrics"]}, {"answer": ["x"]}])),
            DecisionError::UnknownOption {
                question: "Which database?".to_owned(),
                option: "MySQL".to_owned()
            }
        );
        assert_eq!(
            check(
                json!([{"answer": ["SQLite", "PostgreSQL"]}, {"answer": ["metrics"]}, {"answer": ["x"]}])
            ),
            DecisionError::OneAnswerOnly("Which database?".to_owned())
        );
        assert_eq!(
            check(json!([{"answer": ["SQLite"]}, {"answer": ["metrics"]}])),
            DecisionError::MissingAnswer("Anything else?".to_owned())
        );
        assert_eq!(
            check(
                json!([{"answer": ["SQLite"]}, {"answer": ["metrics"]}, {"answer": ["x"]}, {"answer": ["y"]}])
            ),
            DecisionError::AnswerToQuestionNotAsked {
                answers: 4,
                questions: 3
            }
        );
        assert_eq!(
            check_answers(&[], &good),
            Err(DecisionError::AnswersWithoutQuestion)
        );
        assert_eq!(
            answers_from_value(&json!([{"answer": "SQLite"}])),
            Err(DecisionError::BadAnswers)
        );
    }

    #[test]
    fn the_result_pairs_each_answer_with_its_question() {
        let questions = questions();
        let given =
            answers(json!([{"answer": ["SQLite"]}, {"answer": ["metrics"]}, {"answer": ["no"]}]));
        let result = answered_result(&questions, &given);
        assert!(result["result"].is_string());
        let pairs = answers_from_result(&result).unwrap();
        assert_eq!(
            pairs[0],
            ("Which database?".to_owned(), vec!["SQLite".to_owned()])
        );
        assert_eq!(pairs.len(), 3);
        let args = args_with_answers(&questions_to_args(&questions), &given);
        assert_eq!(answers_from_args(&args), Some(given));
    }
}
