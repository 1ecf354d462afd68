//! A question an MCP server asks while one of its tools runs (MCP elicitation: `elicitation/create`,
//! or an input request of the 2026-07-28 revision's `input_required` result), as Signoff shows
//! it: one call named [`ELICITATION`] beside the call that asked (docs/wire.md, Questions from a
//! tool's server). A form's fields become [`Question`]s, answered like `ask_user`'s; a URL is
//! approved (the person opens it) or rejected. An approval a server asks for in a shape of its
//! own (Codex's, [`super::codex`]) is approved or rejected like a tool call. The answer goes
//! back as the MCP `ElicitResult` ([`Reply`]), or as the server's own shape of it.

use serde_json::{json, Map, Value};

use super::codex;
use super::question::{Answer, AnswerKind, Question, NO, YES};

/// The name of the call that carries a server's question.
pub const ELICITATION: &str = "elicitation";

/// Which tool call's server asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskedBy {
    /// The tool source (the MCP server's name in the agents file).
    pub server: String,
    /// The tool whose call is running.
    pub tool: String,
    /// That call's id.
    pub call_id: String,
}

/// What the server asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// Fields to fill in: the server's `requestedSchema`, and the questions drawn from it.
    Form {
        schema: Value,
        questions: Vec<Question>,
    },
    /// A page the person opens themselves (a sign-in, a payment); nothing passes through Signoff.
    Url { url: String, elicitation_id: String },
    /// Something the server would do once approved (Codex's command or patch): approved or
    /// rejected, like a tool call.
    Approval(Approval),
}

/// What a server asks to be approved, as its card shows it and rules read it.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    /// Which approval: Codex's `exec-approval` or `patch-approval`.
    pub kind: String,
    /// What it would do, as the call's arguments beside who asked: a command's `command`,
    /// `argv` and `cwd`, a patch's `changes`, and a `reason` where the server gave one.
    pub details: Map<String, Value>,
}

/// The arguments of a question's call that say who asked and what; an approval's details are
/// the others.
const ASKED_KEYS: &[&str] = &["server", "tool", "call_id", "message", "mode", "kind"];

/// A server's question.
#[derive(Debug, Clone, PartialEq)]
pub struct Elicitation {
    pub message: String,
    pub mode: Mode,
}

/// The answer sent back to the server: MCP's `ElicitResult`.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Accepted: a form's values (keyed by field), or nothing for a URL the person opened.
    Accept(Option<Map<String, Value>>),
    /// The person said no.
    Decline,
    /// Dismissed without an answer: the deadline passed, the chat was stopped.
    Cancel,
}

/// Why a server's question cannot be shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ElicitationError {
    #[error("the question has no `message`")]
    NoMessage,
    #[error("unknown elicitation mode {0:?}: Signoff answers \"form\" and \"url\"")]
    UnknownMode(String),
    #[error("a form's `requestedSchema` must be an object schema with `properties`")]
    BadSchema,
    #[error("the form's field {field:?} cannot be shown: {reason}")]
    BadField { field: String, reason: String },
    #[error(
        "the form's field {0:?} asks for a secret; forms must never ask for passwords, keys or \
         tokens: a server should ask for them in URL mode"
    )]
    AsksForSecret(String),
    #[error("the URL cannot be offered: {0}")]
    BadUrl(String),
    #[error("the approval cannot be shown: {0}")]
    BadApproval(String),
}

