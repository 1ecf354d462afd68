//! The agent runtime: the turn loop, the approval gate, decisions, models and tools.
//! It never imports axum; it talks to the store and nothing else below it.

pub mod acp;
pub mod approvals;
pub mod ask;
pub mod asked;
mod build;
pub mod cedar;
pub mod config;
pub mod conformance;
pub mod decision;
mod error;
pub mod files;
pub mod mcp;
pub mod metrics;
pub mod model;
pub mod narrow;
pub mod notify;
pub mod openai;
pub mod pins;
pub mod policy;
pub mod receipts;
pub mod remote;
pub mod reviewer;
pub mod runtime;
pub mod schema;
pub mod scripted;
pub mod subagents;
pub mod tools;
pub mod view;

pub use build::build_agents;
pub use config::{AgentsFile, ConfigError};
pub use runtime::{
    Agent, AgentError, Asking, BatchSummary, DecidedBy, Decider, LadderEvent, Limits, LinkAction,
    LinkDecision, LinkState, NotReady, Runtime, Seen, ShareGrant, SlackAnswer, SlackClick,
    SlackRejection,
};
