//! The agents file (TOML): which agents the server runs, with which model and tools, and which
//! tool calls wait for approval. Loading checks everything and names the offending field.
//!
//! ```toml
//! [[agents]]
//! name = "demo"
//! namespace = "default"
//! description = "Reads and writes files in a sandbox"
//! instruction = "You help with files."
//! model = { kind = "scripted" }
//!
//! [[agents.tools]]
//! kind = "builtin_files"
//! root = "sandbox"                          # relative to the data directory
//! require_approval = ["write_file", "delete_file"]
//! ```
//!
//! Tool sources are an enum tagged by `kind` (`builtin_files`; `mcp_stdio` and `mcp_http`, in
//! the `mcp` child module), models too (`scripted`, `conformance`; `openai`, in `openai`); an agent may instead
//! be `remote = { url = … }`, relayed by the HTTP layer. A `.json` file is kagent's AgentConfig
//! (`kagent`). This module is a leaf of the agent layer: it owns every spec, and the models,
//! tools and MCP sources built from them (`agent::build`) import it, never the other way round.

mod acp;
mod approvers;
mod kagent;
mod mcp;
mod openai;
mod reviewer;
mod rules;
mod subagents;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use acp::{AcpLaunch, AcpSpec, TOOL_KINDS};
pub use approvers::{is_clean, ApproverEntry, ApproversSpec, MAX_QUORUM};
pub use mcp::{check_approval, Endpoint, HttpTransport, McpHttpSpec, McpSourceSpec, McpStdioSpec};
pub use openai::OpenAiSpec;
pub use reviewer::{
    CheckedReviewer, ReviewerBackend, ReviewerKind, ReviewerMode, ReviewerSpec,
    DEFAULT_REVIEW_TIMEOUT,
};
pub use rules::{check_rules, parse_timeout, MatchSpec, Matcher, OnTimeout, RuleAction, RuleSpec};
pub use subagents::{agent_tool_name, AGENT_TOOL_ARG};

/// The names of the built-in file tools, in the order they are listed (`agent::files` serves
/// them; the agents file may name only these).
pub const FILE_TOOLS: [&str; 4] = ["list_directory", "read_file", "write_file", "delete_file"];

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the agents file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// `path` is the field's path inside the file, such as `agents[0].tools[1].kind`.
    #[error("agents file: {path}: {message}")]
    Invalid { path: String, message: String },
}

