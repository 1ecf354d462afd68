//! What the integration test crates share, included by each with
//! `#[path = "../support/mod.rs"] mod support;`: the server under test ([`TestApp`]) and the
//! requests made of it, the SSE reader, the A2A messages and what the tests read of the answers,
//! and bounded waits.

pub mod a2a;
pub mod app;
pub mod database;
pub mod process;
pub mod sse;
pub mod wait;

pub use a2a::*;
pub use app::*;
pub use database::*;
pub use process::*;
pub use sse::*;
pub use wait::*;
