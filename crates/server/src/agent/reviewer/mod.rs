//! An agent's first reviewer: asked about a call that would otherwise wait for a person, it
//! answers approve, deny or ask, with a risk level and a reason. It is a model (any
//! OpenAI-compatible endpoint, given [`prompt::MODEL_PROMPT`]), an HTTP endpoint (the request
//! POSTed as JSON, the answer JSON) or a command (the request on stdin, the answer on stdout;
//! run with a clean environment and killed at its timeout).
//!
//! It fails closed: an error, a timeout or an unreadable answer is a [`ReviewOutcome::Failed`]
//! review, and the call asks a person, who sees the failure. It is never asked inside a store
//! write: the runner reviews a turn's calls after screening them and before the commit that
//! records them (`runtime::screening`).

pub mod answer;
pub mod breaker;
pub mod prompt;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use signoff_protocol::hitl::{Review, ReviewOutcome};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::config::{ConfigError, ReviewerBackend, ReviewerMode, ReviewerSpec};
use super::model::{ChatMessage, Model, ModelEvent, ModelRequest};
use super::openai::OpenAiModel;
use answer::Answer;
pub use prompt::ReviewRequest;

/// The largest answer read from an HTTP reviewer or a command, in bytes.
const MAX_ANSWER_BYTES: u64 = 64 * 1024;
/// The `PATH` a command reviewer runs with (its environment is otherwise empty).
const COMMAND_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// A configured reviewer.
pub struct Reviewer {
    backend: Backend,
    mode: ReviewerMode,
    timeout: Duration,
}

enum Backend {
    Model(Arc<dyn Model>),
    Http {
        client: reqwest::Client,
        url: String,
    },
    Command {
        program: PathBuf,
        args: Vec<String>,
    },
}

impl std::fmt::Debug for Reviewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.backend {
            Backend::Model(_) => "model",
            Backend::Http { .. } => "http",
            Backend::Command { .. } => "command",
        };
        f.debug_struct("Reviewer")
            .field("kind", &kind)
            .field("mode", &self.mode)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Reviewer {
    /// The reviewer of an agents-file spec; `at` is its path (`agents[0].reviewer`), and a
    /// relative command is found in `data_dir`.
    pub fn from_spec(
        spec: &ReviewerSpec,
        at: &str,
        data_dir: &Path,
    ) -> Result<Reviewer, ConfigError> {
        let checked = spec.check(at, data_dir)?;
        let backend = match checked.backend {
            ReviewerBackend::Model(openai) => {
                Backend::Model(Arc::new(OpenAiModel::from_spec(&openai, at)?))
            }
            ReviewerBackend::Http { url } => Backend::Http {
                client: reqwest::Client::builder()
                    .connect_timeout(checked.timeout)
                    .build()
                    .map_err(|err| {
                        ConfigError::invalid(at, format!("cannot set up an HTTP client: {err}"))
                    })?,
                url,
            },
            ReviewerBackend::Command { program, args } => Backend::Command { program, args },
        };
        Ok(Reviewer {
            backend,
            mode: checked.mode,
            timeout: checked.timeout,
        })
    }

    /// Whether it runs in shadow mode (its verdicts only recorded).
    pub fn is_shadow(&self) -> bool {
        self.mode == ReviewerMode::Shadow
    }

    /// Reviews one call. Never an error: a failure is a [`ReviewOutcome::Failed`] review whose
    /// reason says what went wrong.
    pub async fn review(&self, request: &ReviewRequest<'_>) -> Review {
        let shadow = self.is_shadow();
        let asked = tokio::time::timeout(self.timeout, self.ask(request)).await;
        let failed = |reason: String| {
            tracing::warn!(task = %request.task_id, call = %request.call_id, %reason,
                "the reviewer failed: the call asks a person");
            Review {
                outcome: ReviewOutcome::Failed,
                risk: None,
                reason,
                shadow,
            }
        };
        match asked {
            Ok(Ok(Answer {
                outcome,
                risk,
                reason,
            })) => Review {
                outcome,
                risk: Some(risk.to_owned()),
                reason,
                shadow,
            },
            Ok(Err(failure)) => failed(format!("The reviewer failed: {failure}.")),
            Err(_elapsed) => failed(format!(
                "The reviewer did not answer within {}.",
                humantime::format_duration(self.timeout)
            )),
        }
    }

    async fn ask(&self, request: &ReviewRequest<'_>) -> Result<Answer, String> {
        let body = request.to_value();
        match &self.backend {
            Backend::Model(model) => ask_model(model.as_ref(), request, &body).await,
            Backend::Http { client, url } => {
                let response = client
                    .post(url)
                    .json(&body)
                    .send()
                    .await
                    .map_err(|_| "it could not be reached".to_owned())?;
                let status = response.status();
                if !status.is_success() {
                    return Err(format!("it answered HTTP {}", status.as_u16()));
                }
                let mut text = Vec::new();
                let mut response = response;
                while let Some(chunk) = response
                    .chunk()
                    .await
                    .map_err(|_| "its answer broke off".to_owned())?
                {
                    text.extend_from_slice(&chunk);
                    if text.len() as u64 > MAX_ANSWER_BYTES {
                        return Err(format!("its answer is over {MAX_ANSWER_BYTES} bytes"));
                    }
                }
                answer::read(&String::from_utf8_lossy(&text))
            }
            Backend::Command { program, args } => run_command(program, args, &body).await,
        }
    }
}

