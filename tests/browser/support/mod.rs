//! What the browser tests share: the harness (server, browser, page helpers), the loopback
//! stand-in for a kagent agent, and the server tests' Python MCP server.

pub mod harness;
pub mod kagent;
pub mod mcp;
