//! The email channel: a notification as a message with a text and an HTML part saying the same
//! (the agent, the requester, the calls with their arguments shortened and masked, links),
//! built and sent over SMTP with `lettre` (STARTTLS, TLS, or plain for a relay on the same
//! host; a user and a password from a file or the environment, never logged). A message to a
//! person who may decide a waiting batch carries their own Approve and Reject links
//! (`runtime::links`), made when the message is sent, so no token sits in the outbox.

use std::collections::BTreeMap;
use std::time::Duration;

use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use super::payload::{Notice, NoticeEvent};
use super::{Audience, Member, Recipient};

/// How the SMTP connection is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmtpTls {
    /// Plain, then `STARTTLS`, required (port 587 by default).
    Starttls,
    /// TLS from the first byte (port 465 by default).
    Tls,
    /// No TLS at all: only for a relay on the same host or network (port 25 by default).
    None,
}

impl SmtpTls {
    pub fn parse(text: &str) -> Result<SmtpTls, String> {
        match text {
            "starttls" => Ok(SmtpTls::Starttls),
            "tls" => Ok(SmtpTls::Tls),
            "none" => Ok(SmtpTls::None),
            other => Err(format!(
                "{other:?} is not a TLS mode (starttls, tls or none)"
            )),
        }
    }

    fn default_port(self) -> u16 {
        match self {
            SmtpTls::Starttls => 587,
            SmtpTls::Tls => 465,
            SmtpTls::None => 25,
        }
    }
}

/// Where and how to send.
pub struct SmtpSettings {
    pub host: String,
    pub port: Option<u16>,
    pub tls: SmtpTls,
    /// A user and a password (read from a file or the environment).
    pub credentials: Option<(String, String)>,
    pub timeout: Duration,
}

/// An email channel: the SMTP transport, the sender, and who gets its messages.
pub struct EmailChannel {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    /// Fixed addresses: they hear of every batch the channel takes, without decision links
    /// (an address is nobody who may decide).
    pub to: Vec<Mailbox>,
    /// Whether the requester gets the message, with their decision links.
    pub to_requester: bool,
    /// Whether the approvers named by user who may decide a batch get the message (no links),
    /// at an address the channel's `people` or the directory knows for them.
    pub to_approvers: bool,
    /// People's addresses by user id, for people whose sign-in brings none.
    pub people: BTreeMap<String, Mailbox>,
}

/// Who gets an email channel's messages (its `[email]` table, checked).
pub struct Recipients {
    pub to: Vec<Mailbox>,
    pub to_requester: bool,
    pub to_approvers: bool,
    pub people: BTreeMap<String, Mailbox>,
}

impl std::fmt::Debug for EmailChannel {
    // The transport holds the password: never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmailChannel")
            .field("from", &self.from.to_string())
            .field("to", &self.to.len())
            .field("to_requester", &self.to_requester)
            .field("to_approvers", &self.to_approvers)
            .finish_non_exhaustive()
    }
}

/// An address as a mailbox (`Name <a@b>` or `a@b`).
pub fn mailbox(text: &str) -> Result<Mailbox, String> {
    text.trim()
        .parse::<Mailbox>()
        .map_err(|err| format!("{text:?} is not an email address: {err}"))
}

