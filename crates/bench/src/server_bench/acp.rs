//! What the ACP bridge costs: a coding agent over the Agent Client Protocol, the bench's own
//! (`crates/bench/acp_agent.py`, Python's standard library, no model), so the figures are
//! Signoff's. Each chat is one ACP session in a process of its own; its one `edit` permission
//! request waits as a batch in the inbox and is approved over REST. Timed on the wall clock from
//! both ends: the agent logs when it writes `session/request_permission` and when the answer's
//! line arrives; the bench notes when the batch reached the approvals stream and when it sent
//! the decision. Then the server's memory per idle live session (the agents' processes apart).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use signoff_protocol::TaskState;
use tokio::time::Instant;

use super::reach::{follow_stream, Seen};
use super::{errors_figure, pooled_http, rss_readings, Counts, PHASE_LIMIT};
use crate::client::{self, A2aClient};
use crate::error::{BenchError, Result};
use crate::progress;
use crate::scenario::{self, ms};
use crate::server::ServerProcess;
use crate::stats::{Figure, Summary};

const GROUP: &str = "acp (a coding agent's permission requests)";

/// The agent, written next to its log for each run.
const AGENT_SCRIPT: &str = include_str!("../../acp_agent.py");

/// Chats of the agent made before measuring: its first processes, the server's first sessions.
const WARM_UP: usize = 10;
/// Live sessions the agent of the timed chats may have beyond the chats at once: a chat's
/// session is idle again a moment after its task completes, and a new chat needs an idle one to
/// end when the agent runs as many as it may.
const SPARE_SESSIONS: usize = 4;
/// How long an ended session's agent may take to go: Signoff kills it 2 s after asking.
const ENDED_SETTLE: Duration = Duration::from_millis(2_500);
/// Rounds of one more task in each of the idle sessions' chats: what a chat costs without one.
const AGAIN_ROUNDS: usize = 2;

/// Seconds since the Unix epoch now: the agent's `time.time()`.
fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64())
}

/// The wall clock at one instant, to read instants a moment from it as Unix seconds (the two
/// clocks drift apart by at most half a millisecond a second, while NTP slews the wall clock).
#[derive(Debug, Clone, Copy)]
struct WallClock {
    instant: Instant,
    unix: f64,
}

impl WallClock {
    fn now() -> WallClock {
        WallClock {
            instant: Instant::now(),
            unix: unix_now(),
        }
    }

    /// Unix seconds at `at`.
    fn unix(&self, at: Instant) -> f64 {
        match at.checked_duration_since(self.instant) {
            Some(after) => self.unix + after.as_secs_f64(),
            None => self.unix - self.instant.duration_since(at).as_secs_f64(),
        }
    }
}

/// The agents file: `coder` for the timed chats (`coder_sessions` live at most) and `idle`
/// for the memory (`idle_sessions`), both the bench's agent in `dir`, logging to `log`.
fn agents(
    script: &Path,
    log: &Path,
    dir: &Path,
    coder_sessions: usize,
    idle_sessions: usize,
) -> String {
    let entry = |name: &str, sessions: usize| {
        format!(
            "[[agents]]\nname = \"{name}\"\ndescription = \"The bench's ACP agent\"\n\n\
             [agents.acp]\ncommand = [\"python3\", {script:?}, {log:?}]\ncwd = {dir:?}\n\
             max_sessions = {sessions}\n\n",
            script = script.display().to_string(),
            log = log.display().to_string(),
            dir = dir.display().to_string(),
        )
    };
    format!(
        "{}{}",
        entry("coder", coder_sessions),
        entry("idle", idle_sessions)
    )
}

/// The marker (`bench <uuid>`) a text carries.
fn marker_in(text: &str) -> Option<String> {
    text.match_indices("bench ").find_map(|(at, found)| {
        let id = text.get(at + found.len()..at + found.len() + 36)?;
        uuid::Uuid::try_parse(id).ok()?;
        Some(format!("bench {id}"))
    })
}

/// The marker of a pending batch: its call's title carries it.
fn pending_marker(pending: &Value) -> Option<String> {
    marker_in(pending["calls"].get(0)?["args"]["title"].as_str()?)
}

/// What the agent's log says of one permission request, in Unix seconds.
#[derive(Debug, Default, Clone, PartialEq)]
struct Logged {
    /// Just before it wrote `session/request_permission`.
    asked: Option<f64>,
    /// When the answer's line arrived, and the option it chose (or its outcome).
    answered: Option<(f64, String)>,
}

