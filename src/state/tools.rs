//! Tool-call status, derived from the event log in kagent's three passes (ARCHITECTURE.md,
//! invariant 3): requests, then results, then completion. Live streams and stored tasks append
//! the same entries in the same order, so both give the same cards.
//!
//! The passes run per card, over the facts the log holds about that card, and only for the cards
//! an appended entry touches: an event costs the same whether the chat has 50 cards or 200. The
//! whole-log passes they replace stay in `oracle` as the reference the tests hold them to.

use std::collections::BTreeMap;

use serde_json::Value;
use signoff_protocol::hitl::{
    self, ApprovalInterrupt, DecidedBy, Decision, RanStatus, ToolCall, ToolResult, Verdict, Via,
    SIGNOFF_WHY,
};
use signoff_protocol::TaskState;

use super::view::{ToolCallView, ToolStatus};

#[cfg(test)]
pub(crate) mod oracle;

/// One tool-related event, with the card (slot) it concerns resolved when it was appended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LogEntry {
    Request {
        slot: String,
        task: String,
        item: String,
        call: ToolCall,
        /// The policy or rule that decided it without asking.
        decided_by: Option<DecidedBy>,
        /// A subagent's call: what it is nested under.
        via: Option<Via>,
        /// The call's `signoff_why`: the rule, grant or policy that decided it.
        why: Option<Value>,
        /// A call the agent ran itself: the status it reported, and the changes it made (its
        /// `preview`, read by the card).
        ran: Option<Box<(RanStatus, Option<Value>)>>,
    },
    /// A batch of held calls; `slots` follow `interrupt.action_requests`.
    Interrupt {
        task: String,
        item: String,
        interrupt: ApprovalInterrupt,
        slots: Vec<String>,
    },
    Decision {
        task: String,
        decision: Decision,
    },
    Result {
        slot: String,
        task: String,
        item: String,
        result: ToolResult,
        decided_by: Option<DecidedBy>,
        /// The result of a call the agent ran itself: it is over.
        ran: bool,
    },
    /// The turn moved on (agent text came): earlier results are complete.
    Progress {
        task: String,
    },
    /// The task reached a terminal state.
    End {
        task: String,
        state: TaskState,
    },
}

/// What one log entry says about one card, in log order.
#[derive(Debug, Clone, PartialEq)]
enum Fact {
    /// The request at this log position.
    Request(usize),
    /// The card is request `index` of the interrupt at log position `at`.
    Held { at: usize, index: usize },
    /// A decision on the card's batch that the rules accepted, resolved for this card: the
    /// verdict, with the edited arguments of an approval or the reason of a rejection.
    Decided {
        verdict: Verdict,
        modified_args: Option<Value>,
        reason: Option<String>,
    },
    /// The result at this log position.
    Result(usize),
}

/// Where a card sits: requests and interrupts first, by log position (and place in their
/// batch), then cards that only ever got a result, by the result's position.
type Order = (u8, usize, usize);

/// A slot, or a `<task>:<call id>` that slots are counted under (most names are both).
#[derive(Debug, Clone, Default, PartialEq)]
struct Name {
    name: String,
    /// As a slot: what the log says about it.
    facts: Vec<Fact>,
    /// As a slot: where its card is in the card list.
    card: Option<usize>,
    /// As a slot: its card waits for its task's end to settle (pending approval, or requested
    /// with no result yet).
    open: bool,
    /// As a slot: its card must be derived again.
    dirty: bool,
    /// As `<task>:<call id>`: the id of the slot last named, if any was.
    current: Option<usize>,
    /// How many different slots were named in turn.
    count: usize,
    /// The current slot has its result.
    has_result: bool,
}

/// What the derivation needs to know of one task.
#[derive(Debug, Clone, Default, PartialEq)]
struct TaskLog {
    /// The position of its latest interrupt (the batch a decision answers).
    last_interrupt: Option<usize>,
    /// The position of its latest text, request, interrupt or end: results before it are
    /// complete.
    last_move: Option<usize>,
    /// The terminal state it reached.
    ended: Option<TaskState>,
    /// Slots with a result that nothing has followed yet.
    unsettled: Vec<usize>,
    /// Slots whose cards were open (pending approval: they never run if the task ends; or
    /// requested without a result: done when the task completes); the slot's own `open` says
    /// whether it still is.
    open: Vec<usize>,
}

