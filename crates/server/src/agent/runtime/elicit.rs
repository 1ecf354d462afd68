//! A tool's server asking the person something while the call runs (MCP elicitation, either
//! way MCP has it; `agent::mcp::asking`). The question is a call of its own, named
//! `elicitation` and nested under the running call (`CALL.qN`), paused for in a batch of its
//! own like any held call: stored before it is announced, notified, in the inbox, decided
//! through `apply` by whoever may answer the task's questions. Its decision is the reply: an
//! answered form, an approved URL or an approved approval (Codex's command) is `accept`, a
//! rejection `decline`, an expiry or a cancel `cancel`. The running call waits in memory
//! meanwhile (a call cannot outlive its process; one a restart interrupted is reported as
//! such), and the wait is not counted against its tool timeout. A server's approval (Codex's
//! command) meets the gate a tool call meets first (`gate`): rules and Cedar may decide it
//! without a card.

mod gate;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{BoxFuture, FutureExt};
use serde_json::Value;
use signoff_protocol::hitl::elicitation::{AskedBy, Elicitation, Mode, Reply, ELICITATION};
use signoff_protocol::hitl::preview::preview_metadata;
use signoff_protocol::hitl::question::{answered_result, answers_from_args};
use signoff_protocol::hitl::{self, ActionRequest, Decision, ToolCall, ToolResult, Why};
use signoff_protocol::TaskState;

use crate::agent::approvals::{args_sha256, Actor, Channel, Command, Decide};
use crate::agent::asked::client::{ClientAsking, Offer};
use crate::agent::notify::payload::About;
use crate::agent::tools::{text_result, Asker, WaitClock};
use crate::agent::view;
use crate::store::{CallStatus, CallUpdate, Commit, Guard, NewCall};

use super::screening::Requester;
use super::{Agent, Result, Runtime};
use gate::Gated;

/// The longest a server's question waits for an answer when the agent sets no sooner deadline:
/// the server holds its call open meanwhile.
pub const QUESTION_WAIT: Duration = Duration::from_secs(15 * 60);

/// How often a waiting question looks at the store even when nothing woke it (a decision
/// written by another replica).
const RECHECK: Duration = Duration::from_secs(2);

/// Whom a running call's server asks: the task's person, through a card.
pub(super) struct CallAsker {
    state: Arc<AskerState>,
}

struct AskerState {
    runtime: Arc<Runtime>,
    agent: Arc<Agent>,
    task_id: String,
    context_id: String,
    user_id: String,
    /// The requester's groups, and whether the task is a subagent's: for the policies.
    groups: Vec<String>,
    subagent: bool,
    asked_by: AskedBy,
    usage: (u64, u64),
    /// The questions asked so far, for their ids.
    asked: AtomicU32,
    /// Time spent waiting for answers: the finished waits, and since when one is open.
    waited: WaitClock,
}

impl CallAsker {
    /// The asker of the call `asked_by` names, which runs in the requester's task.
    pub(super) fn new(
        runtime: Arc<Runtime>,
        agent: Arc<Agent>,
        requester: &Requester<'_>,
        asked_by: AskedBy,
        usage: (u64, u64),
    ) -> CallAsker {
        CallAsker {
            state: Arc::new(AskerState {
                runtime,
                agent,
                task_id: requester.task_id.to_owned(),
                context_id: requester.context_id.to_owned(),
                user_id: requester.user.to_owned(),
                groups: requester.groups.to_vec(),
                subagent: requester.subagent,
                asked_by,
                usage,
                asked: AtomicU32::new(0),
                waited: WaitClock::default(),
            }),
        }
    }
}

impl Asker for CallAsker {
    fn ask(&self, question: Elicitation) -> BoxFuture<'static, Reply> {
        let state = self.state.clone();
        async move {
            let _waiting = state.waited.start();
            let number = state.asked.fetch_add(1, Ordering::Relaxed) + 1;
            let id = format!("{}.q{number}", state.asked_by.call_id);
            match state.put(&id, &question).await {
                Ok(reply) => reply,
                Err(error) => {
                    tracing::warn!(task = %state.task_id, call = %id, error = %error,
                        "a server's question could not be asked: it is cancelled");
                    Reply::Cancel
                }
            }
        }
        .boxed()
    }

    fn waited(&self) -> Duration {
        self.state.waited.waited()
    }
}

/// A watch on a task's commits, let go when dropped.
struct Watch<'a> {
    runtime: &'a Runtime,
    task_id: &'a str,
    wake: tokio::sync::watch::Receiver<Arc<super::log::Announcement>>,
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        self.runtime.log.hub.release(self.task_id);
    }
}

