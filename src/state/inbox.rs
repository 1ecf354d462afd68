//! The approvals inbox: the batches that wait for the person, folded from the approvals
//! stream's events (docs/rest.md, Approvals stream), with the tab title and the wording of a
//! notification. Pure, so it is tested natively.

use signoff_protocol::hitl::ActionRequest;
use signoff_protocol::rest::{ApprovalDecided, ApprovalEvent, ApprovalRouting, PendingApproval};

use super::routing::asked_text;

/// One event of the approvals stream: its id, what it says, and its `data:` as the server sent
/// it (what this tab hands on to the others: `state::tabs`).
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    pub id: i64,
    pub event: ApprovalEvent,
    pub data: String,
}

impl Sent {
    /// The event `name` with `data`, read; what does not fit is an error saying so.
    pub fn read(id: i64, name: &str, data: String) -> Result<Sent, String> {
        let event = ApprovalEvent::parse(name, &data)?;
        Ok(Sent { id, event, data })
    }
}

/// What the approvals stream has said so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inbox {
    /// The waiting batches, in the order they started waiting.
    waiting: Vec<Waiting>,
    /// The last event id applied: the stream resumes after it.
    pub last_id: Option<i64>,
    /// The last `decided` event (the chat on screen looks whether it is its own batch).
    pub last_decided: Option<ApprovalDecided>,
    /// Who had approved that batch before it was decided (the quorum's earlier votes), so the
    /// chat names everyone who decided it, not only the last.
    pub last_approvers: Vec<String>,
    /// What left the inbox lately, newest first (a few): the Approvals page says what became of
    /// them rather than letting them vanish.
    pub recent: Vec<Recent>,
}

/// A batch that left the inbox, as the Approvals page says it: "write_file r.txt: decided
/// elsewhere by bob".
#[derive(Debug, Clone, PartialEq)]
pub struct Recent {
    pub task_id: String,
    pub asks: String,
    pub agent: String,
    pub outcome: String,
}

/// How many batches that left the inbox the page still names.
const RECENT: usize = 5;

#[derive(Debug, Clone, PartialEq)]
struct Waiting {
    batch: PendingApproval,
    /// The `pending` event that said so, for another tab to adopt.
    said: Sent,
}

/// What applying one event changed.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A batch started waiting (a new one: not a repeat of one already here).
    Added(PendingApproval),
    /// A waiting batch stopped waiting.
    Removed(ApprovalDecided),
    /// Nothing this inbox shows (an event it had seen, or a batch it never had).
    Nothing,
}

impl Inbox {
    /// Applies an event. An id at or below the last one applied changes nothing, so a stream
    /// that repeats itself cannot count a batch twice.
    pub fn apply(&mut self, sent: &Sent) -> Change {
        if self.last_id.is_some_and(|last| sent.id <= last) {
            return Change::Nothing;
        }
        self.last_id = Some(sent.id);
        match &sent.event {
            ApprovalEvent::Pending(pending) => {
                let waiting = Waiting {
                    batch: pending.clone(),
                    said: sent.clone(),
                };
                match self
                    .waiting
                    .iter_mut()
                    .find(|known| known.batch.task_id == pending.task_id)
                {
                    Some(known) => {
                        *known = waiting;
                        Change::Nothing
                    }
                    None => {
                        self.waiting.push(waiting);
                        Change::Added(pending.clone())
                    }
                }
            }
            ApprovalEvent::Decided(decided) => {
                self.last_approvers = self
                    .routing(&decided.task_id)
                    .map(approvers_so_far)
                    .unwrap_or_default();
                if let Some(known) = self
                    .waiting
                    .iter()
                    .find(|known| known.batch.task_id == decided.task_id)
                {
                    let recent = Recent {
                        task_id: decided.task_id.clone(),
                        asks: asks_for(&known.batch),
                        agent: known.batch.agent.clone(),
                        outcome: fate_text(decided, &self.last_approvers),
                    };
                    self.recent.insert(0, recent);
                    self.recent.truncate(RECENT);
                }
                self.last_decided = Some(decided.clone());
                let before = self.waiting.len();
                self.waiting
                    .retain(|known| known.batch.task_id != decided.task_id);
                if self.waiting.len() < before {
                    Change::Removed(decided.clone())
                } else {
                    Change::Nothing
                }
            }
        }
    }

    /// How many batches wait.
    pub fn count(&self) -> usize {
        self.waiting.len()
    }

