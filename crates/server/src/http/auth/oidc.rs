//! `--auth oidc`: people sign in with the organisation's OpenID provider (found by discovery)
//! through the authorization code flow with PKCE, using the `openidconnect` crate; programs
//! send the provider's JWTs as bearer tokens (`jwt`).
//!
//! A signed-in browser holds one opaque cookie (`HttpOnly`, `SameSite=Lax`, `Secure` and the
//! `__Host-` prefix when served over HTTPS); the session it names lives in the store, so every
//! replica knows it and it outlives a restart. It lasts until the ID token expires, renewed with
//! the refresh token when the provider gave one. A sign-in on its way (its `state`, PKCE
//! verifier, nonce and return path) is in a short-lived cookie of the browser that started it,
//! MACed with a key every replica shares (`attempt`), so the provider may send the browser back
//! to any replica and only that browser can finish it. Since a cookie comes with requests other
//! sites make, a request with it that changes something must come from our own origin
//! (`Sec-Fetch-Site`, else `Origin`).
//!
//! An email is taken from the ID token, or else the user info, only where the provider says it
//! is verified (`email_verified`); the subject, email and groups byte for byte (`jwt`).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use axum::extract::{Query, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::Json;
use base64::Engine;
use openidconnect::core::{
    CoreAuthDisplay, CoreAuthPrompt, CoreAuthenticationFlow, CoreErrorResponseType,
    CoreGenderClaim, CoreJsonWebKey, CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm,
    CoreRevocableToken, CoreRevocationErrorResponse, CoreTokenIntrospectionResponse, CoreTokenType,
};
use openidconnect::{
    AccessToken, AdditionalClaims, AuthorizationCode, Client, ClientId, ClientSecret, CsrfToken,
    EmptyExtraTokenFields, EndSessionUrl, EndpointMaybeSet, EndpointNotSet, EndpointSet,
    IdTokenFields, IssuerUrl, LogoutRequest, Nonce, OAuth2TokenResponse, PkceCodeChallenge,
    PkceCodeVerifier, PostLogoutRedirectUrl, ProviderMetadataWithLogout, RedirectUrl, RefreshToken,
    Scope, StandardErrorResponse, StandardTokenResponse, TokenResponse, UserInfoClaims,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::attempt::{self, Attempt};
use super::jwt::{identity_from_claims, verified_email, Checks, Keys};
use super::{bearer, changes_state, Caller, Identity, Refusal, Via};
use crate::agent::Seen;
use crate::http::AppState;
use crate::store::LoginRow;

/// How long a sign-in may take at the provider.
const ATTEMPT_LIFETIME: chrono::TimeDelta = chrono::TimeDelta::minutes(10);

/// How long a session holding a refresh token may lie unused past its ID token's expiry before
/// the sweeper deletes it: the provider does not say how long its refresh tokens last, and a
/// week matches oauth2-proxy's cookie; after that, the person signs in again.
pub const RENEWABLE_FOR: chrono::TimeDelta = chrono::TimeDelta::days(7);

/// How often expired sessions and abandoned sign-ins are deleted.
pub const SWEEP_EVERY: Duration = Duration::from_secs(10 * 60);

/// What `--oidc-*` configure.
#[derive(Debug, Clone)]
pub struct Settings {
    pub issuer: String,
    pub client_id: String,
    pub client_secret: Option<String>,
    pub scopes: Vec<String>,
    pub groups_claim: String,
    /// The `aud` programs' JWTs must carry.
    pub audience: String,
    /// The longest a token (a program's JWT, an ID token) may be valid for.
    pub max_token_lifetime: Duration,
    /// Where people reach this server (`https://signoff.example.com`): the redirect URI, the
    /// origin same-origin checks compare with, and whether cookies are `Secure`.
    pub public_url: String,
}

/// Claims beyond the standard ones (the groups claim among them), as JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Extra {
    #[serde(flatten)]
    claims: Map<String, Value>,
}
impl AdditionalClaims for Extra {}

type Tokens = StandardTokenResponse<
    IdTokenFields<
        Extra,
        EmptyExtraTokenFields,
        CoreGenderClaim,
        CoreJweContentEncryptionAlgorithm,
        CoreJwsSigningAlgorithm,
    >,
    CoreTokenType,
