//! Policies as code: the deployment's Cedar policies (`--policies DIR`, `*.cedar` files), read
//! once at start and evaluated for every tool call before it runs (docs/policies.md has the
//! entity model, the annotations and the order in which they meet the argument rules and grants).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::str::FromStr;

use cedar_policy::{
    Authorizer, Context, Decision, Effect, Entities, Entity, EntityId, EntityTypeName, EntityUid,
    Policy, PolicyId, PolicySet, Request, ResourceConstraint, RestrictedExpression,
};
use chrono::{DateTime, Datelike, Timelike, Utc};
use serde_json::Value;

use super::config::MAX_QUORUM;
use super::narrow::{self, Narrowing};
pub use crate::store::CallCounts;

mod nesting;

/// The namespace of every entity type and action: `Signoff::User`, `Signoff::Action::"call"`.
pub const NAMESPACE: &str = "Signoff";

/// Why a policy directory or file cannot be used; the text names the file and the policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CedarError(pub String);

/// How risky a policy says an asked call is, shown on the card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Risk {
    Low,
    Medium,
    High,
}

impl Risk {
    fn parse(text: &str) -> Option<Risk> {
        match text.trim() {
            "low" => Some(Risk::Low),
            "medium" => Some(Risk::Medium),
            "high" => Some(Risk::High),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        }
    }
}

/// A permit's annotations, checked when the policy was read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Meta {
    /// `@ask`: the call waits for a person instead of running.
    ask: bool,
    approvers: Vec<String>,
    quorum: Option<u32>,
    risk: Option<Risk>,
    /// `@reason`, else the text of `@ask`.
    reason: Option<String>,
    /// `@requester_may_approve`: `false` is the two-person rule.
    requester_may_approve: Option<bool>,
    /// `@narrower`: how an approver may narrow the call's arguments.
    narrower: Narrowing,
    /// The file the policy was read from.
    file: String,
}

/// What an ask needs: who approves, how many, how risky, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AskSpec {
    /// The policy that asked (the first, when several did).
    pub policy: String,
    /// `group:sre`, `user:alice`; the union over the asking policies.
    pub approvers: Vec<String>,
    /// The largest quorum the asking policies name.
    pub quorum: Option<u32>,
    pub risk: Option<Risk>,
    pub reason: Option<String>,
    /// `false` when any asking policy says `@requester_may_approve("false")`, else `true`
    /// when one says so; none: the agents file's setting decides.
    pub requester_may_approve: Option<bool>,
    /// How an approver may narrow the call (`@narrower`), over the asking policies.
    pub narrower: Narrowing,
}

/// What the policies say about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CedarOutcome {
    /// No policy applies: the argument rules and the tool's setting decide.
    NoOpinion,
    /// A permit without `@ask` applies (and no forbid): runs without asking.
    Allow { policy: String },
    /// A permit with `@ask` applies (and no forbid).
    Ask(AskSpec),
    /// A forbid applies: refused, whatever else applies.
    Deny {
        policy: String,
        reason: Option<String>,
    },
    /// A policy could not be evaluated (a missing attribute, a type error) and no forbid
    /// applies: the call never runs unasked.
    Error { message: String },
}

/// A tool as policies see it (the resource).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFacts {
    pub name: String,
    pub source: String,
    /// MCP's tool annotations, with MCP's defaults where a server gives none.
    pub hints: ToolHints,
}

/// MCP's tool annotations (`destructiveHint`, …). The defaults are MCP's: a tool that says
/// nothing may destroy, is not read-only, not idempotent, and reaches the open world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolHints {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

impl Default for ToolHints {
    fn default() -> Self {
        ToolHints {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: true,
        }
    }
}

