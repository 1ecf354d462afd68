//! Codex's approval requests on the wire (`codex mcp-server`, crates/server/README.md, Codex
//! as a tool). Codex asks with an `elicitation/create` whose extra `codex_*` fields say what it
//! would run or change, and wants `{"decision": ...}` back. rmcp reads an `elicitation/create`
//! into MCP's params, dropping those fields, and answers with MCP's `ElicitResult`, which Codex
//! cannot read (it then denies). So a stdio server's lines pass through [`mark`] first: Codex's
//! approval request is renamed [`METHOD`], which rmcp hands to `asking::AskBack` whole as a
//! custom request, and which is answered in Codex's shape
//! (`signoff_protocol::hitl::codex::decision`). The name never leaves Signoff: Codex matches
//! the answer by its request id.

use serde_json::{json, Value};
use signoff_protocol::hitl::codex;

/// The method Codex's approval requests are read under.
pub const METHOD: &str = "signoff/codex-approval";

/// One line from a stdio server, renamed to [`METHOD`] when it is one of Codex's approval
/// requests; `None` leaves the line as it is.
pub fn mark(line: &str) -> Option<String> {
    // Most lines are not Codex's questions: only one that names the field is parsed.
    if !line.contains(codex::MARK) {
        return None;
    }
    let mut message: Value = serde_json::from_str(line).ok()?;
    let asks = message.get("method").and_then(Value::as_str) == Some("elicitation/create")
        && message.get("params").is_some_and(codex::is_approval);
    if !asks {
        return None;
    }
    message["method"] = json!(METHOD);
    serde_json::to_string(&message).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_codexs_approval_requests_are_renamed() {
        let asked = json!({"jsonrpc": "2.0", "id": 0, "method": "elicitation/create", "params": {
            "message": "Allow Codex to run `ls` in `/w`?",
            "requestedSchema": {"type": "object", "properties": {}},
            "codex_elicitation": "exec-approval", "codex_command": ["ls"], "codex_cwd": "/w"}});
        let renamed: Value = serde_json::from_str(&mark(&asked.to_string()).unwrap()).unwrap();
        assert_eq!(renamed["method"], json!(METHOD));
        assert_eq!(renamed["id"], json!(0));
        assert_eq!(renamed["params"], asked["params"]);
        // A plain form, a notification that mentions the field, and a broken line pass as
        // they are.
        let form = json!({"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": {
            "message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}});
        assert_eq!(mark(&form.to_string()), None);
        let event = json!({"jsonrpc": "2.0", "method": "codex/event", "params": {
            "codex_elicitation": "exec-approval"}});
        assert_eq!(mark(&event.to_string()), None);
        assert_eq!(mark("{\"codex_elicitation\": "), None);
    }
}
