//! The directory of people (`people`): each person as their latest recorded sign-in named them
//! (name, email, groups), keyed by the id `--auth` names them by. An email channel that writes
//! to approvers reads it for the members of an approver group; a decision link of a member
//! decides with the groups it holds. Each backend's `people` writes and reads it.

/// A person as their latest recorded sign-in named them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonRow {
    /// The subject: the id chats and decisions are recorded under, and `user:ID` matches.
    pub user_id: String,
    pub name: Option<String>,
    pub email: Option<String>,
    pub groups: Vec<String>,
    /// RFC 3339, as [`super::now`] writes it.
    pub last_seen: String,
}

pub(super) const PERSON_SELECT: &str =
    "SELECT user_id, name, email, groups_json, last_seen FROM people";