>;

type OidcClient = Client<
    Extra,
    CoreAuthDisplay,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJsonWebKey,
    CoreAuthPrompt,
    StandardErrorResponse<CoreErrorResponseType>,
    Tokens,
    CoreTokenIntrospectionResponse,
    CoreRevocableToken,
    CoreRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// The server's reqwest, as `openidconnect`'s HTTP client. It follows no redirect (the
/// provider's endpoints answer where they are).
#[derive(Clone)]
pub struct Http(reqwest::Client);

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HttpFailure(String);

impl<'c> openidconnect::AsyncHttpClient<'c> for Http {
    type Error = HttpFailure;
    type Future =
        Pin<Box<dyn Future<Output = Result<openidconnect::HttpResponse, HttpFailure>> + Send + 'c>>;

    fn call(&'c self, request: openidconnect::HttpRequest) -> Self::Future {
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let response = self
                .0
                .request(parts.method, parts.uri.to_string())
                .headers(parts.headers)
                .body(body)
                .send()
                .await
                .map_err(|err| HttpFailure(err.to_string()))?;
            let mut answer = http::Response::builder().status(response.status());
            for (name, value) in response.headers() {
                answer = answer.header(name, value);
            }
            let body = response
                .bytes()
                .await
                .map_err(|err| HttpFailure(err.to_string()))?;
            answer
                .body(body.to_vec())
                .map_err(|err| HttpFailure(err.to_string()))
        })
    }
}

/// The provider, as discovered at start.
pub struct Oidc {
    client: OidcClient,
    http: Http,
    keys: Keys,
    checks: Checks,
    scopes: Vec<Scope>,
    /// `scheme://host[:port]` of `--public-url`.
    origin: String,
    secure: bool,
    cookie: &'static str,
    /// The sign-in attempt's cookie.
    attempt_cookie: &'static str,
    /// The key attempts are MACed with, read from the store at the first sign-in.
    attempt_key: tokio::sync::OnceCell<Vec<u8>>,
    end_session: Option<EndSessionUrl>,
}

/// The cookie's name over HTTPS: the `__Host-` prefix makes the browser refuse it unless it is
/// `Secure`, for `/` and for this host alone (no `Domain`).
const SECURE_COOKIE: &str = "__Host-signoff_session";
/// Its name over plain HTTP (a laptop, a test), where `__Host-` cookies are refused.
const PLAIN_COOKIE: &str = "signoff_session";
/// The sign-in attempt's cookie, over HTTPS and over plain HTTP.
const SECURE_ATTEMPT_COOKIE: &str = "__Host-signoff_login";
const PLAIN_ATTEMPT_COOKIE: &str = "signoff_login";

impl Oidc {
    /// The provider's issuer, as its JWTs name it (the authorization server of programs).
    pub fn issuer(&self) -> &str {
        &self.checks.issuer
    }

