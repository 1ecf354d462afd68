//! One MCP server connection, opened once and shared by every call and chat: a supervisor task
//! connects (stdio child process, streamable HTTP, or
//! legacy HTTP+SSE), publishes the live peer and its tool list,
//! notices when the connection dies, and reconnects with exponential backoff. Calls never open
//! a connection themselves; they wait briefly for one that is being (re)opened, and otherwise
//! fail at once with the last error.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ProtocolVersion, Tool};
use rmcp::service::{
    serve_client_with_lifecycle_and_ct, ClientLifecycleMode, QuitReason, RunningService,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{Peer, RoleClient, ServiceError, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::asking::{answer_input_requests, AskBack, InFlight};
use super::direct::{self, Direct, DirectError};
use super::sse::SseClientTransport;
use super::stdio::StdioChild;
use crate::agent::config::Endpoint;
use crate::agent::schema::ArgsSchema;
use crate::agent::tools::SharedAsker;

/// Delays between reconnect attempts: doubling from `FIRST_RETRY` up to `MAX_RETRY`.
const FIRST_RETRY: Duration = Duration::from_millis(250);
const MAX_RETRY: Duration = Duration::from_secs(30);
/// A connection that stayed up this long resets the backoff (so a crash loop keeps backing off).
const STABLE_AFTER: Duration = Duration::from_secs(10);
/// The most times one call may answer `input_required` before it is given up: a server that
/// keeps asking never ends the call otherwise.
pub const MAX_INPUT_ROUNDS: usize = 10;

/// A live connection as callers see it.
#[derive(Clone)]
pub struct Live {
    peer: Peer<RoleClient>,
    /// The server's tools, as listed right after connecting.
    pub tools: Arc<Vec<Tool>>,
    /// Each listed tool's input schema, compiled once per connection (by the tool's name on
    /// the server).
    pub schemas: Arc<HashMap<String, ArgsSchema>>,
    /// Cancelled when this connection ends, so calls in flight fail at once instead of waiting
    /// for their timeout.
    ended: CancellationToken,
    /// Cancelling it drops this connection (a caller saw it broken); the supervisor reconnects.
    reset: CancellationToken,
    /// The short way for calls, when the server speaks the stateless revision over streamable
    /// HTTP (`direct`).
    direct: Option<Arc<Direct>>,
}

/// What a connection is doing; published through a watch channel.
#[derive(Clone)]
pub enum State {
    Connecting {
        last_error: Option<String>,
    },
    Ready(Live),
    /// The last attempt failed; the next one starts at `retry_at`.
    Down {
        error: String,
        retry_at: Instant,
    },
    /// The server is shutting down (or the configuration was refused at first connect).
    Stopped {
        reason: String,
    },
}

/// How a call failed, before it is worded for the model.
#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
    /// No connection could be had; the text says why.
    Unavailable(String),
    /// The connection died while the call was running (the server crashed or went away).
    Lost(String),
    /// The server answered with a JSON-RPC error.
    Rejected(String),
}

/// A shared connection to one MCP server. Dropping the last handle stops its supervisor and the
/// server process.
pub struct Connection {
    name: String,
    state: watch::Receiver<State>,
    /// The calls running on it, whom its server's questions go to.
    in_flight: Arc<InFlight>,
    /// Stops the supervisor when the last handle goes away.
    _stop: DropGuard,
}

impl Connection {
    /// Starts connecting in the background; returns at once.
    pub fn open(name: String, endpoint: Endpoint, connect_timeout: Duration) -> Arc<Connection> {
        let (sender, receiver) = watch::channel(State::Connecting { last_error: None });
        let stop = CancellationToken::new();
        let in_flight = Arc::new(InFlight::default());
        let supervisor = Supervisor {
            name: name.clone(),
            endpoint,
            connect_timeout,
            state: sender,
            stop: stop.clone(),
            in_flight: in_flight.clone(),
            http: direct::http_client(),
        };
        tokio::spawn(supervisor.run());
        Arc::new(Connection {
            name,
            state: receiver,
            in_flight,
            _stop: stop.drop_guard(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The current state, without waiting.
    pub fn state(&self) -> State {
        self.state.borrow().clone()
    }

    /// A watch on the state, for code that reacts to the first connect.
    pub fn subscribe(&self) -> watch::Receiver<State> {
        self.state.clone()
    }

    /// Waits for a live connection until `deadline`. While the connection is down, waits for the
    /// next attempt only if it starts within `patience`; otherwise fails at once with the last
    /// error (a dead server must not make every call wait out its timeout).
    pub async fn live(&self, deadline: Instant, patience: Duration) -> Result<Live, String> {
        let mut state = self.state.clone();
        loop {
            let current = state.borrow_and_update().clone();
            let last_error = match current {
                // A caller may have seen it die before the supervisor did: wait for the next.
                State::Ready(live) if live.reset.is_cancelled() || live.ended.is_cancelled() => {
                    None
                }
                State::Ready(live) => return Ok(live),
                State::Stopped { reason } => return Err(reason),
                State::Down { error, retry_at } => {
                    if retry_at > Instant::now() + patience {
                        let wait = retry_at.saturating_duration_since(Instant::now());
                        return Err(format!(
                            "{error} (next reconnect attempt in {} s)",
                            wait.as_secs().max(1)
                        ));
                    }
                    Some(error)
                }
                State::Connecting { last_error } => last_error,
            };
            match tokio::time::timeout_at(deadline, state.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_closed)) => return Err("the connection was shut down".to_owned()),
                Err(_elapsed) => {
                    return Err(match last_error {
                        Some(error) => format!("still reconnecting after: {error}"),
                        None => "still connecting".to_owned(),
                    })
                }
            }
        }
    }

    /// Calls a tool over `live`. A dead connection is reported as [`CallError::Lost`] and reset,
    /// so the supervisor reconnects. The server's questions while it runs go to `asker`, both
    /// `elicitation/create` requests and (2026-07-28) `input_required` results, after which the
    /// call is sent again with the answers and the server's `requestState` as it gave it, at
    /// most [`MAX_INPUT_ROUNDS`] times.
    pub async fn call(
        &self,
        live: &Live,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        asker: Option<SharedAsker>,
    ) -> Result<CallToolResult, CallError> {
        let _in_flight = self.in_flight.register(asker.clone());
        let mut params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        for _round in 0..MAX_INPUT_ROUNDS {
            let once = async {
                match live.direct.as_ref().filter(|direct| direct.takes(tool)) {
                    Some(direct) => {
                        let result = direct.call_once(params.clone()).await;
                        self.direct_result(live, result)
                    }
                    None => {
                        let result = live.peer.call_tool_once(params.clone()).await;
                        self.call_result(live, result)
                    }
                }
            };
            let result = tokio::select! {
                result = once => result,
                () = live.ended.cancelled() => {
                    return Err(CallError::Lost(format!(
                        "the MCP server {} stopped while the call was running",
                        self.name
                    )))
                }
            };
            let asked = match result? {
                CallToolResponse::Complete(result) => return Ok(result),
                CallToolResponse::InputRequired(asked) => asked,
                CallToolResponse::Task(_) => {
                    return Err(CallError::Rejected(
                        "the server made the call a task, which Signoff does not follow".to_owned(),
                    ))
                }
                // CallToolResponse is non-exhaustive.
                _ => return Err(CallError::Rejected("an unknown kind of result".to_owned())),
            };
            let requests = asked.input_requests.unwrap_or_default();
            if requests.is_empty() && asked.request_state.is_none() {
                return Err(CallError::Rejected(
                    "it answered input_required with nothing to answer".to_owned(),
                ));
            }
            let answers = answer_input_requests(asker.as_ref(), &self.name, requests)
                .await
                .map_err(CallError::Rejected)?;
            params.input_responses = (!answers.is_empty()).then_some(answers);
            params.request_state = asked.request_state;
        }
        Err(CallError::Rejected(format!(
            "it asked for input {MAX_INPUT_ROUNDS} times without finishing the call"
        )))
    }

    /// One direct round's answer, or how it failed (a broken request resets the connection, as
    /// rmcp's transport would).
    fn direct_result(
        &self,
        live: &Live,
        result: Result<CallToolResponse, DirectError>,
    ) -> Result<CallToolResponse, CallError> {
        match result {
            Ok(response) => Ok(response),
            Err(DirectError::Rejected(error)) => Err(CallError::Rejected(error)),
            Err(DirectError::Broken(error)) => {
                live.reset.cancel();
                Err(CallError::Lost(format!(
                    "the connection to the MCP server {} broke ({error})",
                    self.name
                )))
            }
        }
    }

    /// One round's answer, or how it failed (a dead connection is reset).
    fn call_result(
        &self,
        live: &Live,
        result: Result<CallToolResponse, ServiceError>,
    ) -> Result<CallToolResponse, CallError> {
        match result {
            Ok(response) => Ok(response),
            Err(ServiceError::McpError(error)) => {
                Err(CallError::Rejected(error.message.to_string()))
            }
            Err(ServiceError::TransportClosed) => {
                live.reset.cancel();
                Err(CallError::Lost(format!(
                    "the MCP server {} stopped while the call was running",
                    self.name
                )))
            }
            Err(error @ (ServiceError::TransportSend(_) | ServiceError::Cancelled { .. })) => {
                live.reset.cancel();
                Err(CallError::Lost(format!(
                    "the connection to the MCP server {} broke ({error})",
                    self.name
                )))
            }
            Err(
                error @ (ServiceError::UnexpectedResponse
                | ServiceError::SubscriptionLagged { .. }
                | ServiceError::Timeout { .. }
                | ServiceError::InputRequiredRoundsExceeded { .. }),
            ) => Err(CallError::Rejected(error.to_string())),
            // ServiceError is non-exhaustive: a variant added upstream is reported as is.
            Err(error) => Err(CallError::Rejected(error.to_string())),
        }
    }
}

/// Owns the running connection and the reconnect loop.
struct Supervisor {
    name: String,
    endpoint: Endpoint,
    connect_timeout: Duration,
    state: watch::Sender<State>,
    stop: CancellationToken,
    in_flight: Arc<InFlight>,
    /// The direct calls' HTTP client: one pool of kept-alive connections for the server's
    /// lifetime, across reconnects.
    http: reqwest::Client,
}

type Service = RunningService<RoleClient, AskBack>;

impl Supervisor {
    async fn run(self) {
        let mut delay = FIRST_RETRY;
        let mut last_error: Option<String> = None;
        loop {
            self.state.send_replace(State::Connecting {
                last_error: last_error.clone(),
            });
            let reset = self.stop.child_token();
            let stderr_tail = Arc::new(Mutex::new(None));
            let attempt = tokio::select! {
                () = self.stop.cancelled() => break,
                attempt = tokio::time::timeout(
                    self.connect_timeout,
                    self.connect(reset.clone(), stderr_tail.clone()),
                ) => attempt,
            };
            let error = match attempt {
                Ok(Ok((service, tools))) => {
                    tracing::info!(server = %self.name, tools = tools.len(), "MCP server connected");
                    let ended = CancellationToken::new();
                    let schemas = tools
                        .iter()
                        .map(|tool| {
                            let schema = serde_json::Value::Object((*tool.input_schema).clone());
                            let compiled = ArgsSchema::compile(&tool.name, &schema);
                            (tool.name.to_string(), compiled)
                        })
                        .collect();
                    let direct = self.direct(&service, &tools);
                    self.state.send_replace(State::Ready(Live {
                        peer: service.peer().clone(),
                        tools: Arc::new(tools),
                        schemas: Arc::new(schemas),
                        ended: ended.clone(),
                        reset,
                        direct,
                    }));
                    // From now on stderr explains a crash; the start-up chatter would mislead.
                    if let Ok(mut tail) = stderr_tail.lock() {
                        *tail = None;
                    }
                    let since = Instant::now();
                    let quit = service.waiting().await;
                    ended.cancel();
                    if self.stop.is_cancelled() {
                        break;
                    }
                    if since.elapsed() >= STABLE_AFTER {
                        delay = FIRST_RETRY;
                    }
                    let why = match quit {
                        Ok(QuitReason::Closed) => "the server closed the connection".to_owned(),
                        Ok(QuitReason::Cancelled) => "the connection broke".to_owned(),
                        Ok(QuitReason::JoinError(error)) | Err(error) => {
                            format!("the connection task failed: {error}")
                        }
                        // QuitReason is non-exhaustive.
                        Ok(other) => format!("the connection ended ({other:?})"),
                    };
                    with_stderr(why, &stderr_tail)
                }
                Ok(Err(error)) => with_stderr(error, &stderr_tail),
                Err(_elapsed) => with_stderr(
                    format!(
                        "no answer within {} s of connecting",
                        self.connect_timeout.as_secs_f32()
                    ),
                    &stderr_tail,
                ),
            };
            let error = format!("MCP server {} is unavailable: {error}", self.name);
            tracing::warn!(server = %self.name, retry_in_ms = delay.as_millis() as u64, "{error}");
            self.state.send_replace(State::Down {
                error: error.clone(),
                retry_at: Instant::now() + delay,
            });
            last_error = Some(error);
            tokio::select! {
                () = self.stop.cancelled() => break,
                () = tokio::time::sleep(delay) => {}
            }
            delay = (delay * 2).min(MAX_RETRY);
        }
        self.state.send_replace(State::Stopped {
            reason: format!("the MCP server {} was shut down", self.name),
        });
    }

    /// Opens the transport, does the MCP handshake and lists the tools.
    async fn connect(
        &self,
        reset: CancellationToken,
        stderr_tail: Arc<Mutex<Option<String>>>,
    ) -> Result<(Service, Vec<Tool>), String> {
        let service = match &self.endpoint {
            Endpoint::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut child = tokio::process::Command::new(command);
                child
                    .args(args)
                    .envs(env.iter().cloned())
                    .kill_on_drop(true);
                if let Some(cwd) = cwd {
                    child.current_dir(cwd);
                }
                let mut wrapped = process_wrap::tokio::CommandWrap::from(child);
                // Its own process group, so stopping it also stops what it started (npx -> node).
                wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
                let (transport, stderr) = StdioChild::spawn(wrapped)
                    .map_err(|error| format!("cannot start {command:?}: {error}"))?;
                if let Some(stderr) = stderr {
                    tokio::spawn(keep_stderr(self.name.clone(), stderr, stderr_tail));
                }
                self.ask_back()
                    .serve_with_ct(transport, reset)
                    .await
                    .map_err(|error| format!("the MCP handshake failed: {error}"))?
            }
            Endpoint::Http {
                url,
                headers,
                sse: false,
            } => {
                let headers: HashMap<_, _> = headers.iter().cloned().collect();
                let config = StreamableHttpClientTransportConfig::with_uri(url.clone())
                    .custom_headers(headers);
                // The stateless revision where the server offers it (`server/discover`, no
                // session, each request self-contained), the handshake otherwise.
                let lifecycle = ClientLifecycleMode::Auto {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    legacy_version: None,
                };
                serve_client_with_lifecycle_and_ct(
                    self.ask_back(),
                    StreamableHttpClientTransport::from_config(config),
                    lifecycle,
                    reset,
                )
                .await
                .map_err(|error| format!("the MCP handshake with {url} failed: {error}"))?
            }
            Endpoint::Http {
                url,
                headers,
                sse: true,
            } => {
                let transport = SseClientTransport::connect(url, headers)
                    .await
                    .map_err(|error| format!("cannot open the SSE stream at {url}: {error}"))?;
                self.ask_back()
                    .serve_with_ct(transport, reset)
                    .await
                    .map_err(|error| format!("the MCP handshake with {url} failed: {error}"))?
            }
        };
        let tools = service
            .peer()
            .list_all_tools()
            .await
            .map_err(|error| format!("listing its tools failed: {error}"))?;
        Ok((service, tools))
    }
}

impl Supervisor {
    /// The short way for this connection's calls: a streamable-HTTP server that negotiated the
    /// stateless revision.
    fn direct(&self, service: &Service, tools: &[Tool]) -> Option<Arc<Direct>> {
        let Endpoint::Http {
            url,
            headers,
            sse: false,
        } = &self.endpoint
        else {
            return None;
        };
        let info = service.peer().peer_info()?;
        (info.protocol_version == direct::REVISION)
            .then(|| Arc::new(Direct::new(self.http.clone(), url, headers, tools)))
    }

    /// The client end of one connection: it answers the server's questions through the call
    /// in flight.
    fn ask_back(&self) -> AskBack {
        AskBack::new(self.name.clone(), self.in_flight.clone())
    }
}

/// Logs a stdio server's stderr and keeps its last line for error messages.
async fn keep_stderr(
    name: String,
    stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<Option<String>>>,
) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(server = %name, "stderr: {line}");
        if !line.trim().is_empty() {
            if let Ok(mut tail) = tail.lock() {
                *tail = Some(line);
            }
        }
    }
}

/// Adds the stdio server's last stderr line, which usually says why it stopped.
fn with_stderr(error: String, tail: &Mutex<Option<String>>) -> String {
    let last = tail.lock().ok().and_then(|tail| tail.clone());
    match last {
        Some(line) => format!("{error} (its last stderr line: {line:?})"),
        None => error,
    }
}
