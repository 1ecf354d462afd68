//! Folding runs of finished tool calls into one collapsible group ("3 tool calls, 3 passed").
//! A card that still needs the person is never folded.

use super::view::{ToolCallView, ToolStatus};

/// A card shown alone, or a run of finished cards shown as one group.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Segment {
    Card(String),
    Group { keys: Vec<String>, label: String },
}

/// Nothing more will change on this card.
pub fn is_finished(tool: &ToolCallView) -> bool {
    match tool.status {
        ToolStatus::Completed | ToolStatus::Failed | ToolStatus::Rejected | ToolStatus::NotRun => {
            true
        }
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
    let mut text = format!("{} tool calls, {passed} passed", tools.len());
    for (number, word) in [
        (failed, "failed"),
        (rejected, "rejected"),
        (not_run, "not run"),
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
