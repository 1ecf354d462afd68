//! A Slack incoming webhook's message (Block Kit): what happened to which batch, the agent and
//! requester, the calls with their arguments (shortened, secrets masked, as stored), and
//! buttons that are links opening the batch in Signoff (a decision is made there, signed in).
//!
//! Slack refuses a whole message that breaks one of Block Kit's limits, so every text that
//! holds something a person or an agent wrote is escaped and cut to fit (limits below). Every
//! mrkdwn text is `verbatim`: Slack then links no bare `@channel`, `#channel` or URL, and the
//! escaping of `&`, `<` and `>` keeps `<!channel>`, `<@U…>` and `<url|text>` from being Slack's
//! own mention or link syntax.

use serde_json::{json, Value};

use super::payload::{Notice, NoticeApprovals, NoticeCall, NoticeEvent};
use crate::store::{NotificationKind, NotificationRow};

/// The most calls one message lists; the rest are counted.
const MAX_CALLS: usize = 10;

// Slack's limits, as its Block Kit reference gives them
// (https://docs.slack.dev/reference/block-kit/blocks/section-block: a section's text at most
// 3000 characters, each of its at most 10 `fields` at most 2000;
// https://docs.slack.dev/reference/block-kit/block-elements/button-element: a button's `url`
// at most 3000; https://docs.slack.dev/reference/block-kit/composition-objects/text-object: a
// text object's text 1 to 3000). The same figures are in the comments of npm's @slack/types,
// which tests/api/slack.rs checks the messages against. Lengths are counted in UTF-16 units,
// never fewer than characters, so a text within them is within Slack's whatever it counts.

/// A section's text.
const SECTION_UNITS: usize = 3000;
/// A button's link.
const URL_UNITS: usize = 3000;
/// A name in a message: the agent, the requester, who decided or extended, a tool's name, a
/// time (user ids and tool names have no length limit of their own).
const NAME_UNITS: usize = 200;
/// A decision's summary (which holds a rejection's reason), an extension's note, and whom an
/// escalation went to: with the names, a headline stays under [`SECTION_UNITS`].
const REMARK_UNITS: usize = 1500;

/// What a message says instead of a button whose link Slack would refuse.
const NO_LINK: &str = "The link to this batch is longer than Slack allows: open it from \
Signoff's approvals.";

/// `text` in Slack's mrkdwn with its control characters escaped, at most `max` UTF-16 units
/// long: cut between characters (never inside an `&amp;`), ending in `…` when cut.
fn escape(text: &str, max: usize) -> String {
    let mut escaped = String::new();
    let mut units = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let piece = match c {
            '&' => "&amp;".to_owned(),
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            other => other.to_string(),
        };
        let length: usize = piece.chars().map(char::len_utf16).sum();
        // The last character may use the room the ellipsis would have taken.
        let room = if chars.peek().is_some() {
            max.saturating_sub(1)
        } else {
            max
        };
        if units + length > room {
            escaped.push('…');
            return escaped;
        }
        escaped.push_str(&piece);
        units += length;
    }
    escaped
}

/// A mrkdwn text object Slack shows as written (no automatic links or mentions).
fn mrkdwn(text: String) -> Value {
    json!({"type": "mrkdwn", "text": text, "verbatim": true})
}

/// The message for `row`, or why its stored notice cannot be read.
pub fn message(row: &NotificationRow) -> Result<Value, String> {
    let notice = Notice::of(row)?;
    let (headline, mut blocks) = body(row.kind, &notice);
    let url = notice.url.as_str();
    if url.encode_utf16().count() > URL_UNITS {
        blocks.push(json!({"type": "context", "elements": [mrkdwn(NO_LINK.to_owned())]}));
    } else if !url.is_empty() {
        let button = if row.kind == NotificationKind::Pending {
            json!({
                "type": "button", "style": "primary", "action_id": "review",
                "text": {"type": "plain_text", "text": "Review and decide"}, "url": url,
            })
        } else {
            json!({
                "type": "button", "action_id": "open",
                "text": {"type": "plain_text", "text": "Open in Signoff"}, "url": url,
            })
        };
        blocks.push(json!({"type": "actions", "elements": [button]}));
    }
    Ok(json!({"text": headline.replace('*', ""), "blocks": blocks}))
}

