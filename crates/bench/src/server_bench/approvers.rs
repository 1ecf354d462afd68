//! Who decides, and what it costs: the concurrent approve cycles of the load figures with the
//! requester deciding alone, under a two-person rule (another person approves), and with a
//! quorum of two (two other people approve each batch at once). Each runs on a fresh server
//! with `--auth tokens`, and every call is checked to have run exactly once.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use signoff_protocol::hitl::keys;
use signoff_protocol::TaskState;
use tokio::time::Instant;

use super::{errors_figure, pooled_http, Counts, PHASE_LIMIT};
use crate::client::A2aClient;
use crate::error::{BenchError, Result};
use crate::progress;
use crate::scenario::{self, Paused};
use crate::server::ServerProcess;
use crate::stats::Figure;

const GROUP: &str = "approvers (concurrent approve cycles by who decides)";

/// Alice asks; bob and carol are in the approver group `sre`.
const TOKENS: &str = "alice-token=alice,bob-token=bob:sre,carol-token=carol:sre";

/// Who decides each batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deciders {
    /// Nothing configured: the requester decides alone (today's behaviour).
    Alone,
    /// `approvers = ["group:sre"]`, `requester_may_approve = false`: bob approves.
    TwoPerson,
    /// The same with `quorum = 2`: bob and carol both approve, at the same time.
    QuorumOfTwo,
}

impl Deciders {
    const ALL: [Deciders; 3] = [Deciders::Alone, Deciders::TwoPerson, Deciders::QuorumOfTwo];

    fn label(self) -> &'static str {
        match self {
            Deciders::Alone => "requester alone",
            Deciders::TwoPerson => "two-person rule",
            Deciders::QuorumOfTwo => "quorum of 2",
        }
    }

    /// The demo agent with this mode's approver settings.
    fn agents_toml(self) -> String {
        let settings = match self {
            Deciders::Alone => "",
            Deciders::TwoPerson => "approvers = [\"group:sre\"]\nrequester_may_approve = false\n",
            Deciders::QuorumOfTwo => {
                "approvers = [\"group:sre\"]\nrequester_may_approve = false\nquorum = 2\n"
            }
        };
        format!(
            "[[agents]]\nname = \"demo\"\n{settings}\n[[agents.tools]]\nkind = \"builtin_files\"\n\
             require_approval = [\"write_file\", \"delete_file\"]\n"
        )
    }

    /// The tokens of the people who approve each batch.
    fn approver_tokens(self) -> &'static [&'static str] {
        match self {
            Deciders::Alone => &["alice-token"],
            Deciders::TwoPerson => &["bob-token"],
            Deciders::QuorumOfTwo => &["bob-token", "carol-token"],
        }
    }
}

/// What one mode measured.
struct Measured {
    e2e_ms: Vec<f64>,
    errors: Vec<String>,
    cpu_seconds: Option<f64>,
    cycles: usize,
    double_runs: usize,
}

/// The three modes, each on its own fresh server, and their CPU against the requester alone.
pub async fn approvers(binary: &Path, work_dir: &Path, counts: &Counts) -> Vec<Figure> {
    let chats = counts.load_large;
    let mut figures = Vec::new();
    let mut alone_cpu_per_cycle = None;
    for mode in Deciders::ALL {
        progress(format_args!(
            "approvers: {chats} concurrent approve cycles, {}",
            mode.label()
        ));
        let data_dir = work_dir.join(format!("approvers-{mode:?}").to_lowercase());
        let measured = match measure(binary, &data_dir, mode, chats).await {
            Ok(measured) => measured,
            Err(err) => {
                figures.push(Figure::missing(GROUP, mode.label(), "ms", err.to_string()));
                continue;
            }
        };
        let per_cycle = measured
            .cpu_seconds
            .map(|cpu| 1000.0 * cpu / measured.cycles.max(1) as f64);
        if mode == Deciders::Alone {
            alone_cpu_per_cycle = per_cycle;
        }
        figures.extend(mode_figures(
            mode,
            &measured,
            per_cycle,
            alone_cpu_per_cycle,
        ));
    }
    figures
}

fn mode_figures(
    mode: Deciders,
    measured: &Measured,
    per_cycle: Option<f64>,
    alone_per_cycle: Option<f64>,
) -> Vec<Figure> {
    let label = mode.label();
    let approvals = mode.approver_tokens().len();
    let mut figures = vec![Figure::samples(
        GROUP,
        &format!("{label}: end-to-end"),
        "ms",
        &measured.e2e_ms,
    )
    .with_note(format!(
        "{} cycles started together; prompt -> {approvals} approval(s) -> completed",
        measured.cycles
    ))];
    if let Some(per_cycle) = per_cycle {
        let mut note = format!(
            "server user+system CPU per batch, {:.2} ms per approval given",
            per_cycle / approvals as f64
        );
        if let (Some(alone), false) = (alone_per_cycle, mode == Deciders::Alone) {
            note.push_str(&format!(
                "; {:.2}x the requester deciding alone per batch, {:.2}x per approval",
                per_cycle / alone,
                per_cycle / approvals as f64 / alone
            ));
        }
        figures.push(
            Figure::value(GROUP, &format!("{label}: server CPU"), "ms", per_cycle).with_note(note),
        );
    }
    figures.push(
        Figure::value(
            GROUP,
            &format!("{label}: calls run twice"),
            "count",
            measured.double_runs as f64,
        )
        .with_note("tool results per call id in each task's history (tasks/get)"),
    );
    figures.push(errors_figure(
        GROUP,
        &format!("{label}: errors"),
        &measured.errors,
    ));
    figures
}

