//! Who decides a tool call before anyone is asked: the agent's argument rules (from the agents
//! file) and a person's "always allow" policies (from the store), compiled into matchers. The
//! runtime asks [`AgentApprovals::rule_for`] first (a `deny` rule wins over any policy), else
//! the tool's `require_approval`; only a call that would then wait is checked against the
//! person's policies (crates/server/README.md,
//! Argument rules; docs/rest.md, Policies).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::Value;
use signoff_protocol::hitl::ASK_USER;
use signoff_protocol::rest::{ArgMatch, Policy, PolicyScope as WireScope};

use super::config::{check_rules, parse_timeout, AgentSpec, ConfigError, MatchSpec, Matcher};
use super::config::{ApproverEntry, ApproversSpec};
use super::config::{OnTimeout, RuleAction};
use super::tools::Toolbox;
use crate::store::{GrantRow, GrantScope};

/// One compiled argument rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// How the model and the person read it: `#2 (write_file when path glob "notes/**")`.
    pub label: String,
    pub tool: String,
    pub action: RuleAction,
    when: Vec<(String, Matcher)>,
    /// Who may approve the calls it holds (`ask` rules only; empty: as the tool's).
    pub approvers: ApproversSpec,
}

/// An agent's rules and approval timeout.
#[derive(Debug, Clone, Default)]
pub struct AgentApprovals {
    pub rules: Vec<Rule>,
    /// How long a batch waits, and that duration as the agents file wrote it (`30m`).
    pub timeout: Option<(Duration, String)>,
    pub on_timeout: OnTimeout,
    /// Who may approve, per level of the agents file.
    pub approvers: ApproverLevels,
}

/// An agent's approver settings, each level already merged over the levels above it.
#[derive(Debug, Clone, Default)]
pub struct ApproverLevels {
    agent: ApproversSpec,
    /// By source name: its prefix, its settings, and those of its tools.
    sources: HashMap<String, SourceApprovers>,
}

#[derive(Debug, Clone, Default)]
struct SourceApprovers {
    prefix: String,
    own: ApproversSpec,
    tools: HashMap<String, ApproversSpec>,
}

/// Who may approve one call, as the agents file says: its most specific settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallApprovers {
    /// Empty: nobody but the requester (no approvers configured).
    pub entries: Vec<ApproverEntry>,
    pub requester_may_approve: bool,
    pub quorum: u32,
    /// Whether a hand-over may make people eligible whom `entries` do not name.
    pub handover_may_widen: bool,
    /// The call's deadline ladder.
    pub ladder: CallLadder,
}

/// One call's deadline ladder, as the agents file says (crates/server/README.md, Approvers).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallLadder {
    pub remind_after: Option<Duration>,
    pub escalate_after: Option<Duration>,
    /// Whom an escalation makes eligible.
    pub escalate_to: Vec<ApproverEntry>,
    /// How far, in all, a deadline may be pushed back, and that duration as written.
    pub max_extend: Option<(Duration, String)>,
}

impl CallLadder {
    fn from_spec(spec: &ApproversSpec) -> CallLadder {
        // Checked when the agents file was read: a value that does not parse is not set.
        let duration = |text: &Option<String>| {
            text.as_deref()
                .and_then(|text| parse_timeout("", text).ok())
        };
        CallLadder {
            remind_after: duration(&spec.remind_after),
            escalate_after: duration(&spec.escalate_after),
            escalate_to: spec
                .escalate_to
                .iter()
                .flatten()
                .filter_map(|entry| ApproverEntry::parse(entry).ok())
                .collect(),
            max_extend: spec.max_extend.as_ref().and_then(|text| {
                parse_timeout("", text)
                    .ok()
                    .map(|duration| (duration, text.clone()))
            }),
        }
    }
}

impl CallApprovers {
    /// Today's rule, with nothing configured: the requester decides alone.
    pub fn requester_alone() -> CallApprovers {
        CallApprovers {
            entries: Vec::new(),
            requester_may_approve: true,
            quorum: 1,
            handover_may_widen: false,
            ladder: CallLadder::default(),
        }
    }

