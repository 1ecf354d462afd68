//! What the integration test crates share, included by each with
//! `#[path = "../support/mod.rs"] mod support;`: the server under test ([`TestApp`]) and the
//! requests made of it, the real binary as a child process, the SSE reader, a strict reader of
//! the Prometheus text, a loopback-only network namespace for tests that name addresses off
//! the machine, the SMTP server the email tests send to, the scripted Anthropic endpoint Claude Code runs against (and the Gemini one Gemini CLI does), the Python MCP SDK's venv, the A2A messages and what the tests
//! read of the answers, and bounded waits.

pub mod a2a;
pub mod anthropic;
pub mod app;
pub mod approvals;
pub mod binary;
pub mod database;
pub mod gemini;
pub mod metrics;
pub mod netns;
pub mod smtp;
pub mod sse;
pub mod venv;
pub mod wait;

pub use a2a::*;
pub use anthropic::*;
pub use app::*;
pub use approvals::*;
pub use binary::*;
pub use database::*;
pub use gemini::*;
pub use metrics::*;
pub use netns::*;
pub use smtp::*;
pub use sse::*;
pub use venv::*;
pub use wait::*;
