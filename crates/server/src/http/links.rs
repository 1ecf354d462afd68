//! Decision links over HTTP (docs/notifications.md): `POST /api/approvals/{taskId}/links` makes
//! the caller's Approve and Reject links of a pending batch; `GET /decide/{token}` shows the
//! confirm page (server-rendered, no script), and only the POST of that page's form decides.
//! Mail scanners and link previews open links, so a GET never decides anything.
//!
//! The form is CSRF-safe twice over: the POST must come from this site (`Sec-Fetch-Site:
//! same-origin`, else an `Origin` equal to ours), and carry the form token that the GET set in
//! a `SameSite=Strict` cookie scoped to that link's path (a double-submit token another site
//! can neither read nor send). The link's token itself is the credential: the page needs no
//! sign-in, so a person decides from a phone's mail app.

mod page;

use axum::extract::rejection::FormRejection;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Form, Json};
use base64::Engine;
use serde::Deserialize;
use signoff_protocol::rest::NewDecisionLinks;

use super::{origin, AppState, HttpError, User};
use crate::agent::{AgentError, LinkState};

/// The cookie holding a confirm page's form token (its path is the link's own).
const FORM_COOKIE: &str = "signoff_link_form";

/// Where this server's links point: `--public-url` when set, else the origin the request came
/// to.
fn base_url(state: &AppState, headers: &HeaderMap) -> String {
    match &state.public_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => origin(headers, state.trust_proxy),
    }
}

/// `POST /api/approvals/{taskId}/links`: the caller's Approve and Reject links of the task's
/// pending batch, `201`. Only a person who may decide the batch gets them, and the Approve
/// link only one who may approve it.
pub async fn create(
    State(state): State<AppState>,
    Path(task_id): Path<String>,
    headers: HeaderMap,
    user: User,
) -> Result<(StatusCode, Json<NewDecisionLinks>), HttpError> {
    let issued = state
        .runtime
        .links()
        .create(&user.0, &task_id, None, state.decision_link_ttl)
        .await?;
    let base = base_url(&state, &headers);
    Ok((
        StatusCode::CREATED,
        Json(NewDecisionLinks {
            approve_url: issued.approve.map(|token| format!("{base}/decide/{token}")),
            reject_url: format!("{base}/decide/{}", issued.reject),
            expires_at: issued.expires_at,
        }),
    ))
}

/// `GET /decide/{token}`: what the link would decide, with the one button that does; or why
/// it decides nothing any more. Decides nothing itself.
pub async fn page(State(state): State<AppState>, Path(token): Path<String>) -> Response {
    let link = match state.runtime.links().state(&token).await {
        Ok(link) => link,
        Err(err) => return failure(err),
    };
    match link {
        LinkState::Live {
            action,
            person,
            expires_at,
            batch,
        } => {
            let form_token = match new_form_token() {
                Ok(form_token) => form_token,
                Err(err) => return failure(err),
            };
            let html = page::confirm(action, &person, &expires_at, &batch, &form_token);
            let mut response = page::respond(StatusCode::OK, html);
            let secure = state
                .public_url
                .as_deref()
                .is_some_and(|url| url.starts_with("https://"));
            let cookie = format!(
                "{FORM_COOKIE}={form_token}; Path=/decide/{token}; HttpOnly; SameSite=Strict; \
                 Max-Age=86400{}",
                if secure { "; Secure" } else { "" }
            );
            if let Ok(value) = HeaderValue::from_str(&cookie) {
                response.headers_mut().insert(header::SET_COOKIE, value);
            }
            response
        }
        other @ (LinkState::Unknown
        | LinkState::Used { .. }
        | LinkState::Decided(_)
        | LinkState::Expired { .. }) => state_page(&other),
    }
}

/// The confirm page's form.
#[derive(Debug, Deserialize)]
pub struct ConfirmForm {
    form_token: String,
    /// A rejection's reason, which the model reads (a Reject link's page only).
    #[serde(default)]
    reason: Option<String>,
}

