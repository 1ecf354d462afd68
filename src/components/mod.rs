//! Thin views: they render the state and emit intents. Every request goes through `crate::api`:
//! a chat's through its controller (`controller`), the rest (lists, policies, shares, feedback,
//! the account, the approvals stream, the tools held back) from the component that owns the
//! action.

mod account;
mod agent_panel;
pub mod app;
pub mod chat;
mod clamp;
pub mod context;
pub mod controller;
mod devices;
mod feedback;
mod held_back;
pub mod inbox;
mod lazy;
mod nav;
mod share;
mod sidebar;
mod theme;
mod toasts;
mod tools;
mod util;
