//! A decision's write on a pending batch, once for both backends over [`Transaction`]: the
//! compare-and-set that moves the batch on only while it still waits, the decision link it used,
//! the votes, each call's verdict, the audit row and each decided call's signed receipt, the
//! task's state and events, the approvals stream's event and the outbox. The loser of a race gets [`StoreError::Conflict`] and, its
//! transaction rolled back by the caller, changes nothing.

use super::columns::VOTE_INSERT;
use super::outbox::{insert_notifications, insert_pushes};
use super::receipts::{self, ReceiptFacts, Sealer};
use super::rows::json_text;
use super::write::{ApprovalEvent, Param, Transaction};
use super::{now, task_state_text, BatchState, CallStatus, DecisionWrite, Result, StoreError};
use super::{Written, LEASE};

/// Applies `decision` to its batch of `task_id` inside the caller's transaction; its receipts
/// are signed by `seal`.
pub(super) async fn apply_decision(
    tx: &mut impl Transaction,
    task_id: &str,
    decision: &DecisionWrite,
    seal: Option<&Sealer>,
) -> Result<Written> {
    let now = now();
    // Approvals short of a quorum leave the batch pending: the same statement checks that it
    // still is (its `decided_at` stays empty).
    let partial = decision.batch_state == BatchState::Pending;
    claim_batch(tx, task_id, decision, partial, &now).await?;
    if let Some(link) = &decision.uses_link {
        use_link(tx, link, decision.batch_id, &now).await?;
    }
    insert_votes(tx, task_id, decision, &now).await?;
    let mut facts = Vec::new();
    if !partial {
        facts = settle_calls(tx, task_id, decision).await?;
        insert_audit_row(tx, task_id, decision, &now).await?;
    }
    let last = move_task(tx, task_id, decision, partial, &now).await?;
    let first_seq = last - decision.events.len() as i64 + 1;
    tx.append_events(task_id, first_seq, &decision.events, &now)
        .await?;
    // The chain's head late, before only the approvals stream's lock (see `receipts`).
    receipts::append(tx, seal, facts, &now).await?;
    // The batch's approvers' streams hear how far it has come, or that it was decided.
    let event = match partial {
        true => ApprovalEvent::Progress {
            voter: &decision.user_id,
        },
        false => ApprovalEvent::Decided {
            outcome: decision.channel.as_str(),
            decided_by: &decision.user_id,
        },
    };
    let approvals_of = tx
        .record_approval_event(event, task_id, decision.batch_id, &now)
        .await?;
    if !decision.notifications.is_empty() {
        insert_notifications(
            tx,
            task_id,
            Some(decision.batch_id),
            &decision.notifications,
            &now,
        )
        .await?;
    }
    if decision.push {
        insert_pushes(tx, task_id, last, &now).await?;
    }
    Ok(Written {
        last_seq: last,
        approvals_of,
    })
}

/// The compare-and-set: the batch moves on only if it still waits. Of two replicas deciding at
/// once, the second waits for the first's row lock, then finds the batch no longer pending. The
/// state is a literal, not a parameter, so SQLite can use its partial indexes on pending batches
/// without preparing the statement again at every run.
async fn claim_batch(
    tx: &mut impl Transaction,
    task_id: &str,
    decision: &DecisionWrite,
    partial: bool,
    now: &str,
) -> Result<()> {
    use Param::*;
    let won = tx
        .execute(
            "UPDATE batches SET state = $1, decided_at = CASE WHEN $5 THEN NULL ELSE $2 END
             WHERE id = $3 AND task_id = $4 AND state = 'pending'",
            &[
                Text(decision.batch_state.as_str()),
                Text(now),
                Int(decision.batch_id),
                Text(task_id),
                Bool(partial),
            ],
        )
        .await?;
    if won != 1 {
        return Err(StoreError::Conflict("the batch was already decided"));
    }
    Ok(())
}

/// Marks the decision link `token_sha256` of batch `batch_id` used: a link already used,
/// expired or of another batch fails the whole decision.
async fn use_link(
    tx: &mut impl Transaction,
    token_sha256: &str,
    batch_id: i64,
    now: &str,
) -> Result<()> {
    let used = tx
        .execute(
            "UPDATE decision_links SET used_at = $1
             WHERE token_sha256 = $2 AND batch_id = $3 AND used_at IS NULL AND expires_at > $1",
            &[
                Param::Text(now),
                Param::Text(token_sha256),
                Param::Int(batch_id),
            ],
        )
        .await?;
    if used != 1 {
        return Err(StoreError::Conflict(
            "the decision link was already used or has expired",
        ));
    }
    Ok(())
}

