//! Tests of the server against upstream servers it calls: an OpenAI-compatible model endpoint
//! and remote A2A agents (kagent), each played by a real HTTP server on a loopback port.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod openai;
mod relay;
