//! Signoff's A2A agent server: `http` (axum) -> `agent` (runtime) -> `store` (SQLite, or PostgreSQL shared by
//! replicas).
//!
//! Tests and benches start it in-process: bind a listener (port 0), build a [`Config`] and call
//! [`run`] with a shutdown future.

pub mod agent;
pub mod audit_cli;
pub mod http;
pub mod policy_cli;
pub mod policy_replay;
pub mod store;
pub mod telemetry;

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tower_http::timeout::RequestBodyTimeoutLayer;

pub use http::{router, AppState};

/// How callers are identified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuthMode {
    /// One local user; for a laptop: the server refuses to start on an address that is not
    /// loopback.
    None,
    /// `Authorization: Bearer TOKEN`, with tokens from `--tokens`.
    Tokens,
    /// The user and groups from an authenticating proxy's headers (`--trusted-proxies`).
    Proxy,
    /// Sign-in with an OpenID provider (`--oidc-*`), and its JWTs for programs.
    Oidc,
}

/// The server's configuration: flags, each also an environment variable.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "signoff",
    version = VERSION,
    about = "Signoff: a chat for AI agents whose risky tool calls wait for your sign-off"
)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "SIGNOFF_ADDR", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// Folder for the database (signoff.db) and the demo sandbox; created if missing.
    #[arg(long, env = "SIGNOFF_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// The database: a PostgreSQL URL (`postgres://user:password@host/db`) for replicas that
    /// share one; without it, SQLite in the data folder.
    #[arg(long = "database", env = "SIGNOFF_DATABASE_URL")]
    pub database_url: Option<String>,
    /// Agents file (TOML). Without it, the demo agent default/demo is served.
    #[arg(long = "agents", env = "SIGNOFF_AGENTS")]
    pub agents_file: Option<PathBuf>,
    /// Folder of the built UI (trunk's dist/), served at / with SPA fallback, instead of the
    /// copy inside the binary (for development: a fresh `trunk build` is served at once).
    #[arg(long, env = "SIGNOFF_UI_DIR")]
    pub ui_dir: Option<PathBuf>,
    /// Largest request body in bytes; larger requests get HTTP 413.
    #[arg(long, env = "SIGNOFF_BODY_LIMIT", default_value_t = 1024 * 1024)]
    pub body_limit: usize,
    /// How callers are identified: none (one local user), tokens (bearer tokens), proxy (an
    /// authenticating proxy's headers) or oidc (sign-in with an OpenID provider).
    #[arg(long, env = "SIGNOFF_AUTH", value_enum, default_value_t = AuthMode::None)]
    pub auth: AuthMode,
    /// Bearer tokens for --auth tokens: TOKEN=USER or TOKEN=USER:GROUP+GROUP, separated by
    /// commas.
    #[arg(long, env = "SIGNOFF_TOKENS", value_delimiter = ',')]
    pub tokens: Vec<String>,
    /// A file of more --tokens entries, one or more a line (`#` comments).
    #[arg(long, env = "SIGNOFF_TOKENS_FILE")]
    pub tokens_file: Option<PathBuf>,
    /// For --auth proxy: the addresses the proxy connects from (CIDR networks or addresses,
    /// comma-separated); its headers from anywhere else are ignored.
    #[arg(long, env = "SIGNOFF_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<String>,
    /// For --auth proxy: the header naming the user.
    #[arg(long, env = "SIGNOFF_PROXY_USER_HEADER", default_value = http::auth::proxy::DEFAULT_USER_HEADER)]
    pub proxy_user_header: String,
    /// For --auth proxy: the header holding the user's email.
    #[arg(long, env = "SIGNOFF_PROXY_EMAIL_HEADER", default_value = http::auth::proxy::DEFAULT_EMAIL_HEADER)]
    pub proxy_email_header: String,
    /// For --auth proxy: the header holding the user's groups, comma-separated.
    #[arg(long, env = "SIGNOFF_PROXY_GROUPS_HEADER", default_value = http::auth::proxy::DEFAULT_GROUPS_HEADER)]
    pub proxy_groups_header: String,
    /// For --auth oidc: the provider's issuer URL (its discovery document is under it).
    #[arg(long, env = "SIGNOFF_OIDC_ISSUER")]
    pub oidc_issuer: Option<String>,
    /// For --auth oidc: this server's client id at the provider.
    #[arg(long, env = "SIGNOFF_OIDC_CLIENT_ID")]
    pub oidc_client_id: Option<String>,
    /// For --auth oidc: the client secret (better: --oidc-client-secret-file).
    #[arg(long, env = "SIGNOFF_OIDC_CLIENT_SECRET", hide_env_values = true)]
    pub oidc_client_secret: Option<String>,
    /// For --auth oidc: a file holding the client secret.
    #[arg(long, env = "SIGNOFF_OIDC_CLIENT_SECRET_FILE")]
    pub oidc_client_secret_file: Option<PathBuf>,
    /// For --auth oidc: the scopes asked for, comma-separated.
    #[arg(
        long,
        env = "SIGNOFF_OIDC_SCOPES",
        value_delimiter = ',',
        default_value = "openid,profile,email"
    )]
    pub oidc_scopes: Vec<String>,
    /// For --auth oidc: the claim that lists a person's groups.
    #[arg(long, env = "SIGNOFF_OIDC_GROUPS_CLAIM", default_value = "groups")]
    pub oidc_groups_claim: String,
    /// For --auth oidc: the `aud` programs' bearer JWTs must carry; default: the client id.
    #[arg(long, env = "SIGNOFF_OIDC_AUDIENCE")]
    pub oidc_audience: Option<String>,
    /// For --auth oidc: the longest a JWT or ID token may be valid for (`exp` less `iat`); a
    /// token that claims a longer life is refused.
    #[arg(long, env = "SIGNOFF_OIDC_MAX_TOKEN_LIFETIME", default_value = "24h", value_parser = humantime::parse_duration)]
    pub oidc_max_token_lifetime: Duration,
    /// For --auth oidc: how often expired sessions and abandoned sign-ins are deleted from the
    /// store (not a flag: tests shorten it).
    #[arg(skip = http::auth::oidc::SWEEP_EVERY)]
    pub login_sweep_every: Duration,
    /// For --auth oidc: where people reach this server (`https://signoff.example.com`); the
    /// redirect URI is its `/auth/callback`.
    #[arg(long, env = "SIGNOFF_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// The notifications file: channels (signed webhooks, Slack) that hear of batches waiting
    /// for sign-off, their decisions and expiries (crates/server/README.md, Notifications);
    /// needs --public-url for the links.
    #[arg(long, env = "SIGNOFF_NOTIFICATIONS")]
    pub notifications: Option<PathBuf>,
    /// The Ed25519 key that signs decision receipts (README, Audit); made on first start.
    /// Without it, audit-key in the data folder. Kept out of the database on purpose.
    #[arg(long = "audit-key", env = "SIGNOFF_AUDIT_KEY")]
    pub audit_key: Option<PathBuf>,
    /// Groups whose members are operators (they read `GET /api/notifications/failed`),
    /// comma-separated. With --auth none the local user is one.
    #[arg(long, env = "SIGNOFF_OPERATOR_GROUPS", value_delimiter = ',')]
    pub operator_groups: Vec<String>,
    /// Seconds a model may stay silent within a turn before its task fails.
    #[arg(long, env = "SIGNOFF_MODEL_TIMEOUT", default_value_t = 120)]
    pub model_timeout_secs: u64,
    /// Seconds an SSE stream may send no event before the server ends it with a JSON-RPC error
    /// event (the task goes on; a resubscribe follows it). kagent's default: 30 minutes.
    #[arg(long = "stream-idle-timeout", env = "SIGNOFF_STREAM_IDLE_TIMEOUT", default_value_t = DEFAULT_STREAM_IDLE_TIMEOUT_SECS)]
    pub stream_idle_timeout_secs: u64,
    /// Seconds an approvals stream (`GET /api/approvals/stream`) stays quiet before it sends a
    /// heartbeat comment, so proxies keep it open and a client sees it alive.
    #[arg(
        long = "approvals-heartbeat",
        env = "SIGNOFF_APPROVALS_HEARTBEAT",
        default_value_t = 15
    )]
    pub approvals_heartbeat_secs: u64,
    /// How many approvals streams (`GET /api/approvals/stream`) one user may have open at once;
    /// one more is refused with 429. A browser needs one (its tabs share it).
    #[arg(
        long = "approvals-streams-per-user",
        env = "SIGNOFF_APPROVALS_STREAMS_PER_USER",
        default_value_t = DEFAULT_APPROVALS_STREAMS_PER_USER
    )]
    pub approvals_streams_per_user: usize,
    /// Seconds a tool call may take before it fails.
    #[arg(long, env = "SIGNOFF_TOOL_TIMEOUT", default_value_t = 60)]
    pub tool_timeout_secs: u64,
    /// Seconds a client may take to send a request's headers, or the next piece of its body,
    /// before it is disconnected (also how long an idle keep-alive connection stays open).
    #[arg(long, env = "SIGNOFF_READ_TIMEOUT", default_value_t = 30)]
    pub read_timeout_secs: u64,
    /// Longest user message, in bytes of text; longer ones are refused.
    #[arg(long, env = "SIGNOFF_MAX_MESSAGE_BYTES", default_value_t = agent::Limits::DEFAULT_MESSAGE_BYTES)]
    pub max_message_bytes: usize,
    /// Longest rejection reason, in bytes; longer ones are refused.
    #[arg(long, env = "SIGNOFF_MAX_REASON_BYTES", default_value_t = agent::Limits::DEFAULT_REASON_BYTES)]
    pub max_reason_bytes: usize,
    /// Most tool calls a model may ask for in one turn; a turn with more fails its task.
    #[arg(long, env = "SIGNOFF_MAX_TOOL_CALLS", default_value_t = agent::Limits::DEFAULT_TOOL_CALLS_PER_TURN)]
    pub max_tool_calls_per_turn: usize,
    /// How deep subagents may nest (a task a person started is at depth 0); an agent-tool call
    /// that would go deeper fails.
    #[arg(long, env = "SIGNOFF_MAX_SUBAGENT_DEPTH", default_value_t = agent::Limits::DEFAULT_SUBAGENT_DEPTH)]
    pub max_subagent_depth: usize,
    /// Most "always allow" policies one person may have in force; creating one more is
    /// refused until they revoke one.
    #[arg(long = "max-policies", env = "SIGNOFF_MAX_POLICIES", default_value_t = agent::Limits::DEFAULT_GRANTS_PER_USER)]
    pub max_policies_per_user: usize,
    /// A folder of Cedar policies (`*.cedar`) evaluated for every tool call before it runs
    /// (docs/policies.md).
    #[arg(long = "policies", env = "SIGNOFF_POLICIES")]
    pub policies_dir: Option<PathBuf>,
    /// A candidate folder of Cedar policies evaluated beside `--policies` for every call: its
    /// disagreements are logged and counted, never enforced.
    #[arg(long = "shadow-policies", env = "SIGNOFF_SHADOW_POLICIES")]
    pub shadow_policies_dir: Option<PathBuf>,
    /// This deployment's environment label (`prod`, `staging`), `context.environment` to the
    /// policies.
    #[arg(long, env = "SIGNOFF_ENVIRONMENT", default_value = "")]
    pub environment: String,
    /// How long a decision link (an Approve or Reject link in a message) works (`24h`, `30m`).
    #[arg(long, env = "SIGNOFF_DECISION_LINK_TTL", default_value = "24h", value_parser = humantime::parse_duration)]
    pub decision_link_ttl: Duration,
    /// Networks push notifications may be posted to although they are loopback, private,
    /// link-local or otherwise not public (CIDR, comma-separated; e.g. `10.1.0.0/16`).
    #[arg(long = "push-allow", env = "SIGNOFF_PUSH_ALLOW", value_delimiter = ',')]
    pub push_allow: Vec<String>,
    /// Trust `X-Forwarded-Host` and `X-Forwarded-Proto` (only behind a proxy that sets them).
    #[arg(long, env = "SIGNOFF_TRUST_PROXY")]
    pub trust_proxy: bool,
    /// Log lines as text or as JSON objects (one per line).
    #[arg(long, env = "SIGNOFF_LOG_FORMAT", value_enum, default_value_t = telemetry::LogFormat::Text)]
    pub log_format: telemetry::LogFormat,
    /// Also serve the conformance agent default/conformance (for the A2A conformance suite);
    /// its card is then the one at the origin's /.well-known/agent-card.json.
    #[arg(long, env = "SIGNOFF_CONFORMANCE_AGENT")]
    pub conformance_agent: bool,
}

