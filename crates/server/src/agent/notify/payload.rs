//! What a notification says, as a typed [`Notice`] (a webhook's `data`, what email and Slack
//! draw): the batch, its task, agent and requester, a link that opens it in Signoff, and per
//! event the calls that wait (arguments shortened, secrets masked: `signoff_protocol::redact`)
//! or who decided and how. Built when the event is committed and stored with it; the batch's id
//! is added when it is sent (a pause's commit is the one that opens the batch).

use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use signoff_protocol::redact::display_args;

use super::Recipient;
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

/// What a notification says: the batch's task, chat, agent and requester, the link that opens
/// it, and what happened ([`NoticeEvent`]). Serialized, it is a webhook's `data`
/// (docs/notifications.md) and what email and Slack draw; built once when the event is
/// committed and stored with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notice {
    pub task_id: String,
    pub context_id: String,
    pub agent: String,
    pub requester: String,
    /// The chat's page in Signoff.
    pub url: String,
    #[serde(flatten)]
    pub event: NoticeEvent,
    /// The batch's id, known when it is sent (a pause's commit is the one that opens it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_id: Option<i64>,
    /// An email row's one recipient.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipient: Option<Recipient>,
}

/// What happened to the batch. Untagged: each kind is told by the fields it has, tried from the
/// one with the most (a hand-over is an escalation with who handed it over).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum NoticeEvent {
    /// Decided, canceled or expired: by whom, through which channel (`rest`, `a2a`, `text`,
    /// `cancel`, `expiry`, …), the summary and each call's verdict.
    Decided {
        decided_by: String,
        channel: String,
        summary: String,
        verdicts: Vec<NoticeVerdict>,
    },
    /// An approver gave the batch more time: the new deadline, the one before, their note.
    Extended {
        calls: Vec<NoticeCall>,
        expires_at: Option<String>,
        extended_by: String,
        previous_expires_at: String,
        note: Option<String>,
    },
    /// A person handed the waiting batch to another (`escalated_to`: the one entry).
    HandedOver {
        calls: Vec<NoticeCall>,
        expires_at: Option<String>,
        since: String,
        escalated_to: Vec<String>,
        handed_over_by: String,
        note: Option<String>,
    },
    /// The batch escalated after its `escalate_after` to the entries that may now decide it.
    Escalated {
        calls: Vec<NoticeCall>,
        expires_at: Option<String>,
        since: String,
        escalated_to: Vec<String>,
    },
    /// The batch still waits after its `remind_after`.
    Reminded {
        calls: Vec<NoticeCall>,
        expires_at: Option<String>,
        since: String,
    },
    /// A batch waits, expiring at `expires_at` if it does; on a `batch.counted` row, with the
    /// approvals counted so far toward each call's quorum.
    Pending {
        calls: Vec<NoticeCall>,
        expires_at: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        approvals: Vec<NoticeApprovals>,
    },
}

/// One call's approvals short of its quorum: who approved it so far, in order, and how many
/// must.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoticeApprovals {
    pub call_id: String,
    pub approved_by: Vec<String>,
    pub quorum: u32,
}

/// One call that waits, as told outside Signoff: its arguments shortened, secrets masked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoticeCall {
    pub id: String,
    pub name: String,
    pub args: Value,
}

/// One call's verdict in a decided batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoticeVerdict {
    pub call_id: String,
    pub verdict: String,
}

impl Notice {
    fn new(about: &About<'_>, public_url: &str, event: NoticeEvent) -> Notice {
        Notice {
            task_id: about.task_id.to_owned(),
            context_id: about.context_id.to_owned(),
            agent: about.agent.to_owned(),
            requester: about.requester.to_owned(),
            url: chat_url(public_url, about.agent, about.context_id),
            event,
            batch_id: None,
            recipient: None,
        }
    }

    /// A stored notification's notice as sent: its payload with the batch's id.
    pub fn of(row: &NotificationRow) -> Result<Notice, String> {
        let mut notice: Notice = serde_json::from_value(row.payload.clone())
            .map_err(|err| format!("the notification's stored payload: {err}"))?;
        notice.batch_id = row.batch_id;
        Ok(notice)
    }

