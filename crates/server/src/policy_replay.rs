//! `signoff policy replay`: a candidate policy folder evaluated against the calls the store
//! audited, through the gate's one decision function, with the facts each call had then (its
//! person and their groups, its agent, its arguments, the time it was decided); what would have
//! gone otherwise, counted by tool and direction (allow → ask …), with examples
//! (docs/policies.md, Replaying the audit). Beside it, what the agents' reviewers said about
//! the calls people then decided (in shadow mode, all of their calls), against what the people
//! decided.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use signoff_protocol::hitl::{GateOutcome, Why, WhyKind, ASK_USER};

use crate::agent::cedar::{CallFacts, CedarOutcome, CedarPolicies, ToolFacts};
use crate::agent::decision::decide;
use crate::agent::Agent;
use crate::store::{ReplayCall, Verdict};

/// The longest argument text an example shows.
const EXAMPLE_ARGS_CHARS: usize = 120;

/// One call whose outcome would change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    pub at: String,
    pub task_id: String,
    pub call_id: String,
    pub user: String,
    /// The arguments, shortened.
    pub args: String,
    /// What decided it then, and what would decide it now.
    pub was: String,
    pub now: String,
}

/// The calls of one tool whose outcome would go from `from` to `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub count: usize,
    /// The first few, oldest first.
    pub examples: Vec<Example>,
}

/// What a replay found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replay {
    /// Calls replayed (each had a recorded outcome, an agent and a tool that still exist).
    pub replayed: usize,
    pub unchanged: usize,
    /// By (tool, from, to).
    pub changes: BTreeMap<(String, Outcome, Outcome), Change>,
    /// Calls not replayed, by why: no recorded outcome (made before policies, a subagent's
    /// call as its parent shows it, an unknown tool), or an agent or tool no longer configured.
    pub skipped: BTreeMap<&'static str, usize>,
    /// Calls a reviewer saw and a person then decided, by (what the reviewer said, what the
    /// person decided); a shadow verdict is marked `(shadow)`.
    pub reviews: BTreeMap<(String, &'static str), usize>,
}

/// A gate outcome, ordered and printed as people read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    Allow,
    Ask,
    Deny,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Allow => "allow",
            Outcome::Ask => "ask",
            Outcome::Deny => "deny",
        }
    }
}

impl From<GateOutcome> for Outcome {
    fn from(outcome: GateOutcome) -> Outcome {
        match outcome {
            GateOutcome::Allow => Outcome::Allow,
            GateOutcome::Ask => Outcome::Ask,
            GateOutcome::Deny => Outcome::Deny,
        }
    }
}

/// Why a call was not replayed.
pub const NO_RECORDED_OUTCOME: &str = "no recorded gate outcome";
pub const NO_AGENT: &str = "its agent is no longer configured";
pub const NO_TOOL: &str = "its tool is no longer configured";

/// Replays `calls` against `candidate` for `agents`, keeping up to `examples` examples of each
/// change.
pub fn replay(
    agents: &[Arc<Agent>],
    candidate: &CedarPolicies,
    calls: &[ReplayCall],
    examples: usize,
) -> Replay {
    let mut out = Replay::default();
    for recorded in calls {
        let Some(was) = recorded.call.why.as_ref().and_then(Why::from_value) else {
            *out.skipped.entry(NO_RECORDED_OUTCOME).or_default() += 1;
            continue;
        };
        if let Some(review) = &was.review {
            let said = match review.shadow {
                true => format!("{} (shadow)", review.outcome.as_str()),
                false => review.outcome.as_str().to_owned(),
            };
            // A live approval ran the call: no person decided it.
            if review.shadow || was.outcome != GateOutcome::Allow {
                let people = people_decided(recorded.call.verdict);
                *out.reviews.entry((said, people)).or_default() += 1;
            }
        }
        let Some(now) = decide_again(agents, candidate, recorded, &was, &mut out) else {
            continue;
        };
        out.replayed += 1;
        let (from, to) = (Outcome::from(was.outcome), Outcome::from(now.outcome));
        if from == to {
            out.unchanged += 1;
            continue;
        }
        let change = out
            .changes
            .entry((recorded.call.name.clone(), from, to))
            .or_insert(Change {
                count: 0,
                examples: Vec::new(),
            });
        change.count += 1;
        if change.examples.len() < examples {
            change.examples.push(Example {
                at: recorded.at.clone(),
                task_id: recorded.call.task_id.clone(),
                call_id: recorded.call.call_id.clone(),
                user: recorded.user_id.clone(),
                args: shortened(&recorded.call.args.to_string()),
                was: was.summary,
                now: now.summary,
            });
        }
    }
    out
}

