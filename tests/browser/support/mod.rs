//! What the browser tests share: the harness (server, browser, page helpers) and the loopback
//! stand-in for a kagent agent.

pub mod harness;
pub mod kagent;