    fn from_spec(spec: &ApproversSpec) -> CallApprovers {
        let entries = spec
            .approvers
            .iter()
            .flatten()
            .filter_map(|entry| ApproverEntry::parse(entry).ok())
            .collect();
        CallApprovers {
            entries,
            requester_may_approve: spec.requester_may_approve.unwrap_or(true),
            quorum: spec.quorum.unwrap_or(1),
            handover_may_widen: spec.handover_may_widen.unwrap_or(false),
            ladder: CallLadder::from_spec(spec),
        }
    }

    /// Whether the people a hand-over names may approve: always where no approvers are set
    /// (the requester, who decides alone, passes her decision on), else only when the agents
    /// file says `handover_may_widen = true`. Otherwise a hand-over never widens who may
    /// approve: it lets the people it names read the batch, and an approver it names stays
    /// eligible by the entries that name them.
    pub fn handover_widens(&self) -> bool {
        self.entries.is_empty() || self.handover_may_widen
    }

    /// What approving takes, in words: `needs approval by group sre or user:alice; the
    /// requester may not approve; 2 approvals`.
    pub fn requirement(&self) -> String {
        let who = if self.entries.is_empty() {
            "the requester".to_owned()
        } else {
            let names: Vec<String> = self
                .entries
                .iter()
                .map(|entry| match entry {
                    ApproverEntry::Group(group) => format!("group {group}"),
                    ApproverEntry::User(user) => format!("user {user}"),
                })
                .collect();
            names.join(" or ")
        };
        let mut text = format!("needs approval by {who}");
        if !self.requester_may_approve {
            text.push_str("; the requester may not approve");
        }
        if self.quorum > 1 {
            text.push_str(&format!("; {} distinct approvals", self.quorum));
        }
        text
    }
}

impl ApproverLevels {
    /// The agent's levels: its own, each source's over it, each tool's over its source's.
    pub fn from_spec(spec: &AgentSpec) -> ApproverLevels {
        let agent = spec.approver_spec();
        let sources = spec
            .tools
            .iter()
            .map(|source| {
                let (name, prefix, own, tools) = source.approver_levels();
                let own = own.over(&agent);
                let tools = tools
                    .iter()
                    .map(|(tool, level)| (tool.clone(), level.over(&own)))
                    .collect();
                let source = SourceApprovers {
                    prefix: prefix.to_owned(),
                    own,
                    tools,
                };
                (name, source)
            })
            .collect();
        ApproverLevels { agent, sources }
    }

    /// The settings of a call of `tool` from source `server`, before any rule.
    fn for_tool(&self, tool: &str, server: Option<&str>) -> &ApproversSpec {
        let Some(source) = server.and_then(|server| self.sources.get(server)) else {
            return &self.agent;
        };
        let unprefixed = tool.strip_prefix(source.prefix.as_str()).unwrap_or(tool);
        source
            .tools
            .get(tool)
            .or_else(|| source.tools.get(unprefixed))
            .unwrap_or(&source.own)
    }
}

/// Every matcher of `when` passes on `args`.
fn all_match(when: &[(String, Matcher)], args: &Value) -> bool {
    when.iter()
        .all(|(name, matcher)| matcher.matches(args.get(name)))
}

/// `path glob "notes/**" and mode = 1`.
fn describe(when: &[(String, Matcher)]) -> String {
    when.iter()
        .map(|(name, matcher)| format!("{name} {}", matcher.describe()))
        .collect::<Vec<_>>()
        .join(" and ")
}

/// Compiles a matcher map; the error names the argument.
fn compile_all(
    specs: &BTreeMap<String, MatchSpec>,
) -> Result<Vec<(String, Matcher)>, (String, String)> {
    specs
        .iter()
        .map(|(name, spec)| {
            spec.compile()
                .map(|matcher| (name.clone(), matcher))
                .map_err(|message| (name.clone(), message))
        })
        .collect()
}

/// The argument names a tool's input schema declares, if it declares them.
fn schema_args(schema: &Value) -> Option<Vec<&str>> {
    let properties = schema.get("properties")?.as_object()?;
    Some(properties.keys().map(String::as_str).collect())
}

