-- Subagent tasks: a task an agent-tool call of a parent task started on another agent, local or
-- remote. Stored so a restart or another replica goes on waiting for it, forwards decisions to
-- it and propagates a cancel.
CREATE TABLE subagent_tasks (
    parent_task_id  TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    parent_call_id  TEXT NOT NULL,            -- the parent's agent-tool call
    agent           TEXT NOT NULL,            -- namespace/name of the subagent
    child_task_id   TEXT NOT NULL,            -- the subagent's task (ours, or the remote agent's)
    child_context_id TEXT NOT NULL,
    remote          BIGINT NOT NULL,          -- 1: a remote A2A agent's task
    depth           BIGINT NOT NULL,          -- 1 for a subagent of a top-level task
    created_at      TEXT NOT NULL,
    PRIMARY KEY (parent_task_id, parent_call_id)
);
CREATE INDEX subagent_tasks_by_child ON subagent_tasks (child_task_id);
