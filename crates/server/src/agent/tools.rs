//! The tool seam: a [`ToolSource`] lists and calls tools (the built-in file tools, MCP
//! servers, `ask_user`, and agents as tools), and a [`Toolbox`] is one agent's tools with their approval rules.

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use signoff_protocol::hitl::elicitation::{Elicitation, Reply};
use signoff_protocol::hitl::Preview;
use tokio::time::Instant;
use tracing::Instrument;

use super::schema::ArgsSchema;

/// What the model is told about one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub input_schema: Value,
    /// The name of the source that serves it (an MCP server's name, or `files`).
    pub source: String,
    /// What the tool says of itself (MCP's tool annotations), for the policies.
    pub hints: crate::agent::cedar::ToolHints,
}

/// Why a tool call failed; the text goes to the model (and the person) as the call's error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    #[error("{0}")]
    InvalidArgs(String),
    #[error("{0}")]
    Failed(String),
    #[error("the tool did not answer within {0} s")]
    Timeout(u64),
    #[error("no tool named {0}")]
    Unknown(String),
    #[error("the tool source could not be reached: {0}")]
    Unavailable(String),
}

/// Whom a tool's server can ask while one call runs (an MCP server's elicitation): the
/// runtime, which shows the question as a card to the person the call is for.
pub trait Asker: Send + Sync {
    /// Puts the question to the person and waits for the reply.
    fn ask(&self, question: Elicitation) -> BoxFuture<'static, Reply>;
    /// How long the call has waited for people so far, a question still open included: the
    /// tool's timeout does not count it.
    fn waited(&self) -> Duration;
}

/// An [`Asker`] shared by the layers a call passes through.
pub type SharedAsker = Arc<dyn Asker>;

/// How long an [`Asker`] has waited for people: its finished waits, and since when one is open.
#[derive(Default)]
pub struct WaitClock(std::sync::Mutex<(Duration, Option<std::time::Instant>)>);

impl WaitClock {
    /// Starts a wait, added to the total when the guard drops.
    pub fn start(&self) -> OpenWait<'_> {
        if let Ok(mut waited) = self.0.lock() {
            waited.1 = Some(std::time::Instant::now());
        }
        OpenWait(self)
    }

    /// The waits so far, an open one included.
    pub fn waited(&self) -> Duration {
        let waited = self.0.lock().map(|waited| *waited).unwrap_or_default();
        waited.0 + waited.1.map_or(Duration::ZERO, |since| since.elapsed())
    }
}

/// A wait of a [`WaitClock`] while it lasts.
pub struct OpenWait<'a>(&'a WaitClock);

impl Drop for OpenWait<'_> {
    fn drop(&mut self) {
        if let Ok(mut waited) = (self.0).0.lock() {
            if let Some(since) = waited.1.take() {
                waited.0 += since.elapsed();
            }
        }
    }
}

/// Waits for `call` until `timeout` after `started`, not counting the time its asker waited
/// for people; `None` when the time ran out.
pub async fn within<T>(
    call: impl std::future::Future<Output = T>,
    started: Instant,
    timeout: Duration,
    asker: Option<&SharedAsker>,
) -> Option<T> {
    let waited = || asker.map_or(Duration::ZERO, |asker| asker.waited());
    tokio::pin!(call);
    loop {
        let before = waited();
        tokio::select! {
            out = &mut call => return Some(out),
            () = tokio::time::sleep_until(started + timeout + before) => {
                if waited() == before {
                    return None;
                }
            }
        }
    }
}

