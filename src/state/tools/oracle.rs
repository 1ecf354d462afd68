//! The three passes over the whole log, as they were written first: the reference the
//! incremental derivation in `tools.rs` must agree with after every event (checked in tests).

use std::collections::BTreeMap;

use serde_json::Value;
use signoff_protocol::hitl::{self, ApprovalInterrupt, Verdict, SIGNOFF_WHY};
use signoff_protocol::TaskState;

use super::super::view::{ToolCallView, ToolStatus};
use super::{apply_ran, new_card, LogEntry};

impl LogEntry {
    fn task(&self) -> &str {
        match self {
            LogEntry::Request { task, .. }
            | LogEntry::Interrupt { task, .. }
            | LogEntry::Decision { task, .. }
            | LogEntry::Result { task, .. }
            | LogEntry::Progress { task }
            | LogEntry::End { task, .. } => task,
        }
    }
}

struct Cards {
    cards: Vec<ToolCallView>,
    index: BTreeMap<String, usize>,
}

impl Cards {
    fn get_or_insert(
        &mut self,
        slot: &str,
        make: impl FnOnce() -> ToolCallView,
    ) -> &mut ToolCallView {
        let position = match self.index.get(slot) {
            Some(position) => *position,
            None => {
                self.cards.push(make());
                self.index.insert(slot.to_owned(), self.cards.len() - 1);
                self.cards.len() - 1
            }
        };
        &mut self.cards[position]
    }

    fn get_mut(&mut self, slot: &str) -> Option<&mut ToolCallView> {
        let position = *self.index.get(slot)?;
        self.cards.get_mut(position)
    }
}

/// The latest interrupt of `task` before position `before`, with its slots.
fn interrupt_before<'a>(
    log: &'a [LogEntry],
    task: &str,
    before: usize,
) -> Option<(&'a ApprovalInterrupt, &'a [String])> {
    log[..before].iter().rev().find_map(|entry| match entry {
        LogEntry::Interrupt {
            task: entry_task,
            interrupt,
            slots,
            ..
        } if entry_task == task => Some((interrupt, slots.as_slice())),
        LogEntry::Interrupt { .. }
        | LogEntry::Request { .. }
        | LogEntry::Decision { .. }
        | LogEntry::Result { .. }
        | LogEntry::Progress { .. }
        | LogEntry::End { .. } => None,
    })
}

/// Pass 1: requests set requested / pending approval, and decisions set approved / rejected.
fn pass_requests(log: &[LogEntry], cards: &mut Cards) {
    for (position, entry) in log.iter().enumerate() {
        match entry {
            LogEntry::Request {
                slot,
                task,
                item,
                call,
                decided_by,
                via,
                why,
                ran,
            } => {
                let card = cards.get_or_insert(slot, || {
                    new_card(slot, task, item, &call.id, &call.name, &call.args)
                });
                if decided_by.is_some() {
                    card.decided_by = decided_by.clone();
                }
                if why.is_some() {
                    card.why = why.clone();
                }
                card.via = card.via.take().or_else(|| via.clone());
                if let Some(ran) = ran {
                    apply_ran(card, call, ran);
                }
            }
            LogEntry::Interrupt {
                task,
                item,
                interrupt,
                slots,
            } => {
                for (request, slot) in interrupt.action_requests.iter().zip(slots) {
                    let card = cards.get_or_insert(slot, || {
                        new_card(slot, task, item, &request.id, &request.name, &request.args)
                    });
                    card.status = ToolStatus::PendingApproval;
                    card.args = request.args.clone();
                    card.ran = false;
                    card.via = card.via.take().or_else(|| request.via.clone());
                    if let Some(why) = request.metadata.get(SIGNOFF_WHY) {
                        card.why = Some(why.clone());
                    }
                    if request.description.is_some() {
                        card.description = request.description.clone();
                    }
                    if request.server.is_some() {
                        card.server = request.server.clone();
                    }
                }
            }
            LogEntry::Decision { task, decision } => {
                let Some((interrupt, slots)) = interrupt_before(log, task, position) else {
                    continue;
                };
                // A decision the rules refuse changed nothing on the server either.
                let Ok(resolved) = hitl::resolve(&interrupt.action_requests, decision) else {
                    continue;
                };
                for (call, slot) in resolved.iter().zip(slots) {
                    if let Some(card) = cards.get_mut(slot) {
                        if card.status != ToolStatus::PendingApproval {
                            continue;
                        }
                        match call.verdict {
                            Verdict::Approve => {
                                card.status = ToolStatus::Approved;
                                card.edited_args = call.modified_args.clone();
                            }
                            Verdict::Deny => {
                                card.status = ToolStatus::Rejected;
                                card.reason = call.reason.clone();
                            }
                        }
                    }
                }
            }
            LogEntry::Result { .. } | LogEntry::Progress { .. } | LogEntry::End { .. } => {}
        }
    }
}

