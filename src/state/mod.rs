//! The UI's state: plain data and pure functions, with no web or Leptos types, so tests run it
//! natively over recorded streams.

pub mod agents;
