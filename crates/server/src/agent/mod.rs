//! The agent runtime: the turn loop, the approval gate, decisions, models and tools.
//! It never imports axum; it talks to the store and nothing else below it.

pub mod config;
pub mod files;
pub mod model;
pub mod runtime;
pub mod scripted;
pub mod tools;
pub mod view;

use std::path::Path;
use std::sync::Arc;

pub use config::{AgentsFile, ConfigError};
pub use runtime::{Agent, AgentError, Limits, Runtime};

use config::{ModelSpec, ToolSourceSpec};
use files::FileTools;
use model::Model;
use scripted::ScriptedModel;
use tools::{ToolSource, Toolbox};

/// Builds the agents of a (checked) agents file. Relative sandbox roots live in `data_dir`.
pub async fn build_agents(
    file: &AgentsFile,
    data_dir: &Path,
) -> Result<Vec<Arc<Agent>>, ConfigError> {
    let mut agents = Vec::new();
    for (index, spec) in file.agents.iter().enumerate() {
        if spec.remote.is_some() {
            continue; // served by the HTTP layer's relay
        }
        let model: Arc<dyn Model> = match &spec.model {
            ModelSpec::Scripted => Arc::new(ScriptedModel::default()),
        };
        let mut toolbox = Toolbox::new();
        for (source_index, source) in spec.tools.iter().enumerate() {
            let at = format!("agents[{index}].tools[{source_index}]");
            match source {
                ToolSourceSpec::BuiltinFiles {
                    name,
                    root,
                    tools,
                    require_approval,
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
                    for tool in specs {
                        let exposed = tools
                            .as_ref()
                            .is_none_or(|names| names.contains(&tool.name));
                        if exposed {
                            let held = require_approval.contains(&tool.name);
                            toolbox.add(tool, held, source.clone());
                        }
                    }
                }
            }
        }
        agents.push(Arc::new(Agent {
            namespace: spec.namespace.clone(),
            name: spec.name.clone(),
            description: spec.description.clone(),
            instruction: spec.instruction.clone(),
            model,
            tools: toolbox,
        }));
    }
    Ok(agents)
}