/// A message's headline and blocks without buttons: what happened, the agent and requester,
/// the deadline, a note, and the calls that wait (with `previews`, by call id: the Slack app's).
fn body_with(
    kind: NotificationKind,
    notice: &Notice,
    previews: &[(String, String)],
) -> (String, Vec<Value>) {
    let name = |text: &str| escape(text, NAME_UNITS);
    let (agent, requester) = (name(&notice.agent), name(&notice.requester));
    let headline = headline(kind, notice, &agent, &requester);
    let mut blocks = vec![json!({"type": "section", "text": mrkdwn(headline.clone())})];
    let mut fields = vec![
        mrkdwn(format!("*Agent*\n{agent}")),
        mrkdwn(format!("*Requester*\n{requester}")),
    ];
    if let Some(expires_at) = notice.expires_at() {
        fields.push(mrkdwn(format!("*Expires*\n{}", name(expires_at))));
    }
    blocks.push(json!({"type": "section", "fields": fields}));
    if let Some(note) = notice.note().filter(|note| !note.trim().is_empty()) {
        let note = escape(note, REMARK_UNITS);
        blocks.push(json!({"type": "section", "text": mrkdwn(format!("*Note*\n{note}"))}));
    }
    let calls = notice.calls();
    for call in calls.iter().take(MAX_CALLS) {
        blocks.push(call_section(call));
        if let Some((_, preview)) = previews.iter().find(|(id, _)| *id == call.id) {
            blocks.push(preview_section(preview));
        }
        if let Some(counted) = notice.approvals().iter().find(|a| a.call_id == call.id) {
            blocks.push(approvals_context(counted));
        }
    }
    if calls.len() > MAX_CALLS {
        let more = format!("and {} more", calls.len() - MAX_CALLS);
        blocks.push(json!({"type": "context", "elements": [mrkdwn(more)]}));
    }
    (headline, blocks)
}

/// Who approved a call so far, short of its quorum: "Approved so far by dana: 1 of 2".
fn approvals_context(counted: &NoticeApprovals) -> Value {
    let by = escape(&counted.approved_by.join(", "), REMARK_UNITS);
    let text = format!(
        "Approved so far by {by}: {} of {}",
        counted.approved_by.len(),
        counted.quorum
    );
    json!({"type": "context", "elements": [mrkdwn(text)]})
}

fn body(kind: NotificationKind, notice: &Notice) -> (String, Vec<Value>) {
    body_with(kind, notice, &[])
}

/// A Slack app's message of a waiting batch (`notice` of a `kind` event whose batch is
/// `batch_id`): as [`message`], with each call's preview, and Approve, Reject and Open buttons;
/// the first two carry the batch (`{batch_id}:{task_id}`), which a click decides if it still
/// waits and the person who clicked may.
pub fn app_message(
    kind: NotificationKind,
    notice: &Notice,
    batch_id: i64,
    previews: &[(String, String)],
) -> Value {
    let (headline, mut blocks) = body_with(kind, notice, previews);
    let value = format!("{batch_id}:{}", notice.task_id);
    let button = |action: &str, text: &str, style: Option<&str>| {
        let mut button = json!({
            "type": "button", "action_id": action, "value": value,
            "text": {"type": "plain_text", "text": text},
        });
        if let Some(style) = style {
            button["style"] = json!(style);
        }
        button
    };
    let mut elements = vec![
        button(APPROVE, "Approve", Some("primary")),
        button(REJECT, "Reject…", Some("danger")),
    ];
    let url = notice.url.as_str();
    if url.encode_utf16().count() > URL_UNITS {
        blocks.push(json!({"type": "context", "elements": [mrkdwn(NO_LINK.to_owned())]}));
    } else if !url.is_empty() {
        elements.push(json!({
            "type": "button", "action_id": OPEN,
            "text": {"type": "plain_text", "text": "Open in Signoff"}, "url": url,
        }));
    }
    blocks.push(json!({"type": "actions", "elements": elements}));
    json!({"text": headline.replace('*', ""), "blocks": blocks})
}