/// The agent's log (`asked <secs> bench <uuid>`, `answered <secs> bench <uuid> <option>`), by
/// marker; lines of any other shape are skipped.
fn read_log(text: &str) -> HashMap<String, Logged> {
    let mut all: HashMap<String, Logged> = HashMap::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (Some(what), Some(at), Some(marker)) = (
            words.first(),
            words.get(1).and_then(|at| at.parse::<f64>().ok()),
            words
                .get(2..4)
                .and_then(|marker| marker_in(&marker.join(" "))),
        ) else {
            continue;
        };
        let logged = all.entry(marker).or_default();
        match (*what, words.get(4)) {
            ("asked", None) => logged.asked = Some(at),
            ("answered", Some(chosen)) => logged.answered = Some((at, (*chosen).to_owned())),
            _ => {}
        }
    }
    all
}

/// One chat's approve cycle, as the bench saw it.
#[derive(Debug, Clone)]
struct Cycle {
    marker: String,
    /// The chat (A2A context).
    context: String,
    /// Unix seconds: the prompt sent, the batch on the approvals stream, the chat's stream
    /// paused, the decision sent.
    prompted: f64,
    pending: f64,
    paused: f64,
    decided: f64,
    /// From sending the decision to its response, and to the task's `completed`.
    decide_ms: f64,
    completed_ms: f64,
}

/// One approve cycle of a new chat, or of the chat `context` again: the prompt to its pause,
/// the batch on the stream, the REST approval, and the task followed to `completed`.
async fn cycle(
    chat: &A2aClient,
    http: &reqwest::Client,
    base: &str,
    seen: &Seen,
    context: Option<String>,
) -> Result<Cycle> {
    let marker = format!("bench {}", uuid::Uuid::new_v4());
    let mut message = client::user_text(&marker);
    message.context_id = context;
    let prompted = unix_now();
    let events = chat.stream(message).await?;
    let paused_at = client::ended_in(&events, TaskState::InputRequired)?;
    let (task, context) = client::ids_of(&events)
        .ok_or_else(|| BenchError::Unexpected("the stream named no task".into()))?;
    seen.all(std::slice::from_ref(&marker), Duration::from_secs(10))
        .await;
    let pending_at = seen.of(&marker).ok_or_else(|| {
        BenchError::Unexpected(format!("the batch of {task} never showed on the stream"))
    })?;
    let clock = WallClock::now();
    let url = format!("{base}/api/approvals/{task}");
    let decided = unix_now();
    let sent = Instant::now();
    let response = http
        .post(&url)
        .header("content-type", "application/json")
        .body(json!({"decision_type": "approve"}).to_string())
        .send()
        .await?;
    let answered = Instant::now();
    if !response.status().is_success() {
        return Err(BenchError::Status {
            status: response.status().as_u16(),
            url,
        });
    }
    let events = chat.resubscribe(&task).await?;
    let completed_at = client::ended_in(&events, TaskState::Completed)?;
    Ok(Cycle {
        marker,
        context,
        prompted,
        pending: clock.unix(pending_at),
        paused: clock.unix(paused_at),
        decided,
        decide_ms: ms(sent, answered),
        completed_ms: ms(sent, completed_at),
    })
}

/// Which chats a run of cycles is made of.
enum Chats {
    /// This many new ones.
    New(usize),
    /// These again, one cycle each.
    Again(Arc<Vec<String>>),
    /// These all at once, `rounds` cycles each, one after another.
    Rounds(Arc<Vec<String>>, usize),
}

impl Chats {
    fn count(&self) -> usize {
        match self {
            Chats::New(count) => *count,
            Chats::Again(contexts) => contexts.len(),
            Chats::Rounds(contexts, rounds) => contexts.len() * rounds,
        }
    }
}

