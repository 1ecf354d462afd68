//! One chat with an ACP agent: its process, its ACP session, and the prompt and permission
//! request in flight. A model turn of the chat ([`Session::turn`]) either sends the person's
//! message as a prompt or answers the pending permission with the decision the transcript
//! holds, and then passes on what the agent says (its answer, its plan, the calls it runs without
//! asking as cards, its thoughts) until it asks for the next permission (the turn ends with that
//! call, which the runtime holds as a batch) or its prompt ends.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::calls::{changes_preview, proposed};
use super::process::{AgentProcess, Read};
use super::wire::{self, FromAgent, PermissionRequest, ToolCall, Update};
use crate::agent::asked::{settled, Outcome};
use crate::agent::config::AcpLaunch;
use crate::agent::model::{ModelError, ModelEvent};
use signoff_protocol::hitl::{RanCall, RanStatus};

/// How long the agent may take to start and open its session.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a prompt cut by a cancel may take to end before the next one is sent.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// What the chat says of a decision whose agent session has gone.
pub const UNDELIVERED: &str = "The decision could not reach the coding agent: its session ended \
                               while the call waited, so the call did not run.";

/// What a turn starts with.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnStart {
    /// The person's message.
    Prompt(String),
    /// The decision on the pending permission, as the transcript records its result, on the
    /// call of the server's id `call_id`.
    Decided { call_id: String, response: Value },
}

/// Where a turn's events go.
pub type Events = mpsc::Sender<Result<ModelEvent, ModelError>>;

/// A live ACP session and its process.
pub struct Session {
    process: AgentProcess,
    from: mpsc::Receiver<Read>,
    id: String,
    next_request: u64,
    /// The id of the `session/prompt` in flight.
    prompt: Option<u64>,
    /// The permission request waiting for its batch's decision: the agent's request id and
    /// what it asked.
    permission: Option<(Value, PermissionRequest)>,
    calls: HashMap<String, ToolCall>,
    /// The plan last shown, so an update that changes nothing adds nothing.
    plan: Option<Vec<(String, String)>>,
    /// The calls it asked about or ran, and what their cards show.
    cards: Cards,
    /// Its thought so far, shown as one once something else comes.
    thought: String,
    /// Its working folder: a change's path is shown relative to it.
    cwd: PathBuf,
    /// Said to the agent with the next prompt: why its calls were rejected (ACP's permission
    /// answer has no room for a reason).
    notes: Vec<String>,
    /// Why the agent's output ended, once it has.
    pub ended: Option<String>,
    pub last_used: Instant,
}

impl Session {
    /// Starts the agent and opens a session in its working folder: the chat's earlier session
    /// `resume`, loaded again where the agent offers `session/load` and still has it, else a new
    /// one. `true`: the earlier session was loaded.
    pub async fn start(
        launch: &AcpLaunch,
        label: &str,
        resume: Option<&str>,
    ) -> Result<(Session, bool), String> {
        let (process, from) = AgentProcess::start(launch, label)?;
        let mut session = Session {
            process,
            from,
            id: String::new(),
            next_request: 0,
            prompt: None,
            permission: None,
            calls: HashMap::new(),
            cards: Cards::default(),
            thought: String::new(),
            cwd: launch.cwd.clone(),
            plan: None,
            notes: Vec::new(),
            ended: None,
            last_used: Instant::now(),
        };
        let cwd = launch.cwd.to_string_lossy().into_owned();
        let loaded = tokio::time::timeout(START_TIMEOUT, session.open(&cwd, resume))
            .await
            .map_err(|_| format!("the agent did not open a session within {START_TIMEOUT:?}"))??;
        Ok((session, loaded))
    }