/// One call as the policies see it.
#[derive(Debug, Clone)]
pub struct CallFacts<'a> {
    /// The person the agent acts for (the task's owner).
    pub user: &'a str,
    /// Their groups, as the sign-in named them when they sent the task.
    pub groups: &'a [String],
    pub tool: &'a ToolFacts,
    pub args: &'a Value,
    /// `namespace/name`.
    pub agent: &'a str,
    /// Whether a subagent's task made the call.
    pub subagent: bool,
    pub now: DateTime<Utc>,
    /// What the task and the person have done (`context.counts`), read from the store for
    /// this call; `None` when no loaded policy reads them, or outside a task: a policy that
    /// reads them then meets a missing attribute, and the call asks.
    pub counts: Option<&'a CallCounts>,
}

/// A set of Cedar policies, indexed by the tool a policy names (`resource == Signoff::Tool::"x"`)
/// so a call is evaluated against the policies that can apply to it, not all of them.
#[derive(Debug, Clone, Default)]
pub struct CedarPolicies {
    /// Policies for any tool, plus those of each named tool.
    by_tool: HashMap<String, PolicySet>,
    /// Policies for any tool (a resource constraint other than `==` one tool).
    general: PolicySet,
    meta: HashMap<PolicyId, Meta>,
    count: usize,
    /// The deployment's environment label (`--environment`), `context.environment`.
    environment: String,
    /// Every policy, for validation against a schema.
    all: PolicySet,
    /// Some policy's text names `counts`: only then does a call pay the store read of
    /// `context.counts` (a word in a comment costs that read, never a wrong answer).
    reads_counts: bool,
}

fn entity_type(name: &str) -> Result<EntityTypeName, CedarError> {
    EntityTypeName::from_str(&format!("{NAMESPACE}::{name}"))
        .map_err(|err| CedarError(format!("entity type {name}: {err}")))
}

fn uid(kind: &str, id: &str) -> Result<EntityUid, CedarError> {
    Ok(EntityUid::from_type_name_and_id(
        entity_type(kind)?,
        EntityId::new(id),
    ))
}

