//! kagent's AgentConfig JSON (what kagent's controller hands its Python runtime) read as an
//! agents file with one agent: its model becomes an OpenAI-compatible model, and its MCP servers
//! become `mcp_http` tool sources with their `tools` and `require_approval`; the result is
//! checked like any agents file.
//!
//! The servers are in `http_tools` (streamable HTTP) and `sse_tools` (legacy SSE), each
//! `{params: {url, headers, timeout, sse_read_timeout}, tools, require_approval}`. kagent's
//! `tools: []` means all tools, its `timeout` (seconds, float) is the connect timeout and
//! `sse_read_timeout` the longest wait for a call's answer. `allowed_headers` (forwarding the A2A
//! caller's headers) has no equivalent here and is ignored.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{
    AgentSpec, AgentsFile, ConfigError, HttpTransport, McpHttpSpec, ModelSpec, ToolSourceSpec,
};

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
        .ok_or_else(|| ConfigError::invalid("model.model", "missing the model name"))?;
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
            return Err(ConfigError::invalid(
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
        ConfigError::invalid(format!("model.{path}"), err.into_inner().to_string())
    })
}

/// Reads kagent's AgentConfig JSON as one agent named `namespace/name`.
pub fn parse(text: &str, namespace: &str, name: &str) -> Result<AgentsFile, ConfigError> {
    let value: Value = serde_json::from_str(text).map_err(|err| {
        ConfigError::invalid("(kagent AgentConfig)", format!("invalid JSON: {err}"))
    })?;
    let config = value
        .as_object()
        .ok_or_else(|| ConfigError::invalid("(kagent AgentConfig)", "must be a JSON object"))?;
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
    let tools = tool_sources(&value)?
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
            acp: None,
            agents: Vec::new(),
            ask_user: false,
            rules: Vec::new(),
            approval_timeout: None,
            on_timeout: super::OnTimeout::Reject,
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
        }],
    };
    file.validate()?;
    Ok(file)
}