impl Elicitation {
    /// Reads the params of an `elicitation/create` request (a missing `mode` is a form).
    pub fn from_request(params: &Value) -> Result<Elicitation, ElicitationError> {
        let message = params
            .get("message")
            .and_then(Value::as_str)
            .filter(|message| !message.trim().is_empty())
            .ok_or(ElicitationError::NoMessage)?
            .to_owned();
        if codex::is_approval(params) {
            let mode = Mode::Approval(codex::approval(params)?);
            return Ok(Elicitation { message, mode });
        }
        let mode = match params.get("mode").and_then(Value::as_str) {
            None | Some("form") => {
                let schema = params
                    .get("requestedSchema")
                    .cloned()
                    .ok_or(ElicitationError::BadSchema)?;
                let questions = questions_from_schema(&schema)?;
                Mode::Form { schema, questions }
            }
            Some("url") => {
                let url = params
                    .get("url")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                url_parts(url).map_err(ElicitationError::BadUrl)?;
                let elicitation_id = params
                    .get("elicitationId")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                Mode::Url {
                    url: url.to_owned(),
                    elicitation_id,
                }
            }
            // An approval's call arguments, read back (`to_args`).
            Some("approval") => {
                let kind = params
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let details = params
                    .as_object()
                    .map(|args| {
                        args.iter()
                            .filter(|(key, _)| !ASKED_KEYS.contains(&key.as_str()))
                            .map(|(key, value)| (key.clone(), value.clone()))
                            .collect()
                    })
                    .unwrap_or_default();
                Mode::Approval(Approval {
                    kind: kind.to_owned(),
                    details,
                })
            }
            Some(other) => return Err(ElicitationError::UnknownMode(other.to_owned())),
        };
        Ok(Elicitation { message, mode })
    }

    /// The arguments of the call that carries it: who asked, the message, and the form's
    /// questions (which `ask_user`'s card and answers serve) or the URL.
    pub fn to_args(&self, asked_by: &AskedBy) -> Value {
        let mut args = json!({
            "server": asked_by.server,
            "tool": asked_by.tool,
            "call_id": asked_by.call_id,
            "message": self.message,
        });
        if let Some(object) = args.as_object_mut() {
            match &self.mode {
                Mode::Form { schema, questions } => {
                    object.insert("mode".to_owned(), json!("form"));
                    object.insert("requestedSchema".to_owned(), schema.clone());
                    let questions: Vec<Value> = questions.iter().map(Question::to_value).collect();
                    object.insert("questions".to_owned(), Value::Array(questions));
                }
                Mode::Url {
                    url,
                    elicitation_id,
                } => {
                    object.insert("mode".to_owned(), json!("url"));
                    object.insert("url".to_owned(), json!(url));
                    object.insert("elicitationId".to_owned(), json!(elicitation_id));
                }
                Mode::Approval(Approval { kind, details }) => {
                    object.insert("mode".to_owned(), json!("approval"));
                    object.insert("kind".to_owned(), json!(kind));
                    for (key, value) in details {
                        object.entry(key.clone()).or_insert_with(|| value.clone());
                    }
                }
            }
        }
        args
    }

    /// The params of an `elicitation/create` request that asks it again (the gateway's client
    /// is asked what the upstream server asked); an approval is asked as an empty form, which
    /// accepted approves it.
    pub fn to_request(&self) -> Value {
        match &self.mode {
            Mode::Approval(_) => json!({
                "mode": "form",
                "message": self.message,
                "requestedSchema": {"type": "object", "properties": {}},
            }),
            Mode::Form { schema, .. } => json!({
                "mode": "form",
                "message": self.message,
                "requestedSchema": schema,
            }),
            Mode::Url {
                url,
                elicitation_id,
            } => json!({
                "mode": "url",
                "message": self.message,
                "url": url,
                "elicitationId": elicitation_id,
            }),
        }
    }

    /// The question and who asked, read back from the call's arguments.
    pub fn from_args(args: &Value) -> Option<(Elicitation, AskedBy)> {
        let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
        let asked_by = AskedBy {
            server: text("server")?,
            tool: text("tool")?,
            call_id: text("call_id")?,
        };
        let elicitation = Elicitation::from_request(args).ok()?;
        Some((elicitation, asked_by))
    }
}

impl Reply {
    /// A form's answers (one per question, in order, as checked) as the values sent back.
    pub fn from_answers(questions: &[Question], answers: &[Answer]) -> Reply {
        let mut content = Map::new();
        for (question, answer) in questions.iter().zip(answers) {
            let Some(field) = &question.field else {
                continue;
            };
            let values: Vec<&str> = answer
                .iter()
                .map(|entry| question.value_of(entry))
                .collect();
            let value = match (question.multiple, values.first()) {
                (true, _) => json!(values),
                (false, Some(value)) => question.kind.to_json(value),
                (false, None) => continue,
            };
            content.insert(field.clone(), value);
        }
        Reply::Accept(Some(content))
    }