impl EmailChannel {
    pub fn new(
        smtp: SmtpSettings,
        from: Mailbox,
        recipients: Recipients,
    ) -> Result<EmailChannel, String> {
        let builder = match smtp.tls {
            SmtpTls::Starttls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&smtp.host),
            SmtpTls::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(&smtp.host),
            SmtpTls::None => Ok(AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(
                &smtp.host,
            )),
        }
        .map_err(|err| format!("SMTP host {:?}: {err}", smtp.host))?;
        let mut builder = builder
            .port(smtp.port.unwrap_or(smtp.tls.default_port()))
            .timeout(Some(smtp.timeout));
        if let Some((user, password)) = smtp.credentials {
            builder = builder.credentials(Credentials::new(user, password));
        }
        Ok(EmailChannel {
            transport: builder.build(),
            from,
            to: recipients.to,
            to_requester: recipients.to_requester,
            to_approvers: recipients.to_approvers,
            people: recipients.people,
        })
    }

    /// Who gets the message of a batch of `requester`'s that `audience` may decide: the
    /// requester, the fixed addresses, the approvers named by user, the members of its approver
    /// groups; each once, in that order, and one message per address (see [`Self::add_member`]).
    pub fn recipients(&self, requester: &str, audience: &Audience) -> Vec<Recipient> {
        let mut all = Vec::new();
        if self.to_requester && !requester.is_empty() {
            all.push(Recipient::Requester(requester.to_owned()));
        }
        for to in &self.to {
            let address = Recipient::Address(to.to_string());
            if !all.contains(&address) {
                all.push(address);
            }
        }
        if self.to_approvers {
            for user in &audience.users {
                let approver = Recipient::Approver(user.clone());
                if user != requester && !all.contains(&approver) {
                    all.push(approver);
                }
            }
            for member in &audience.members {
                if member.id != requester {
                    self.add_member(&mut all, member);
                }
            }
        }
        all
    }

    /// Adds a group member to `all` at their address (the channel's `people` entry, else the
    /// directory's), unless someone already listed is them or has that address: a requester or
    /// another member keeps theirs; an approver named by user or a fixed address gives way to
    /// the member, whose message carries links.
    fn add_member(&self, all: &mut Vec<Recipient>, member: &Member) {
        let address = match self.people.get(&member.id) {
            Some(address) => address.clone(),
            None => match mailbox(&member.email) {
                Ok(address) => address,
                Err(_) => return,
            },
        };
        let key = address.email.to_string().to_ascii_lowercase();
        let same = |recipient: &Recipient| {
            let named = match recipient {
                Recipient::Requester(user) | Recipient::Approver(user) => *user == member.id,
                Recipient::Address(_) | Recipient::Member(_) => false,
            };
            named || self.known_address(recipient).as_deref() == Some(key.as_str())
        };
        let listed = Recipient::Member(Member {
            id: member.id.clone(),
            email: address.to_string(),
        });
        match all.iter().position(same) {
            None => all.push(listed),
            Some(at) => {
                if matches!(all[at], Recipient::Approver(_) | Recipient::Address(_)) {
                    all[at] = listed;
                }
            }
        }
    }

    /// The address a recipient's message goes to, lowercased, when it is known without the
    /// store (a requester's or an approver's latest sign-in is read only when it is sent).
    fn known_address(&self, recipient: &Recipient) -> Option<String> {
        let address = match recipient {
            Recipient::Requester(user) => self.people.get(user).cloned(),
            Recipient::Address(address) => mailbox(address).ok(),
            Recipient::Approver(user) => self.people.get(user).cloned(),
            Recipient::Member(member) => mailbox(&member.email).ok(),
        }?;
        Some(address.email.to_string().to_ascii_lowercase())
    }

    /// Sends one message; why not, when it was not accepted (never the credentials).
    pub async fn send(&self, message: Message) -> Result<(), String> {
        self.transport
            .send(message)
            .await
            .map(|_| ())
            .map_err(|err| format!("SMTP: {err}"))
    }

    /// The message of a notification to `to`, with `links` when it is theirs to decide.
    pub fn message(
        &self,
        notice: &Notice,
        to: Mailbox,
        links: Option<&DecisionLinks>,
    ) -> Result<Message, String> {
        let mail = render(notice, links);
        Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(mail.subject)
            .multipart(MultiPart::alternative_plain_html(mail.text, mail.html))
            .map_err(|err| format!("building the message: {err}"))
    }
}

/// A person's decision links, as URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionLinks {
    /// `None`: the person may only reject (a requester under a two-person rule).
    pub approve: Option<String>,
    pub reject: String,
    /// RFC 3339.
    pub expires_at: String,
}

/// A message's subject and its two bodies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub subject: String,
    pub text: String,
    pub html: String,
}

/// HTML-safe text.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// A message's subject and first line, by what happened.
fn headline(notice: &Notice) -> (String, String) {
    let (agent, requester) = (&notice.agent, &notice.requester);
    let calls = notice.calls().len();
    match &notice.event {
        NoticeEvent::Pending { .. } => (
            format!("{agent} waits for your sign-off ({calls} calls)"),
            format!("The agent {agent} asks, for {requester}, to run:"),
        ),
        NoticeEvent::Reminded { since, .. } => (
            format!("Reminder: {agent} still waits for your sign-off ({calls} calls)"),
            format!("The agent {agent} still asks, for {requester} since {since}, to run:"),
        ),
        NoticeEvent::Escalated { escalated_to, .. } => {
            let to = escalated_to.join(", ");
            (
                format!("{agent}'s sign-off escalated to {to}"),
                format!(
                    "Nobody decided in time: {to} may now decide what the agent {agent} asks, \
                     for {requester}, to run:"
                ),
            )
        }
        NoticeEvent::HandedOver {
            escalated_to,
            handed_over_by: by,
            ..
        } => {
            let to = escalated_to.join(", ");
            (
                format!("{agent}'s sign-off handed to {to} by {by}"),
                format!(
                    "{by} asks {to} to decide what the agent {agent} asks, for {requester}, to \
                     run:"
                ),
            )
        }
        NoticeEvent::Extended {
            extended_by: by,
            expires_at,
            ..
        } => {
            let until = expires_at.as_deref().unwrap_or_default();
            (
                format!("{agent}'s sign-off deadline extended to {until} by {by}"),
                format!(
                    "{by} gave more time, until {until}, to decide what the agent {agent} asks, \
                     for {requester}, to run:"
                ),
            )
        }
        NoticeEvent::Decided {
            decided_by: by,
            channel: how,
            summary,
            ..
        } => (
            format!("{agent}: {summary}"),
            format!("{summary}: the calls {agent} asked for, for {requester}, by {by} ({how})."),
        ),
    }
}