/// Approve cycles on `chat`, `at_once` at a time (for rounds: each chat its own); the cycles
/// and the errors.
async fn cycles(
    server: &ServerProcess,
    chat: &Arc<A2aClient>,
    seen: &Arc<Seen>,
    chats: Chats,
    at_once: usize,
) -> (Vec<Cycle>, Vec<String>) {
    let count = chats.count();
    let (chat, seen, base) = (chat.clone(), seen.clone(), server.base.clone());
    let http = pooled_http();
    let deadline = Instant::now() + PHASE_LIMIT;
    let again = match chats {
        Chats::New(_) => None,
        Chats::Again(contexts) => Some(contexts),
        Chats::Rounds(contexts, rounds) => {
            return in_rounds(chat, http, base, seen, &contexts, rounds, deadline).await;
        }
    };
    let outcomes = scenario::run_pool(count, at_once, deadline, move |at| {
        let (chat, seen, base, http) = (chat.clone(), seen.clone(), base.clone(), http.clone());
        let context = again
            .as_ref()
            .and_then(|contexts| contexts.get(at).cloned());
        async move { cycle(&chat, &http, &base, &seen, context).await }
    })
    .await;
    split(outcomes)
}

/// `rounds` cycles in each of `contexts`, the chats all at once and each one's cycles one
/// after another (a second prompt in a chat would cancel the first).
async fn in_rounds(
    chat: Arc<A2aClient>,
    http: reqwest::Client,
    base: String,
    seen: Arc<Seen>,
    contexts: &[String],
    rounds: usize,
    deadline: Instant,
) -> (Vec<Cycle>, Vec<String>) {
    let mut handles = Vec::with_capacity(contexts.len());
    for context in contexts {
        let (chat, http, base, seen) = (chat.clone(), http.clone(), base.clone(), seen.clone());
        let context = context.clone();
        handles.push(tokio::spawn(async move {
            let mut outcomes = Vec::with_capacity(rounds);
            for _ in 0..rounds {
                if Instant::now() > deadline {
                    outcomes.push(Err(BenchError::Timeout(
                        "not started: the phase reached its time limit".into(),
                    )));
                    continue;
                }
                outcomes.push(cycle(&chat, &http, &base, &seen, Some(context.clone())).await);
            }
            outcomes
        }));
    }
    let mut outcomes = Vec::with_capacity(contexts.len() * rounds);
    for handle in handles {
        match handle.await {
            Ok(some) => outcomes.extend(some),
            Err(err) => outcomes.push(Err(BenchError::Unexpected(err.to_string()))),
        }
    }
    split(outcomes)
}

/// The cycles that went through, and the others' errors.
fn split(outcomes: Vec<Result<Cycle>>) -> (Vec<Cycle>, Vec<String>) {
    let mut done = Vec::with_capacity(outcomes.len());
    let mut errors = Vec::new();
    for outcome in outcomes {
        match outcome {
            Ok(one) => done.push(one),
            Err(err) => errors.push(err.to_string()),
        }
    }
    (done, errors)
}

/// The bridge's hops of each cycle in milliseconds, as the agent's log times them: the prompt
/// to its request, the request to the batch on the approvals stream and to the chat's pause,
/// and the decision to the answer at the agent. A cycle the log does not account for is an error.
#[derive(Debug, Default)]
struct Hops {
    to_ask: Vec<f64>,
    to_inbox: Vec<f64>,
    to_paused: Vec<f64>,
    to_agent: Vec<f64>,
}

fn hops(done: &[Cycle], logged: &HashMap<String, Logged>, errors: &mut Vec<String>) -> Hops {
    let mut hops = Hops::default();
    for one in done {
        let Some(log) = logged.get(&one.marker) else {
            errors.push(format!("the agent's log has no {}", one.marker));
            continue;
        };
        match (log.asked, &log.answered) {
            (Some(asked), Some((answered, chosen))) if chosen == "allow" => {
                hops.to_ask.push(1000.0 * (asked - one.prompted));
                hops.to_inbox.push(1000.0 * (one.pending - asked));
                hops.to_paused.push(1000.0 * (one.paused - asked));
                hops.to_agent.push(1000.0 * (answered - one.decided));
            }
            (Some(_), Some((_, chosen))) => errors.push(format!(
                "{} was approved, and the agent was answered {chosen}",
                one.marker
            )),
            _ => errors.push(format!("the agent's log lacks a line of {}", one.marker)),
        }
    }
    hops
}

/// The agent's log, read once every chat is done (each line is written before its chat ends).
fn logged(log: &Path) -> Result<HashMap<String, Logged>> {
    let text = std::fs::read_to_string(log).map_err(|err| BenchError::io(log, err))?;
    Ok(read_log(&text))
}

