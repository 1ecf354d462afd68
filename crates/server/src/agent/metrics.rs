//! The server's Prometheus metrics: every name, its labels and its help text in one place, the
//! calls the runtime and the HTTP layer make at their seams, and the text a scrape reads.
//!
//! One [`Metrics`] (with its own registry) belongs to each [`Runtime`](super::Runtime), so two
//! servers in one process (the tests) never share counts. Labels are bounded: verdicts, channels
//! and task states are closed sets; agents and tools are the configured ones (a tool the agent
//! does not expose is counted as `unknown`). The pending approvals are read from the store at
//! each scrape, so they are right after a restart and across processes that share a database.

use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use signoff_protocol::TaskState;

use crate::store::{task_state_text, Channel, OutboxDepth, Verdict};

/// The content type of [`Metrics::render`]'s text (OpenMetrics, which Prometheus scrapes).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The label a tool gets when the model asked for one its agent does not expose (the model
/// chooses that name, so it must not become a label of its own).
pub const UNKNOWN_TOOL: &str = "unknown";

/// Seconds, for the machine's own steps: a tool call, a model turn, the way to a pause.
const STEP_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

/// Seconds, for a person's answer: from a second to a day.
const DECISION_BUCKETS: [f64; 12] = [
    1.0, 5.0, 15.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 14400.0, 43200.0, 86400.0,
];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabels {
    verdict: &'static str,
    channel: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ChannelLabels {
    channel: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReviewLabels {
    outcome: &'static str,
    mode: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AuthLabels {
    mode: &'static str,
    event: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NotificationLabels {
    channel: String,
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AgentLabels {
    agent: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelErrorLabels {
    agent: String,
    kind: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupLabels {
    group: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn step_histogram() -> Histogram {
    Histogram::new(STEP_BUCKETS)
}

fn decision_histogram() -> Histogram {
    Histogram::new(DECISION_BUCKETS)
}

/// How a model turn failed, for `signoff_model_turn_errors_total{kind}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelFailure {
    /// The model answered with an error (unreachable, refused, broke off).
    Error,
    /// The model stayed silent past `--model-timeout-secs`.
    Timeout,
    /// The model asked for more tool calls than one turn may have.
    TooManyCalls,
}

impl ModelFailure {
    fn as_str(self) -> &'static str {
        match self {
            ModelFailure::Error => "error",
            ModelFailure::Timeout => "timeout",
            ModelFailure::TooManyCalls => "too_many_calls",
        }
    }
}

/// The metrics of one server.
pub struct Metrics {
    registry: Registry,
    pending_approvals: Gauge,
    decisions: Family<DecisionLabels, Counter>,
    decision_wait: HistogramFamily<ChannelLabels>,
    vote_wait: HistogramFamily<GroupLabels>,
    time_to_pause: Histogram,
    task_transitions: Family<StateLabels, Counter>,
    model_turns: HistogramFamily<AgentLabels>,
    model_errors: Family<ModelErrorLabels, Counter>,
    tool_calls: HistogramFamily<ToolLabels>,
    tool_errors: Family<ToolLabels, Counter>,
    open_streams: Gauge,
    auth_events: Family<AuthLabels, Counter>,
    /// Calls whose policies could not be evaluated (they asked instead), and calls the shadow
    /// policy set would have decided otherwise.
    policy_errors: Counter,
    shadow_disagreements: Counter,
    /// The agents' first reviewers' verdicts, by outcome and mode.
    reviews: Family<ReviewLabels, Counter>,
    notifications: Family<NotificationLabels, Counter>,
    notifications_queued: Gauge,
    notifications_oldest: Gauge<f64, std::sync::atomic::AtomicU64>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// Every metric, registered under its name (counters get `_total` in the text).
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let pending_approvals = Gauge::default();
        registry.register(
            "signoff_pending_approvals",
            "Batches of tool calls waiting for a person's decision (read from the store)",
            pending_approvals.clone(),
        );
        let decisions = Family::default();
        registry.register(
            "signoff_decisions",
            "Decided tool calls, by verdict (approve, deny, cancel, expire) and channel \
             (a2a, text, rest, cancel, policy, rule, expiry)",
            decisions.clone(),
        );
        let decision_wait: HistogramFamily<ChannelLabels> =
            Family::new_with_constructor(decision_histogram);
        registry.register(
            "signoff_decision_wait_seconds",
            "Time from a pause to a person's decision on its batch, by channel",
            decision_wait.clone(),
        );
        let vote_wait: HistogramFamily<GroupLabels> =
            Family::new_with_constructor(decision_histogram);
        registry.register(
            "signoff_approver_wait_seconds",
            "Time from a pause to each approval or rejection of its calls, by the approvers \
             entry that made the person eligible (a group's name, `user` for one named, \
             `requester` for the requester alone)",
            vote_wait.clone(),
        );
        let time_to_pause = step_histogram();
        registry.register(
            "signoff_time_to_pause_seconds",
            "Time from a runner taking a task up (a message, a decision) to its pause",
            time_to_pause.clone(),
        );
        let task_transitions = Family::default();
        registry.register(
            "signoff_task_transitions",
            "Tasks that entered each state",
            task_transitions.clone(),
        );
        let model_turns: HistogramFamily<AgentLabels> =
            Family::new_with_constructor(step_histogram);
        registry.register(
            "signoff_model_turn_seconds",
            "Duration of model turns, by agent (failed turns too)",
            model_turns.clone(),
        );
        let model_errors = Family::default();
        registry.register(
            "signoff_model_turn_errors",
            "Model turns that failed, by agent and kind (error, timeout, too_many_calls)",
            model_errors.clone(),
        );
        let tool_calls: HistogramFamily<ToolLabels> = Family::new_with_constructor(step_histogram);
        registry.register(
            "signoff_tool_call_seconds",
            "Duration of tool calls, by tool",
            tool_calls.clone(),
        );
        let tool_errors = Family::default();
        registry.register(
            "signoff_tool_call_errors",
            "Tool calls whose result is an error (isError), by tool",
            tool_errors.clone(),
        );
        let open_streams = Gauge::default();
        registry.register(
            "signoff_open_streams",
            "Open SSE streams of A2A calls",
            open_streams.clone(),
        );
        let auth_events = Family::default();
        registry.register(
            "signoff_auth_events",
            "Sign-ins, sign-outs, refreshed sessions and refused credentials, by auth mode",
            auth_events.clone(),
        );
        let policy_errors = Counter::default();
        registry.register(
            "signoff_policy_errors",
            "Tool calls whose Cedar policies could not be evaluated (an error or a missing \
             attribute): each asked a person instead of running",
            policy_errors.clone(),
        );
        let shadow_disagreements = Counter::default();
        registry.register(
            "signoff_shadow_policy_disagreements",
            "Tool calls the shadow policy set (--shadow-policies) would have decided otherwise",
            shadow_disagreements.clone(),
        );
        let reviews = Family::default();
        registry.register(
            "signoff_reviews",
            "Calls an agent's first reviewer was asked about (or, paused, was not), by outcome \
             (approve, deny, ask, failed, paused) and mode (live, shadow)",
            reviews.clone(),
        );
        let notifications = Family::default();
        registry.register(
            "signoff_notifications",
            "Notification attempts, by channel and outcome (delivered, retry, failed: no retry \
             left)",
            notifications.clone(),
        );
        let notifications_queued = Gauge::default();
        registry.register(
            "signoff_notifications_queued",
            "Notifications waiting to be delivered (read from the store)",
            notifications_queued.clone(),
        );
        let notifications_oldest = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
        registry.register(
            "signoff_notifications_oldest_age_seconds",
            "Age of the oldest notification waiting to be delivered (0: none waits)",
            notifications_oldest.clone(),
        );
        Metrics {
            registry,
            pending_approvals,
            decisions,
            decision_wait,
            vote_wait,
            time_to_pause,
            task_transitions,
            model_turns,
            model_errors,
            tool_calls,
            tool_errors,
            open_streams,
            auth_events,
            policy_errors,
            shadow_disagreements,
            reviews,
            notifications,
            notifications_queued,
            notifications_oldest,
        }
    }

    /// A call whose policies could not be evaluated.
    pub fn policy_error(&self) {
        self.policy_errors.inc();
    }

    /// A call the shadow policy set would have decided otherwise.
    pub fn shadow_disagreement(&self) {
        self.shadow_disagreements.inc();
    }

    /// A call's review by the agent's first reviewer came to `outcome`.
    pub fn reviewed(&self, outcome: &'static str, shadow: bool) {
        let mode = if shadow { "shadow" } else { "live" };
        self.reviews
            .get_or_create(&ReviewLabels { outcome, mode })
            .inc();
    }

    /// An attempt at a notification to `channel` (a configured one) ended with `outcome`:
    /// `delivered`, `retry` or `failed`.
    pub fn notification(&self, channel: &str, outcome: &'static str) {
        self.notifications
            .get_or_create(&NotificationLabels {
                channel: channel.to_owned(),
                outcome,
            })
            .inc();
    }

    /// An event of the HTTP layer's sign-in (`sign_in`, `sign_out`, `refreshed`, `refused`)
    /// in auth mode `mode`.
    pub fn auth_event(&self, mode: &'static str, event: &'static str) {
        self.auth_events
            .get_or_create(&AuthLabels { mode, event })
            .inc();
    }

    /// The scrape's text, with `pending_approvals` and the notifications' `outbox` as the
    /// store counts them now.
    pub fn render(
        &self,
        pending_approvals: i64,
        outbox: &OutboxDepth,
    ) -> Result<String, std::fmt::Error> {
        self.pending_approvals.set(pending_approvals);
        self.notifications_queued.set(outbox.queued);
        let oldest = outbox
            .oldest_created_at
            .as_deref()
            .and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok())
            .map_or(0.0, |at| {
                let age = chrono::Utc::now() - at.with_timezone(&chrono::Utc);
                age.num_milliseconds().max(0) as f64 / 1000.0
            });
        self.notifications_oldest.set(oldest);
        let mut text = String::new();
        encode(&mut text, &self.registry)?;
        Ok(text)
    }

    /// Calls decided through `channel`, one verdict each; `waited` is the time since the pause
    /// when a person decided.
    pub fn decided(
        &self,
        channel: Channel,
        verdicts: impl IntoIterator<Item = Verdict>,
        waited: Option<Duration>,
    ) {
        for verdict in verdicts {
            self.decisions
                .get_or_create(&DecisionLabels {
                    verdict: verdict.as_str(),
                    channel: channel.as_str(),
                })
                .inc();
        }
        if let Some(waited) = waited {
            self.decision_wait
                .get_or_create(&ChannelLabels {
                    channel: channel.as_str(),
                })
                .observe(waited.as_secs_f64());
        }
    }

    /// A person's approval or rejection, `waited` after the pause, through the approvers
    /// entries `eligible_by` (`group:sre`, `user:alice`, `requester`): once per group.
    pub fn voted<'a>(&self, eligible_by: impl IntoIterator<Item = &'a str>, waited: Duration) {
        let mut groups: Vec<&str> = eligible_by
            .into_iter()
            .map(|entry| match entry.split_once(':') {
                Some(("group", group)) => group,
                Some(("user", _)) => "user",
                _ => entry,
            })
            .collect();
        groups.sort_unstable();
        groups.dedup();
        for group in groups {
            self.vote_wait
                .get_or_create(&GroupLabels {
                    group: group.to_owned(),
                })
                .observe(waited.as_secs_f64());
        }
    }

    /// A task entered `state`.
    pub fn task_entered(&self, state: TaskState) {
        self.task_transitions
            .get_or_create(&StateLabels {
                state: task_state_text(state),
            })
            .inc();
    }

    /// A task paused, `took` after its runner took it up.
    pub fn paused(&self, took: Duration) {
        self.time_to_pause.observe(took.as_secs_f64());
    }

    /// A model turn of `agent` ended after `took`, failed if `failure` says how.
    pub fn model_turn(&self, agent: &str, took: Duration, failure: Option<ModelFailure>) {
        let agent = agent.to_owned();
        self.model_turns
            .get_or_create(&AgentLabels {
                agent: agent.clone(),
            })
            .observe(took.as_secs_f64());
        if let Some(failure) = failure {
            self.model_errors
                .get_or_create(&ModelErrorLabels {
                    agent,
                    kind: failure.as_str(),
                })
                .inc();
        }
    }

    /// A call of `tool` (an exposed tool's name, or [`UNKNOWN_TOOL`]) took `took`.
    pub fn tool_call(&self, tool: &str, took: Duration, failed: bool) {
        let labels = ToolLabels {
            tool: tool.to_owned(),
        };
        self.tool_calls
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        if failed {
            self.tool_errors.get_or_create(&labels).inc();
        }
    }

    /// Counts an open stream until the guard is dropped (when the stream ends or its client
    /// goes away).
    pub fn stream_opened(&self) -> OpenStream {
        self.open_streams.inc();
        OpenStream(self.open_streams.clone())
    }
}

/// One open SSE stream, counted in `signoff_open_streams` while it lives.
#[derive(Debug)]
pub struct OpenStream(Gauge);

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_names_every_metric_and_counts_what_happened() {
        let metrics = Metrics::new();
        metrics.decided(
            Channel::Rest,
            [Verdict::Approve, Verdict::Deny, Verdict::Approve],
            Some(Duration::from_secs(3)),
        );
        metrics.voted(
            ["group:sre", "group:oncall", "group:sre", "user:alice"],
            Duration::from_secs(2),
        );
        metrics.task_entered(TaskState::InputRequired);
        metrics.paused(Duration::from_millis(20));
        metrics.model_turn("default/demo", Duration::from_millis(5), None);
        metrics.model_turn(
            "default/demo",
            Duration::from_millis(5),
            Some(ModelFailure::Timeout),
        );
        metrics.tool_call("write_file", Duration::from_millis(2), true);
        let stream = metrics.stream_opened();
        let text = metrics.render(7, &OutboxDepth::default()).unwrap();
        for line in [
            "signoff_pending_approvals 7",
            r#"signoff_decisions_total{verdict="approve",channel="rest"} 2"#,
            r#"signoff_decisions_total{verdict="deny",channel="rest"} 1"#,
            r#"signoff_decision_wait_seconds_count{channel="rest"} 1"#,
            r#"signoff_approver_wait_seconds_count{group="sre"} 1"#,
            r#"signoff_approver_wait_seconds_count{group="oncall"} 1"#,
            r#"signoff_approver_wait_seconds_count{group="user"} 1"#,
            "signoff_time_to_pause_seconds_count 1",
            r#"signoff_task_transitions_total{state="input-required"} 1"#,
            r#"signoff_model_turn_seconds_count{agent="default/demo"} 2"#,
            r#"signoff_model_turn_errors_total{agent="default/demo",kind="timeout"} 1"#,
            r#"signoff_tool_call_seconds_count{tool="write_file"} 1"#,
            r#"signoff_tool_call_errors_total{tool="write_file"} 1"#,
            "signoff_open_streams 1",
            "# EOF",
        ] {
            assert!(text.lines().any(|got| got == line), "{line:?} in\n{text}");
        }
        drop(stream);
        let text = metrics.render(0, &OutboxDepth::default()).unwrap();
        assert!(text.lines().any(|got| got == "signoff_open_streams 0"));
    }
}