/// A copy of a batch that no longer waits (`notice`: what happened to it, a `kind` event): what
/// happened, by whom and how, and the agent and requester; no buttons.
pub fn closed_message(kind: NotificationKind, notice: &Notice) -> Value {
    let (headline, mut blocks) = body(kind, notice);
    // The calls it listed are no longer anyone's to decide: only what happened stays.
    blocks.truncate(2);
    blocks.push(json!({"type": "context", "elements": [mrkdwn(
        "No longer waits: nothing here decides it.".to_owned()
    )]}));
    json!({"text": headline.replace('*', ""), "blocks": blocks})
}

/// A copy of a batch that was handed over or escalated (`notice`): closed, saying to whom and
/// by whom; a new message with buttons follows it.
pub fn handed_over_message(notice: &Notice) -> Value {
    let name = |text: &str| escape(text, NAME_UNITS);
    let agent = name(&notice.agent);
    let (to, by) = match &notice.event {
        NoticeEvent::HandedOver {
            escalated_to,
            handed_over_by,
            ..
        } => (escalated_to.join(", "), Some(handed_over_by.as_str())),
        NoticeEvent::Escalated { escalated_to, .. } => (escalated_to.join(", "), None),
        NoticeEvent::Decided { .. }
        | NoticeEvent::Extended { .. }
        | NoticeEvent::Reminded { .. }
        | NoticeEvent::Pending { .. } => (String::new(), None),
    };
    let to = escape(&to, REMARK_UNITS);
    let headline = match by {
        Some(by) => format!("*{agent}*: handed over to {to} by {}", name(by)),
        None => format!("*{agent}*: escalated to {to}"),
    };
    let blocks = vec![
        json!({"type": "section", "text": mrkdwn(headline.clone())}),
        json!({"type": "context", "elements": [mrkdwn(
            "A new message below asks for the decision.".to_owned()
        )]}),
    ];
    json!({"text": headline.replace('*', ""), "blocks": blocks})
}

