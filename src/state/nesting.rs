//! Subagents' calls shown inside the card of the agent-tool call they ask through (docs/wire.md,
//! Subagents): derived from each card's `via`, which the reducer reads from the calls' metadata,
//! so live streams and stored chats nest the same way.

use super::view::{ChatView, ToolCallView};

/// Whether `tool` shows inside another card: a subagent's call whose agent-tool call has a
/// card in the same task.
pub fn is_nested(view: &ChatView, tool: &ToolCallView) -> bool {
    tool.via.as_ref().is_some_and(|via| {
        view.tools
            .iter()
            .any(|other| other.task_id == tool.task_id && other.id == via.call_id)
    })
}

/// The keys of the cards nested under `parent`, in card order.
pub fn nested_keys(view: &ChatView, parent: &ToolCallView) -> Vec<String> {
    view.tools
        .iter()
        .filter(|tool| {
            tool.task_id == parent.task_id
                && tool
                    .via
                    .as_ref()
                    .is_some_and(|via| via.call_id == parent.id)
        })
        .map(|tool| tool.key.clone())
        .collect()
}

/// Who asks through whom, for the nested cards of `key`: "default/demo asks through
/// default/boss" (`parent_agent` is the chat's agent).
pub fn nested_label(view: &ChatView, key: &str, parent_agent: &str) -> Option<String> {
    let parent = view.tool(key)?;
    let first = nested_keys(view, parent).into_iter().next()?;
    let via = view.tool(&first)?.via.as_ref()?;
    Some(via.label(parent_agent))
}