/// A place tools come from.
pub trait ToolSource: Send + Sync + 'static {
    /// The source's name, shown as an action request's `server`.
    fn name(&self) -> &str;
    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ToolSpec>, ToolError>>;
    /// Calls one tool; the result is the `response` object of the `function_response` part.
    /// The source should give up after `timeout` (the runtime also stops waiting then).
    fn call<'a>(
        &'a self,
        tool: &'a str,
        args: Value,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Value, ToolError>>;
    /// [`ToolSource::call`] for a call whose server may ask the person questions while it
    /// runs (`asker`); a source whose tools never ask ignores it.
    fn call_asking<'a>(
        &'a self,
        tool: &'a str,
        args: Value,
        timeout: Duration,
        asker: SharedAsker,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        let _ = asker;
        self.call(tool, args, timeout)
    }
    /// Why the source cannot serve calls right now (an MCP server that is down), or `None`.
    fn unavailable(&self) -> Option<String> {
        None
    }
    /// Whether its tools' definitions come from elsewhere (an MCP server), so each is pinned
    /// (`agent::pins`) and held back when it changes; Signoff's own sources need no pin.
    fn pins_definitions(&self) -> bool {
        false
    }
    /// What a held call of `tool` would change, read without side effects at pause time
    /// (docs/wire.md, Previews), with the current text an edit may be diffed against; `None`
    /// when the source has nothing to show (only the built-in file tools do).
    fn preview(&self, _tool: &str, _args: &Value) -> Option<(Preview, Option<String>)> {
        None
    }
    /// Whether an approver may edit a call's arguments before it runs; `false` for a program
    /// whose permission answer can carry no arguments (an ACP agent picks one of its options).
    fn takes_edits(&self) -> bool {
        true
    }
}

/// A successful tool result in the MCP `CallToolResult` shape that kagent shows.
pub fn text_result(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}], "isError": false})
}

/// A failed tool result: `isError: true` marks it in the UI (docs/wire.md, Tool calls and results).
pub fn error_result(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}], "isError": true})
}

