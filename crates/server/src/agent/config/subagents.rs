//! Agents as tools (`agents = ["default/writer"]`): the checks on an agent's subagents when the
//! file is loaded (each names an agent of the file, no agent reaches itself), and the tool name
//! each one gets.

use std::collections::BTreeMap;

use super::{AgentsFile, ConfigError};

/// The one argument of an agent-tool: the text the subagent gets as its message.
pub const AGENT_TOOL_ARG: &str = "request";

/// The tool name of the agent `namespace/name`: OpenAI's tool-name rules (letters, digits,
/// `_`, `-`, at most 64), so `default/writer` is `default__writer` and `my.ns/x` is `my_ns__x`.
pub fn agent_tool_name(agent_ref: &str) -> String {
    let name: String = agent_ref
        .replacen('/', "__", 1)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    name.chars().take(64).collect()
}

/// Each `agents` entry names another agent of the file, once; a remote agent has none; and no
/// agent reaches itself through them (the cycle is named).
pub(super) fn check(file: &AgentsFile) -> Result<(), ConfigError> {
    let index_of: BTreeMap<String, usize> = file
        .agents
        .iter()
        .enumerate()
        .map(|(index, agent)| (format!("{}/{}", agent.namespace, agent.name), index))
        .collect();
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); file.agents.len()];
    for (index, agent) in file.agents.iter().enumerate() {
        let at = format!("agents[{index}].agents");
        if agent.remote.is_some() && !agent.agents.is_empty() {
            return Err(ConfigError::invalid(
                at,
                "a remote agent uses its own subagents; remove `agents`",
            ));
        }
        for (entry, agent_ref) in agent.agents.iter().enumerate() {
            let at = format!("{at}[{entry}]");
            let Some(&target) = index_of.get(agent_ref) else {
                return Err(ConfigError::invalid(
                    at,
                    format!(
                        "{agent_ref:?} is not an agent of this file (write namespace/name of a \
                         local or remote agent declared here)"
                    ),
                ));
            };
            if edges[index].contains(&target) {
                return Err(ConfigError::invalid(
                    at,
                    format!("{agent_ref} is listed twice"),
                ));
            }
            edges[index].push(target);
        }
        let names: Vec<String> = agent.agents.iter().map(|r| agent_tool_name(r)).collect();
        if let Some(name) = names
            .iter()
            .enumerate()
            .find_map(|(i, name)| names[..i].contains(name).then_some(name))
        {
            return Err(ConfigError::invalid(
                at,
                format!("two subagents get the same tool name {name}"),
            ));
        }
    }
    if let Some(cycle) = find_cycle(&edges) {
        let names: Vec<String> = cycle
            .iter()
            .map(|&index| {
                let agent = &file.agents[index];
                format!("{}/{}", agent.namespace, agent.name)
            })
            .collect();
        return Err(ConfigError::invalid(
            format!("agents[{}].agents", cycle[0]),
            format!(
                "subagents form a cycle: {}; an agent may not reach itself",
                names.join(" -> ")
            ),
        ));
    }
    Ok(())
}

/// A cycle of the graph, as the agents on it with the first repeated at the end.
fn find_cycle(edges: &[Vec<usize>]) -> Option<Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    fn visit(
        node: usize,
        edges: &[Vec<usize>],
        marks: &mut [Mark],
        path: &mut Vec<usize>,
    ) -> Option<Vec<usize>> {
        marks[node] = Mark::OnPath;
        path.push(node);
        for &next in &edges[node] {
            match marks[next] {
                Mark::OnPath => {
                    let start = path.iter().position(|&on| on == next).unwrap_or(0);
                    let mut cycle = path[start..].to_vec();
                    cycle.push(next);
                    return Some(cycle);
                }
                Mark::New => {
                    if let Some(cycle) = visit(next, edges, marks, path) {
                        return Some(cycle);
                    }
                }
                Mark::Done => {}
            }
        }
        path.pop();
        marks[node] = Mark::Done;
        None
    }
    let mut marks = vec![Mark::New; edges.len()];
    for node in 0..edges.len() {
        if marks[node] == Mark::New {
            if let Some(cycle) = visit(node, edges, &mut marks, &mut Vec::new()) {
                return Some(cycle);
            }
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        AgentsFile::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn a_cycle_of_subagents_is_refused_and_named() {
        let err = error(
            "[[agents]]\nname = \"a\"\nagents = [\"default/b\"]\n\
             [[agents]]\nname = \"b\"\nagents = [\"default/c\"]\n\
             [[agents]]\nname = \"c\"\nagents = [\"default/a\"]\n",
        );
        assert_eq!(
            err,
            "agents file: agents[0].agents: subagents form a cycle: default/a -> default/b -> \
             default/c -> default/a; an agent may not reach itself"
        );
        let own = error("[[agents]]\nname = \"a\"\nagents = [\"default/a\"]\n");
        assert!(own.contains("default/a -> default/a"), "{own}");
    }

    #[test]
    fn a_subagent_must_be_an_agent_of_the_file() {
        assert_eq!(
            error("[[agents]]\nname = \"a\"\nagents = [\"default/nobody\"]\n"),
            "agents file: agents[0].agents[0]: \"default/nobody\" is not an agent of this file \
             (write namespace/name of a local or remote agent declared here)"
        );
        let file = AgentsFile::parse(
            "[[agents]]\nname = \"a\"\nagents = [\"default/b\", \"kagent/k8s\"]\n\
             [[agents]]\nname = \"b\"\n\
             [[agents]]\nname = \"k8s\"\nnamespace = \"kagent\"\nremote = { url = \"http://x/\" }\n",
        )
        .unwrap();
        assert_eq!(file.agents[0].agents.len(), 2);
    }

    #[test]
    fn tool_names_follow_the_tool_name_rules() {
        assert_eq!(agent_tool_name("default/writer"), "default__writer");
        assert_eq!(agent_tool_name("my.ns/x"), "my_ns__x");
        assert_eq!(agent_tool_name(&format!("a/{}", "b".repeat(90))).len(), 64);
    }
}