    /// How many batches wait for `me`: those I decide alone, or of which I may still approve a
    /// call. One I approved, or one only others may approve, waits for them and is not
    /// counted (the badge and the tab title say what is mine to do).
    pub fn count_for(&self, me: Option<&str>) -> usize {
        self.waiting
            .iter()
            .filter(|known| {
                known
                    .batch
                    .routing
                    .as_deref()
                    .is_none_or(|routing| super::routing::may_approve_any(routing, me))
            })
            .count()
    }

    /// The waiting batches, newest first (as the Approvals page lists them).
    pub fn newest_first(&self) -> Vec<PendingApproval> {
        let mut batches: Vec<PendingApproval> = Vec::with_capacity(self.waiting.len());
        for known in &self.waiting {
            batches.push(known.batch.clone());
        }
        batches.sort_by(|a, b| b.since.cmp(&a.since));
        batches
    }

    /// Whether the batch of `task_id` waits.
    pub fn waits(&self, task_id: &str) -> bool {
        self.waiting
            .iter()
            .any(|known| known.batch.task_id == task_id)
    }

    /// The waiting batch of `task_id`, as the stream's last word on it says (a reminder, an
    /// escalation or an extension says it again: docs/rest.md, Deadline ladder).
    pub fn batch(&self, task_id: &str) -> Option<&PendingApproval> {
        self.waiting
            .iter()
            .find(|known| known.batch.task_id == task_id)
            .map(|known| &known.batch)
    }

    /// The routing of the waiting batch of `task_id`, as the stream's last word on it says
    /// (it says the batch again at each approval short of its quorum).
    pub fn routing(&self, task_id: &str) -> Option<&ApprovalRouting> {
        self.waiting
            .iter()
            .find(|known| known.batch.task_id == task_id)?
            .batch
            .routing
            .as_deref()
    }

    /// Who asked for the waiting batch of `task_id` and why the reader is asked, as the
    /// stream's last word on it says: a hand-over to the reader says the batch again with
    /// the new entry ("you are asked as group sre, user dave"). `None` when it is not routed.
    pub fn asked(&self, task_id: &str) -> Option<String> {
        let batch = self.batch(task_id)?;
        Some(asked_text(&batch.agent, batch.routing.as_deref()?))
    }

    /// What waits now, as the events that said so, oldest first, and the last id applied: what
    /// a stream started without `Last-Event-ID` would say, for another tab to adopt.
    pub fn snapshot(&self) -> (Vec<Sent>, Option<i64>) {
        let mut events = Vec::with_capacity(self.waiting.len());
        for known in &self.waiting {
            events.push(known.said.clone());
        }
        (events, self.last_id)
    }

    /// Starts over from another tab's snapshot: its `pending` events, then its last id (later
    /// events apply after it). Anything else in `events` is not part of a snapshot and is left out.
    pub fn adopt(events: &[Sent], last_id: Option<i64>) -> Inbox {
        let mut inbox = Inbox::default();
        for sent in events {
            if let ApprovalEvent::Pending(batch) = &sent.event {
                inbox.waiting.push(Waiting {
                    batch: batch.clone(),
                    said: sent.clone(),
                });
            }
        }
        inbox.last_id = last_id;
        inbox
    }
}

/// The tab's title: `(N) Signoff` while N batches wait.
pub fn tab_title(waiting: usize) -> String {
    match waiting {
        0 => "Signoff".to_owned(),
        count => format!("({count}) Signoff"),
    }
}

/// The names of a batch's tools, in order, each once.
pub fn tool_names(batch: &PendingApproval) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for request in batch.calls.iter().filter_map(ActionRequest::from_value) {
        if !names.contains(&request.name) {
            names.push(request.name);
        }
    }
    names
}

/// A browser notification's title and body for a batch that started waiting.
pub fn notification_text(batch: &PendingApproval) -> (String, String) {
    let title = format!("{} waits for your approval", batch.agent);
    let body = format!("{} · {}", tool_names(batch).join(", "), batch.title);
    (title, body)
}

/// What a batch asks for, as the inbox titles it: each call's tool with what it acts on
/// ("write_file r.txt · delete_file old.txt"), three at most and then how many more; not the
/// chat's first message, which may say nothing of it.
pub fn asks_for(batch: &PendingApproval) -> String {
    const SHOWN: usize = 3;
    let calls: Vec<ActionRequest> = batch
        .calls
        .iter()
        .filter_map(ActionRequest::from_value)
        .collect();
    let mut parts: Vec<String> = Vec::with_capacity(SHOWN + 1);
    for call in calls.iter().take(SHOWN) {
        parts.push(match call_target(&call.args) {
            Some(target) => format!("{} {target}", call.name),
            None => call.name.clone(),
        });
    }
    if calls.len() > SHOWN {
        parts.push(format!("{} more", calls.len() - SHOWN));
    }
    parts.join(" · ")
}

