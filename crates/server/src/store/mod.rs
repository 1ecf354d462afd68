//! The store: sessions, tasks, each task's event log, pending batches with their deadlines,
//! decisions (the audit trail), tool-call execution records, people's "always allow"
//! policies, read-only share links of chats and feedback on answers, sign-ins and the directory
//! of people they fill. All SQL lives in this folder; the runtime talks to [`Store`] only, and
//! does not know which backend answers.
//!
//! Two backends, one behaviour: `sqlite` (the embedded default, a file in the data folder) and
//! `postgres` (a server that several replicas share). What must not diverge is written once and
//! shared: the rows and typed columns (`rows`), each table's SELECT with the mapping of its row
//! and the task's INSERT with its values (`columns`, over a one-method-per-type `Columns`
//! reader), and the task writes, a task's creation and the commit of a step (`write`). The
//! commit is generic over `write::Transaction`, a small trait each backend implements: run a
//! statement written with `$1` parameters (SQLite's side spells them `?1`), read a value back,
//! and the three places where the dialects differ (PostgreSQL appends a step's events in one
//! statement and notifies the other replicas of a pending approval; it also fences a runner's
//! step on the task's lease, which SQLite, one process, does not need). SQLite's transaction
//! answers synchronously on its writer's thread, so it drives the shared async code to its end
//! in one poll. A trait rather than `sqlx::Any` or generics over `sqlx::Database`: the SQLite
//! backend is rusqlite with its own group-committing writer, not sqlx. PostgreSQL keeps one path
//! of its own, the plain step (events and state in one statement, no transaction); the store's
//! contract tests (`tests/api/store_contract.rs`) run every commit path on both backends.
//!
//! [`Store`] holds one backend and dispatches by `match` (`on_backend!`); the methods a backend
//! answers alone are declared by signature in one `forward!` list, the others written out.
//!
//! It knows rows, typed columns and JSON values and nothing of HTTP; of A2A it knows only the
//! version its event log and state column are written in (`EVENT_LOG_VERSION`): the agent layer
//! hands it events already encoded.

mod approvals;
mod batch_write;
mod columns;
mod links;
mod logins;
mod outbox;
mod people;
mod pins;
mod postgres;
mod push;
mod receipts;
mod rows;
mod settled;
mod sharing;
mod slack;
mod sqlite;
mod steps;
mod write;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use signoff_protocol::TaskState;

pub use approvals::{ApprovalEventKind, ApprovalEventRow, WaitingBatch, OUTCOME_DELETED};

use approvals::ApprovalWakes;
pub use links::DecisionLinkRow;
pub use logins::LoginRow;
pub use outbox::{
    now_ms, AttemptFailed, NewNotification, NotificationKind, NotificationRow, OutboxDepth,
    PUSH_CHANNEL,
};
pub use people::PersonRow;
pub use pins::{ToolPinRow, FIRST_USE};
pub use push::{PushConfigRow, PushPut};
pub use receipts::{sha256_hex, ReceiptKeyRow, ReceiptRow, Seal};
pub use rows::*;
pub use settled::SettledCallRow;
pub use sharing::{FeedbackRow, ShareRow};
pub use slack::SlackMessageRow;
pub use steps::{handed_to, BatchStep, BatchStepKind, BatchStepRow, Handed};

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
    /// What signs the receipts of decisions (see `receipts`), once the server has its key.
    seal: receipts::SealSlot,
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

