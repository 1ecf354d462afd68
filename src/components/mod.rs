//! Thin views: they render the state and emit intents; only the chat controller calls the
//! network module.

mod account;
mod agent_panel;
pub mod app;
pub mod chat;
mod clamp;
pub mod context;
pub mod controller;
mod feedback;
pub mod inbox;
mod nav;
mod share;
mod sidebar;
mod toasts;
mod tools;
mod util;
