-- A subagent's task runs in a session of its own, which its parent's chat shows inside the
-- parent's card: the sidebar's list of chats leaves such sessions out, by this index.
CREATE INDEX subagent_tasks_by_child_context ON subagent_tasks (child_context_id);
