//! `signoff policy check`, `test` and `replay`: a policy folder validated against a Cedar
//! schema made from the agents file, example calls run through the gate's one decision function
//! with their expected outcomes, and the audited calls replayed against it
//! (docs/policies.md, Checking and testing).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cedar_policy::{Schema, ValidationMode, Validator};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{json, Value};
use signoff_protocol::hitl::GateOutcome;

use crate::agent::cedar::{CallCounts, CallFacts, CedarPolicies, ToolFacts, NAMESPACE};
use crate::agent::decision::decide;
use crate::agent::{self, Agent};

/// `signoff policy …`.
#[derive(Debug, clap::Parser)]
#[command(
    name = "signoff policy",
    about = "Check, test and replay Cedar policies"
)]
pub struct PolicyCli {
    #[command(subcommand)]
    pub command: PolicyCommand,
}

/// What the agents and policies are, for every subcommand.
#[derive(Debug, Clone, clap::Args)]
pub struct Sources {
    /// The agents file (TOML); without it, the built-in demo agent.
    #[arg(long = "agents", env = "SIGNOFF_AGENTS")]
    pub agents_file: Option<PathBuf>,
    /// The folder of `*.cedar` policies.
    #[arg(long = "policies", env = "SIGNOFF_POLICIES")]
    pub policies_dir: PathBuf,
    /// The deployment's environment label, `context.environment`.
    #[arg(long, env = "SIGNOFF_ENVIRONMENT", default_value = "")]
    pub environment: String,
}

#[derive(Debug, clap::Subcommand)]
pub enum PolicyCommand {
    /// Validates the policies against the schema of the agents file: unknown tools, attributes
    /// and (with --groups) groups are errors.
    Check {
        #[command(flatten)]
        sources: Sources,
        /// The groups people may be in (`sre,oncall`); a policy naming another is an error.
        #[arg(long, value_delimiter = ',')]
        groups: Option<Vec<String>>,
    },
    /// Runs the example calls of CASES (TOML) and compares each outcome with its expectation;
    /// exits non-zero on any difference.
    Test {
        #[command(flatten)]
        sources: Sources,
        /// The cases file.
        cases: PathBuf,
    },
    /// Evaluates the policies (a candidate set) against the calls the store audited since
    /// SINCE ago, and prints how many outcomes would change, by tool and direction, with
    /// examples.
    Replay {
        #[command(flatten)]
        sources: Sources,
        /// How far back (`7d`, `24h`).
        #[arg(long, value_parser = humantime::parse_duration)]
        since: std::time::Duration,
        #[command(flatten)]
        store: StoreArgs,
        /// How many example calls to show for each change.
        #[arg(long, default_value_t = 3)]
        examples: usize,
    },
}

/// Where the audited calls are: the server's own settings.
#[derive(Debug, Clone, clap::Args)]
pub struct StoreArgs {
    /// The server's data folder (its SQLite database, signoff.db).
    #[arg(long, env = "SIGNOFF_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// The server's PostgreSQL URL, instead of the data folder's SQLite.
    #[arg(long = "database", env = "SIGNOFF_DATABASE_URL")]
    pub database_url: Option<String>,
}

/// Why a subcommand failed: what a person fixes.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CliError(pub String);