impl AskerState {
    /// Pauses the task for the question, waits for its decision, and records an answered
    /// question's result.
    async fn put(&self, id: &str, question: &Elicitation) -> Result<Reply> {
        let runtime = &self.runtime;
        let mut watch = Watch {
            runtime,
            task_id: &self.task_id,
            wake: runtime.log.hub.watch(&self.task_id),
        };
        let why = match gate::gate(self, id, question).await? {
            Gated::Decided(reply) => return Ok(reply),
            Gated::Waits(why) => why,
        };
        self.pause(id, question, why).await?;
        // The gateway's client is asked too, if it answers questions itself: the first answer
        // wins. Dropping the offer (whoever answered) withdraws the client's request.
        let mut client = self.offer_client(question).await?;
        loop {
            if let Some(reply) = self.decided(id, question).await? {
                return Ok(reply);
            }
            let answered = {
                let answered = async {
                    match client.as_mut() {
                        Some((_, _, offer)) => Some((&mut offer.answered).await.ok()),
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = runtime.shutdown.cancelled() => return Ok(Reply::Cancel),
                    _ = tokio::time::timeout(RECHECK, watch.wake.changed()) => None,
                    answer = answered => answer,
                }
            };
            // Answered or gone, the client is not asked again; its answer may still lose to a
            // person's, which the next look at the store finds.
            let Some(answer) = answered else { continue };
            if let (Some((asking, batch_id, _offer)), Some(answer)) = (client.take(), answer) {
                let reply = self
                    .client_answered(id, question, &asking, batch_id, &answer)
                    .await?;
                if let Some(reply) = reply {
                    return Ok(reply);
                }
            }
        }
    }

    /// Puts the question to the gateway's client of this task's call, if it answers
    /// questions itself and offered the question's mode: who it is, the batch its answer
    /// decides, and the offer.
    async fn offer_client(
        &self,
        question: &Elicitation,
    ) -> Result<Option<(ClientAsking, i64, Offer)>> {
        let Some(asking) = self.runtime.client_askers.of(&self.task_id) else {
            return Ok(None);
        };
        let Some(batch) = self.runtime.store.pending_batch(&self.task_id).await? else {
            return Ok(None);
        };
        Ok(asking
            .offer(question)
            .map(|offer| (asking, batch.id, offer)))
    }

    /// The client's answer `answer` (an `ElicitResult`) decides the question's inbox copy, as
    /// the client's person on channel `mcp_client`; the reply is then what was recorded, once.
    /// `None` when it was not taken (a person answered first, or the answer does not fit the
    /// form): the inbox copy stands.
    async fn client_answered(
        &self,
        id: &str,
        question: &Elicitation,
        asking: &ClientAsking,
        batch_id: i64,
        answer: &Value,
    ) -> Result<Option<Reply>> {
        let Some(reply) = Reply::from_value(answer) else {
            tracing::warn!(task = %self.task_id, call = %id, "the MCP client's answer is no ElicitResult");
            return Ok(None);
        };
        let decision = match (&reply, &question.mode) {
            (Reply::Accept(content), Mode::Form { questions, .. }) => {
                let content = content.clone().unwrap_or_default();
                Decision::answer(Reply::answers_of(questions, &content))
            }
            (Reply::Accept(_), Mode::Url { .. } | Mode::Approval(_)) => Decision::approve_all(),
            (Reply::Decline, _) => Decision::deny_all(Some("declined in the MCP client".into())),
            (Reply::Cancel, _) => Decision::deny_all(Some("dismissed in the MCP client".into())),
        };
        let decide = Decide {
            decision,
            batch_id: Some(batch_id),
            message: None,
            link: None,
        };
        let actor = Actor::of(&asking.decider, Channel::McpClient);
        let command = Command::Decide(Box::new(decide));
        if let Err(error) = self.runtime.apply(&self.task_id, &actor, command).await {
            tracing::info!(task = %self.task_id, call = %id, error = %error,
                "the MCP client's answer was not taken; the inbox copy stands");
            return Ok(None);
        }
        tracing::info!(task = %self.task_id, call = %id, "the MCP client answered a server's question");
        let recorded = self.decided(id, question).await?;
        // A dismissal is recorded as a rejection (the batch has no "cancel" verdict a person
        // can give), and told to the server as what it was.
        Ok(match (reply, recorded) {
            (Reply::Cancel, Some(_)) => Some(Reply::Cancel),
            (_, recorded) => recorded,
        })
    }

    /// Writes the question's call and its batch (with the pause's notifications), and watches
    /// its deadline: the agent's, or [`QUESTION_WAIT`] if sooner. An approval's `why` (the
    /// gate's ask) goes with its card, as a held tool call's does.
    async fn pause(&self, id: &str, question: &Elicitation, why: Option<Why>) -> Result<()> {
        let runtime = &self.runtime;
        let args = question.to_args(&self.asked_by);
        let AskedBy { server, tool, .. } = &self.asked_by;
        let part = ToolCall {
            id: id.to_owned(),
            name: ELICITATION.to_owned(),
            args: args.clone(),
        }
        .to_part();
        let message = view::agent_message(&self.task_id, &self.context_id, vec![part]);
        let announced = view::status_event(
            &self.task_id,
            &self.context_id,
            TaskState::Working,
            Some(message),
            None,
        );
        let mut metadata = signoff_protocol::Metadata::default();
        metadata.insert(hitl::keys::EDITABLE.to_owned(), Value::Bool(false));
        if let Some(why) = &why {
            metadata.insert(hitl::SIGNOFF_WHY.to_owned(), why.to_value());
        }
        // A patch is shown as the diff it would apply, as a held write's is.
        if let Mode::Approval(approval) = &question.mode {
            if let Some(preview) = signoff_protocol::hitl::codex::patch_preview(approval) {
                metadata.extend(preview_metadata(&preview, None));
            }
        }
        let request = ActionRequest {
            id: id.to_owned(),
            name: ELICITATION.to_owned(),
            args: args.clone(),
            description: Some(format!(
                "The MCP server {server} asks this while {tool} runs."
            )),
            server: Some(server.clone()),
            approval_id: None,
            via: None,
            metadata,
        };
        let deadline =
            question_deadline(crate::agent::approvals::deadline_for(&self.agent.approvals));
        let (event, mut pause) = Runtime::pause_step_until(
            &self.task_id,
            &self.context_id,
            vec![request],
            Some(deadline.clone()),
            self.usage,
        );
        pause.new_calls.push(NewCall {
            call_id: id.to_owned(),
            name: ELICITATION.to_owned(),
            source: server.clone(),
            args_sha256: args_sha256(&args),
            args,
            held: true,
            auto: None,
            why: why.as_ref().map(Why::to_value),
        });
        if runtime.notifies() {
            let agent = self.agent.key();
            let about = About {
                task_id: &self.task_id,
                context_id: &self.context_id,
                agent: &agent,
                requester: &self.user_id,
            };
            pause.notifications = runtime
                .pause_notifications(&about, pause.new_batch.as_ref(), Some(&deadline))
                .await;
        }
        runtime
            .commit(&self.task_id, vec![announced, event], pause)
            .await?;
        runtime.watch_deadline(&self.task_id, &deadline);
        tracing::info!(task = %self.task_id, call = %id, server = %server, "a server's question waits");
        Ok(())
    }

    /// The reply, once the question's call is decided; an answered one's result is recorded.
    async fn decided(&self, id: &str, question: &Elicitation) -> Result<Option<Reply>> {
        let calls = self.runtime.store.calls(&self.task_id).await?;
        let Some(call) = calls.into_iter().find(|call| call.call_id == id) else {
            return Ok(Some(Reply::Cancel));
        };
        let reply = match call.status {
            CallStatus::Held => return Ok(None),
            CallStatus::Rejected | CallStatus::Denied => Reply::Decline,
            CallStatus::Expired | CallStatus::Canceled => Reply::Cancel,
            CallStatus::Approved
            | CallStatus::Auto
            | CallStatus::Started
            | CallStatus::Finished => {
                let run_args = call.run_args.as_ref().unwrap_or(&call.args);
                let (reply, result) = accepted(question, run_args, &self.asked_by.server);
                if call.status == CallStatus::Approved {
                    self.record_sent(id, result).await?;
                }
                reply
            }
        };
        Ok(Some(reply))
    }

    /// The answered question's result, so its card shows what was sent.
    async fn record_sent(&self, id: &str, response: Value) -> Result<()> {
        let part = ToolResult {
            id: id.to_owned(),
            name: ELICITATION.to_owned(),
            response: response.clone(),
        }
        .to_part();
        let message = view::agent_message(&self.task_id, &self.context_id, vec![part]);
        let event = view::status_event(
            &self.task_id,
            &self.context_id,
            TaskState::Working,
            Some(message),
            None,
        );
        let commit = Commit {
            call_updates: vec![CallUpdate::Finished {
                call_id: id.to_owned(),
                result: response,
            }],
            guard: Some(Guard::NotTerminal),
            ..Commit::default()
        };
        self.runtime
            .commit(&self.task_id, vec![event], commit)
            .await?;
        Ok(())
    }
}

/// An accepted question's reply, and the result its card shows: a form's answers beside
/// their questions (as `ask_user`'s result gives them), or that the link was opened.
fn accepted(question: &Elicitation, run_args: &Value, server: &str) -> (Reply, Value) {
    match &question.mode {
        Mode::Form { questions, .. } => {
            let answers = answers_from_args(run_args).unwrap_or_default();
            let reply = Reply::from_answers(questions, &answers);
            (reply, answered_result(questions, &answers))
        }
        Mode::Url { .. } => (
            Reply::Accept(None),
            text_result(format!(
                "Accepted: the person chose to open the link, and the MCP server {server} was told."
            )),
        ),
        Mode::Approval(_) => (
            Reply::Accept(None),
            text_result(format!(
                "Approved: the MCP server {server} was told to go ahead, once."
            )),
        ),
    }
}

/// The agent's deadline for approvals, or [`QUESTION_WAIT`] from now if that is sooner or
/// there is none.
fn question_deadline(agents: Option<String>) -> String {
    let longest = chrono::Utc::now()
        + chrono::Duration::from_std(QUESTION_WAIT).unwrap_or(chrono::Duration::minutes(15));
    let sooner = agents
        .as_deref()
        .and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok())
        .map(|at| at.with_timezone(&chrono::Utc))
        .filter(|at| *at < longest);
    sooner
        .unwrap_or(longest)
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