/// The tool-related log and what it takes to keep the cards up to date entry by entry. Names
/// and tasks are numbered once, so that the per-event work is index lookups (and the wasm
/// carries one map type instead of one per kind of fact).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ToolLog {
    entries: Vec<LogEntry>,
    name_ids: BTreeMap<String, usize>,
    names: Vec<Name>,
    task_ids: BTreeMap<String, usize>,
    tasks: Vec<TaskLog>,
    /// Names whose card must be derived again.
    dirty: Vec<usize>,
    /// The [`Order`] of each card in the card list.
    order: Vec<Order>,
}

/// What [`ToolLog::settle`] changed in the card list.
#[derive(Debug, Default)]
pub(crate) struct Settled {
    /// Slots of new cards, in card order (all at the end of the list unless `reordered`).
    pub new: Vec<String>,
    /// A card went somewhere other than the end: every item's card keys must be rebuilt.
    pub reordered: bool,
}

impl ToolLog {
    /// The slot (card key) a new entry about call `id` of `task` belongs to. A call id seen
    /// again after its call got a result is a new call (models reuse ids across turns).
    pub(crate) fn slot_for(&self, task: &str, id: &str, new_request: bool) -> String {
        let base = format!("{task}:{id}");
        let counted = self.name_ids.get(&base).map(|at| &self.names[*at]);
        let slot = match counted.and_then(|name| Some((name, name.current?))) {
            Some((name, current)) if !(new_request && name.has_result) => {
                self.names[current].name.clone()
            }
            Some((name, _)) => format!("{base}#{}", name.count + 1),
            None => base,
        };
        #[cfg(test)]
        assert_eq!(
            slot,
            oracle::slot_for(&self.entries, task, id, new_request),
            "slot_for disagrees with the whole-log reference"
        );
        slot
    }

    fn task(&self, task: &str) -> Option<&TaskLog> {
        self.tasks.get(*self.task_ids.get(task)?)
    }

    fn task_mut(&mut self, task: &str) -> &mut TaskLog {
        let next = self.tasks.len();
        let at = *self.task_ids.entry(task.to_owned()).or_insert(next);
        if at == next {
            self.tasks.push(TaskLog::default());
        }
        &mut self.tasks[at]
    }

    fn name_id(&mut self, name: &str) -> usize {
        let next = self.names.len();
        let at = *self.name_ids.entry(name.to_owned()).or_insert(next);
        if at == next {
            self.names.push(Name {
                name: name.to_owned(),
                ..Name::default()
            });
        }
        at
    }

    /// Whether `task` has reached a terminal state.
    pub(crate) fn has_ended(&self, task: &str) -> bool {
        self.task(task).is_some_and(|task| task.ended.is_some())
    }

    /// The latest interrupt of `task`, with its slots.
    pub(crate) fn last_interrupt(&self, task: &str) -> Option<(&ApprovalInterrupt, &[String])> {
        match self.entries.get(self.task(task)?.last_interrupt?)? {
            LogEntry::Interrupt {
                interrupt, slots, ..
            } => Some((interrupt, slots.as_slice())),
            LogEntry::Request { .. }
            | LogEntry::Decision { .. }
            | LogEntry::Result { .. }
            | LogEntry::Progress { .. }
            | LogEntry::End { .. } => None,
        }
    }

    /// Where the card of `slot` is in the card list.
    pub(crate) fn position(&self, slot: &str) -> Option<usize> {
        self.names.get(*self.name_ids.get(slot)?)?.card
    }