/// Runs a subcommand, writing its report to `out`; `Ok(false)` when a check or a case failed.
pub async fn run(cli: PolicyCli, out: &mut impl Write) -> Result<bool, CliError> {
    match cli.command {
        PolicyCommand::Check { sources, groups } => {
            let (agents, policies) = load(&sources).await?;
            let problems = check(&agents, &policies, groups.as_deref())?;
            for problem in &problems {
                let _ = writeln!(out, "error: {problem}");
            }
            let _ = writeln!(
                out,
                "{} policies checked: {}",
                policies.len(),
                if problems.is_empty() {
                    "ok".to_owned()
                } else {
                    format!("{} errors", problems.len())
                }
            );
            Ok(problems.is_empty())
        }
        PolicyCommand::Test { sources, cases } => {
            let (agents, policies) = load(&sources).await?;
            let cases = read_cases(&cases)?;
            let mut failed = 0;
            for case in &cases {
                match run_case(&agents, &policies, case) {
                    Ok(()) => {
                        let _ = writeln!(out, "ok: {}", case.name);
                    }
                    Err(why) => {
                        failed += 1;
                        let _ = writeln!(out, "FAILED: {}: {why}", case.name);
                    }
                }
            }
            let _ = writeln!(out, "{} cases, {failed} failed", cases.len());
            Ok(failed == 0)
        }
        PolicyCommand::Replay {
            sources,
            since,
            store,
            examples,
        } => {
            let (agents, policies) = load(&sources).await?;
            let since = chrono::Duration::from_std(since)
                .ok()
                .and_then(|ago| Utc::now().checked_sub_signed(ago))
                .ok_or_else(|| CliError("--since: too far back".into()))?
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            let store = open_store(&store).await?;
            let calls = store.replay_calls(&since).await;
            store.close().await;
            let calls = calls.map_err(|err| CliError(format!("the store: {err}")))?;
            let replayed = crate::policy_replay::replay(&agents, &policies, &calls, examples);
            let candidate = sources.policies_dir.display().to_string();
            let _ = write!(out, "{}", replayed.report(&since, &candidate));
            Ok(true)
        }
    }
}

/// The server's store, which must exist already: a replay reads an audit, it never starts one.
pub(crate) async fn open_store(args: &StoreArgs) -> Result<crate::store::Store, CliError> {
    let database = crate::store::Database::from_url(args.database_url.as_deref(), &args.data_dir)
        .map_err(|err| CliError(format!("--database: {err}")))?;
    if let crate::store::Database::Sqlite(dir) = &database {
        let file = dir.join("signoff.db");
        if !file.is_file() {
            return Err(CliError(format!(
                "{}: no database (give the server's --data-dir, or --database for PostgreSQL)",
                file.display()
            )));
        }
    }
    crate::store::Store::open(&database)
        .await
        .map_err(|err| CliError(format!("the store: {err}")))
}

async fn load(sources: &Sources) -> Result<(Vec<Arc<Agent>>, CedarPolicies), CliError> {
    let file = match &sources.agents_file {
        Some(path) => agent::AgentsFile::load(path),
        None => Ok(agent::AgentsFile::demo()),
    }
    .map_err(|err| CliError(format!("agents file: {err}")))?;
    // The file tools need a sandbox folder to exist; nothing is written to it.
    let sandbox = std::env::temp_dir().join(format!("signoff-policy-{}", std::process::id()));
    let agents = agent::build_agents(&file, &sandbox)
        .await
        .map_err(|err| CliError(format!("agents file: {err}")))?;
    let _ = std::fs::remove_dir_all(&sandbox);
    for agent in &agents {
        if let Some((source, why)) = agent.tools.unavailable().first() {
            return Err(CliError(format!(
                "agent {}: tool source {source} is unavailable ({why}), so its tools cannot be \
                 checked",
                agent.key()
            )));
        }
    }
    let policies = CedarPolicies::load_dir(&sources.policies_dir, &sources.environment)
        .map_err(|err| CliError(format!("policies: {err}")))?;
    Ok((agents, policies))
}

/// A Cedar type of a JSON Schema property, if Cedar has one.
fn cedar_type(property: &Value) -> Option<Value> {
    match property.get("type")?.as_str()? {
        "string" => Some(json!({"type": "String"})),
        "integer" => Some(json!({"type": "Long"})),
        "boolean" => Some(json!({"type": "Boolean"})),
        "array" => Some(json!({"type": "Set", "element": cedar_type(property.get("items")?)?})),
        _ => None,
    }
}