    /// Reads MCP's `ElicitResult` (`{"action", "content"?}`); `None` if it is not one.
    pub fn from_value(value: &Value) -> Option<Reply> {
        match value.get("action")?.as_str()? {
            "accept" => Some(Reply::Accept(
                value.get("content").and_then(Value::as_object).cloned(),
            )),
            "decline" => Some(Reply::Decline),
            "cancel" => Some(Reply::Cancel),
            _ => None,
        }
    }

    /// A form's values (an accepted reply's `content`) as the answers a person would have
    /// given, one per question in order: the inverse of [`Reply::from_answers`], so values
    /// answered elsewhere are checked and recorded as a person's are.
    pub fn answers_of(questions: &[Question], content: &Map<String, Value>) -> Vec<Answer> {
        let label = |question: &Question, value: &Value| -> String {
            let text = match value {
                Value::String(text) => text.clone(),
                Value::Bool(true) => return YES.to_owned(),
                Value::Bool(false) => return NO.to_owned(),
                other @ (Value::Null | Value::Number(_) | Value::Array(_) | Value::Object(_)) => {
                    other.to_string()
                }
            };
            match question.values.iter().position(|sent| *sent == text) {
                Some(at) => question.choices.get(at).cloned().unwrap_or(text),
                None => text,
            }
        };
        questions
            .iter()
            .map(|question| {
                let value = question.field.as_ref().and_then(|field| content.get(field));
                match value {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(items)) => {
                        items.iter().map(|item| label(question, item)).collect()
                    }
                    Some(value) => vec![label(question, value)],
                }
            })
            .collect()
    }

    /// MCP's `ElicitResult`: `{"action", "content"?}`.
    pub fn to_value(&self) -> Value {
        match self {
            Reply::Accept(Some(content)) => json!({"action": "accept", "content": content}),
            Reply::Accept(None) => json!({"action": "accept"}),
            Reply::Decline => json!({"action": "decline"}),
            Reply::Cancel => json!({"action": "cancel"}),
        }
    }
}

/// The questions of a form's `requestedSchema`: one per property (in the schema's order where
/// JSON objects keep it, else by key), required
/// ones marked, each typed by MCP's primitive schemas. A field that looks like a secret, or
/// that is not one of those schemas, refuses the whole form.
fn questions_from_schema(schema: &Value) -> Result<Vec<Question>, ElicitationError> {
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .filter(|_| {
            schema
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("object")
                == "object"
        })
        .ok_or(ElicitationError::BadSchema)?;
    let required: Vec<&str> = match schema.get("required").and_then(Value::as_array) {
        Some(items) => items.iter().filter_map(Value::as_str).collect(),
        None => Vec::new(),
    };
    let mut questions = Vec::with_capacity(properties.len());
    for (key, property) in properties {
        let mut question = field_question(key, property)?;
        question.optional = !required.contains(&key.as_str());
        questions.push(question);
    }
    Ok(questions)
}