/// One `http_tools` / `sse_tools` entry. Unknown fields are allowed: kagent adds some.
#[derive(Debug, Clone, Deserialize)]
pub struct KagentMcpServer {
    pub params: KagentParams,
    #[serde(default)]
    pub tools: Vec<String>,
    #[serde(default)]
    pub require_approval: Option<Vec<String>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct KagentParams {
    pub url: String,
    #[serde(default)]
    pub headers: Option<BTreeMap<String, Value>>,
    #[serde(default)]
    pub timeout: Option<f64>,
    #[serde(default)]
    pub sse_read_timeout: Option<f64>,
}

/// The MCP sources of an AgentConfig JSON object (its other fields are not read here).
pub fn tool_sources(agent_config: &Value) -> Result<Vec<McpHttpSpec>, ConfigError> {
    let mut sources: Vec<McpHttpSpec> = Vec::new();
    for (field, transport) in [
        ("http_tools", HttpTransport::StreamableHttp),
        ("sse_tools", HttpTransport::Sse),
    ] {
        let entries = match agent_config.get(field) {
            None | Some(Value::Null) => continue,
            Some(entries) => entries,
        };
        let entries: Vec<KagentMcpServer> =
            serde_path_to_error::deserialize(entries).map_err(|error| {
                ConfigError::invalid(
                    format!("{field}{}", bracketed(&error.path().to_string())),
                    error.into_inner().to_string(),
                )
            })?;
        for entry in entries {
            let name = unique_name(&entry.params.url, &sources);
            let headers = entry
                .params
                .headers
                .unwrap_or_default()
                .into_iter()
                .map(|(key, value)| match value {
                    Value::String(text) => (key, text),
                    other @ (Value::Null
                    | Value::Bool(_)
                    | Value::Number(_)
                    | Value::Array(_)
                    | Value::Object(_)) => (key, other.to_string()),
                })
                .collect();
            let seconds = |value: Option<f64>| {
                value
                    .filter(|secs| secs.is_finite() && *secs > 0.0)
                    .map(|secs| secs.ceil() as u64)
            };
            sources.push(McpHttpSpec {
                name,
                url: entry.params.url,
                headers,
                transport,
                tools: (!entry.tools.is_empty()).then_some(entry.tools),
                prefix: None,
                require_approval: entry.require_approval.unwrap_or_default(),
                timeout_secs: seconds(entry.params.sse_read_timeout),
                connect_timeout_secs: seconds(entry.params.timeout),
                approvers: None,
                requester_may_approve: None,
                quorum: None,
                tool_approvers: BTreeMap::new(),
            });
        }
    }
    Ok(sources)
}

/// serde_path_to_error's `[0].params` or `?` as a suffix of the field name.
fn bracketed(path: &str) -> String {
    if path == "." || path == "?" {
        String::new()
    } else if path.starts_with('[') {
        path.to_owned()
    } else {
        format!(".{path}")
    }
}

/// A server name from its URL's host (`kagent-tool-server.kagent:8084` -> `kagent-tool-server`),
/// made unique among the sources so far.
fn unique_name(url: &str, taken: &[McpHttpSpec]) -> String {
    let host = url
        .split("://")
        .nth(1)
        .unwrap_or(url)
        .split(['/', ':', '?'])
        .next()
        .unwrap_or_default();
    let label = host.split('.').next().unwrap_or_default();
    let base = if label.is_empty() || label.chars().all(|c| c.is_ascii_digit()) {
        "mcp".to_owned()
    } else {
        label
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect()
    };
    let mut name = base.clone();
    let mut counter = 2;
    while taken.iter().any(|source| source.name == name) {
        name = format!("{base}-{counter}");
        counter += 1;
    }
    name
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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

    #[test]
    fn maps_http_and_sse_tools() {
        let config = json!({
            "model": {"type": "openai", "model": "gpt-4o"},
            "description": "d", "instruction": "i",
            "http_tools": [{
                "params": {"url": "http://kagent-tool-server.kagent:8084/mcp",
                           "headers": {"Authorization": "Bearer t"}, "timeout": 5.5,
                           "sse_read_timeout": 300, "terminate_on_close": true},
                "tools": ["k8s_get_resources", "k8s_apply_manifest"],
                "allowed_headers": ["x-user-id"],
                "require_approval": ["k8s_apply_manifest"]
            }, {
                "params": {"url": "http://kagent-tool-server.other:8084/mcp"},
                "tools": []
            }],
            "sse_tools": [{"params": {"url": "http://127.0.0.1:3001/sse"}}]
        });
        let sources = tool_sources(&config).unwrap();
        assert_eq!(
            sources[0],
            McpHttpSpec {
                name: "kagent-tool-server".into(),
                url: "http://kagent-tool-server.kagent:8084/mcp".into(),
                headers: BTreeMap::from([("Authorization".into(), "Bearer t".into())]),
                transport: HttpTransport::StreamableHttp,
                tools: Some(vec![
                    "k8s_get_resources".into(),
                    "k8s_apply_manifest".into()
                ]),
                prefix: None,
                require_approval: vec!["k8s_apply_manifest".into()],
                timeout_secs: Some(300),
                connect_timeout_secs: Some(6),
                approvers: None,
                requester_may_approve: None,
                quorum: None,
                tool_approvers: BTreeMap::new(),
            }
        );
        assert_eq!(sources[1].name, "kagent-tool-server-2");
        assert_eq!(
            sources[1].tools, None,
            "kagent's empty list means every tool"
        );
        assert_eq!(sources[2].name, "mcp");
        assert_eq!(sources[2].transport, HttpTransport::Sse);
        sources[0].check("agents[0].tools[0]").unwrap();
    }

    #[test]
    fn names_a_bad_entry() {
        let error = tool_sources(&json!({"sse_tools": [{"params": {}}]})).unwrap_err();
        assert_eq!(
            error.to_string(),
            "agents file: sse_tools[0].params: missing field `url`"
        );
        assert!(tool_sources(&json!({"description": "no tools"}))
            .unwrap()
            .is_empty());
    }
}
