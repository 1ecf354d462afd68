//! Calls asked for from outside (`agent::asked`: an MCP client's call through the gateway, a
//! program's permission prompt, a REST approval request), lent by [`Runtime::asked`].
//!
//! Such a call is screened first, by the same gate as a model's call (the deployment's
//! policies, the agent's rules, the tool's `require_approval`). One the gate settles without
//! asking anyone is **settled at once**: an allowed call runs (a permission prompt is allowed)
//! and a denied one is refused, in the asker's own request, and one row of `settled_calls`,
//! written before it runs, is its audit. It opens no chat: a Claude Code run's hundred allowed
//! Reads do not fill the person's chat list, and the call costs one write, not a task's life.
//! Every other call (one that asks, or that a person's "always allow" grant may answer) opens a
//! task whose stand-in model proposes it, so it is held, decided, audited and run exactly as a
//! model's call is.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use signoff_protocol::hitl::{GateOutcome, ToolResult, Why, WhyKind, ASK_USER};
use signoff_protocol::rest::{ApprovalRequestState, RequestStatus, SettledCall};
use signoff_protocol::{Message, Part, Role};

use crate::agent::approvals::wire_verdict;
use crate::agent::asked::client::{ClientAsking, ClientOnly};
use crate::agent::asked::{self, AskedCall};
use crate::agent::tools::{ExposedTool, SharedAsker};
use crate::agent::view;
use crate::store::{task_state_text, SettledCallRow, TaskRow, Verdict};

use super::screening::{denial_label, Requester};
use super::transcript::transcript_of;
use super::{args_sha256, Accepted, Agent, AgentError, Decider, Result, Runtime, StreamEnd};

/// What [`Asked::ask`] did with a call.
pub enum Asking {
    /// The gate refused it without asking anyone.
    Settled(ApprovalRequestState),
    /// The gate allowed it without asking anyone, and its audit is written: the asker runs it
    /// ([`AllowedCall::run`]) in its own request.
    Allowed(AllowedCall),
    /// It opened a task, where it waits for whoever may decide it (or for a grant's answer).
    Opened(Accepted),
}

/// Calls asked for from outside (`agent::asked`), lent by [`Runtime::asked`]: opening one, and
/// reading where it stands.
pub struct Asked<'a> {
    runtime: &'a Arc<Runtime>,
}

impl Runtime {
    /// The calls asked for from outside: an MCP client's, a permission prompt, a REST request.
    pub fn asked(self: &Arc<Self>) -> Asked<'_> {
        Asked { runtime: self }
    }
}