impl AgentApprovals {
    /// Compiles an agent's (checked) rules and timeout; `at` is its path (`agents[0]`).
    pub fn from_spec(at: &str, spec: &AgentSpec) -> Result<AgentApprovals, ConfigError> {
        let mut rules = Vec::new();
        for (index, rule) in spec.rules.iter().enumerate() {
            let when = match &rule.when {
                Some(specs) => compile_all(specs).map_err(|(name, message)| {
                    ConfigError::invalid(format!("{at}.rules[{index}].when.{name}"), message)
                })?,
                None => Vec::new(),
            };
            let what = if when.is_empty() {
                format!("{}, any arguments", rule.tool)
            } else {
                format!("{} when {}", rule.tool, describe(&when))
            };
            rules.push(Rule {
                label: format!("#{} ({what})", index + 1),
                tool: rule.tool.clone(),
                action: rule.action,
                when,
                approvers: rule.approver_spec(),
            });
        }
        let timeout = match &spec.approval_timeout {
            Some(text) => Some((
                parse_timeout(&format!("{at}.approval_timeout"), text)?,
                text.trim().to_owned(),
            )),
            None => None,
        };
        Ok(AgentApprovals {
            rules,
            timeout,
            on_timeout: spec.on_timeout,
            approvers: ApproverLevels::from_spec(spec),
        })
    }