    /// Discovers the provider and fetches its keys; the server does not start without them.
    pub async fn discover(settings: Settings) -> Result<Oidc, String> {
        let reqwest = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|err| format!("the HTTP client: {err}"))?;
        let http = Http(reqwest.clone());
        let issuer = IssuerUrl::new(settings.issuer.clone())
            .map_err(|err| format!("--oidc-issuer {:?}: {err}", settings.issuer))?;
        let metadata = ProviderMetadataWithLogout::discover_async(issuer, &http)
            .await
            .map_err(|err| format!("discovering {}: {}", settings.issuer, error_chain(&err)))?;
        let public = openidconnect::url::Url::parse(&settings.public_url)
            .map_err(|err| format!("--public-url {:?}: {err}", settings.public_url))?;
        let secure = public.scheme() == "https";
        let origin = public.origin().ascii_serialization();
        let redirect = RedirectUrl::new(format!("{origin}/auth/callback"))
            .map_err(|err| format!("the redirect URI: {err}"))?;
        let end_session = metadata.additional_metadata().end_session_endpoint.clone();
        // The issuer exactly as the provider names itself (a trailing slash included): the
        // `iss` its JWTs carry.
        let issuer = metadata.issuer().as_str().to_owned();
        let keys = Keys::fetch(metadata.jwks_uri().url().to_string(), reqwest).await?;
        let client: OidcClient = Client::from_provider_metadata(
            metadata,
            ClientId::new(settings.client_id.clone()),
            settings.client_secret.clone().map(ClientSecret::new),
        )
        .set_redirect_uri(redirect);
        Ok(Oidc {
            client,
            http,
            keys,
            checks: Checks {
                issuer,
                audience: settings.audience,
                groups_claim: settings.groups_claim,
                max_lifetime: settings.max_token_lifetime,
            },
            scopes: settings.scopes.into_iter().map(Scope::new).collect(),
            origin,
            secure,
            cookie: if secure { SECURE_COOKIE } else { PLAIN_COOKIE },
            attempt_cookie: if secure {
                SECURE_ATTEMPT_COOKIE
            } else {
                PLAIN_ATTEMPT_COOKIE
            },
            attempt_key: tokio::sync::OnceCell::new(),
            end_session,
        })
    }

    /// The caller of a request: a bearer JWT's subject, or the signed-in session's.
    pub async fn identify(&self, parts: &Parts, state: &AppState) -> Result<Caller, Refusal> {
        if let Some(token) = bearer(parts) {
            let identity = self.keys.verify(token, &self.checks).await?;
            return Ok(Caller {
                identity,
                via: Via::Jwt,
            });
        }
        let cookie =
            cookie_value(parts, self.cookie).ok_or(Refusal::Unauthenticated("not signed in"))?;
        if changes_state(&parts.method) && !self.same_origin(parts) {
            return Err(Refusal::CrossSite);
        }
        let identity = self.session(cookie, state).await?;
        Ok(Caller {
            identity,
            via: Via::Session,
        })
    }

    /// Whether a request comes from one of our own pages: the browser's `Sec-Fetch-Site`
    /// when it sends one, else its `Origin`. A request with neither is refused.
    fn same_origin(&self, parts: &Parts) -> bool {
        let header = |name| {
            parts
                .headers
                .get(name)
                .and_then(|value: &HeaderValue| value.to_str().ok())
        };
        match (header("sec-fetch-site"), header(header::ORIGIN.as_str())) {
            (Some(site), _) => site == "same-origin",
            (None, Some(origin)) => origin == self.origin,
            (None, None) => false,
        }
    }

    /// The session a cookie names, renewed with its refresh token once its ID token expired.
    async fn session(&self, cookie: &str, state: &AppState) -> Result<Identity, Refusal> {
        let store = state.runtime.store();
        let id_sha256 = sha256_hex(cookie);
        let login = store
            .login(&id_sha256)
            .await
            .map_err(|err| internal("reading a session", &err))?
            .ok_or(Refusal::Unauthenticated("no such session"))?;
        if login.expires_at > crate::store::now() {
            return Ok(identity_of(&login));
        }
        let renewed = match &login.refresh_token {
            Some(refresh) => self.refresh(login.clone(), refresh).await,
            None => None,
        };
        match renewed {
            Some(renewed) => {
                store
                    .put_login(renewed.clone())
                    .await
                    .map_err(|err| internal("renewing a session", &err))?;
                state
                    .runtime
                    .directory()
                    .signed_in(seen_in(&renewed))
                    .await
                    .map_err(|err| internal("recording a person", &err))?;
                state.runtime.metrics().auth_event("oidc", "refreshed");
                Ok(identity_of(&renewed))
            }
            None => {
                store
                    .delete_login(&id_sha256)
                    .await
                    .map_err(|err| internal("ending a session", &err))?;
                Err(Refusal::Unauthenticated("the session expired"))
            }
        }
    }

    /// A session renewed with its refresh token, or `None` if the provider refused.
    async fn refresh(&self, mut login: LoginRow, refresh: &str) -> Option<LoginRow> {
        let refresh = RefreshToken::new(refresh.to_owned());
        let request = self.client.exchange_refresh_token(&refresh).ok()?;
        let tokens = match request.request_async(&self.http).await {
            Ok(tokens) => tokens,
            Err(err) => {
                tracing::info!(subject = %login.subject, "the provider did not renew a session: {}", error_chain(&err));
                return None;
            }
        };
        let expires_at = match tokens.id_token() {
            // Checked with the same keys as at sign-in; a refreshed ID token carries no nonce
            // of ours.
            Some(id_token) => {
                let id_token = id_token.to_string();
                let claims = match self.id_token_claims(&id_token).await {
                    Ok(claims) => claims,
                    Err(reason) => {
                        tracing::info!(subject = %login.subject, "a renewed session's {reason}");
                        return None;
                    }
                };
                if claims.get("sub").and_then(Value::as_str) != Some(login.subject.as_str()) {
                    return None;
                }
                login.id_token = Some(id_token);
                expiry(&claims)?
            }
            None => chrono::Utc::now() + chrono::TimeDelta::from_std(tokens.expires_in()?).ok()?,
        };
        login.expires_at = rfc3339(expires_at);
        if let Some(next) = tokens.refresh_token() {
            login.refresh_token = Some(next.secret().clone());
        }
        Some(login)
    }
}