/// Whether `python3` runs, which the agent needs.
fn python3() -> Result<()> {
    let ran = std::process::Command::new("python3")
        .arg("--version")
        .output();
    match ran {
        Ok(out) if out.status.success() => Ok(()),
        _ => Err(BenchError::Server(
            "n/a (no python3 for the bench's ACP agent)".into(),
        )),
    }
}

pub async fn acp(binary: &Path, work_dir: &Path, counts: &Counts) -> Vec<Figure> {
    match measure(binary, &work_dir.join("acp"), counts).await {
        Ok(figures) => figures,
        Err(err) => vec![Figure::missing(GROUP, "acp", "ms", err.to_string())],
    }
}

/// The agent's script and its log, in the folder it works in.
fn agent_files(dir: &Path) -> Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(dir).map_err(|err| BenchError::io(dir, err))?;
    let script = dir.join("acp_agent.py");
    std::fs::write(&script, AGENT_SCRIPT).map_err(|err| BenchError::io(&script, err))?;
    let log = dir.join("agent.log");
    std::fs::write(&log, "").map_err(|err| BenchError::io(&log, err))?;
    Ok((script, log))
}

async fn measure(binary: &Path, dir: &Path, counts: &Counts) -> Result<Vec<Figure>> {
    python3()?;
    let work = dir.join("agent");
    let (script, log) = agent_files(&work)?;
    let at_once = counts.acp_at_once;
    let coder_sessions = at_once + SPARE_SESSIONS;
    let sessions = counts.acp_sessions;
    // One more for the idle agent's warm-up chat.
    let agents = agents(&script, &log, &work, coder_sessions, sessions + 1);
    let server = ServerProcess::start(binary, &dir.join("server"), Some(&agents)).await?;
    let seen = Arc::new(Seen::default());
    follow_stream(&server, None, pending_marker, seen.clone()).await?;
    let client = |agent: &str| {
        Arc::new(A2aClient::new(
            pooled_http(),
            server.endpoint("default", agent),
        ))
    };
    let (coder, idle) = (client("coder"), client("idle"));
    let (_, mut errors) = cycles(&server, &coder, &seen, Chats::New(WARM_UP), at_once).await;
    let (_, more) = cycles(&server, &idle, &seen, Chats::New(1), 1).await;
    errors.extend(more);
    // The memory first, while the server's heap holds little that a session could reuse.
    progress(format_args!(
        "acp: memory with {sessions} more idle live sessions"
    ));
    let memory = Memory {
        server: &server,
        seen: &seen,
        sessions,
    };
    let (memory, contexts) = memory.figures(&idle, &mut errors).await;
    let timed = Timed {
        server: &server,
        seen: &seen,
        log: &log,
        coder_sessions,
        idle_sessions: sessions + 1,
    };
    let chats = counts.acp_chats;
    let alone = Chats::New((chats / 4).max(1));
    let mut figures = timed.run(&coder, alone, 1, &mut errors).await?;
    figures.extend(
        timed
            .run(&coder, Chats::New(chats), at_once, &mut errors)
            .await?,
    );
    // The same load in the idle agent's live sessions: no agent starts, so no Python startup
    // takes the CPU from the server.
    let live: Vec<String> = contexts.into_iter().take(at_once).collect();
    let rounds = chats.div_ceil(live.len().max(1));
    let live = Chats::Rounds(Arc::new(live), rounds);
    figures.extend(timed.run(&idle, live, at_once, &mut errors).await?);
    server.stop().await?;
    figures.extend(memory);
    figures.push(errors_figure(GROUP, "errors", &errors));
    Ok(figures)
}

/// Timed cycles: new chats of the `coder` agent, which runs as many sessions as it may (each
/// new chat starts an agent process, and ends the longest-idle session's), or more cycles in
/// the `idle` agent's live sessions.
struct Timed<'a> {
    server: &'a ServerProcess,
    seen: &'a Arc<Seen>,
    log: &'a Path,
    coder_sessions: usize,
    /// The `idle` agent's, alive throughout.
    idle_sessions: usize,
}

