//! Read-only share links (docs/rest.md, Share links): the owner's routes that make, list and
//! revoke them, and the guard that lets a `?share=TOKEN` request read its own chat and
//! nothing else.

use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use signoff_protocol::rest::{NewShare, ShareList};

use super::{origin, AppState, HttpError, User};

/// What a page path segment keeps as it is (the UI's `route::encode` keeps the same).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// The value of the `share` query parameter, when there is one (an empty value too: it is a
/// token that matches nothing).
fn share_token(query: Option<&str>) -> Option<String> {
    query?.split('&').find_map(|pair| {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        (name == "share").then(|| percent_decode_str(value).decode_utf8_lossy().into_owned())
    })
}

/// The one route a share token opens: `GET /api/sessions/{its chat}`.
fn reads_own_chat(method: &Method, path: &str, context_id: &str) -> bool {
    *method == Method::GET
        && path
            .strip_prefix("/api/sessions/")
            .is_some_and(|id| percent_decode_str(id).decode_utf8_lossy() == context_id)
}

/// Runs before every route. An `/api/…` request with `?share=TOKEN` is a share request: an
/// unknown or revoked token is `404`, any route but its own chat's `GET /api/sessions/{id}` is
/// `403`, and that one route runs as the chat's owner (the [`ShareGrant`] the [`User`]
/// extractor reads), whatever `Authorization` says. Page paths are left to the UI.
///
/// [`ShareGrant`]: crate::agent::ShareGrant
pub async fn guard(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    if !request.uri().path().starts_with("/api/") {
        return next.run(request).await;
    }
    let Some(token) = share_token(request.uri().query()) else {
        return next.run(request).await;
    };
    let grant = match state.runtime.sharing().grant(&token).await {
        Ok(grant) => grant,
        Err(err) => return HttpError::from(err).into_response(),
    };
    if !reads_own_chat(request.method(), request.uri().path(), &grant.context_id) {
        return HttpError::Forbidden(
            "a share link only reads its own chat (GET /api/sessions/{id})".to_owned(),
        )
        .into_response();
    }
    request.extensions_mut().insert(grant);
    next.run(request).await
}

/// Makes a share link of the caller's chat: `201` with its id, token and page URL.
pub async fn create(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    user: User,
) -> Result<(StatusCode, Json<NewShare>), HttpError> {
    let share = state.runtime.sharing().create(&user.0, &id).await?;
    let (namespace, agent) = share.agent.split_once('/').unwrap_or(("", &share.agent));
    let url = format!(
        "{}/agents/{}/{}/chat/{}?share={}",
        origin(&headers, state.trust_proxy),
        utf8_percent_encode(namespace, SEGMENT),
        utf8_percent_encode(agent, SEGMENT),
        utf8_percent_encode(&id, SEGMENT),
        share.token,
    );
    Ok((
        StatusCode::CREATED,
        Json(NewShare {
            id: share.id,
            token: share.token,
            url,
        }),
    ))
}

/// The live links of the caller's chat.
pub async fn list(
    State(state): State<AppState>,
    Path(id): Path<String>,
    user: User,
) -> Result<Json<ShareList>, HttpError> {
    let shares = state.runtime.sharing().list(&user.0, &id).await?;
    Ok(Json(ShareList { shares }))
}

/// Revokes one link of the caller's chat: `204`.
pub async fn revoke(
    State(state): State<AppState>,
    Path((id, share_id)): Path<(String, String)>,
    user: User,
) -> Result<StatusCode, HttpError> {
    state
        .runtime
        .sharing()
        .revoke(&user.0, &id, &share_id)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_parameter_is_found_among_others_and_decoded() {
        assert_eq!(share_token(None), None);
        assert_eq!(share_token(Some("a=1&b=2")), None);
        assert_eq!(
            share_token(Some("a=1&share=ab%2Dc")).as_deref(),
            Some("ab-c")
        );
        assert_eq!(share_token(Some("share")).as_deref(), Some(""));
        assert_eq!(share_token(Some("shared=x")), None);
    }

    #[test]
    fn only_the_get_of_its_own_chat_is_open() {
        let get = Method::GET;
        assert!(reads_own_chat(&get, "/api/sessions/s-1", "s-1"));
        assert!(reads_own_chat(&get, "/api/sessions/s%201", "s 1"));
        assert!(!reads_own_chat(&get, "/api/sessions/s-2", "s-1"));
        assert!(!reads_own_chat(&get, "/api/sessions/s-1/shares", "s-1"));
        assert!(!reads_own_chat(&get, "/api/sessions", "s-1"));
        assert!(!reads_own_chat(&Method::DELETE, "/api/sessions/s-1", "s-1"));
        assert!(!reads_own_chat(
            &Method::POST,
            "/api/a2a/default/demo",
            "s-1"
        ));
    }
}