/// Records the decision's votes (`call_votes`).
async fn insert_votes(
    tx: &mut impl Transaction,
    task_id: &str,
    decision: &DecisionWrite,
    now: &str,
) -> Result<()> {
    use Param::*;
    for vote in &decision.votes {
        let run_args = vote.run_args.as_ref().map(json_text).transpose()?;
        let eligible_by = json_text(&serde_json::json!(vote.eligible_by))?;
        tx.execute(
            VOTE_INSERT,
            &[
                Int(decision.batch_id),
                Text(task_id),
                Text(&vote.call_id),
                Text(&vote.user_id),
                OptionalText(vote.email.as_deref()),
                Text(vote.verdict.as_str()),
                OptionalText(vote.reason.as_deref()),
                OptionalText(run_args.as_deref()),
                Text(&vote.args_sha256),
                Text(&eligible_by),
                Text(vote.channel.as_str()),
                Text(now),
            ],
        )
        .await?;
    }
    Ok(())
}

/// Sets each held call of the batch to its verdict; a call no longer held is a conflict. What
/// each call's receipt says: the tool and the digest of the arguments that run (an edit's) or
/// were refused, read back from the same statement.
async fn settle_calls(
    tx: &mut impl Transaction,
    task_id: &str,
    decision: &DecisionWrite,
) -> Result<Vec<ReceiptFacts>> {
    use Param::*;
    let mut facts = Vec::with_capacity(decision.verdicts.len());
    for verdict in &decision.verdicts {
        let run_args = verdict.run_args.as_ref().map(json_text).transpose()?;
        let done = tx
            .optional_texts(
                "UPDATE calls SET status = $1, verdict = $2, reason = $3, run_args = $4,
                                  run_args_sha256 = $5
                 WHERE task_id = $6 AND call_id = $7 AND batch_id = $8 AND status = $9
                 RETURNING name, COALESCE(run_args_sha256, args_sha256)",
                &[
                    Text(verdict.status.as_str()),
                    Text(verdict.verdict.as_str()),
                    OptionalText(verdict.reason.as_deref()),
                    OptionalText(run_args.as_deref()),
                    OptionalText(verdict.run_args_sha256.as_deref()),
                    Text(task_id),
                    Text(&verdict.call_id),
                    Int(decision.batch_id),
                    Text(CallStatus::Held.as_str()),
                ],
            )
            .await?;
        let Some((tool, args_sha256)) = done else {
            return Err(StoreError::Conflict("a call of the batch is not held"));
        };
        facts.push(ReceiptFacts {
            task_id: Some(task_id.to_owned()),
            call_id: verdict.call_id.clone(),
            tool,
            args_sha256,
            verdict: verdict.verdict,
            decided_by: decision.user_id.clone(),
            auth: decision.decider_auth.clone(),
            channel: decision.channel,
            why: receipts::why(
                &decision.summary,
                &decision.decision,
                verdict.reason.as_deref(),
                None,
            ),
        });
    }
    Ok(facts)
}

/// The audit row of a decision that settled the batch.
async fn insert_audit_row(
    tx: &mut impl Transaction,
    task_id: &str,
    decision: &DecisionWrite,
    now: &str,
) -> Result<()> {
    use Param::*;
    tx.execute(
        "INSERT INTO decisions (batch_id, task_id, user_id, channel, decision, summary,
                                decided_at, decider_auth)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        &[
            Int(decision.batch_id),
            Text(task_id),
            Text(&decision.user_id),
            Text(decision.channel.as_str()),
            Text(&json_text(&decision.decision)?),
            Text(&decision.summary),
            Text(now),
            OptionalText(decision.decider_auth.as_deref()),
        ],
    )
    .await?;
    Ok(())
}

/// Moves the task on (its new state, unless the batch still waits) and says where its log now
/// ends. A task that goes on working is leased to this replica, whose runner takes it next:
/// another replica's sweep must not take it up meanwhile.
async fn move_task(
    tx: &mut impl Transaction,
    task_id: &str,
    decision: &DecisionWrite,
    partial: bool,
    now: &str,
) -> Result<i64> {
    use Param::*;
    let mut params = vec![Int(decision.events.len() as i64), Text(now), Text(task_id)];
    let mut sql = String::from("UPDATE tasks SET last_seq = last_seq + $1, updated_at = $2");
    if !partial {
        params.push(Text(task_state_text(decision.task_state)));
        sql.push_str(&format!(", state = ${}", params.len()));
    }
    let claim = (tx.lease_claim(LEASE))
        .filter(|_| !partial && decision.task_state == signoff_protocol::TaskState::Working)
        .map(|(claim, replica)| (claim, replica.to_owned()));
    if let Some((claim, replica)) = &claim {
        params.push(Text(replica));
        sql.push_str(", ");
        sql.push_str(&claim.replace("{owner}", &format!("${}", params.len())));
    }
    sql.push_str(" WHERE id = $3 RETURNING last_seq");
    tx.optional_int(&sql, &params)
        .await?
        .ok_or(StoreError::NotFound)
}