/// Deletes expired sessions and abandoned sign-ins from the store at start and then `every`,
/// until the task is aborted. Every replica sweeps; the deletes are safe to run at once.
pub async fn sweep_logins(store: crate::store::Store, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let now = chrono::Utc::now();
        let swept = store
            .sweep_logins(
                &rfc3339(now),
                &rfc3339(now - RENEWABLE_FOR),
                &rfc3339(now - ATTEMPT_LIFETIME),
            )
            .await;
        match swept {
            Ok((0, 0)) => {}
            Ok((sessions, attempts)) => {
                tracing::info!(sessions, attempts, "deleted expired sign-ins");
            }
            // The next sweep tries again.
            Err(err) => tracing::warn!(error = %err, "could not delete expired sign-ins"),
        }
    }
}

/// What a session stands for.
/// A sign-in as the directory of people records it.
fn seen_in(login: &LoginRow) -> Seen {
    Seen {
        user_id: login.subject.clone(),
        name: login.name.clone(),
        email: login.email.clone(),
        groups: login.groups.clone(),
    }
}

fn identity_of(login: &LoginRow) -> Identity {
    Identity {
        subject: login.subject.clone(),
        name: login.name.clone(),
        email: login.email.clone(),
        groups: login.groups.clone(),
    }
}

fn internal(doing: &str, err: &dyn std::fmt::Display) -> Refusal {
    tracing::error!("{doing}: {err}");
    Refusal::Internal
}

/// An error and its sources, for the log (the crate's errors keep the detail in sources).
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// When a checked token's `exp` says it expires.
fn expiry(claims: &Map<String, Value>) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::from_timestamp(claims.get("exp")?.as_i64()?, 0)
}

fn rfc3339(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

pub fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The value of the cookie `name` in the request's `Cookie` headers.
fn cookie_value<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    parts
        .headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim())
        .filter(|value| !value.is_empty())
}

/// A return path we send a browser back to after sign-in: a path on this origin only
/// (`/agents/x?y`), never `//evil.example`, `/\evil.example`, `https://…` or a control
/// character a browser might drop.
pub fn safe_return(path: &str) -> Option<&str> {
    let ok = path.starts_with('/')
        && !path.starts_with("//")
        && !path.starts_with("/\\")
        && !path
            .chars()
            .any(|c| c.is_control() || c == '\\' || c.is_whitespace());
    ok.then_some(path)
}

/// The server's `Oidc`, when it runs in `--auth oidc`.
fn oidc(state: &AppState) -> Option<&Oidc> {
    match state.auth.as_ref() {
        super::Auth::Oidc(oidc) => Some(oidc),
        super::Auth::None | super::Auth::Tokens(_) | super::Auth::Proxy(_) => None,
    }
}

/// The sign-in routes' answer in the other modes.
fn not_oidc() -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({"error": "sign-in is for --auth oidc"})),
    )
        .into_response()
}

fn bad_request(message: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({"error": message}))).into_response()
}