impl Timed<'_> {
    /// `chats` on `chat`, `at_once` at a time: their figures.
    async fn run(
        &self,
        chat: &Arc<A2aClient>,
        chats: Chats,
        at_once: usize,
        errors: &mut Vec<String>,
    ) -> Result<Vec<Figure>> {
        let (label, how) = match &chats {
            Chats::Rounds(contexts, rounds) => (
                format!("{} live sessions at once", contexts.len()),
                format!(
                    "{rounds} prompts in each of {} live sessions, no agent started",
                    contexts.len()
                ),
            ),
            Chats::New(_) | Chats::Again(_) => (
                format!("{at_once} at a time"),
                "each chat a new session, its own agent process".to_owned(),
            ),
        };
        progress(format_args!(
            "acp: {} cycles, {label}, each asking one permission",
            chats.count()
        ));
        let cpu_before = self.server.cpu_seconds().ok();
        let agents_cpu_before = self.server.children_cpu_seconds().ok();
        let started = Instant::now();
        let (done, more) = cycles(self.server, chat, self.seen, chats, at_once).await;
        let wall = started.elapsed().as_secs_f64();
        let cpu = cpu_before
            .and_then(|before| self.server.cpu_seconds().ok().map(|after| after - before));
        let agents_cpu = agents_cpu_before.and_then(|before| {
            let after = self.server.children_cpu_seconds().ok()?;
            Some(after - before)
        });
        let alive = agent_processes(self.server.pid);
        errors.extend(more);
        let hops = hops(&done, &logged(self.log)?, errors);
        let mut rate_note = format!("{} cycles in {wall:.1} s", done.len());
        if let Ok((alive, _)) = alive {
            rate_note.push_str(&format!(
                "; {} processes of the timed agent alive after (its max_sessions: {}), and the \
                 idle agent's {}",
                alive.saturating_sub(self.idle_sessions),
                self.coder_sessions,
                self.idle_sessions
            ));
        }
        if let Some(cpu) = cpu {
            rate_note.push_str(&format!(
                "; server CPU {:.2} ms per cycle",
                1000.0 * cpu / done.len().max(1) as f64
            ));
        }
        if let Some(agents_cpu) = agents_cpu {
            rate_note.push_str(&format!(
                "; the agents that ended meanwhile used {:.2} ms CPU per cycle",
                1000.0 * agents_cpu / done.len().max(1) as f64
            ));
        }
        let mut figures = timing_figures(&hops, &done, &label, &how);
        figures.push(
            Figure::value(
                GROUP,
                &format!("{label}: rate"),
                "cycles/s",
                done.len() as f64 / wall,
            )
            .with_note(rate_note),
        );
        Ok(figures)
    }
}

fn timing_figures(hops: &Hops, done: &[Cycle], label: &str, how: &str) -> Vec<Figure> {
    let decide_ms: Vec<f64> = done.iter().map(|one| one.decide_ms).collect();
    let completed_ms: Vec<f64> = done.iter().map(|one| one.completed_ms).collect();
    let name = |what: &str| format!("{label}: {what}");
    vec![
        Figure::samples(
            GROUP,
            &name("prompt -> request_permission"),
            "ms",
            &hops.to_ask,
        )
        .with_note(
            "the bench POSTs message/stream -> the agent writes its request: for a new chat the \
             agent's process started (python3) and its session opened (initialize, \
             session/new), then the prompt and the tool call passed on",
        ),
        Figure::samples(
            GROUP,
            &name("request_permission -> inbox stream"),
            "ms",
            &hops.to_inbox,
        )
        .with_note(format!(
            "the agent writes session/request_permission -> its batch as a `pending` event on \
             the approver's approvals stream; {how}"
        )),
        Figure::samples(
            GROUP,
            &name("request_permission -> chat paused"),
            "ms",
            &hops.to_paused,
        )
        .with_note("the same request -> the chat's message/stream ends input-required"),
        Figure::samples(
            GROUP,
            &name("decision -> agent's answer"),
            "ms",
            &hops.to_agent,
        )
        .with_note(
            "the bench sends POST /api/approvals/{task} (approve) -> the answer's line (the \
             allow_once option) arrives on the agent's stdin",
        ),
        Figure::samples(GROUP, &name("decision -> REST response"), "ms", &decide_ms)
            .with_note("the same POST -> its response (it waits for the batch to run)"),
        Figure::samples(GROUP, &name("decision -> completed"), "ms", &completed_ms).with_note(
            "the same POST -> tasks/resubscribe ends completed (the agent's chunk and end_turn)",
        ),
    ]
}

/// The memory of idle live sessions: the server's RSS before and after `sessions` new chats of
/// the `idle` agent (each leaves its session live), against the same chats once more (a new
/// task each, in the session it has), so what a chat costs apart from its session comes out.
/// One chat at a time, as the agent's `max_sessions` leaves room for just these.
struct Memory<'a> {
    server: &'a ServerProcess,
    seen: &'a Arc<Seen>,
    sessions: usize,
}

