//! Signoff's wire contract (docs/wire.md) in Rust: one A2A model, the v0.3 and v1.0 codecs,
//! the human-in-the-loop payloads, the REST answers, and an incremental SSE parser.
//!
//! Serde only: no tokio, no HTTP client, so the browser UI (wasm32) and the server share it.

pub mod canonical;
pub mod codec;
pub mod diff;
pub mod hitl;
pub mod json_keys;
pub mod jsonrpc;
pub mod model;
pub mod receipt;
pub mod redact;
pub mod rest;
pub mod sse;

pub use model::*;
