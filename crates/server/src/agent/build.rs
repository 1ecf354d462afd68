//! Building agents from a checked agents file: each spec becomes its model and tool sources
//! (this is where `config` meets the models and tools; config itself knows neither).

use std::path::Path;
use std::sync::Arc;

use super::acp::{calls::AcpCalls, AcpModel};
use super::ask::AskUser;
use super::asked::PermissionPrompts;
use super::config::{
    AcpSpec, AgentSpec, AgentsFile, ConfigError, ModelSpec, ToolSourceSpec, PERMISSIONS_SOURCE,
};
use super::conformance::ConformanceModel;
use super::files::FileTools;
use super::mcp;
use super::model::Model;
use super::openai::OpenAiModel;
use super::policy::AgentApprovals;
use super::reviewer::Reviewer;
use super::runtime::Agent;
use super::scripted::ScriptedModel;
use super::subagents::{AgentTools, Subagents};
use super::tools::{ToolSource, Toolbox};

/// Builds the agents of a (checked) agents file. Relative sandbox roots live in `data_dir`.
pub async fn build_agents(
    file: &AgentsFile,
    data_dir: &Path,
) -> Result<Vec<Arc<Agent>>, ConfigError> {
    let mut agents = Vec::new();
    // One connection per distinct MCP server, shared by every agent that uses it.
    let mut connections = mcp::Connections::default();
    for (index, spec) in file.agents.iter().enumerate() {
        if spec.remote.is_some() {
            continue; // served by the HTTP layer's relay
        }
        if let Some(acp) = &spec.acp {
            agents.push(acp_agent(spec, acp, index, data_dir)?);
            continue;
        }
        let model: Arc<dyn Model> = match &spec.model {
            ModelSpec::Scripted => Arc::new(ScriptedModel::default()),
            ModelSpec::Conformance => Arc::new(ConformanceModel::default()),
            ModelSpec::OpenAi(openai) => Arc::new(OpenAiModel::from_spec(
                openai,
                &format!("agents[{index}].model"),
            )?),
        };
        let approvals = AgentApprovals::from_spec(&format!("agents[{index}]"), spec)?;
        let mut toolbox = Toolbox::new();
        for (source_index, source) in spec.tools.iter().enumerate() {
            let at = format!("agents[{index}].tools[{source_index}]");
            match source {
                ToolSourceSpec::BuiltinFiles {
                    name,
                    root,
                    tools,
                    require_approval,
                    ..
                } => {
                    let root = data_dir.join(root.clone().unwrap_or_else(|| "sandbox".into()));
                    FileTools::seed_demo(&root).map_err(|err| ConfigError::Invalid {
                        path: format!("{at}.root"),
                        message: format!("cannot create the sandbox {}: {err}", root.display()),
                    })?;
                    let files = FileTools::new(
                        name.clone().unwrap_or_else(|| "files".into()),
                        root.clone(),
                    )
                    .map_err(|err| ConfigError::Invalid {
                        path: format!("{at}.root"),
                        message: format!("cannot open the sandbox {}: {err}", root.display()),
                    })?;
                    let source: Arc<dyn ToolSource> = Arc::new(files);
                    let specs = source
                        .list_tools()
                        .await
                        .map_err(|err| ConfigError::Invalid {
                            path: at.clone(),
                            message: err.to_string(),
                        })?;
                    let exposed = specs
                        .into_iter()
                        .filter(|tool| {
                            tools
                                .as_ref()
                                .is_none_or(|names| names.contains(&tool.name))
                        })
                        .map(|tool| {
                            let held = require_approval.contains(&tool.name);
                            (tool, held)
                        })
                        .collect();
                    toolbox
                        .add_all(exposed, source)
                        .map_err(|message| ConfigError::Invalid {
                            path: at.clone(),
                            message,
                        })?;
                }
                ToolSourceSpec::McpStdio(mcp_spec) => {
                    let checked = mcp_spec.check(&at, data_dir)?;
                    let connection = connections.get(&checked);
                    let source = Arc::new(mcp::McpSource::new(checked, connection, at));
                    mcp::attach(source, &toolbox).await?;
                }
                ToolSourceSpec::McpHttp(mcp_spec) => {
                    let checked = mcp_spec.check(&at)?;
                    let connection = connections.get(&checked);
                    let source = Arc::new(mcp::McpSource::new(checked, connection, at));
                    mcp::attach(source, &toolbox).await?;
                }
                ToolSourceSpec::PermissionPrompts { name, allow, .. } => {
                    let name = name.clone().unwrap_or_else(|| PERMISSIONS_SOURCE.into());
                    toolbox.answer_any_name(Arc::new(PermissionPrompts::new(name)), allow.clone());
                }
            }
        }
        if spec.ask_user {
            // Its calls always wait: the person's answers are the decision.
            toolbox
                .add_all(vec![(AskUser::spec(), true)], Arc::new(AskUser))
                .map_err(|message| ConfigError::Invalid {
                    path: format!("agents[{index}].ask_user"),
                    message,
                })?;
        }
        let (subagents, agent_tools) = Subagents::of(spec, file);
        if !agent_tools.is_empty() {
            // Calling a subagent waits for nobody: its own calls are held in its task.
            let exposed = agent_tools
                .iter()
                .map(|tool| (tool.clone(), false))
                .collect();
            toolbox
                .add_all(exposed, Arc::new(AgentTools { specs: agent_tools }))
                .map_err(|message| ConfigError::Invalid {
                    path: format!("agents[{index}].agents"),
                    message,
                })?;
        }
        approvals.check_tools(&format!("agents[{index}]"), spec, &toolbox)?;
        let reviewer = reviewer_of(spec, index, data_dir)?;
        agents.push(Arc::new(Agent {
            namespace: spec.namespace.clone(),
            name: spec.name.clone(),
            description: spec.description.clone(),
            instruction: spec.instruction.clone(),
            model,
            tools: toolbox,
            approvals,
            subagents,
            serve_mcp: spec.serve_mcp,
            reviewer,
        }));
    }
    Ok(agents)
}

