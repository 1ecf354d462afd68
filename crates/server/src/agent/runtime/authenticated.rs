//! How the person on whose request the runtime acts was authenticated, for the audit of the
//! decisions that request makes. The HTTP layer runs a request's call into the runtime inside
//! [`as_authenticated`]; a decision a person makes there records it. Work no request drives (a
//! policy, a rule, an expiry, a runner on its own task) sees none. A task-local rather than one
//! more argument down every call that carries the user, so the decision path keeps its shape.

use std::future::Future;

use signoff_protocol::rest::DeciderAuth;

tokio::task_local! {
    static DECIDER_AUTH: DeciderAuth;
}

/// Runs `work` (a request's call into the runtime) for a caller authenticated by `auth`.
pub async fn as_authenticated<F: Future>(auth: Option<DeciderAuth>, work: F) -> F::Output {
    match auth {
        Some(auth) => DECIDER_AUTH.scope(auth, work).await,
        None => work.await,
    }
}

/// How the caller of the request being served was authenticated; `None` outside a request.
pub(super) fn decider_auth() -> Option<DeciderAuth> {
    DECIDER_AUTH.try_with(|auth| *auth).ok()
}
