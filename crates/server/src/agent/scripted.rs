//! The scripted model: the offline default. Deterministic, no network; it understands a few
//! commands (grammar in crates/server/README.md) and reports tool results in plain words.

use std::time::Duration;

use futures_util::stream::{self, StreamExt};
use serde_json::{json, Value};

use super::model::{
    ChatMessage, Model, ModelEvent, ModelRequest, ModelStream, ModelToolCall, Usage,
};
use signoff_protocol::hitl::question::{answers_from_result, questions_to_args};
use signoff_protocol::hitl::{Question, ASK_USER};

use super::config::{agent_tool_name, AGENT_TOOL_ARG};
use super::subagents::request_text;
use super::tools::result_text;

/// The highest N that `count to N` accepts.
pub const MAX_COUNT: u64 = 10_000;

/// The scripted model. `pause` is the delay between streamed chunks of `count to N` (so a long
/// answer lasts long enough to be stopped); `chunk_pause` the delay between chunks of other
/// answers (so streaming is visible).
#[derive(Debug, Clone)]
pub struct ScriptedModel {
    pub count_pause: Duration,
    pub chunk_pause: Duration,
}

impl Default for ScriptedModel {
    fn default() -> Self {
        ScriptedModel {
            count_pause: Duration::from_millis(50),
            chunk_pause: Duration::from_millis(15),
        }
    }
}

/// One understood clause of a user message.
#[derive(Debug, Clone, PartialEq)]
enum Clause {
    List,
    Read(String),
    Write(String, String),
    Delete(String),
    /// `ask` clauses of one round, asked in one `ask_user` call.
    Ask(Vec<Question>),
    /// `delegate NAMESPACE/AGENT: TEXT`: the agent-tool of that subagent, with TEXT as its
    /// `request` (the whole message: TEXT may hold commas and "and").
    Delegate {
        agent: String,
        request: String,
    },
}

impl Clause {
    fn tool(&self) -> String {
        match self {
            Clause::List => "list_directory".to_owned(),
            Clause::Read(_) => "read_file".to_owned(),
            Clause::Write(_, _) => "write_file".to_owned(),
            Clause::Delete(_) => "delete_file".to_owned(),
            Clause::Ask(_) => ASK_USER.to_owned(),
            Clause::Delegate { agent, .. } => agent_tool_name(agent),
        }
    }

    fn args(&self) -> Value {
        match self {
            Clause::List => json!({"path": "."}),
            Clause::Read(path) | Clause::Delete(path) => json!({"path": path}),
            Clause::Write(path, content) => json!({"path": path, "content": content}),
            Clause::Ask(questions) => questions_to_args(questions),
            Clause::Delegate { request, .. } => json!({ AGENT_TOOL_ARG: request }),
        }
    }
}

/// What the model does with the latest message.
#[derive(Debug, Clone, PartialEq)]
enum Plan {
    Say(String),
    Count(u64),
    /// Rounds of calls: each round is one model turn (one batch); "then" starts the next.
    Call(Vec<Vec<Clause>>),
}

const HELP: &str = "I'm the scripted demo model, so I understand only a few commands: \
`list files`, `read PATH`, `write PATH: CONTENT` and `delete PATH` (join several with \"and\", \
commas or new lines to make one batch), `ask QUESTION? A / B` (`A + B` to pick several, nothing \
for free text), `delegate NAMESPACE/AGENT: TEXT` (for an agent with subagents), and `count to N`. Try: write notes.txt: hi and delete \
old.txt and read readme.txt";

/// `text` without a leading `prefix`, compared ASCII-case-insensitively. The grammar's words
/// are ASCII, so a match ends on a character boundary of `text` itself: nothing is ever cut at
/// an offset measured on another string (a lowercased copy can differ in length: `İ`, `K`).
fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// The byte offset of the first ASCII-case-insensitive occurrence of the ASCII `needle`.
fn find_ignore_case(text: &str, needle: &str) -> Option<usize> {
    let needle = needle.as_bytes();
    text.as_bytes()
        .windows(needle.len())
        .position(|window| window.eq_ignore_ascii_case(needle))
}