/// What a call acts on, for its title: the first of its `path`, `file`, `command`, `url` or
/// `name` arguments that is text, cut to 40 characters.
fn call_target(args: &serde_json::Value) -> Option<String> {
    const KEYS: [&str; 5] = ["path", "file", "command", "url", "name"];
    let text = KEYS
        .iter()
        .find_map(|key| args.get(key).and_then(serde_json::Value::as_str))?;
    let mut cut: String = text.chars().take(40).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    Some(cut)
}

/// Everyone who approved some call of a routed batch so far, in order, each once.
fn approvers_so_far(routing: &ApprovalRouting) -> Vec<String> {
    let mut people: Vec<String> = Vec::new();
    for who in routing.calls.iter().flat_map(|call| &call.approved_by) {
        if !people.contains(who) {
            people.push(who.clone());
        }
    }
    people
}

/// What the chat says when the batch it shows stopped waiting through someone or something
/// else (another tab, another person, the deadline); `earlier` approved it before the last
/// decider (a quorum's first votes), and is named with them.
pub fn elsewhere_text(decided: &ApprovalDecided, earlier: &[String]) -> String {
    let by = deciders(decided, earlier);
    match decided.outcome.as_str() {
        "expiry" => "This batch expired unanswered.".to_owned(),
        "cancel" => format!("This task was canceled elsewhere{by}."),
        "deleted" => "This chat was deleted elsewhere.".to_owned(),
        _ => format!("Decided elsewhere{by}."),
    }
}

/// What became of a batch that left the inbox, as the Approvals page lists it ("decided by
/// carol and bob"); wherever it was decided, here or elsewhere.
pub fn fate_text(decided: &ApprovalDecided, earlier: &[String]) -> String {
    let by = deciders(decided, earlier);
    match decided.outcome.as_str() {
        "expiry" => "expired unanswered".to_owned(),
        "cancel" => format!("canceled{by}"),
        "deleted" => "its chat was deleted".to_owned(),
        _ => format!("decided{by}"),
    }
}

/// " by carol and bob": everyone who decided, the quorum's earlier approvers first.
fn deciders(decided: &ApprovalDecided, earlier: &[String]) -> String {
    let mut people: Vec<&str> = earlier.iter().map(String::as_str).collect();
    if let Some(last) = decided.decided_by.as_deref() {
        people.retain(|who| *who != last);
        people.push(last);
    }
    match people.as_slice() {
        [] => String::new(),
        [one] => format!(" by {one}"),
        [first @ .., last] => format!(" by {} and {last}", first.join(", ")),
    }
}

