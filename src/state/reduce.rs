//! The reducer: `apply(&mut ChatView, &StreamEvent)` turns wire events into the view model.
//! The same code replays stored tasks after a reload and follows live streams.

use signoff_protocol::hitl::kagent::{self, TokenUsage};
use signoff_protocol::hitl::keys::PREVIEW;
use signoff_protocol::hitl::ran::is_thought;
use signoff_protocol::hitl::{
    extension, ApprovalInterrupt, DecidedBy, Decision, Dialect, RanStatus, ToolCall, ToolResult,
    Via, SIGNOFF_WHY,
};
use signoff_protocol::{
    Artifact, Message, Metadata, Role, StreamEvent, Task, TaskArtifactUpdateEvent, TaskState,
    TaskStatus, TaskStatusUpdateEvent,
};

use super::tools::LogEntry;
use super::view::{
    ChatStatus, ChatView, Item, ItemKind, PendingBatch, ToolStatus, TurnUsage, Usage,
};

/// Applies one event to the view: the reducer of ARCHITECTURE.md, invariant 2.
pub fn apply(view: &mut ChatView, event: &StreamEvent) {
    match event {
        StreamEvent::Task(task) => apply_task(view, task),
        StreamEvent::Message(message) => {
            let task = message.task_id.clone();
            if let Some(context) = &message.context_id {
                view.context_id = Some(context.clone());
            }
            apply_message(view, message, task.as_deref(), None);
            // A bare agent message answers `message/send` without a task: the turn is over.
            if message.role == Role::Agent && task.is_none() {
                view.status = ChatStatus::Ready;
            }
        }
        StreamEvent::StatusUpdate(update) => apply_status_update(view, update),
        StreamEvent::ArtifactUpdate(update) => apply_artifact_update(view, update),
    }
    refresh(view);
}

/// Rebuilds a chat from its stored tasks, oldest first.
pub fn replay<'a>(tasks: impl IntoIterator<Item = &'a Task>) -> ChatView {
    let mut view = ChatView::default();
    for task in tasks {
        apply(&mut view, &StreamEvent::Task(task.clone()));
        if let Some(rating) = super::feedback::stored_rating(task) {
            view.ratings.insert(task.id.clone(), rating);
        }
    }
    view
}

impl ChatView {
    /// Applies one event (see [`apply`]).
    pub fn apply(&mut self, event: &StreamEvent) {
        apply(self, event);
    }

    /// The person sent `message`: show it at once and wait for the agent.
    pub fn send(&mut self, message: &Message) {
        apply(self, &StreamEvent::Message(message.clone()));
        self.status = ChatStatus::Thinking;
    }

    /// The person sent `message` to the working task: show it at once, marked queued until the
    /// server's event that delivers it to the agent (a `working` status update carrying it).
    /// The turn goes on as it was.
    pub fn queue(&mut self, message: &Message) {
        let status = self.status.clone();
        apply(self, &StreamEvent::Message(message.clone()));
        self.status = status;
        self.queued.insert(message.message_id.clone());
    }

    /// The server refused a queued message: its bubble goes.
    pub fn unqueue(&mut self, message_id: &str) {
        self.queued.remove(message_id);
        self.retain_items(|item| item.key != message_id);
    }

    /// The connection failed or the server refused the request.
    pub fn fail(&mut self, reason: &str) {
        self.status = ChatStatus::Error(reason.to_owned());
        for item in &mut self.items {
            item.streaming = false;
        }
    }

    /// The stream broke (it ended, or the connection failed) while the turn was under way:
    /// the chat says it is reconnecting, and answers the task to resubscribe to. Nothing
    /// changes when the turn was at rest or its task is not known yet.
    pub fn stream_lost(&mut self) -> Option<String> {
        let task = self.task_id.clone().filter(|_| self.status.is_busy())?;
        self.status = ChatStatus::Reconnecting;
        for item in &mut self.items {
            item.streaming = false;
        }
        Some(task)
    }

