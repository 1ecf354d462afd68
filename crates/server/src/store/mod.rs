//! The store: sessions, tasks, each task's event log, pending batches with their deadlines,
//! decisions (the audit trail), tool-call execution records, people's "always allow"
//! policies, read-only share links of chats and feedback on answers. All SQL lives in this
//! folder; the runtime talks to [`Store`] only, and does not know which backend answers.
//!
//! Two backends, one behaviour: `sqlite` (the embedded default, a file in the data folder) and
//! `postgres` (a server that several replicas share). Each speaks its own dialect; the rows and
//! typed columns they read and write (`rows`) are shared, and the integration tests run against
//! both.
//!
//! It knows rows, typed columns and JSON values, nothing of HTTP and nothing of A2A versions:
//! the agent layer hands it events already encoded.

mod approvals;
mod columns;
mod logins;
mod postgres;
mod rows;
mod sharing;
mod sqlite;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use signoff_protocol::TaskState;

pub use approvals::{ApprovalEventKind, ApprovalEventRow, WaitingBatch, OUTCOME_DELETED};

use approvals::ApprovalWakes;
pub use logins::{LoginAttemptRow, LoginRow};
pub use rows::*;
pub use sharing::{FeedbackRow, ShareRow};

use postgres::Postgres;
use sqlite::Sqlite;

