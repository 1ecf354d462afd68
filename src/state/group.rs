//! Folding runs of finished tool calls into one collapsible group ("3 tool calls, 3 passed").
//! A card that still needs the person is never folded.

use super::view::{Item, ItemKind, ToolCallView, ToolStatus};

/// A card shown alone, or a run of finished cards shown as one group.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Segment {
    Card(String),
    Group { keys: Vec<String>, label: String },
}

/// Nothing more will change on this card.
pub fn is_finished(tool: &ToolCallView) -> bool {
    match tool.status {
        ToolStatus::Completed
        | ToolStatus::Failed
        | ToolStatus::Rejected
        | ToolStatus::NotRun
        | ToolStatus::Denied
        | ToolStatus::Expired => true,
        ToolStatus::Approved => tool.result.is_some(),
        ToolStatus::Requested | ToolStatus::PendingApproval | ToolStatus::Executing => false,
    }
}

fn label(tools: &[&ToolCallView]) -> String {
    let count =
        |wanted: &dyn Fn(&ToolCallView) -> bool| tools.iter().filter(|tool| wanted(tool)).count();
    let passed = count(&|tool| {
        matches!(tool.status, ToolStatus::Completed | ToolStatus::Approved) && !tool.is_error
    });
    let failed = count(&|tool| {
        tool.status == ToolStatus::Failed || (tool.status == ToolStatus::Approved && tool.is_error)
    });
    let rejected = count(&|tool| tool.status == ToolStatus::Rejected);
    let not_run = count(&|tool| tool.status == ToolStatus::NotRun);
    let denied = count(&|tool| tool.status == ToolStatus::Denied);
    let expired = count(&|tool| tool.status == ToolStatus::Expired);
    let mut text = format!("{} tool calls, {passed} passed", tools.len());
    for (number, word) in [
        (failed, "failed"),
        (rejected, "rejected"),
        (not_run, "not run"),
        (denied, "denied"),
        (expired, "expired"),
    ] {
        if number > 0 {
            text.push_str(&format!(", {number} {word}"));
        }
    }
    text
}

/// Splits an item's cards into segments: runs of two or more finished cards fold.
pub fn segments(tools: &[&ToolCallView]) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut run: Vec<&ToolCallView> = Vec::new();
    let flush = |run: &mut Vec<&ToolCallView>, out: &mut Vec<Segment>| {
        match run.len() {
            0 => {}
            1 => out.push(Segment::Card(run[0].key.clone())),
            _ => out.push(Segment::Group {
                keys: run.iter().map(|tool| tool.key.clone()).collect(),
                label: label(run),
            }),
        }
        run.clear();
    };
    for tool in tools {
        if is_finished(tool) {
            run.push(tool);
        } else {
            flush(&mut run, &mut out);
            out.push(Segment::Card(tool.key.clone()));
        }
    }
    flush(&mut run, &mut out);
    out
}

/// One transcript row: an item, joined by the tool-only agent items that follow it, so a run
/// of calls streamed one message each shows (and folds) as one list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Row {
    /// The first item's key: stable while later items join.
    pub key: String,
    pub items: Vec<String>,
}

/// Groups items into rows: an agent item with no text joins the row before it when that row
/// ends with an agent item.
pub fn rows(items: &[Item]) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::new();
    let mut last_kind = None;
    for item in items {
        let tool_only = item.kind == ItemKind::Agent && item.text.is_empty() && !item.streaming;
        match out.last_mut() {
            Some(row) if tool_only && last_kind == Some(ItemKind::Agent) => {
                row.items.push(item.key.clone())
            }
            Some(_) | None => out.push(Row {
                key: item.key.clone(),
                items: vec![item.key.clone()],
            }),
        }
        last_kind = Some(item.kind);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(key: &str, kind: ItemKind, text: &str) -> Item {
        Item {
            key: key.to_owned(),
            task_id: None,
            kind,
            text: text.to_owned(),
            tool_keys: Vec::new(),
            streaming: false,
        }
    }

    #[test]
    fn tool_only_items_join_the_agent_row_before_them() {
        let items = [
            item("u", ItemKind::User, "hi"),
            item("a", ItemKind::Agent, ""),
            item("b", ItemKind::Agent, ""),
            item("t", ItemKind::Agent, "done"),
            item("c", ItemKind::Agent, ""),
            item("d", ItemKind::Decision, "Approved"),
            item("e", ItemKind::Agent, ""),
        ];
        let keys: Vec<Vec<String>> = rows(&items).into_iter().map(|row| row.items).collect();
        assert_eq!(
            keys,
            [
                vec!["u"],
                vec!["a", "b"],
                vec!["t", "c"],
                vec!["d"],
                vec!["e"]
            ]
        );
    }
}