    /// The stream closed. If the turn had not reached a resting state, say so.
    pub fn stream_closed(&mut self) {
        if self.status.is_busy() {
            self.fail("the stream ended before the agent finished");
        }
    }
}

fn usage_from(metadata: Option<&Metadata>) -> Option<Usage> {
    let usage = TokenUsage::from_metadata(metadata)?;
    Some(Usage {
        prompt: usage.prompt,
        completion: usage.completion,
        total: usage.total,
    })
}

/// Counts a turn's tokens once and ties them to the task's latest agent item. kagent repeats a
/// turn's counts on several of its events, so equal counts in the same task are the same turn;
/// a repeat moves the tie to the newest answer, which the later event may have added. (A turn
/// whose item is not shown counts on its task's latest answer: `ChatView::answer_usage`.)
fn record_turn(view: &mut ChatView, task: &str, usage: Usage) {
    let item = view
        .items
        .iter()
        .rev()
        .find(|item| item.kind == ItemKind::Agent && item.task_id.as_deref() == Some(task))
        .map(|item| item.key.clone());
    match view
        .turns
        .iter_mut()
        .find(|turn| turn.task_id == task && turn.usage == usage)
    {
        Some(turn) => turn.item = item,
        None => view.turns.push(TurnUsage {
            task_id: task.to_owned(),
            usage,
            item,
        }),
    }
}

fn is_partial(message: &Message, event_metadata: Option<&Metadata>) -> bool {
    kagent::is_partial(message.metadata.as_ref()) || kagent::is_partial(event_metadata)
}

fn set_task(view: &mut ChatView, task: &str, context: &str) {
    view.task_id = Some(task.to_owned());
    view.context_id = Some(context.to_owned());
}

fn apply_task(view: &mut ChatView, task: &Task) {
    set_task(view, &task.id, &task.context_id);
    for message in &task.history {
        apply_message(view, message, Some(&task.id), None);
    }
    for artifact in &task.artifacts {
        apply_artifact(view, &task.id, artifact, false, true);
    }
    apply_status(view, &task.id, &task.status, task.metadata.as_ref());
}

fn apply_status_update(view: &mut ChatView, update: &TaskStatusUpdateEvent) {
    set_task(view, &update.task_id, &update.context_id);
    apply_status(
        view,
        &update.task_id,
        &update.status,
        update.metadata.as_ref(),
    );
}

fn apply_status(view: &mut ChatView, task: &str, status: &TaskStatus, metadata: Option<&Metadata>) {
    let mut has_calls = false;
    if let Some(message) = &status.message {
        has_calls = message
            .parts
            .iter()
            .any(|part| ToolCall::from_part(part).is_some());
        apply_message(view, message, Some(task), metadata);
    }
    if let Some(usage) = usage_from(metadata) {
        view.usage = Some(usage);
        record_turn(view, task, usage);
    }
    view.task_states.insert(task.to_owned(), status.state);
    view.status = match status.state {
        TaskState::Submitted => ChatStatus::Thinking,
        TaskState::Working if has_calls => ChatStatus::ExecutingTools,
        TaskState::Working => ChatStatus::Working,
        // Refreshed by `refresh` once the pending batch is known.
        TaskState::InputRequired | TaskState::AuthRequired => ChatStatus::Ready,
        TaskState::Completed => ChatStatus::Ready,
        TaskState::Canceled => {
            push_notice(view, task, ItemKind::Canceled, "Canceled");
            ChatStatus::Ready
        }
        TaskState::Failed | TaskState::Rejected => {
            let reason = status
                .message
                .as_ref()
                .map(Message::text)
                .filter(|text| !text.trim().is_empty())
                .unwrap_or_else(|| "The agent could not finish this task.".to_owned());
            push_notice(view, task, ItemKind::Failed, &reason);
            ChatStatus::Error(reason)
        }
    };
    if status.state.is_terminal() {
        if !view.tool_log.has_ended(task) {
            view.tool_log.push(LogEntry::End {
                task: task.to_owned(),
                state: status.state,
            });
        }
        for item in view
            .items
            .iter_mut()
            .filter(|item| item.task_id.as_deref() == Some(task))
        {
            item.streaming = false;
        }
    }
}

