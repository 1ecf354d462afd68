//! What the tabs of one browser tell each other so that only one of them keeps the approvals
//! stream open. A browser gives a server six connections; with a stream in every tab, the
//! seventh tab could not even load. The tab that leads follows the stream and passes each event
//! on; a tab that opens says hello, adopts the leader's answer (what waits now and the last id)
//! and applies the events that came meanwhile after it. `components::inbox::tabs` carries the
//! messages. Pure, so it is tested natively.

use serde_json::{json, Value};

use super::inbox::{Change, Inbox, Sent};

/// One message between the tabs.
#[derive(Debug, Clone, PartialEq)]
pub enum TabMessage {
    /// A tab opened (or came back) and has no inbox yet: the leader answers with `State`.
    Hello,
    /// The leader's inbox: the batches waiting now, each as the event that said so, and the last
    /// event id applied.
    State {
        pending: Vec<Sent>,
        last_id: Option<i64>,
    },
    /// One event of the stream, as the leader applied it.
    Event(Sent),
}

impl TabMessage {
    /// The message as the channel carries it: JSON, with each event as the stream sent it.
    pub fn encode(&self) -> String {
        let message = match self {
            TabMessage::Hello => json!({"hello": true}),
            TabMessage::State { pending, last_id } => {
                let mut events = Vec::with_capacity(pending.len());
                for sent in pending {
                    events.push(encode_sent(sent));
                }
                json!({"state": events, "lastId": last_id})
            }
            TabMessage::Event(sent) => json!({"event": encode_sent(sent)}),
        };
        message.to_string()
    }

    /// A message read back; anything else (another build's message, say) is an error saying so.
    pub fn decode(text: &str) -> Result<TabMessage, String> {
        let unfit = || format!("a message from another tab that does not fit: {text:.200}");
        let message: Value = serde_json::from_str(text).map_err(|_| unfit())?;
        if message.get("hello").is_some() {
            return Ok(TabMessage::Hello);
        }
        if let Some(event) = message.get("event") {
            return decode_sent(event).ok_or_else(unfit)?.map(TabMessage::Event);
        }
        let events = message
            .get("state")
            .and_then(Value::as_array)
            .ok_or_else(unfit)?;
        let last_id = match message.get("lastId") {
            None | Some(Value::Null) => None,
            Some(id) => Some(id.as_i64().ok_or_else(unfit)?),
        };
        let mut pending = Vec::with_capacity(events.len());
        for event in events {
            pending.push(decode_sent(event).ok_or_else(unfit)??);
        }
        Ok(TabMessage::State { pending, last_id })
    }
}

fn encode_sent(sent: &Sent) -> Value {
    json!({"id": sent.id, "name": sent.event.name(), "data": sent.data})
}

/// An event on the channel: `None` if it is not shaped as one, an error if the event it names
/// does not read.
fn decode_sent(value: &Value) -> Option<Result<Sent, String>> {
    let id = value.get("id")?.as_i64()?;
    let name = value.get("name")?.as_str()?;
    let data = value.get("data")?.as_str()?;
    Some(Sent::read(id, name, data.to_owned()))
}

/// A tab that follows another tab's stream: until the leader's `State` comes, the events that
/// arrive are kept, and applied after it.
#[derive(Debug, Default)]
pub struct Follower {
    adopted: bool,
    early: Vec<Sent>,
}

impl Follower {
    /// Whether this tab has adopted a leader's inbox.
    pub fn adopted(&self) -> bool {
        self.adopted
    }

    /// Forgets the adopted inbox: the tab joins again (it was frozen, or kept for Back).
    pub fn reset(&mut self) {
        self.adopted = false;
        self.early.clear();
    }