/// Subject, text and HTML of a notification: the same content in both parts.
pub fn render(notice: &Notice, links: Option<&DecisionLinks>) -> Rendered {
    let url = &notice.url;
    let calls: Vec<(&str, String)> = notice
        .calls()
        .iter()
        .map(|call| (call.name.as_str(), call.args.to_string()))
        .collect();
    let (subject, headline) = headline(notice);
    let mut text = format!("{headline}\n\n");
    let mut html = format!("<p style=\"{PARAGRAPH}\">{}</p>", escape(&headline));
    if !calls.is_empty() {
        html.push_str(&format!("<ul style=\"{LIST}\">"));
        for (name, args) in &calls {
            text.push_str(&format!("- {name} {args}\n"));
            html.push_str(&format!(
                "<li style=\"{ITEM}\"><b>{}</b><br><code style=\"{CODE}\">{}</code></li>",
                escape(name),
                escape(args)
            ));
        }
        html.push_str("</ul>");
        text.push('\n');
    }
    if let Some(links) = links {
        let until = readable_time(&links.expires_at);
        let approve_text = links
            .approve
            .as_ref()
            .map_or_else(String::new, |approve| format!("Approve: {approve}\n"));
        text.push_str(&format!(
            "{approve_text}Reject: {}\n\nEach link opens a page that asks you to confirm; it \
             works once, until {until}. Do not forward this message: its links decide as \
             you.\n\n",
            links.reject
        ));
        // Buttons far enough apart, and tall enough, that a thumb does not take the wrong one.
        let approve_button = links.approve.as_ref().map_or_else(String::new, |approve| {
            format!(
                "<a href=\"{}\" style=\"{BUTTON}{APPROVE}\">Approve</a>",
                escape(approve)
            )
        });
        html.push_str(&format!(
            "<p style=\"{PARAGRAPH}\">{approve_button}\
             <a href=\"{}\" style=\"{BUTTON}{REJECT}\">Reject</a></p>\
             <p style=\"{NOTE}\">Each link opens a page that asks you to confirm; it works once, \
             until {}. Do not forward this message: its links decide as you.</p>",
            escape(&links.reject),
            escape(&until)
        ));
    }
    text.push_str(&format!("Open in Signoff: {url}\n"));
    html.push_str(&format!(
        "<p style=\"{PARAGRAPH}\"><a href=\"{}\" style=\"color:#1d4ed8\">Open in Signoff</a></p>",
        escape(url)
    ));
    Rendered {
        subject: subject.clone(),
        text,
        html: format!(
            "<!doctype html><html><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{}</title></head><body style=\"{BODY}\"><div style=\"{COLUMN}\">{html}</div>\
             </body></html>",
            escape(&subject)
        ),
    }
}

// Inline styles: many mail clients drop a <style> element, none drops these.
const BODY: &str = "margin:0;padding:16px;background:#ffffff;color:#1f2937;\
    font-family:-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;font-size:16px;\
    line-height:1.5";
const COLUMN: &str = "max-width:600px;margin:0 auto";
const PARAGRAPH: &str = "margin:0 0 16px";
const LIST: &str = "margin:0 0 20px;padding:0;list-style:none";
const ITEM: &str = "margin:0 0 10px;padding:10px 12px;border:1px solid #e5e7eb;border-radius:6px;\
    background:#f9fafb";
const CODE: &str = "font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px;\
    color:#374151;word-break:break-all";
const BUTTON: &str = "display:inline-block;min-width:96px;padding:12px 20px;margin:0 16px 8px 0;\
    border-radius:6px;font-weight:600;text-align:center;text-decoration:none;";