fn parse_clause(raw: &str) -> Option<Clause> {
    let text = raw.trim().trim_end_matches(['.', '!']).trim();
    let text = strip_prefix_ignore_case(text, "please ").map_or(text, str::trim);
    if ["list files", "list", "ls", "list the files"]
        .iter()
        .any(|command| text.eq_ignore_ascii_case(command))
    {
        return Some(Clause::List);
    }
    let rest_after = |verb: &str| strip_prefix_ignore_case(text, verb).map(str::trim);
    if let Some(path) = rest_after("read ") {
        return (!path.is_empty()).then(|| Clause::Read(path.to_owned()));
    }
    if let Some(path) = rest_after("delete ") {
        return (!path.is_empty()).then(|| Clause::Delete(path.to_owned()));
    }
    if let Some(rest) = rest_after("ask ") {
        return parse_question(rest).map(|question| Clause::Ask(vec![question]));
    }
    if let Some(rest) = rest_after("write ") {
        let (path, content) = rest.split_once(':')?;
        let path = path.trim();
        return (!path.is_empty())
            .then(|| Clause::Write(path.to_owned(), content.trim_start().to_owned()));
    }
    None
}

/// `Which database? PostgreSQL / SQLite`: the question up to its `?`, then its choices split at
/// `/` (pick one) or `+` (pick several); no choices asks for free text.
fn parse_question(text: &str) -> Option<Question> {
    let (question, choices) = text.split_once('?')?;
    let question = format!("{}?", question.trim());
    if question.len() < 2 {
        return None;
    }
    let multiple = choices.contains('+');
    let choices: Vec<String> = choices
        .split(if multiple { '+' } else { '/' })
        .map(str::trim)
        .filter(|choice| !choice.is_empty())
        .map(str::to_owned)
        .collect();
    Some(Question {
        question,
        choices,
        multiple,
        ..Question::default()
    })
}

/// Splits a message into clauses: new lines, commas, and the word "and".
fn clauses(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        for piece in line.split(',') {
            let mut rest = piece;
            while let Some(at) = find_ignore_case(rest, " and ") {
                out.push(rest[..at].to_owned());
                rest = &rest[at + " and ".len()..];
            }
            out.push(rest.to_owned());
        }
    }
    out.into_iter()
        .map(|clause| {
            let trimmed = clause.trim();
            // "and delete x" after a comma: drop the leading conjunction.
            strip_prefix_ignore_case(trimmed, "and ")
                .unwrap_or(trimmed)
                .trim()
                .to_owned()
        })
        .filter(|clause| !clause.is_empty())
        .collect()
}

fn plan(text: &str) -> Plan {
    let trimmed = text.trim().trim_end_matches(['.', '!']);
    if let Some(number) = strip_prefix_ignore_case(trimmed, "count to ") {
        return match number.trim().parse::<u64>() {
            Ok(n) if (1..=MAX_COUNT).contains(&n) => Plan::Count(n),
            Ok(_) | Err(_) => Plan::Say(format!(
                "I can count from 1 to at most {MAX_COUNT}; say `count to N` with such an N."
            )),
        };
    }
    if let Some(rest) = strip_prefix_ignore_case(trimmed.trim_start(), "delegate ") {
        return match rest.split_once(':') {
            Some((agent, request)) if agent.trim().contains('/') && !request.trim().is_empty() => {
                Plan::Call(vec![vec![Clause::Delegate {
                    agent: agent.trim().to_owned(),
                    request: request.trim().to_owned(),
                }]])
            }
            Some(_) | None => Plan::Say(
                "Say `delegate NAMESPACE/AGENT: TEXT`, such as `delegate default/demo: write \
                 sub.txt: hi`."
                    .to_owned(),
            ),
        };
    }
    let mut rounds = Vec::new();
    for round in split_rounds(text) {
        let pieces = clauses(&round);
        let mut parsed = Vec::new();
        for piece in &pieces {
            match parse_clause(piece) {
                // The questions of one round go in one call, as a model asks them.
                Some(Clause::Ask(questions)) => {
                    match parsed.iter_mut().find_map(|clause| match clause {
                        Clause::Ask(asked) => Some(asked),
                        Clause::List
                        | Clause::Read(_)
                        | Clause::Write(..)
                        | Clause::Delete(_)
                        | Clause::Delegate { .. } => None,
                    }) {
                        Some(asked) => asked.extend(questions),
                        None => parsed.push(Clause::Ask(questions)),
                    }
                }
                Some(clause) => parsed.push(clause),
                None if pieces.len() == 1 && rounds.is_empty() => {
                    return Plan::Say(format!("Hi! {HELP}"))
                }
                None => {
                    return Plan::Say(format!(
                        "I did not understand \"{}\". {HELP}",
                        shorten(piece, QUOTE_CHARS)
                    ))
                }
            }
        }
        if !parsed.is_empty() {
            rounds.push(parsed);
        }
    }
    if rounds.is_empty() {
        return Plan::Say(format!("Hi! {HELP}"));
    }
    Plan::Call(rounds)
}

