//! The runtime: accepts messages, runs the turn loop (model turn -> tool calls -> results ->
//! next turn), holds calls that need approval in a persisted batch, applies decisions with a
//! compare-and-set, and streams every task from its stored event log.
//!
//! Everything a task needs to go on lives in the store (ARCHITECTURE.md, invariant 4): the
//! transcript the model sees, each call's record, the pending batch. A runner (`drive`) reads
//! that state and takes the next step, so the same code starts a task, resumes it after a
//! decision, and picks it up after a restart.

mod apply;
mod approvals_stream;
mod asked;
mod decide;
mod edits;
mod elicit;
mod email;
mod expiry;
mod grants;
mod handover;
mod inbox;
mod intake;
mod ladder;
mod links;
mod log;
mod notify;
mod pause;
mod people;
mod push;
mod reads;
mod relayed;
mod relayed_access;
mod replicas;
mod reviewing;
mod routing;
mod runner;
mod screening;
mod settle;
mod sharing;
mod slack;
mod streams;
mod subagent;
mod subagent_remote;
mod transcript;
mod turn_writes;
mod web_push;

pub use super::error::{AgentError, Result};
pub use crate::agent::approvals::Decider;
pub use crate::agent::approvals::{args_sha256, AuditCall, AuditEntry, PendingApproval};
pub use crate::store::Channel;
pub use apply::Outcome;
pub use approvals_stream::ApprovalsItem;
pub use asked::{AllowedCall, Asked, Asking};
pub use grants::Grants;
pub use handover::LadderEvent;
pub use links::{BatchSummary, DecidedBy, IssuedLinks, LinkAction, LinkDecision, LinkState, Links};
pub use log::{EarlyWatch, LoggedEvent, StreamEnd, TaskLog};
pub use people::Directory;
pub use people::Seen;
pub use push::Pushes;
pub use reads::Session;
pub use relayed::{as_recorded, RelayedExchange};
pub use relayed_access::{RelayedAsk, RelayedDecided};
pub use runner::PendingRunner;
pub use sharing::{CreatedShare, ShareGrant, Sharing};
pub use slack::{SlackAnswer, SlackClick, SlackRejection};
pub use streams::{Opening, TaskStream};
pub use web_push::WebPushes;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::approvals::Approvals;
use super::cedar::PolicyGate;
use super::metrics::Metrics;
use super::model::Model;
use super::notify::Notifications;
use super::policy::{AgentApprovals, GrantCache};
use super::remote::RemoteAgents;
use super::subagents::Subagents;
use super::tools::Toolbox;
use crate::store::{Store, StoreError};

/// One agent the server runs.
pub struct Agent {
    pub namespace: String,
    pub name: String,
    pub description: String,
    pub instruction: String,
    pub model: Arc<dyn Model>,
    pub tools: Toolbox,
    /// Argument rules and the approval timeout (`agent::policy`).
    pub approvals: AgentApprovals,
    /// The agents it may call as tools (`agent::subagents`).
    pub subagents: Subagents,
    /// Its tools are served over MCP (`http::mcp`), gated as its own calls are.
    pub serve_mcp: bool,
    /// Its first reviewer, asked before a person (`agent::reviewer`).
    pub reviewer: Option<Arc<crate::agent::reviewer::Reviewer>>,
}

impl Agent {
    /// `namespace/name`, how tasks and sessions refer to their agent.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// Timeouts and sizes of the turn loop: what one message or one model turn may cost.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The longest a model may stay silent within a turn.
    pub model_timeout: Duration,
    pub tool_timeout: Duration,
    /// How long `POST /api/approvals` waits for the decided calls to finish.
    pub decision_wait: Duration,
    /// The longest user message, in bytes of text.
    pub max_message_bytes: usize,
    /// The longest rejection reason, in bytes.
    pub max_reason_bytes: usize,
    /// The most tool calls one model turn may ask for; more fails the task.
    pub max_tool_calls_per_turn: usize,
    /// How deep subagents may nest: a task a person started is at depth 0, its subagent's
    /// task at 1; an agent-tool call that would go deeper fails.
    pub max_subagent_depth: usize,
    /// The most "always allow" policies one user may have in force.
    pub max_grants_per_user: usize,
    /// How long a decision link sent in a notification works.
    pub decision_link_ttl: Duration,
    /// The most push-notification configs one task may have.
    pub max_push_configs_per_task: usize,
}