    /// Checks the rules against the tools the agent really has: a rule's tool must be exposed
    /// (once every source has listed its tools), and `when` may name only arguments of the
    /// tool's input schema.
    pub fn check_tools(
        &self,
        at: &str,
        spec: &AgentSpec,
        toolbox: &Toolbox,
    ) -> Result<(), ConfigError> {
        let tools = toolbox.tools();
        // A permission-prompts source answers for any name, so a rule may name any tool.
        if toolbox.unavailable().is_empty() && !toolbox.answers_any_name() {
            let names: Vec<&str> = tools.iter().map(|tool| tool.spec.name.as_str()).collect();
            check_rules(at, &spec.rules, Some(&names))?;
        }
        for (index, rule) in spec.rules.iter().enumerate() {
            let Some(tool) = tools.iter().find(|tool| tool.spec.name == rule.tool) else {
                continue;
            };
            let Some(known) = schema_args(&tool.spec.input_schema) else {
                continue;
            };
            for name in rule.when.iter().flat_map(BTreeMap::keys) {
                if !known.contains(&name.as_str()) {
                    return Err(ConfigError::invalid(
                        format!("{at}.rules[{index}].when.{name}"),
                        format!(
                            "{} has no argument {name:?} (its arguments: {})",
                            rule.tool,
                            known.join(", ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The first rule that matches a call, if any.
    /// Whether some call of the agent may be routed to approvers besides its requester.
    pub fn routes_to_approvers(&self) -> bool {
        self.any_level(|spec| spec.approvers.is_some() || spec.escalate_to.is_some())
    }

    /// Whether some call of the agent has a reminder or an escalation (the ladder's sweep
    /// looks at its batches).
    pub fn has_ladder(&self) -> bool {
        self.any_level(|spec| spec.remind_after.is_some() || spec.escalate_after.is_some())
    }

    /// Whether some level of the agent's approver settings (agent, source, tool, rule) is `set`.
    fn any_level(&self, set: impl Fn(&ApproversSpec) -> bool) -> bool {
        let levels = &self.approvers;
        set(&levels.agent)
            || levels
                .sources
                .values()
                .any(|source| set(&source.own) || source.tools.values().any(&set))
            || self.rules.iter().any(|rule| set(&rule.approvers))
    }

    /// Who may approve a call of `tool` from source `server` with `args`: each setting from the
    /// most specific level that sets it (an `ask` rule that matches, the tool, its source, the
    /// agent).
    pub fn approvers_for(&self, tool: &str, server: Option<&str>, args: &Value) -> CallApprovers {
        let general = self.approvers.for_tool(tool, server);
        let spec = match self.rule_for(tool, args) {
            Some(rule) if rule.action == RuleAction::Ask => rule.approvers.over(general),
            _ => general.clone(),
        };
        CallApprovers::from_spec(&spec)
    }

    /// Who may approve a call a Cedar policy asked for: the policy's `@approvers`, `@quorum`
    /// and `@requester_may_approve` over the agents file's settings for the tool (its source, the agent), each
    /// setting from the most specific level that sets it, as an `ask` rule's are.
    pub fn approvers_for_policy(
        &self,
        tool: &str,
        server: Option<&str>,
        why: &signoff_protocol::hitl::Why,
    ) -> CallApprovers {
        let policy = ApproversSpec {
            approvers: (!why.approvers.is_empty()).then(|| why.approvers.clone()),
            quorum: why.quorum,
            requester_may_approve: why.requester_may_approve,
            ..ApproversSpec::default()
        };
        CallApprovers::from_spec(&policy.over(self.approvers.for_tool(tool, server)))
    }

    pub fn rule_for(&self, tool: &str, args: &Value) -> Option<&Rule> {
        self.rules
            .iter()
            .find(|rule| rule.tool == tool && all_match(&rule.when, args))
    }
}

/// A person's policy, compiled.
#[derive(Debug, Clone)]
pub struct Grant {
    pub row: GrantRow,
    args: Vec<(String, Matcher)>,
}

impl Grant {
    /// Compiles a stored or new policy; the error names the argument.
    pub fn compile(row: GrantRow) -> Result<Grant, String> {
        let args = match &row.args {
            Some(value) => {
                let specs: BTreeMap<String, MatchSpec> =
                    serde_json::from_value(value.clone()).map_err(|err| format!("args: {err}"))?;
                compile_all(&specs).map_err(|(name, message)| format!("args.{name}: {message}"))?
            }
            None => Vec::new(),
        };
        Ok(Grant { row, args })
    }

    /// Whether it approves a call of `tool` with `args` (its scope was checked by the query).
    /// A question never: its answers are the person's to give (such a policy is refused when
    /// created; one stored before that was refused still approves nothing).
    pub fn approves(&self, tool: &str, args: &Value) -> bool {
        self.row.tool == tool && tool != ASK_USER && all_match(&self.args, args)
    }

    /// "write_file under notes/, in this chat".
    pub fn summary(&self) -> String {
        self.summary_with_uses(self.row.uses_left)
    }

    /// [`Grant::summary`] with `uses_left` calls left of a counted grant (after a call
    /// it allowed has spent one).
    pub fn summary_with_uses(&self, uses_left: Option<i64>) -> String {
        let what = match self.args.as_slice() {
            [] => format!("{} with any arguments", self.row.tool),
            [(name, Matcher::Glob(glob, _))] if glob.ends_with("/**") => format!(
                "{} with {name} under {}",
                self.row.tool,
                glob.trim_end_matches('*')
            ),
            args => format!("{} when {}", self.row.tool, describe(args)),
        };
        let mut summary = match self.row.scope {
            GrantScope::Chat => format!("{what}, in this chat"),
            GrantScope::Agent => format!("{what}, in every chat with {}", self.row.agent),
        };
        // What is left of a time-boxed grant.
        match uses_left {
            Some(0) => summary.push_str(", no more calls"),
            Some(1) => summary.push_str(", 1 more call"),
            Some(uses) => summary.push_str(&format!(", {uses} more calls")),
            None => {}
        }
        if let Some(until) = &self.row.expires_at {
            summary.push_str(&format!(", until {until}"));
        }
        summary
    }

    /// The policy as the REST API shows it.
    pub fn to_rest(&self) -> Policy {
        Policy {
            id: self.row.id.clone(),
            agent: self.row.agent.clone(),
            tool: self.row.tool.clone(),
            scope: match self.row.scope {
                GrantScope::Chat => WireScope::Chat,
                GrantScope::Agent => WireScope::Agent,
            },
            context_id: self.row.context_id.clone(),
            args: self.row.args.as_ref().and_then(|value| {
                serde_json::from_value::<BTreeMap<String, ArgMatch>>(value.clone()).ok()
            }),
            created_by: self.row.created_by.clone(),
            created_at: self.row.created_at.clone(),
            summary: self.summary(),
            expires_at: self.row.expires_at.clone(),
            uses_left: self.row.uses_left,
        }
    }
}

/// A stored policy compiled, or why it no longer compiles (one stored before a limit was
/// tightened): such a policy approves nothing, but its owner still sees it and can revoke it.
#[derive(Debug, Clone)]
pub enum CompiledGrant {
    Ready(Arc<Grant>),
    Broken { row: Box<GrantRow>, error: String },
}

impl CompiledGrant {
    fn new(row: GrantRow) -> CompiledGrant {
        match Grant::compile(row.clone()) {
            Ok(policy) => CompiledGrant::Ready(Arc::new(policy)),
            Err(error) => CompiledGrant::Broken {
                row: Box::new(row),
                error,
            },
        }
    }

    pub fn row(&self) -> &GrantRow {
        match self {
            CompiledGrant::Ready(policy) => &policy.row,
            CompiledGrant::Broken { row, .. } => row,
        }
    }

    /// The policy as the REST API shows it; a broken one says why it approves nothing.
    pub fn to_rest(&self) -> Policy {
        match self {
            CompiledGrant::Ready(policy) => policy.to_rest(),
            CompiledGrant::Broken { row, error } => {
                let mut policy = Grant {
                    row: GrantRow::clone(row),
                    args: Vec::new(),
                }
                .to_rest();
                policy.summary = format!("{}: approves nothing ({error})", row.tool);
                policy
            }
        }
    }
}

/// The people's policies compiled, by id. A stored policy never changes (only its revoke), so
/// each is compiled once per server rather than on every turn, and a cached one can never
/// approve what the store no longer holds in force: it is used only for a row the store has
/// just returned, and only if that row is the one it was compiled from.
#[derive(Debug, Default)]
pub struct GrantCache {
    compiled: Mutex<HashMap<String, CompiledGrant>>,
}

impl GrantCache {
    /// Past this many entries the cache starts over: entries of policies revoked or deleted on
    /// another server are never looked up again, and this bounds what they hold.
    const CAPACITY: usize = 4096;

    fn lock(&self) -> MutexGuard<'_, HashMap<String, CompiledGrant>> {
        self.compiled.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The compiled form of each row, in order; those not cached yet are compiled on the
    /// blocking pool (each within the matchers' size limits, but a turn may meet many).
    pub async fn compile(&self, rows: Vec<GrantRow>) -> Result<Vec<CompiledGrant>, String> {
        let mut out: Vec<Option<CompiledGrant>> = Vec::with_capacity(rows.len());
        let mut missing = Vec::new();
        {
            let cached = self.lock();
            for (index, row) in rows.into_iter().enumerate() {
                match cached.get(&row.id).filter(|entry| *entry.row() == row) {
                    Some(entry) => out.push(Some(entry.clone())),
                    None => {
                        out.push(None);
                        missing.push((index, row));
                    }
                }
            }
        }
        if missing.is_empty() {
            return Ok(out.into_iter().flatten().collect());
        }
        let compiled = tokio::task::spawn_blocking(move || {
            missing
                .into_iter()
                .map(|(index, row)| (index, CompiledGrant::new(row)))
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|err| format!("compiling policies: {err}"))?;
        for (index, entry) in compiled {
            self.remember(entry.clone());
            if let Some(slot) = out.get_mut(index) {
                *slot = Some(entry);
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    /// Caches a policy compiled elsewhere (a new one, checked as it was created).
    pub fn remember(&self, entry: CompiledGrant) {
        let mut cached = self.lock();
        if cached.len() >= Self::CAPACITY {
            cached.clear();
        }
        cached.insert(entry.row().id.clone(), entry);
    }

    /// Drops a revoked policy.
    pub fn forget(&self, id: &str) {
        self.lock().remove(id);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::config::AgentsFile;

    #[test]
    fn the_most_specific_approver_settings_win_rule_then_tool_then_source_then_agent() {
        let file = AgentsFile::parse(
            "[[agents]]\nname = \"a\"\napprovers = [\"group:ops\"]\nquorum = 2\n\
             [[agents.tools]]\nkind = \"builtin_files\"\n\
             require_approval = [\"write_file\", \"delete_file\"]\n\
             approvers = [\"group:sre\"]\n\
             [agents.tools.tool_approvers.delete_file]\napprovers = [\"user:alice\"]\n\
             requester_may_approve = false\n\
             [[agents.rules]]\ntool = \"write_file\"\naction = \"ask\"\n\
             when = { path = { glob = \"prod/**\" } }\nquorum = 3\n",
        )
        .unwrap();
        let approvals = AgentApprovals::from_spec("agents[0]", &file.agents[0]).unwrap();
        let of = |tool: &str, server: Option<&str>, path: &str| {
            approvals.approvers_for(tool, server, &json!({"path": path}))
        };
        let labels = |call: &CallApprovers| {
            call.entries
                .iter()
                .map(ApproverEntry::label)
                .collect::<Vec<_>>()
        };
        // The source's approvers over the agent's; the agent's quorum.
        let write = of("write_file", Some("files"), "notes/a");
        assert_eq!(
            (labels(&write), write.quorum),
            (vec!["group:sre".to_owned()], 2)
        );
        assert!(write.requester_may_approve);
        // The rule's quorum over the source's approvers.
        let prod = of("write_file", Some("files"), "prod/a");
        assert_eq!(
            (labels(&prod), prod.quorum),
            (vec!["group:sre".to_owned()], 3)
        );
        // The tool's own settings.
        let delete = of("delete_file", Some("files"), "a");
        assert_eq!(labels(&delete), ["user:alice"]);
        assert!(!delete.requester_may_approve);
        // A call of no known source: the agent's.
        assert_eq!(labels(&of("other", None, "a")), ["group:ops"]);
        assert_eq!(
            delete.requirement(),
            "needs approval by user alice; the requester may not approve; 2 distinct approvals"
        );
    }

    fn approvals(rules: &str) -> AgentApprovals {
        let file = AgentsFile::parse(&format!(
            "[[agents]]\nname = \"a\"\napproval_timeout = \"90s\"\n\
             [[agents.tools]]\nkind = \"builtin_files\"\n{rules}"
        ))
        .unwrap();
        AgentApprovals::from_spec("agents[0]", &file.agents[0]).unwrap()
    }

    #[test]
    fn the_first_matching_rule_decides() {
        let approvals = approvals(
            r#"
            [[agents.rules]]
            tool = "write_file"
            action = "deny"
            when = { path = { glob = ".git/**" } }
            [[agents.rules]]
            tool = "write_file"
            action = "allow"
            when = { path = { glob = "notes/**" } }
            [[agents.rules]]
            tool = "write_file"
            action = "ask"
            [[agents.rules]]
            tool = "write_file"
            action = "allow"
            "#,
        );
        let action = |path: &str| {
            approvals
                .rule_for("write_file", &json!({"path": path, "content": "x"}))
                .map(|rule| (rule.action, rule.label.clone()))
        };
        assert_eq!(
            action(".git/config"),
            Some((
                RuleAction::Deny,
                "#1 (write_file when path glob \".git/**\")".into()
            ))
        );
        assert_eq!(action("notes/a.txt").unwrap().0, RuleAction::Allow);
        assert_eq!(
            action("other.txt"),
            Some((RuleAction::Ask, "#3 (write_file, any arguments)".into())),
            "the later catch-all allow never gets a say"
        );
        assert!(approvals
            .rule_for("read_file", &json!({"path": "x"}))
            .is_none());
        assert_eq!(
            approvals.timeout.as_ref().unwrap().0,
            Duration::from_secs(90)
        );
    }

    /// A newline in a path does not slip past a deny glob to the catch-all allow after it.
    #[test]
    fn a_newline_does_not_slip_past_a_deny_glob() {
        let approvals = approvals(
            r#"
            [[agents.rules]]
            tool = "write_file"
            action = "deny"
            when = { path = { glob = ".git/**" } }
            [[agents.rules]]
            tool = "write_file"
            action = "allow"
            "#,
        );
        for path in [".git/hooks/x\npre-commit", ".git/a\rb", "./.git/\n"] {
            let rule = approvals
                .rule_for("write_file", &json!({"path": path, "content": "x"}))
                .unwrap();
            assert_eq!(rule.action, RuleAction::Deny, "{path:?}");
        }
    }

    fn policy_row(id: &str, tool: &str, args: Option<Value>) -> GrantRow {
        GrantRow {
            id: id.into(),
            user_id: "u".into(),
            agent: "default/demo".into(),
            tool: tool.into(),
            scope: GrantScope::Agent,
            context_id: None,
            args,
            created_by: "u".into(),
            created_at: "t".into(),
            revoked_at: None,
            expires_at: None,
            uses_left: None,
        }
    }

    #[test]
    fn a_policy_never_approves_a_question() {
        let policy = Grant::compile(policy_row("q", ASK_USER, None)).unwrap();
        assert!(!policy.approves(ASK_USER, &json!({"questions": [{"question": "Why?"}]})));
    }

    #[tokio::test]
    async fn the_cache_compiles_each_policy_once_and_only_for_its_row() {
        let cache = GrantCache::default();
        let notes = policy_row(
            "p",
            "write_file",
            Some(json!({"path": {"glob": "notes/**"}})),
        );
        let broken = policy_row("b", "write_file", Some(json!({"path": {"regex": "("}})));
        let first = cache
            .compile(vec![notes.clone(), broken.clone()])
            .await
            .unwrap();
        let second = cache.compile(vec![notes.clone(), broken]).await.unwrap();
        let ready = |entry: &CompiledGrant| match entry {
            CompiledGrant::Ready(policy) => policy.clone(),
            CompiledGrant::Broken { error, .. } => panic!("{error}"),
        };
        assert!(
            Arc::ptr_eq(&ready(&first[0]), &ready(&second[0])),
            "compiled once"
        );
        match &second[1] {
            CompiledGrant::Broken { error, .. } => assert!(error.contains("does not compile")),
            CompiledGrant::Ready(_) => panic!("a broken policy compiled"),
        }
        assert!(second[1]
            .to_rest()
            .summary
            .starts_with("write_file: approves nothing ("));
        // Another row under the same id is compiled from that row, never served the old one.
        let changed = policy_row(
            "p",
            "write_file",
            Some(json!({"path": {"glob": "docs/**"}})),
        );
        let third = cache.compile(vec![changed]).await.unwrap();
        let policy = ready(&third[0]);
        assert!(policy.approves("write_file", &json!({"path": "docs/a"})));
        assert!(!policy.approves("write_file", &json!({"path": "notes/a"})));
        // Only the rows asked for come back: a revoked policy the store no longer returns
        // cannot approve from the cache.
        assert!(cache.compile(Vec::new()).await.unwrap().is_empty());
        cache.forget("p");
        let again = cache.compile(vec![notes]).await.unwrap();
        assert!(!Arc::ptr_eq(&ready(&again[0]), &policy));
    }

    #[test]
    fn a_policy_reads_as_what_it_allows_and_where() {
        let row = |scope, args: Option<Value>| GrantRow {
            id: "p".into(),
            user_id: "u".into(),
            agent: "default/demo".into(),
            tool: "write_file".into(),
            scope,
            context_id: None,
            args,
            created_by: "u".into(),
            created_at: "t".into(),
            revoked_at: None,
            expires_at: None,
            uses_left: None,
        };
        let folder = Grant::compile(row(
            GrantScope::Chat,
            Some(json!({"path": {"glob": "notes/**"}})),
        ))
        .unwrap();
        assert_eq!(
            folder.summary(),
            "write_file with path under notes/, in this chat"
        );
        assert!(folder.approves("write_file", &json!({"path": "notes/a"})));
        assert!(!folder.approves("write_file", &json!({"path": "a"})));
        assert!(!folder.approves("delete_file", &json!({"path": "notes/a"})));
        let any = Grant::compile(row(GrantScope::Agent, None)).unwrap();
        assert_eq!(
            any.summary(),
            "write_file with any arguments, in every chat with default/demo"
        );
        let exact = Grant::compile(row(
            GrantScope::Chat,
            Some(json!({"path": {"equals": "a.txt"}})),
        ))
        .unwrap();
        assert!(exact.approves("write_file", &json!({"path": "a.txt", "content": "1"})));
        assert!(!exact.approves("write_file", &json!({"path": "b.txt"})));
        let bad = Grant::compile(row(GrantScope::Chat, Some(json!({"path": {"glob": "["}}))));
        assert_eq!(
            bad.unwrap_err(),
            "args.path: glob \"[\" has a [ without its ]"
        );
    }
}