/// One form field as a question.
fn field_question(key: &str, property: &Value) -> Result<Question, ElicitationError> {
    let text = |name: &str| property.get(name).and_then(Value::as_str);
    let title = text("title").unwrap_or(key).to_owned();
    if looks_secret(key, property) {
        return Err(ElicitationError::AsksForSecret(title));
    }
    let bad = |reason: &str| ElicitationError::BadField {
        field: key.to_owned(),
        reason: reason.to_owned(),
    };
    let mut question = Question {
        question: title,
        field: Some(key.to_owned()),
        hint: text("description").map(str::to_owned),
        ..Question::default()
    };
    let count = |name: &str| property.get(name).and_then(Value::as_u64);
    let number = |name: &str| property.get(name).and_then(Value::as_number).cloned();
    match text("type") {
        Some("string") => match options(property) {
            Some((choices, values)) => (question.choices, question.values) = (choices, values),
            None => {
                question.kind = match text("format") {
                    Some("email") => AnswerKind::Email,
                    Some("uri") => AnswerKind::Uri,
                    Some("date") => AnswerKind::Date,
                    Some("date-time") => AnswerKind::DateTime,
                    _ => match (count("minLength"), count("maxLength")) {
                        (None, None) => AnswerKind::Text,
                        (min, max) => AnswerKind::Bounded { min, max },
                    },
                }
            }
        },
        Some(kind @ ("number" | "integer")) => {
            question.kind = AnswerKind::Number {
                integer: kind == "integer",
                min: number("minimum"),
                max: number("maximum"),
            }
        }
        Some("boolean") => {
            question.kind = AnswerKind::Boolean;
            question.choices = vec![YES.to_owned(), NO.to_owned()];
        }
        Some("array") => {
            let items = property
                .get("items")
                .ok_or_else(|| bad("a list needs `items` with its options"))?;
            let (choices, values) =
                options(items).ok_or_else(|| bad("a list's items must be a set of options"))?;
            (question.choices, question.values, question.multiple) = (choices, values, true);
        }
        Some(other) => return Err(bad(&format!("type {other:?} is not a form field's type"))),
        None => return Err(bad("it has no `type`")),
    }
    Ok(question)
}

/// A field's options, as labels and (where they differ) the values sent: `enum` (with
/// `enumNames`), or `oneOf`/`anyOf` of `{const, title}`.
fn options(schema: &Value) -> Option<(Vec<String>, Vec<String>)> {
    let strings = |items: &Vec<Value>| -> Option<Vec<String>> {
        items
            .iter()
            .map(|item| item.as_str().map(str::to_owned))
            .collect()
    };
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let values = strings(values)?;
        let labels = match schema.get("enumNames").and_then(Value::as_array) {
            Some(names) => strings(names).filter(|names| names.len() == values.len())?,
            None => return Some((values, Vec::new())),
        };
        return Some((labels, values));
    }
    let listed = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)?;
    let mut labels = Vec::with_capacity(listed.len());
    let mut values = Vec::with_capacity(listed.len());
    for option in listed {
        let value = option.get("const")?.as_str()?;
        let label = option.get("title").and_then(Value::as_str).unwrap_or(value);
        labels.push(label.to_owned());
        values.push(value.to_owned());
    }
    (!labels.is_empty()).then_some((labels, values))
}

/// Words that name a secret, in a field's key, title or description.
const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "apikey",
    "api key",
    "api_key",
    "api-key",
    "token",
    "private key",
    "private_key",
    "credential",
    "cvv",
    "cvc",
    "card number",
    "ssn",
];

fn looks_secret(key: &str, property: &Value) -> bool {
    let text = |name: &str| {
        property
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    if text("format") == "password" || property.get("writeOnly") == Some(&Value::Bool(true)) {
        return true;
    }
    let words = format!("{key} {} {}", text("title"), text("description")).to_ascii_lowercase();
    SECRET_WORDS.iter().any(|word| words.contains(word))
}

/// A URL as the card shows it: what comes before its host, the host (highlighted), what comes
/// after, and what a careful person should know before opening it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlParts {
    pub before_host: String,
    pub host: String,
    pub after_host: String,
    pub warnings: Vec<String>,
}

