//! What a notification says, as JSON (a webhook's `data`, what a Slack message is drawn from):
//! the batch, its task, agent and requester, a link that opens it in Signoff, and per event the
//! calls that wait (arguments shortened, secrets masked: `signoff_protocol::redact`) or who
//! decided and how. Built when the event is committed and stored with it; the batch's id is
//! added when it is sent (a pause's commit is the one that opens the batch).

use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
use serde_json::{json, Value};
use signoff_protocol::redact::display_args;

use crate::store::{CallVerdict, NotificationRow, TaskRow};

/// The longest string of an argument shown outside Signoff, in characters.
pub const MAX_ARG_CHARS: usize = 200;

/// A path segment's characters to escape (as the UI's routes and share links encode them).
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}');

/// The task a notification is about.
#[derive(Debug, Clone)]
pub struct About<'a> {
    pub task_id: &'a str,
    pub context_id: &'a str,
    /// `namespace/name`.
    pub agent: &'a str,
    /// The task's owner, who asked.
    pub requester: &'a str,
}

impl<'a> About<'a> {
    /// What `row`'s notifications are about: its task, chat, agent and owner.
    pub fn task(row: &'a TaskRow) -> About<'a> {
        About {
            task_id: &row.id,
            context_id: &row.context_id,
            agent: &row.agent,
            requester: &row.user_id,
        }
    }
}

/// The page of the chat that holds the batch: `{public_url}/agents/{ns}/{name}/chat/{id}`.
pub fn chat_url(public_url: &str, agent: &str, context_id: &str) -> String {
    let (namespace, name) = agent.split_once('/').unwrap_or(("default", agent));
    format!(
        "{}/agents/{}/{}/chat/{}",
        public_url.trim_end_matches('/'),
        utf8_percent_encode(namespace, SEGMENT),
        utf8_percent_encode(name, SEGMENT),
        utf8_percent_encode(context_id, SEGMENT),
    )
}

fn base(about: &About<'_>, public_url: &str) -> serde_json::Map<String, Value> {
    let mut data = serde_json::Map::new();
    data.insert("task_id".into(), json!(about.task_id));
    data.insert("context_id".into(), json!(about.context_id));
    data.insert("agent".into(), json!(about.agent));
    data.insert("requester".into(), json!(about.requester));
    data.insert(
        "url".into(),
        json!(chat_url(public_url, about.agent, about.context_id)),
    );
    data
}

/// A batch waits: its calls (the batch's stored action requests: `id`, `name`, `args`), and
/// when it expires if it does.
pub fn pending(
    about: &About<'_>,
    public_url: &str,
    requests: &[Value],
    expires_at: Option<&str>,
) -> Value {
    let mut data = base(about, public_url);
    let calls: Vec<Value> = requests
        .iter()
        .map(|request| {
            json!({
                "id": request["id"],
                "name": request["name"],
                "args": display_args(&request["args"], MAX_ARG_CHARS),
            })
        })
        .collect();
    data.insert("calls".into(), Value::Array(calls));
    data.insert("expires_at".into(), json!(expires_at));
    Value::Object(data)
}

/// A batch still waits after its `remind_after`: as [`pending`], with when it started waiting.
pub fn reminded(
    about: &About<'_>,
    public_url: &str,
    requests: &[Value],
    expires_at: Option<&str>,
    since: &str,
) -> Value {
    let mut data = pending(about, public_url, requests, expires_at);
    data["since"] = json!(since);
    data
}

/// A batch escalated after its `escalate_after`: as [`reminded`], with the entries
/// (`group:NAME`, `user:ID`) that may now decide it.
pub fn escalated(
    about: &About<'_>,
    public_url: &str,
    requests: &[Value],
    expires_at: Option<&str>,
    since: &str,
    to: &[String],
) -> Value {
    let mut data = reminded(about, public_url, requests, expires_at, since);
    data["escalated_to"] = json!(to);
    data
}

/// A person handed a waiting batch to another (`to`: the one entry): as [`escalated`], with who
/// handed it over (`handed_over_by`) and their note if they gave one.
#[allow(clippy::too_many_arguments)]
pub fn handed_over(
    about: &About<'_>,
    public_url: &str,
    requests: &[Value],
    expires_at: Option<&str>,
    since: &str,
    to: &[String],
    by: &str,
    note: Option<&str>,
) -> Value {
    let mut data = escalated(about, public_url, requests, expires_at, since, to);
    data["handed_over_by"] = json!(by);
    data["note"] = json!(note);
    data
}

/// An approver extended a waiting batch's deadline: as [`pending`] (with the new `expires_at`),
/// with who extended it (`extended_by`), the deadline before (`previous_expires_at`) and their
/// note if they gave one.
pub fn extended(
    about: &About<'_>,
    public_url: &str,
    requests: &[Value],
    expires_at: &str,
    by: &str,
    previous: &str,
    note: Option<&str>,
) -> Value {
    let mut data = pending(about, public_url, requests, Some(expires_at));
    data["extended_by"] = json!(by);
    data["previous_expires_at"] = json!(previous);
    data["note"] = json!(note);
    data
}

/// A batch was decided, canceled or expired: by whom, through which channel (`rest`, `a2a`,
/// `text`, `cancel`, `expiry`, …), the summary and each call's verdict.
pub fn decided(
    about: &About<'_>,
    public_url: &str,
    by: &str,
    how: &str,
    summary: &str,
    verdicts: &[CallVerdict],
) -> Value {
    let mut data = base(about, public_url);
    data.insert("decided_by".into(), json!(by));
    data.insert("channel".into(), json!(how));
    data.insert("summary".into(), json!(summary));
    let verdicts: Vec<Value> = verdicts
        .iter()
        .map(|verdict| json!({"call_id": verdict.call_id, "verdict": verdict.verdict.as_str()}))
        .collect();
    data.insert("verdicts".into(), Value::Array(verdicts));
    Value::Object(data)
}

/// A stored notification's `data` as sent: its payload with the batch's id.
pub fn data_of(row: &NotificationRow) -> Value {
    let mut data = row.payload.clone();
    if let Value::Object(map) = &mut data {
        map.insert("batch_id".into(), json!(row.batch_id));
    }
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_link_opens_the_chat_page_with_each_segment_encoded() {
        assert_eq!(
            chat_url("https://signoff.example.com/", "ops/my agent", "c/1"),
            "https://signoff.example.com/agents/ops/my%20agent/chat/c%2F1"
        );
    }

    #[test]
    fn a_pending_payload_masks_secrets_and_shortens_arguments() {
        let about = About {
            task_id: "t1",
            context_id: "c1",
            agent: "default/demo",
            requester: "alice",
        };
        let request = json!({
            "id": "call-1",
            "name": "deploy",
            "args": {"token": "abc", "note": "x".repeat(500)},
        });
        let data = pending(&about, "http://h", &[request], None);
        assert_eq!(data["calls"][0]["args"]["token"], json!("[masked]"));
        let inside = json!({
            "id": "call-2",
            "name": "run",
            "args": {"command": "psql postgres://admin:hunter22@db/app -c 'select 1'"},
        });
        let masked = pending(&about, "http://h", &[inside], None);
        assert_eq!(
            masked["calls"][0]["args"]["command"],
            json!("psql postgres://admin:[masked]@db/app -c 'select 1'")
        );
        let note = data["calls"][0]["args"]["note"].as_str().unwrap();
        assert_eq!(note.chars().count(), MAX_ARG_CHARS);
        assert_eq!(data["url"], json!("http://h/agents/default/demo/chat/c1"));
        assert_eq!(data["requester"], json!("alice"));
    }
}
