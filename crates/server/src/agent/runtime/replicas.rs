//! Running as one of several replicas on a shared database (PostgreSQL). Nothing here runs on
//! SQLite, where one process owns the file and drives every task.
//!
//! - **One driver per task**: a runner takes the task's lease before it drives and gives it up
//!   when it stops (at a pause or the end); this replica renews its leases while it lives.
//!   A runner whose lease was taken over stops.
//! - **Takeover**: every replica sweeps for unfinished tasks whose lease lapsed (their replica
//!   died) and drives them as a restart would: a call that had started but not finished is
//!   reported to the model as interrupted, never run twice. Deadlines whose watcher died are
//!   expired the same way.
//! - **Live across replicas**: a commit on another replica wakes this one's followers of that
//!   task (they read the log, the source of truth), and a cancel there stops the runner here.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::runner::RunnerStart;
use super::{Result, Runtime};
use crate::store::LEASE;

/// How often a replica renews its leases (well within [`LEASE`]).
const RENEW_EVERY: Duration = Duration::from_secs(3);

/// How often a replica looks for tasks and deadlines nobody watches.
const SWEEP_EVERY: Duration = Duration::from_secs(2);

impl Runtime {
    /// Starts renewing, sweeping and listening, when the store is shared; otherwise nothing.
    pub(super) async fn start_replica(self: &Arc<Self>) -> Result<bool> {
        let Some(replica) = self.store.replica() else {
            return Ok(false);
        };
        tracing::info!(replica, "running as a replica on a shared database");
        if let Some(changes) = self.store.listen().await? {
            let runtime = self.clone();
            self.tracker
                .spawn(async move { runtime.follow_remote_changes(changes).await });
        }
        let runtime = self.clone();
        self.tracker.spawn(async move {
            let mut renew = tokio::time::interval(RENEW_EVERY);
            let mut sweep = tokio::time::interval(SWEEP_EVERY);
            loop {
                tokio::select! {
                    _ = runtime.shutdown.cancelled() => return,
                    _ = renew.tick() => runtime.renew_leases().await,
                    _ = sweep.tick() => runtime.sweep().await,
                }
            }
        });
        Ok(true)
    }

    /// Renews the leases of the tasks this replica drives; a runner whose lease lapsed (another
    /// replica may have taken its task over) stops.
    async fn renew_leases(&self) {
        let running: Vec<String> = match self.running.lock() {
            Ok(running) => running.keys().cloned().collect(),
            Err(_) => return,
        };
        let held = match self.store.renew_leases(&running, LEASE).await {
            Ok(held) => held,
            Err(err) => {
                tracing::warn!(error = %err, "could not renew the task leases");
                return;
            }
        };
        for task_id in running.iter().filter(|task_id| !held.contains(task_id)) {
            // Its runner may have just ended (then this does nothing); else it lost the task.
            if self.is_running(task_id) {
                tracing::warn!(task = %task_id, "this task's lease lapsed; stopping its runner");
                self.stop_runner(task_id);
            }
        }
    }

    /// Drives the tasks whose replica died, and expires the deadlines nobody watches.
    async fn sweep(self: &Arc<Self>) {
        match self.store.orphaned_tasks(LEASE).await {
            Ok(orphans) => {
                for task_id in orphans {
                    if self.is_running(&task_id) {
                        continue;
                    }
                    tracing::info!(task = %task_id, "taking over a task no live replica drives");
                    self.spawn_runner(
                        &task_id,
                        RunnerStart::Stored {
                            reply_message_id: None,
                        },
                    );
                }
            }
            Err(err) => tracing::warn!(error = %err, "could not look for orphaned tasks"),
        }
        // A deadline is watched by the replica that paused the batch; one overdue by more than
        // a lease has lost its watcher. Expiring is a compare-and-set, so a race is harmless.
        let overdue_before = chrono::Utc::now() - LEASE;
        match self.store.pending_deadlines().await {
            Ok(deadlines) => {
                for deadline in deadlines {
                    let overdue = chrono::DateTime::parse_from_rfc3339(&deadline.expires_at)
                        .is_ok_and(|at| at < overdue_before);
                    if overdue {
                        self.watch_deadline(&deadline.task_id, &deadline.expires_at);
                    }
                }
            }
            Err(err) => tracing::warn!(error = %err, "could not look for overdue deadlines"),
        }
    }

    fn is_running(&self, task_id: &str) -> bool {
        self.running
            .lock()
            .is_ok_and(|running| running.contains_key(task_id))
    }

    /// Wakes this replica's followers of each task another replica changed, and stops a runner
    /// here whose task was canceled there.
    async fn follow_remote_changes(self: Arc<Self>, mut changes: mpsc::Receiver<String>) {
        loop {
            let task_id = tokio::select! {
                _ = self.shutdown.cancelled() => return,
                change = changes.recv() => match change {
                    Some(task_id) => task_id,
                    None => return,
                },
            };
            self.log.hub.changed(&task_id);
            if self.is_running(&task_id) {
                if let Ok(Some(row)) = self.store.task(&task_id).await {
                    if row.state.is_terminal() {
                        self.stop_runner(&task_id);
                    }
                }
            }
        }
    }
}