impl Memory<'_> {
    /// The median RSS in MiB after `chats` (and the contexts of those that went through).
    async fn after(
        &self,
        idle: &Arc<A2aClient>,
        chats: Chats,
        errors: &mut Vec<String>,
    ) -> (Option<f64>, Vec<String>) {
        let (done, more) = cycles(self.server, idle, self.seen, chats, 1).await;
        errors.extend(more);
        let rss = median_rss(self.server).await;
        (rss, done.into_iter().map(|one| one.context).collect())
    }

    /// The figures, and the chats whose sessions it left live.
    async fn figures(
        &self,
        idle: &Arc<A2aClient>,
        errors: &mut Vec<String>,
    ) -> (Vec<Figure>, Vec<String>) {
        let n = self.sessions;
        // The warm-up settles: an agent ended to make room goes within 2 s.
        tokio::time::sleep(ENDED_SETTLE).await;
        let before = median_rss(self.server).await;
        let agents_before = agent_processes(self.server.pid);
        let (live, contexts) = self.after(idle, Chats::New(n), errors).await;
        let agents_after = agent_processes(self.server.pid);
        let contexts = Arc::new(contexts);
        let mut again = Vec::with_capacity(AGAIN_ROUNDS);
        for _ in 0..AGAIN_ROUNDS {
            again.push(
                self.after(idle, Chats::Again(contexts.clone()), errors)
                    .await
                    .0,
            );
        }
        let readings: Option<Vec<f64>> = again.into_iter().collect();
        let (Some(before), Some(live), Some(again)) = (before, live, readings) else {
            let missing = Figure::missing(
                GROUP,
                &format!("RSS per live session ({n})"),
                "KiB",
                "could not read the server's VmRSS",
            );
            return (vec![missing], contexts.to_vec());
        };
        let per = |mib: f64| mib * 1024.0 / n as f64;
        let per_task: Vec<f64> = std::iter::once(live)
            .chain(again.iter().copied())
            .collect::<Vec<f64>>()
            .windows(2)
            .map(|pair| per(pair[1] - pair[0]))
            .collect();
        let task_mean = per_task.iter().sum::<f64>() / per_task.len().max(1) as f64;
        let agents_note = match (agents_before, agents_after) {
            (Ok((earlier, _)), Ok((count, rss))) => format!(
                "; agent processes {earlier} -> {count}, {:.1} MiB RSS each, not counted",
                rss as f64 / (1024.0 * 1024.0) / count.max(1) as f64
            ),
            (Err(err), _) | (_, Err(err)) => format!("; agent processes unknown: {err}"),
        };
        let trail: Vec<String> = std::iter::once(before)
            .chain(std::iter::once(live))
            .chain(again.iter().copied())
            .map(|mib| format!("{mib:.1}"))
            .collect();
        let figures = vec![
            Figure::value(
                GROUP,
                &format!("RSS per live session ({n})"),
                "KiB",
                per(live - before) - task_mean,
            )
            .with_note(format!(
                "the server's VmRSS: (after {n} new chats, each leaving its idle session live - \
                 before) / {n} - what a chat costs without a new session (below); VmRSS {} \
                 MiB{agents_note}",
                trail.join(" -> ")
            )),
            Figure::value(
                GROUP,
                &format!("RSS per new chat, session left live ({n})"),
                "KiB",
                per(live - before),
            )
            .with_note("(RSS after the new chats - before) / chats, one at a time"),
            Figure::samples(
                GROUP,
                &format!("RSS per chat again, same session ({n})"),
                "KiB",
                &per_task,
            )
            .with_note(format!(
                "each of {AGAIN_ROUNDS} rounds of one more task in each of those chats: (RSS \
                 after - before) / chats"
            )),
        ];
        (figures, contexts.to_vec())
    }
}

/// The median of a few readings of the server's RSS, in MiB.
async fn median_rss(server: &ServerProcess) -> Option<f64> {
    Summary::of(&rss_readings(server).await).map(|s| s.median)
}

