//! The agent list as the UI shows it, read from `GET /api/agents`.
//!
//! Read leniently (missing fields become empty) so that a server that adds fields, or leaves
//! optional ones out, still gets a usable picker.

use serde_json::Value;

/// One tool an agent may call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    /// The MCP server or built-in source the tool comes from.
    pub server: Option<String>,
    /// Calls to this tool wait for a person's decision.
    pub requires_approval: bool,
}

/// One agent the server runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentInfo {
    pub namespace: String,
    pub name: String,
    pub description: String,
    pub model: Option<String>,
    pub tools: Vec<ToolInfo>,
}

impl AgentInfo {
    /// `namespace/name`, the agent's key in routes and lists.
    pub fn reference(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

fn string_at(value: &Value, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|key| value.get(*key).and_then(Value::as_str))
        .map(str::to_owned)
}

fn names_in(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| match item {
                    Value::String(name) => Some(name.clone()),
                    Value::Object(_) => string_at(item, &["name"]),
                    Value::Null | Value::Bool(_) | Value::Number(_) | Value::Array(_) => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

fn read_tool(item: &Value, gated: &[String]) -> Option<ToolInfo> {
    let (name, description, server, flag) = match item {
        Value::String(name) => (name.clone(), String::new(), None, false),
        Value::Object(_) => (
            string_at(item, &["name"])?,
            string_at(item, &["description"]).unwrap_or_default(),
            string_at(item, &["server", "source"]),
            ["requires_approval", "require_approval", "requiresApproval"]
                .iter()
                .any(|key| item.get(*key).and_then(Value::as_bool) == Some(true)),
        ),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::Array(_) => return None,
    };
    let requires_approval = flag || gated.contains(&name);
    Some(ToolInfo {
        name,
        description,
        server,
        requires_approval,
    })
}

fn read_agent(item: &Value) -> Option<AgentInfo> {
    let name = string_at(item, &["name"])?;
    let namespace = string_at(item, &["namespace"]).unwrap_or_else(|| "default".to_owned());
    let gated = names_in(
        [
            "require_approval",
            "requireApproval",
            "requires_approval",
            "approval_required",
        ]
        .iter()
        .find_map(|key| item.get(*key)),
    );
    let tools = item
        .get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| read_tool(tool, &gated))
                .collect()
        })
        .unwrap_or_default();
    let model = match item.get("model") {
        Some(Value::String(model)) => Some(model.clone()),
        Some(model @ Value::Object(_)) => string_at(model, &["name", "model", "kind"]),
        Some(Value::Null | Value::Bool(_) | Value::Number(_) | Value::Array(_)) | None => None,
    };
    Some(AgentInfo {
        namespace,
        name,
        description: string_at(item, &["description"]).unwrap_or_default(),
        model,
        tools,
    })
}

/// Reads the body of `GET /api/agents`: a list, or an object holding one under `agents`.
pub fn parse_agents(body: &Value) -> Vec<AgentInfo> {
    let list = match body {
        Value::Array(list) => list,
        Value::Object(map) => match map.get("agents") {
            Some(Value::Array(list)) => list,
            Some(_) | None => return Vec::new(),
        },
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => return Vec::new(),
    };
    list.iter().filter_map(read_agent).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_tools_with_their_approval_flag_in_either_shape() {
        let body = json!({"agents": [
            {"namespace": "default", "name": "demo", "description": "Files", "model": "scripted",
             "tools": [{"name": "read_file", "description": "Read"},
                       {"name": "write_file", "requires_approval": true, "server": "files"},
                       "delete_file"],
             "require_approval": ["delete_file"]},
            {"description": "no name: skipped"}
        ]});
        let agents = parse_agents(&body);
        assert_eq!(agents.len(), 1);
        let demo = &agents[0];
        assert_eq!(demo.reference(), "default/demo");
        assert_eq!(demo.model.as_deref(), Some("scripted"));
        let gated: Vec<(&str, bool)> = demo
            .tools
            .iter()
            .map(|tool| (tool.name.as_str(), tool.requires_approval))
            .collect();
        assert_eq!(
            gated,
            [
                ("read_file", false),
                ("write_file", true),
                ("delete_file", true)
            ]
        );
        assert_eq!(demo.tools[1].server.as_deref(), Some("files"));
    }

    #[test]
    fn a_bare_list_reads_too_and_junk_reads_as_empty() {
        assert_eq!(
            parse_agents(&json!([{"name": "a"}]))[0].namespace,
            "default"
        );
        assert!(parse_agents(&json!("nope")).is_empty());
    }
}