/// Pass 2: results attach, and set executing unless the call was approved or rejected. A
/// result for a call still pending means it was decided elsewhere (another tab, the REST API).
fn pass_results(log: &[LogEntry], cards: &mut Cards) {
    for entry in log {
        let LogEntry::Result {
            slot,
            task,
            item,
            result,
            decided_by,
            ran,
        } = entry
        else {
            continue;
        };
        let card = cards.get_or_insert(slot, || {
            new_card(slot, task, item, &result.id, &result.name, &Value::Null)
        });
        card.result = Some(result.response.clone());
        card.is_error = result.is_error();
        if decided_by.is_some() {
            card.decided_by = decided_by.clone();
        }
        // The agent that ran it said it is over (an approved call stays approved: its outcome
        // reads completed or failed from its result).
        if *ran {
            if card.status == ToolStatus::Approved {
                continue;
            }
            card.status = if card.is_error {
                ToolStatus::Failed
            } else {
                ToolStatus::Completed
            };
            continue;
        }
        // Denied and expired calls never ran: their result is the last word.
        if result.is_denied() {
            card.status = ToolStatus::Denied;
            card.reason = result.denied_rule().map(str::to_owned);
            continue;
        }
        if result.is_expired() {
            card.status = ToolStatus::Expired;
            continue;
        }
        let rejected = result.is_rejected();
        card.status = match card.status {
            ToolStatus::Approved | ToolStatus::Rejected => card.status,
            ToolStatus::Denied | ToolStatus::Expired => card.status,
            ToolStatus::PendingApproval if rejected => ToolStatus::Rejected,
            ToolStatus::PendingApproval => ToolStatus::Approved,
            ToolStatus::Requested
            | ToolStatus::Executing
            | ToolStatus::Completed
            | ToolStatus::Failed
            | ToolStatus::NotRun => ToolStatus::Executing,
        };
        if card.status == ToolStatus::Rejected && card.reason.is_none() {
            card.reason = result.rejection_reason().map(str::to_owned);
        }
    }
}

/// Pass 3: a result followed by more of its turn (text, another call, the end) is complete,
/// or failed when it reported an error. Calls still pending when their task ended never ran;
/// calls requested without a result when their task completed are done (no result reported).
fn pass_completion(log: &[LogEntry], cards: &mut Cards) {
    for (position, entry) in log.iter().enumerate() {
        match entry {
            LogEntry::Result { slot, task, .. } => {
                let moved_on = log[position + 1..].iter().any(|later| {
                    later.task() == task
                        && matches!(
                            later,
                            LogEntry::Progress { .. }
                                | LogEntry::End { .. }
                                | LogEntry::Request { .. }
                                | LogEntry::Interrupt { .. }
                        )
                });
                if let Some(card) = cards.get_mut(slot) {
                    if moved_on && card.status == ToolStatus::Executing {
                        card.status = if card.is_error {
                            ToolStatus::Failed
                        } else {
                            ToolStatus::Completed
                        };
                    }
                }
            }
            LogEntry::End { task, state } => {
                if matches!(
                    state,
                    TaskState::Canceled
                        | TaskState::Failed
                        | TaskState::Rejected
                        | TaskState::Completed
                ) {
                    for card in cards.cards.iter_mut().filter(|card| &card.task_id == task) {
                        if card.status == ToolStatus::PendingApproval {
                            card.status = ToolStatus::NotRun;
                        }
                        if *state == TaskState::Completed && card.status == ToolStatus::Requested {
                            card.status = ToolStatus::Completed;
                        }
                    }
                }
            }
            LogEntry::Request { .. }
            | LogEntry::Interrupt { .. }
            | LogEntry::Decision { .. }
            | LogEntry::Progress { .. } => {}
        }
    }
}

/// All cards, in the order their calls first appeared.
pub(crate) fn derive(log: &[LogEntry]) -> Vec<ToolCallView> {
    let mut cards = Cards {
        cards: Vec::new(),
        index: BTreeMap::new(),
    };
    pass_requests(log, &mut cards);
    pass_results(log, &mut cards);
    pass_completion(log, &mut cards);
    cards.cards
}

/// The slot (card key) a new entry about call `id` of `task` belongs to. A call id seen again
/// after its call got a result is a new call (models reuse ids across turns).
pub(crate) fn slot_for(log: &[LogEntry], task: &str, id: &str, new_request: bool) -> String {
    let base = format!("{task}:{id}");
    let mut current: Option<&str> = None;
    let mut count = 0usize;
    let mut has_result = false;
    for entry in log {
        let slots: Vec<&str> = match entry {
            LogEntry::Request { slot, .. } | LogEntry::Result { slot, .. } => vec![slot],
            LogEntry::Interrupt { slots, .. } => slots.iter().map(String::as_str).collect(),
            LogEntry::Decision { .. } | LogEntry::Progress { .. } | LogEntry::End { .. } => {
                Vec::new()
            }
        };
        for slot in slots {
            if slot == base || slot.starts_with(&format!("{base}#")) {
                if current != Some(slot) {
                    count += 1;
                    has_result = false;
                }
                current = Some(slot);
                if matches!(entry, LogEntry::Result { .. }) {
                    has_result = true;
                }
            }
        }
    }
    match current {
        Some(slot) if !(new_request && has_result) => slot.to_owned(),
        Some(_) => format!("{base}#{}", count + 1),
        None => base,
    }
}
