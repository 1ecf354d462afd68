//! A Slack incoming webhook's message (Block Kit): what happened to which batch, the agent and
//! requester, the calls with their arguments (shortened, secrets masked, as stored), and
//! buttons that are links opening the batch in Signoff (a decision is made there, signed in).

use serde_json::{json, Value};

use super::payload::data_of;
use crate::store::{NotificationKind, NotificationRow};

/// The most calls one message lists; the rest are counted.
const MAX_CALLS: usize = 10;

/// Text in Slack's mrkdwn with its control characters escaped.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn text_of(data: &Value, key: &str) -> String {
    escape(data[key].as_str().unwrap_or(""))
}

/// The message for `row`.
pub fn message(row: &NotificationRow) -> Value {
    let data = data_of(row);
    let (agent, requester, url) = (
        text_of(&data, "agent"),
        text_of(&data, "requester"),
        data["url"].as_str().unwrap_or("").to_owned(),
    );
    let headline = match row.kind {
        NotificationKind::Pending => format!("*{agent}* waits for a sign-off ({requester} asked)"),
        NotificationKind::Decided => format!(
            "*{agent}*: {} by {} ({})",
            text_of(&data, "summary"),
            text_of(&data, "decided_by"),
            text_of(&data, "channel")
        ),
        NotificationKind::Canceled => format!("*{agent}*: the batch was canceled"),
        NotificationKind::Expired => format!("*{agent}*: the batch expired unanswered"),
        NotificationKind::Reminded => format!(
            "Reminder: *{agent}* still waits for a sign-off ({requester} asked, since {})",
            text_of(&data, "since")
        ),
        NotificationKind::Escalated => format!(
            "*{agent}* waits for a sign-off: escalated to {} ({requester} asked)",
            escalated_to(&data)
        ),
        NotificationKind::Extended => format!(
            "*{agent}* waits for a sign-off: {} extended its deadline to {} ({requester} asked)",
            text_of(&data, "extended_by"),
            text_of(&data, "expires_at")
        ),
        // Pushes go to their task's own receivers, never to a channel.
        NotificationKind::Push => format!("*{agent}*: the task changed"),
    };
    let mut blocks = vec![json!({
        "type": "section",
        "text": {"type": "mrkdwn", "text": headline},
    })];
    let mut fields = vec![
        json!({"type": "mrkdwn", "text": format!("*Agent*\n{agent}")}),
        json!({"type": "mrkdwn", "text": format!("*Requester*\n{requester}")}),
    ];
    if let Some(expires) = data["expires_at"].as_str() {
        fields.push(json!({"type": "mrkdwn", "text": format!("*Expires*\n{}", escape(expires))}));
    }
    blocks.push(json!({"type": "section", "fields": fields}));
    let calls = data["calls"].as_array().cloned().unwrap_or_default();
    for call in calls.iter().take(MAX_CALLS) {
        let args = serde_json::to_string_pretty(&call["args"]).unwrap_or_default();
        blocks.push(json!({
            "type": "section",
            "text": {"type": "mrkdwn", "text": format!(
                "*{}*\n```{}```", escape(call["name"].as_str().unwrap_or("")), escape(&args)
            )},
        }));
    }
    if calls.len() > MAX_CALLS {
        blocks.push(json!({
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": format!("and {} more", calls.len() - MAX_CALLS)}],
        }));
    }
    if !url.is_empty() {
        let mut buttons = Vec::new();
        if row.kind == NotificationKind::Pending {
            buttons.push(json!({
                "type": "button", "style": "primary", "action_id": "review",
                "text": {"type": "plain_text", "text": "Review and decide"}, "url": url,
            }));
        } else {
            buttons.push(json!({
                "type": "button", "action_id": "open",
                "text": {"type": "plain_text", "text": "Open in Signoff"}, "url": url,
            }));
        }
        blocks.push(json!({"type": "actions", "elements": buttons}));
    }
    json!({"text": headline.replace('*', ""), "blocks": blocks})
}

/// Whom an escalation went to, as one line.
fn escalated_to(data: &Value) -> String {
    let entries: Vec<&str> = data["escalated_to"]
        .as_array()
        .map(|entries| entries.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    escape(&entries.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pending_message_names_agent_requester_calls_and_links_to_the_batch() {
        let row = NotificationRow {
            id: "msg_1".into(),
            channel: "team".into(),
            kind: NotificationKind::Pending,
            task_id: "t1".into(),
            batch_id: Some(7),
            payload: json!({
                "agent": "default/demo", "requester": "alice<script>",
                "url": "https://s.example/agents/default/demo/chat/c1",
                "calls": [{"id": "c", "name": "write_file", "args": {"path": "a.txt", "token": "[masked]"}}],
                "expires_at": null,
            }),
            attempts: 0,
            created_at: "2026-01-01T00:00:00.000Z".into(),
            last_error: None,
            failed_at: None,
        };
        let message = message(&row);
        let text = message.to_string();
        assert!(text.contains("alice&lt;script&gt;"), "{text}");
        assert!(text.contains("write_file"));
        assert!(text.contains("[masked]"));
        let button = &message["blocks"][3]["elements"][0];
        assert_eq!(
            button["url"],
            "https://s.example/agents/default/demo/chat/c1"
        );
        assert_eq!(message["blocks"][3]["type"], "actions");
    }
}
