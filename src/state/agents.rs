//! The agent list as the UI shows it, made from `GET /api/agents` (the protocol crate's
//! [`AgentList`], which refuses an answer that lacks a field rather than showing blanks).

use signoff_protocol::rest::{AgentEntry, AgentList};

/// One tool an agent may call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    /// The MCP server or built-in source the tool comes from.
    pub server: Option<String>,
    /// Calls to this tool wait for a person's decision.
    pub requires_approval: bool,
    /// Who must approve them, in the server's words, when it said.
    pub approval: Option<String>,
}

/// One skill a remote agent's card lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillInfo {
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
}

/// One agent the server runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentInfo {
    pub namespace: String,
    pub name: String,
    pub description: String,
    pub model: Option<String>,
    pub tools: Vec<ToolInfo>,
    /// A remote A2A agent reached through the server's relay: it publishes no tools and no
    /// approval settings, only the skills of its card.
    pub remote: bool,
    pub skills: Vec<SkillInfo>,
    /// Whether Stop can cancel its task (kagent 0.10 cannot: "Cancellation is not supported").
    pub cancelable: bool,
    /// It answers permission prompts: programs ask it about tools it does not run itself.
    pub answers_prompts: bool,
}

impl AgentInfo {
    /// `namespace/name`, the agent's key in routes and lists.
    pub fn reference(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

impl From<AgentEntry> for AgentInfo {
    fn from(entry: AgentEntry) -> Self {
        let AgentEntry {
            namespace,
            name,
            description,
            tools,
            require_approval,
            remote,
            skills,
            cancelable,
            answers_prompts,
            ..
        } = entry;
        let tools = tools
            .into_iter()
            .map(|tool| ToolInfo {
                requires_approval: tool.requires_approval || require_approval.contains(&tool.name),
                name: tool.name,
                description: tool.description,
                server: Some(tool.source),
                approval: tool.approval,
            })
            .collect();
        AgentInfo {
            namespace,
            name,
            description,
            // The agents list does not name models.
            model: None,
            tools,
            remote,
            skills: skills
                .unwrap_or_default()
                .into_iter()
                .map(|skill| SkillInfo {
                    name: skill.name,
                    description: skill.description,
                    tags: skill.tags,
                })
                .collect(),
            cancelable: cancelable != Some(false),
            answers_prompts: answers_prompts == Some(true),
        }
    }
}

/// The agents of a `GET /api/agents` answer, in its order.
pub fn agents_of(list: AgentList) -> Vec<AgentInfo> {
    list.agents.into_iter().map(AgentInfo::from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tools_carry_their_source_and_approval_flag() {
        let body = json!({"agents": [
            {"namespace": "default", "name": "demo", "description": "Files",
             "url": "/api/a2a/default/demo",
             "cardUrl": "/api/a2a/default/demo/.well-known/agent-card.json",
             "tools": [
                {"name": "read_file", "description": "Read", "source": "files", "requiresApproval": false},
                {"name": "write_file", "description": "Write", "source": "files", "requiresApproval": true},
                {"name": "delete_file", "description": "Delete", "source": "files", "requiresApproval": false}],
             "requireApproval": ["write_file", "delete_file"],
             "unavailableSources": [],
             "remote": false},
            {"namespace": "kagent", "name": "k8s", "description": "",
             "url": "/api/a2a/kagent/k8s",
             "cardUrl": "/api/a2a/kagent/k8s/.well-known/agent-card.json",
             "tools": [], "requireApproval": [], "remote": true, "reachable": true,
             "skills": [{"name": "Pods", "description": "Lists pods", "tags": ["k8s"]}],
             "cancelable": false}
        ]});
        let list: AgentList = serde_json::from_value(body).unwrap();
        let agents = agents_of(list);
        assert_eq!(agents.len(), 2);
        let demo = &agents[0];
        assert_eq!(demo.reference(), "default/demo");
        assert_eq!(demo.model, None);
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
        assert_eq!(agents[1].reference(), "kagent/k8s");
        assert!(demo.cancelable && !demo.remote, "a local agent can cancel");
        let remote = &agents[1];
        assert!(remote.remote && !remote.cancelable);
        assert_eq!(
            remote.skills,
            [SkillInfo {
                name: "Pods".into(),
                description: "Lists pods".into(),
                tags: vec!["k8s".into()],
            }]
        );
    }
}