fn push_notice(view: &mut ChatView, task: &str, kind: ItemKind, text: &str) {
    let key = format!("end:{task}");
    if view.item(&key).is_some() {
        return;
    }
    view.push_item(Item {
        key,
        task_id: Some(task.to_owned()),
        kind,
        text: text.to_owned(),
        tool_keys: Vec::new(),
        streaming: false,
    });
}

fn apply_message(
    view: &mut ChatView,
    message: &Message,
    task: Option<&str>,
    event_metadata: Option<&Metadata>,
) {
    let task = task.or(message.task_id.as_deref());
    // The server echoes a queued message when it delivers it to the agent.
    if message.role == Role::User && view.queued.remove(&message.message_id) {
        view.delivered.insert(message.message_id.clone());
    }
    let partial = is_partial(message, event_metadata);
    if !partial && !view.seen_messages.insert(message.message_id.clone()) {
        return;
    }
    match message.role {
        Role::User => apply_user_message(view, message, task),
        Role::Agent => apply_agent_message(view, message, task, partial),
    }
    // kagent's stored tasks keep each turn's counts on the turn's last message.
    if let (Role::Agent, Some(task), Some(usage)) =
        (message.role, task, usage_from(message.metadata.as_ref()))
    {
        record_turn(view, task, usage);
    }
}

fn apply_user_message(view: &mut ChatView, message: &Message, task: Option<&str>) {
    // kagent's HITL extension names approval ids, which only the pause it answers can map to
    // calls.
    let decision = Decision::from_message(message).ok().flatten().or_else(|| {
        let (interrupt, _) = view.tool_log.last_interrupt(task?)?;
        extension::decision_from_message(message, &interrupt.action_requests)
    });
    let kind = match (&decision, task) {
        (Some(decision), Some(task)) => {
            view.tool_log.push(LogEntry::Decision {
                task: task.to_owned(),
                decision: decision.clone(),
            });
            ItemKind::Decision
        }
        (Some(_), None) => ItemKind::Decision,
        (None, _) => ItemKind::User,
    };
    let mut text = message.text();
    if let (ItemKind::Decision, true, Some(decision)) = (kind, text.trim().is_empty(), &decision) {
        text = decision.summary();
    }
    view.push_item(Item {
        key: message.message_id.clone(),
        task_id: task.map(str::to_owned),
        kind,
        text,
        tool_keys: Vec::new(),
        streaming: false,
    });
}

