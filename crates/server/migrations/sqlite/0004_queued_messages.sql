-- Messages to a working task, waiting for its next model turn (ARCHITECTURE.md, invariant 4):
-- stored, so a restart or another replica delivers them.
CREATE TABLE queued_messages (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id     TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    message     TEXT NOT NULL,            -- JSON: the A2A message, in the event log's version
    created_at  TEXT NOT NULL
);
CREATE INDEX queued_messages_by_task ON queued_messages (task_id, id);
