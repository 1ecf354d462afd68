//! Hand-overs and ladder steps in SQLite (see `store::steps`).

use rusqlite::{params, Connection};

use super::approvals::record_progress;
use super::tasks::{collect, run_now, SqliteTransaction};
use super::{Result, Sqlite};
use crate::store::columns::batch_from_row;
use crate::store::outbox::insert_notifications;
use crate::store::rows::json_text;
use crate::store::steps::*;
use crate::store::write::sqlite_dialect;
use crate::store::{NewNotification, PendingBatchRow};

/// The steps of batch `batch_id`, oldest first.
pub(super) fn batch_steps_of(connection: &Connection, batch_id: i64) -> Result<Vec<BatchStepRow>> {
    let mut statement =
        connection.prepare_cached(&format!("{STEP_SELECT} WHERE batch_id = ?1 ORDER BY id"))?;
    let rows = statement.query([batch_id])?;
    collect(rows, |row| step_from_row(row))
}

impl Sqlite {
    pub async fn add_batch_step(
        &self,
        task_id: &str,
        batch_id: i64,
        step: BatchStep,
        from_deadline: Option<String>,
        notifications: Vec<NewNotification>,
    ) -> Result<(bool, Option<String>)> {
        let task_id = task_id.to_owned();
        let to = json_text(&serde_json::json!(step.to))?;
        self.write(move |connection| {
            if step.kind == BatchStepKind::Extend {
                let moved = connection
                    .prepare_cached(&sqlite_dialect(DEADLINE_UPDATE))?
                    .execute(params![batch_id, task_id, step.expires_at, from_deadline])?;
                if moved == 0 {
                    return Ok((false, None));
                }
            }
            let now = crate::store::now();
            let written = connection
                .prepare_cached(&sqlite_dialect(STEP_INSERT))?
                .execute(params![
                    batch_id,
                    task_id,
                    step.kind.as_str(),
                    step.by,
                    to,
                    step.note,
                    step.expires_at,
                    now,
                    from_deadline,
                ])?;
            if written == 0 {
                return Ok((false, None));
            }
            if !notifications.is_empty() {
                run_now(insert_notifications(
                    &mut SqliteTransaction(connection),
                    &task_id,
                    Some(batch_id),
                    &notifications,
                    &now,
                ))?;
            }
            let by = step.by.as_deref().unwrap_or(LADDER);
            let approvals_of = record_progress(connection, &task_id, batch_id, by, &now)?;
            Ok((true, approvals_of))
        })
        .await
    }

    pub async fn batch_steps(&self, task_id: &str) -> Result<Vec<BatchStepRow>> {
        self.read(|connection| {
            let mut statement = connection
                .prepare_cached(&format!("{STEP_SELECT} WHERE task_id = ?1 ORDER BY id"))?;
            let rows = statement.query([task_id])?;
            collect(rows, |row| step_from_row(row))
        })
    }

    pub async fn pending_batches_handed_over(&self) -> Result<Vec<(PendingBatchRow, String)>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(HANDED_OVER_SELECT)?;
            let rows = statement.query([])?;
            collect(rows, |row| handed_over_from_row(row, batch_from_row(row)?))
        })
    }
}