/// This build's version and the git commit it was built from (`build.rs`; "unknown" when built
/// outside a git checkout): what `signoff --version` prints and the first log line says.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("SIGNOFF_GIT_COMMIT"),
    ")"
);

/// Where the UI this server sends comes from, in words (for the log line at start).
pub fn ui_source(config: &Config) -> String {
    http::ui_source(config.ui_dir.as_deref())
}

/// How long a stream may stay silent by default: 30 minutes, as kagent's.
pub const DEFAULT_STREAM_IDLE_TIMEOUT_SECS: u64 = 30 * 60;

/// How many approvals streams one user may have open by default.
pub const DEFAULT_APPROVALS_STREAMS_PER_USER: usize = 16;

impl Config {
    /// The defaults, with data in `data_dir` (for tests and embedding).
    pub fn new(data_dir: impl Into<PathBuf>) -> Config {
        Config {
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            data_dir: data_dir.into(),
            database_url: None,
            agents_file: None,
            ui_dir: None,
            body_limit: 1024 * 1024,
            auth: AuthMode::None,
            tokens: Vec::new(),
            tokens_file: None,
            trusted_proxies: Vec::new(),
            proxy_user_header: http::auth::proxy::DEFAULT_USER_HEADER.to_owned(),
            proxy_email_header: http::auth::proxy::DEFAULT_EMAIL_HEADER.to_owned(),
            proxy_groups_header: http::auth::proxy::DEFAULT_GROUPS_HEADER.to_owned(),
            oidc_issuer: None,
            oidc_client_id: None,
            oidc_client_secret: None,
            oidc_client_secret_file: None,
            oidc_scopes: vec!["openid".into(), "profile".into(), "email".into()],
            oidc_groups_claim: "groups".to_owned(),
            oidc_audience: None,
            oidc_max_token_lifetime: http::auth::jwt::MAX_LIFETIME,
            public_url: None,
            login_sweep_every: http::auth::oidc::SWEEP_EVERY,
            notifications: None,
            audit_key: None,
            operator_groups: Vec::new(),
            model_timeout_secs: 120,
            tool_timeout_secs: 60,
            read_timeout_secs: 30,
            stream_idle_timeout_secs: DEFAULT_STREAM_IDLE_TIMEOUT_SECS,
            approvals_heartbeat_secs: 15,
            approvals_streams_per_user: DEFAULT_APPROVALS_STREAMS_PER_USER,
            max_message_bytes: agent::Limits::DEFAULT_MESSAGE_BYTES,
            max_reason_bytes: agent::Limits::DEFAULT_REASON_BYTES,
            max_tool_calls_per_turn: agent::Limits::DEFAULT_TOOL_CALLS_PER_TURN,
            max_subagent_depth: agent::Limits::DEFAULT_SUBAGENT_DEPTH,
            max_policies_per_user: agent::Limits::DEFAULT_GRANTS_PER_USER,
            policies_dir: None,
            shadow_policies_dir: None,
            environment: String::new(),
            decision_link_ttl: Duration::from_secs(24 * 60 * 60),
            push_allow: Vec::new(),
            trust_proxy: false,
            log_format: telemetry::LogFormat::Text,
            conformance_agent: false,
        }
    }

