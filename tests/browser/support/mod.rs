//! What the browser tests share: the harness (server, browser, page helpers), the loopback
//! stand-in for a kagent agent, the server tests' Python MCP server, and their scripted
//! Anthropic endpoint (the server tests' own module, so both drive Claude Code the same way).

#[allow(dead_code)]
#[path = "../../../crates/server/tests/support/anthropic.rs"]
pub mod anthropic;
pub mod harness;
pub mod kagent;
pub mod mcp;
