//! What replicas share beyond rows: which one drives a task (a lease with an owner and an
//! expiry on the task's row, renewed while it runs and taken over once it lapses), and word of
//! a task's change to the others (NOTIFY in the writing transaction, so it is sent only if the
//! write commits; LISTEN on a connection of its own).

use sqlx::postgres::PgListener;
use sqlx::PgConnection;
use tokio::sync::mpsc;

use super::approvals::APPROVALS_CHANNEL;
use super::{Notice, Postgres, Result};

/// The channel replicas announce changed tasks on; the payload is `<replica> <task id>`.
pub(super) const CHANNEL: &str = "signoff_tasks";

/// The payload that tells the others `replica` changed `task_id`.
pub(super) fn notice(replica: &str, task_id: &str) -> String {
    format!("{replica} {task_id}")
}

/// Tells the other replicas that `task_id` changed, when the transaction commits.
pub(super) async fn announce(
    connection: &mut PgConnection,
    replica: &str,
    task_id: &str,
) -> Result<()> {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(notice(replica, task_id))
        .execute(&mut *connection)
        .await?;
    Ok(())
}

impl Postgres {
    /// This process's name among the replicas.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// Takes (or keeps) the lease of an unfinished task for `ttl_secs`: it succeeds when no
    /// replica holds it, this one does, or the holder's lease has lapsed.
    pub async fn acquire_lease(&self, task_id: &str, ttl_secs: i64) -> Result<bool> {
        let taken = sqlx::query(
            "UPDATE tasks SET lease_owner = $1, lease_until = now() + make_interval(secs => $2)
             WHERE id = $3
               AND (lease_owner IS NULL OR lease_owner = $1 OR lease_until < now())",
        )
        .bind(&self.replica)
        .bind(ttl_secs as f64)
        .bind(task_id)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(taken == 1)
    }

    /// Extends the leases of `running` (the tasks this replica drives) that it still holds;
    /// returns those. A lease that lapsed (given up, or taken over) is not renewed, nor is one
    /// whose runner has ended (it lapses, and the sweep finds its task if it is unfinished).
    /// `clock_timestamp()`, not the transaction's start: a renewal that waited for a row lock
    /// must not extend a lease given up meanwhile.
    pub async fn renew_leases(&self, running: &[String], ttl_secs: i64) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "UPDATE tasks SET lease_until = clock_timestamp() + make_interval(secs => $2)
             WHERE lease_owner = $1 AND id = ANY($3) AND lease_until >= clock_timestamp()
             RETURNING id",
        )
        .bind(&self.replica)
        .bind(ttl_secs as f64)
        .bind(running)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Gives up the lease of a task this replica no longer drives: it lapses now, so if the
    /// task is still unfinished (this replica is shutting down) another takes it at once.
    pub async fn release_lease(&self, task_id: &str) -> Result<()> {
        sqlx::query(
            "UPDATE tasks SET lease_until = now() - interval '1 second'
             WHERE id = $1 AND lease_owner = $2",
        )
        .bind(task_id)
        .bind(&self.replica)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Unfinished tasks no live replica drives: their lease lapsed, or nobody took one although
    /// the task last changed more than `grace_secs` ago (its driver died before taking it).
    pub async fn orphaned_tasks(&self, states: &[&str], grace_secs: i64) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "SELECT id FROM tasks
             WHERE state = ANY($1) AND NOT remote
               AND (lease_until < now()
                    OR (lease_owner IS NULL
                        AND updated_at < to_char((now() - make_interval(secs => $2)) AT TIME ZONE 'UTC',
                                                 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')))
             ORDER BY seq_no LIMIT 100",
        )
        .bind(states)
        .bind(grace_secs as f64)
        .fetch_all(&self.pool)
        .await?)
    }

    /// What other replicas change, as they commit: tasks, and whose approvals streams got an
    /// event. Nothing is lost for good if the listening connection drops (it reconnects;
    /// followers also poll the log, approvals streams read at each heartbeat).
    pub(in crate::store) async fn listen(&self) -> Result<mpsc::Receiver<Notice>> {
        let mut listener = PgListener::connect_with(&self.pool).await?;
        listener.listen_all([CHANNEL, APPROVALS_CHANNEL]).await?;
        let (sender, receiver) = mpsc::channel(1024);
        let replica = self.replica.clone();
        tokio::spawn(async move {
            loop {
                let notification = match listener.recv().await {
                    Ok(notification) => notification,
                    Err(err) => {
                        tracing::warn!(error = %err, "lost the database's change notifications; reconnecting");
                        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                        continue;
                    }
                };
                let Some((origin, about)) = notification.payload().split_once(' ') else {
                    continue;
                };
                if origin == replica {
                    continue;
                }
                let notice = if notification.channel() == APPROVALS_CHANNEL {
                    Notice::Approvals(about.to_owned())
                } else {
                    Notice::Task(about.to_owned())
                };
                if sender.send(notice).await.is_err() {
                    return;
                }
            }
        });
        Ok(receiver)
    }
}
