//! Browser end-to-end tests, one binary: the release UI from trunk's dist/, the real server
//! in-process on a free port with a fresh data directory, and Debian's headless Chromium driven
//! through chromedriver. Selects by `data-testid`; screenshots land in tests/artifacts/. One
//! binary links the server once; its tests take turns at the browser (`support/harness.rs`).
#![cfg(not(target_arch = "wasm32"))]
// Tests fail loudly: unwrapping is how they report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod accessibility;
mod approvals;
mod asked;
mod by_accident;
mod chat;
mod chunks;
mod coding_agent;
mod email_links;
mod held_back;
mod honest_cards;
mod inbox;
mod ladder;
mod parity;
mod plain_words;
mod policies;
mod previews;
mod questions;
mod quorum;
mod relayed;
mod server_questions;
mod sharing;
mod signin;
mod subagents;
mod web_push;