const APPROVE: &str = "background:#15803d;color:#ffffff;border:1px solid #15803d";
const REJECT: &str = "background:#ffffff;color:#b91c1c;border:1px solid #b91c1c";
const NOTE: &str = "margin:0 0 16px;font-size:14px;color:#4b5563";

/// An RFC 3339 time as people read it (`2026-11-27 10:00 UTC`); as given if it does not parse.
fn readable_time(at: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(at).map_or_else(
        |_| at.to_owned(),
        |at| {
            at.with_timezone(&chrono::Utc)
                .format("%Y-%m-%d %H:%M UTC")
                .to_string()
        },
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    fn notice(data: Value) -> Notice {
        serde_json::from_value(data).unwrap()
    }

    fn pending() -> Value {
        json!({
            "task_id": "t1", "context_id": "c1", "agent": "default/demo", "requester": "alice",
            "url": "https://s.example/agents/default/demo/chat/c1",
            "calls": [{"id": "call_1", "name": "write_file",
                       "args": {"path": "<notes>.txt", "content": "[masked]"}}],
            "expires_at": null, "batch_id": 4,
        })
    }

    #[test]
    fn both_parts_say_the_same_and_the_html_is_escaped() {
        let links = DecisionLinks {
            approve: Some("https://s.example/decide/A".into()),
            reject: "https://s.example/decide/R".into(),
            expires_at: "2026-11-27T10:00:00.000Z".into(),
        };
        let mail = render(&notice(pending()), Some(&links));
        assert_eq!(
            mail.subject,
            "default/demo waits for your sign-off (1 calls)"
        );
        for part in [&mail.text, &mail.html] {
            for needle in [
                "default/demo",
                "alice",
                "write_file",
                "https://s.example/decide/A",
                "https://s.example/decide/R",
                "https://s.example/agents/default/demo/chat/c1",
                "until 2026-11-27 10:00 UTC.",
            ] {
                assert!(part.contains(needle), "{needle} in {part}");
            }
        }
        // Sized for a phone, the two links apart as buttons.
        assert!(mail.html.contains("name=\"viewport\""));
        assert!(mail.html.contains(">Approve</a><a "));
        assert!(mail.text.contains("<notes>.txt"));
        assert!(mail.html.contains("&lt;notes&gt;.txt"));
        assert!(!mail.html.contains("<notes>"));
    }

    #[test]
    fn a_person_who_may_only_reject_gets_no_approve_link() {
        let links = DecisionLinks {
            approve: None,
            reject: "https://s.example/decide/R".into(),
            expires_at: "2026-11-27T10:00:00.000Z".into(),
        };
        let mail = render(&notice(pending()), Some(&links));
        for part in [&mail.text, &mail.html] {
            assert!(part.contains("https://s.example/decide/R"), "{part}");
            assert!(!part.contains("Approve"), "{part}");
        }
    }

    #[test]
    fn without_links_a_message_only_informs() {
        let mail = render(&notice(pending()), None);
        assert!(!mail.text.contains("/decide/"));
        assert!(mail.text.contains("Open in Signoff"));
        let decided = json!({"task_id": "t1", "context_id": "c1", "agent": "default/demo",
                             "requester": "alice", "url": "u", "decided_by": "bob",
                             "channel": "link", "summary": "Approved", "verdicts": []});
        let mail = render(&notice(decided), None);
        assert_eq!(mail.subject, "default/demo: Approved");
        assert!(mail.text.contains("by bob (link)"));
    }

    #[test]
    fn a_hand_over_says_who_handed_the_batch_to_whom_and_an_escalation_why() {
        let mut data = pending();
        data["since"] = json!("2026-11-27T09:00:00.000Z");
        data["escalated_to"] = json!(["group:sre"]);
        let escalated = render(&notice(data.clone()), None);
        assert_eq!(
            escalated.subject,
            "default/demo's sign-off escalated to group:sre"
        );
        assert!(escalated
            .text
            .starts_with("Nobody decided in time: group:sre"));
        data["handed_over_by"] = json!("bob");
        let handed = render(&notice(data.clone()), None);
        assert_eq!(
            handed.subject,
            "default/demo's sign-off handed to group:sre by bob"
        );
        assert!(
            handed.text.starts_with("bob asks group:sre to decide"),
            "{}",
            handed.text
        );
    }

    #[test]
    fn tls_modes_and_addresses_are_checked() {
        assert_eq!(SmtpTls::parse("starttls").unwrap(), SmtpTls::Starttls);
        assert!(SmtpTls::parse("ssl").is_err());
        assert!(mailbox("Signoff <signoff@example.com>").is_ok());
        assert!(mailbox("not an address").is_err());
    }
}
