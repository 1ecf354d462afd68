//! Who a request comes from. Four modes (`--auth`), one [`Identity`] for all of them: `none`
//! (the one local user, for a laptop), `tokens` (static bearer tokens from `--tokens`, each with
//! its user and groups), `proxy` (an authenticating proxy in front names the user and groups in
//! headers, believed only from `--trusted-proxies`) and `oidc` (people sign in with the
//! organisation's OpenID provider and hold a session cookie; programs send the provider's
//! JWTs). Handlers read the caller through the [`User`](super::User) and [`Caller`] extractors;
//! the caller is worked out once per request and kept in its extensions.

pub mod attempt;
pub mod jwt;
pub mod oidc;
pub mod proxy;
pub mod tokens;

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, Method};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::{AppState, HttpError};
pub use crate::agent::config::is_clean;
use crate::agent::Seen;

/// A person or a program, as every mode names them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Identity {
    /// The stable id the store keys chats, policies and decisions on.
    pub subject: String,
    /// A name to show; `None`: show the subject.
    pub name: Option<String>,
    /// An email the mode vouches for: a provider's only when it says `email_verified`, a
    /// trusted proxy's as it sends it; `user:EMAIL` approvers match this alone.
    pub email: Option<String>,
    /// The groups the identity belongs to, as the mode names them (sorted, each once).
    pub groups: Vec<String>,
}

impl Identity {
    /// An identity with only a subject.
    pub fn subject(subject: impl Into<String>) -> Identity {
        Identity {
            subject: subject.into(),
            name: None,
            email: None,
            groups: Vec::new(),
        }
    }

    /// Sorts the groups and drops repeated ones; each is kept byte for byte (the mode checked
    /// them with [`is_clean`]).
    pub fn with_groups(mut self, groups: impl IntoIterator<Item = String>) -> Identity {
        let mut groups: Vec<String> = groups.into_iter().collect();
        groups.sort();
        groups.dedup();
        self.groups = groups;
        self
    }
}

/// How callers are identified (`--auth`).
pub enum Auth {
    /// Everyone is the one local user.
    None,
    /// `Authorization: Bearer TOKEN`, each token standing for an identity.
    Tokens(HashMap<String, Identity>),
    /// The user and groups from an authenticating proxy's headers.
    Proxy(proxy::Proxy),
    /// An OpenID provider: session cookies for people, bearer JWTs for programs.
    Oidc(Arc<oidc::Oidc>),
}

impl Auth {
    /// The mode's name, as `--auth` spells it (audit entries and metrics carry it).
    pub fn mode(&self) -> &'static str {
        match self {
            Auth::None => "none",
            Auth::Tokens(_) => "tokens",
            Auth::Proxy(_) => "proxy",
            Auth::Oidc(_) => "oidc",
        }
    }
}

/// How this request's caller was told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    Local,
    Token,
    Proxy,
    Jwt,
    Session,
}

impl Via {
    /// How a decision this caller makes is audited as authenticated.
    pub fn decider_auth(self) -> signoff_protocol::rest::DeciderAuth {
        use signoff_protocol::rest::DeciderAuth;
        match self {
            Via::Local => DeciderAuth::None,
            Via::Token => DeciderAuth::Tokens,
            Via::Proxy => DeciderAuth::Proxy,
            Via::Jwt => DeciderAuth::OidcJwt,
            Via::Session => DeciderAuth::OidcSession,
        }
    }
}

/// The caller of a request: who, and how we know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub identity: Identity,
    pub via: Via,
}

/// Why a request has no caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No credentials, or ones we do not take: 401.
    Unauthenticated(&'static str),
    /// A state-changing request carrying the session cookie from another site: 403.
    CrossSite,
    /// A trusted proxy named someone in a way we do not take (a repeated header, a padded
    /// value): 400, saying what was wrong.
    BadIdentity(String),
    /// The store or the provider did not answer: 500 (logged where it happened).
    Internal,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::Unauthenticated(_) => HttpError::Unauthorized.into_response(),
            Refusal::CrossSite => HttpError::Forbidden(
                "a request that changes something must come from this site's own pages".to_owned(),
            )
            .into_response(),
            Refusal::BadIdentity(why) => HttpError::BadRequest(why).into_response(),
            Refusal::Internal => HttpError::Internal.into_response(),
        }
    }
}

/// Works out the caller of a request, once: the answer is kept in the request's extensions.
pub async fn caller(parts: &mut Parts, state: &AppState) -> Result<Caller, Refusal> {
    if let Some(known) = parts.extensions.get::<Caller>() {
        return Ok(known.clone());
    }
    let found = authenticate(parts, state).await;
    match &found {
        Ok(caller) => {
            parts.extensions.insert(caller.clone());
            // A person a proxy or a JWT names with their email joins the directory of people
            // (written only when it changed; a browser session's sign-in wrote it already).
            if matches!(caller.via, Via::Proxy | Via::Jwt) {
                let identity = &caller.identity;
                let seen = Seen {
                    user_id: identity.subject.clone(),
                    name: identity.name.clone(),
                    email: identity.email.clone(),
                    groups: identity.groups.clone(),
                };
                state.runtime.directory().saw(seen).await;
            }
        }
        Err(Refusal::Unauthenticated(reason)) if has_credentials(parts) => {
            // Credentials were given and refused: logged (never their value) and counted.
            tracing::info!(
                mode = state.auth.mode(),
                reason,
                path = parts.uri.path(),
                "refused credentials"
            );
            state
                .runtime
                .metrics()
                .auth_event(state.auth.mode(), "refused");
        }
        Err(Refusal::BadIdentity(why)) => {
            tracing::info!(mode = state.auth.mode(), reason = %why, path = parts.uri.path(), "refused an identity");
            state
                .runtime
                .metrics()
                .auth_event(state.auth.mode(), "refused");
        }
        Err(_) => {}
    }
    found
}

/// Whether the request carries any credentials (a bearer token or a session cookie).
fn has_credentials(parts: &Parts) -> bool {
    parts.headers.contains_key(header::AUTHORIZATION)
        || parts
            .headers
            .get_all(header::COOKIE)
            .iter()
            .any(|value| !value.is_empty())
}

async fn authenticate(parts: &Parts, state: &AppState) -> Result<Caller, Refusal> {
    match state.auth.as_ref() {
        Auth::None => Ok(Caller {
            identity: Identity::subject(super::LOCAL_USER),
            via: Via::Local,
        }),
        Auth::Tokens(tokens) => match bearer(parts).and_then(|token| tokens.get(token)) {
            Some(identity) => Ok(Caller {
                identity: identity.clone(),
                via: Via::Token,
            }),
            None => Err(Refusal::Unauthenticated("missing or unknown bearer token")),
        },
        Auth::Proxy(proxy) => proxy.identify(parts).map(|identity| Caller {
            identity,
            via: Via::Proxy,
        }),
        Auth::Oidc(oidc) => oidc.identify(parts, state).await,
    }
}

/// The token of the request's `Authorization: Bearer TOKEN`; the scheme is case-insensitive
/// (RFC 9110 §11.1).
pub fn bearer(parts: &Parts) -> Option<&str> {
    let authorization = parts.headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = authorization.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Whether a method may change something (anything but GET, HEAD and OPTIONS).
pub fn changes_state(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        caller(parts, state)
            .await
            .map_err(IntoResponse::into_response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_sorted_and_kept_once_byte_for_byte() {
        let identity = Identity::subject("alice").with_groups(
            ["sre", "oncall", "Sre", "sre"]
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>(),
        );
        assert_eq!(identity.groups, ["Sre", "oncall", "sre"]);
    }
}