/// The Cedar schema (JSON form) of the agents' tools: `context.args` holds every argument any
/// tool declares, each optional (a policy tests `has` first); an argument two tools type
/// differently, or whose type Cedar lacks, is left out.
pub fn schema_json(agents: &[Arc<Agent>]) -> Value {
    let mut args: BTreeMap<String, Option<Value>> = BTreeMap::new();
    for agent in agents {
        for tool in agent.tools.every_tool() {
            let Some(properties) = tool
                .spec
                .input_schema
                .get("properties")
                .and_then(Value::as_object)
            else {
                continue;
            };
            for (name, property) in properties {
                let typed = cedar_type(property);
                args.entry(name.clone())
                    .and_modify(|known| {
                        if *known != typed {
                            *known = None;
                        }
                    })
                    .or_insert(typed);
            }
        }
    }
    let args: serde_json::Map<String, Value> = args
        .into_iter()
        .filter_map(|(name, typed)| {
            let mut typed = typed?;
            typed["required"] = json!(false);
            Some((name, typed))
        })
        .collect();
    let boolean = json!({"type": "Boolean"});
    let long = json!({"type": "Long"});
    // The sums of numeric arguments: each whole-number argument, optional as in `args`.
    let sums: serde_json::Map<String, Value> = args
        .iter()
        .filter(|(_, typed)| typed["type"] == "Long")
        .map(|(name, _)| (name.clone(), json!({"type": "Long", "required": false})))
        .collect();
    let sums = json!({"type": "Record", "attributes": sums});
    json!({
        NAMESPACE: {
            "entityTypes": {
                "User": {"memberOfTypes": ["Group"]},
                "Group": {},
                "Tool": {"shape": {"type": "Record", "attributes": {
                    "name": {"type": "String"},
                    "source": {"type": "String"},
                    "readOnlyHint": boolean,
                    "destructiveHint": boolean,
                    "idempotentHint": boolean,
                    "openWorldHint": boolean,
                }}}
            },
            "actions": {
                "call": {"appliesTo": {
                    "principalTypes": ["User"],
                    "resourceTypes": ["Tool"],
                    "context": {"type": "Record", "attributes": {
                        "args": {"type": "Record", "attributes": args},
                        "agent": {"type": "String"},
                        "environment": {"type": "String"},
                        "subagent": boolean,
                        "time": {"type": "Record", "attributes": {
                            "unix": long, "hour": long, "minute": long, "weekday": long,
                        }},
                        // Present for every call of a task when a policy reads it: required,
                        // so a policy reads it without `has`.
                        "counts": {"type": "Record", "attributes": {
                            "tool_allowed_in_task": long,
                            "tool_allowed_by_user_last_hour": long,
                            "approved_in_task": {"type": "Set", "element": {"type": "String"}},
                            "sum_in_task": sums,
                            "sum_by_user_last_hour": sums,
                            "sum_by_user_last_day": sums,
                        }},
                    }},
                }}
            }
        }
    })
}

