//! The rows of calls settled at once: calls asked for from outside that the gate allowed or
//! denied without asking anyone (`agent::runtime::intake`). They open no chat; each is one row,
//! written before the call runs, with its signed receipt ([`insert_settled`], once for both
//! backends). Each backend's `settled` reads them, over the SELECT and the mapping written once
//! here.

use serde_json::Value;

use super::columns::Columns;
use super::receipts::{self, ReceiptFacts, Sealer};
use super::rows::{json_text, json_value};
use super::write::{Param, Transaction};
use super::{CallRow, CallStatus, Channel, ReplayCall, Result, StoreError, Verdict};

/// One call the gate settled without asking anyone.
#[derive(Debug, Clone, PartialEq)]
pub struct SettledCallRow {
    pub id: String,
    pub user_id: String,
    /// The groups the gate saw the requester in.
    pub requester_groups: Vec<String>,
    pub agent: String,
    pub tool: String,
    pub source: String,
    pub args: Value,
    pub args_sha256: String,
    /// `Approve` (it ran, or was allowed) or `Deny`.
    pub verdict: Verdict,
    /// The gate's `hitl::Why` as JSON.
    pub why: Value,
    pub settled_at: String,
}

impl SettledCallRow {
    /// The row as a policy replay reads a chat's call: a call of its own, decided when it was
    /// settled.
    pub fn replay(&self) -> ReplayCall {
        let status = match self.verdict {
            Verdict::Deny => CallStatus::Denied,
            Verdict::Approve | Verdict::Cancel | Verdict::Expire => CallStatus::Finished,
        };
        ReplayCall {
            call: CallRow {
                task_id: self.id.clone(),
                call_id: self.id.clone(),
                position: 0,
                name: self.tool.clone(),
                source: self.source.clone(),
                args: self.args.clone(),
                args_sha256: self.args_sha256.clone(),
                batch_id: None,
                status,
                verdict: Some(self.verdict),
                reason: None,
                run_args: None,
                run_args_sha256: None,
                result: None,
                started_at: Some(self.settled_at.clone()),
                finished_at: None,
                why: Some(self.why.clone()),
            },
            user_id: self.user_id.clone(),
            agent: self.agent.clone(),
            requester_groups: self.requester_groups.clone(),
            subagent: false,
            at: self.settled_at.clone(),
        }
    }
}

pub(super) const SETTLED_INSERT: &str = "INSERT INTO settled_calls (id, user_id,
        requester_groups, agent, tool, source, args, args_sha256, verdict, why, settled_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

pub(super) const SETTLED_SELECT: &str = "SELECT id, user_id, requester_groups, agent, tool,
        source, args, args_sha256, verdict, why, settled_at
     FROM settled_calls";

/// The texts a row is written with, in [`SETTLED_INSERT`]'s order (JSON columns as text).
pub(super) struct SettledTexts {
    groups: String,
    args: String,
    why: String,
}

impl SettledTexts {
    pub(super) fn of(row: &SettledCallRow) -> Result<SettledTexts> {
        Ok(SettledTexts {
            groups: serde_json::to_string(&row.requester_groups)?,
            args: json_text(&row.args)?,
            why: json_text(&row.why)?,
        })
    }

    /// The parameters of [`SETTLED_INSERT`].
    pub(super) fn params<'a>(&'a self, row: &'a SettledCallRow) -> [Param<'a>; 11] {
        use Param::Text;
        [
            Text(&row.id),
            Text(&row.user_id),
            Text(&self.groups),
            Text(&row.agent),
            Text(&row.tool),
            Text(&row.source),
            Text(&self.args),
            Text(&row.args_sha256),
            Text(row.verdict.as_str()),
            Text(&self.why),
            Text(&row.settled_at),
        ]
    }
}

pub(super) fn settled_from_row(row: &impl Columns) -> Result<SettledCallRow> {
    let groups = row.text(2)?;
    Ok(SettledCallRow {
        id: row.text(0)?,
        user_id: row.text(1)?,
        requester_groups: serde_json::from_str(&groups)
            .map_err(|err| StoreError::Corrupt(format!("requester_groups: {err}")))?,
        agent: row.text(3)?,
        tool: row.text(4)?,
        source: row.text(5)?,
        args: json_value(&row.text(6)?)?,
        args_sha256: row.text(7)?,
        verdict: Verdict::parse(&row.text(8)?)?,
        why: json_value(&row.text(9)?)?,
        settled_at: row.text(10)?,
    })
}

/// Writes `row` and its receipt (signed by `seal`) inside the caller's transaction. A rule
/// that allowed or denied it is the `rule` channel; a policy, a grant or the tool's own
/// setting is `policy`.
pub(super) async fn insert_settled(
    tx: &mut impl Transaction,
    row: &SettledCallRow,
    seal: Option<&Sealer>,
) -> Result<()> {
    let texts = SettledTexts::of(row)?;
    tx.execute(SETTLED_INSERT, &texts.params(row)).await?;
    let channel = match row.why.get("by").and_then(Value::as_str) {
        Some("rule") => Channel::Rule,
        _ => Channel::Policy,
    };
    let summary = row
        .why
        .get("summary")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let fact = ReceiptFacts {
        task_id: None,
        call_id: row.id.clone(),
        tool: row.tool.clone(),
        args_sha256: row.args_sha256.clone(),
        verdict: row.verdict,
        decided_by: row.user_id.clone(),
        auth: None,
        channel,
        why: receipts::why(summary, &Value::Null, None, Some(&row.why)),
    };
    receipts::append(tx, seal, vec![fact], &row.settled_at).await
}