impl Limits {
    pub const DEFAULT_MESSAGE_BYTES: usize = 64 * 1024;
    pub const DEFAULT_REASON_BYTES: usize = 4 * 1024;
    pub const DEFAULT_TOOL_CALLS_PER_TURN: usize = 64;
    pub const DEFAULT_SUBAGENT_DEPTH: usize = 3;
    pub const DEFAULT_GRANTS_PER_USER: usize = 100;
    pub const DEFAULT_PUSH_CONFIGS_PER_TASK: usize = 8;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            model_timeout: Duration::from_secs(120),
            tool_timeout: Duration::from_secs(60),
            decision_wait: Duration::from_secs(30),
            max_message_bytes: Limits::DEFAULT_MESSAGE_BYTES,
            max_reason_bytes: Limits::DEFAULT_REASON_BYTES,
            max_tool_calls_per_turn: Limits::DEFAULT_TOOL_CALLS_PER_TURN,
            max_subagent_depth: Limits::DEFAULT_SUBAGENT_DEPTH,
            max_grants_per_user: Limits::DEFAULT_GRANTS_PER_USER,
            decision_link_ttl: Duration::from_secs(24 * 60 * 60),
            max_push_configs_per_task: Limits::DEFAULT_PUSH_CONFIGS_PER_TASK,
        }
    }
}

/// A message accepted for a task: stream its events after `after_seq`.
#[derive(Debug)]
pub struct Accepted {
    pub task_id: String,
    pub after_seq: i64,
    /// The events the acceptance itself committed (numbered from `after_seq + 1`), so a stream
    /// can send them at once instead of waiting for a follower to read them back.
    committed: Vec<LoggedEvent>,
    /// The task's announcements, subscribed before its runner started: a stream that sends
    /// every event up to `after_seq + committed.len()` itself follows on from there with it
    /// (see [`Runtime::follow_from`]).
    watch: Option<EarlyWatch>,
    /// The task's runner, if it has not started yet ([`Runtime::send_for_stream`]): it starts
    /// when this is dropped, which the message's stream does once its follower is spawned
    /// (`streams`, the one owner of that order).
    runner: Option<PendingRunner>,
}

impl Accepted {
    /// Starts the task's runner now if it has not started: a caller that waits for the task's
    /// events without a follower of its own must, or it would wait forever.
    pub fn start_runner(&mut self) {
        drop(self.runner.take());
    }
}

pub struct Runtime {
    store: Store,
    /// The pinned definitions of the agents' MCP tools.
    pins: Arc<crate::agent::pins::ToolPins>,
    agents: Vec<Arc<Agent>>,
    limits: Limits,
    /// The task log's followers and announcements.
    log: Arc<log::TaskLog>,
    /// The cancel token of each task's current runner (a user's cancel stops it at once).
    running: Mutex<HashMap<String, CancellationToken>>,
    /// One runner per task at a time: a runner spawned while another finishes waits for it.
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Cancelled at shutdown: streams end, runners stop between steps.
    shutdown: CancellationToken,
    /// The runners, so shutdown can wait for their last writes.
    tracker: TaskTracker,
    /// What the runtime counts and times, for `GET /metrics`.
    metrics: Metrics,
    /// The people's grants ("always allow"), compiled once (by id) rather than on every turn.
    grants: GrantCache,
    /// The remote agents' clients, shared with the relay ([`Runtime::remote_agents`]).
    remotes: RemoteAgents,
    /// The deployment's Cedar policies (`--policies`, `--shadow-policies`).
    gate: PolicyGate,
    /// The operator's notification channels (`agent::notify`); none by default.
    notifications: Arc<Notifications>,
    /// Wakes this replica's notification sender after a commit wrote notifications.
    outbox_wake: tokio::sync::Notify,
    /// The push-notification sender, set once at start (`push`).
    notifier: std::sync::OnceLock<Arc<crate::agent::notify::Notifier>>,
    /// The Web Push sender, set once at start (`web_push`).
    web_pusher: std::sync::OnceLock<Arc<crate::agent::notify::web_push::WebPusher>>,
    /// Who this replica last wrote to the directory of people (`people`).
    people: people::SeenPeople,
    /// The approval workflow's rules: who may approve each call, how a decision is counted.
    approvals: Approvals,
    /// The gateway's clients that answer their calls' questions themselves.
    client_askers: crate::agent::asked::client::ClientAskers,
}

/// Why the server cannot take work now (`GET /readyz` answers 503 with it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotReady {
    #[error("shutting down")]
    ShuttingDown,
    #[error("the database is not reachable")]
    Unreachable,
    /// Migrations are missing, or a newer binary migrated the database further.
    #[error("{0}")]
    Schema(String),
}