/// Declares methods of [`Store`] that the backend answers alone: each hands its arguments, in
/// order, to the backend's method of the same name and returns its answer. The methods that
/// add something of their own (the approvals streams' wakes, the leases SQLite does not need, a
/// generic plan) are written out in full above. One invocation per concern (sessions, tasks,
/// batches, …), each a plain list of signatures.
macro_rules! forward {
    ($($(#[$doc:meta])* pub async fn $name:ident(&self $(, $arg:ident: $ty:ty)* $(,)?) $(-> $ret:ty)?;)+) => {
        impl Store {
            $(
                $(#[$doc])*
                pub async fn $name(&self, $($arg: $ty),*) $(-> $ret)? {
                    on_backend!(self, backend => backend.$name($($arg),*).await)
                }
            )+
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
            seal: receipts::SealSlot::default(),
        })
    }

    /// Signs every receipt written from now on with `seal` (the server's receipt key).
    pub fn seal_receipts(&self, seal: Arc<dyn Seal>) {
        self.seal.set(seal);
    }

    /// Writes a call settled at once, with its receipt.
    pub async fn insert_settled_call(&self, row: SettledCallRow) -> Result<()> {
        let seal = self.seal.get();
        on_backend!(self, backend => backend.insert_settled_call(row, seal).await)
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

    /// A signal that changes after every approval event of any user, here or (heard through
    /// `listen`) on another replica: what a stream of batches routed to approvers follows.
    pub fn routed_approval_wakes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.approval_wakes.routed()
    }

    /// After a write: wakes the streams of the user it wrote an approval event for, if any.
    fn approvals_written(&self, user_id: Option<&str>) {
        if let Some(user_id) = user_id {
            self.approval_wakes.wake(user_id);
        }
    }

    // Writes that may write an approval event, so wake its user's streams.

    /// Deletes a session with its tasks, events, batches, records and chat policies.
    pub async fn delete_session(&self, id: &str) -> Result<bool> {
        let (deleted, approvals_of) =
            on_backend!(self, backend => backend.delete_session(id).await)?;
        self.approvals_written(approvals_of.as_deref());
        Ok(deleted)
    }

    /// Applies one [`Commit`] atomically; returns the task's last event sequence number.
    pub async fn commit(&self, task_id: &str, commit: Commit) -> Result<i64> {
        let seal = self.seal.get();
        let written = on_backend!(self, backend => backend.commit(task_id, commit, seal).await)?;
        self.approvals_written(written.approvals_of.as_deref());
        Ok(written.last_seq)
    }

    /// Writes a hand-over or ladder step on pending batch `batch_id` of the task, with its
    /// `notifications` and an approval event (the batch's approvers' streams send it again) in
    /// the same commit; whether it was written: not when the batch is no longer pending, a
    /// reminder or escalation it already had (so each happens once, whichever replica comes
    /// first), or (an extension) a deadline no longer `from_deadline`.
    pub async fn add_batch_step(
        &self,
        task_id: &str,
        batch_id: i64,
        step: BatchStep,
        from_deadline: Option<String>,
        notifications: Vec<NewNotification>,
    ) -> Result<bool> {
        let (written, approvals_of) = on_backend!(self, backend => backend
            .add_batch_step(task_id, batch_id, step, from_deadline, notifications)
            .await)?;
        self.approvals_written(approvals_of.as_deref());
        Ok(written)
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
        let seal = self.seal.get();
        let outcome =
            on_backend!(self, backend => backend.decide_planned(task_id, plan, seal).await)?;
        Ok(outcome.map(|(written, back)| {
            let written = written.map(|written| {
                self.approvals_written(written.approvals_of.as_deref());
                written.last_seq
            });
            (written, back)
        }))
    }

    /// Decides (or cancels) a pending batch: ONE transaction that moves it from pending to
    /// `batch_state` only if it is still pending, records every call's verdict and the audit
    /// row, sets the task's state and appends the events. The loser of a race gets
    /// [`StoreError::Conflict`] and nothing changes.
    pub async fn decide(&self, task_id: &str, decision: DecisionWrite) -> Result<i64> {
        let seal = self.seal.get();
        let written = on_backend!(self, backend => backend.decide(task_id, decision, seal).await)?;
        self.approvals_written(written.approvals_of.as_deref());
        Ok(written.last_seq)
    }

    /// The deadline of a task's pending batch, if it has one.
    pub async fn pending_deadline(&self, task_id: &str) -> Result<Option<Deadline>> {
        Ok(self
            .pending_deadlines_of(&[task_id.to_owned()])
            .await?
            .into_iter()
            .next())
    }
}

forward! {
    /// Finishes the queued writes and closes the store (later writes get [`StoreError::Closed`]).
    pub async fn close(&self);

    /// Whether the store can serve: a read answers, and the schema is at this binary's version.
    /// For readiness checks (`GET /readyz`): cheap enough to run on every probe.
    pub async fn check_ready(&self) -> Result<()>;

    /// The approval events after id `after`, in order, at most `limit`, of the user's tasks
    /// and of every task of `agents` (`namespace/name`: those that route batches to approvers;
    /// the caller keeps the ones the user may decide).
    pub async fn approval_events(
        &self,
        user_id: &str,
        agents: &[String],
        after: i64,
        limit: i64,
    ) -> Result<Vec<ApprovalEventRow>>;

    /// Where a new stream starts: the last event id of all (its horizon), and the `pending`
    /// events (at or before it) of the batches that still wait of the user's tasks and of
    /// every task of `agents`, in order.
    pub async fn waiting_approval_events(
        &self,
        user_id: &str,
        agents: &[String],
    ) -> Result<(i64, Vec<ApprovalEventRow>)>;
}

// Sessions.
forward! {
    pub async fn session(&self, id: &str) -> Result<Option<SessionRow>>;

    /// The user's sessions, most recently active first.
    pub async fn sessions(&self, user_id: &str) -> Result<Vec<SessionRow>>;
}

// Tasks and their event logs.
forward! {
    /// Creates a task and writes its first events, creating its session (titled `title`) if
    /// this is the session's first task; says whether it did. A session that exists must be
    /// the same user's and agent's, else [`StoreError::Conflict`]. `push`: the task's push
    /// config, given with its first message, written in the same commit (so the task's runner,
    /// started after it, can reach no state its receiver does not hear of).
    pub async fn create_task(
        &self,
        task: &TaskRow,
        title: &str,
        events: Vec<NewEvent>,
        push: Option<PushConfigRow>,
    ) -> Result<bool>;

    /// [`Store::create_task`] for a task of a chat relayed to a remote agent: marked remote, so
    /// no runner of ours resumes it (it is left out of [`Store::unfinished_tasks`] and
    /// [`Store::orphaned_tasks`]).
    pub async fn create_relayed_task(
        &self,
        task: &TaskRow,
        title: &str,
        events: Vec<NewEvent>,
    ) -> Result<bool>;

    /// Whether the task exists and is a relayed one (a remote agent drives it).
    pub async fn is_relayed(&self, task_id: &str) -> Result<bool>;

    pub async fn task(&self, id: &str) -> Result<Option<TaskRow>>;

    /// A stored task as its runner takes it up (see [`RunnerView`]), or `None` if it is gone.
    pub async fn runner_view(&self, id: &str) -> Result<Option<RunnerView>>;

    /// The tasks of a session, in the order they were created.
    pub async fn session_tasks(&self, context_id: &str) -> Result<Vec<TaskRow>>;

    /// A page of a user's tasks, newest first, optionally one session's or one state's; and
    /// how many there are in all.
    pub async fn list_tasks(
        &self,
        user_id: &str,
        context_id: Option<&str>,
        state: Option<TaskState>,
        offset: i64,
        limit: i64,
    ) -> Result<(Vec<TaskRow>, i64)>;

    /// Tasks left running or submitted by a previous process (to resume at start).
    pub async fn unfinished_tasks(&self) -> Result<Vec<TaskRow>>;

    /// The events of a task with `after < seq <= upto`, in order, at most `limit`.
    pub async fn events(
        &self,
        task_id: &str,
        after: i64,
        upto: Option<i64>,
        limit: i64,
    ) -> Result<Vec<EventRow>>;

    /// Queues `message` (JSON) for the working task `task_id`; `false` when the task is not
    /// working (it ended, or waits for a decision), and nothing is queued.
    pub async fn queue_message(&self, task_id: &str, message: String) -> Result<bool>;

    /// The messages waiting in a task's queue, oldest first.
    pub async fn queued_messages(&self, task_id: &str) -> Result<Vec<QueuedMessage>>;
}

// Batches, decisions and call records.
forward! {
    /// The task's pending batch, if it has one.
    pub async fn pending_batch(&self, task_id: &str) -> Result<Option<BatchRow>>;

    /// How many batches wait for a decision, across every user (the pending approvals gauge).
    pub async fn count_pending_batches(&self) -> Result<i64>;

    /// Every pending batch of a user's tasks, oldest first, in one query (a team may have
    /// thousands paused). A local subagent's batch is not one of them: its calls wait nested
    /// in its parent's batch.
    pub async fn pending_batches(&self, user_id: &str) -> Result<Vec<PendingBatchRow>>;

    /// The calls of a task, in the order the model asked for them.
    pub async fn calls(&self, task_id: &str) -> Result<Vec<CallRow>>;

    /// What a task and its person have done with `tool` (Cedar's `context.counts`), in one
    /// read: its calls allowed in the task, those allowed in the person's tasks that ran in
    /// the last hour (`windows`) or have yet to run, the tools approved in the task, and the
    /// sums of the tool's numeric arguments in the task, the last hour and the last day.
    pub async fn call_counts(
        &self,
        task_id: &str,
        user_id: &str,
        tool: &str,
        windows: &CountWindows,
    ) -> Result<CallCounts>;

    /// Whether `user_id` voted on a call of the task (`call_votes`).
    pub async fn voted_on(&self, task_id: &str, user_id: &str) -> Result<bool>;

    /// Every vote on the task's calls, by batch, oldest first.
    pub async fn task_votes(&self, task_id: &str) -> Result<Vec<(i64, CallVote)>>;

    /// The pending batches of tasks of `agents` (`namespace/name`), oldest first, with what
    /// the approvals list shows of their tasks and each task's owner: those routed to
    /// approvers. A local subagent's batch is not one of them.
    pub async fn pending_batches_of_agents(
        &self,
        agents: &[String],
    ) -> Result<Vec<(PendingBatchRow, String)>>;

    /// The hand-over and ladder steps of every batch of the task, oldest first.
    pub async fn batch_steps(&self, task_id: &str) -> Result<Vec<BatchStepRow>>;

    /// The pending batches that were handed over or escalated, oldest first, with each task's
    /// owner (as [`Store::pending_batches_of_agents`]).
    pub async fn pending_batches_handed_over(&self) -> Result<Vec<(PendingBatchRow, String)>>;

    /// The audit rows of one task, oldest first.
    pub async fn task_decisions(&self, task_id: &str) -> Result<Vec<DecisionRow>>;

    /// A user's most recent decisions, newest first.
    pub async fn recent_decisions(&self, user_id: &str, limit: i64) -> Result<Vec<DecisionRow>>;
}

// Subagent tasks.
forward! {
    /// Records the task an agent-tool call started on a subagent; a call starts one at most
    /// ([`StoreError::Conflict`] for a second). A local subagent's `chat` (its session, with no
    /// task yet) is created in the same transaction.
    pub async fn insert_subagent(&self, link: SubagentLink, chat: Option<ChildChat>) -> Result<()>;

    /// The subagent tasks a parent task started, oldest first.
    pub async fn subagents_of(&self, parent_task_id: &str) -> Result<Vec<SubagentLink>>;

    /// The link that made a local task a subagent's task, if one did.
    pub async fn subagent_parent(&self, child_task_id: &str) -> Result<Option<SubagentLink>>;
}

// Deadlines.
forward! {
    /// Every pending batch with a deadline (to watch them again after a restart).
    pub async fn pending_deadlines(&self) -> Result<Vec<Deadline>>;

    /// The deadlines of these tasks' pending batches.
    pub async fn pending_deadlines_of(&self, task_ids: &[String]) -> Result<Vec<Deadline>>;

    /// A task's latest batch, whatever its state (without its votes or hand-overs), to tell a
    /// late decision why it came too late.
    pub async fn last_batch(&self, task_id: &str) -> Result<Option<BatchRow>>;
}

// Policies.
forward! {
    /// Stores a new policy unless its user already has `cap` policies in force or its chat
    /// (for a chat policy) is gone, atomically: concurrent creations cannot pass the cap, and a
    /// chat deleted meanwhile takes no policy with it into limbo.
    pub async fn insert_grant(&self, policy: GrantRow, cap: usize) -> Result<GrantInsert>;

    /// A user's policies in force, oldest first.
    pub async fn grants(&self, user_id: &str) -> Result<Vec<GrantRow>>;

    /// The policies in force that may approve a call of `agent` in chat `context_id` for
    /// `user_id`: the agent's, and the chat's. Read for every call, so a revoke counts at once.
    pub async fn applicable_grants(
        &self,
        user_id: &str,
        agent: &str,
        context_id: &str,
    ) -> Result<Vec<GrantRow>>;

    /// Revokes `user_id`'s policy `id`; whether it was in force.
    pub async fn revoke_grant(&self, user_id: &str, id: &str, now: &str) -> Result<bool>;

    /// Uses grant `id` once if it is in force at `now` (not revoked, not expired, uses left);
    /// whether it was. One atomic step: a grant with N uses left lets exactly N racing calls
    /// through, on every replica.
    pub async fn use_grant(&self, id: &str, now: &str) -> Result<bool>;
}

impl Store {
    /// Every call decided from `since` (RFC 3339) on, oldest first, with what the gate knew of
    /// it: for replaying a candidate policy set over the audit. Calls of chats and calls
    /// settled at once alike.
    pub async fn replay_calls(&self, since: &str) -> Result<Vec<ReplayCall>> {
        let mut calls = on_backend!(self, backend => backend.replay_calls(since).await)?;
        let settled = self.settled_since(since).await?;
        calls.extend(settled.iter().map(SettledCallRow::replay));
        // Stable: each source's own order stands among calls of the same instant.
        calls.sort_by(|a, b| a.at.cmp(&b.at));
        Ok(calls)
    }
}

// Calls settled at once (no chat, no batch: the gate allowed or denied them).
forward! {
    /// `user_id`'s settled call `id`, if it is theirs.
    pub async fn settled_call(&self, user_id: &str, id: &str) -> Result<Option<SettledCallRow>>;

    /// `user_id`'s most recent settled calls, newest first.
    pub async fn settled_calls(&self, user_id: &str, limit: i64) -> Result<Vec<SettledCallRow>>;

    /// Every settled call from `since` (RFC 3339) on, oldest first: for policy replays.
    pub async fn settled_since(&self, since: &str) -> Result<Vec<SettledCallRow>>;
}

// Pinned tool definitions.
forward! {
    /// The pins of `agent`'s tools, by tool name.
    pub async fn tool_pins(&self, agent: &str) -> Result<Vec<ToolPinRow>>;

    /// Pins `pin` unless its tool has a pin already; the tool's pin either way (on every
    /// replica the first definition stored wins).
    pub async fn pin_first_seen(&self, pin: ToolPinRow) -> Result<ToolPinRow>;

    /// Replaces the pin of `pin`'s tool if it is still `was_digest` (an approval of what the
    /// operator saw, not of what changed since), and revokes every grant in force for that tool
    /// of that agent in the same write: a grant made for the old definition does not carry over.
    /// Whether it was replaced.
    pub async fn repin_tool(&self, pin: ToolPinRow, was_digest: &str) -> Result<bool>;
}

// Share links and feedback.
forward! {
    /// Stores a new share link.
    pub async fn insert_share(&self, share: ShareRow) -> Result<()>;

    /// The live (not revoked) share links of a chat, oldest first.
    pub async fn shares(&self, context_id: &str) -> Result<Vec<ShareRow>>;

    /// The live share link whose token hashes to `token_sha256`, if there is one.
    pub async fn live_share(&self, token_sha256: &str) -> Result<Option<ShareRow>>;

    /// Revokes the share link `id` of chat `context_id`; whether it was live.
    pub async fn revoke_share(&self, context_id: &str, id: &str, now: &str) -> Result<bool>;

    /// Stores a rating of an answer.
    pub async fn insert_feedback(&self, feedback: FeedbackRow) -> Result<()>;

    /// A user's feedback, oldest first.
    pub async fn user_feedback(&self, user_id: &str) -> Result<Vec<FeedbackRow>>;

    /// The feedback given in one chat, oldest first.
    pub async fn context_feedback(&self, context_id: &str) -> Result<Vec<FeedbackRow>>;
}

// Decision links (an Approve or a Reject link in a message to one person).
forward! {
    /// Stores new decision links, all or none.
    pub async fn insert_decision_links(&self, links: Vec<DecisionLinkRow>) -> Result<()>;

    /// The decision link whose token hashes to `token_sha256`, used or not, if there is one.
    pub async fn decision_link(&self, token_sha256: &str) -> Result<Option<DecisionLinkRow>>;
}

// The notifications outbox (`outbox`): the sender's side. Notifications are written by the
// commits of the events they report (`Commit::notifications`, `DecisionWrite::notifications`).
forward! {
    /// Leases up to `limit` notifications that are due and not leased by a live sender to
    /// `owner` until `now_ms + lease_ms`, oldest due first.
    pub async fn claim_notifications(
        &self,
        owner: &str,
        now_ms: i64,
        lease_ms: i64,
        limit: i64,
    ) -> Result<Vec<NotificationRow>>;

    /// A notification was delivered: it leaves the outbox.
    pub async fn notification_delivered(&self, id: &str) -> Result<()>;

    /// An attempt of `owner`'s did not deliver: counted, with its error, and retried later or
    /// kept as failed. Nothing changes if `owner` no longer holds the lease.
    pub async fn notification_attempt_failed(
        &self,
        owner: &str,
        id: &str,
        error: &str,
        outcome: AttemptFailed,
    ) -> Result<()>;

    /// The notifications that failed for good, most recent first, at most `limit`.
    pub async fn failed_notifications(&self, limit: i64) -> Result<Vec<NotificationRow>>;

    /// How many notifications wait to be sent, and when the oldest of them was written.
    pub async fn outbox_depth(&self) -> Result<OutboxDepth>;
}

// Browser sign-ins (`--auth oidc`), in the store so that every replica knows them and they
// outlive a restart.
forward! {
    /// Stores a signed-in session, or replaces the one with the same id (a refresh).
    pub async fn put_login(&self, login: LoginRow) -> Result<()>;

    /// The session whose cookie hashes to `id_sha256`, if there is one.
    pub async fn login(&self, id_sha256: &str) -> Result<Option<LoginRow>>;

    /// The email of `subject`'s most recent sign-in that brought one (`--auth oidc`).
    pub async fn login_email(&self, subject: &str) -> Result<Option<String>>;

    /// Ends a session; whether there was one.
    pub async fn delete_login(&self, id_sha256: &str) -> Result<bool>;

    /// Deletes the sessions nobody can use any more (without a refresh token: expired before
    /// `expired_before`; with one: expired before `idle_before`) and the sign-ins an older version
    /// stored (sign-ins on their way are cookies now) started before `attempts_before`; how
    /// many of each. Each is one `DELETE … WHERE`, so replicas
    /// sweeping at once delete each row once, and a session renewed meanwhile is kept.
    pub async fn sweep_logins(
        &self,
        expired_before: &str,
        idle_before: &str,
        attempts_before: &str,
    ) -> Result<(u64, u64)>;
}

// The directory of people (`people`): who signed in, with their email and groups, so an email
// channel that writes to approvers reaches the members of an approver group.
forward! {
    /// Records `person` as their latest sign-in named them (replacing what it said before).
    pub async fn put_person(&self, person: PersonRow) -> Result<()>;

    /// The person recorded under `user_id`, if one is.
    pub async fn person(&self, user_id: &str) -> Result<Option<PersonRow>>;

    /// The people in any of `groups`, by id.
    pub async fn people_in_groups(&self, groups: &[String]) -> Result<Vec<PersonRow>>;
}

// The Slack app channel (`slack`): the copies of a batch it posted, so each can be updated, and
// the person a Slack user's email names.
forward! {
    /// Records a posted copy (again: nothing changes).
    pub async fn put_slack_message(&self, message: SlackMessageRow) -> Result<()>;

    /// The posted copies of batch `batch_id`, oldest first.
    pub async fn slack_messages(&self, batch_id: i64) -> Result<Vec<SlackMessageRow>>;

    /// The person whose recorded email is `email` (without regard to ASCII case), the most
    /// recently seen if several are.
    pub async fn person_by_email(&self, email: &str) -> Result<Option<PersonRow>>;
}

forward! {
    /// Writes a task's push config (replacing the one of the same id) unless the task already
    /// has `cap` others.
    pub async fn put_push_config(&self, config: PushConfigRow, cap: usize) -> Result<PushPut>;
    /// A task's push configs, oldest first.
    pub async fn push_configs(&self, task_id: &str) -> Result<Vec<PushConfigRow>>;
    /// Deletes one push config of a task; whether it was there.
    pub async fn delete_push_config(&self, task_id: &str, id: &str) -> Result<bool>;
    /// The signing key named `name`, or `candidate` stored as it when there is none yet.
    pub async fn server_key(&self, name: &str, candidate: String) -> Result<String>;
}

// Signed decision receipts (`receipts`): the chain, written with each decision, and the public
// keys it was signed with.
forward! {
    /// Up to `limit` receipts after number `after`, in chain order.
    pub async fn receipts_after(&self, after: i64, limit: i64) -> Result<Vec<ReceiptRow>>;
    /// Every public key receipts were signed with, oldest first.
    pub async fn receipt_keys(&self) -> Result<Vec<ReceiptKeyRow>>;
    /// Records a public key the server signs receipts with (kept if it is already there).
    pub async fn record_receipt_key(&self, key: ReceiptKeyRow) -> Result<()>;
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
