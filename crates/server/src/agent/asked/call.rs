//! One call asked for from outside, as its task's first transcript entry keeps it: checked
//! when it arrives, and named in a few words for the chat's title.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The longest tool name an asker may give (MCP tool names are short; Claude Code's MCP tools
/// read `mcp__server__tool`).
pub const MAX_TOOL_NAME_BYTES: usize = 200;

/// One call that arrived from outside, as the task's first transcript entry keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskedCall {
    /// The tool, as the agent's rules, grants and policies name it.
    pub name: String,
    /// Its arguments, as the asker proposed them.
    pub args: Value,
    /// The asker's own id of the call (Claude Code's `tool_use_id`), kept as the call's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asker_id: Option<String>,
}

impl AskedCall {
    /// Checks what an asker sent: a tool name and an arguments object.
    pub fn checked(name: &str, args: Value, asker_id: Option<String>) -> Result<AskedCall, String> {
        if name.trim().is_empty() {
            return Err("the tool name is empty".into());
        }
        if name.len() > MAX_TOOL_NAME_BYTES {
            return Err(format!(
                "the tool name is {} bytes; the limit is {MAX_TOOL_NAME_BYTES}",
                name.len()
            ));
        }
        if name.chars().any(char::is_control) {
            return Err("the tool name has control characters".into());
        }
        if !args.is_object() {
            return Err("the arguments must be a JSON object".into());
        }
        Ok(AskedCall {
            name: name.to_owned(),
            args,
            asker_id,
        })
    }
}

impl AskedCall {
    /// The call in a few words, for a chat's title: the tool, and the argument that says most
    /// about it (a command, a path, a URL), cut to one short line.
    pub fn gist(&self) -> String {
        let main = ["command", "file_path", "path", "url", "pattern", "query"]
            .iter()
            .find_map(|key| self.args.get(*key).and_then(Value::as_str));
        match main.and_then(|text| text.lines().next()) {
            Some(line) if line.chars().count() > 80 => {
                let cut: String = line.chars().take(79).collect();
                format!("{} {cut}…", self.name)
            }
            Some(line) => format!("{} {line}", self.name),
            None => self.name.clone(),
        }
    }
}