/// Splits a message at the word "then" (after a comma, "and" or a space): each part is a round.
fn split_rounds(text: &str) -> Vec<String> {
    let mut rounds = Vec::new();
    let mut current = Vec::new();
    for word in text.split(' ') {
        if word.eq_ignore_ascii_case("then") {
            // "… and then …": the "and" belongs to "then".
            if current
                .last()
                .is_some_and(|last: &&str| last.eq_ignore_ascii_case("and"))
            {
                current.pop();
            }
            rounds.push(current.join(" "));
            current.clear();
        } else {
            current.push(word);
        }
    }
    rounds.push(current.join(" "));
    rounds
}

/// "writing notes.txt", for sentences about a call.
fn describe(name: &str, args: &Value) -> String {
    let path = args.get("path").and_then(Value::as_str).unwrap_or(".");
    match name {
        "list_directory" => format!("listing {path}"),
        "read_file" => format!("reading {path}"),
        "write_file" => format!("writing {path}"),
        "delete_file" => format!("deleting {path}"),
        ASK_USER => "my question".to_owned(),
        other => format!("calling {other}"),
    }
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The sentence that reports one tool result.
fn report(name: &str, args: &Value, response: &Value, edited: bool) -> String {
    let path = args.get("path").and_then(Value::as_str).unwrap_or(".");
    let status = response.get("status").and_then(Value::as_str);
    let mut line = if status == Some("denied") {
        let rule = response.get("rule").and_then(Value::as_str).unwrap_or("?");
        format!("A rule refused {} (rule {rule}).", describe(name, args))
    } else if status == Some("expired") {
        format!(
            "Nobody answered in time, so {} did not happen (the approval expired).",
            describe(name, args)
        )
    } else if status == Some("rejected") {
        match response.get("reason").and_then(Value::as_str) {
            Some(reason) if !reason.trim().is_empty() => {
                format!("You rejected {}: \"{reason}\".", describe(name, args))
            }
            Some(_) | None => format!("You rejected {} (no reason given).", describe(name, args)),
        }
    } else if response.get("isError").and_then(Value::as_bool) == Some(true) {
        format!(
            "{} failed: {}.",
            capitalize(&describe(name, args)),
            result_text(response).trim_end_matches('.')
        )
    } else {
        let text = result_text(response);
        match name {
            "list_directory" => {
                format!("The folder {path} holds: {}.", text.replace('\n', ", "))
            }
            "read_file" => format!("{path} says: {}", text.trim_end()),
            "write_file" => format!("I wrote {path}."),
            "delete_file" => format!("I deleted {path}."),
            ASK_USER => match answers_from_result(response) {
                Some(pairs) => pairs
                    .iter()
                    .map(|(question, answer)| {
                        format!("You answered \"{question}\": {}.", answer.join(", "))
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
                None => format!("{ASK_USER} returned: {}", text.trim_end()),
            },
            other => match request_text(args) {
                Some(_) => format!("The agent answered: {}", text.trim_end()),
                None => format!("{other} returned: {}", text.trim_end()),
            },
        }
    };
    if edited {
        line.push_str(" (You edited the arguments before it ran.)");
    }
    line
}

/// The answer after tool results: one sentence per result since the user's last message.
fn results_answer(messages: &[ChatMessage]) -> String {
    let start = last_user(messages).map_or(0, |index| index + 1);
    let calls: Vec<&ModelToolCall> = messages[start..]
        .iter()
        .flat_map(|message| match message {
            ChatMessage::Assistant { tool_calls, .. } => tool_calls.iter().collect(),
            ChatMessage::User { .. } | ChatMessage::Tool { .. } => Vec::new(),
        })
        .collect();
    let mut lines = Vec::new();
    for message in &messages[start..] {
        match message {
            ChatMessage::Tool {
                call_id,
                name,
                response,
                edited_from,
                ..
            } => {
                let args = calls
                    .iter()
                    .find(|call| &call.id == call_id)
                    .map(|call| call.args.clone())
                    .unwrap_or(Value::Null);
                lines.push(report(name, &args, response, edited_from.is_some()));
            }
            ChatMessage::User { .. } | ChatMessage::Assistant { .. } => {}
        }
    }
    if lines.is_empty() {
        return "Done.".to_owned();
    }
    lines.join("\n")
}

fn last_user(messages: &[ChatMessage]) -> Option<usize> {
    messages
        .iter()
        .rposition(|message| matches!(message, ChatMessage::User { .. }))
}

/// How much of an unrecognised clause the help answer quotes back.
const QUOTE_CHARS: usize = 80;

/// The most chunks one answer streams in: a long answer (a long quoted reason, a long file)
/// takes bigger chunks rather than more pauses, so no answer streams slower than a short one's
/// pace times this.
const MAX_CHUNKS: usize = 64;

/// `text` cut to at most `max` characters, with an ellipsis when cut.
fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// Splits an answer into chunks of a few words, so it streams visibly; never more than
/// [`MAX_CHUNKS`] of them.
fn chunks(text: &str) -> Vec<String> {
    let min_len = text.len().div_ceil(MAX_CHUNKS).max(24);
    let mut out = Vec::new();
    let mut current = String::new();
    for word in text.split_inclusive([' ', '\n']) {
        current.push_str(word);
        if current.len() >= min_len {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn word_count(messages: &[ChatMessage]) -> u64 {
    messages
        .iter()
        .map(|message| match message {
            ChatMessage::User { text, .. } | ChatMessage::Assistant { text, .. } => {
                text.split_whitespace().count() as u64
            }
            ChatMessage::Tool { response, .. } => {
                result_text(response).split_whitespace().count() as u64
            }
        })
        .sum()
}

/// Streams `pieces` with `pause` between them, then the usage.
fn text_stream(pieces: Vec<String>, pause: Duration, prompt_tokens: u64) -> ModelStream {
    let completion_tokens = pieces
        .iter()
        .map(|piece| piece.split_whitespace().count() as u64)
        .sum();
    let usage = ModelEvent::Usage(Usage {
        prompt_tokens,
        completion_tokens,
    });
    let count = pieces.len();
    stream::iter(pieces.into_iter().enumerate())
        .then(move |(index, piece)| async move {
            if index > 0 && index < count {
                tokio::time::sleep(pause).await;
            }
            Ok(ModelEvent::Text(piece))
        })
        .chain(stream::iter([Ok(usage)]))
        .boxed()
}

impl Model for ScriptedModel {
    fn turn(&self, request: ModelRequest) -> ModelStream {
        let prompt_tokens = word_count(&request.messages);
        let user = last_user(&request.messages);
        let user_text = match user.map(|index| &request.messages[index]) {
            Some(ChatMessage::User { text, .. }) => text.clone(),
            Some(ChatMessage::Assistant { .. } | ChatMessage::Tool { .. }) | None => String::new(),
        };
        // Rounds already called since the user's message (each is one tool-calling turn).
        let done = request.messages[user.map_or(0, |index| index + 1)..]
            .iter()
            .filter(|message| {
                matches!(message, ChatMessage::Assistant { tool_calls, .. } if !tool_calls.is_empty())
            })
            .count();
        let plan = match plan(&user_text) {
            Plan::Call(rounds) if done < rounds.len() => Plan::Call(rounds),
            Plan::Call(_) | Plan::Say(_) | Plan::Count(_) if done > 0 => {
                let answer = results_answer(&request.messages);
                return text_stream(chunks(&answer), self.chunk_pause, prompt_tokens);
            }
            other @ (Plan::Call(_) | Plan::Say(_) | Plan::Count(_)) => other,
        };
        match plan {
            Plan::Say(answer) => text_stream(chunks(&answer), self.chunk_pause, prompt_tokens),
            Plan::Count(n) => {
                let pieces = (1..=n)
                    .map(|i| {
                        if i == 1 {
                            "1".to_owned()
                        } else {
                            format!(", {i}")
                        }
                    })
                    .collect();
                text_stream(pieces, self.count_pause, prompt_tokens)
            }
            Plan::Call(rounds) => {
                let clauses = rounds.into_iter().nth(done).unwrap_or_default();
                let missing: Vec<String> = clauses
                    .iter()
                    .map(Clause::tool)
                    .filter(|tool| !request.tools.iter().any(|spec| spec.name == *tool))
                    .collect();
                if let Some(tool) = missing.first() {
                    let answer = format!("I can't do that: this agent has no {tool} tool.");
                    return text_stream(chunks(&answer), self.chunk_pause, prompt_tokens);
                }
                // Ids unique within the conversation: count the calls made so far.
                let earlier: usize = request
                    .messages
                    .iter()
                    .map(|message| match message {
                        ChatMessage::Assistant { tool_calls, .. } => tool_calls.len(),
                        ChatMessage::User { .. } | ChatMessage::Tool { .. } => 0,
                    })
                    .sum();
                let calls: Vec<Result<ModelEvent, _>> = clauses
                    .iter()
                    .enumerate()
                    .map(|(index, clause)| {
                        Ok(ModelEvent::ToolCall(ModelToolCall {
                            id: format!("call_{}", earlier + index + 1),
                            model_id: None,
                            name: clause.tool(),
                            args: clause.args(),
                        }))
                    })
                    .chain([Ok(ModelEvent::Usage(Usage {
                        prompt_tokens,
                        completion_tokens: clauses.len() as u64 * 10,
                    }))])
                    .collect();
                stream::iter(calls).boxed()
            }
        }
    }
}

#[cfg(test)]
mod tests;