/// One model turn with the prompt and the request; its text is the answer.
async fn ask_model(
    model: &dyn Model,
    request: &ReviewRequest<'_>,
    body: &serde_json::Value,
) -> Result<Answer, String> {
    let mut stream = model.turn(ModelRequest {
        context_id: request.task_id.to_owned(),
        instruction: prompt::MODEL_PROMPT.to_owned(),
        messages: vec![ChatMessage::User {
            text: body.to_string(),
            message_id: None,
            asked: None,
        }],
        tools: Vec::new(),
    });
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        match event.map_err(|err| err.to_string())? {
            ModelEvent::Text(chunk) | ModelEvent::Message(chunk) => text.push_str(&chunk),
            ModelEvent::ToolCall(_) => return Err("it asked for a tool call".into()),
            ModelEvent::Artifact(_)
            | ModelEvent::Usage(_)
            | ModelEvent::Ran(_)
            | ModelEvent::Reported(_)
            | ModelEvent::Thought(_) => {}
        }
        if text.len() as u64 > MAX_ANSWER_BYTES {
            return Err(format!("its answer is over {MAX_ANSWER_BYTES} bytes"));
        }
    }
    answer::read_model_text(&text)
}

/// Runs a command reviewer: the request on its stdin, its answer on stdout. It gets an empty
/// environment (but a `PATH`), and is killed when the review is dropped at its timeout.
async fn run_command(
    program: &Path,
    args: &[String],
    body: &serde_json::Value,
) -> Result<Answer, String> {
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .env_clear()
        .env("PATH", COMMAND_PATH)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| format!("{} could not be started ({err})", program.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that answers without reading its input closes the pipe: that is no error.
        let _ = stdin.write_all(body.to_string().as_bytes()).await;
        drop(stdin);
    }
    let mut output = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        stdout
            .take(MAX_ANSWER_BYTES + 1)
            .read_to_end(&mut output)
            .await
            .map_err(|err| format!("its output could not be read ({err})"))?;
    }
    if output.len() as u64 > MAX_ANSWER_BYTES {
        return Err(format!("its answer is over {MAX_ANSWER_BYTES} bytes"));
    }
    let status = child
        .wait()
        .await
        .map_err(|err| format!("it could not be waited for ({err})"))?;
    if !status.success() {
        return Err(format!("it exited with {status}"));
    }
    answer::read(&String::from_utf8_lossy(&output))
}
