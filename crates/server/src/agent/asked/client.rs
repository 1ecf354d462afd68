//! A gateway client that answers questions itself: an MCP client that offered elicitation in
//! its capabilities, whose call (through `http::mcp`) waits on a task. The question an upstream
//! server asks while that call runs is put to the client as well as in the inbox
//! (`runtime::elicit`); the first answer wins, and the other copy is closed: a client's answer
//! decides the inbox copy (channel `mcp_client`), a person's withdraws the client's request.
//!
//! A call the gate settles at once has no task and no inbox copy: its questions go to the
//! client alone ([`ClientOnly`]).
//!
//! The HTTP side owns the wire (the request on the call's event stream, the client's
//! response); this module only carries questions to it and answers back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::{BoxFuture, FutureExt};
use serde_json::Value;
use signoff_protocol::hitl::elicitation::{Elicitation, Mode, Reply};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::agent::approvals::Decider;
use crate::agent::tools::{Asker, WaitClock};

/// The question modes a client offered (its `elicitation` capability: an empty object is a
/// form, as the revisions before URL mode had it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offered {
    pub form: bool,
    pub url: bool,
}

impl Offered {
    /// What the `capabilities` of a client's `initialize` (or its 2026-07-28 envelope) offer.
    pub fn from_capabilities(capabilities: &Value) -> Offered {
        let Some(elicitation) = capabilities.get("elicitation").and_then(Value::as_object) else {
            return Offered::default();
        };
        let (form, url) = (elicitation.get("form"), elicitation.get("url"));
        Offered {
            form: form.is_some() || url.is_none(),
            url: url.is_some(),
        }
    }

    pub fn any(self) -> bool {
        self.form || self.url
    }

    /// Whether the client can be asked `question`.
    pub fn takes(self, question: &Elicitation) -> bool {
        match question.mode {
            // An approval is asked again as an empty form.
            Mode::Form { .. } | Mode::Approval(_) => self.form,
            Mode::Url { .. } => self.url,
        }
    }
}

/// A question on its way to the client: the `elicitation/create` params, where its answer
/// (the client's `ElicitResult`) goes, and a token cancelled once it is no longer wanted
/// (answered in the inbox, expired, or the call ended).
pub struct ClientQuestion {
    pub params: Value,
    pub answer: oneshot::Sender<Value>,
    pub withdrawn: CancellationToken,
}

/// A client that answers its call's questions: who it is (its answer is that person's), what
/// it offered, and the way to its call's stream.
#[derive(Clone)]
pub struct ClientAsking {
    pub decider: Decider,
    offered: Offered,
    questions: mpsc::UnboundedSender<ClientQuestion>,
}

impl ClientAsking {
    /// A client that offered `offered`, and the stream end its questions arrive at.
    pub fn new(
        decider: Decider,
        offered: Offered,
    ) -> (ClientAsking, mpsc::UnboundedReceiver<ClientQuestion>) {
        let (questions, arrive) = mpsc::unbounded_channel();
        let asking = ClientAsking {
            decider,
            offered,
            questions,
        };
        (asking, arrive)
    }

    /// Puts `question` to the client, if it offered its mode and its call still listens.
    pub fn offer(&self, question: &Elicitation) -> Option<Offer> {
        if !self.offered.takes(question) {
            return None;
        }
        let (answer, answered) = oneshot::channel();
        let withdrawn = CancellationToken::new();
        let sent = ClientQuestion {
            params: question.to_request(),
            answer,
            withdrawn: withdrawn.clone(),
        };
        self.questions.send(sent).ok()?;
        Some(Offer {
            answered,
            withdrawn,
        })
    }
}

/// A question put to the client: its answer, if it gives one. Dropped, it withdraws the
/// client's request (a client that already answered is told nothing).
pub struct Offer {
    pub answered: oneshot::Receiver<Value>,
    withdrawn: CancellationToken,
}

impl Drop for Offer {
    fn drop(&mut self) {
        self.withdrawn.cancel();
    }
}

/// The asker of a call the gate settled at once. Such a call has no task, so no inbox copy: its
/// server's questions go to its client alone, which answers as the person the call is for (as
/// it would on a direct connection to the server). A question in a mode the client did not
/// offer is declined; one the client leaves unanswered for `wait` is cancelled, and its
/// request withdrawn.
pub struct ClientOnly {
    asking: ClientAsking,
    wait: Duration,
    waited: Arc<WaitClock>,
}

impl ClientOnly {
    pub fn new(asking: ClientAsking, wait: Duration) -> ClientOnly {
        ClientOnly {
            asking,
            wait,
            waited: Arc::default(),
        }
    }
}

impl Asker for ClientOnly {
    fn ask(&self, question: Elicitation) -> BoxFuture<'static, Reply> {
        let offer = self.asking.offer(&question);
        let (wait, waited) = (self.wait, self.waited.clone());
        async move {
            let Some(mut offer) = offer else {
                return Reply::Decline;
            };
            let _waiting = waited.start();
            // The offer lives until the answer or the wait's end; dropping it then withdraws
            // the client's request if it is still open.
            match tokio::time::timeout(wait, &mut offer.answered).await {
                // An answer that is no ElicitResult is taken as a dismissal.
                Ok(Ok(answer)) => Reply::from_value(&answer).unwrap_or(Reply::Cancel),
                // The client answered with an error, or its call's stream ended.
                Ok(Err(_)) => Reply::Cancel,
                Err(_elapsed) => Reply::Cancel,
            }
        }
        .boxed()
    }

    fn waited(&self) -> Duration {
        self.waited.waited()
    }
}

/// The clients that answer questions, by the task their call waits on (this replica's: a
/// call runs where its client's request is).
#[derive(Default)]
pub struct ClientAskers {
    by_task: Mutex<HashMap<String, ClientAsking>>,
}

impl ClientAskers {
    pub fn enter(&self, task_id: &str, asking: ClientAsking) {
        self.lock().insert(task_id.to_owned(), asking);
    }

    pub fn leave(&self, task_id: &str) {
        self.lock().remove(task_id);
    }

    /// The client that answers the questions of `task_id`'s call, if one does.
    pub fn of(&self, task_id: &str) -> Option<ClientAsking> {
        self.lock().get(task_id).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, ClientAsking>> {
        // Each change is one insert or remove: a panic leaves no half-change.
        self.by_task.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_empty_elicitation_capability_offers_forms_only() {
        let offered = |capabilities: Value| Offered::from_capabilities(&capabilities);
        assert_eq!(
            offered(json!({"elicitation": {}})),
            Offered {
                form: true,
                url: false
            }
        );
        assert_eq!(
            offered(json!({"elicitation": {"url": {}}})),
            Offered {
                form: false,
                url: true
            }
        );
        assert_eq!(
            offered(json!({"elicitation": {"form": {}, "url": {}}})),
            Offered {
                form: true,
                url: true
            }
        );
        assert!(!offered(json!({"roots": {}})).any());
    }
}