    /// Appends an entry and notes the cards it touches.
    pub(crate) fn push(&mut self, entry: LogEntry) {
        let at = self.entries.len();
        match &entry {
            LogEntry::Request { slot, task, .. } => {
                self.mention(slot, false);
                self.add_fact(slot, Fact::Request(at));
                self.moved(task, at);
            }
            LogEntry::Interrupt {
                task,
                interrupt,
                slots,
                ..
            } => {
                let held = slots.iter().take(interrupt.action_requests.len());
                for (index, slot) in held.enumerate() {
                    self.mention(slot, false);
                    self.add_fact(slot, Fact::Held { at, index });
                }
                self.task_mut(task).last_interrupt = Some(at);
                self.moved(task, at);
            }
            LogEntry::Decision { task, decision } => {
                let resolved = self.last_interrupt(task).and_then(|(interrupt, slots)| {
                    // A decision the rules refuse changed nothing on the server either.
                    let calls = hitl::resolve(&interrupt.action_requests, decision).ok()?;
                    Some((calls, slots.to_vec()))
                });
                if let Some((calls, slots)) = resolved {
                    for (call, slot) in calls.into_iter().zip(&slots) {
                        let fact = Fact::Decided {
                            verdict: call.verdict,
                            modified_args: call.modified_args,
                            reason: call.reason,
                        };
                        self.add_fact(slot, fact);
                    }
                }
            }
            LogEntry::Result { slot, task, .. } => {
                self.mention(slot, true);
                self.add_fact(slot, Fact::Result(at));
                let id = self.name_id(slot);
                self.task_mut(task).unsettled.push(id);
            }
            LogEntry::Progress { task } => self.moved(task, at),
            LogEntry::End { task, state } => {
                let log = self.task_mut(task);
                log.ended.get_or_insert(*state);
                let open = log.open.clone();
                for id in open {
                    if self.names[id].open {
                        self.mark(id);
                    }
                }
                self.moved(task, at);
            }
        }
        self.entries.push(entry);
    }

    /// `slot` was named: every `<task>:<call id>` it can belong to remembers it (a slot
    /// `t:a#2` belongs to `t:a`, and to a call whose id is really `a#2`).
    fn mention(&mut self, slot: &str, is_result: bool) {
        let id = self.name_id(slot);
        let bases: Vec<String> = slot
            .match_indices('#')
            .map(|(at, _)| slot[..at].to_owned())
            .chain([slot.to_owned()])
            .collect();
        for base in bases {
            let base = self.name_id(&base);
            let name = &mut self.names[base];
            if name.current != Some(id) {
                name.count += 1;
                name.has_result = false;
                name.current = Some(id);
            }
            if is_result {
                name.has_result = true;
            }
        }
    }

    fn mark(&mut self, id: usize) {
        if !self.names[id].dirty {
            self.names[id].dirty = true;
            self.dirty.push(id);
        }
    }

    fn add_fact(&mut self, slot: &str, fact: Fact) {
        let id = self.name_id(slot);
        self.names[id].facts.push(fact);
        self.mark(id);
    }

    /// The turn of `task` moved on at `at`: its results so far are complete.
    fn moved(&mut self, task: &str, at: usize) {
        let log = self.task_mut(task);
        log.last_move = Some(at);
        let unsettled = std::mem::take(&mut log.unsettled);
        for id in unsettled {
            self.mark(id);
        }
    }

    /// Derives the touched cards again and puts them in `cards` (the list this log keeps).
    pub(crate) fn settle(&mut self, cards: &mut Vec<ToolCallView>) -> Settled {
        // In card order, so that new cards go to the end one after the other.
        let mut derived: Vec<(Order, usize, ToolCallView)> = Vec::new();
        for id in std::mem::take(&mut self.dirty) {
            self.names[id].dirty = false;
            if let Some((order, card)) = self.derive(id) {
                let at = derived.partition_point(|(other, _, _)| *other < order);
                derived.insert(at, (order, id, card));
            }
        }
        let mut settled = Settled::default();
        for (order, id, card) in derived {
            let open = matches!(
                card.status,
                ToolStatus::PendingApproval | ToolStatus::Requested
            );
            if open && !self.names[id].open {
                self.task_mut(&card.task_id).open.push(id);
            }
            self.names[id].open = open;
            match self.names[id].card {
                Some(at) if self.order[at] == order => {
                    if cards[at] != card {
                        cards[at] = card;
                    }
                }
                Some(at) => {
                    // A card that only had a result got its request: it moves up (rare).
                    cards.remove(at);
                    self.order.remove(at);
                    self.insert(cards, order, card);
                    settled.reordered = true;
                }
                None if self.order.last().is_some_and(|last| *last > order) => {
                    settled.new.push(card.key.clone());
                    self.insert(cards, order, card);
                    settled.reordered = true;
                }
                None => {
                    settled.new.push(card.key.clone());
                    self.names[id].card = Some(cards.len());
                    cards.push(card);
                    self.order.push(order);
                }
            }
        }
        settled
    }

    /// Puts `card` at its place in the list and numbers every card's place again.
    fn insert(&mut self, cards: &mut Vec<ToolCallView>, order: Order, card: ToolCallView) {
        let at = self.order.partition_point(|other| *other < order);
        cards.insert(at, card);
        self.order.insert(at, order);
        for (at, card) in cards.iter().enumerate() {
            if let Some(id) = self.name_ids.get(&card.key) {
                self.names[*id].card = Some(at);
            }
        }
    }

