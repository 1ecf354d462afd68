//! Questions an MCP server asks while one of its tools runs, in both ways MCP has: an
//! `elicitation/create` request during the call, and (2026-07-28) a call that answers
//! `input_required` and is retried with the answers. Both reach the call's [`Asker`] (the
//! runtime shows the question as a card to the person the call is for); this module only
//! finds which call a question belongs to and speaks MCP.
//!
//! An `elicitation/create` request names no call. A connection is shared by every chat, so a
//! question is put to the one call in flight on it; with several in flight it cannot be told
//! whose it is, and it is declined rather than shown to someone it may not be for.
//!
//! Codex's approval requests arrive as a custom request (`codex::METHOD`, renamed on the way in
//! so their `codex_*` fields survive) and are answered with the decision Codex expects.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    ClientCapabilities, ClientConfig, CustomRequest, CustomResult, ElicitRequestParams,
    ElicitResult, ErrorData as McpError, Implementation, InputRequest, InputRequests,
};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, RoleClient};
use serde_json::{json, Value};
use signoff_protocol::hitl::codex::{self, decision};
use signoff_protocol::hitl::elicitation::{Elicitation, Reply};

use crate::agent::tools::SharedAsker;

/// The calls running on one connection, each with who its server's questions go to.
#[derive(Default)]
pub struct InFlight {
    next: AtomicU64,
    calls: Mutex<HashMap<u64, Option<SharedAsker>>>,
}

/// A call's place among those in flight; dropping it ends the call's turn to be asked.
pub struct Registered<'a> {
    in_flight: &'a InFlight,
    id: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        if let Ok(mut calls) = self.in_flight.calls.lock() {
            calls.remove(&self.id);
        }
    }
}

impl InFlight {
    /// Counts a call as in flight until the guard is dropped; `asker` is `None` for a call
    /// nobody can be asked about (one forwarded for a client elsewhere).
    pub fn register(&self, asker: Option<SharedAsker>) -> Registered<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut calls) = self.calls.lock() {
            calls.insert(id, asker);
        }
        Registered {
            in_flight: self,
            id,
        }
    }

    /// The asker of the one call in flight, or why there is none to ask.
    fn only_asker(&self) -> Result<SharedAsker, &'static str> {
        let calls = self
            .calls
            .lock()
            .map_err(|_| "Signoff could not look the call up")?;
        let mut askers = calls.values();
        match (askers.next(), askers.next()) {
            (Some(Some(asker)), None) => Ok(asker.clone()),
            (Some(None), None) => Err("nobody in Signoff can answer for this call"),
            (None, _) => Err("Signoff answers questions only while one of your tools runs"),
            (Some(_), Some(_)) => Err(
                "several calls run on this connection at once, and the question names none of \
                 them: ask during a call that runs alone, or return input_required (MCP \
                 2026-07-28)",
            ),
        }
    }
}

/// Signoff's MCP client: it offers elicitation (form and URL) and answers it through the
/// call in flight.
#[derive(Clone)]
pub struct AskBack {
    server: String,
    in_flight: Arc<InFlight>,
}

impl AskBack {
    pub fn new(server: String, in_flight: Arc<InFlight>) -> AskBack {
        AskBack { server, in_flight }
    }
}

/// How Signoff introduces itself to MCP servers: it answers their questions (elicitation, in
/// form and URL mode).
pub fn client_info() -> ClientConfig {
    let capabilities: ClientCapabilities =
        serde_json::from_value(json!({"elicitation": {"form": {}, "url": {}}})).unwrap_or_default();
    ClientConfig::new(
        capabilities,
        Implementation::new("signoff", env!("CARGO_PKG_VERSION")),
    )
}

impl ClientHandler for AskBack {
    fn get_info(&self) -> ClientConfig {
        client_info()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        let params = serde_json::to_value(&request)
            .map_err(|error| McpError::internal_error(error.to_string(), None))?;
        let reply = self.ask_for_call(&params).await?;
        serde_json::from_value(reply.to_value())
            .map_err(|error| McpError::internal_error(error.to_string(), None))
    }

    /// Codex's approval request (`codex::METHOD`): asked as any question is, answered with
    /// Codex's `{"decision"}`. Any other custom request is not Signoff's to answer.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleClient>,
    ) -> Result<CustomResult, McpError> {
        if request.method != super::codex::METHOD {
            return Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                request.method,
                None,
            ));
        }
        let params = request.params.unwrap_or(Value::Null);
        // Only what `codex::mark` renamed is read this way: nothing else is an approval.
        if !codex::is_approval(&params) {
            return Err(McpError::invalid_params(
                "not one of Codex's approval requests",
                None,
            ));
        }
        let reply = self.ask_for_call(&params).await?;
        Ok(CustomResult::new(decision(&reply)))
    }
}

impl AskBack {
    /// Puts a question (`elicitation/create` params) to the one call in flight's asker.
    async fn ask_for_call(&self, params: &Value) -> Result<Reply, McpError> {
        let asker = match self.in_flight.only_asker() {
            Ok(asker) => asker,
            Err(why) => {
                tracing::warn!(server = %self.server, "an MCP server's question was declined: {why}");
                return Err(McpError::invalid_request(why.to_owned(), None));
            }
        };
        ask(&asker, &self.server, params)
            .await
            .map_err(|error| McpError::invalid_params(error, None))
    }
}

/// Puts one question (an `elicitation/create` request's params) to `asker` and waits for the
/// reply; a question that cannot be shown (a form asking for a password, a `javascript:` URL)
/// is refused with the reason, for the server.
pub async fn ask(asker: &SharedAsker, server: &str, params: &Value) -> Result<Reply, String> {
    let elicitation = Elicitation::from_request(params).map_err(|error| {
        tracing::warn!(server, error = %error, "an MCP server's question was refused");
        error.to_string()
    })?;
    Ok(asker.ask(elicitation).await)
}

/// The answers to a 2026-07-28 `input_required` result's requests, keyed as asked: questions
/// go to the asker (in turn, so a person sees one card at a time), a roots request gets no
/// roots (Signoff shares no folders). Sampling is not offered, so asking for it is an error.
pub async fn answer_input_requests(
    asker: Option<&SharedAsker>,
    server: &str,
    requests: InputRequests,
) -> Result<BTreeMap<String, Value>, String> {
    let mut answers = BTreeMap::new();
    for (key, request) in requests {
        let answer = match request {
            InputRequest::Elicitation(request) => {
                let Some(asker) = asker else {
                    return Err("nobody in Signoff can answer for this call".to_owned());
                };
                let params = serde_json::to_value(&request.params)
                    .map_err(|error| format!("an unreadable question: {error}"))?;
                ask(asker, server, &params).await?.to_value()
            }
            InputRequest::ListRoots(_) => json!({"roots": []}),
            InputRequest::CreateMessage(_) => {
                return Err(
                    "the server asked for sampling, which Signoff does not offer".to_owned(),
                )
            }
            // InputRequest is non-exhaustive: a kind added upstream is refused by name.
            other => {
                return Err(format!(
                    "the server asked for input Signoff does not know: {}",
                    serde_json::to_string(&other).unwrap_or_default()
                ))
            }
        };
        answers.insert(key, answer);
    }
    Ok(answers)
}