/// How long ago `since` was, as the inbox says it ("just now", "5 min ago", "2 h ago",
/// "3 days ago"); `now_ms` and the parsed `since_ms` are milliseconds since the epoch.
pub fn age(since_ms: i64, now_ms: i64) -> String {
    let minutes = (now_ms - since_ms).max(0) / 60_000;
    match minutes {
        0 => "just now".to_owned(),
        1..=59 => format!("{minutes} min ago"),
        60..=1439 => format!("{} h ago", minutes / 60),
        _ => match minutes / 1440 {
            1 => "1 day ago".to_owned(),
            days => format!("{days} days ago"),
        },
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use serde_json::json;

    /// A `pending` event of `task`'s batch of calls to `tools`.
    pub(in crate::state) fn pending(task: &str, since: &str, tools: &[&str]) -> ApprovalEvent {
        let calls: Vec<_> = tools
            .iter()
            .enumerate()
            .map(|(index, name)| json!({"id": format!("call_{index}"), "name": name, "args": {}}))
            .collect();
        ApprovalEvent::Pending(PendingApproval {
            task_id: task.to_owned(),
            context_id: format!("s-{task}"),
            batch_id: 1,
            agent: "default/demo".to_owned(),
            title: "tidy up".to_owned(),
            since: since.to_owned(),
            calls,
            expires_at: None,
            routing: None,
            ladder: None,
        })
    }

    /// `event` as the stream would send it with `id`.
    pub(in crate::state) fn sent(id: i64, event: ApprovalEvent) -> Sent {
        Sent {
            id,
            data: event.data(),
            event,
        }
    }

    /// A `decided` event of `task`'s batch, decided by bob over REST.
    pub(in crate::state) fn decided(task: &str) -> ApprovalEvent {
        ApprovalEvent::Decided(ApprovalDecided {
            task_id: task.to_owned(),
            context_id: format!("s-{task}"),
            outcome: "rest".to_owned(),
            decided_by: Some("bob".to_owned()),
            decided_at: "2026-11-22T19:00:00.000Z".to_owned(),
        })
    }

    #[test]
    fn batches_come_and_go_and_a_repeated_event_counts_once() {
        let mut inbox = Inbox::default();
        assert!(matches!(
            inbox.apply(&sent(
                3,
                pending("t-1", "2026-11-22T18:00:00.000Z", &["write_file"])
            )),
            Change::Added(_)
        ));
        assert!(matches!(
            inbox.apply(&sent(
                5,
                pending("t-2", "2026-11-22T18:05:00.000Z", &["delete_file"])
            )),
            Change::Added(_)
        ));
        assert_eq!(
            inbox.apply(&sent(5, pending("t-3", "2026-11-22T18:06:00.000Z", &["x"]))),
            Change::Nothing
        );
        assert_eq!(inbox.count(), 2);
        let order: Vec<_> = inbox
            .newest_first()
            .into_iter()
            .map(|batch| batch.task_id)
            .collect();
        assert_eq!(order, ["t-2", "t-1"]);
        assert!(matches!(
            inbox.apply(&sent(6, decided("t-1"))),
            Change::Removed(_)
        ));
        assert!(!inbox.waits("t-1"));
        // The page names what left, and what became of it.
        assert_eq!(inbox.recent.len(), 1);
        assert_eq!(inbox.recent[0].asks, "write_file");
        assert!(inbox.recent[0].outcome.starts_with("decided"));
        assert_eq!(inbox.apply(&sent(7, decided("t-9"))), Change::Nothing);
        assert_eq!(inbox.recent.len(), 1);
        assert_eq!(
            inbox.last_decided.as_ref().map(|d| d.task_id.as_str()),
            Some("t-9")
        );
        assert_eq!(inbox.count(), 1);
        assert_eq!(inbox.last_id, Some(7));
    }

    /// `task`'s batch routed to approvers, its one call approved by `approved_by` so far.
    fn routed(task: &str, approved_by: &[&str]) -> ApprovalEvent {
        let ApprovalEvent::Pending(mut batch) = pending(task, "2026-11-22T18:00:00.000Z", &["x"])
        else {
            unreachable!()
        };
        batch.routing = Some(Box::new(ApprovalRouting {
            requested_by: "alice".to_owned(),
            eligible_by: vec!["group:sre".to_owned()],
            calls: vec![signoff_protocol::rest::CallQuorum {
                call_id: "call_0".to_owned(),
                approvers: vec!["group:sre".to_owned()],
                requester_may_approve: false,
                quorum: 2,
                approved_by: approved_by.iter().map(|by| (*by).to_owned()).collect(),
                approved_via: Default::default(),
                escalated_to: Vec::new(),
                voided: Vec::new(),
                args_sha256: None,
                requirement: String::new(),
                may_approve: None,
            }],
        }));
        ApprovalEvent::Pending(batch)
    }

    #[test]
    fn the_inbox_titles_a_batch_with_what_it_asks_for() {
        let ApprovalEvent::Pending(mut batch) = pending(
            "t-1",
            "2026-11-22T18:00:00.000Z",
            &["write_file", "delete_file"],
        ) else {
            unreachable!()
        };
        batch.calls[0]["args"] = serde_json::json!({"path": "r.txt", "content": "v2"});
        batch.calls[1]["args"] = serde_json::json!({"path": "old.txt"});
        assert_eq!(asks_for(&batch), "write_file r.txt · delete_file old.txt");
    }

    #[test]
    fn a_routed_batch_said_again_after_a_vote_keeps_its_place_with_the_new_routing() {
        let mut inbox = Inbox::default();
        assert!(matches!(
            inbox.apply(&sent(1, routed("t-1", &[]))),
            Change::Added(_)
        ));
        let approved = |inbox: &Inbox| {
            inbox
                .routing("t-1")
                .map(|routing| routing.calls[0].approved_by.clone())
        };
        assert_eq!(approved(&inbox), Some(vec![]));
        assert_eq!(
            inbox.apply(&sent(2, routed("t-1", &["bob"]))),
            Change::Nothing
        );
        assert_eq!(approved(&inbox), Some(vec!["bob".to_owned()]));
        assert_eq!(inbox.count(), 1);
        // It waits for the others now, not for bob: his badge stops counting it.
        assert_eq!(inbox.count_for(Some("bob")), 0);
        assert_eq!(inbox.count_for(Some("carol")), 1);
        assert_eq!(inbox.routing("t-2"), None);
        inbox.apply(&sent(3, decided("t-1")));
        assert_eq!(inbox.routing("t-1"), None);
    }

    #[test]
    fn a_batch_handed_over_again_to_the_reader_says_why_they_are_asked_anew() {
        let mut inbox = Inbox::default();
        inbox.apply(&sent(1, routed("t-1", &[])));
        assert_eq!(
            inbox.asked("t-1").as_deref(),
            Some("default/demo asks for alice · you are asked as group sre")
        );
        // Handed over to dave, who is in sre: the same batch, said again with both entries.
        let ApprovalEvent::Pending(mut again) = routed("t-1", &[]) else {
            unreachable!()
        };
        if let Some(routing) = again.routing.as_mut() {
            routing.eligible_by.push("user:dave".to_owned());
        }
        assert_eq!(
            inbox.apply(&sent(2, ApprovalEvent::Pending(again))),
            Change::Nothing
        );
        assert_eq!(
            inbox.asked("t-1").as_deref(),
            Some("default/demo asks for alice · you are asked as group sre, user dave")
        );
        assert_eq!(inbox.count(), 1);
        assert_eq!(inbox.asked("t-2"), None);
        inbox.apply(&sent(3, pending("t-3", "2026-11-22T18:10:00.000Z", &["x"])));
        assert_eq!(inbox.asked("t-3"), None);
    }

    #[test]
    fn a_batch_said_again_by_the_ladder_carries_its_marks_and_new_deadline() {
        let mut inbox = Inbox::default();
        inbox.apply(&sent(1, pending("t-1", "2026-11-22T18:00:00.000Z", &["x"])));
        assert_eq!(inbox.batch("t-1").and_then(|b| b.ladder.clone()), None);
        let ApprovalEvent::Pending(mut again) = pending("t-1", "2026-11-22T18:00:00.000Z", &["x"])
        else {
            unreachable!()
        };
        again.expires_at = Some("2026-11-22T19:15:00.000Z".to_owned());
        again.ladder = Some(Box::new(signoff_protocol::rest::LadderMarks {
            reminded_at: Some("2026-11-22T18:15:00.000Z".to_owned()),
            escalated_to: vec!["group:sre".to_owned()],
            max_extend: None,
            first_expires_at: None,
        }));
        assert_eq!(
            inbox.apply(&sent(2, ApprovalEvent::Pending(again))),
            Change::Nothing
        );
        let batch = inbox.batch("t-1").unwrap();
        assert_eq!(
            batch.expires_at.as_deref(),
            Some("2026-11-22T19:15:00.000Z")
        );
        assert_eq!(
            batch
                .ladder
                .as_ref()
                .map(|marks| marks.escalated_to.clone()),
            Some(vec!["group:sre".to_owned()])
        );
        assert!(inbox.batch("t-2").is_none());
    }

    #[test]
    fn the_title_counts_and_a_notification_names_the_agent_and_tools() {
        assert_eq!(tab_title(0), "Signoff");
        assert_eq!(tab_title(3), "(3) Signoff");
        let ApprovalEvent::Pending(batch) = pending(
            "t-1",
            "2026-11-22T18:00:00.000Z",
            &["write_file", "delete_file", "write_file"],
        ) else {
            unreachable!()
        };
        assert_eq!(
            notification_text(&batch),
            (
                "default/demo waits for your approval".to_owned(),
                "write_file, delete_file · tidy up".to_owned()
            )
        );
    }

    #[test]
    fn a_decision_from_elsewhere_says_who_or_what() {
        let ApprovalEvent::Decided(mut decided) = decided("t-1") else {
            unreachable!()
        };
        assert_eq!(elsewhere_text(&decided, &[]), "Decided elsewhere by bob.");
        let earlier = ["carol".to_owned(), "bob".to_owned()];
        assert_eq!(
            elsewhere_text(&decided, &earlier),
            "Decided elsewhere by carol and bob."
        );
        decided.outcome = "expiry".to_owned();
        assert_eq!(
            elsewhere_text(&decided, &[]),
            "This batch expired unanswered."
        );
        decided.outcome = "cancel".to_owned();
        assert_eq!(
            elsewhere_text(&decided, &[]),
            "This task was canceled elsewhere by bob."
        );
    }

    #[test]
    fn ages_read_as_a_person_says_them() {
        let minute = 60_000;
        assert_eq!(age(0, 30_000), "just now");
        assert_eq!(age(0, 5 * minute), "5 min ago");
        assert_eq!(age(0, 125 * minute), "2 h ago");
        assert_eq!(age(0, 1500 * minute), "1 day ago");
        assert_eq!(age(0, 3 * 1440 * minute), "3 days ago");
        assert_eq!(age(10 * minute, 0), "just now");
    }
}