impl ConfigError {
    /// A field's value is wrong: `path` names the field, `message` says why.
    pub fn invalid(path: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            path: path.into(),
            message: message.into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentsFile {
    #[serde(default)]
    pub agents: Vec<AgentSpec>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    pub name: String,
    #[serde(default = "default_namespace")]
    pub namespace: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub instruction: String,
    #[serde(default)]
    pub model: ModelSpec,
    #[serde(default)]
    pub tools: Vec<ToolSourceSpec>,
    /// A remote A2A agent to relay to instead of running one here (`http::relay`).
    #[serde(default)]
    pub remote: Option<RemoteSpec>,
    /// A coding agent spoken to over the Agent Client Protocol, run here in place of a model
    /// and tools (`agent::acp`; [`AcpSpec`] documents the fields).
    #[serde(default)]
    pub acp: Option<AcpSpec>,
    /// Other agents of this file (`namespace/name`, local or remote) this agent may use as
    /// tools (`subagents`): each is one tool with a `request` text argument.
    #[serde(default)]
    pub agents: Vec<String>,
    /// The built-in `ask_user` tool: the model may ask the person questions (`agent::ask`).
    #[serde(default)]
    pub ask_user: bool,
    /// Argument rules, tried in order (`rules`).
    #[serde(default)]
    pub rules: Vec<RuleSpec>,
    /// How long a batch waits for a decision (humantime, `30m`); none by default.
    #[serde(default)]
    pub approval_timeout: Option<String>,
    /// What an expired batch does to its task.
    #[serde(default)]
    pub on_timeout: OnTimeout,
    /// Who may approve this agent's calls (`approvers`); none: the requester decides alone.
    #[serde(default)]
    pub approvers: Option<Vec<String>>,
    #[serde(default)]
    pub requester_may_approve: Option<bool>,
    #[serde(default)]
    pub quorum: Option<u32>,
    /// The deadline ladder (`approvers`): remind, escalate, how far a deadline may move.
    #[serde(default)]
    pub remind_after: Option<String>,
    #[serde(default)]
    pub escalate_after: Option<String>,
    #[serde(default)]
    pub escalate_to: Option<Vec<String>>,
    #[serde(default)]
    pub max_extend: Option<String>,
    /// `true`: a hand-over may make people eligible whom the approvers do not name.
    #[serde(default)]
    pub handover_may_widen: Option<bool>,
    /// Serve the agent's tools (and its permission prompts) over MCP at
    /// `/api/mcp/NAMESPACE/NAME`, gated as its own calls are (`http::mcp`).
    #[serde(default)]
    pub serve_mcp: bool,
    /// A first reviewer its calls go through before a person is asked (`reviewer`).
    #[serde(default)]
    pub reviewer: Option<ReviewerSpec>,
}

impl AgentSpec {
    /// The agent's own approver settings.
    pub fn approver_spec(&self) -> ApproversSpec {
        ApproversSpec {
            approvers: self.approvers.clone(),
            requester_may_approve: self.requester_may_approve,
            quorum: self.quorum,
            remind_after: self.remind_after.clone(),
            escalate_after: self.escalate_after.clone(),
            escalate_to: self.escalate_to.clone(),
            max_extend: self.max_extend.clone(),
            handover_may_widen: self.handover_may_widen,
        }
    }
}

/// The conformance agent's name (in the `default` namespace).
pub const CONFORMANCE_AGENT: &str = "conformance";

fn default_namespace() -> String {
    "default".to_owned()
}

/// Which model an agent runs on.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ModelSpec {
    /// The offline, deterministic model (crates/server/README.md documents its grammar).
    #[default]
    Scripted,
    /// An OpenAI-compatible Chat Completions endpoint (fields in [`OpenAiSpec`]).
    #[serde(rename = "openai")]
    OpenAi(OpenAiSpec),
    /// The behaviours the A2A conformance suite asks of a system under test
    /// (`agent::conformance`); the `--conformance-agent` flag serves it as `default/conformance`.
    Conformance,
}

/// Where an agent's tools come from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToolSourceSpec {
    /// The built-in file tools over a sandbox folder.
    BuiltinFiles {
        /// The source's name, shown as the action request's `server` (default `files`).
        #[serde(default)]
        name: Option<String>,
        /// The sandbox folder; relative paths are inside the data directory (default `sandbox`).
        #[serde(default)]
        root: Option<PathBuf>,
        /// The tools to expose (default: all four).
        #[serde(default)]
        tools: Option<Vec<String>>,
        /// Exposed tools whose calls wait for a person's decision.
        #[serde(default)]
        require_approval: Vec<String>,
        /// Who may approve this source's calls (`approvers`).
        #[serde(default)]
        approvers: Option<Vec<String>>,
        #[serde(default)]
        requester_may_approve: Option<bool>,
        #[serde(default)]
        quorum: Option<u32>,
        /// Per exposed tool, who may approve its calls.
        #[serde(default)]
        tool_approvers: BTreeMap<String, ApproversSpec>,
    },
    /// An MCP server started as a child process ([`McpStdioSpec`] documents the fields).
    McpStdio(McpStdioSpec),
    /// An MCP server over streamable HTTP or legacy SSE ([`McpHttpSpec`] documents the fields).
    McpHttp(McpHttpSpec),
    /// The permission prompts of a program that runs its own tools (Claude Code's
    /// `--permission-prompt-tool`, a REST approval request): any tool name it asks about, each
    /// call waiting for approval unless `allow` names it or a rule, grant or policy decides it
    /// (`agent::asked`).
    PermissionPrompts {
        /// The source's name, shown as the call's `server` (default `permissions`).
        #[serde(default)]
        name: Option<String>,
        /// Tools whose calls are allowed without asking anyone (such as `Read`).
        #[serde(default)]
        allow: Vec<String>,
        #[serde(default)]
        approvers: Option<Vec<String>>,
        #[serde(default)]
        requester_may_approve: Option<bool>,
        #[serde(default)]
        quorum: Option<u32>,
        #[serde(default)]
        tool_approvers: BTreeMap<String, ApproversSpec>,
    },
}

