//! Thin views: they render the state and emit intents; they never fetch on their own.

pub mod app;