fn apply_agent_message(view: &mut ChatView, message: &Message, task: Option<&str>, partial: bool) {
    let task_key = task.unwrap_or("");
    let stream_prefix = format!("stream:{task_key}:");
    let streaming = view
        .items
        .iter()
        .rposition(|item| item.streaming && item.key.starts_with(&stream_prefix));
    let interrupt = ApprovalInterrupt::from_message(message);
    let text_of = |thoughts: bool| -> String {
        let parts = message.parts.iter();
        let parts = parts.filter(|part| is_thought(part) == thoughts);
        parts.filter_map(|part| part.as_text()).collect()
    };
    // The interrupt's text part repeats the cards in words; the cards say it better.
    let text = if interrupt.is_some() {
        String::new()
    } else {
        text_of(false)
    };

    if partial {
        match streaming {
            Some(index) => view.items[index].text.push_str(&text),
            None if !text.is_empty() => {
                let key = format!("{stream_prefix}{}", view.items.len());
                view.push_item(agent_item(key, task, text, true));
            }
            None => {}
        }
        return;
    }

    // The full text of a message that streamed in partial chunks replaces them in place.
    let replaces = streaming.filter(|_| !text.is_empty());
    let mut item_key = match replaces {
        Some(index) => view.items[index].key.clone(),
        None => message.message_id.clone(),
    };
    // A message id can repeat an older item's key (ids are the peer's): keep keys unique.
    if replaces.is_none() && view.item(&item_key).is_some() {
        item_key = format!("{item_key}:{}", view.items.len());
    }
    let thought = text_of(true);
    if !thought.trim().is_empty() {
        let key = format!("thought:{item_key}");
        view.push_item(Item {
            kind: ItemKind::Thought,
            ..agent_item(key, task, thought, false)
        });
    }
    let mut tool_parts = false;
    for part in &message.parts {
        if let Some(call) = ToolCall::from_part(part) {
            tool_parts = true;
            let slot = view.tool_log.slot_for(task_key, &call.id, true);
            view.tool_log.push(LogEntry::Request {
                slot,
                task: task_key.to_owned(),
                item: item_key.clone(),
                call,
                decided_by: DecidedBy::from_part(part),
                via: Via::from_part(part),
                why: part
                    .metadata
                    .as_ref()
                    .and_then(|metadata| metadata.get(SIGNOFF_WHY))
                    .cloned(),
                ran: RanStatus::of_part(part).map(|status| {
                    let preview = part.metadata.as_ref().and_then(|meta| meta.get(PREVIEW));
                    Box::new((status, preview.cloned()))
                }),
            });
        } else if let Some(result) = ToolResult::from_part(part) {
            tool_parts = true;
            let slot = view.tool_log.slot_for(task_key, &result.id, false);
            view.tool_log.push(LogEntry::Result {
                slot,
                task: task_key.to_owned(),
                item: item_key.clone(),
                result,
                decided_by: DecidedBy::from_part(part),
                ran: RanStatus::of_part(part).is_some(),
            });
        }
    }
    if let Some(mut interrupt) = interrupt {
        tool_parts = true;
        if interrupt.dialect == Dialect::KagentExtension {
            adopt_question_calls(view, task_key, &mut interrupt);
        }
        let slots = interrupt
            .action_requests
            .iter()
            .map(|request| view.tool_log.slot_for(task_key, &request.id, false))
            .collect();
        view.tool_log.push(LogEntry::Interrupt {
            task: task_key.to_owned(),
            item: item_key.clone(),
            interrupt,
            slots,
        });
    }
    if !text.is_empty() {
        view.tool_log.push(LogEntry::Progress {
            task: task_key.to_owned(),
        });
    }
    match replaces {
        Some(index) => {
            view.items[index].text = text;
            view.items[index].streaming = false;
        }
        None if text.is_empty() && !tool_parts => {}
        None => view.push_item(agent_item(item_key, task, text, false)),
    }
}

/// kagent's HITL extension gives a lone question no call id, only its approval id: the task's
/// `ask_user` call that asks the same questions and has no result yet is the call it holds, so
/// the question shows on that call's card (the approval id still goes into the answer).
fn adopt_question_calls(view: &ChatView, task: &str, interrupt: &mut ApprovalInterrupt) {
    for request in &mut interrupt.action_requests {
        let known = |id: &str| {
            view.tools
                .iter()
                .any(|tool| tool.task_id == task && tool.id == id)
        };
        if request.questions().is_none() || known(&request.id) {
            continue;
        }
        let asked = view.tools.iter().rev().find(|tool| {
            tool.task_id == task
                && tool.name == request.name
                && tool.args == request.args
                && tool.result.is_none()
        });
        if let Some(call) = asked {
            request.id = call.id.clone();
        }
    }
}

fn agent_item(key: String, task: Option<&str>, text: String, streaming: bool) -> Item {
    Item {
        key,
        task_id: task.map(str::to_owned),
        kind: ItemKind::Agent,
        text,
        tool_keys: Vec::new(),
        streaming,
    }
}

fn apply_artifact_update(view: &mut ChatView, update: &TaskArtifactUpdateEvent) {
    set_task(view, &update.task_id, &update.context_id);
    apply_artifact(
        view,
        &update.task_id,
        &update.artifact,
        update.append,
        update.last_chunk,
    );
    if matches!(
        view.status,
        ChatStatus::Thinking | ChatStatus::ExecutingTools
    ) {
        view.status = ChatStatus::Working;
    }
}