    /// As stored. Every field is a string, a number, a list or JSON already, so this cannot
    /// fail; were it to, the row says so rather than go out empty.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(
            |err| json!({"error": format!("the notification could not be written: {err}")}),
        )
    }

    /// The calls that wait (none for a decided batch).
    pub fn calls(&self) -> &[NoticeCall] {
        match &self.event {
            NoticeEvent::Decided { .. } => &[],
            NoticeEvent::Extended { calls, .. }
            | NoticeEvent::HandedOver { calls, .. }
            | NoticeEvent::Escalated { calls, .. }
            | NoticeEvent::Reminded { calls, .. }
            | NoticeEvent::Pending { calls, .. } => calls,
        }
    }

    /// The approvals counted so far toward each call's quorum (a `batch.counted` row's).
    pub fn approvals(&self) -> &[NoticeApprovals] {
        match &self.event {
            NoticeEvent::Pending { approvals, .. } => approvals,
            NoticeEvent::Decided { .. }
            | NoticeEvent::Extended { .. }
            | NoticeEvent::HandedOver { .. }
            | NoticeEvent::Escalated { .. }
            | NoticeEvent::Reminded { .. } => &[],
        }
    }

    /// When the waiting batch expires, if it does.
    pub fn expires_at(&self) -> Option<&str> {
        match &self.event {
            NoticeEvent::Decided { .. } => None,
            NoticeEvent::Extended { expires_at, .. }
            | NoticeEvent::HandedOver { expires_at, .. }
            | NoticeEvent::Escalated { expires_at, .. }
            | NoticeEvent::Reminded { expires_at, .. }
            | NoticeEvent::Pending { expires_at, .. } => expires_at.as_deref(),
        }
    }

    /// The note of a hand-over or an extension, if its person gave one.
    pub fn note(&self) -> Option<&str> {
        match &self.event {
            NoticeEvent::Extended { note, .. } | NoticeEvent::HandedOver { note, .. } => {
                note.as_deref()
            }
            NoticeEvent::Decided { .. }
            | NoticeEvent::Escalated { .. }
            | NoticeEvent::Reminded { .. }
            | NoticeEvent::Pending { .. } => None,
        }
    }
}

fn calls_of(requests: &[Value]) -> Vec<NoticeCall> {
    requests
        .iter()
        .map(|request| NoticeCall {
            id: request["id"].as_str().unwrap_or_default().to_owned(),
            name: request["name"].as_str().unwrap_or_default().to_owned(),
            args: display_args(&request["args"], MAX_ARG_CHARS),
        })
        .collect()
}

/// A batch waits: its calls (the batch's stored action requests: `id`, `name`, `args`), and
/// when it expires if it does.
pub fn pending(
    about: &About<'_>,
    public_url: &str,
    requests: &[Value],
    expires_at: Option<&str>,
) -> Notice {
    counted(about, public_url, requests, expires_at, Vec::new())
}

/// An approval was counted and the batch still waits for more (`batch.counted`): as
/// [`pending`], with each call's approvals so far.
pub fn counted(
    about: &About<'_>,
    public_url: &str,
    requests: &[Value],
    expires_at: Option<&str>,
    approvals: Vec<NoticeApprovals>,
) -> Notice {
    let event = NoticeEvent::Pending {
        calls: calls_of(requests),
        expires_at: expires_at.map(str::to_owned),
        approvals,
    };
    Notice::new(about, public_url, event)
}

/// A batch still waits after its `remind_after`: as [`pending`], with when it started waiting.
pub fn reminded(
    about: &About<'_>,
    public_url: &str,
    requests: &[Value],
    expires_at: Option<&str>,
    since: &str,
) -> Notice {
    let event = NoticeEvent::Reminded {
        calls: calls_of(requests),
        expires_at: expires_at.map(str::to_owned),
        since: since.to_owned(),
    };
    Notice::new(about, public_url, event)
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
) -> Notice {
    let event = NoticeEvent::Escalated {
        calls: calls_of(requests),
        expires_at: expires_at.map(str::to_owned),
        since: since.to_owned(),
        escalated_to: to.to_vec(),
    };
    Notice::new(about, public_url, event)
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
) -> Notice {
    let event = NoticeEvent::HandedOver {
        calls: calls_of(requests),
        expires_at: expires_at.map(str::to_owned),
        since: since.to_owned(),
        escalated_to: to.to_vec(),
        handed_over_by: by.to_owned(),
        note: note.map(str::to_owned),
    };
    Notice::new(about, public_url, event)
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
) -> Notice {
    let event = NoticeEvent::Extended {
        calls: calls_of(requests),
        expires_at: Some(expires_at.to_owned()),
        extended_by: by.to_owned(),
        previous_expires_at: previous.to_owned(),
        note: note.map(str::to_owned),
    };
    Notice::new(about, public_url, event)
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
) -> Notice {
    let event = NoticeEvent::Decided {
        decided_by: by.to_owned(),
        channel: how.to_owned(),
        summary: summary.to_owned(),
        verdicts: verdicts
            .iter()
            .map(|verdict| NoticeVerdict {
                call_id: verdict.call_id.clone(),
                verdict: verdict.verdict.as_str().to_owned(),
            })
            .collect(),
    };
    Notice::new(about, public_url, event)
}