#[derive(Debug, Deserialize)]
pub struct LoginQuery {
    return_to: Option<String>,
}

/// `GET /auth/login?return_to=/path`: off to the provider, back to `return_to` afterwards.
pub async fn login(State(state): State<AppState>, Query(query): Query<LoginQuery>) -> Response {
    let Some(oidc) = oidc(&state) else {
        return not_oidc();
    };
    let return_to = query.return_to.as_deref().unwrap_or("/");
    let Some(return_to) = safe_return(return_to) else {
        return bad_request("return_to must be a path on this site");
    };
    if return_to.len() > attempt::MAX_RETURN_PATH {
        return bad_request("return_to is too long");
    }
    let key = match oidc.attempt_key(&state).await {
        Ok(key) => key,
        Err(refusal) => return refusal.into_response(),
    };
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, csrf, nonce) = oidc
        .client
        .authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_scopes(oidc.scopes.iter().cloned())
        .set_pkce_challenge(challenge)
        .url();
    let attempt = Attempt {
        state: csrf.secret().clone(),
        pkce_verifier: verifier.secret().clone(),
        nonce: nonce.secret().clone(),
        return_to: return_to.to_owned(),
        started: chrono::Utc::now().timestamp(),
    };
    let sealed = match attempt::seal(key, &attempt) {
        Ok(sealed) => sealed,
        Err(err) => return internal("sealing a sign-in", &err).into_response(),
    };
    let mut response = Redirect::to(url.as_str()).into_response();
    oidc.set_cookie(
        &mut response,
        oidc.attempt_cookie,
        &sealed,
        ATTEMPT_LIFETIME.num_seconds(),
    );
    response
}

#[derive(Debug, Deserialize)]
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// `GET /auth/callback`: the provider sends the browser back with a code; it is exchanged (with
/// the PKCE verifier), the ID token checked (signature, issuer, audience, expiry, our nonce),
/// a session stored and its cookie set, and the browser sent on to the page it came from.
pub async fn callback(
    State(state): State<AppState>,
    Query(query): Query<CallbackQuery>,
    parts: Parts,
) -> Response {
    let Some(oidc) = oidc(&state) else {
        return not_oidc();
    };
    let mut response = finish_sign_in(oidc, &state, query, &parts).await;
    // The attempt is used up, whatever became of it.
    oidc.set_cookie(&mut response, oidc.attempt_cookie, "", 0);
    response
}

