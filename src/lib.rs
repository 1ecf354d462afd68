//! Signoff's browser chat: thin views over a pure reducer, with one module that talks to the
//! server.
//!
//! - [`api`]: the only code that fetches (REST, JSON-RPC, SSE streams).
//! - [`state`]: the view model and the reducer that turns wire events into it; no web types, so
//!   it runs natively in `cargo test`.
//! - [`components`]: views that render the state and emit intents.

pub mod api;
pub mod components;
pub mod markdown;
pub mod state;

pub use components::app::App;
