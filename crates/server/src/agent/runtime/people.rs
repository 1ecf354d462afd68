//! The directory of people (`store::people`), as the runtime writes and reads it: a person is
//! recorded when they sign in (`--auth oidc`), or when a request authenticated by a proxy or a
//! JWT names their email, once per change (this replica remembers what it last wrote, so a
//! request of someone already recorded writes nothing); and an email channel that writes to
//! approvers reads the members of a batch's approver groups from it.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::agent::notify::{Audience, Member};
use crate::store::{self, BatchRow, PersonRow, TaskRow};

use super::Runtime;
use crate::agent::approvals::Decider;

/// The most people one replica remembers having written; past it, it forgets them all and
/// writes each again at their next request (once).
const REMEMBERED: usize = 10_000;

/// A person as a sign-in or a request named them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub user_id: String,
    pub name: Option<String>,
    pub email: Option<String>,
    pub groups: Vec<String>,
}

/// What this replica last wrote to the directory, by user id.
#[derive(Debug, Default)]
pub(super) struct SeenPeople(Mutex<HashMap<String, Seen>>);

impl SeenPeople {
    /// Whether `seen` differs from what was last written for them; remembered as written.
    fn changed(&self, seen: &Seen) -> bool {
        let mut known = match self.0.lock() {
            Ok(known) => known,
            Err(poisoned) => poisoned.into_inner(),
        };
        if known.get(&seen.user_id) == Some(seen) {
            return false;
        }
        if known.len() >= REMEMBERED {
            known.clear();
        }
        known.insert(seen.user_id.clone(), seen.clone());
        true
    }

    /// Forgets `user_id`, so that their next request writes again (their write failed).
    fn forget(&self, user_id: &str) {
        if let Ok(mut known) = self.0.lock() {
            known.remove(user_id);
        }
    }
}

/// The directory of people, as the runtime's store keeps it and this replica last wrote it:
/// what [`Runtime::directory`] lends.
pub struct Directory<'a> {
    runtime: &'a Runtime,
}

impl Runtime {
    /// The directory of people: who signed in, with which email and groups.
    pub fn directory(&self) -> Directory<'_> {
        Directory { runtime: self }
    }
}

impl Directory<'_> {
    /// Records a sign-in in the directory, whatever this replica wrote before (a sign-in is
    /// rare, and another replica may have written since).
    pub async fn signed_in(&self, seen: Seen) -> store::Result<()> {
        self.runtime.people.changed(&seen);
        let written = self.put_person(&seen).await;
        if written.is_err() {
            self.runtime.people.forget(&seen.user_id);
        }
        written
    }

    /// Records a person a request named with their email, unless this replica wrote them
    /// just so already. A failed write is logged: the request goes on.
    pub async fn saw(&self, seen: Seen) {
        if seen.email.is_none() || !self.runtime.people.changed(&seen) {
            return;
        }
        if let Err(err) = self.put_person(&seen).await {
            self.runtime.people.forget(&seen.user_id);
            tracing::warn!(user = %seen.user_id, error = %err, "could not record a person in the directory");
        }
    }

    async fn put_person(&self, seen: &Seen) -> store::Result<()> {
        self.runtime
            .store
            .put_person(PersonRow {
                user_id: seen.user_id.clone(),
                name: seen.name.clone(),
                email: seen.email.clone(),
                groups: seen.groups.clone(),
                last_seen: store::now(),
            })
            .await
    }

    /// Adds to `audience` the directory's members of its groups, when an email channel writes
    /// to approvers (no read otherwise). A failed read is logged: the others are still told.
    pub(super) async fn add_members(&self, audience: &mut Audience) {
        if audience.groups.is_empty() || !self.runtime.notifications.needs_members() {
            return;
        }
        match self.runtime.store.people_in_groups(&audience.groups).await {
            Ok(people) => {
                audience.members = people
                    .into_iter()
                    .filter_map(|person| {
                        let email = person.email?;
                        Some(Member {
                            id: person.user_id,
                            email,
                        })
                    })
                    .collect();
            }
            Err(err) => {
                tracing::warn!(error = %err, "could not read the members of approver groups")
            }
        }
    }

    /// The id of `task_id`'s waiting batch and who hears of it (`Runtime::audience_of`), when
    /// some channel routes by approvers; `None` otherwise (a failed read is logged: the others
    /// are still told).
    pub(super) async fn waiting_audience(&self, task_id: &str) -> Option<(i64, Audience)> {
        if !self.runtime.notifications.needs_audience() {
            return None;
        }
        let (row, batch) = match self.waiting_batch(task_id).await {
            Ok(found) => found?,
            Err(err) => {
                tracing::warn!(task = %task_id, error = %err, "could not read a waiting batch's approvers");
                return None;
            }
        };
        let requests = batch.requests.as_array().map_or(&[][..], Vec::as_slice);
        let audience = self.runtime.audience_of(&row.agent, requests, &[]).await;
        Some((batch.id, audience))
    }

    /// `task_id`'s row and waiting batch, if it has both.
    async fn waiting_batch(&self, task_id: &str) -> store::Result<Option<(TaskRow, BatchRow)>> {
        let row = self.runtime.store.task(task_id).await?;
        let batch = self.runtime.store.pending_batch(task_id).await?;
        Ok(row.zip(batch))
    }

    /// `user_id` as a decider, with the email and groups the directory holds for them (only
    /// their subject if it holds none): whom a member's decision link decides as.
    pub(super) async fn decider(&self, user_id: &str) -> store::Result<Decider> {
        Ok(match self.runtime.store.person(user_id).await? {
            Some(person) => Decider {
                subject: person.user_id,
                email: person.email,
                groups: person.groups,
                auth: None,
            },
            None => Decider::subject(user_id),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_person_is_written_again_only_when_what_names_them_changed() {
        let seen = SeenPeople::default();
        let alice = Seen {
            user_id: "alice".into(),
            name: None,
            email: Some("alice@example.com".into()),
            groups: vec!["sre".into()],
        };
        assert!(seen.changed(&alice), "the first request writes");
        assert!(!seen.changed(&alice), "the same again writes nothing");
        let moved = Seen {
            groups: vec!["dev".into()],
            ..alice.clone()
        };
        assert!(seen.changed(&moved), "new groups are written");
        seen.forget("alice");
        assert!(
            seen.changed(&moved),
            "a forgotten (failed) write is tried again"
        );
    }
}