/// The name of a permission-prompts source that names none.
pub const PERMISSIONS_SOURCE: &str = "permissions";

/// A remote A2A agent that the server lists and relays to (`http::relay`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteSpec {
    /// The agent's JSON-RPC endpoint, such as kagent's
    /// `http://kagent-controller:8083/api/a2a/kagent/k8s-agent/`.
    pub url: String,
    /// Where its agent card is (default: `{url}/.well-known/agent-card.json`).
    #[serde(default)]
    pub card_url: Option<String>,
    /// Seconds to connect (default 5).
    #[serde(default)]
    pub connect_timeout_secs: Option<u64>,
    /// Seconds the remote may stay silent: before answering, and between chunks of a stream
    /// (default 300).
    #[serde(default)]
    pub idle_timeout_secs: Option<u64>,
    /// Whether the remote agent can cancel a task; `false` for kagent 0.10, whose
    /// `tasks/cancel` answers "Cancellation is not supported", so the chat offers "Reject all
    /// and stop" instead of Stop. When not set, the first refused cancel tells.
    #[serde(default)]
    pub cancel: Option<bool>,
}

impl ToolSourceSpec {
    /// The tools the source exposes, when the agents file alone says (MCP servers list
    /// theirs when they connect, unless `tools` names them).
    pub fn known_tools(&self) -> Option<Vec<String>> {
        match self {
            ToolSourceSpec::BuiltinFiles { tools, .. } => Some(
                tools
                    .clone()
                    .unwrap_or_else(|| FILE_TOOLS.map(str::to_owned).to_vec()),
            ),
            ToolSourceSpec::McpStdio(spec) => spec.tools.clone(),
            ToolSourceSpec::McpHttp(spec) => spec.tools.clone(),
            ToolSourceSpec::PermissionPrompts { .. } => None,
        }
    }

    /// The source's name (shown as a call's `server`), its tool-name prefix, its own approver
    /// settings and those per tool.
    pub fn approver_levels(
        &self,
    ) -> (
        String,
        &str,
        ApproversSpec,
        &BTreeMap<String, ApproversSpec>,
    ) {
        match self {
            ToolSourceSpec::BuiltinFiles {
                name,
                approvers,
                requester_may_approve,
                quorum,
                tool_approvers,
                ..
            } => (
                name.clone().unwrap_or_else(|| "files".to_owned()),
                "",
                ApproversSpec::source_level(approvers, *requester_may_approve, *quorum),
                tool_approvers,
            ),
            ToolSourceSpec::McpStdio(spec) => (
                spec.name.clone(),
                spec.prefix.as_deref().unwrap_or(""),
                ApproversSpec::source_level(
                    &spec.approvers,
                    spec.requester_may_approve,
                    spec.quorum,
                ),
                &spec.tool_approvers,
            ),
            ToolSourceSpec::McpHttp(spec) => (
                spec.name.clone(),
                spec.prefix.as_deref().unwrap_or(""),
                ApproversSpec::source_level(
                    &spec.approvers,
                    spec.requester_may_approve,
                    spec.quorum,
                ),
                &spec.tool_approvers,
            ),
            ToolSourceSpec::PermissionPrompts {
                name,
                approvers,
                requester_may_approve,
                quorum,
                tool_approvers,
                ..
            } => (
                name.clone()
                    .unwrap_or_else(|| PERMISSIONS_SOURCE.to_owned()),
                "",
                ApproversSpec::source_level(approvers, *requester_may_approve, *quorum),
                tool_approvers,
            ),
        }
    }
}