/// The Reject modal of batch `value` (`{batch_id}:{task_id}`, as the button carried, back in
/// the submission's `private_metadata`): a reason, optional. A refused submission is answered
/// inside the modal, so it needs nothing more.
pub fn reject_modal(value: &str) -> Value {
    json!({
        "type": "modal",
        "callback_id": REJECT_MODAL,
        "private_metadata": value,
        "title": {"type": "plain_text", "text": "Reject the batch"},
        "submit": {"type": "plain_text", "text": "Reject"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [{
            "type": "input",
            "block_id": REASON,
            "optional": true,
            "label": {"type": "plain_text", "text": "Why (the agent is told)"},
            "element": {
                "type": "plain_text_input", "action_id": REASON,
                "multiline": true, "max_length": MAX_REASON_CHARS,
            },
        }],
    })
}

/// The Approve button's `action_id`.
pub const APPROVE: &str = "signoff_approve";
/// The Reject button's `action_id`: it opens [`reject_modal`].
pub const REJECT: &str = "signoff_reject";
/// The Open button's `action_id` (a link: a click on it decides nothing).
pub const OPEN: &str = "signoff_open";
/// The Reject modal's `callback_id`.
pub const REJECT_MODAL: &str = "signoff_reject_modal";
/// The reason's block and input `action_id` in the modal.
pub const REASON: &str = "reason";
/// The longest reason the modal takes (the server takes 4 KiB).
const MAX_REASON_CHARS: usize = 2000;

/// A call's preview (a diff, or what a write or delete would do) in a code block, cut to fit.
fn preview_section(preview: &str) -> Value {
    let head = "_Preview_\n";
    let room = SECTION_UNITS - head.encode_utf16().count() - 6;
    let text = format!("{head}```{}```", escape(preview, room));
    json!({"type": "section", "text": mrkdwn(text)})
}

/// The message's first line, by what happened (`kind` tells a decision from a cancel and an
/// expiry, which a notice tells alike).
fn headline(kind: NotificationKind, notice: &Notice, agent: &str, requester: &str) -> String {
    let name = |text: &str| escape(text, NAME_UNITS);
    match &notice.event {
        NoticeEvent::Decided {
            decided_by,
            channel,
            summary,
            ..
        } => match kind {
            NotificationKind::Canceled => format!("*{agent}*: the batch was canceled"),
            NotificationKind::Expired => format!("*{agent}*: the batch expired unanswered"),
            NotificationKind::Decided
            | NotificationKind::Pending
            | NotificationKind::Reminded
            | NotificationKind::Escalated
            | NotificationKind::Extended
            | NotificationKind::Counted
            | NotificationKind::Push => format!(
                "*{agent}*: {} by {} ({})",
                escape(summary, REMARK_UNITS),
                name(decided_by),
                name(channel)
            ),
        },
        NoticeEvent::Pending { .. } => {
            format!("*{agent}* waits for a sign-off ({requester} asked)")
        }
        NoticeEvent::Reminded { since, .. } => format!(
            "Reminder: *{agent}* still waits for a sign-off ({requester} asked, since {})",
            name(since)
        ),
        NoticeEvent::Escalated { escalated_to, .. }
        | NoticeEvent::HandedOver { escalated_to, .. } => {
            format!(
                "*{agent}* waits for a sign-off: escalated to {} ({requester} asked)",
                escape(&escalated_to.join(", "), REMARK_UNITS)
            )
        }
        NoticeEvent::Extended {
            extended_by,
            expires_at,
            ..
        } => format!(
            "*{agent}* waits for a sign-off: {} extended its deadline to {} ({requester} asked)",
            name(extended_by),
            name(expires_at.as_deref().unwrap_or_default())
        ),
    }
}

/// One call's section: its tool's name and its arguments as JSON in a code block, cut to fit
/// a section's text.
fn call_section(call: &NoticeCall) -> Value {
    let name = escape(&call.name, NAME_UNITS);
    let head = format!("*{name}*\n");
    // The code block's two fences take six units.
    let room = SECTION_UNITS - head.encode_utf16().count() - 6;
    let args = serde_json::to_string_pretty(&call.args).unwrap_or_default();
    let text = format!("{head}```{}```", escape(&args, room));
    json!({"type": "section", "text": mrkdwn(text)})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: NotificationKind, payload: Value) -> NotificationRow {
        NotificationRow {
            id: "msg_1".into(),
            channel: "team".into(),
            kind,
            task_id: "t1".into(),
            batch_id: Some(7),
            payload,
            attempts: 0,
            created_at: "2026-01-01T00:00:00.000Z".into(),
            last_error: None,
            failed_at: None,
        }
    }

    /// Every mrkdwn text object of `message`.
    fn mrkdwn_texts(value: &Value, into: &mut Vec<Value>) {
        match value {
            Value::Object(map) => {
                if map.get("type") == Some(&json!("mrkdwn")) {
                    into.push(value.clone());
                }
                map.values().for_each(|inner| mrkdwn_texts(inner, into));
            }
            Value::Array(items) => items.iter().for_each(|inner| mrkdwn_texts(inner, into)),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
        }
    }

    fn units(text: &Value) -> usize {
        text.as_str().unwrap().encode_utf16().count()
    }

    #[test]
    fn a_pending_message_names_agent_requester_calls_and_links_to_the_batch() {
        let row = row(
            NotificationKind::Pending,
            json!({
                "task_id": "t1", "context_id": "c1",
                "agent": "default/demo", "requester": "alice<script>",
                "url": "https://s.example/agents/default/demo/chat/c1",
                "calls": [{"id": "c", "name": "write_file", "args": {"path": "a.txt", "token": "[masked]"}}],
                "expires_at": null,
            }),
        );
        let message = message(&row).unwrap();
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

    #[test]
    fn escaping_cuts_between_characters_and_never_inside_an_entity() {
        assert_eq!(escape("<!channel> & co", 100), "&lt;!channel&gt; &amp; co");
        assert_eq!(escape("abc", 3), "abc");
        assert_eq!(escape("abcd", 3), "ab…");
        // `&amp;` does not fit in what is left: cut before it, not inside it.
        assert_eq!(escape("ab&cd", 6), "ab…");
        // An emoji is two UTF-16 units.
        assert_eq!(escape("😀😀😀", 5), "😀😀…");
    }

    #[test]
    fn a_slack_apps_messages_and_modal_stay_within_block_kits_limits() {
        let hostile = format!("<!channel> & <@U1> {}", "é😀".repeat(3000));
        let calls: Vec<Value> = (0..MAX_CALLS + 5)
            .map(
                |index| json!({"id": format!("c{index}"), "name": hostile, "args": {"k": hostile}}),
            )
            .collect();
        let notice: Notice = serde_json::from_value(json!({
            "task_id": "t1", "context_id": "c1", "agent": hostile, "requester": hostile,
            "url": "https://s.example/agents/default/demo/chat/c1",
            "calls": calls, "expires_at": null,
        }))
        .unwrap();
        let previews: Vec<(String, String)> = (0..MAX_CALLS + 5)
            .map(|index| (format!("c{index}"), hostile.clone()))
            .collect();
        let posted = app_message(NotificationKind::Pending, &notice, 42, &previews);
        let decided = Notice {
            event: NoticeEvent::Decided {
                decided_by: hostile.clone(),
                channel: "slack".into(),
                summary: format!("Rejected: {hostile}"),
                verdicts: Vec::new(),
            },
            ..notice.clone()
        };
        let closed = closed_message(NotificationKind::Decided, &decided);
        for message in [&posted, &closed, &handed_over_message(&notice)] {
            let blocks = message["blocks"].as_array().unwrap();
            assert!(blocks.len() <= 50);
            let mut texts = Vec::new();
            mrkdwn_texts(message, &mut texts);
            for text in texts {
                assert!((1..=3000).contains(&units(&text["text"])));
                assert!(!text["text"].as_str().unwrap().contains(['<', '>']));
            }
            assert!(units(&message["text"]) <= 3000);
        }
        let shown = posted.to_string();
        assert!(
            shown.contains("and 5 more") && shown.contains("_Preview_"),
            "{shown}"
        );
        assert!(shown.contains("\"value\":\"42:t1\""), "{shown}");
        let actions = &posted["blocks"].as_array().unwrap().last().unwrap()["elements"];
        let ids: Vec<&str> = actions
            .as_array()
            .unwrap()
            .iter()
            .map(|button| button["action_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, [APPROVE, REJECT, OPEN]);
        assert!(!closed.to_string().contains("button"), "{closed}");
        let modal = reject_modal("42:t1");
        assert!(modal["title"]["text"].as_str().unwrap().chars().count() <= 24);
        assert_eq!(modal["private_metadata"], "42:t1");
    }

    #[test]
    fn hostile_text_of_every_event_stays_within_slacks_limits_and_pings_nobody() {
        let hostile = format!(
            "<!channel> <@U024BE7LH> <https://evil.example|click> &amp; {}",
            "é😀<".repeat(3000)
        );
        let calls: Vec<Value> = (0..MAX_CALLS + 3)
            .map(|index| {
                let args: serde_json::Map<String, Value> = (0..40)
                    .map(|key| {
                        (
                            format!("k{key}<!here>"),
                            json!(hostile.chars().take(200).collect::<String>()),
                        )
                    })
                    .collect();
                json!({"id": format!("c{index}"), "name": hostile, "args": args})
            })
            .collect();
        // Every field a notice of `kind` has, each hostile.
        let payload = |kind: NotificationKind| {
            let mut payload = json!({
                "task_id": "t1", "context_id": "c1", "agent": hostile, "requester": hostile,
                "url": format!("https://s.example/{}", "a".repeat(4000)),
            });
            let event = match kind {
                NotificationKind::Decided
                | NotificationKind::Canceled
                | NotificationKind::Expired => json!({
                    "decided_by": hostile, "channel": hostile,
                    "summary": format!("Rejected: {hostile}"), "verdicts": [],
                }),
                NotificationKind::Extended => json!({
                    "calls": calls, "expires_at": hostile, "extended_by": hostile,
                    "previous_expires_at": hostile, "note": hostile,
                }),
                NotificationKind::Escalated => json!({
                    "calls": calls, "expires_at": hostile, "since": hostile,
                    "escalated_to": [hostile, hostile], "handed_over_by": hostile, "note": hostile,
                }),
                NotificationKind::Reminded => {
                    json!({"calls": calls, "expires_at": hostile, "since": hostile})
                }
                NotificationKind::Counted => json!({
                    "calls": calls, "expires_at": hostile,
                    "approvals": (0..MAX_CALLS + 3).map(|index| json!({
                        "call_id": format!("c{index}"), "approved_by": [hostile, hostile],
                        "quorum": 3,
                    })).collect::<Vec<_>>(),
                }),
                NotificationKind::Pending | NotificationKind::Push => {
                    json!({"calls": calls, "expires_at": hostile})
                }
            };
            for (key, value) in event.as_object().unwrap() {
                payload[key] = value.clone();
            }
            payload
        };
        for kind in NotificationKind::ALL {
            let message = message(&row(kind, payload(kind))).unwrap();
            let blocks = message["blocks"].as_array().unwrap();
            assert!(blocks.len() <= 50, "{kind:?}");
            for block in blocks {
                if let Some(text) = block.get("text") {
                    assert!(
                        units(&text["text"]) <= 3000,
                        "{kind:?}: {}",
                        units(&text["text"])
                    );
                }
                for field in block["fields"].as_array().into_iter().flatten() {
                    assert!(units(&field["text"]) <= 2000, "{kind:?}");
                }
                // The link is too long for a button: said in words instead.
                assert_ne!(block["type"], "actions", "{kind:?}");
            }
            assert!(
                message.to_string().contains("longer than Slack allows"),
                "{kind:?}"
            );
            assert!(units(&message["text"]) <= 3000, "{kind:?}");
            let mut texts = Vec::new();
            mrkdwn_texts(&message, &mut texts);
            texts.push(json!({"text": message["text"], "verbatim": true}));
            for text in texts {
                let shown = text["text"].as_str().unwrap();
                assert!(!shown.contains(['<', '>']), "{kind:?}: {shown}");
                assert_eq!(text["verbatim"], true, "{kind:?}");
                assert!(shown.chars().count() >= 1);
            }
        }
        let extended = message(&row(
            NotificationKind::Extended,
            payload(NotificationKind::Extended),
        ))
        .unwrap()
        .to_string();
        assert!(extended.contains("*Note*"), "{extended}");
        assert!(extended.contains("&amp;amp;"), "{extended}");
        let pending = message(&row(
            NotificationKind::Pending,
            payload(NotificationKind::Pending),
        ))
        .unwrap()
        .to_string();
        assert!(pending.contains("and 3 more"), "{pending}");
    }
}