/// The text of a tool result (its text content items joined), for models that read text.
pub fn result_text(response: &Value) -> String {
    match response.get("content").and_then(Value::as_array) {
        Some(items) => items
            .iter()
            .filter_map(|item| item.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        None => response.to_string(),
    }
}

/// Where a tool's definition stands against its pin (`agent::pins`): only a tool of
/// Signoff's own or one as pinned is listed and called.
#[derive(Debug, Clone, PartialEq)]
pub enum PinState {
    /// One of Signoff's own tools (the built-in files, `ask_user`, agents as tools).
    Trusted,
    /// Served by an MCP server and not yet checked against its pin.
    Unchecked,
    /// As pinned (first seen, or approved since).
    Pinned,
    /// Other than pinned: held back until an operator approves the change.
    Changed(Box<crate::store::ToolPinRow>),
}

impl PinState {
    /// Whether a tool in this state may be listed and called.
    pub fn usable(&self) -> bool {
        matches!(self, PinState::Trusted | PinState::Pinned)
    }
}

/// One exposed tool of an agent.
#[derive(Clone)]
pub struct ExposedTool {
    pub spec: ToolSpec,
    pub requires_approval: bool,
    /// Whether its definition may be used now.
    pub pin: PinState,
    source: Arc<dyn ToolSource>,
    /// `spec.input_schema`, compiled when the tool is added.
    args_schema: Arc<ArgsSchema>,
}

impl ExposedTool {
    fn new(spec: ToolSpec, requires_approval: bool, source: Arc<dyn ToolSource>) -> Self {
        let args_schema = Arc::new(ArgsSchema::compile(&spec.name, &spec.input_schema));
        let pin = match source.pins_definitions() {
            true => PinState::Unchecked,
            false => PinState::Trusted,
        };
        ExposedTool {
            spec,
            requires_approval,
            pin,
            source,
            args_schema,
        }
    }

    /// Why a call of it is refused while it is held back, or `None` when it may run.
    pub fn held_back(&self) -> Option<String> {
        let name = &self.spec.name;
        match &self.pin {
            PinState::Trusted | PinState::Pinned => None,
            PinState::Unchecked => Some(format!(
                "the tool {name} is held back: its definition is not yet checked against the one \
                 approved for it"
            )),
            PinState::Changed(_) => Some(format!(
                "the tool {name} is held back: its server now describes it otherwise than when \
                 it was approved; an operator must approve the change before it runs"
            )),
        }
    }

    /// Checks arguments against the tool's input schema ([`ArgsSchema::check`]).
    pub fn check_args(&self, args: &Value) -> Result<(), String> {
        self.args_schema.check(args)
    }

    /// The source's preview of a call of this tool with `args` ([`ToolSource::preview`]).
    /// Whether an approver may edit its calls' arguments ([`ToolSource::takes_edits`]).
    pub fn takes_edits(&self) -> bool {
        self.source.takes_edits()
    }

    pub fn preview(&self, args: &Value) -> Option<(Preview, Option<String>)> {
        self.source.preview(&self.spec.name, args)
    }
}

/// An agent's tools: what the model may call and which calls wait for a person. Clones share
/// one list, because a source may add its tools after the agent started serving (an MCP server
/// that was down at start adds them when it first connects).
#[derive(Clone, Default)]
pub struct Toolbox {
    tools: Arc<RwLock<Vec<ExposedTool>>>,
    /// Told when tools are added, so their pins are checked (`agent::pins`).
    added: Arc<tokio::sync::Notify>,
    /// Every source, also those that have no tools yet, for reporting which are unavailable.
    sources: Arc<RwLock<Vec<Arc<dyn ToolSource>>>>,
    /// The source that answers for any other name (`agent::asked`'s permission prompts), if
    /// the agent has one. Its tools are never listed to a model.
    any_name: Option<Arc<AnyName>>,
}

/// A tool source that answers for any tool name (`agent::asked`'s permission prompts: the
/// asker runs the tool, the source only says it may).
pub trait AnyNameSource: ToolSource {
    /// Its tool `name`, whatever the name.
    fn spec(&self, name: &str) -> ToolSpec;
}

/// A source that answers for every tool name, and the names whose calls need no approval.
struct AnyName {
    source: Arc<dyn AnyNameSource>,
    without_approval: Vec<String>,
    /// The one schema every such tool has (any arguments object), compiled once.
    args_schema: Arc<ArgsSchema>,
}

impl Toolbox {
    pub fn new() -> Self {
        Toolbox::default()
    }

    fn read(&self) -> RwLockReadGuard<'_, Vec<ExposedTool>> {
        // A panic while holding the lock cannot leave the list half-changed (pushes only).
        self.tools.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a source, so [`Toolbox::unavailable`] can report it before it has tools.
    pub fn add_source(&self, source: Arc<dyn ToolSource>) {
        let mut sources = self.sources.write().unwrap_or_else(PoisonError::into_inner);
        if !sources.iter().any(|known| Arc::ptr_eq(known, &source)) {
            sources.push(source);
        }
    }

    pub fn add(&mut self, spec: ToolSpec, requires_approval: bool, source: Arc<dyn ToolSource>) {
        self.add_source(source.clone());
        let tool = ExposedTool::new(spec, requires_approval, source);
        self.tools
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(tool);
        self.added.notify_one();
    }

    /// Adds a source's tools, all or none: a name that another source already exposes is
    /// refused, with a message naming both sources.
    pub fn add_all(
        &self,
        tools: Vec<(ToolSpec, bool)>,
        source: Arc<dyn ToolSource>,
    ) -> Result<(), String> {
        self.add_source(source.clone());
        // Compiled before the lock is taken: readers never wait on schema compilation.
        let tools: Vec<ExposedTool> = tools
            .into_iter()
            .map(|(spec, requires_approval)| {
                ExposedTool::new(spec, requires_approval, source.clone())
            })
            .collect();
        let mut list = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        for ExposedTool { spec, .. } in &tools {
            if let Some(taken) = list.iter().find(|tool| tool.spec.name == spec.name) {
                return Err(format!(
                    "the tool name {} is exposed by both {} and {}; set a `prefix` on one of them",
                    spec.name, taken.spec.source, spec.source
                ));
            }
        }
        list.extend(tools);
        drop(list);
        self.added.notify_one();
        Ok(())
    }

    /// The tools that may be listed and called (none held back by its pin).
    pub fn tools(&self) -> Vec<ExposedTool> {
        self.read()
            .iter()
            .filter(|tool| tool.pin.usable())
            .cloned()
            .collect()
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.read()
            .iter()
            .filter(|tool| tool.pin.usable())
            .map(|tool| tool.spec.clone())
            .collect()
    }

    /// Whether a source lists tool `name` and its pin lets it run (what [`Toolbox::specs`]
    /// would show, without copying them all).
    pub fn lists(&self, name: &str) -> bool {
        self.read()
            .iter()
            .any(|tool| tool.pin.usable() && tool.spec.name == name)
    }

    /// Every tool, the held-back ones too, with where each stands against its pin.
    pub fn every_tool(&self) -> Vec<ExposedTool> {
        self.read().clone()
    }

    /// Tool `name` as its source defines it, held back by its pin or not: for checking rules
    /// and policies, which run nothing.
    pub fn defined(&self, name: &str) -> Option<ExposedTool> {
        let listed = self
            .read()
            .iter()
            .find(|tool| tool.spec.name == name)
            .cloned();
        listed.or_else(|| self.get(name))
    }

    /// Sets where tool `name`'s definition stands against its pin.
    pub fn set_pin(&self, name: &str, pin: PinState) {
        let mut list = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(tool) = list.iter_mut().find(|tool| tool.spec.name == name) {
            tool.pin = pin;
        }
    }

    /// Waits until tools are added (at once if some were since the last wait).
    pub async fn tools_added(&self) {
        self.added.notified().await;
    }

    /// Why tool `name` is held back by its pin, if it is.
    pub fn held_back(&self, name: &str) -> Option<String> {
        self.read()
            .iter()
            .find(|tool| tool.spec.name == name)
            .and_then(ExposedTool::held_back)
    }

    /// The tool named `name`: one a source lists (and its pin lets run), else one the any-name
    /// source answers for.
    pub fn get(&self, name: &str) -> Option<ExposedTool> {
        let listed = self
            .read()
            .iter()
            .find(|tool| tool.spec.name == name)
            .cloned();
        if listed.as_ref().is_some_and(|tool| !tool.pin.usable()) {
            return None;
        }
        listed.or_else(|| {
            let any = self.any_name.as_ref()?;
            let held = !any.without_approval.iter().any(|free| free == name);
            Some(ExposedTool {
                spec: any.source.spec(name),
                requires_approval: held,
                pin: PinState::Trusted,
                source: any.source.clone(),
                args_schema: any.args_schema.clone(),
            })
        })
    }

    /// Lets `source` answer for every tool name no other source lists (permission prompts);
    /// calls of the names in `without_approval` need no approval.
    pub fn answer_any_name(
        &mut self,
        source: Arc<dyn AnyNameSource>,
        without_approval: Vec<String>,
    ) {
        let listed: Arc<dyn ToolSource> = source.clone();
        self.add_source(listed);
        let args_schema = Arc::new(ArgsSchema::compile(
            source.name(),
            &source.spec(source.name()).input_schema,
        ));
        self.any_name = Some(Arc::new(AnyName {
            source,
            without_approval,
            args_schema,
        }));
    }

    /// Whether some source answers for any tool name (then a rule may name any tool).
    pub fn answers_any_name(&self) -> bool {
        self.any_name.is_some()
    }

    /// Whether a call of `name` must wait for a decision. Unknown tools never run, so they
    /// need none (their call fails with "no tool named …").
    pub fn requires_approval(&self, name: &str) -> bool {
        self.get(name).is_some_and(|tool| tool.requires_approval)
    }

    /// The sources that cannot serve calls right now: (source name, why).
    pub fn unavailable(&self) -> Vec<(String, String)> {
        let sources = self.sources.read().unwrap_or_else(PoisonError::into_inner);
        sources
            .iter()
            .filter_map(|source| Some((source.name().to_owned(), source.unavailable()?)))
            .collect()
    }

    /// Calls a tool with a timeout; every failure becomes an error result for the model.
    ///
    /// The call runs as a task of its own, so the timeout ends the wait whatever the tool does:
    /// a source whose future blocks its thread (a file call stuck in a system call) or never
    /// wakes cannot hold the caller past `timeout`. The call's task is aborted then, or when
    /// the caller stops waiting (a cancel).
    pub async fn call(&self, name: &str, args: Value, timeout: Duration) -> Value {
        self.call_asking(name, args, timeout, None).await
    }

    /// [`Toolbox::call`] for a call whose server may ask questions of `asker` while it runs:
    /// the time spent waiting for the person's answers does not count against `timeout`.
    pub async fn call_asking(
        &self,
        name: &str,
        args: Value,
        timeout: Duration,
        asker: Option<SharedAsker>,
    ) -> Value {
        if let Some(why) = self.held_back(name) {
            return error_result(why);
        }
        let Some(tool) = self.get(name) else {
            return error_result(ToolError::Unknown(name.to_owned()).to_string());
        };
        let source = tool.source.clone();
        let tool_name = name.to_owned();
        let for_call = asker.clone();
        let call = async move {
            match for_call {
                Some(asker) => source.call_asking(&tool_name, args, timeout, asker).await,
                None => source.call(&tool_name, args, timeout).await,
            }
        };
        let mut running = AbortOnDrop(tokio::spawn(call.in_current_span()));
        match within(&mut running.0, Instant::now(), timeout, asker.as_ref()).await {
            Some(Ok(Ok(response))) => response,
            Some(Ok(Err(err))) => error_result(err.to_string()),
            Some(Err(join)) => {
                tracing::error!(tool = name, error = %join, "a tool call panicked");
                error_result(format!("the tool {name} failed unexpectedly"))
            }
            None => error_result(ToolError::Timeout(timeout.as_secs()).to_string()),
        }
    }
}

/// A spawned tool call, aborted when nobody waits for it any more.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::mpsc;
    use std::sync::Mutex;

    use futures_util::FutureExt;

    use super::*;

    /// An asker whose question has been open since it was made.
    struct AlwaysAsking(Instant);

    impl Asker for AlwaysAsking {
        fn ask(&self, _question: Elicitation) -> BoxFuture<'static, Reply> {
            async { Reply::Cancel }.boxed()
        }
        fn waited(&self) -> Duration {
            self.0.elapsed()
        }
    }

    #[tokio::test]
    async fn the_wait_for_a_persons_answer_does_not_count_against_the_timeout() {
        let slow = || tokio::time::sleep(Duration::from_millis(600)).map(|()| 7);
        let timeout = Duration::from_millis(150);
        let asker: SharedAsker = Arc::new(AlwaysAsking(Instant::now()));
        let asked = within(slow(), Instant::now(), timeout, Some(&asker)).await;
        assert_eq!(
            asked,
            Some(7),
            "the call was cut off while a person was asked"
        );
        let alone = within(slow(), Instant::now(), timeout, None).await;
        assert_eq!(alone, None, "a call nobody waits on keeps its timeout");
    }

    /// A source whose call blocks its thread until it is released, as a system call that never
    /// returns would.
    struct Stuck {
        released: Mutex<mpsc::Receiver<()>>,
    }

    impl ToolSource for Stuck {
        fn name(&self) -> &str {
            "stuck"
        }

        fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ToolSpec>, ToolError>> {
            async { Ok(Vec::new()) }.boxed()
        }

        fn call<'a>(
            &'a self,
            _tool: &'a str,
            _args: Value,
            _timeout: Duration,
        ) -> BoxFuture<'a, Result<Value, ToolError>> {
            async move {
                let _ = self.released.lock().unwrap().recv();
                Ok(text_result("released"))
            }
            .boxed()
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_timeout_ends_a_call_whose_tool_blocks_its_thread() {
        let (release, released) = mpsc::channel();
        let mut toolbox = Toolbox::new();
        let spec = ToolSpec {
            name: "hang".into(),
            description: "blocks".into(),
            input_schema: json!({"type": "object"}),
            source: "stuck".into(),
            hints: Default::default(),
        };
        let source = Arc::new(Stuck {
            released: Mutex::new(released),
        });
        toolbox.add(spec, false, source);
        // Frees the blocked thread in the end whatever happens, so a failing run ends too.
        let watchdog = release.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(20));
            let _ = watchdog.send(());
        });
        let response = toolbox
            .call("hang", json!({}), Duration::from_secs(1))
            .await;
        let _ = release.send(());
        assert_eq!(
            response,
            error_result("the tool did not answer within 1 s"),
            "the call's answer"
        );
    }
}
