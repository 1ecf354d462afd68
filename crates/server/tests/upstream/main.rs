//! Tests of the server against upstream servers it calls: an OpenAI-compatible model endpoint
//! and remote A2A agents (kagent), each played by a real HTTP server on a loopback port.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod stub;
// Shared by every test crate; each uses part of it.
#[allow(dead_code, unused_imports)]
#[path = "../support/mod.rs"]
mod support;

mod chosen_ids;
mod openai;
mod relay;
mod relayed;
mod relayed_access;
mod subagent;
mod translated;