    async fn open(&mut self, cwd: &str, resume: Option<&str>) -> Result<bool, String> {
        let offered = self.call("initialize", wire::initialize()).await?;
        let loads = offered.pointer("/agentCapabilities/loadSession") == Some(&Value::Bool(true));
        if let (Some(earlier), true) = (resume, loads) {
            // The history it replays first is not shown again: the chat holds it already.
            match self
                .call("session/load", wire::load_session(earlier, cwd))
                .await
            {
                Ok(_) => {
                    self.id = earlier.to_owned();
                    return Ok(true);
                }
                Err(why) => {
                    tracing::info!(session = %earlier, "the agent could not load the chat's session: {why}")
                }
            }
        }
        let opened = self.call("session/new", wire::new_session(cwd)).await?;
        self.id = opened
            .get("sessionId")
            .and_then(Value::as_str)
            .ok_or("the agent's session/new answer has no sessionId")?
            .to_owned();
        Ok(false)
    }

    /// The ACP session's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether nothing is in flight, so the session may be ended to make room.
    pub fn idle(&self) -> bool {
        self.prompt.is_none() && self.permission.is_none()
    }

    /// Sends a request and waits for its answer (used before any prompt runs).
    async fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.send_request(method, params).await?;
        loop {
            match self.next().await? {
                FromAgent::Response {
                    id: answered,
                    result,
                } if answered == id => {
                    return result
                        .map_err(|message| format!("the agent refused {method}: {message}"));
                }
                other @ (FromAgent::Response { .. }
                | FromAgent::Update { .. }
                | FromAgent::Permission { .. }
                | FromAgent::OtherRequest { .. }
                | FromAgent::OtherNotification { .. }) => self.aside(other).await?,
            }
        }
    }

    async fn send_request(&mut self, method: &str, params: Value) -> Result<u64, String> {
        self.next_request += 1;
        let id = self.next_request;
        self.process.send(wire::request(id, method, params)).await?;
        Ok(id)
    }

    /// The agent's next message, or why there is none.
    async fn next(&mut self) -> Result<FromAgent, String> {
        match self.from.recv().await {
            Some(Read::Message(message)) => Ok(*message),
            Some(Read::Ended(why)) => Err(self.end(why)),
            None => Err(self.end("the agent's process ended".into())),
        }
    }

    fn end(&mut self, why: String) -> String {
        self.ended = Some(why.clone());
        self.prompt = None;
        self.permission = None;
        why
    }

    /// Handles a message that is not the one awaited: a request this client does not serve
    /// is refused; a stale answer, an update or a notification is noted or dropped.
    async fn aside(&mut self, message: FromAgent) -> Result<(), String> {
        match message {
            FromAgent::OtherRequest { id, method } => {
                let refusal = format!("{method} is not offered by this client");
                self.process
                    .send(wire::error_response(&id, wire::METHOD_NOT_FOUND, &refusal))
                    .await
            }
            FromAgent::Permission { id, .. } => {
                // Asked while no turn passes on what the agent says (the session opening, a
                // cancelled prompt ending): nobody could decide it, so it is cancelled.
                self.process
                    .send(wire::response(&id, wire::permission_answer(None)))
                    .await
            }
            FromAgent::Update {
                update: Update::ToolCall(call),
                ..
            } => {
                self.note_call(call);
                Ok(())
            }
            FromAgent::Response { .. }
            | FromAgent::Update { .. }
            | FromAgent::OtherNotification { .. } => Ok(()),
        }
    }

    fn note_call(&mut self, call: Box<ToolCall>) -> &ToolCall {
        let id = call.id.clone();
        let known = self.calls.entry(id).or_insert_with(|| ToolCall {
            id: call.id.clone(),
            ..ToolCall::default()
        });
        known.merge(*call);
        known
    }

    /// Notes a report of a tool call, and gives what its card should show now ([`Cards::report`]).
    fn reported_call(&mut self, call: Box<ToolCall>) -> Option<ModelEvent> {
        let known = self.note_call(call).clone();
        self.cards.report(&known, &self.cwd)
    }

    /// Shows the agent's thought so far, once something else comes.
    async fn end_thought(&mut self, events: &Events) {
        if self.thought.trim().is_empty() {
            self.thought.clear();
            return;
        }
        let thought = std::mem::take(&mut self.thought);
        let _ = events.send(Ok(ModelEvent::Thought(thought))).await;
    }

    /// One model turn of the chat; its events go to `events`. A cancel (the runtime dropped the
    /// turn) cancels the agent's prompt, and a permission it is waiting on.
    pub async fn turn(&mut self, start: TurnStart, events: &Events, cancel: &CancellationToken) {
        self.last_used = Instant::now();
        // A thought cut short by a cancel belongs to no turn.
        self.thought.clear();
        let begun = match start {
            TurnStart::Prompt(text) => self.prompt(&text).await,
            TurnStart::Decided { call_id, response } => match self.permission.take() {
                Some((id, request)) => self.answer(id, &request, call_id, &response).await,
                None => {
                    let _ = events.send(Ok(ModelEvent::Text(UNDELIVERED.into()))).await;
                    return;
                }
            },
        };
        if let Err(why) = begun {
            let _ = events.send(Err(ModelError::Failed(stopped(&why)))).await;
            return;
        }
        if let Err(why) = self.pump(events, cancel).await {
            let _ = events.send(Err(ModelError::Failed(stopped(&why)))).await;
        }
    }

    /// Sends the person's message (after whatever Signoff must tell the agent first).
    async fn prompt(&mut self, text: &str) -> Result<(), String> {
        if !self.idle() {
            self.cancel_in_flight().await?;
        }
        let mut told: Vec<String> = std::mem::take(&mut self.notes);
        told.push(text.to_owned());
        let id = self
            .send_request("session/prompt", wire::prompt(&self.id, &told.join("\n\n")))
            .await?;
        self.prompt = Some(id);
        Ok(())
    }

    /// Ends what is in flight (a chat canceled while the agent waited on a permission): the
    /// permission answers "cancelled", the prompt is cancelled and its end awaited.
    async fn cancel_in_flight(&mut self) -> Result<(), String> {
        self.cancel_now().await?;
        let waited = tokio::time::timeout(CANCEL_WAIT, async {
            while let Some(prompt) = self.prompt {
                match self.next().await? {
                    FromAgent::Response { id, .. } if id == prompt => self.prompt = None,
                    other @ (FromAgent::Response { .. }
                    | FromAgent::Update { .. }
                    | FromAgent::Permission { .. }
                    | FromAgent::OtherRequest { .. }
                    | FromAgent::OtherNotification { .. }) => self.aside(other).await?,
                }
            }
            Ok::<(), String>(())
        })
        .await;
        match waited {
            Ok(result) => result,
            Err(_) => {
                self.prompt = None;
                Ok(())
            }
        }
    }

    /// Answers the pending permission "cancelled" and cancels the prompt in flight.
    pub async fn cancel_now(&mut self) -> Result<(), String> {
        if let Some((id, request)) = self.permission.take() {
            self.cards.refused(&request.tool_call.id);
            self.process
                .send(wire::response(&id, wire::permission_answer(None)))
                .await?;
        }
        if self.prompt.is_some() {
            self.process
                .send(wire::notification("session/cancel", wire::cancel(&self.id)))
                .await?;
        }
        Ok(())
    }

    /// Answers the permission with one of the options the agent offered: allow once for a call
    /// that was allowed, its reject option otherwise (the reason goes with the next prompt).
    /// "Allow always" is never chosen, so every call of the agent's is asked about again.
    async fn answer(
        &mut self,
        id: Value,
        request: &PermissionRequest,
        call_id: String,
        response: &Value,
    ) -> Result<(), String> {
        let title = request.tool_call.title.as_deref().unwrap_or("tool");
        let label = &request.tool_call.id;
        self.cards.refused(label);
        let reject = request.option(&["reject_once", "reject_always"]);
        let choice = match settled(&Value::Null, response) {
            Outcome::Ran { .. } => match request.option(&["allow_once"]) {
                Some(allow) => {
                    self.cards.allowed(label, call_id);
                    Some(allow)
                }
                None => {
                    self.notes.push(format!(
                        "Signoff: {title} was approved, but you offered no one-time allow option, \
                         so it was declined."
                    ));
                    reject
                }
            },
            Outcome::Rejected { reason } => {
                self.notes
                    .push(format!("Signoff: {title} was rejected: {reason}"));
                reject
            }
            Outcome::NotRun { reason } => {
                self.notes
                    .push(format!("Signoff: {title} did not run: {reason}"));
                reject
            }
        };
        self.process
            .send(wire::response(&id, wire::permission_answer(choice)))
            .await
    }

    /// Passes on what the agent says until it asks for a permission or its prompt ends.
    async fn pump(&mut self, events: &Events, cancel: &CancellationToken) -> Result<(), String> {
        loop {
            let message = tokio::select! {
                () = cancel.cancelled() => return self.cancel_now().await,
                message = self.next() => message?,
            };
            // A thought ends where something of the agent's shows next.
            let quiet = matches!(
                message,
                FromAgent::Update {
                    update: Update::Thought(_) | Update::Other(_),
                    ..
                } | FromAgent::OtherNotification { .. }
            );
            if !quiet {
                self.end_thought(events).await;
            }
            let event = match message {
                FromAgent::Response { id, result } if Some(id) == self.prompt => {
                    self.prompt = None;
                    let done = result.map_err(|message| format!("the agent failed: {message}"))?;
                    if let Some(line) = stop_line(&done) {
                        let _ = events.send(Ok(ModelEvent::Text(line))).await;
                    }
                    return Ok(());
                }
                FromAgent::Update {
                    update: Update::Message(text),
                    ..
                } => ModelEvent::Text(text),
                FromAgent::Update {
                    update: Update::Thought(text),
                    ..
                } => {
                    self.thought.push_str(&text);
                    continue;
                }
                FromAgent::Update {
                    update: Update::ToolCall(call),
                    ..
                } => match self.reported_call(call) {
                    Some(event) => event,
                    None => continue,
                },
                FromAgent::Update {
                    update: Update::Plan(entries),
                    ..
                } => match plan_text(&entries) {
                    Some(text) if self.plan.as_ref() != Some(&entries) => {
                        self.plan = Some(entries);
                        ModelEvent::Text(text)
                    }
                    Some(_) | None => continue,
                },
                FromAgent::Permission { id, request } => {
                    let mut call = request.tool_call.clone();
                    if let Some(known) = self.calls.get(&call.id) {
                        let mut merged = known.clone();
                        merged.merge(call);
                        call = merged;
                    }
                    let proposal = proposed(&call);
                    self.cards.asked.insert(call.id.clone(), Asked::Waiting);
                    self.permission = Some((
                        id,
                        PermissionRequest {
                            tool_call: call,
                            ..*request
                        },
                    ));
                    let _ = events.send(Ok(ModelEvent::ToolCall(proposal))).await;
                    return Ok(());
                }
                other @ (FromAgent::Response { .. }
                | FromAgent::Update { .. }
                | FromAgent::OtherRequest { .. }
                | FromAgent::OtherNotification { .. }) => {
                    self.aside(other).await?;
                    continue;
                }
            };
            if events.send(Ok(event)).await.is_err() {
                return self.cancel_now().await;
            }
        }
    }
}