fn apply_artifact(
    view: &mut ChatView,
    task: &str,
    artifact: &Artifact,
    append: bool,
    last_chunk: bool,
) {
    if view.artifact_aliases.contains_key(&artifact.artifact_id) {
        return;
    }
    let text: String = artifact
        .parts
        .iter()
        .filter_map(|part| part.as_text())
        .collect();
    let key = format!("artifact:{}", artifact.artifact_id);
    if let Some(item) = view.item_mut(&key) {
        if append {
            item.text.push_str(&text);
        } else {
            item.text = text;
        }
        item.streaming = !last_chunk;
    } else {
        if text.is_empty() {
            return;
        }
        // kagent sends its answer twice: as a status message, then as an artifact. Only a
        // message is copied so: another artifact with the same text so far (a turn resumed
        // after a restart starts its answer again) is an answer of its own, which streams on.
        let last_text = view.items.iter().rev().find(|item| {
            item.kind == ItemKind::Agent
                && item.task_id.as_deref() == Some(task)
                && !item.text.is_empty()
        });
        let last_text = last_text.filter(|item| !item.key.starts_with("artifact:"));
        if let Some(previous) = last_text {
            if !append && previous.text == text {
                view.artifact_aliases
                    .insert(artifact.artifact_id.clone(), previous.key.clone());
                return;
            }
        }
        view.push_item(agent_item(key, Some(task), text, !last_chunk));
    }
    view.tool_log.push(LogEntry::Progress {
        task: task.to_owned(),
    });
}

/// Derives the cards the event touched, the pending batch and the status that depends on them.
fn refresh(view: &mut ChatView) {
    let settled = view.tool_log.settle(&mut view.tools);
    if settled.reordered {
        for item in &mut view.items {
            item.tool_keys.clear();
        }
        let owners: Vec<(String, String)> = view
            .tools
            .iter()
            .map(|tool| (tool.owner.clone(), tool.key.clone()))
            .collect();
        for (owner, key) in owners {
            if let Some(item) = view.item_mut(&owner) {
                item.tool_keys.push(key);
            }
        }
    } else {
        // New cards come last in the card list, so they come last under their item too.
        for slot in settled.new {
            let Some(tool) = view.tool(&slot) else {
                continue;
            };
            let owner = tool.owner.clone();
            if let Some(item) = view.item_mut(&owner) {
                item.tool_keys.push(slot);
            }
        }
    }
    // A message that only carried results or repeated known calls shows nothing of its own.
    // Card owners never change once derived, so such an item stays empty for good.
    view.retain_items(|item| {
        item.kind != ItemKind::Agent
            || !item.text.is_empty()
            || !item.tool_keys.is_empty()
            || item.streaming
    });
    view.pending = pending_batch(view);
    if view.pending.is_some() {
        view.status = ChatStatus::AwaitingApproval;
    } else if view.status == ChatStatus::AwaitingApproval {
        view.status = ChatStatus::Ready;
    }
    #[cfg(test)]
    assert_eq!(
        view.tools,
        view.tool_log.reference_cards(),
        "the incremental cards disagree with the whole-log passes"
    );
}

fn pending_batch(view: &ChatView) -> Option<PendingBatch> {
    let task = view.task_id.as_deref()?;
    if view.task_states.get(task) != Some(&TaskState::InputRequired) {
        return None;
    }
    let (interrupt, slots) = view.tool_log.last_interrupt(task)?;
    let all_pending = slots.iter().all(|slot| {
        view.tool(slot)
            .is_some_and(|tool| tool.status == ToolStatus::PendingApproval)
    });
    all_pending.then(|| PendingBatch {
        task_id: task.to_owned(),
        context_id: view.context_id.clone(),
        dialect: interrupt.dialect,
        requests: interrupt.action_requests.clone(),
        keys: slots.to_vec(),
        expires_at: interrupt.expires_at.clone(),
    })
}