    /// The Cedar policies of `--policies` and `--shadow-policies`; a folder that does not
    /// parse stops the start with the file and the policy at fault.
    pub fn policy_gate(&self) -> Result<agent::cedar::PolicyGate, ServerError> {
        let load = |dir: &std::path::Path| {
            agent::cedar::CedarPolicies::load_dir(dir, &self.environment)
                .map_err(|err| ServerError::Config(format!("policies: {err}")))
        };
        let live = match &self.policies_dir {
            Some(dir) => load(dir)?,
            None => agent::cedar::CedarPolicies::default(),
        };
        let shadow = self.shadow_policies_dir.as_deref().map(load).transpose()?;
        if !live.is_empty() || shadow.is_some() {
            tracing::info!(
                policies = live.len(),
                shadow = shadow.as_ref().map(agent::cedar::CedarPolicies::len),
                "Cedar policies loaded"
            );
        }
        Ok(agent::cedar::PolicyGate { live, shadow })
    }

    async fn auth(&self) -> Result<http::Auth, ServerError> {
        match self.auth {
            AuthMode::None => Ok(http::Auth::None),
            AuthMode::Tokens => {
                let mut tokens = HashMap::new();
                http::auth::tokens::parse(
                    self.tokens.iter().map(String::as_str),
                    "--tokens",
                    &mut tokens,
                )
                .map_err(ServerError::Config)?;
                if let Some(path) = &self.tokens_file {
                    let text = std::fs::read_to_string(path).map_err(|err| {
                        ServerError::Config(format!("--tokens-file {}: {err}", path.display()))
                    })?;
                    let source = path.display().to_string();
                    http::auth::tokens::parse(
                        http::auth::tokens::file_entries(&text),
                        &source,
                        &mut tokens,
                    )
                    .map_err(ServerError::Config)?;
                }
                if tokens.is_empty() {
                    return Err(ServerError::Config(
                        "--auth tokens needs at least one --tokens TOKEN=USER".to_owned(),
                    ));
                }
                Ok(http::Auth::Tokens(tokens))
            }
            AuthMode::Proxy => http::auth::proxy::Proxy::new(
                &self.trusted_proxies,
                &self.proxy_user_header,
                &self.proxy_email_header,
                &self.proxy_groups_header,
            )
            .map(http::Auth::Proxy)
            .map_err(ServerError::Config),
            AuthMode::Oidc => {
                let settings = self.oidc_settings()?;
                let oidc = http::auth::oidc::Oidc::discover(settings)
                    .await
                    .map_err(ServerError::Config)?;
                Ok(http::Auth::Oidc(Arc::new(oidc)))
            }
        }
    }

