//! kagent's AgentConfig JSON (what kagent's controller hands its Python runtime) read as an
//! agents file with one agent: its `http_tools` and `sse_tools` become MCP tool sources with
//! their `tools` and `require_approval` (mapped by `mcp::kagent`), its model an
//! OpenAI-compatible model, and the result is checked like any agents file.

use serde_json::{json, Map, Value};

use super::config::{AgentSpec, AgentsFile, ConfigError, ModelSpec, ToolSourceSpec};

fn invalid(path: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        path: path.into(),
        message: message.into(),
    }
}

/// kagent's model config, as our `model` table (JSON), read by [`ModelSpec`]'s own
/// deserializer so its checks apply.
fn model(config: &Map<String, Value>) -> Result<ModelSpec, ConfigError> {
    let Some(model) = config.get("model") else {
        return Ok(ModelSpec::Scripted);
    };
    let kind = model.get("type").and_then(Value::as_str).unwrap_or("");
    let name = model
        .get("model")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("model.model", "missing the model name"))?;
    let text = |key: &str| model.get(key).and_then(Value::as_str).map(str::to_owned);
    let table = match kind {
        "openai" => json!({
            "kind": "openai",
            "base_url": text("base_url").unwrap_or_else(|| "https://api.openai.com/v1".to_owned()),
            "model": name,
            "api_key_env": "OPENAI_API_KEY",
        }),
        "ollama" => {
            let host = text("host").unwrap_or_else(|| "http://localhost:11434".to_owned());
            json!({
                "kind": "openai",
                "base_url": format!("{}/v1", host.trim_end_matches('/')),
                "model": name,
            })
        }
        other => {
            return Err(invalid(
                "model.type",
                format!(
                    "{other:?} is not supported (openai and ollama are; other providers work \
                     through an OpenAI-compatible endpoint in an agents TOML file)"
                ),
            ))
        }
    };
    serde_path_to_error::deserialize(table).map_err(|err| {
        let path = err.path().to_string();
        invalid(format!("model.{path}"), err.into_inner().to_string())
    })
}

/// Reads kagent's AgentConfig JSON as one agent named `namespace/name`.
pub fn parse(text: &str, namespace: &str, name: &str) -> Result<AgentsFile, ConfigError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|err| invalid("(kagent AgentConfig)", format!("invalid JSON: {err}")))?;
    let config = value
        .as_object()
        .ok_or_else(|| invalid("(kagent AgentConfig)", "must be a JSON object"))?;
    if config
        .get("remote_agents")
        .and_then(Value::as_array)
        .is_some_and(|agents| !agents.is_empty())
    {
        tracing::warn!(
            "kagent AgentConfig: remote_agents are ignored; declare them as remote agents in an \
             agents TOML file"
        );
    }
    let tools = super::mcp::kagent::tool_sources(&value)?
        .into_iter()
        .map(ToolSourceSpec::McpHttp)
        .collect();
    let text_field = |key: &str| {
        config
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let file = AgentsFile {
        agents: vec![AgentSpec {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            description: text_field("description"),
            instruction: text_field("instruction"),
            model: model(config)?,
            tools,
            remote: None,
        }],
    };
    file.validate()?;
    Ok(file)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::agent::config::{ModelSpec, ToolSourceSpec};

    const CONFIG: &str = r#"{
        "model": {"type": "ollama", "model": "llama3.2", "host": "http://ollama:11434"},
        "description": "Files agent",
        "instruction": "You help with files.",
        "http_tools": [{"params": {"url": "http://tools.kagent:8084/mcp", "headers": {"X-A": "b"}, "timeout": 5.5},
                        "tools": ["read_file", "write_file", "delete_file"],
                        "require_approval": ["write_file"]}],
        "sse_tools": [{"params": {"url": "http://legacy:9000/sse"}, "tools": ["search"]}],
        "stream": true
    }"#;

    #[test]
    fn maps_tool_servers_and_approvals() {
        let file = parse(CONFIG, "kagent", "files").unwrap();
        let agent = &file.agents[0];
        assert_eq!(
            (agent.namespace.as_str(), agent.name.as_str()),
            ("kagent", "files")
        );
        assert_eq!(agent.instruction, "You help with files.");
        assert!(!matches!(agent.model, ModelSpec::Scripted));
        assert_eq!(agent.tools.len(), 2);
        let ToolSourceSpec::McpHttp(spec) = &agent.tools[0] else {
            panic!("expected an MCP HTTP source, got {:?}", agent.tools[0]);
        };
        assert_eq!(spec.url, "http://tools.kagent:8084/mcp");
        assert_eq!(spec.require_approval, ["write_file"]);
    }

    #[test]
    fn refuses_approvals_for_tools_no_server_exposes() {
        let bad = CONFIG.replace(
            r#""require_approval": ["write_file"]"#,
            r#""require_approval": ["wrte_file"]"#,
        );
        let err = parse(&bad, "kagent", "files").unwrap_err().to_string();
        assert!(
            err.contains("require_approval[0]")
                && err.contains("\"wrte_file\" is not an exposed tool"),
            "{err}"
        );
        let err = parse(r#"{"model": {"type": "gemini", "model": "g"}}"#, "k", "a")
            .unwrap_err()
            .to_string();
        assert!(err.contains("model.type"), "{err}");
    }
}