/// Every entity literal `{"type": T, "id": I}` a policy's JSON form names.
fn entity_literals(value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(fields) => {
            if let (Some(Value::String(kind)), Some(Value::String(id))) =
                (fields.get("type"), fields.get("id"))
            {
                out.push((kind.clone(), id.clone()));
            }
            fields
                .values()
                .for_each(|field| entity_literals(field, out));
        }
        Value::Array(items) => items.iter().for_each(|item| entity_literals(item, out)),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

/// The problems of a policy set against the agents: the validator's, then unknown tools and
/// groups (Cedar's validator checks types, not which tools and groups exist).
pub fn check(
    agents: &[Arc<Agent>],
    policies: &CedarPolicies,
    groups: Option<&[String]>,
) -> Result<Vec<String>, CliError> {
    let schema = Schema::from_json_value(schema_json(agents))
        .map_err(|err| CliError(format!("the schema made from the agents file: {err}")))?;
    let mut problems: Vec<String> = Validator::new(schema)
        .validate(policies.policy_set(), ValidationMode::Strict)
        .validation_errors()
        .map(|err| format!("policy {}: {err}", err.policy_id()))
        .collect();
    let tools: BTreeSet<String> = agents
        .iter()
        .flat_map(|agent| agent.tools.every_tool())
        .map(|tool| tool.spec.name)
        .collect();
    let tool_type = format!("{NAMESPACE}::Tool");
    let group_type = format!("{NAMESPACE}::Group");
    for policy in policies.policy_set().policies() {
        let id = policy.id();
        let mut literals = Vec::new();
        if let Ok(json) = policy.to_json() {
            entity_literals(&json, &mut literals);
        }
        for (kind, name) in literals {
            if kind == tool_type && !tools.contains(&name) {
                problems.push(format!(
                    "policy {id}: no agent has a tool {name:?} (the tools: {})",
                    tools.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
            if kind == group_type {
                if let Some(known) = groups.filter(|known| !known.contains(&name)) {
                    problems.push(format!(
                        "policy {id}: unknown group {name:?} (the groups: {})",
                        known.join(", ")
                    ));
                }
            }
        }
        let approvers = policy.annotation("approvers").unwrap_or_default();
        for approver in approvers.split(',').map(str::trim) {
            if let (Some(name), Some(known)) = (approver.strip_prefix("group:"), groups) {
                if !known.iter().any(|group| group == name) {
                    problems.push(format!(
                        "policy {id}: @approvers names unknown group {name:?} (the groups: {})",
                        known.join(", ")
                    ));
                }
            }
        }
    }
    Ok(problems)
}

/// One example call and what it should come to.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    #[serde(default = "default_user")]
    pub user: String,
    #[serde(default)]
    pub groups: Vec<String>,
    /// `namespace/name`; without it, the first agent that has the tool.
    #[serde(default)]
    pub agent: Option<String>,
    pub tool: String,
    #[serde(default = "empty_args")]
    pub args: Value,
    /// RFC 3339; without it, now.
    #[serde(default)]
    pub time: Option<String>,
    #[serde(default)]
    pub subagent: bool,
    /// What the task and the person have done before (`context.counts`); without it, nothing.
    #[serde(default)]
    pub counts: Option<CallCounts>,
    /// `allow`, `ask` or `deny`.
    pub expect: GateOutcome,
    /// For an ask: the approvers it must name, all of them.
    #[serde(default)]
    pub approvers: Option<Vec<String>>,
    #[serde(default)]
    pub quorum: Option<u32>,
    /// The rule, policy or setting that must decide (its id).
    #[serde(default)]
    pub by: Option<String>,
}

fn default_user() -> String {
    "someone".into()
}

fn empty_args() -> Value {
    json!({})
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CasesFile {
    case: Vec<Case>,
}

fn read_cases(path: &Path) -> Result<Vec<Case>, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| CliError(format!("{}: {err}", path.display())))?;
    let file: CasesFile =
        toml::from_str(&text).map_err(|err| CliError(format!("{}: {err}", path.display())))?;
    Ok(file.case)
}

/// Runs one case through the gate's decision function (without grants: they are a person's,
/// not the deployment's); the difference, if any.
pub fn run_case(
    agents: &[Arc<Agent>],
    policies: &CedarPolicies,
    case: &Case,
) -> Result<(), String> {
    let agent = agents
        .iter()
        .find(|agent| match &case.agent {
            Some(key) => agent.key() == *key,
            None => agent.tools.defined(&case.tool).is_some(),
        })
        .ok_or_else(|| format!("no agent {:?} with a tool {:?}", case.agent, case.tool))?;
    let tool = agent
        .tools
        .defined(&case.tool)
        .ok_or_else(|| format!("{} has no tool {:?}", agent.key(), case.tool))?;
    let now = match &case.time {
        Some(text) => DateTime::parse_from_rfc3339(text)
            .map_err(|err| format!("time {text:?}: {err}"))?
            .with_timezone(&Utc),
        None => Utc::now(),
    };
    let facts = ToolFacts {
        name: tool.spec.name.clone(),
        source: tool.spec.source.clone(),
        hints: tool.spec.hints,
    };
    let key = agent.key();
    // A case without counts is a call made before anything else in its task.
    let counts = case.counts.clone().unwrap_or_default();
    let cedar = policies.evaluate(&CallFacts {
        user: &case.user,
        groups: &case.groups,
        tool: &facts,
        args: &case.args,
        agent: &key,
        subagent: case.subagent,
        counts: policies.reads_counts().then_some(&counts),
        now,
    });
    let rule = agent.approvals.rule_for(&case.tool, &case.args);
    let why = decide(&cedar, rule, tool.requires_approval, None).why;
    let mut differences = Vec::new();
    if why.outcome != case.expect {
        differences.push(format!(
            "expected {:?}, got {:?} ({})",
            case.expect, why.outcome, why.summary
        ));
    }
    if let Some(approvers) = &case.approvers {
        if *approvers != why.approvers {
            differences.push(format!(
                "expected approvers {approvers:?}, got {:?}",
                why.approvers
            ));
        }
    }
    if case.quorum.is_some() && case.quorum != why.quorum {
        differences.push(format!(
            "expected quorum {:?}, got {:?}",
            case.quorum, why.quorum
        ));
    }
    if let Some(by) = &case.by {
        if *by != why.id {
            differences.push(format!("expected {by} to decide, got {}", why.id));
        }
    }
    if let Some(reason) = why.reason.filter(|_| !differences.is_empty()) {
        differences.push(format!("reason: {reason}"));
    }
    if differences.is_empty() {
        Ok(())
    } else {
        Err(differences.join("; "))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    async fn demo() -> (Vec<Arc<Agent>>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let agents = agent::build_agents(&agent::AgentsFile::demo(), dir.path())
            .await
            .unwrap();
        (agents, dir)
    }

    fn set(text: &str) -> CedarPolicies {
        CedarPolicies::parse(&[("t.cedar".into(), text.into())], "prod").unwrap()
    }

    #[tokio::test]
    async fn check_finds_unknown_tools_attributes_and_groups() {
        let (agents, _dir) = demo().await;
        let groups = ["sre".to_owned()];
        let problems = |text: &str| check(&agents, &set(text), Some(&groups)).unwrap();
        assert_eq!(
            problems(
                r#"permit (principal in Signoff::Group::"sre", action, resource == Signoff::Tool::"write_file")
                   when { context.args has path && context.args.path like "notes/*" };"#
            ),
            Vec::<String>::new()
        );
        let typo =
            problems(r#"permit (principal, action, resource == Signoff::Tool::"wirte_file");"#);
        assert!(
            typo[0].contains("no agent has a tool \"wirte_file\""),
            "{typo:?}"
        );
        let attribute =
            problems(r#"permit (principal, action, resource) when { context.args.pth == "x" };"#);
        assert!(
            attribute[0].contains("pth"),
            "an unknown argument: {attribute:?}"
        );
        let unguarded =
            problems(r#"permit (principal, action, resource) when { context.args.path == "x" };"#);
        assert!(
            !unguarded.is_empty(),
            "an optional argument read without `has`"
        );
        let group = problems(r#"permit (principal in Signoff::Group::"sres", action, resource);"#);
        assert!(group[0].contains("unknown group \"sres\""), "{group:?}");
        let approvers = problems(
            r#"@ask("x") @approvers("group:nobody") permit (principal, action, resource);"#,
        );
        assert!(
            approvers[0].contains("@approvers names unknown group"),
            "{approvers:?}"
        );
    }

    #[tokio::test]
    async fn a_case_that_differs_says_how() {
        let (agents, _dir) = demo().await;
        let policies = set(
            r#"@id("sre-deletes") @ask("two") @approvers("group:sre") @quorum("2")
               permit (principal, action, resource == Signoff::Tool::"delete_file");"#,
        );
        let case = |text: &str| -> Case { toml::from_str(text).unwrap() };
        let good = case(
            r#"name = "d"
               tool = "delete_file"
               args = { path = "a" }
               expect = "ask"
               approvers = ["group:sre"]
               quorum = 2
               by = "sre-deletes""#,
        );
        assert_eq!(run_case(&agents, &policies, &good), Ok(()));
        let wrong = case(
            r#"name = "d"
               tool = "delete_file"
               args = { path = "a" }
               expect = "allow"
               approvers = ["group:ops"]"#,
        );
        let why = run_case(&agents, &policies, &wrong).unwrap_err();
        assert!(why.contains("expected Allow, got Ask"), "{why}");
        assert!(why.contains("expected approvers [\"group:ops\"]"), "{why}");
        // Without the policy, the demo's require_approval asks with no approvers.
        let plain = run_case(
            &agents,
            &set("forbid (principal, action, resource == Signoff::Tool::\"write_file\");"),
            &good,
        );
        assert!(plain.unwrap_err().contains("expected approvers"));
    }
}