    /// The push-notification sender: `--push-allow`'s networks, the outbox's time limits, and
    /// the signing key in the store (made by the first server to start), issued as
    /// `--public-url` or `signoff`.
    async fn notifier(
        &self,
        store: &store::Store,
        delivery: &agent::notify::Delivery,
    ) -> Result<agent::notify::Notifier, ServerError> {
        use agent::notify;
        let allow = notify::AllowList::parse(self.push_allow.iter().map(String::as_str))
            .map_err(ServerError::Config)?;
        let outbound = notify::Outbound::new(allow, delivery.connect_timeout, delivery.timeout)
            .map_err(|err| ServerError::Config(err.to_string()))?;
        let issuer = self
            .public_url
            .clone()
            .unwrap_or_else(|| "signoff".to_owned());
        let signer = notify::Signer::load(store, issuer)
            .await
            .map_err(|err| ServerError::Config(err.to_string()))?;
        Ok(notify::Notifier::new(outbound, signer))
    }

    /// The Web Push sender: Signoff's VAPID key in the store (made by the first server that
    /// needs one), posting through `--push-allow`'s checks, its JWTs' subject `public_url`.
    async fn web_pusher(
        &self,
        store: &store::Store,
        public_url: &str,
        delivery: &agent::notify::Delivery,
    ) -> Result<agent::notify::web_push::WebPusher, ServerError> {
        use agent::notify;
        let allow = notify::AllowList::parse(self.push_allow.iter().map(String::as_str))
            .map_err(ServerError::Config)?;
        let outbound = notify::Outbound::new(allow, delivery.connect_timeout, delivery.timeout)
            .map_err(|err| ServerError::Config(err.to_string()))?;
        let vapid = notify::web_push::Vapid::load(store)
            .await
            .map_err(|err| ServerError::Config(err.to_string()))?;
        Ok(notify::web_push::WebPusher::new(
            vapid,
            outbound,
            public_url.to_owned(),
        ))
    }