/// The callback's answer: the session cookie and a redirect, or a page saying why not.
async fn finish_sign_in(
    oidc: &Oidc,
    state: &AppState,
    query: CallbackQuery,
    parts: &Parts,
) -> Response {
    if let Some(error) = query.error {
        tracing::info!(error, "the provider refused a sign-in");
        state.runtime.metrics().auth_event("oidc", "refused");
        return signed_out_page(StatusCode::UNAUTHORIZED, "The sign-in was refused.");
    }
    let (Some(code), Some(csrf)) = (query.code, query.state) else {
        return bad_request("a sign-in answer needs code and state");
    };
    let store = state.runtime.store();
    let key = match oidc.attempt_key(state).await {
        Ok(key) => key,
        Err(refusal) => return refusal.into_response(),
    };
    let attempt =
        cookie_value(parts, oidc.attempt_cookie).and_then(|sealed| attempt::open(key, sealed));
    // Compared as digests, so the time taken says nothing of the expected state.
    let Some(attempt) = attempt.filter(|attempt| sha256_hex(&attempt.state) == sha256_hex(&csrf))
    else {
        tracing::info!("a sign-in answer came to a browser that did not start it");
        state.runtime.metrics().auth_event("oidc", "refused");
        return signed_out_page(
            StatusCode::BAD_REQUEST,
            "This sign-in was not started in this browser, or it was started again since. \
             Nothing was signed in: sign in again from here.",
        );
    };
    let started = chrono::DateTime::from_timestamp(attempt.started, 0).unwrap_or_default();
    if chrono::Utc::now() - started > ATTEMPT_LIFETIME {
        return signed_out_page(
            StatusCode::BAD_REQUEST,
            "The sign-in took too long. Nothing was signed in: sign in again.",
        );
    }
    let login = match oidc.finish(code, &attempt).await {
        Ok(login) => login,
        Err(reason) => {
            tracing::info!(reason, "a sign-in failed");
            state.runtime.metrics().auth_event("oidc", "refused");
            return signed_out_page(StatusCode::UNAUTHORIZED, "The sign-in failed.");
        }
    };
    let (cookie, login) = login;
    tracing::info!(subject = %login.subject, "signed in");
    // The directory of people learns their email and groups: an email to the members of an
    // approver group reaches them.
    if let Err(err) = state.runtime.directory().signed_in(seen_in(&login)).await {
        return internal("recording a person", &err).into_response();
    }
    if let Err(err) = store.put_login(login).await {
        return internal("storing a session", &err).into_response();
    }
    state.runtime.metrics().auth_event("oidc", "sign_in");
    let mut response = Redirect::to(&attempt.return_to).into_response();
    let set = format!(
        "{}={cookie}; Path=/; HttpOnly; SameSite=Lax{}",
        oidc.cookie,
        if oidc.secure { "; Secure" } else { "" }
    );
    if let Ok(value) = HeaderValue::from_str(&set) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

impl Oidc {
    /// The key sign-in attempts are MACed with: the store's (the first server to need one
    /// makes it), read once.
    async fn attempt_key(&self, state: &AppState) -> Result<&[u8], Refusal> {
        let key = self
            .attempt_key
            .get_or_try_init(|| async {
                let candidate =
                    attempt::new_key().map_err(|err| internal("a sign-in key", &err))?;
                let stored = state
                    .runtime
                    .store()
                    .server_key(attempt::KEY_NAME, candidate)
                    .await
                    .map_err(|err| internal("reading the sign-in key", &err))?;
                attempt::decode_key(&stored).map_err(|err| internal("the sign-in key", &err))
            })
            .await?;
        Ok(key)
    }

    /// Adds `Set-Cookie: name=value` for `max_age` seconds (0: clears it), `HttpOnly`,
    /// `SameSite=Lax` (sent when the provider sends the browser back), `Secure` over HTTPS.
    fn set_cookie(&self, response: &mut Response, name: &str, value: &str, max_age: i64) {
        let set = format!(
            "{name}={value}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Lax{}",
            if self.secure { "; Secure" } else { "" }
        );
        if let Ok(value) = HeaderValue::from_str(&set) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }

    /// The code exchanged and checked: a new session's cookie and row, or why not.
    async fn finish(&self, code: String, attempt: &Attempt) -> Result<(String, LoginRow), String> {
        let tokens = self
            .client
            .exchange_code(AuthorizationCode::new(code))
            .map_err(|err| err.to_string())?
            .set_pkce_verifier(PkceCodeVerifier::new(attempt.pkce_verifier.clone()))
            .request_async(&self.http)
            .await
            .map_err(|err| format!("exchanging the code: {}", error_chain(&err)))?;
        let id_token = tokens
            .id_token()
            .ok_or("the provider sent no ID token")?
            .to_string();
        let mut all = self.id_token_claims(&id_token).await?;
        if all.get("nonce").and_then(Value::as_str) != Some(attempt.nonce.as_str()) {
            return Err("the ID token is not for this sign-in (its nonce)".to_owned());
        }
        let expires_at = expiry(&all).ok_or("the ID token has no expiry")?;
        let subject = all
            .get("sub")
            .and_then(Value::as_str)
            .map(|sub| openidconnect::SubjectIdentifier::new(sub.to_owned()))
            .ok_or("the ID token has no subject")?;
        // The provider may keep the profile and groups for its user info endpoint. An email
        // and whether it is verified go together: the user info's pair only when the ID token
        // holds no verified email.
        if let Some(mut info) = self.user_info(tokens.access_token(), &subject).await {
            if verified_email(&Value::Object(all.clone())).is_none() {
                for pair in ["email", "email_verified"] {
                    all.remove(pair);
                    if let Some(value) = info.remove(pair) {
                        all.insert(pair.to_owned(), value);
                    }
                }
            }
            for (key, value) in info {
                all.entry(key).or_insert(value);
            }
        }
        let identity = identity_from_claims(&Value::Object(all), &self.checks.groups_claim)
            .map_err(|reason| format!("ID token: {reason}"))?;
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|err| format!("random bytes: {err}"))?;
        let cookie = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret);
        let login = LoginRow {
            id_sha256: sha256_hex(&cookie),
            subject: identity.subject,
            name: identity.name,
            email: identity.email,
            groups: identity.groups,
            refresh_token: tokens.refresh_token().map(|token| token.secret().clone()),
            id_token: Some(id_token),
            expires_at: rfc3339(expires_at),
            created_at: crate::store::now(),
        };
        Ok((cookie, login))
    }

    /// An ID token's claims, checked with the provider's keys (fetched again for a `kid` we do
    /// not know, as for programs' JWTs): its signature, issuer, our client id as its audience
    /// (and as its authorized party when it names several), and its expiry.
    async fn id_token_claims(&self, id_token: &str) -> Result<Map<String, Value>, String> {
        let client_id = self.client.client_id().as_str();
        let claims = match self.keys.claims(id_token, &self.checks, client_id).await {
            Ok(Value::Object(claims)) => claims,
            Ok(_) => return Err("the ID token's claims are not an object".to_owned()),
            Err(Refusal::Unauthenticated(reason)) => return Err(format!("ID token: {reason}")),
            Err(Refusal::CrossSite | Refusal::BadIdentity(_) | Refusal::Internal) => {
                return Err("the ID token could not be checked".to_owned())
            }
        };
        let audiences = claims
            .get("aud")
            .and_then(Value::as_array)
            .map_or(1, Vec::len);
        if audiences > 1 && claims.get("azp").and_then(Value::as_str) != Some(client_id) {
            return Err("the ID token names several audiences and another party".to_owned());
        }
        Ok(claims)
    }

    /// The user info endpoint's claims, if the provider has one and it answers.
    async fn user_info(
        &self,
        access_token: &AccessToken,
        subject: &openidconnect::SubjectIdentifier,
    ) -> Option<Map<String, Value>> {
        let request = self
            .client
            .user_info(access_token.clone(), Some(subject.clone()))
            .ok()?;
        let info: UserInfoClaims<Extra, CoreGenderClaim> =
            match request.request_async(&self.http).await {
                Ok(info) => info,
                Err(err) => {
                    tracing::warn!("the provider's user info: {}", error_chain(&err));
                    return None;
                }
            };
        let mut claims = info.additional_claims().claims.clone();
        if let Some(email) = info.email() {
            claims.insert("email".into(), json!(email.as_str()));
        }
        if let Some(verified) = info.email_verified() {
            claims.insert("email_verified".into(), json!(verified));
        }
        if let Some(name) = info.name().and_then(|name| name.get(None)) {
            claims.insert("name".into(), json!(name.as_str()));
        }
        if let Some(name) = info.preferred_username() {
            claims.insert("preferred_username".into(), json!(name.as_str()));
        }
        Some(claims)
    }
}