    /// The three passes for one card, over the facts about it.
    fn derive(&self, id: usize) -> Option<(Order, ToolCallView)> {
        let Name {
            name: slot, facts, ..
        } = self.names.get(id)?;
        let mut card: Option<(Order, ToolCallView)> = None;
        // Pass 1: requests set requested / pending approval, decisions approved / rejected.
        for fact in facts {
            self.apply_fact(slot, fact, &mut card);
        }
        // Pass 2: results attach, and set executing unless the call was approved or rejected.
        // A result for a call still pending means it was decided elsewhere (another tab, REST).
        let results = facts.iter().filter_map(|fact| self.result_at(fact));
        for found in results.clone() {
            let (_, card) = card.get_or_insert_with(|| {
                let result = found.result;
                let new = new_card(
                    slot,
                    found.task,
                    found.item,
                    &result.id,
                    &result.name,
                    &Value::Null,
                );
                ((1, found.at, 0), new)
            });
            attach_result(card, found.result, found.decided_by, found.ran);
        }
        let (order, mut card) = card?;
        self.complete(&mut card, results);
        Some((order, card))
    }

    /// Pass 1 for one fact: a request or a held call makes the card (requested, or pending
    /// approval); a decision the rules accepted approves or rejects it while it waits.
    fn apply_fact(&self, slot: &str, fact: &Fact, card: &mut Option<(Order, ToolCallView)>) {
        match fact {
            Fact::Request(at) => self.apply_request(slot, *at, card),
            Fact::Held { at, index } => self.apply_held(slot, *at, *index, card),
            Fact::Decided {
                verdict,
                modified_args,
                reason,
            } => {
                if let Some((_, card)) = card.as_mut() {
                    apply_decision(card, *verdict, modified_args, reason);
                }
            }
            Fact::Result(_) => {}
        }
    }

    /// The request at log position `at`: it makes the card (requested), with who decided it
    /// without asking and what it is nested under.
    fn apply_request(&self, slot: &str, at: usize, card: &mut Option<(Order, ToolCallView)>) {
        let Some(LogEntry::Request {
            task,
            item,
            call,
            decided_by,
            via,
            why,
            ran,
            ..
        }) = self.entries.get(at)
        else {
            return;
        };
        let (_, card) = card.get_or_insert_with(|| {
            let new = new_card(slot, task, item, &call.id, &call.name, &call.args);
            ((0, at, 0), new)
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

    /// Request `index` of the interrupt at log position `at`: the card waits for approval, with
    /// the held call's arguments, and its description and server when the interrupt gives them.
    fn apply_held(
        &self,
        slot: &str,
        at: usize,
        index: usize,
        card: &mut Option<(Order, ToolCallView)>,
    ) {
        let Some(LogEntry::Interrupt {
            task,
            item,
            interrupt,
            ..
        }) = self.entries.get(at)
        else {
            return;
        };
        let Some(request) = interrupt.action_requests.get(index) else {
            return;
        };
        let (_, card) = card.get_or_insert_with(|| {
            let new = new_card(slot, task, item, &request.id, &request.name, &request.args);
            ((0, at, index), new)
        });
        card.status = ToolStatus::PendingApproval;
        card.args = request.args.clone();
        // A call the agent reported before it asked is asked now: no longer its own doing.
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

    /// The result a fact points at, if it is one.
    fn result_at<'a>(&'a self, fact: &Fact) -> Option<ResultAt<'a>> {
        let Fact::Result(at) = fact else {
            return None;
        };
        match self.entries.get(*at) {
            Some(LogEntry::Result {
                task,
                item,
                result,
                decided_by,
                ran,
                ..
            }) => Some(ResultAt {
                at: *at,
                task,
                item,
                result,
                decided_by: decided_by.as_ref(),
                ran: *ran,
            }),
            Some(_) | None => None,
        }
    }

    /// Pass 3: a result followed by more of its turn (text, another call, the end) is
    /// complete, or failed when it reported an error. Calls still pending when their task
    /// ended badly never ran.
    fn complete<'a>(&self, card: &mut ToolCallView, results: impl Iterator<Item = ResultAt<'a>>) {
        for found in results {
            let last_move = self.task(found.task).and_then(|task| task.last_move);
            let moved_on = last_move.is_some_and(|last| last > found.at);
            if moved_on && card.status == ToolStatus::Executing {
                card.status = if card.is_error {
                    ToolStatus::Failed
                } else {
                    ToolStatus::Completed
                };
            }
        }
        let ended = self.task(&card.task_id).and_then(|task| task.ended);
        // A call whose task completed without its result streamed (kagent 0.10.4 never
        // streams the results of calls that needed no approval) is done: "no result reported".
        if ended == Some(TaskState::Completed) && card.status == ToolStatus::Requested {
            card.status = ToolStatus::Completed;
        }
        let failed = matches!(
            ended,
            Some(
                TaskState::Canceled
                    | TaskState::Failed
                    | TaskState::Rejected
                    | TaskState::Completed
            )
        );
        if failed && card.status == ToolStatus::PendingApproval {
            card.status = ToolStatus::NotRun;
        }
    }

    /// The whole-log reference: the cards as the three passes over every entry give them.
    #[cfg(test)]
    pub(crate) fn reference_cards(&self) -> Vec<ToolCallView> {
        oracle::derive(&self.entries)
    }
}

/// A result the log holds about a card, with its log position.
#[derive(Clone, Copy)]
struct ResultAt<'a> {
    at: usize,
    task: &'a str,
    item: &'a str,
    result: &'a ToolResult,
    decided_by: Option<&'a DecidedBy>,
    ran: bool,
}