    fn oidc_settings(&self) -> Result<http::auth::oidc::Settings, ServerError> {
        let needed = |value: &Option<String>, flag: &str| {
            value
                .clone()
                .filter(|value| !value.trim().is_empty())
                .ok_or_else(|| ServerError::Config(format!("--auth oidc needs {flag}")))
        };
        let client_id = needed(&self.oidc_client_id, "--oidc-client-id")?;
        let client_secret = match &self.oidc_client_secret_file {
            Some(path) => Some(
                std::fs::read_to_string(path)
                    .map_err(|err| {
                        ServerError::Config(format!(
                            "--oidc-client-secret-file {}: {err}",
                            path.display()
                        ))
                    })?
                    .trim()
                    .to_owned(),
            ),
            None => self.oidc_client_secret.clone(),
        };
        Ok(http::auth::oidc::Settings {
            issuer: needed(&self.oidc_issuer, "--oidc-issuer")?,
            audience: self
                .oidc_audience
                .clone()
                .unwrap_or_else(|| client_id.clone()),
            client_id,
            client_secret,
            scopes: self.oidc_scopes.clone(),
            groups_claim: self.oidc_groups_claim.clone(),
            max_token_lifetime: self.oidc_max_token_lifetime,
            public_url: needed(&self.public_url, "--public-url")?,
        })
    }
}

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("store: {0}")]
    Store(#[from] store::StoreError),
    #[error("{0}")]
    Agents(#[from] agent::ConfigError),
    #[error("agent runtime: {0}")]
    Runtime(#[from] agent::AgentError),
    #[error("configuration: {0}")]
    Config(String),
}

/// Serves Signoff on `listener` until `shutdown` completes, then stops streams and runners,
/// waits for their last writes and closes the database.
pub async fn run(
    listener: tokio::net::TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let listening = listener.local_addr()?;
    if config.auth == AuthMode::None && !listening.ip().is_loopback() {
        return Err(ServerError::Config(format!(
            "--auth none makes everyone who reaches the server its one local user, so it listens \
             only on a loopback address (127.0.0.1:8080, [::1]:8080), not {listening}; to serve \
             others, identify them: --auth tokens with --tokens or --tokens-file, --auth proxy \
             behind an authenticating proxy (--trusted-proxies), or --auth oidc"
        )));
    }
    std::fs::create_dir_all(&config.data_dir)?;
    let auth = config.auth().await?;
    let agents_file = match &config.agents_file {
        Some(path) => agent::AgentsFile::load(path)?,
        None => agent::AgentsFile::demo(),
    };
    let agents_file = if config.conformance_agent {
        agents_file.with_conformance_agent()?
    } else {
        agents_file
    };
    // The agent whose card the origin's well-known URL serves: the conformance agent when it
    // is served (a suite starts from the origin), else the first agent.
    let origin_agent = config
        .conformance_agent
        .then(|| format!("default/{}", agent::config::CONFORMANCE_AGENT));
    let database = store::Database::from_url(config.database_url.as_deref(), &config.data_dir)?;
    let store = store::Store::open(&database).await?;
    // Before any decision can be made: every receipt is signed.
    let audit_key = agent::receipts::key_path(config.audit_key.as_deref(), &config.data_dir);
    agent::receipts::install(&store, &audit_key).await?;
    let agents = agent::build_agents(&agents_file, &config.data_dir).await?;
    let limits = agent::Limits {
        model_timeout: Duration::from_secs(config.model_timeout_secs.max(1)),
        tool_timeout: Duration::from_secs(config.tool_timeout_secs.max(1)),
        max_message_bytes: config.max_message_bytes.max(1),
        max_reason_bytes: config.max_reason_bytes,
        max_tool_calls_per_turn: config.max_tool_calls_per_turn.max(1),
        max_subagent_depth: config.max_subagent_depth,
        max_grants_per_user: config.max_policies_per_user,
        decision_link_ttl: config.decision_link_ttl,
        ..agent::Limits::default()
    };
    let gate = config.policy_gate()?;
    let notifications = match &config.notifications {
        Some(path) => agent::notify::Notifications::load(path, config.public_url.as_deref())
            .map_err(|err| ServerError::Config(err.to_string()))?,
        None => agent::notify::Notifications::none(),
    };
    if notifications.is_active() {
        let channels: Vec<&str> = notifications.channel_names().collect();
        tracing::info!(channels = %channels.join(", "), "notifications on");
    }
    let notifier = config.notifier(&store, &notifications.delivery).await?;
    let web_pusher = match notifications.pushes_to_devices() {
        true => Some(
            config
                .web_pusher(&store, notifications.public_url(), &notifications.delivery)
                .await?,
        ),
        false => None,
    };
    let runtime =
        agent::Runtime::with_notifications(store.clone(), agents, limits, notifications, gate);
    runtime.pushes().set_notifier(Arc::new(notifier));
    if let Some(pusher) = web_pusher {
        runtime.web_push().set_pusher(Arc::new(pusher));
    }
    // Before anything is served: a tool whose server changed its definition is held back.
    runtime.tool_pins().check().await?;
    runtime.tool_pins().keep_checking();
    let resumed = runtime.resume_unfinished().await?;
    if resumed > 0 {
        tracing::info!(resumed, "resumed tasks left running");
    }
    let remotes = Arc::new(http::relay::Remotes::new(
        &agents_file,
        runtime.remote_agents(),
    )?);
    let sweeps_logins = matches!(auth, http::Auth::Oidc(_));
    let state = AppState {
        runtime: runtime.clone(),
        auth: Arc::new(auth),
        ui_dir: config.ui_dir.clone(),
        body_limit: config.body_limit,
        remotes: remotes.clone(),
        trust_proxy: config.trust_proxy,
        public_url: config.public_url.clone(),
        decision_link_ttl: config.decision_link_ttl,
        stream_idle_timeout: Duration::from_secs(config.stream_idle_timeout_secs.max(1)),
        approvals_heartbeat: Duration::from_secs(config.approvals_heartbeat_secs.max(1)),
        approvals_streams_per_user: config.approvals_streams_per_user,
        origin_agent,
        cards_since: chrono::DateTime::from_timestamp(chrono::Utc::now().timestamp(), 0)
            .unwrap_or_default(),
        loopback_only: config.auth == AuthMode::None,
        operator_groups: Arc::new(config.operator_groups.clone()),
        mcp_calls: Arc::default(),
        mcp_clients: Arc::default(),
    };
    let read_timeout = Duration::from_secs(config.read_timeout_secs.max(1));
    // A body that stops coming is cut off, as headers that stop coming are (`http::serve`).
    let app = router(state).layer(RequestBodyTimeoutLayer::new(read_timeout));
    let stopping = runtime.clone();
    let login_sweeper = sweeps_logins.then(|| {
        tokio::spawn(http::auth::oidc::sweep_logins(
            store.clone(),
            config.login_sweep_every,
        ))
    });
    http::serve::serve(listener, app, read_timeout, async move {
        shutdown.await;
        tracing::info!("shutting down");
        // Ends open streams, so the graceful shutdown does not wait on them.
        stopping.begin_shutdown();
        remotes.begin_shutdown();
    })
    .await;
    runtime.shutdown(Duration::from_secs(10)).await;
    if let Some(sweeper) = login_sweeper {
        sweeper.abort();
    }
    store.close().await;
    Ok(())
}