impl Asked<'_> {
    /// Asks for one call from outside: settled at once when the gate needs nobody, else a task
    /// opened for it, screened, held, decided and run as a model's call is; `title` is the
    /// chat's first message (what the asker says it is doing). The questions its server asks
    /// while it runs in that task also go to `client`, if the asker answers them itself
    /// (`asked::client`); the caller lets go of it with [`Asked::client_left`].
    #[tracing::instrument(name = "asked", skip_all, fields(agent = %agent.key(), tool = %call.name))]
    pub async fn ask(
        &self,
        who: &Decider,
        agent: &Arc<Agent>,
        call: AskedCall,
        title: &str,
        client: Option<ClientAsking>,
    ) -> Result<Asking> {
        if self.runtime.shutdown.is_cancelled() {
            return Err(AgentError::ShuttingDown);
        }
        if let Some(why) = agent.tools.held_back(&call.name) {
            return Err(AgentError::InvalidParams(format!("tool: {why}")));
        }
        let Some(tool) = agent.tools.get(&call.name) else {
            return Err(AgentError::InvalidParams(format!(
                "tool: {} has no tool named {:?}",
                agent.key(),
                call.name
            )));
        };
        let args_bytes = call.args.to_string().len();
        if args_bytes > self.runtime.limits.max_message_bytes {
            return Err(AgentError::InvalidParams(format!(
                "arguments: {args_bytes} bytes; the limit is {} bytes",
                self.runtime.limits.max_message_bytes
            )));
        }
        if let Some(settled) = self.settle_at_once(who, agent, &tool, call.clone()).await? {
            return Ok(settled);
        }
        let title = match title.trim() {
            "" => format!("Asks to run {}", call.gist()),
            title => title.chars().take(200).collect(),
        };
        let message = Message::new(view::new_id(), Role::User, vec![Part::text(title)]);
        let mut accepted = self
            .runtime
            .open_task(who, agent, message, view::new_id(), None, Some(call))
            .await?;
        // Before the runner starts, so no question of the call can miss the client.
        if let Some(client) = client {
            self.runtime.client_askers.enter(&accepted.task_id, client);
        }
        accepted.start_runner();
        Ok(Asking::Opened(accepted))
    }

    /// The call settled at once if the gate needs nobody for it (an allow or a deny of the
    /// policies, the rules or the tool's setting); `None` when it asks, so a task must hold it
    /// (a person's grant may still answer it there).
    async fn settle_at_once(
        &self,
        who: &Decider,
        agent: &Arc<Agent>,
        tool: &ExposedTool,
        call: AskedCall,
    ) -> Result<Option<Asking>> {
        let runtime = self.runtime;
        // A question and an agent-tool call are not run by their source: the runner asks the
        // person, or starts the subagent's task.
        if call.name == ASK_USER || agent.subagents.get(&call.name).is_some() {
            return Ok(None);
        }
        let requester = Requester {
            user: &who.subject,
            groups: &who.groups,
            context_id: "",
            task_id: "",
            subagent: false,
        };
        let (_, mut decided) = runtime.gate(
            agent,
            &requester,
            tool,
            &call.args,
            chrono::Utc::now(),
            None,
        );
        let verdict = match decided.outcome() {
            GateOutcome::Ask => return Ok(None),
            GateOutcome::Allow => Verdict::Approve,
            GateOutcome::Deny => Verdict::Deny,
        };
        if decided.why.by == WhyKind::Policy {
            decided.why.file = runtime.gate.live.file_of(&decided.why.id);
        }
        let row = SettledCallRow {
            id: view::new_id(),
            user_id: who.subject.clone(),
            requester_groups: who.groups.clone(),
            agent: agent.key(),
            tool: call.name.clone(),
            source: tool.spec.source.clone(),
            args: call.args.clone(),
            args_sha256: args_sha256(&call.args),
            verdict,
            why: decided.why.to_value(),
            settled_at: crate::store::now(),
        };
        // Recorded before it runs: an audit that a crash cannot leave behind the call.
        runtime.store.insert_settled_call(row.clone()).await?;
        if verdict == Verdict::Deny {
            let reason = denial(&row, &decided.why);
            let state = settled_state(&row, RequestStatus::Rejected, None, Some(reason));
            return Ok(Some(Asking::Settled(state)));
        }
        Ok(Some(Asking::Allowed(AllowedCall {
            runtime: runtime.clone(),
            agent: agent.clone(),
            call,
            row,
        })))
    }

    /// The call of `task_id` has a client that answers its questions again (a 2026-07-28
    /// client's retry, which waits on it with the answer to the last one).
    pub fn client_back(&self, task_id: &str, client: ClientAsking) {
        self.runtime.client_askers.enter(task_id, client);
    }

    /// The call of `task_id` no longer has a client that answers its questions (its request
    /// ended).
    pub fn client_left(&self, task_id: &str) {
        self.runtime.client_askers.leave(task_id);
    }

    /// Where the asked call of task `task_id` stands, as its asker sees it, after waiting up to
    /// `wait` for the task to end. Another person's task, or one that asked for no call, does
    /// not exist for the caller.
    pub async fn state(
        &self,
        who: &Decider,
        task_id: &str,
        wait: Duration,
    ) -> Result<ApprovalRequestState> {
        let mut row = match self.task(who, task_id).await {
            Ok(row) => row,
            Err(AgentError::TaskNotFound(id)) => {
                // A call settled at once has no task: its record answers.
                return match self
                    .runtime
                    .store
                    .settled_call(&who.subject, task_id)
                    .await?
                {
                    Some(settled) => Ok(settled_record_state(&settled)),
                    None => Err(AgentError::TaskNotFound(id)),
                };
            }
            Err(err) => return Err(err),
        };
        if !row.state.is_terminal() && !wait.is_zero() {
            let mut events =
                self.runtime
                    .log
                    .follow_from(task_id, row.last_seq, None, StreamEnd::Terminal);
            let ended = async { while let Some(Ok(_)) = events.next().await {} };
            if tokio::time::timeout(wait, ended).await.is_ok() {
                row = self.task(who, task_id).await?;
            }
        }
        let transcript = transcript_of(&row)?;
        let (status, arguments, result, reason) = match asked::outcome(&transcript) {
            Some(asked::Outcome::Ran { args, result }) => {
                // A permission prompt's result only repeats the arguments it allows.
                let result = (result != asked::allowed(&args)).then_some(result);
                (RequestStatus::Allowed, Some(args), result, None)
            }
            Some(asked::Outcome::Rejected { reason }) => {
                (RequestStatus::Rejected, None, None, Some(reason))
            }
            Some(asked::Outcome::NotRun { reason }) => {
                (RequestStatus::Ended, None, None, Some(reason))
            }
            None if row.state.is_terminal() => {
                let how = task_state_text(row.state);
                let reason = format!("the request ended {how} before it was decided");
                (RequestStatus::Ended, None, None, Some(reason))
            }
            None => (RequestStatus::Waiting, None, None, None),
        };
        Ok(ApprovalRequestState {
            task_id: row.id,
            context_id: Some(row.context_id),
            status,
            arguments,
            result,
            reason,
        })
    }

    /// The caller's `limit` most recent calls settled at once, newest first (their audit).
    pub async fn settled(&self, who: &Decider, limit: i64) -> Result<Vec<SettledCall>> {
        let rows = self
            .runtime
            .store
            .settled_calls(&who.subject, limit)
            .await?;
        rows.into_iter()
            .map(|row| {
                let why = Why::from_value(&row.why).ok_or_else(|| {
                    AgentError::Internal(format!("settled call {}: its why is unreadable", row.id))
                })?;
                Ok(SettledCall {
                    id: row.id,
                    agent: row.agent,
                    tool: row.tool,
                    arguments: row.args,
                    args_sha256: row.args_sha256,
                    verdict: wire_verdict(row.verdict),
                    why,
                    settled_at: row.settled_at,
                })
            })
            .collect()
    }

    /// The caller's task `task_id`, if it is one call asked for from outside.
    async fn task(&self, who: &Decider, task_id: &str) -> Result<TaskRow> {
        let row = match super::reads::owned_task(&self.runtime.store, &who.subject, task_id).await {
            Ok(row) => row,
            Err(AgentError::Forbidden(id)) => return Err(AgentError::TaskNotFound(id)),
            Err(err) => return Err(err),
        };
        match asked::asked_call(&transcript_of(&row)?) {
            Some(_) => Ok(row),
            None => Err(AgentError::TaskNotFound(task_id.to_owned())),
        }
    }
}