/// Splits an `https` (or `http`) URL for showing, with its warnings: a plain-HTTP page, a
/// punycode or non-ASCII host (it may imitate another name), a name before `@` (the host is
/// what follows it), a bare IP address. Any other scheme is refused.
pub fn url_parts(url: &str) -> Result<UrlParts, String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("{url:?} is not an absolute http(s) URL"))?;
    let scheme_lower = scheme.to_ascii_lowercase();
    if scheme_lower != "https" && scheme_lower != "http" {
        return Err(format!("only https links are offered, not {scheme}:"));
    }
    if url.contains(char::is_whitespace) || url.chars().any(char::is_control) {
        return Err("the URL has spaces or control characters".to_owned());
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, after_host) = rest.split_at(end);
    let (userinfo, host_port) = match authority.rsplit_once('@') {
        Some((userinfo, host_port)) => (Some(userinfo), host_port),
        None => (None, authority),
    };
    let host = match host_port.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => host_port,
    };
    if host.is_empty() {
        return Err("the URL has no host".to_owned());
    }
    let mut warnings = Vec::new();
    if scheme_lower == "http" {
        warnings.push("It is plain HTTP: what you enter there can be read on the way.".to_owned());
    }
    let lower = host.to_ascii_lowercase();
    if lower.split('.').any(|label| label.starts_with("xn--")) || !host.is_ascii() {
        warnings.push(
            "Its domain uses international (punycode) letters, which can imitate a familiar \
             name: check it letter by letter."
                .to_owned(),
        );
    }
    if userinfo.is_some() {
        warnings.push(format!(
            "The text before \"@\" is not the site: it goes to {host}."
        ));
    }
    if host.starts_with('[') || host.split('.').all(|part| part.parse::<u8>().is_ok()) {
        warnings.push("It goes to a bare IP address, not a named site.".to_owned());
    }
    let before_host = format!(
        "{scheme}://{}",
        userinfo.map(|u| format!("{u}@")).unwrap_or_default()
    );
    Ok(UrlParts {
        before_host,
        host: host.to_owned(),
        after_host: format!("{}{after_host}", &host_port[host.len()..]),
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hitl::question::check_answers;

    fn form() -> Value {
        json!({
            "message": "Where should the report go?",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "email": {"type": "string", "format": "email", "title": "Email"},
                    "copies": {"type": "integer", "minimum": 1, "maximum": 5},
                    "urgent": {"type": "boolean", "description": "Send it today"},
                    "format": {"type": "string", "oneOf": [
                        {"const": "pdf", "title": "PDF"}, {"const": "csv", "title": "CSV"}]},
                    "tags": {"type": "array", "items": {"type": "string", "enum": ["ops", "sales"]}},
                },
                "required": ["email", "copies"],
            },
        })
    }

    #[test]
    fn values_answered_elsewhere_read_back_as_the_answers_that_send_them() {
        let elicitation = Elicitation::from_request(&form()).unwrap();
        let Mode::Form { questions, .. } = &elicitation.mode else {
            panic!("a form")
        };
        let sent = json!({"email": "ada@example.com", "copies": 2, "urgent": true,
            "format": "csv", "tags": ["ops", "sales"]});
        let content = sent.as_object().unwrap();
        let answers = Reply::answers_of(questions, content);
        check_answers(questions, &answers).unwrap();
        assert_eq!(
            Reply::from_answers(questions, &answers),
            Reply::Accept(Some(content.clone()))
        );
        // A field left out is an unanswered question (refused when it is required).
        let partial = json!({"email": "ada@example.com"});
        let answers = Reply::answers_of(questions, partial.as_object().unwrap());
        assert!(check_answers(questions, &answers).is_err());
        // Asked again as it was asked.
        assert_eq!(
            Elicitation::from_request(&elicitation.to_request()).unwrap(),
            elicitation
        );
        assert_eq!(
            Reply::from_value(&json!({"action": "accept", "content": sent})),
            Some(Reply::Accept(Some(content.clone())))
        );
        assert_eq!(
            Reply::from_value(&json!({"action": "cancel"})),
            Some(Reply::Cancel)
        );
        assert_eq!(Reply::from_value(&json!({"action": "maybe"})), None);
    }

    #[test]
    fn a_form_becomes_typed_questions_and_its_answers_the_values_sent() {
        let elicitation = Elicitation::from_request(&form()).unwrap();
        let Mode::Form { questions, .. } = &elicitation.mode else {
            panic!("a form")
        };
        // In the schema's order where JSON objects keep it (serde_json's `preserve_order`,
        // on in some builds), else by key: found by field here, not by place.
        let at = |field: &str| {
            questions
                .iter()
                .position(|question| question.field.as_deref() == Some(field))
                .unwrap()
        };
        let mut names: Vec<_> = questions.iter().map(|q| q.question.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["Email", "copies", "format", "tags", "urgent"]);
        assert!(!questions[at("copies")].optional && questions[at("format")].optional);
        assert_eq!(questions[at("format")].choices, ["PDF", "CSV"]);
        let answer_by_field = |copies: &str| {
            let mut answers: Vec<Answer> = vec![Vec::new(); questions.len()];
            if !copies.is_empty() {
                answers[at("copies")] = vec![copies.into()];
            }
            answers[at("email")] = vec!["ada@example.com".into()];
            answers[at("format")] = vec!["CSV".into()];
            answers[at("tags")] = vec!["ops".into(), "sales".into()];
            answers
        };
        let answers = answer_by_field("2");
        assert_eq!(check_answers(questions, &answers), Ok(()));
        let reply = Reply::from_answers(questions, &answers);
        assert_eq!(
            reply.to_value(),
            json!({"action": "accept", "content": {
                "copies": 2, "email": "ada@example.com", "format": "csv", "tags": ["ops", "sales"]}})
        );
        assert!(check_answers(questions, &answer_by_field("7")).is_err());
        assert!(
            check_answers(questions, &answer_by_field("")).is_err(),
            "copies is required"
        );
        let asked_by = AskedBy {
            server: "reports".into(),
            tool: "send_report".into(),
            call_id: "call_1".into(),
        };
        let args = elicitation.to_args(&asked_by);
        assert_eq!(
            Question::list_from_args(&args).as_deref(),
            Some(questions.as_slice())
        );
        assert_eq!(Elicitation::from_args(&args), Some((elicitation, asked_by)));
    }

    #[test]
    fn a_form_that_asks_for_a_secret_is_refused() {
        for field in [
            json!({"type": "string", "title": "Password"}),
            json!({"type": "string", "format": "password"}),
            json!({"type": "string", "description": "Your GitHub API key"}),
            json!({"type": "string", "writeOnly": true}),
        ] {
            let params = json!({"message": "Sign in",
                "requestedSchema": {"type": "object", "properties": {"value": field}}});
            assert!(matches!(
                Elicitation::from_request(&params),
                Err(ElicitationError::AsksForSecret(_))
            ));
        }
        let nested = json!({"message": "x", "requestedSchema": {"type": "object",
            "properties": {"address": {"type": "object"}}}});
        assert!(matches!(
            Elicitation::from_request(&nested),
            Err(ElicitationError::BadField { .. })
        ));
        assert_eq!(
            Elicitation::from_request(&json!({"message": "x", "mode": "sms"})),
            Err(ElicitationError::UnknownMode("sms".into()))
        );
    }

    #[test]
    fn urls_are_split_for_showing_with_their_warnings() {
        let plain = url_parts("https://pay.example.com:8443/checkout?id=7").unwrap();
        assert_eq!(plain.host, "pay.example.com");
        assert_eq!(plain.before_host, "https://");
        assert_eq!(plain.after_host, ":8443/checkout?id=7");
        assert!(plain.warnings.is_empty());
        let tricky = url_parts("http://paypal.com@xn--pypal-4ve.com/login").unwrap();
        assert_eq!(tricky.host, "xn--pypal-4ve.com");
        assert_eq!(tricky.warnings.len(), 3, "{:?}", tricky.warnings);
        assert_eq!(url_parts("https://10.0.0.1/").unwrap().warnings.len(), 1);
        assert!(url_parts("javascript:alert(1)").is_err());
        assert!(url_parts("file:///etc/passwd").is_err());
        let elicitation = Elicitation::from_request(&json!({"mode": "url", "message": "Pay",
            "url": "https://pay.example.com/x", "elicitationId": "e1"}))
        .unwrap();
        assert_eq!(
            elicitation.mode,
            Mode::Url {
                url: "https://pay.example.com/x".into(),
                elicitation_id: "e1".into()
            }
        );
        assert_eq!(Reply::Accept(None).to_value(), json!({"action": "accept"}));
    }
}