/// A decision on a waiting card (pass 1): approved with any edited arguments, or rejected with
/// the reason. A card no longer waiting keeps its status.
fn apply_decision(
    card: &mut ToolCallView,
    verdict: Verdict,
    modified_args: &Option<Value>,
    reason: &Option<String>,
) {
    if card.status != ToolStatus::PendingApproval {
        return;
    }
    match verdict {
        Verdict::Approve => {
            card.status = ToolStatus::Approved;
            card.edited_args = modified_args.clone();
        }
        Verdict::Deny => {
            card.status = ToolStatus::Rejected;
            card.reason = reason.clone();
        }
    }
}

/// A result on its card (pass 2): it attaches, and sets executing unless the call was approved
/// or rejected; a result for a call still pending means it was decided elsewhere. The reading
/// of a rejection (ours, or kagent's sentence) is the protocol's ([`ToolResult::is_rejected`]).
fn attach_result(
    card: &mut ToolCallView,
    result: &ToolResult,
    decided_by: Option<&DecidedBy>,
    ran: bool,
) {
    card.result = Some(result.response.clone());
    card.is_error = result.is_error();
    if decided_by.is_some() {
        card.decided_by = decided_by.cloned();
    }
    // The agent that ran it said it is over (an approved call stays approved: its outcome
    // reads completed or failed from its result, beside who approved it).
    if ran {
        if card.status == ToolStatus::Approved {
            return;
        }
        card.status = match card.is_error {
            true => ToolStatus::Failed,
            false => ToolStatus::Completed,
        };
        return;
    }
    // Denied and expired calls never ran: their result is the last word.
    if result.is_denied() {
        card.status = ToolStatus::Denied;
        card.reason = result.denied_rule().map(str::to_owned);
        return;
    }
    if result.is_expired() {
        card.status = ToolStatus::Expired;
        return;
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

/// A report of a call the agent ran itself (pass 1): the latest arguments and changes, and
/// the status it reported.
pub(super) fn apply_ran(
    card: &mut ToolCallView,
    call: &ToolCall,
    ran: &(RanStatus, Option<Value>),
) {
    card.args = call.args.clone();
    card.preview = ran.1.clone();
    card.ran = true;
    card.status = match ran.0 {
        RanStatus::Pending => ToolStatus::Requested,
        RanStatus::InProgress => ToolStatus::Executing,
        RanStatus::Completed => ToolStatus::Completed,
        RanStatus::Failed => ToolStatus::Failed,
    };
}

pub(super) fn new_card(
    slot: &str,
    task: &str,
    item: &str,
    id: &str,
    name: &str,
    args: &Value,
) -> ToolCallView {
    ToolCallView {
        key: slot.to_owned(),
        id: id.to_owned(),
        task_id: task.to_owned(),
        name: name.to_owned(),
        args: args.clone(),
        edited_args: None,
        server: None,
        description: None,
        status: ToolStatus::Requested,
        result: None,
        is_error: false,
        reason: None,
        decided_by: None,
        why: None,
        owner: item.to_owned(),
        via: None,
        preview: None,
        ran: false,
    }
}