impl AgentsFile {
    /// Reads and checks an agents file.
    pub fn load(path: &Path) -> Result<AgentsFile, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        // kagent's AgentConfig JSON: one agent, named after the file.
        if path.extension().is_some_and(|ext| ext == "json") {
            let name = path
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_else(|| "agent".to_owned());
            return kagent::parse(&text, "kagent", &name);
        }
        AgentsFile::parse(&text)
    }

    /// Parses and checks agents-file TOML.
    pub fn parse(text: &str) -> Result<AgentsFile, ConfigError> {
        let deserializer = toml::Deserializer::new(text);
        let file: AgentsFile = serde_path_to_error::deserialize(deserializer).map_err(|err| {
            let path = err.path().to_string();
            let inner = err.into_inner();
            ConfigError::Invalid {
                path,
                message: inner.message().to_owned(),
            }
        })?;
        file.validate()?;
        Ok(file)
    }

    /// The demo agent served when no agents file is given.
    pub fn demo() -> AgentsFile {
        AgentsFile {
            agents: vec![
                AgentSpec {
                    name: "demo".to_owned(),
                    namespace: "default".to_owned(),
                    description: "A demo agent that lists, reads, writes and deletes files in a \
                              sandbox folder; writing and deleting wait for your approval, and it \
                              can ask you questions."
                        .to_owned(),
                    instruction: "You help the user with files in the sandbox.".to_owned(),
                    model: ModelSpec::Scripted,
                    tools: vec![ToolSourceSpec::BuiltinFiles {
                        name: None,
                        root: None,
                        tools: None,
                        require_approval: vec!["write_file".to_owned(), "delete_file".to_owned()],
                        approvers: None,
                        requester_may_approve: None,
                        quorum: None,
                        tool_approvers: BTreeMap::new(),
                    }],
                    remote: None,
                    acp: None,
                    agents: Vec::new(),
                    // The scripted model's `ask` shows questions offline.
                    ask_user: true,
                    rules: Vec::new(),
                    approval_timeout: None,
                    on_timeout: OnTimeout::Reject,
                    approvers: None,
                    requester_may_approve: None,
                    quorum: None,
                    remind_after: None,
                    escalate_after: None,
                    escalate_to: None,
                    max_extend: None,
                    handover_may_widen: None,
                    serve_mcp: false,
                    reviewer: None,
                },
                AgentsFile::boss(),
            ],
        }
    }

    /// The demo's boss: it hands work to `default/demo` as a subagent (the scripted model's
    /// `delegate default/demo: TEXT`), so a subagent's pause shows offline.
    pub fn boss() -> AgentSpec {
        AgentSpec {
            name: "boss".to_owned(),
            namespace: "default".to_owned(),
            description: "A demo agent that delegates: say `delegate default/demo: write \
                          sub.txt: hi`, and the demo agent's calls that wait for approval are \
                          shown here, nested under the delegation."
                .to_owned(),
            instruction: "You hand file work to the demo agent.".to_owned(),
            model: ModelSpec::Scripted,
            tools: Vec::new(),
            remote: None,
            acp: None,
            agents: vec!["default/demo".to_owned()],
            ask_user: false,
            rules: Vec::new(),
            approval_timeout: None,
            on_timeout: OnTimeout::Reject,
            approvers: None,
            requester_may_approve: None,
            quorum: None,
            remind_after: None,
            escalate_after: None,
            escalate_to: None,
            max_extend: None,
            handover_may_widen: None,
            serve_mcp: false,
            reviewer: None,
        }
    }

    /// The conformance agent (`--conformance-agent`): the conformance model with the question
    /// tool, so a task can be left open waiting for input.
    pub fn conformance_agent() -> AgentSpec {
        AgentSpec {
            name: CONFORMANCE_AGENT.to_owned(),
            namespace: "default".to_owned(),
            description: "The conformance agent: answers as the A2A conformance suite expects of \
                          a system under test (tasks left open for input, long-running tasks, \
                          artifacts, plain message answers)."
                .to_owned(),
            instruction: "You answer the A2A conformance suite.".to_owned(),
            model: ModelSpec::Conformance,
            tools: Vec::new(),
            remote: None,
            acp: None,
            agents: Vec::new(),
            ask_user: true,
            rules: Vec::new(),
            approval_timeout: None,
            on_timeout: OnTimeout::Reject,
            approvers: None,
            requester_may_approve: None,
            quorum: None,
            remind_after: None,
            escalate_after: None,
            escalate_to: None,
            max_extend: None,
            handover_may_widen: None,
            serve_mcp: false,
            reviewer: None,
        }
    }

    /// Adds the conformance agent beside the file's agents (checked again, so a name it
    /// shares with an agent of the file is refused).
    pub fn with_conformance_agent(mut self) -> Result<AgentsFile, ConfigError> {
        self.agents.push(AgentsFile::conformance_agent());
        self.validate()?;
        Ok(self)
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |path: String, message: String| ConfigError::Invalid { path, message };
        if self.agents.is_empty() {
            return Err(invalid(
                "agents".into(),
                "declare at least one agent".into(),
            ));
        }
        let mut seen = BTreeSet::new();
        for (index, agent) in self.agents.iter().enumerate() {
            let at = format!("agents[{index}]");
            for (field, value) in [("name", &agent.name), ("namespace", &agent.namespace)] {
                let ok = !value.is_empty()
                    && value
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
                if !ok {
                    return Err(invalid(
                        format!("{at}.{field}"),
                        format!("{value:?} must be non-empty letters, digits, '-', '_' or '.'"),
                    ));
                }
            }
            if !seen.insert((agent.namespace.clone(), agent.name.clone())) {
                return Err(invalid(
                    format!("{at}.name"),
                    format!("{}/{} is declared twice", agent.namespace, agent.name),
                ));
            }
            if let Some(remote) = &agent.remote {
                if !agent.tools.is_empty() {
                    return Err(invalid(
                        format!("{at}.tools"),
                        "a remote agent brings its own tools; remove `tools`".into(),
                    ));
                }
                if !agent.rules.is_empty() || agent.approval_timeout.is_some() {
                    return Err(invalid(
                        format!("{at}.rules"),
                        "a remote agent asks for approval itself; remove `rules` and \
                         `approval_timeout`"
                            .into(),
                    ));
                }
                for (field, url) in [
                    ("url", Some(&remote.url)),
                    ("card_url", remote.card_url.as_ref()),
                ] {
                    let Some(url) = url else { continue };
                    if !(url.starts_with("http://") || url.starts_with("https://")) {
                        return Err(invalid(
                            format!("{at}.remote.{field}"),
                            format!("{url:?} must start with http:// or https://"),
                        ));
                    }
                }
            }
            if agent.acp.is_some() {
                check_acp_alone(&at, agent)?;
            }
            if let Some(reviewer) = &agent.reviewer {
                if agent.remote.is_some() {
                    return Err(invalid(
                        format!("{at}.reviewer"),
                        "a remote agent asks for approval itself; remove `reviewer`".into(),
                    ));
                }
                reviewer.check(&format!("{at}.reviewer"), Path::new(""))?;
            }
            if let Some(timeout) = &agent.approval_timeout {
                parse_timeout(&format!("{at}.approval_timeout"), timeout)?;
            }
            // Only built-in sources are known before they are built; MCP tools are checked
            // again once their servers list them (`agent::build`).
            let mut exposed_tools: Option<Vec<&str>> = Some(Vec::new());
            let mut prompts_seen = false;
            for (source_index, source) in agent.tools.iter().enumerate() {
                let at = format!("{at}.tools[{source_index}]");
                match source {
                    ToolSourceSpec::BuiltinFiles {
                        tools,
                        require_approval,
                        ..
                    } => {
                        let exposed: Vec<&str> = match tools {
                            Some(names) => {
                                for (tool_index, name) in names.iter().enumerate() {
                                    if !FILE_TOOLS.contains(&name.as_str()) {
                                        return Err(invalid(
                                            format!("{at}.tools[{tool_index}]"),
                                            format!(
                                                "{name:?} is not a built-in file tool (they are: {})",
                                                FILE_TOOLS.join(", ")
                                            ),
                                        ));
                                    }
                                }
                                names.iter().map(String::as_str).collect()
                            }
                            None => FILE_TOOLS.to_vec(),
                        };
                        check_require_approval(&at, &exposed, require_approval)?;
                        if let Some(known) = exposed_tools.as_mut() {
                            known.extend(exposed);
                        }
                    }
                    ToolSourceSpec::McpStdio(spec) => {
                        spec.check(&at, Path::new(""))?;
                        exposed_tools = None;
                    }
                    ToolSourceSpec::McpHttp(spec) => {
                        spec.check(&at)?;
                        exposed_tools = None;
                    }
                    ToolSourceSpec::PermissionPrompts { .. } => {
                        if prompts_seen {
                            return Err(invalid(
                                at,
                                "an agent may have one permission_prompts source: it answers for every tool name"
                                    .to_owned(),
                            ));
                        }
                        prompts_seen = true;
                        exposed_tools = None;
                    }
                }
            }
            if agent.ask_user {
                if let Some(known) = exposed_tools.as_mut() {
                    known.push(signoff_protocol::hitl::ASK_USER);
                }
            }
            if agent.acp.is_some() {
                // Its calls are named by their ACP tool kind.
                exposed_tools = Some(TOOL_KINDS.to_vec());
            }
            check_rules(&at, &agent.rules, exposed_tools.as_deref())?;
            approvers::check_agent(&at, agent)?;
        }
        subagents::check(self)
    }
}

