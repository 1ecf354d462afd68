//! The cross-tab guard's comparison: whether a chat's stored tasks show that it moved on
//! without this view (another tab or person sent, decided, or a turn went on), so a send now
//! would be blind.

use signoff_protocol::Task;

use super::ChatView;

/// Whether `stored` (the chat's tasks as the server has them now) holds a task this view never
/// saw, or a task in another state than the view shows. The task this view is streaming is
/// left out of the state check: the server is ahead of an open stream by design.
pub fn moved_on(view: &ChatView, stored: &[Task]) -> bool {
    let streaming = view
        .status
        .is_busy()
        .then_some(view.task_id.as_ref())
        .flatten();
    stored
        .iter()
        .any(|task| match view.task_states.get(&task.id) {
            None => true,
            Some(state) => Some(&task.id) != streaming && *state != task.status.state,
        })
}

#[cfg(test)]
mod tests {
    use signoff_protocol::{Message, Part, Role, TaskState, TaskStatus};

    use super::*;
    use crate::state::{replay, ChatStatus};

    fn task(id: &str, state: TaskState) -> Task {
        Task {
            id: id.to_owned(),
            context_id: "s-1".to_owned(),
            status: TaskStatus {
                state,
                message: None,
                timestamp: None,
            },
            history: vec![Message::new(
                format!("{id}-m"),
                Role::User,
                vec![Part::text("hi")],
            )],
            artifacts: Vec::new(),
            metadata: None,
        }
    }

    #[test]
    fn the_same_tasks_in_the_same_states_have_not_moved() {
        let stored = [
            task("t-1", TaskState::Completed),
            task("t-2", TaskState::InputRequired),
        ];
        let view = replay(&stored);
        assert!(!moved_on(&view, &stored));
    }

    #[test]
    fn a_task_this_view_never_saw_or_a_changed_state_has_moved() {
        let view = replay(&[task("t-1", TaskState::Completed)]);
        let newer = [
            task("t-1", TaskState::Completed),
            task("t-2", TaskState::Working),
        ];
        assert!(moved_on(&view, &newer), "another tab started a turn");
        let paused = replay(&[task("t-1", TaskState::InputRequired)]);
        assert!(
            moved_on(&paused, &[task("t-1", TaskState::Working)]),
            "another tab decided the pending batch"
        );
    }

    #[test]
    fn the_task_this_view_streams_may_be_ahead_on_the_server() {
        let mut view = replay(&[task("t-1", TaskState::Working)]);
        view.status = ChatStatus::Working;
        assert!(!moved_on(&view, &[task("t-1", TaskState::InputRequired)]));
        view.status = ChatStatus::Ready;
        assert!(moved_on(&view, &[task("t-1", TaskState::InputRequired)]));
    }
}