/// What the candidate set decides about `recorded` with the facts it had then; `None` (and
/// counted as skipped) when its agent or tool is gone.
fn decide_again(
    agents: &[Arc<Agent>],
    candidate: &CedarPolicies,
    recorded: &ReplayCall,
    was: &Why,
    out: &mut Replay,
) -> Option<Why> {
    let Some(agent) = agents.iter().find(|agent| agent.key() == recorded.agent) else {
        *out.skipped.entry(NO_AGENT).or_default() += 1;
        return None;
    };
    let call = &recorded.call;
    let Some(tool) = agent.tools.defined(&call.name) else {
        *out.skipped.entry(NO_TOOL).or_default() += 1;
        return None;
    };
    let now = DateTime::parse_from_rfc3339(&recorded.at)
        .map(|at| at.with_timezone(&Utc))
        .unwrap_or_else(|_| Utc::now());
    // As the gate does: a question is never the policies' to decide.
    let cedar = if call.name == ASK_USER {
        CedarOutcome::NoOpinion
    } else {
        let facts = ToolFacts {
            name: tool.spec.name.clone(),
            source: tool.spec.source.clone(),
            hints: tool.spec.hints,
        };
        candidate.evaluate(&CallFacts {
            user: &recorded.user_id,
            groups: &recorded.requester_groups,
            tool: &facts,
            args: &call.args,
            agent: &recorded.agent,
            subagent: recorded.subagent,
            // A recorded call keeps no counts: a policy that reads them asks in a replay.
            counts: None,
            now,
        })
    };
    let rule = agent.approvals.rule_for(&call.name, &call.args);
    let decided = decide(&cedar, rule, tool.requires_approval, None);
    // A person's grant answered this call's ask then: it would answer the same ask again.
    if decided.grantable && was.by == WhyKind::Grant {
        return Some(was.clone());
    }
    Some(decided.why)
}

/// What a person's decision of a call came to, as the replay's report reads.
fn people_decided(verdict: Option<Verdict>) -> &'static str {
    match verdict {
        Some(Verdict::Approve) => "approved",
        Some(Verdict::Deny) => "rejected",
        Some(Verdict::Expire) => "expired",
        Some(Verdict::Cancel) => "canceled",
        None => "undecided",
    }
}

fn shortened(text: &str) -> String {
    if text.chars().count() <= EXAMPLE_ARGS_CHARS {
        return text.to_owned();
    }
    let mut short: String = text.chars().take(EXAMPLE_ARGS_CHARS).collect();
    short.push('…');
    short
}

impl Replay {
    /// How many outcomes would change.
    pub fn changed(&self) -> usize {
        self.changes.values().map(|change| change.count).sum()
    }

    /// The report `signoff policy replay` prints.
    pub fn report(&self, since: &str, candidate: &str) -> String {
        let mut text = format!(
            "Replayed {} calls decided since {since} against {candidate}: {} unchanged, {} would \
             change.\n",
            self.replayed,
            self.unchanged,
            self.changed()
        );
        for (why, count) in &self.skipped {
            text.push_str(&format!("Skipped {count} calls: {why}.\n"));
        }
        if !self.reviews.is_empty() {
            text.push_str("\nThe reviewer against the people who decided:\n");
            for ((said, people), count) in &self.reviews {
                text.push_str(&format!(
                    "  reviewer {said}, people {people}: {count} calls\n"
                ));
            }
        }
        for ((tool, from, to), change) in &self.changes {
            text.push_str(&format!(
                "\n{tool}: {} → {}: {} calls\n",
                from.as_str(),
                to.as_str(),
                change.count
            ));
            for example in &change.examples {
                text.push_str(&format!(
                    "  {} task {} call {} for {}: {}\n    was: {}\n    now: {}\n",
                    example.at,
                    example.task_id,
                    example.call_id,
                    example.user,
                    example.args,
                    example.was,
                    example.now
                ));
            }
        }
        text
    }
}