/// An ACP agent brings its own model and tools: nothing of the agents file may stand in for
/// them beside `acp`.
fn check_acp_alone(at: &str, agent: &AgentSpec) -> Result<(), ConfigError> {
    let clashes = [
        ("remote", agent.remote.is_some()),
        ("model", agent.model != ModelSpec::Scripted),
        ("tools", !agent.tools.is_empty()),
        ("agents", !agent.agents.is_empty()),
        ("ask_user", agent.ask_user),
        ("instruction", !agent.instruction.is_empty()),
    ];
    match clashes.iter().find(|(_, clash)| *clash) {
        Some((field, _)) => Err(ConfigError::invalid(
            format!("{at}.{field}"),
            format!("an ACP agent brings its own model and tools; remove `{field}`"),
        )),
        None => Ok(()),
    }
}

/// `require_approval` may name only exposed tools (a typo would silently let a call through).
pub fn check_require_approval(
    at: &str,
    exposed: &[&str],
    require_approval: &[String],
) -> Result<(), ConfigError> {
    for (index, name) in require_approval.iter().enumerate() {
        if !exposed.contains(&name.as_str()) {
            return Err(ConfigError::Invalid {
                path: format!("{at}.require_approval[{index}]"),
                message: format!(
                    "{name:?} is not an exposed tool of this source (exposed: {})",
                    exposed.join(", ")
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        AgentsFile::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn the_conformance_agent_joins_a_file_unless_the_file_has_its_name() {
        let file = AgentsFile::demo().with_conformance_agent().unwrap();
        let names: Vec<&str> = file
            .agents
            .iter()
            .map(|agent| agent.name.as_str())
            .collect();
        assert_eq!(names, ["demo", "boss", "conformance"]);
        assert_eq!(file.agents[2].model, ModelSpec::Conformance);
        let taken = AgentsFile::parse("[[agents]]\nname = \"conformance\"\n").unwrap();
        let err = taken.with_conformance_agent().unwrap_err().to_string();
        assert!(
            err.contains("default/conformance is declared twice"),
            "{err}"
        );
    }

    #[test]
    fn loads_a_file_with_defaults() {
        let file = AgentsFile::parse(
            r#"
            [[agents]]
            name = "files"
            [[agents.tools]]
            kind = "builtin_files"
            tools = ["read_file", "write_file"]
            require_approval = ["write_file"]
            "#,
        )
        .unwrap();
        assert_eq!(file.agents[0].namespace, "default");
        assert_eq!(file.agents[0].model, ModelSpec::Scripted);
    }

    #[test]
    fn names_the_offending_field() {
        assert_eq!(
            error(
                "[[agents]]\nname = \"a\"\n[[agents.tools]]\nkind = \"builtin_files\"\n\
                 tools = [\"read_file\"]\nrequire_approval = [\"write_file\"]\n"
            ),
            "agents file: agents[0].tools[0].require_approval[0]: \"write_file\" is not an \
             exposed tool of this source (exposed: read_file)"
        );
        let unknown = error("[[agents]]\nname = \"a\"\ncolour = \"red\"\n");
        assert!(
            unknown.starts_with("agents file: agents[0].colour: unknown field"),
            "{unknown}"
        );
        let kind = error("[[agents]]\nname = \"a\"\n[[agents.tools]]\nkind = \"ftp\"\n");
        assert!(
            kind.starts_with("agents file: agents[0].tools[0]"),
            "{kind}"
        );
        assert!(kind.contains("ftp"), "{kind}");
        assert_eq!(
            error("[[agents]]\nname = \"a b\"\n"),
            "agents file: agents[0].name: \"a b\" must be non-empty letters, digits, '-', '_' or '.'"
        );
    }
}