/// The agent's plan as the answer shows it: each entry with its status; an empty plan shows
/// nothing.
fn plan_text(entries: &[(String, String)]) -> Option<String> {
    if entries.is_empty() {
        return None;
    }
    let lines: Vec<String> = entries
        .iter()
        .map(|(step, status)| {
            let mark = match status.as_str() {
                "completed" => "[x]",
                "in_progress" => "[~]",
                _ => "[ ]",
            };
            format!("- {mark} {step}")
        })
        .collect();
    Some(format!("\n\nPlan:\n{}\n\n", lines.join("\n")))
}

/// The calls of a session's agent that have cards: the ones it asked permission for, by the
/// agent's id, and the ones it ran without asking, as last shown.
#[derive(Debug, Default)]
struct Cards {
    asked: HashMap<String, Asked>,
    ran: HashMap<String, RanCall>,
}

/// Where a call the agent asked about stands, for its later reports.
#[derive(Debug, Clone, PartialEq)]
enum Asked {
    /// Its batch waits: the agent has not been answered, so nothing it reports shows.
    Waiting,
    /// Allowed: its end is shown as the result of the call of this server id.
    Allowed(String),
    /// Refused, cancelled, or its end shown already: its card says all there is.
    Done,
}

impl Cards {
    /// What `call` (all that is known of it) shows now, if anything: for a call the agent asked
    /// about and was allowed, its end as that call's result ([`ModelEvent::Reported`], once);
    /// for one it ran without asking, its card if it changed since it was last shown
    /// ([`Cards::ran`]).
    fn report(&mut self, call: &ToolCall, cwd: &std::path::Path) -> Option<ModelEvent> {
        let Some(asked) = self.asked.get_mut(&call.id) else {
            return self.ran(call, cwd).map(ModelEvent::Ran);
        };
        let Asked::Allowed(id) = asked else {
            return None;
        };
        let report = ran_report(call, cwd).filter(|report| report.status.ended())?;
        let id = std::mem::take(id);
        *asked = Asked::Done;
        Some(ModelEvent::Reported(RanCall { id, ..report }))
    }