/// A call the gate allowed at once, its audit written, for its asker to run.
pub struct AllowedCall {
    runtime: Arc<Runtime>,
    agent: Arc<Agent>,
    call: AskedCall,
    row: SettledCallRow,
}

impl AllowedCall {
    /// Runs the call (a permission prompt is only allowed). Its server's questions go to
    /// `client` if the asker answers them itself (`asked::client::ClientOnly`): the call has no
    /// task to show them in, so they are declined otherwise.
    pub async fn run(self, client: Option<ClientAsking>) -> ApprovalRequestState {
        let AllowedCall {
            runtime,
            agent,
            call,
            row,
        } = self;
        let started = Instant::now();
        let timeout = runtime.limits.tool_timeout;
        let asker = client.map(|client| {
            Arc::new(ClientOnly::new(client, super::elicit::QUESTION_WAIT)) as SharedAsker
        });
        let result = agent
            .tools
            .call_asking(&call.name, call.args.clone(), timeout, asker)
            .await;
        let failed = result.get("isError") == Some(&serde_json::Value::Bool(true));
        runtime
            .metrics
            .tool_call(&call.name, started.elapsed(), failed);
        // A permission prompt's result only repeats the arguments it allows.
        let result = (result != asked::allowed(&call.args)).then_some(result);
        settled_state(&row, RequestStatus::Allowed, result, None)
    }
}

/// What the asker of a denied call reads: as a model reads a rule's denial.
fn denial(row: &SettledCallRow, why: &Why) -> String {
    let denied = ToolResult::denied(&row.id, &row.tool, &denial_label(why));
    denied.response["message"]
        .as_str()
        .unwrap_or("denied; the call did not run")
        .to_owned()
}

/// The answer for a call settled at once: its record's id stands for the task it never had.
fn settled_state(
    row: &SettledCallRow,
    status: RequestStatus,
    result: Option<serde_json::Value>,
    reason: Option<String>,
) -> ApprovalRequestState {
    ApprovalRequestState {
        task_id: row.id.clone(),
        context_id: None,
        status,
        arguments: (status == RequestStatus::Allowed).then(|| row.args.clone()),
        result,
        reason,
    }
}

/// A settled call read back later: its verdict, without the result its asker was given then.
fn settled_record_state(row: &SettledCallRow) -> ApprovalRequestState {
    match row.verdict {
        Verdict::Deny => {
            let why = Why::from_value(&row.why);
            let reason = why.map(|why| denial(row, &why));
            settled_state(row, RequestStatus::Rejected, None, reason)
        }
        Verdict::Approve | Verdict::Cancel | Verdict::Expire => {
            settled_state(row, RequestStatus::Allowed, None, None)
        }
    }
}