/// `POST /decide/{token}`: the confirm page's form; decides the link's batch as the link's
/// person (channel `link`), once.
pub async fn confirm(
    State(state): State<AppState>,
    Path(token): Path<String>,
    parts: Parts,
    form: Result<Form<ConfirmForm>, FormRejection>,
) -> Response {
    if !same_origin(&parts, &base_url(&state, &parts.headers)) {
        return page::message(
            StatusCode::FORBIDDEN,
            "Not from this site",
            "A decision is made only with the button of its confirm page. Open the link again \
             and press the button there.",
        );
    }
    let Ok(Form(form)) = form else {
        return page::message(
            StatusCode::BAD_REQUEST,
            "Not a confirm form",
            "The request did not carry the confirm page's form. Open the link again and press \
             the button there.",
        );
    };
    let cookie = form_cookie(&parts.headers);
    if cookie.is_none_or(|cookie| cookie != form.form_token || cookie.is_empty()) {
        return page::message(
            StatusCode::FORBIDDEN,
            "The page has gone stale",
            "This form does not match the page this browser opened. Open the link again and \
             press the button there.",
        );
    }
    match state
        .runtime
        .decide_by_link(&token, form.reason.as_deref())
        .await
    {
        Ok(decided) => page::respond(StatusCode::OK, page::decided(&decided)),
        Err(err @ (AgentError::InvalidParams(_) | AgentError::Decision(_))) => {
            page::message(StatusCode::BAD_REQUEST, "Not decided", &err.to_string())
        }
        Err(err) => match state.runtime.links().state(&token).await {
            // A link that cannot decide any more: the page that says why.
            Ok(
                link @ (LinkState::Unknown
                | LinkState::Used { .. }
                | LinkState::Decided(_)
                | LinkState::Expired { .. }),
            ) => state_page(&link),
            Ok(LinkState::Live { .. }) => failure(err),
            Err(read) => failure(read),
        },
    }
}

/// The page of a link that decides nothing (any more), with its status: `404` unknown, `410`
/// used or expired, `409` decided elsewhere.
fn state_page(link: &LinkState) -> Response {
    let (status, html) = page::state(link);
    page::respond(status, html)
}

/// An error page for what the runtime refused or could not do; internals are logged only.
fn failure(err: AgentError) -> Response {
    let status = HttpError::from(err).into_response().status();
    let text = if status == StatusCode::INTERNAL_SERVER_ERROR {
        "Something went wrong on the server. Try the link again in a moment.".to_owned()
    } else {
        "This link cannot decide now.".to_owned()
    };
    page::message(status, "Not decided", &text)
}

/// Whether the POST comes from one of this site's pages: the browser's `Sec-Fetch-Site` when
/// it sends one, else its `Origin` (compared with `base`). Neither: refused.
fn same_origin(parts: &Parts, base: &str) -> bool {
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|value| value.to_str().ok())
    };
    match (header("sec-fetch-site"), header(header::ORIGIN.as_str())) {
        (Some(site), _) => site == "same-origin",
        (None, Some(origin)) => origin == base,
        (None, None) => false,
    }
}

/// The form token the confirm page's GET set, if the browser sent it back.
fn form_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == FORM_COOKIE).then(|| value.to_owned())
        })
}

/// 128 random bits for a confirm page's form.
fn new_form_token() -> Result<String, AgentError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|err| AgentError::Internal(format!("no random bytes for a form token: {err}")))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(headers: &[(&str, &str)]) -> Parts {
        let mut request = axum::http::Request::builder()
            .method("POST")
            .uri("/decide/x");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).unwrap().into_parts().0
    }

    #[test]
    fn only_a_post_from_this_site_counts() {
        let base = "https://signoff.example";
        assert!(same_origin(
            &parts(&[("sec-fetch-site", "same-origin")]),
            base
        ));
        assert!(!same_origin(
            &parts(&[("sec-fetch-site", "cross-site")]),
            base
        ));
        assert!(!same_origin(
            &parts(&[("sec-fetch-site", "same-site"), ("origin", base)]),
            base
        ));
        assert!(same_origin(&parts(&[("origin", base)]), base));
        assert!(!same_origin(
            &parts(&[("origin", "https://evil.example")]),
            base
        ));
        assert!(!same_origin(&parts(&[]), base), "neither header: refused");
    }

    #[test]
    fn the_form_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; signoff_link_form=abc; b=2"),
        );
        assert_eq!(form_cookie(&headers).as_deref(), Some("abc"));
        assert_eq!(form_cookie(&HeaderMap::new()), None);
    }
}