    /// The call the agent asked about as `label` was allowed, as the call `call_id`.
    fn allowed(&mut self, label: &str, call_id: String) {
        self.asked.insert(label.to_owned(), Asked::Allowed(call_id));
    }

    /// The call the agent asked about as `label` was refused or cancelled.
    fn refused(&mut self, label: &str) {
        self.asked.insert(label.to_owned(), Asked::Done);
    }

    /// The card of a call the agent ran without asking, if it changed since it was last shown.
    /// A call that ended is shown once so: a report after its result would be a new call to the
    /// chat.
    fn ran(&mut self, call: &ToolCall, cwd: &std::path::Path) -> Option<RanCall> {
        let report = ran_report(call, cwd)?;
        match self.ran.get(&call.id) {
            Some(shown) if shown.status.ended() || *shown == report => None,
            Some(_) | None => {
                self.ran.insert(call.id.clone(), report.clone());
                Some(report)
            }
        }
    }
}

/// What the card of a call the agent ran itself shows: the same arguments as a held call's,
/// its status, its output and the changes it made. A call the agent is about to ask permission
/// for reports itself pending first: its card, under the same id as the held call then
/// ([`crate::agent::model::ModelToolCall::assign_ran_ids`]), becomes that held call's.
fn ran_report(call: &ToolCall, cwd: &std::path::Path) -> Option<RanCall> {
    let status = RanStatus::parse(call.status.as_deref()?)?;
    let proposal = proposed(call);
    Some(RanCall {
        preview: changes_preview(cwd, &proposal.args),
        id: proposal.id,
        name: proposal.name,
        args: proposal.args,
        status,
        output: call.text.clone(),
    })
}