impl Runtime {
    pub fn new(store: Store, agents: Vec<Arc<Agent>>, limits: Limits) -> Arc<Runtime> {
        Runtime::with_notifications(
            store,
            agents,
            limits,
            Notifications::none(),
            PolicyGate::default(),
        )
    }

    /// [`Runtime::new`] with the operator's notification channels (their sender starts with
    /// [`Runtime::resume_unfinished`]) and the deployment's Cedar policies deciding every tool
    /// call.
    pub fn with_notifications(
        store: Store,
        agents: Vec<Arc<Agent>>,
        limits: Limits,
        notifications: Notifications,
        gate: PolicyGate,
    ) -> Arc<Runtime> {
        let approvals = Approvals::new(
            store.clone(),
            agents
                .iter()
                .map(|agent| (agent.key(), agent.approvals.clone())),
        );
        let shutdown = CancellationToken::new();
        let pins = crate::agent::pins::ToolPins::new(
            store.clone(),
            agents
                .iter()
                .map(|agent| (agent.key(), agent.tools.clone())),
            shutdown.clone(),
        );
        Arc::new(Runtime {
            pins: Arc::new(pins),
            log: log::TaskLog::new(store.clone(), shutdown.clone()),
            store,
            limits,
            running: Mutex::new(HashMap::new()),
            locks: Mutex::new(HashMap::new()),
            shutdown,
            tracker: TaskTracker::new(),
            metrics: Metrics::new(),
            grants: GrantCache::default(),
            remotes: RemoteAgents::default(),
            gate,
            notifications: Arc::new(notifications),
            outbox_wake: tokio::sync::Notify::new(),
            notifier: std::sync::OnceLock::new(),
            web_pusher: std::sync::OnceLock::new(),
            people: people::SeenPeople::default(),
            approvals,
            agents,
            client_askers: Default::default(),
        })
    }

    /// The pinned definitions of the agents' MCP tools: checked at start, approved by operators.
    pub fn tool_pins(&self) -> &Arc<crate::agent::pins::ToolPins> {
        &self.pins
    }

    /// The remote agents' clients: remote subagents and the relay reach a remote through the
    /// same one.
    pub fn remote_agents(&self) -> &RemoteAgents {
        &self.remotes
    }

    /// The task log, which streams follow.
    pub fn log(&self) -> &Arc<log::TaskLog> {
        &self.log
    }

    /// The store, for the HTTP layer's sign-in sessions (`http::auth::oidc`), which are no
    /// business of the runtime's.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The approval workflow: its rules, and the audit's reads.
    pub fn approvals(&self) -> &Approvals {
        &self.approvals
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The metrics as a scrape reads them, with the pending approvals counted in the store now
    /// (right after a restart, and across servers that share the database).
    pub async fn metrics_text(&self) -> Result<String> {
        let pending = self.store.count_pending_batches().await?;
        let outbox = self.store.outbox_depth().await?;
        self.metrics
            .render(pending, &outbox)
            .map_err(|err| AgentError::Internal(format!("metrics text: {err}")))
    }

    /// Whether the server can take work: not shutting down, the database reachable and at this
    /// binary's schema version.
    pub async fn check_ready(&self) -> Result<(), NotReady> {
        if self.shutdown.is_cancelled() {
            return Err(NotReady::ShuttingDown);
        }
        match self.store.check_ready().await {
            Ok(()) => Ok(()),
            Err(err @ StoreError::Schema { .. }) => Err(NotReady::Schema(err.to_string())),
            Err(err) => {
                tracing::warn!(error = %err, "readiness check: the store did not answer");
                Err(NotReady::Unreachable)
            }
        }
    }

    /// Ends open streams (graceful HTTP shutdown would otherwise wait on them forever).
    pub fn begin_shutdown(&self) {
        self.shutdown.cancel();
    }

    pub fn agents(&self) -> &[Arc<Agent>] {
        &self.agents
    }

    pub fn agent(&self, namespace: &str, name: &str) -> Option<Arc<Agent>> {
        self.agents
            .iter()
            .find(|agent| agent.namespace == namespace && agent.name == name)
            .cloned()
    }

    fn agent_by_key(&self, key: &str) -> Option<Arc<Agent>> {
        self.agents.iter().find(|agent| agent.key() == key).cloned()
    }

    /// Stops runners and streams, and waits (bounded) for their last writes.
    pub async fn shutdown(&self, wait: Duration) {
        self.shutdown.cancel();
        self.tracker.close();
        if tokio::time::timeout(wait, self.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("runners still busy at shutdown; they resume at the next start");
        }
    }
}