    /// Applies a message from the leader to `inbox`: what changed, for the tab to act on (a
    /// batch that starts waiting may be news). `Hello` is the leader's to answer.
    pub fn receive(&mut self, inbox: &mut Inbox, message: TabMessage) -> Vec<Change> {
        match message {
            TabMessage::Hello => Vec::new(),
            // One snapshot is enough: later ones (answers to other tabs) say nothing new.
            TabMessage::State { .. } if self.adopted => Vec::new(),
            TabMessage::State { pending, last_id } => {
                *inbox = Inbox::adopt(&pending, last_id);
                self.adopted = true;
                let mut changes = Vec::new();
                for sent in std::mem::take(&mut self.early) {
                    changes.push(inbox.apply(&sent));
                }
                changes
            }
            TabMessage::Event(sent) if self.adopted => vec![inbox.apply(&sent)],
            TabMessage::Event(sent) => {
                self.early.push(sent);
                Vec::new()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::inbox::tests::{decided, sent};
    use signoff_protocol::rest::ApprovalEvent;

    /// A batch with a title and arguments that must pass between tabs as they are.
    fn pending(task: &str) -> ApprovalEvent {
        let mut event =
            crate::state::inbox::tests::pending(task, "2026-11-22T18:00:00.000Z", &["write_file"]);
        if let ApprovalEvent::Pending(batch) = &mut event {
            batch.title = "tidy \u{202e}up \"now\" <b>".to_owned();
            batch.calls[0]["args"]["path"] = "../<a>\u{0}".into();
        }
        event
    }

    fn waiting(inbox: &Inbox) -> Vec<String> {
        let mut tasks: Vec<String> = inbox
            .newest_first()
            .into_iter()
            .map(|batch| batch.task_id)
            .collect();
        tasks.sort();
        tasks
    }

    #[test]
    fn every_message_reads_back_as_it_was_written() {
        let messages = [
            TabMessage::Hello,
            TabMessage::State {
                pending: vec![sent(3, pending("t-1")), sent(8, pending("t-2"))],
                last_id: Some(9),
            },
            TabMessage::State {
                pending: Vec::new(),
                last_id: None,
            },
            TabMessage::Event(sent(10, decided("t-1"))),
            TabMessage::Event(sent(11, pending("t-3"))),
        ];
        for message in messages {
            assert_eq!(TabMessage::decode(&message.encode()), Ok(message));
        }
    }

    #[test]
    fn a_message_that_does_not_fit_is_an_error_not_an_empty_inbox() {
        for text in [
            "",
            "null",
            r#""hello""#,
            r#"{"event":{"id":1,"name":"opened","data":"{}"}}"#,
            r#"{"event":{"id":1,"name":"pending","data":"{\"taskId\":1}"}}"#,
            r#"{"event":{"id":"1","name":"decided","data":"{}"}}"#,
            r#"{"state":[{"id":"x"}],"lastId":1}"#,
            r#"{"state":[],"lastId":"7"}"#,
            r#"{"goodbye":true}"#,
        ] {
            assert!(TabMessage::decode(text).is_err(), "{text}");
        }
    }

    #[test]
    fn a_leaders_snapshot_gives_a_new_tab_the_same_inbox() {
        let mut leader = Inbox::default();
        leader.apply(&sent(3, pending("t-1")));
        leader.apply(&sent(5, pending("t-2")));
        leader.apply(&sent(6, decided("t-1")));
        leader.apply(&sent(8, pending("t-3")));
        let (pending, last_id) = leader.snapshot();
        let message = TabMessage::decode(&TabMessage::State { pending, last_id }.encode()).unwrap();

        let mut inbox = Inbox::default();
        let mut follower = Follower::default();
        assert!(follower.receive(&mut inbox, message).is_empty());
        assert!(follower.adopted());
        assert_eq!(waiting(&inbox), ["t-2", "t-3"]);
        assert_eq!(inbox.last_id, Some(8));
        // It could now lead: its stream would resume where the leader's was.
        assert_eq!(inbox.snapshot(), leader.snapshot());
    }

    #[test]
    fn events_that_come_before_the_snapshot_apply_after_it_once() {
        let mut inbox = Inbox::default();
        let mut follower = Follower::default();
        // The leader passed these on before it answered this tab's hello: 7 is in its
        // snapshot already, 9 came after it.
        assert!(follower
            .receive(&mut inbox, TabMessage::Event(sent(7, pending("t-2"))))
            .is_empty());
        assert!(follower
            .receive(&mut inbox, TabMessage::Event(sent(9, decided("t-1"))))
            .is_empty());
        assert_eq!(inbox.count(), 0);
        let changes = follower.receive(
            &mut inbox,
            TabMessage::State {
                pending: vec![sent(3, pending("t-1")), sent(7, pending("t-2"))],
                last_id: Some(7),
            },
        );
        assert_eq!(changes.len(), 2);
        assert_eq!(changes[0], Change::Nothing);
        assert!(matches!(&changes[1], Change::Removed(decided) if decided.task_id == "t-1"));
        assert_eq!(waiting(&inbox), ["t-2"]);
        assert_eq!(inbox.last_id, Some(9));

        // A later snapshot (another tab's hello) changes nothing; later events apply.
        let again = TabMessage::State {
            pending: Vec::new(),
            last_id: Some(9),
        };
        assert!(follower.receive(&mut inbox, again).is_empty());
        assert_eq!(waiting(&inbox), ["t-2"]);
        let changes = follower.receive(&mut inbox, TabMessage::Event(sent(12, pending("t-4"))));
        assert!(matches!(&changes[..], [Change::Added(batch)] if batch.task_id == "t-4"));
        assert_eq!(waiting(&inbox), ["t-2", "t-4"]);

        follower.reset();
        assert!(!follower.adopted());
        assert!(follower
            .receive(&mut inbox, TabMessage::Event(sent(13, decided("t-2"))))
            .is_empty());
    }
}