/// What the answer says of a prompt that ended other than by the agent finishing its turn.
fn stop_line(done: &Value) -> Option<String> {
    match done.get("stopReason").and_then(Value::as_str) {
        Some("end_turn") | None => None,
        Some("cancelled") => Some("\n\n(The agent's turn was cancelled.)".into()),
        Some("max_tokens") => Some("\n\n(The agent ran out of tokens.)".into()),
        Some("max_turn_requests") => Some("\n\n(The agent reached its limit of requests.)".into()),
        Some("refusal") => Some("\n\n(The agent refused to go on.)".into()),
        Some(other) => Some(format!("\n\n(The agent stopped: {other}.)")),
    }
}

/// A session that stopped, as the chat's failure says it.
fn stopped(why: &str) -> String {
    format!("The coding agent stopped: {why}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(status: &str) -> ToolCall {
        ToolCall {
            id: "toolu_1".into(),
            title: Some("Read notes.md".into()),
            kind: Some("read".into()),
            status: Some(status.into()),
            raw_input: Some(json!({"file_path": "/w/notes.md"})),
            locations: vec!["/w/notes.md".into()],
            ..ToolCall::default()
        }
    }

    #[test]
    fn a_call_the_agent_ran_shows_pending_running_and_once_ended() {
        let cwd = std::path::Path::new("/w");
        let mut cards = Cards::default();
        let pending = cards.ran(&read("pending"), cwd).unwrap();
        assert_eq!(pending.status, RanStatus::Pending);
        let running = cards.ran(&read("in_progress"), cwd).unwrap();
        assert_eq!(running.status, RanStatus::InProgress);
        assert_eq!(running.name, "read");
        assert_eq!(running.args["input"]["file_path"], "/w/notes.md");
        assert_eq!(running.args["locations"], json!(["/w/notes.md"]));
        assert_eq!(
            cards.ran(&read("in_progress"), cwd),
            None,
            "nothing changed"
        );
        let done = ToolCall {
            text: vec!["# Notes".into()],
            ..read("completed")
        };
        let ended = cards.ran(&done, cwd).unwrap();
        assert_eq!(
            (ended.status, ended.output.clone()),
            (RanStatus::Completed, vec!["# Notes".to_owned()])
        );
        assert_eq!(
            cards.ran(&read("failed"), cwd),
            None,
            "ended: shown once so"
        );
    }

    #[test]
    fn a_call_asked_about_shows_only_its_end_once_allowed_and_a_change_shows_as_its_diff() {
        let cwd = std::path::Path::new("/w");
        let mut cards = Cards::default();
        cards.asked.insert("toolu_1".into(), Asked::Waiting);
        assert_eq!(
            cards.report(&read("completed"), cwd),
            None,
            "not answered yet"
        );
        cards.allowed("toolu_1", "ran_1".into());
        assert_eq!(
            cards.report(&read("in_progress"), cwd),
            None,
            "the held card shows it"
        );
        let done = ToolCall {
            text: vec!["# Notes".into()],
            ..read("completed")
        };
        let Some(ModelEvent::Reported(end)) = cards.report(&done, cwd) else {
            panic!("no end reported")
        };
        assert_eq!(
            (end.id.as_str(), end.status, end.output),
            ("ran_1", RanStatus::Completed, vec!["# Notes".to_owned()])
        );
        assert_eq!(cards.report(&done, cwd), None, "its end shows once");
        cards.asked.insert("toolu_3".into(), Asked::Waiting);
        cards.refused("toolu_3");
        let failed = ToolCall {
            id: "toolu_3".into(),
            ..read("failed")
        };
        assert_eq!(
            cards.report(&failed, cwd),
            None,
            "a refused call stays refused"
        );
        let edit = ToolCall {
            id: "toolu_2".into(),
            kind: Some("edit".into()),
            status: Some("completed".into()),
            diffs: vec![("/w/a.txt".into(), Some("hi\n".into()), "hello\n".into())],
            ..ToolCall::default()
        };
        let Some(RanCall {
            preview: Some(signoff_protocol::hitl::Preview::Diff(diff)),
            ..
        }) = cards.ran(&edit, cwd)
        else {
            panic!("no diff")
        };
        assert!(
            diff.contains("a/a.txt") && diff.contains("+hello"),
            "{diff}"
        );
        let unknown = ToolCall {
            status: Some("paused".into()),
            ..read("x")
        };
        assert_eq!(Cards::default().ran(&unknown, cwd), None);
    }
}
