//! Ratings of answers as the chat knows them: which row holds a task's answer, and the rating
//! a stored task carries (`metadata.signoff_feedback`, docs/rest.md, Feedback).

use signoff_protocol::hitl::keys::SIGNOFF_FEEDBACK;
use signoff_protocol::{Task, TaskState};

use super::{ChatView, ItemKind};

pub use signoff_protocol::rest::Rating;

/// The person's newest rating of a stored task's answer, if any.
pub fn stored_rating(task: &Task) -> Option<Rating> {
    // Only the newest entry's rating is read (no whole `Feedback` decode: less UI code).
    let ratings = task.metadata.as_ref()?.get(SIGNOFF_FEEDBACK)?.as_array()?;
    Rating::parse(ratings.last()?.get("rating")?.as_str()?)
}

/// The task whose answer a transcript row (its `items`) shows, when it can be rated: the task
/// completed, and the row holds its last agent item (earlier ones led to tool calls).
pub fn rateable_task(view: &ChatView, items: &[String]) -> Option<String> {
    items.iter().find_map(|key| {
        let item = view.item(key)?;
        let task = item.task_id.as_ref()?;
        if item.kind != ItemKind::Agent
            || item.streaming
            || view.task_states.get(task) != Some(&TaskState::Completed)
        {
            return None;
        }
        let last = view
            .items
            .iter()
            .rev()
            .find(|item| item.kind == ItemKind::Agent && item.task_id.as_ref() == Some(task))?;
        (last.key == *key).then(|| task.clone())
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use signoff_protocol::{Message, Part, Role, TaskStatus};

    use super::*;
    use crate::state::replay;

    fn task(id: &str, state: TaskState, answers: &[&str]) -> Task {
        let mut history = vec![Message::new(
            format!("{id}-q"),
            Role::User,
            vec![Part::text("q")],
        )];
        for (at, answer) in answers.iter().enumerate() {
            history.push(Message::new(
                format!("{id}-a{at}"),
                Role::Agent,
                vec![Part::text(*answer)],
            ));
        }
        Task {
            id: id.to_owned(),
            context_id: "s-1".to_owned(),
            status: TaskStatus {
                state,
                message: None,
                timestamp: None,
            },
            history,
            artifacts: Vec::new(),
            metadata: None,
        }
    }

    #[test]
    fn only_the_last_answer_of_a_completed_task_is_rateable() {
        let view = replay(&[
            task("t-1", TaskState::Completed, &["first", "last"]),
            task("t-2", TaskState::Working, &["so far"]),
        ]);
        let keys: Vec<String> = view.items.iter().map(|item| item.key.clone()).collect();
        let rateable: Vec<Option<String>> = keys
            .iter()
            .map(|key| rateable_task(&view, std::slice::from_ref(key)))
            .collect();
        let t1 = Some("t-1".to_owned());
        assert_eq!(rateable, vec![None, None, t1, None, None], "{keys:?}");
    }

    #[test]
    fn a_stored_task_carries_its_newest_rating() {
        let mut stored = task("t-1", TaskState::Completed, &["a"]);
        assert_eq!(stored_rating(&stored), None);
        let entry = |rating: &str| {
            json!({"id": "f", "task_id": "t-1", "context_id": "s-1", "message_id": null,
                   "rating": rating, "reason": null, "created_by": "local",
                   "created_at": "2026-11-23T00:00:00.000Z"})
        };
        let mut metadata = serde_json::Map::new();
        metadata.insert(
            SIGNOFF_FEEDBACK.to_owned(),
            json!([entry("down"), entry("up")]),
        );
        stored.metadata = Some(metadata);
        assert_eq!(stored_rating(&stored), Some(Rating::Up));
        assert_eq!(replay(&[stored]).ratings.get("t-1"), Some(&Rating::Up));
    }
}