async fn measure(binary: &Path, data_dir: &Path, mode: Deciders, chats: usize) -> Result<Measured> {
    let args = [
        "--auth".to_owned(),
        "tokens".to_owned(),
        "--tokens".to_owned(),
        TOKENS.to_owned(),
    ];
    let toml = mode.agents_toml();
    let server = ServerProcess::start_with_args(binary, data_dir, Some(&toml), &args).await?;
    let c_txt = server.sandbox().join("c.txt");
    std::fs::write(&c_txt, "hello from c.txt\n").map_err(|err| BenchError::io(&c_txt, err))?;
    let requester = Arc::new(as_person(&server, "alice-token"));
    let approvers: Arc<Vec<A2aClient>> = Arc::new(
        mode.approver_tokens()
            .iter()
            .map(|token| as_person(&server, token))
            .collect(),
    );
    let cpu_before = server.cpu_seconds().ok();
    let (e2e_ms, mut errors, tasks) = run_cycles(&requester, &approvers, chats).await;
    let cpu_seconds =
        cpu_before.and_then(|before| server.cpu_seconds().ok().map(|after| after - before));
    let mut double_runs = 0;
    for task in &tasks {
        match runs_per_call(&requester, task).await {
            Ok(runs) => double_runs += runs.values().filter(|runs| **runs > 1).count(),
            Err(err) => errors.push(err.to_string()),
        }
    }
    server.stop().await?;
    Ok(Measured {
        cycles: e2e_ms.len(),
        e2e_ms,
        errors,
        cpu_seconds,
        double_runs,
    })
}

fn as_person(server: &ServerProcess, token: &str) -> A2aClient {
    A2aClient::new(pooled_http(), server.endpoint("default", "demo")).with_token(token)
}

/// `chats` cycles started together: alice's prompt pauses, then every approver of the mode
/// approves at once. Each completed cycle's milliseconds, the errors, and the tasks completed.
async fn run_cycles(
    requester: &Arc<A2aClient>,
    approvers: &Arc<Vec<A2aClient>>,
    chats: usize,
) -> (Vec<f64>, Vec<String>, Vec<String>) {
    let barrier = Arc::new(tokio::sync::Barrier::new(chats));
    let mut handles = Vec::with_capacity(chats);
    for _ in 0..chats {
        let (requester, approvers, barrier) =
            (requester.clone(), approvers.clone(), barrier.clone());
        handles.push(tokio::spawn(async move {
            barrier.wait().await;
            match tokio::time::timeout(PHASE_LIMIT, cycle(&requester, &approvers)).await {
                Ok(outcome) => outcome,
                Err(_) => Err(BenchError::Timeout(format!(
                    "a cycle took longer than {PHASE_LIMIT:?}"
                ))),
            }
        }));
    }
    let (mut e2e, mut errors, mut tasks) = (Vec::new(), Vec::new(), Vec::new());
    for handle in handles {
        match handle.await {
            Ok(Ok((ms, task))) => {
                e2e.push(ms);
                tasks.push(task);
            }
            Ok(Err(err)) => errors.push(err.to_string()),
            Err(err) => errors.push(err.to_string()),
        }
    }
    (e2e, errors, tasks)
}

/// One batch: paused by the requester, approved by each approver at the same time. An
/// approval short of its quorum may end its stream with the batch still waiting; the one that
/// completes the quorum runs the calls to `completed`.
async fn cycle(requester: &A2aClient, approvers: &[A2aClient]) -> Result<(f64, String)> {
    let start = Instant::now();
    let (_, paused) = scenario::pause(requester).await?;
    let decisions = approvers.iter().map(|approver| approve(approver, &paused));
    let mut completed_at = None;
    for outcome in futures_util::future::join_all(decisions).await {
        if let Some(at) = outcome? {
            completed_at = Some(completed_at.map_or(at, |seen: Instant| seen.max(at)));
        }
    }
    let completed_at = completed_at.ok_or_else(|| {
        BenchError::Unexpected("no approval's stream ended with the task completed".into())
    })?;
    Ok((scenario::ms(start, completed_at), paused.task_id))
}

/// Approves every call of `paused`; when the stream ended `completed`, the instant it did.
async fn approve(approver: &A2aClient, paused: &Paused) -> Result<Option<Instant>> {
    let message = crate::client::approve(&paused.task_id, &paused.context_id);
    let events = approver.stream(message).await?;
    if let Ok(at) = crate::client::ended_in(&events, TaskState::Completed) {
        return Ok(Some(at));
    }
    crate::client::ended_in(&events, TaskState::InputRequired)?;
    Ok(None)
}

/// How many results each tool call of `task` has in its stored history.
async fn runs_per_call(client: &A2aClient, task: &str) -> Result<HashMap<String, usize>> {
    let task_json = client.get_task(task).await?;
    let mut runs = HashMap::new();
    let messages = task_json["history"].as_array().cloned().unwrap_or_default();
    for part in messages.iter().flat_map(parts_of) {
        if part["metadata"][keys::KAGENT_TYPE] == keys::FUNCTION_RESPONSE {
            let id = part["data"]["id"].as_str().unwrap_or_default().to_owned();
            *runs.entry(id).or_default() += 1;
        }
    }
    if runs.is_empty() {
        return Err(BenchError::Unexpected(format!(
            "task {task} has no tool result in its history"
        )));
    }
    Ok(runs)
}

fn parts_of(message: &Value) -> Vec<Value> {
    message["parts"].as_array().cloned().unwrap_or_default()
}