/// The live child processes of `pid` (its agents) and their RSS together, in bytes.
fn agent_processes(pid: u32) -> Result<(usize, u64)> {
    let proc_dir = Path::new("/proc");
    let entries = std::fs::read_dir(proc_dir).map_err(|err| BenchError::io(proc_dir, err))?;
    let (mut count, mut rss) = (0, 0);
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(stat) = std::fs::read_to_string(path.join("stat")) else {
            continue;
        };
        if parent_of(&stat) != Some(pid) {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(path.join("status")) else {
            continue;
        };
        count += 1;
        rss += status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024);
    }
    Ok((count, rss))
}

/// The parent of a live process, from its `/proc/PID/stat` (`None` for a zombie).
fn parent_of(stat: &str) -> Option<u32> {
    // The command name (field 2) may hold spaces and parentheses; state and ppid follow it.
    let (_, rest) = stat.rsplit_once(") ")?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    fields.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

    #[test]
    fn a_marker_is_found_in_a_title_and_nothing_in_other_text() {
        let title = format!("Write bench.txt (bench {ID})");
        assert_eq!(marker_in(&title), Some(format!("bench {ID}")));
        assert_eq!(marker_in("bench not-a-uuid, then bench "), None);
        assert_eq!(marker_in(&format!("bench {}", &ID[..30])), None);
        let pending = json!({"taskId": "t", "calls": [{"id": "call-1", "name": "edit",
            "args": {"title": title, "input": {}}}]});
        assert_eq!(pending_marker(&pending), Some(format!("bench {ID}")));
        assert_eq!(pending_marker(&json!({"taskId": "t", "calls": []})), None);
    }

    #[test]
    fn the_agents_log_is_read_by_marker() {
        let log = format!(
            "asked 1712345678.250000 bench {ID}\nnot a line\n\
             answered 1712345678.500000 bench {ID} allow\nasked soon bench {ID}\n\
             asked 1712345679.000000 bench other\n"
        );
        let all = read_log(&log);
        assert_eq!(all.len(), 1, "{all:?}");
        assert_eq!(
            all.get(&format!("bench {ID}")),
            Some(&Logged {
                asked: Some(1712345678.25),
                answered: Some((1712345678.5, "allow".to_owned())),
            })
        );
    }

    #[test]
    fn hops_are_timed_from_the_log_and_a_wrong_answer_is_an_error() {
        let marker = format!("bench {ID}");
        let one = Cycle {
            marker: marker.clone(),
            context: "c".into(),
            prompted: 99.95,
            pending: 100.004,
            paused: 100.006,
            decided: 101.0,
            decide_ms: 3.0,
            completed_ms: 5.0,
        };
        let mut logged = HashMap::new();
        logged.insert(
            marker.clone(),
            Logged {
                asked: Some(100.0),
                answered: Some((101.002, "allow".into())),
            },
        );
        let mut errors = Vec::new();
        let timed = hops(std::slice::from_ref(&one), &logged, &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        let close = |got: &[f64], want: f64| got.len() == 1 && (got[0] - want).abs() < 1e-6;
        assert!(close(&timed.to_ask, 50.0), "{timed:?}");
        assert!(close(&timed.to_inbox, 4.0), "{timed:?}");
        assert!(close(&timed.to_paused, 6.0), "{timed:?}");
        assert!(close(&timed.to_agent, 2.0), "{timed:?}");
        logged.insert(
            marker,
            Logged {
                asked: Some(100.0),
                answered: Some((101.002, "reject".into())),
            },
        );
        let timed = hops(&[one], &logged, &mut errors);
        assert!(timed.to_agent.is_empty());
        assert_eq!(errors.len(), 1, "{errors:?}");
    }

    #[test]
    fn the_wall_clock_reads_instants_before_and_after_its_own() {
        let clock = WallClock {
            instant: Instant::now(),
            unix: 100.0,
        };
        let later = clock.instant + Duration::from_millis(250);
        assert!((clock.unix(later) - 100.25).abs() < 1e-9);
        let earlier = clock
            .instant
            .checked_sub(Duration::from_millis(250))
            .unwrap();
        assert!((clock.unix(earlier) - 99.75).abs() < 1e-9);
    }

    #[test]
    fn a_parent_is_read_from_stat_past_a_name_with_spaces() {
        assert_eq!(parent_of("4242 (python3) S 77 4242 4242 0 -1"), Some(77));
        assert_eq!(parent_of("4242 (a (b) c) R 78 1 1"), Some(78));
        assert_eq!(parent_of("4242 (python3) Z 77 4242"), None);
    }
}