/// `POST /auth/logout`: ends the session (from our own pages only), clears the cookie, and
/// answers where to go next: the provider's logout (RP-initiated, with the ID token as a hint)
/// when it offers one, else the signed-out page.
pub async fn logout(State(state): State<AppState>, request: Request) -> Response {
    let Some(oidc) = oidc(&state) else {
        return not_oidc();
    };
    let (parts, _body) = request.into_parts();
    if !oidc.same_origin(&parts) {
        return Refusal::CrossSite.into_response();
    }
    let signed_out = format!("{}/auth/signed-out", oidc.origin);
    let mut next = signed_out.clone();
    if let Some(cookie) = cookie_value(&parts, oidc.cookie) {
        let store = state.runtime.store();
        let id_sha256 = sha256_hex(cookie);
        let login = match store.login(&id_sha256).await {
            Ok(login) => login,
            Err(err) => return internal("reading a session", &err).into_response(),
        };
        if let Err(err) = store.delete_login(&id_sha256).await {
            return internal("ending a session", &err).into_response();
        }
        if let Some(login) = login {
            tracing::info!(subject = %login.subject, "signed out");
            state.runtime.metrics().auth_event("oidc", "sign_out");
            if let (Some(end), Ok(back)) = (
                &oidc.end_session,
                PostLogoutRedirectUrl::new(signed_out.clone()),
            ) {
                let mut logout = LogoutRequest::from(end.clone())
                    .set_client_id(oidc.client.client_id().clone())
                    .set_post_logout_redirect_uri(back);
                if let Some(id_token) = login.id_token.as_deref().and_then(parse_id_token) {
                    logout = logout.set_id_token_hint(&id_token);
                }
                next = logout.http_get_url().to_string();
            }
        }
    }
    let mut response = Json(json!({ "next": next })).into_response();
    let clear = format!(
        "{}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax{}",
        oidc.cookie,
        if oidc.secure { "; Secure" } else { "" }
    );
    if let Ok(value) = HeaderValue::from_str(&clear) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

fn parse_id_token(
    text: &str,
) -> Option<
    openidconnect::IdToken<
        Extra,
        CoreGenderClaim,
        CoreJweContentEncryptionAlgorithm,
        CoreJwsSigningAlgorithm,
    >,
> {
    text.parse().ok()
}

/// `GET /auth/signed-out`: a page saying so, with a link to sign in again (it is not sent to
/// the provider at once, or signing out would sign straight back in).
pub async fn signed_out() -> Response {
    signed_out_page(StatusCode::OK, "You are signed out of Signoff.")
}

fn signed_out_page(status: StatusCode, message: &str) -> Response {
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Signoff</title>\
         <meta name=\"viewport\" content=\"width=device-width\"></head>\
         <body style=\"font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto\">\
         <h1>Signoff</h1><p id=\"signed-out\">{message}</p>\
         <p><a href=\"/auth/login\">Sign in</a></p></body></html>"
    );
    (status, Html(page)).into_response()
}