/// A stored notification's `data` as a webhook sends it: its payload with the batch's id
/// (`null` when it has none), byte for byte what was stored otherwise.
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
        let data = pending(&about, "http://h", &[request], None).to_value();
        assert_eq!(data["calls"][0]["args"]["token"], json!("[masked]"));
        let inside = json!({
            "id": "call-2",
            "name": "run",
            "args": {"command": "psql postgres://admin:hunter22@db/app -c 'select 1'"},
        });
        let masked = pending(&about, "http://h", &[inside], None).to_value();
        assert_eq!(
            masked["calls"][0]["args"]["command"],
            json!("psql postgres://admin:[masked]@db/app -c 'select 1'")
        );
        let note = data["calls"][0]["args"]["note"].as_str().unwrap();
        assert_eq!(note.chars().count(), MAX_ARG_CHARS);
        assert_eq!(data["url"], json!("http://h/agents/default/demo/chat/c1"));
        assert_eq!(data["requester"], json!("alice"));
    }

    #[test]
    fn each_notice_reads_back_as_the_kind_it_was_and_keeps_its_fields() {
        let about = About {
            task_id: "t1",
            context_id: "c1",
            agent: "default/demo",
            requester: "alice",
        };
        let requests = [json!({"id": "call_1", "name": "write_file", "args": {"path": "a"}})];
        let to = ["group:sre".to_owned()];
        let verdicts = [CallVerdict {
            call_id: "call_1".into(),
            status: crate::store::CallStatus::Denied,
            verdict: crate::store::Verdict::Deny,
            reason: Some("not now".into()),
            run_args: None,
            run_args_sha256: None,
        }];
        let since = "2026-12-03T07:00:00.000Z";
        let notices = [
            (
                pending(&about, "u", &requests, None),
                vec!["calls", "expires_at"],
            ),
            (
                reminded(&about, "u", &requests, None, since),
                vec!["calls", "expires_at", "since"],
            ),
            (
                escalated(&about, "u", &requests, None, since, &to),
                vec!["calls", "expires_at", "since", "escalated_to"],
            ),
            (
                handed_over(&about, "u", &requests, None, since, &to, "bob", None),
                vec![
                    "calls",
                    "expires_at",
                    "since",
                    "escalated_to",
                    "handed_over_by",
                    "note",
                ],
            ),
            (
                extended(
                    &about,
                    "u",
                    &requests,
                    since,
                    "bob",
                    since,
                    Some("one more hour"),
                ),
                vec![
                    "calls",
                    "expires_at",
                    "extended_by",
                    "previous_expires_at",
                    "note",
                ],
            ),
            (
                decided(&about, "u", "bob", "rest", "Rejected", &verdicts),
                vec!["decided_by", "channel", "summary", "verdicts"],
            ),
        ];
        for (notice, fields) in notices {
            let stored = notice.to_value();
            let mut keys: Vec<&str> = stored
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            keys.sort_unstable();
            let mut expected = vec!["task_id", "context_id", "agent", "requester", "url"];
            expected.extend(fields);
            expected.sort_unstable();
            assert_eq!(keys, expected, "{stored}");
            let read: Notice = serde_json::from_value(stored).unwrap();
            assert_eq!(read, notice);
        }
    }

    #[test]
    fn a_stored_payload_that_is_not_a_notice_is_refused_saying_so() {
        let row = NotificationRow {
            id: "msg_1".into(),
            channel: "team".into(),
            kind: crate::store::NotificationKind::Pending,
            task_id: "t1".into(),
            batch_id: Some(3),
            payload: json!({"agent": "default/demo"}),
            attempts: 0,
            created_at: "2026-12-03T07:00:00.000Z".into(),
            last_error: None,
            failed_at: None,
        };
        let refused = Notice::of(&row).unwrap_err();
        assert!(
            refused.starts_with("the notification's stored payload"),
            "{refused}"
        );
    }
}
