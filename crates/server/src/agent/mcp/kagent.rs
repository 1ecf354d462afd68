//! kagent's AgentConfig JSON names its MCP servers in `http_tools` (streamable HTTP) and
//! `sse_tools` (legacy SSE), each `{params: {url, headers, timeout, sse_read_timeout}, tools,
//! require_approval}`; this maps them onto `mcp_http` sources. kagent's `tools: []` means all
//! tools, its `timeout` (seconds, float) is the connect timeout and `sse_read_timeout` the
//! longest wait for a call's answer. `allowed_headers` (forwarding the A2A caller's headers) has
//! no equivalent here and is ignored.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::{HttpTransport, McpHttpSpec};
use crate::agent::config::ConfigError;

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
            serde_path_to_error::deserialize(entries).map_err(|error| ConfigError::Invalid {
                path: format!("{field}{}", bracketed(&error.path().to_string())),
                message: error.into_inner().to_string(),
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
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

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