/// The agent's first reviewer, if the agents file gives it one.
fn reviewer_of(
    spec: &AgentSpec,
    index: usize,
    data_dir: &Path,
) -> Result<Option<Arc<Reviewer>>, ConfigError> {
    spec.reviewer
        .as_ref()
        .map(|reviewer| {
            Reviewer::from_spec(reviewer, &format!("agents[{index}].reviewer"), data_dir)
                .map(Arc::new)
        })
        .transpose()
}

/// An ACP agent: its model is the agent itself, and its one tool source answers for its
/// permission requests, named by tool kind.
fn acp_agent(
    spec: &AgentSpec,
    acp: &AcpSpec,
    index: usize,
    data_dir: &Path,
) -> Result<Arc<Agent>, ConfigError> {
    let at = format!("agents[{index}]");
    let launch = acp.check(&format!("{at}.acp"), data_dir)?;
    let approvals = AgentApprovals::from_spec(&at, spec)?;
    let mut toolbox = Toolbox::new();
    let calls = AcpCalls::new(spec.name.clone(), launch.cwd.clone());
    toolbox.answer_any_name(Arc::new(calls), launch.allow.clone());
    approvals.check_tools(&at, spec, &toolbox)?;
    let label = format!("{}/{}", spec.namespace, spec.name);
    let sessions = data_dir
        .join("acp")
        .join(format!("{}.{}.json", spec.namespace, spec.name));
    Ok(Arc::new(Agent {
        namespace: spec.namespace.clone(),
        name: spec.name.clone(),
        description: spec.description.clone(),
        instruction: String::new(),
        model: Arc::new(AcpModel::new(label, launch, sessions)),
        tools: toolbox,
        approvals,
        subagents: Subagents::default(),
        serve_mcp: spec.serve_mcp,
        reviewer: reviewer_of(spec, index, data_dir)?,
    }))
}