/// What can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Db(#[from] rusqlite::Error),
    #[error("database error: {0}")]
    Postgres(#[from] sqlx::Error),
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A row holds what this version cannot read (a state it does not know, JSON that is not).
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// A compare-and-set lost: the row was not in the expected state any more.
    #[error("conflict: {0}")]
    Conflict(&'static str),
    #[error("not found")]
    NotFound,
    /// A step that would complete its task found messages waiting for it (see
    /// [`Commit::unless_queued`]); nothing was written.
    #[error("messages wait for the task")]
    MessagesWaiting,
    /// A group of writes did not commit; nothing of it was kept.
    #[error("commit failed: {0}")]
    Commit(String),
    #[error("the store is closed")]
    Closed,
    /// The database URL names no backend this build knows.
    #[error("unsupported database URL {0:?} (expected postgres://… or postgresql://…)")]
    UnsupportedUrl(String),
    /// The database is not at this binary's schema version (migrations missing, or a newer
    /// binary migrated it further).
    #[error("the database schema is at version {applied}; this binary needs {latest}")]
    Schema { applied: i64, latest: i64 },
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The current time as RFC 3339 with milliseconds, UTC (`2026-11-21T10:00:00.000Z`).
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Where the data lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Database {
    /// `signoff.db` in this folder.
    Sqlite(std::path::PathBuf),
    /// A PostgreSQL server (`postgres://user:password@host:port/database`).
    Postgres(String),
}

impl Database {
    /// The database a URL names (`postgres://…`), or SQLite in `data_dir` when there is none.
    pub fn from_url(url: Option<&str>, data_dir: &Path) -> Result<Database> {
        match url.map(str::trim).filter(|url| !url.is_empty()) {
            None => Ok(Database::Sqlite(data_dir.to_owned())),
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Ok(Database::Postgres(url.to_owned()))
            }
            Some(url) => Err(StoreError::UnsupportedUrl(redact(url))),
        }
    }
}

/// A URL with its password (if any) replaced, for errors and logs.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

/// How long a task's lease lasts without renewal: a dead replica's tasks wait this long at most
/// (plus a sweep) before another replica takes them over.
pub const LEASE: Duration = Duration::from_secs(10);

/// Whole seconds, at least one.
fn seconds(duration: Duration) -> i64 {
    duration.as_secs().max(1) as i64
}

#[derive(Clone)]
pub struct Store {
    backend: Arc<Backend>,
    /// The open approvals streams' wake signals, one per user: each signals after a write of
    /// an approval event of its user, here or (heard through `listen`) on another replica.
    approval_wakes: Arc<ApprovalWakes>,
}

/// What a backend's write that may add an approval event hands back: the task's last event
/// sequence number, and the user whose approvals stream got an event, if one was written.
struct Written {
    last_seq: i64,
    approvals_of: Option<String>,
}

/// A change another replica committed, as `listen` hears it.
enum Notice {
    /// A task changed.
    Task(String),
    /// An approval event was written for the user with this [`approvals::user_digest`].
    Approvals(String),
}

enum Backend {
    Sqlite(Sqlite),
    Postgres(Postgres),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

/// Calls the same method of whichever backend this store has.
macro_rules! on_backend {
    ($store:expr, $backend:ident => $call:expr) => {
        match &*$store.backend {
            Backend::Sqlite($backend) => $call,
            Backend::Postgres($backend) => $call,
        }
    };
}

impl Store {
    /// Opens the database (creating the SQLite file if needed) and runs the migrations, so a
    /// new binary upgrades an old database at start and nobody runs a separate migration step.
    pub async fn open(database: &Database) -> Result<Store> {
        let backend = match database {
            Database::Sqlite(data_dir) => Backend::Sqlite(Sqlite::open(data_dir).await?),
            Database::Postgres(url) => Backend::Postgres(Postgres::open(url).await?),
        };
        Ok(Store {
            backend: Arc::new(backend),
            approval_wakes: Arc::new(ApprovalWakes::default()),
        })
    }

    /// Finishes the queued writes and closes the store (later writes get [`StoreError::Closed`]).
    pub async fn close(&self) {
        on_backend!(self, backend => backend.close().await)
    }

    /// Whether the store can serve: a read answers, and the schema is at this binary's version.
    /// For readiness checks (`GET /readyz`): cheap enough to run on every probe.
    pub async fn check_ready(&self) -> Result<()> {
        on_backend!(self, backend => backend.check_ready().await)
    }

    // Replicas: PostgreSQL only. One process owns an SQLite file and drives all its tasks, so
    // there it holds every lease and hears of no other writer.

    /// This process's name among the replicas that share the database; `None` on SQLite.
    pub fn replica(&self) -> Option<&str> {
        match &*self.backend {
            Backend::Sqlite(_) => None,
            Backend::Postgres(backend) => Some(backend.replica()),
        }
    }

    /// Takes (or keeps) the lease of a task for `ttl`: whether this replica may drive it now.
    pub async fn acquire_lease(&self, task_id: &str, ttl: Duration) -> Result<bool> {
        match &*self.backend {
            Backend::Sqlite(_) => Ok(true),
            Backend::Postgres(backend) => backend.acquire_lease(task_id, seconds(ttl)).await,
        }
    }

    /// Extends by `ttl` the leases this replica holds of `running`, the tasks it drives; the
    /// tasks it still holds.
    pub async fn renew_leases(&self, running: &[String], ttl: Duration) -> Result<Vec<String>> {
        match &*self.backend {
            Backend::Sqlite(_) => Ok(running.to_vec()),
            Backend::Postgres(backend) => backend.renew_leases(running, seconds(ttl)).await,
        }
    }

    /// Gives up the lease of a task this replica no longer drives.
    pub async fn release_lease(&self, task_id: &str) -> Result<()> {
        match &*self.backend {
            Backend::Sqlite(_) => Ok(()),
            Backend::Postgres(backend) => backend.release_lease(task_id).await,
        }
    }

    /// Unfinished tasks no live replica drives (a lapsed lease, or none taken for `grace`).
    pub async fn orphaned_tasks(&self, grace: Duration) -> Result<Vec<String>> {
        match &*self.backend {
            Backend::Sqlite(_) => Ok(Vec::new()),
            Backend::Postgres(backend) => {
                let states = [TaskState::Submitted, TaskState::Working].map(task_state_text);
                backend.orphaned_tasks(&states, seconds(grace)).await
            }
        }
    }

    /// The ids of tasks that other replicas change, as they commit; `None` on SQLite. Their
    /// approval events wake the streams of the user each is for, as local ones do.
    pub async fn listen(&self) -> Result<Option<tokio::sync::mpsc::Receiver<String>>> {
        match &*self.backend {
            Backend::Sqlite(_) => Ok(None),
            Backend::Postgres(backend) => {
                let mut changes = backend.listen().await?;
                let (sender, receiver) = tokio::sync::mpsc::channel(1024);
                let wakes = self.approval_wakes.clone();
                tokio::spawn(async move {
                    while let Some(notice) = changes.recv().await {
                        match notice {
                            Notice::Approvals(digest) => wakes.wake_digest(&digest),
                            Notice::Task(task_id) => {
                                if sender.send(task_id).await.is_err() {
                                    return;
                                }
                            }
                        }
                    }
                });
                Ok(Some(receiver))
            }
        }
    }

    // The approvals stream (docs/rest.md, Approvals stream).

    /// The wake signal of one more approvals stream of `user_id`: it changes after each write
    /// of an approval event of that user (see [`Store::approval_events`]), and of no other.
    /// `None` when the user already has `at_most` streams open (each holds its signal).
    pub fn approval_wakes(
        &self,
        user_id: &str,
        at_most: usize,
    ) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.approval_wakes.subscribe(user_id, at_most)
    }

    /// After a write: wakes the streams of the user it wrote an approval event for, if any.
    fn approvals_written(&self, user_id: Option<&str>) {
        if let Some(user_id) = user_id {
            self.approval_wakes.wake(user_id);
        }
    }

    /// The user's approval events after id `after`, in order, at most `limit`.
    pub async fn approval_events(
        &self,
        user_id: &str,
        after: i64,
        limit: i64,
    ) -> Result<Vec<ApprovalEventRow>> {
        on_backend!(self, backend => backend.approval_events(user_id, after, limit).await)
    }

    /// Where a new stream starts: the last event id of all (its horizon), and the `pending`
    /// events (at or before it) of the user's batches that still wait, in order.
    pub async fn waiting_approval_events(
        &self,
        user_id: &str,
    ) -> Result<(i64, Vec<ApprovalEventRow>)> {
        on_backend!(self, backend => backend.waiting_approval_events(user_id).await)
    }

    // Sessions.

    pub async fn session(&self, id: &str) -> Result<Option<SessionRow>> {
        on_backend!(self, backend => backend.session(id).await)
    }

    /// The user's sessions, most recently active first.
    pub async fn sessions(&self, user_id: &str) -> Result<Vec<SessionRow>> {
        on_backend!(self, backend => backend.sessions(user_id).await)
    }

    /// Deletes a session with its tasks, events, batches, records and chat policies.
    pub async fn delete_session(&self, id: &str) -> Result<bool> {
        let (deleted, approvals_of) =
            on_backend!(self, backend => backend.delete_session(id).await)?;
        self.approvals_written(approvals_of.as_deref());
        Ok(deleted)
    }

    // Tasks and their event logs.

    /// Creates a task and writes its first events, creating its session (titled `title`) if
    /// this is the session's first task; says whether it did. A session that exists must be
    /// the same user's and agent's, else [`StoreError::Conflict`].
    pub async fn create_task(
        &self,
        task: &TaskRow,
        title: &str,
        events: Vec<NewEvent>,
    ) -> Result<bool> {
        on_backend!(self, backend => backend.create_task(task, title, events).await)
    }

    /// [`Store::create_task`] for a task of a chat relayed to a remote agent: marked remote, so
    /// no runner of ours resumes it (it is left out of [`Store::unfinished_tasks`] and
    /// [`Store::orphaned_tasks`]).
    pub async fn create_relayed_task(
        &self,
        task: &TaskRow,
        title: &str,
        events: Vec<NewEvent>,
    ) -> Result<bool> {
        on_backend!(self, backend => backend.create_relayed_task(task, title, events).await)
    }

    /// Whether the task exists and is a relayed one (a remote agent drives it).
    pub async fn is_relayed(&self, task_id: &str) -> Result<bool> {
        on_backend!(self, backend => backend.is_relayed(task_id).await)
    }

    pub async fn task(&self, id: &str) -> Result<Option<TaskRow>> {
        on_backend!(self, backend => backend.task(id).await)
    }

    /// A stored task as its runner takes it up (see [`RunnerView`]), or `None` if it is gone.
    pub async fn runner_view(&self, id: &str) -> Result<Option<RunnerView>> {
        on_backend!(self, backend => backend.runner_view(id).await)
    }

    /// The tasks of a session, in the order they were created.
    pub async fn session_tasks(&self, context_id: &str) -> Result<Vec<TaskRow>> {
        on_backend!(self, backend => backend.session_tasks(context_id).await)
    }

    /// A page of a user's tasks, newest first, optionally one session's or one state's; and
    /// how many there are in all.
    pub async fn list_tasks(
        &self,
        user_id: &str,
        context_id: Option<&str>,
        state: Option<TaskState>,
        offset: i64,
        limit: i64,
    ) -> Result<(Vec<TaskRow>, i64)> {
        on_backend!(self, backend => {
            backend.list_tasks(user_id, context_id, state, offset, limit).await
        })
    }

    /// Tasks left running or submitted by a previous process (to resume at start).
    pub async fn unfinished_tasks(&self) -> Result<Vec<TaskRow>> {
        on_backend!(self, backend => backend.unfinished_tasks().await)
    }

    /// The events of a task with `after < seq <= upto`, in order, at most `limit`.
    pub async fn events(
        &self,
        task_id: &str,
        after: i64,
        upto: Option<i64>,
        limit: i64,
    ) -> Result<Vec<EventRow>> {
        on_backend!(self, backend => backend.events(task_id, after, upto, limit).await)
    }

    /// Applies one [`Commit`] atomically; returns the task's last event sequence number.
    pub async fn commit(&self, task_id: &str, commit: Commit) -> Result<i64> {
        let written = on_backend!(self, backend => backend.commit(task_id, commit).await)?;
        self.approvals_written(written.approvals_of.as_deref());
        Ok(written.last_seq)
    }

    /// Queues `message` (JSON) for the working task `task_id`; `false` when the task is not
    /// working (it ended, or waits for a decision), and nothing is queued.
    pub async fn queue_message(&self, task_id: &str, message: String) -> Result<bool> {
        on_backend!(self, backend => backend.queue_message(task_id, message).await)
    }

    /// The messages waiting in a task's queue, oldest first.
    pub async fn queued_messages(&self, task_id: &str) -> Result<Vec<QueuedMessage>> {
        on_backend!(self, backend => backend.queued_messages(task_id).await)
    }

    // Batches, decisions and call records.

    /// The task's pending batch, if it has one.
    pub async fn pending_batch(&self, task_id: &str) -> Result<Option<BatchRow>> {
        on_backend!(self, backend => backend.pending_batch(task_id).await)
    }

    /// A decision made inside the write that applies it: `plan` gets the task (if it exists)
    /// and its pending batch (if any) as the write sees them, and returns what to write (or
    /// nothing) and what the caller wants back, or why the message is refused. What it returns
    /// is then applied as [`Store::decide`] does. So the checks and the compare-and-set see the
    /// same moment.
    ///
    /// `plan` may run twice (a replayed group commit): it must only compute. The outer result
    /// is the store's, the inner one `plan`'s refusal; the sequence number is the last event
    /// written.
    pub async fn decide_planned<X, E, P>(
        &self,
        task_id: &str,
        plan: P,
    ) -> Result<std::result::Result<(Option<i64>, X), E>>
    where
        X: Send + 'static,
        E: Send + 'static,
        P: FnMut(
                Option<&TaskRow>,
                Option<&BatchRow>,
            ) -> std::result::Result<(Option<DecisionWrite>, X), E>
            + Send
            + 'static,
    {
        let outcome = on_backend!(self, backend => backend.decide_planned(task_id, plan).await)?;
        Ok(outcome.map(|(written, back)| {
            let written = written.map(|written| {
                self.approvals_written(written.approvals_of.as_deref());
                written.last_seq
            });
            (written, back)
        }))
    }

    /// How many batches wait for a decision, across every user (the pending approvals gauge).
    pub async fn count_pending_batches(&self) -> Result<i64> {
        on_backend!(self, backend => backend.count_pending_batches().await)
    }

    /// Every pending batch of a user's tasks, oldest first, in one query (a team may have
    /// thousands paused). A local subagent's batch is not one of them: its calls wait nested
    /// in its parent's batch.
    pub async fn pending_batches(&self, user_id: &str) -> Result<Vec<PendingBatchRow>> {
        on_backend!(self, backend => backend.pending_batches(user_id).await)
    }

    /// Decides (or cancels) a pending batch: ONE transaction that moves it from pending to
    /// `batch_state` only if it is still pending, records every call's verdict and the audit
    /// row, sets the task's state and appends the events. The loser of a race gets
    /// [`StoreError::Conflict`] and nothing changes.
    pub async fn decide(&self, task_id: &str, decision: DecisionWrite) -> Result<i64> {
        let written = on_backend!(self, backend => backend.decide(task_id, decision).await)?;
        self.approvals_written(written.approvals_of.as_deref());
        Ok(written.last_seq)
    }

    /// The calls of a task, in the order the model asked for them.
    pub async fn calls(&self, task_id: &str) -> Result<Vec<CallRow>> {
        on_backend!(self, backend => backend.calls(task_id).await)
    }

    /// The audit rows of one task, oldest first.
    pub async fn task_decisions(&self, task_id: &str) -> Result<Vec<DecisionRow>> {
        on_backend!(self, backend => backend.task_decisions(task_id).await)
    }

    /// A user's most recent decisions, newest first.
    pub async fn recent_decisions(&self, user_id: &str, limit: i64) -> Result<Vec<DecisionRow>> {
        on_backend!(self, backend => backend.recent_decisions(user_id, limit).await)
    }

    // Subagent tasks.

    /// Records the task an agent-tool call started on a subagent; a call starts one at most
    /// ([`StoreError::Conflict`] for a second). A local subagent's `chat` (its session, with no
    /// task yet) is created in the same transaction.
    pub async fn insert_subagent(&self, link: SubagentLink, chat: Option<ChildChat>) -> Result<()> {
        on_backend!(self, backend => backend.insert_subagent(link, chat).await)
    }

    /// The subagent tasks a parent task started, oldest first.
    pub async fn subagents_of(&self, parent_task_id: &str) -> Result<Vec<SubagentLink>> {
        on_backend!(self, backend => backend.subagents_of(parent_task_id).await)
    }

    /// The link that made a local task a subagent's task, if one did.
    pub async fn subagent_parent(&self, child_task_id: &str) -> Result<Option<SubagentLink>> {
        on_backend!(self, backend => backend.subagent_parent(child_task_id).await)
    }

    // Deadlines.

    /// Every pending batch with a deadline (to watch them again after a restart).
    pub async fn pending_deadlines(&self) -> Result<Vec<Deadline>> {
        on_backend!(self, backend => backend.pending_deadlines().await)
    }

    /// The deadline of a task's pending batch, if it has one.
    pub async fn pending_deadline(&self, task_id: &str) -> Result<Option<Deadline>> {
        Ok(self
            .pending_deadlines_of(&[task_id.to_owned()])
            .await?
            .into_iter()
            .next())
    }

    /// The deadlines of these tasks' pending batches.
    pub async fn pending_deadlines_of(&self, task_ids: &[String]) -> Result<Vec<Deadline>> {
        on_backend!(self, backend => backend.pending_deadlines_of(task_ids).await)
    }

    /// The state and deadline of a task's latest batch, to tell a late decision why it came
    /// too late.
    pub async fn last_batch(&self, task_id: &str) -> Result<Option<(BatchState, Option<String>)>> {
        on_backend!(self, backend => backend.last_batch(task_id).await)
    }

    // Policies.

    /// Stores a new policy unless its user already has `cap` policies in force or its chat
    /// (for a chat policy) is gone, atomically: concurrent creations cannot pass the cap, and a
    /// chat deleted meanwhile takes no policy with it into limbo.
    pub async fn insert_policy(&self, policy: PolicyRow, cap: usize) -> Result<PolicyInsert> {
        on_backend!(self, backend => backend.insert_policy(policy, cap).await)
    }

    /// A user's policies in force, oldest first.
    pub async fn policies(&self, user_id: &str) -> Result<Vec<PolicyRow>> {
        on_backend!(self, backend => backend.policies(user_id).await)
    }

    /// The policies in force that may approve a call of `agent` in chat `context_id` for
    /// `user_id`: the agent's, and the chat's. Read for every call, so a revoke counts at once.
    pub async fn applicable_policies(
        &self,
        user_id: &str,
        agent: &str,
        context_id: &str,
    ) -> Result<Vec<PolicyRow>> {
        on_backend!(self, backend => backend.applicable_policies(user_id, agent, context_id).await)
    }

    /// Revokes `user_id`'s policy `id`; whether it was in force.
    pub async fn revoke_policy(&self, user_id: &str, id: &str, now: &str) -> Result<bool> {
        on_backend!(self, backend => backend.revoke_policy(user_id, id, now).await)
    }

    // Share links and feedback.

    /// Stores a new share link.
    pub async fn insert_share(&self, share: ShareRow) -> Result<()> {
        on_backend!(self, backend => backend.insert_share(share).await)
    }

    /// The live (not revoked) share links of a chat, oldest first.
    pub async fn shares(&self, context_id: &str) -> Result<Vec<ShareRow>> {
        on_backend!(self, backend => backend.shares(context_id).await)
    }

    /// The live share link whose token hashes to `token_sha256`, if there is one.
    pub async fn live_share(&self, token_sha256: &str) -> Result<Option<ShareRow>> {
        on_backend!(self, backend => backend.live_share(token_sha256).await)
    }

    /// Revokes the share link `id` of chat `context_id`; whether it was live.
    pub async fn revoke_share(&self, context_id: &str, id: &str, now: &str) -> Result<bool> {
        on_backend!(self, backend => backend.revoke_share(context_id, id, now).await)
    }

    /// Stores a rating of an answer.
    pub async fn insert_feedback(&self, feedback: FeedbackRow) -> Result<()> {
        on_backend!(self, backend => backend.insert_feedback(feedback).await)
    }

    /// A user's feedback, oldest first.
    pub async fn user_feedback(&self, user_id: &str) -> Result<Vec<FeedbackRow>> {
        on_backend!(self, backend => backend.user_feedback(user_id).await)
    }

    /// The feedback given in one chat, oldest first.
    pub async fn context_feedback(&self, context_id: &str) -> Result<Vec<FeedbackRow>> {
        on_backend!(self, backend => backend.context_feedback(context_id).await)
    }

    // Browser sign-ins (`--auth oidc`), in the store so that every replica knows them and they
    // outlive a restart.

    /// Stores a signed-in session, or replaces the one with the same id (a refresh).
    pub async fn put_login(&self, login: LoginRow) -> Result<()> {
        on_backend!(self, backend => backend.put_login(login).await)
    }

    /// The session whose cookie hashes to `id_sha256`, if there is one.
    pub async fn login(&self, id_sha256: &str) -> Result<Option<LoginRow>> {
        on_backend!(self, backend => backend.login(id_sha256).await)
    }

    /// Ends a session; whether there was one.
    pub async fn delete_login(&self, id_sha256: &str) -> Result<bool> {
        on_backend!(self, backend => backend.delete_login(id_sha256).await)
    }

    /// Stores a sign-in on its way through the provider.
    pub async fn put_login_attempt(&self, attempt: LoginAttemptRow) -> Result<()> {
        on_backend!(self, backend => backend.put_login_attempt(attempt).await)
    }

    /// Takes the sign-in whose `state` hashes to `state_sha256`: only the first caller gets it.
    pub async fn take_login_attempt(&self, state_sha256: &str) -> Result<Option<LoginAttemptRow>> {
        on_backend!(self, backend => backend.take_login_attempt(state_sha256).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_url_picks_the_backend_and_hides_its_password_in_errors() {
        let dir = Path::new("/data");
        assert_eq!(
            Database::from_url(None, dir).unwrap(),
            Database::Sqlite(dir.to_owned())
        );
        assert_eq!(
            Database::from_url(Some(" "), dir).unwrap(),
            Database::Sqlite(dir.to_owned())
        );
        assert_eq!(
            Database::from_url(Some("postgresql://u@h/db"), dir).unwrap(),
            Database::Postgres("postgresql://u@h/db".into())
        );
        let err = Database::from_url(Some("mysql://me:secret@host/db"), dir).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unsupported database URL \"mysql://me:***@host/db\" (expected postgres://… or postgresql://…)"
        );
    }
}