/// The annotations of a policy, checked: the error says which is wrong and why.
fn read_meta(policy: &Policy) -> Result<Meta, String> {
    let known = [
        "id",
        "ask",
        "approvers",
        "quorum",
        "risk",
        "reason",
        "requester_may_approve",
        "narrower",
    ];
    if let Some((key, _)) = policy.annotations().find(|(key, _)| !known.contains(key)) {
        return Err(format!(
            "unknown annotation @{key} (known: {})",
            known.map(|key| format!("@{key}")).join(", ")
        ));
    }
    let ask_only = [
        "ask",
        "approvers",
        "quorum",
        "risk",
        "requester_may_approve",
        "narrower",
    ];
    if policy.effect() == Effect::Forbid {
        if let Some(key) = ask_only.iter().find(|key| policy.annotation(key).is_some()) {
            return Err(format!(
                "@{key} belongs on a permit: a forbid refuses the call, it never asks"
            ));
        }
    }
    let approvers: Vec<String> = policy
        .annotation("approvers")
        .map(|text| {
            text.split(',')
                .map(str::trim)
                .filter(|entry| !entry.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    for approver in &approvers {
        let valid = ["group:", "user:"].iter().any(|prefix| {
            approver
                .strip_prefix(prefix)
                .is_some_and(|rest| !rest.is_empty())
        });
        if !valid {
            return Err(format!(
                "@approvers: {approver:?} is neither group:NAME nor user:NAME"
            ));
        }
        // The name byte for byte, as the agents file's entries are.
        crate::agent::config::ApproverEntry::parse(approver)
            .map_err(|err| format!("@approvers: {err}"))?;
    }
    let quorum = match policy.annotation("quorum") {
        Some(text) => match text.trim().parse::<u32>() {
            Ok(n) if (1..=MAX_QUORUM).contains(&n) => Some(n),
            _ => {
                return Err(format!(
                    "@quorum: {text:?} is not a whole number between 1 and {MAX_QUORUM}"
                ))
            }
        },
        None => None,
    };
    // The requester alone is one person: more approvals need others to give them.
    if quorum.is_some_and(|n| n > 1) && approvers.is_empty() {
        return Err(
            "@quorum above 1 needs @approvers: the requester alone cannot give more than one \
             approval"
                .into(),
        );
    }
    let risk = match policy.annotation("risk") {
        Some(text) => Some(
            Risk::parse(text)
                .ok_or_else(|| format!("@risk: {text:?} is not low, medium or high"))?,
        ),
        None => None,
    };
    let requester_may_approve = match policy.annotation("requester_may_approve") {
        Some(text) => match text.trim() {
            "true" => Some(true),
            "false" => Some(false),
            _ => {
                return Err(format!(
                    "@requester_may_approve: {text:?} is not true or false"
                ))
            }
        },
        None => None,
    };
    // Under the two-person rule someone besides the requester must be able to approve.
    if requester_may_approve == Some(false) && approvers.is_empty() {
        return Err(
            "@requester_may_approve(\"false\") needs @approvers: else nobody may approve the call"
                .into(),
        );
    }
    let narrower = match policy.annotation("narrower") {
        Some(text) => narrow::parse_annotation(text).map_err(|err| format!("@narrower: {err}"))?,
        None => Narrowing::default(),
    };
    let asks = policy.annotation("ask").is_some();
    if !asks
        && (quorum.is_some()
            || !approvers.is_empty()
            || risk.is_some()
            || requester_may_approve.is_some()
            || !narrower.is_empty())
    {
        return Err(
            "@approvers, @quorum, @risk, @requester_may_approve and @narrower need @ask: \
             without it the permit allows the call"
                .into(),
        );
    }
    let reason = policy
        .annotation("reason")
        .or_else(|| policy.annotation("ask"))
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .map(str::to_owned);
    Ok(Meta {
        ask: asks,
        approvers,
        quorum,
        risk,
        reason,
        requester_may_approve,
        narrower,
        file: String::new(),
    })
}

impl CedarPolicies {
    /// Reads every `*.cedar` file of `dir` (in name order).
    pub fn load_dir(dir: &Path, environment: &str) -> Result<CedarPolicies, CedarError> {
        let entries = std::fs::read_dir(dir)
            .map_err(|err| CedarError(format!("{}: {err}", dir.display())))?;
        let mut files = Vec::new();
        for entry in entries {
            let path = entry
                .map_err(|err| CedarError(format!("{}: {err}", dir.display())))?
                .path();
            if path.extension().is_some_and(|ext| ext == "cedar") {
                let text = std::fs::read_to_string(&path)
                    .map_err(|err| CedarError(format!("{}: {err}", path.display())))?;
                let name = path
                    .file_name()
                    .map(|name| name.to_string_lossy().into_owned())
                    .unwrap_or_default();
                files.push((name, text));
            }
        }
        if files.is_empty() {
            return Err(CedarError(format!(
                "{}: no *.cedar files (an empty policy folder is a mistake, not a policy)",
                dir.display()
            )));
        }
        files.sort();
        CedarPolicies::parse(&files, environment)
    }

    /// Parses policy files given as (name, text). A policy's id is its `@id`, else
    /// `FILE#N` (its place in the file, from 1); ids are unique across the files.
    pub fn parse(
        files: &[(String, String)],
        environment: &str,
    ) -> Result<CedarPolicies, CedarError> {
        let mut out = CedarPolicies {
            environment: environment.to_owned(),
            ..CedarPolicies::default()
        };
        let mut by_tool: BTreeMap<String, Vec<Policy>> = BTreeMap::new();
        let mut general = Vec::new();
        let tool_type = entity_type("Tool")?;
        for (name, text) in files {
            out.reads_counts |= text.contains("counts");
            nesting::check(text).map_err(|err| CedarError(format!("{name}: {}", err.0)))?;
            let set =
                PolicySet::from_str(text).map_err(|err| CedarError(format!("{name}: {err}")))?;
            if set.templates().next().is_some() {
                return Err(CedarError(format!(
                    "{name}: templates (?principal, ?resource) are not supported"
                )));
            }
            // The parser numbers policies `policy0`, … in the order of the file.
            let mut policies: Vec<&Policy> = set.policies().collect();
            policies.sort_by_key(|policy| {
                policy
                    .id()
                    .to_string()
                    .trim_start_matches("policy")
                    .parse::<usize>()
                    .unwrap_or(usize::MAX)
            });
            for (index, policy) in policies.into_iter().enumerate() {
                let id = match policy.annotation("id") {
                    Some(id) => id.trim().to_owned(),
                    None => format!("{name}#{}", index + 1),
                };
                let mut meta = read_meta(policy)
                    .map_err(|message| CedarError(format!("{name}: policy {id}: {message}")))?;
                meta.file = name.clone();
                let policy = policy.new_id(PolicyId::new(&id));
                out.all
                    .add(policy.clone())
                    .map_err(|_| CedarError(format!("{name}: policy id {id:?} is used twice")))?;
                out.meta.insert(policy.id().clone(), meta);
                out.count += 1;
                match policy.resource_constraint() {
                    ResourceConstraint::Eq(tool) if *tool.type_name() == tool_type => {
                        by_tool
                            .entry(tool.id().unescaped().to_owned())
                            .or_default()
                            .push(policy);
                    }
                    ResourceConstraint::Eq(_)
                    | ResourceConstraint::Any
                    | ResourceConstraint::In(_)
                    | ResourceConstraint::Is(_)
                    | ResourceConstraint::IsIn(..) => general.push(policy),
                }
            }
        }
        for policy in &general {
            out.general
                .add(policy.clone())
                .map_err(|err| CedarError(err.to_string()))?;
        }
        for (tool, policies) in by_tool {
            let mut set = out.general.clone();
            for policy in policies {
                set.add(policy).map_err(|err| CedarError(err.to_string()))?;
            }
            out.by_tool.insert(tool, set);
        }
        Ok(out)
    }

    /// How many policies the set holds.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether some policy reads `context.counts`, so a call must read them from the store.
    pub fn reads_counts(&self) -> bool {
        self.reads_counts
    }

    /// Whether some asking policy names approvers: then a call of any agent may be routed to
    /// people besides its requester.
    pub fn routes_to_approvers(&self) -> bool {
        self.meta.values().any(|meta| !meta.approvers.is_empty())
    }

    /// The file policy `id` was read from.
    pub fn file_of(&self, id: &str) -> Option<String> {
        self.meta
            .get(&PolicyId::new(id))
            .map(|meta| meta.file.clone())
    }

    /// Every policy, for a schema check (`signoff policy check`).
    pub fn policy_set(&self) -> &PolicySet {
        &self.all
    }

    /// What the policies say about one call.
    pub fn evaluate(&self, call: &CallFacts<'_>) -> CedarOutcome {
        if self.count == 0 {
            return CedarOutcome::NoOpinion;
        }
        let policies = self.by_tool.get(&call.tool.name).unwrap_or(&self.general);
        let (request, entities) = match self.request(call) {
            Ok(built) => built,
            Err(CedarError(message)) => return CedarOutcome::Error { message },
        };
        let response = Authorizer::new().is_authorized(&request, policies, &entities);
        let reasons: Vec<&PolicyId> = response.diagnostics().reason().collect();
        let first_error = response
            .diagnostics()
            .errors()
            .next()
            .map(ToString::to_string);
        match response.decision() {
            Decision::Deny if !reasons.is_empty() => {
                let policy = reasons
                    .iter()
                    .map(ToString::to_string)
                    .min()
                    .unwrap_or_default();
                let reason = self
                    .meta
                    .get(&PolicyId::new(&policy))
                    .and_then(|meta| meta.reason.clone());
                CedarOutcome::Deny { policy, reason }
            }
            // An error may hide a forbid that would have applied: never allow then.
            _ if first_error.is_some() => CedarOutcome::Error {
                message: first_error.unwrap_or_default(),
            },
            Decision::Deny => CedarOutcome::NoOpinion,
            Decision::Allow => self.permitted(&reasons),
        }
    }

    /// The outcome of the permits that applied: an ask if any of them asks.
    fn permitted(&self, reasons: &[&PolicyId]) -> CedarOutcome {
        let mut ids: Vec<String> = reasons.iter().map(ToString::to_string).collect();
        ids.sort();
        let mut ask: Option<AskSpec> = None;
        for id in &ids {
            let Some(meta) = self.meta.get(&PolicyId::new(id)).filter(|meta| meta.ask) else {
                continue;
            };
            let spec = ask.get_or_insert_with(|| AskSpec {
                policy: id.clone(),
                ..AskSpec::default()
            });
            for approver in &meta.approvers {
                if !spec.approvers.contains(approver) {
                    spec.approvers.push(approver.clone());
                }
            }
            spec.quorum = spec.quorum.max(meta.quorum);
            spec.risk = spec.risk.max(meta.risk);
            spec.narrower.merge(&meta.narrower);
            if spec.reason.is_none() {
                spec.reason = meta.reason.clone();
            }
            // The strictest wins: one policy's two-person rule is not lifted by another's.
            spec.requester_may_approve =
                match (spec.requester_may_approve, meta.requester_may_approve) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), _) | (_, Some(true)) => Some(true),
                    (None, None) => None,
                };
        }
        match ask {
            Some(spec) => CedarOutcome::Ask(spec),
            None => CedarOutcome::Allow {
                policy: ids.into_iter().next().unwrap_or_default(),
            },
        }
    }

    /// The request and entities of one call (the entity model of docs/policies.md).
    fn request(&self, call: &CallFacts<'_>) -> Result<(Request, Entities), CedarError> {
        let err = |what: &str, text: String| CedarError(format!("{what}: {text}"));
        let mut group_uids = HashSet::new();
        let mut entities = Vec::with_capacity(call.groups.len() + 2);
        for group in call.groups {
            let group_uid = uid("Group", group)?;
            group_uids.insert(group_uid.clone());
            entities.push(Entity::new_no_attrs(group_uid, HashSet::new()));
        }
        let user = uid("User", call.user)?;
        entities.push(Entity::new_no_attrs(user.clone(), group_uids));
        let tool = uid("Tool", &call.tool.name)?;
        let hints = call.tool.hints;
        let attrs: HashMap<String, RestrictedExpression> = [
            (
                "name",
                RestrictedExpression::new_string(call.tool.name.clone()),
            ),
            (
                "source",
                RestrictedExpression::new_string(call.tool.source.clone()),
            ),
            (
                "readOnlyHint",
                RestrictedExpression::new_bool(hints.read_only),
            ),
            (
                "destructiveHint",
                RestrictedExpression::new_bool(hints.destructive),
            ),
            (
                "idempotentHint",
                RestrictedExpression::new_bool(hints.idempotent),
            ),
            (
                "openWorldHint",
                RestrictedExpression::new_bool(hints.open_world),
            ),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect();
        entities.push(
            Entity::new(tool.clone(), attrs, HashSet::new())
                .map_err(|e| err("tool", e.to_string()))?,
        );
        let entities =
            Entities::from_entities(entities, None).map_err(|e| err("entities", e.to_string()))?;
        let now = call.now;
        let time = RestrictedExpression::new_record([
            (
                "unix".to_owned(),
                RestrictedExpression::new_long(now.timestamp()),
            ),
            (
                "hour".to_owned(),
                RestrictedExpression::new_long(i64::from(now.hour())),
            ),
            (
                "minute".to_owned(),
                RestrictedExpression::new_long(i64::from(now.minute())),
            ),
            (
                "weekday".to_owned(),
                RestrictedExpression::new_long(i64::from(now.weekday().number_from_monday())),
            ),
        ])
        .map_err(|e| err("time", e.to_string()))?;
        let mut pairs = vec![
            ("args".to_owned(), restricted(call.args)?),
            (
                "agent".to_owned(),
                RestrictedExpression::new_string(call.agent.to_owned()),
            ),
            (
                "environment".to_owned(),
                RestrictedExpression::new_string(self.environment.clone()),
            ),
            ("time".to_owned(), time),
            (
                "subagent".to_owned(),
                RestrictedExpression::new_bool(call.subagent),
            ),
        ];
        if let Some(counts) = call.counts {
            pairs.push(("counts".to_owned(), counts_record(counts, call.args)?));
        }
        let context = Context::from_pairs(pairs).map_err(|e| err("context", e.to_string()))?;
        let request = Request::new(user, uid("Action", "call")?, tool, context, None)
            .map_err(|e| err("request", e.to_string()))?;
        Ok((request, entities))
    }
}

/// `context.counts`: the two counts, the set of approved tools, and the three sums of numeric
/// arguments. Each sum has every numeric argument of this call (`args`), 0 when no earlier
/// call had it, so a cap reads `context.counts.sum_by_user_last_day.amount` without `has`.
fn counts_record(counts: &CallCounts, args: &Value) -> Result<RestrictedExpression, CedarError> {
    let numeric: Vec<&String> = args
        .as_object()
        .map(|args| {
            args.iter()
                .filter(|(_, value)| value.is_number())
                .map(|(name, _)| name)
                .collect()
        })
        .unwrap_or_default();
    let sums = |sums: &BTreeMap<String, i64>| {
        let mut record: BTreeMap<String, i64> = sums.clone();
        for name in &numeric {
            record.entry((*name).clone()).or_insert(0);
        }
        RestrictedExpression::new_record(
            record
                .into_iter()
                .map(|(name, sum)| (name, RestrictedExpression::new_long(sum))),
        )
        .map_err(|e| CedarError(format!("counts: {e}")))
    };
    RestrictedExpression::new_record([
        ("sum_in_task".to_owned(), sums(&counts.sum_in_task)?),
        (
            "sum_by_user_last_hour".to_owned(),
            sums(&counts.sum_by_user_last_hour)?,
        ),
        (
            "sum_by_user_last_day".to_owned(),
            sums(&counts.sum_by_user_last_day)?,
        ),
        (
            "tool_allowed_in_task".to_owned(),
            RestrictedExpression::new_long(counts.tool_allowed_in_task),
        ),
        (
            "tool_allowed_by_user_last_hour".to_owned(),
            RestrictedExpression::new_long(counts.tool_allowed_by_user_last_hour),
        ),
        (
            "approved_in_task".to_owned(),
            RestrictedExpression::new_set(
                counts
                    .approved_in_task
                    .iter()
                    .map(|tool| RestrictedExpression::new_string(tool.clone())),
            ),
        ),
    ])
    .map_err(|e| CedarError(format!("counts: {e}")))
}

/// A JSON value as a Cedar value, built directly (never through Cedar's JSON reader, whose
/// `__entity` escapes would let an argument name an entity). A `null` is left out (a policy
/// that reads it meets a missing attribute, and asks); a fractional number becomes its text
/// (Cedar has only whole numbers).
fn restricted(value: &Value) -> Result<RestrictedExpression, CedarError> {
    Ok(match value {
        Value::Null => RestrictedExpression::new_record(Vec::new())
            .map_err(|err| CedarError(err.to_string()))?,
        Value::Bool(flag) => RestrictedExpression::new_bool(*flag),
        Value::Number(number) => match number.as_i64() {
            Some(whole) => RestrictedExpression::new_long(whole),
            None => RestrictedExpression::new_string(number.to_string()),
        },
        Value::String(text) => RestrictedExpression::new_string(text.clone()),
        Value::Array(items) => RestrictedExpression::new_set(
            items
                .iter()
                .map(restricted)
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Value::Object(fields) => RestrictedExpression::new_record(
            fields
                .iter()
                .filter(|(_, value)| !value.is_null())
                .map(|(key, value)| Ok((key.clone(), restricted(value)?)))
                .collect::<Result<Vec<_>, CedarError>>()?,
        )
        .map_err(|err| CedarError(err.to_string()))?,
    })
}

/// The deployment's policy sets: the live one decides, the shadow one (`--shadow-policies`) is
/// evaluated beside it for every call, its disagreements logged and counted, never enforced.
#[derive(Debug, Clone, Default)]
pub struct PolicyGate {
    pub live: CedarPolicies,
    pub shadow: Option<CedarPolicies>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
