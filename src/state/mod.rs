//! The UI's state: plain data and pure functions, with no web or Leptos types, so tests run it
//! natively over recorded streams.

pub mod account;
pub mod agents;
pub mod compose;
pub mod draft;
pub mod feedback;
pub mod group;
pub mod guard;
pub mod held_back;
pub mod hidden;
pub mod inbox;
pub mod keyed;
pub mod ladder;
pub mod nesting;
pub mod policy;
pub mod preview;
pub mod readable;
mod reduce;
pub mod route;
pub mod routing;
pub mod sessions;
pub mod tabs;
mod tools;
pub mod view;
pub mod why;

pub use reduce::{apply, replay};

#[cfg(test)]
mod extension_tests;
#[cfg(test)]
mod question_tests;
#[cfg(test)]
mod tests;
pub use view::{
    ChatStatus, ChatView, Item, ItemKind, PendingBatch, ToolCallView, ToolStatus, Usage,
};
