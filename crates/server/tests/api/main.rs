//! Integration tests of the server: a real server on port 0, a fresh SQLite database in a
//! temporary folder, the scripted model, and reqwest as the client.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// Shared by every test crate; each uses part of it.
#[allow(dead_code, unused_imports)]
#[path = "../support/mod.rs"]
mod support;

mod a2a;
mod approvals_stream;
mod auth;
mod cancel_calls;
mod cedar;
mod cedar_counts;
mod conformance;
mod conformance_agent;
mod edits;
mod email;
mod expiry;
mod feedback;
mod handover;
mod hitl;
mod hostile;
mod idle;
mod ladder;
mod links;
mod live;
mod migrations;
mod notifications;
mod ops;
mod policies;
mod policy_replay;
mod previews;
mod push;
mod questions;
mod quorum;
mod rebinding;
mod receipts;
mod release;
mod requests;
mod rest;
mod restart;
mod reviewer;
mod rules;
mod shares;
mod slack;
mod slack_app;
mod slow_clients;
mod store;
mod store_contract;
mod streams;
mod subagents;
mod traces;
mod web_push;
