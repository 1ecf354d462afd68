//! Hand-overs and ladder steps in PostgreSQL (see `store::steps`).

use sqlx::PgConnection;

use super::approvals::record_progress;
use super::tasks::{map_rows, PgTransaction};
use super::{Postgres, Result};
use crate::store::columns::batch_from_row;
use crate::store::outbox::insert_notifications;
use crate::store::rows::json_text;
use crate::store::steps::*;
use crate::store::{NewNotification, PendingBatchRow};

/// The steps of batch `batch_id`, oldest first.
pub(super) async fn batch_steps_of(
    connection: &mut PgConnection,
    batch_id: i64,
) -> Result<Vec<BatchStepRow>> {
    let rows = sqlx::query(&format!("{STEP_SELECT} WHERE batch_id = $1 ORDER BY id"))
        .bind(batch_id)
        .fetch_all(&mut *connection)
        .await?;
    map_rows(rows, step_from_row)
}

impl Postgres {
    pub async fn add_batch_step(
        &self,
        task_id: &str,
        batch_id: i64,
        step: BatchStep,
        from_deadline: Option<String>,
        notifications: Vec<NewNotification>,
    ) -> Result<(bool, Option<String>)> {
        let to = json_text(&serde_json::json!(step.to))?;
        let mut transaction = self.pool.begin().await?;
        if step.kind == BatchStepKind::Extend {
            let moved = sqlx::query(DEADLINE_UPDATE)
                .bind(batch_id)
                .bind(task_id)
                .bind(&step.expires_at)
                .bind(&from_deadline)
                .execute(&mut *transaction)
                .await?;
            if moved.rows_affected() == 0 {
                return Ok((false, None));
            }
        }
        let now = crate::store::now();
        let written = sqlx::query(STEP_INSERT)
            .bind(batch_id)
            .bind(task_id)
            .bind(step.kind.as_str())
            .bind(&step.by)
            .bind(&to)
            .bind(&step.note)
            .bind(&step.expires_at)
            .bind(&now)
            .bind(&from_deadline)
            .execute(&mut *transaction)
            .await?;
        if written.rows_affected() == 0 {
            return Ok((false, None));
        }
        if !notifications.is_empty() {
            let mut shared = PgTransaction {
                connection: &mut transaction,
                replica: &self.replica,
            };
            insert_notifications(&mut shared, task_id, Some(batch_id), &notifications, &now)
                .await?;
        }
        let by = step.by.as_deref().unwrap_or(LADDER);
        // Last before the commit: it takes the lock that orders the approval events.
        let approvals_of =
            record_progress(&mut transaction, &self.replica, task_id, batch_id, by, &now).await?;
        transaction.commit().await?;
        Ok((true, approvals_of))
    }

    pub async fn batch_steps(&self, task_id: &str) -> Result<Vec<BatchStepRow>> {
        let rows = sqlx::query(&format!("{STEP_SELECT} WHERE task_id = $1 ORDER BY id"))
            .bind(task_id)
            .fetch_all(&self.pool)
            .await?;
        map_rows(rows, step_from_row)
    }

    pub async fn pending_batches_handed_over(&self) -> Result<Vec<(PendingBatchRow, String)>> {
        let rows = sqlx::query(HANDED_OVER_SELECT)
            .fetch_all(&self.pool)
            .await?;
        map_rows(rows, |row| handed_over_from_row(row, batch_from_row(row)?))
    }
}