/// Before the UI's pages in `--auth oidc`: a page opened while signed out goes to the provider,
/// and comes back to the same page. API calls, the sign-in routes, the operations endpoints and
/// decision links' confirm pages (their token is their credential) are left alone (they answer
/// 401 themselves, or need no user).
pub async fn require_sign_in(
    State(state): State<AppState>,
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    let super::Auth::Oidc(_) = state.auth.as_ref() else {
        return next.run(request).await;
    };
    let path = request.uri().path();
    let is_page = matches!(*request.method(), Method::GET | Method::HEAD)
        && !["/api/", "/auth/", "/.well-known/", "/decide/"]
            .iter()
            .any(|prefix| path.starts_with(prefix))
        && !["/healthz", "/readyz", "/metrics"].contains(&path)
        && wants_page(request.headers());
    if !is_page {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    match super::caller(&mut parts, &state).await {
        Ok(_) => next.run(Request::from_parts(parts, body)).await,
        Err(Refusal::Internal) => Refusal::Internal.into_response(),
        Err(_) => {
            let back = parts.uri.path_and_query().map_or("/", |path| path.as_str());
            let back =
                percent_encoding::utf8_percent_encode(back, percent_encoding::NON_ALPHANUMERIC);
            Redirect::to(&format!("/auth/login?return_to={back}")).into_response()
        }
    }
}

/// Whether the browser is opening a page (not fetching a script, a style or an image).
fn wants_page(headers: &axum::http::HeaderMap) -> bool {
    match headers.get("sec-fetch-dest").and_then(|v| v.to_str().ok()) {
        Some(dest) => dest == "document",
        None => headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|accept| accept.contains("text/html")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_on_this_site_are_return_paths() {
        for good in ["/", "/agents/default/demo/chat/1?x=y", "/approvals#top"] {
            assert_eq!(safe_return(good), Some(good));
        }
        for bad in [
            "https://evil.example/",
            "//evil.example/x",
            "/\\evil.example",
            "/ok\\..\\x",
            "evil.example",
            "",
            "/\t/evil.example",
            "/ /evil",
        ] {
            assert_eq!(safe_return(bad), None, "{bad}");
        }
    }
}
