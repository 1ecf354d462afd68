//! Approval deadlines: when a pending batch expires unanswered. The deadline is stored with the
//! batch (written by the commit that opens it), so a restart finds every one; expiring is the
//! decision compare-and-set (`Store::decide`), so it happens at most once.

use super::tasks::collect;
use super::{BatchRow, Deadline, Result, Sqlite};
use crate::store::columns::*;

impl Sqlite {
    /// Every pending batch with a deadline (to watch them again after a restart).
    pub async fn pending_deadlines(&self) -> Result<Vec<Deadline>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT task_id, id, expires_at FROM batches
                 WHERE state = 'pending' AND expires_at IS NOT NULL ORDER BY expires_at",
            )?;
            let rows = statement.query([])?;
            collect(rows, |row| deadline_from_row(row))
        })
    }

    /// The deadlines of these tasks' pending batches.
    pub async fn pending_deadlines_of(&self, task_ids: &[String]) -> Result<Vec<Deadline>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT task_id, id, expires_at FROM batches
                 WHERE task_id = ?1 AND state = 'pending' AND expires_at IS NOT NULL",
            )?;
            let mut out = Vec::new();
            for task_id in task_ids {
                let rows = statement.query([task_id])?;
                out.extend(collect(rows, |row| deadline_from_row(row))?);
            }
            Ok(out)
        })
    }

    /// A task's latest batch, whatever its state, to tell a late decision why it came too late.
    pub async fn last_batch(&self, task_id: &str) -> Result<Option<BatchRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{BATCH_SELECT} WHERE task_id = ?1 ORDER BY id DESC LIMIT 1"
            ))?;
            let rows = statement.query([task_id])?;
            Ok(collect(rows, |row| batch_from_row(row))?.pop())
        })
    }
}
