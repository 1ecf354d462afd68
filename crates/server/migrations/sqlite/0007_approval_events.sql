-- The approvals stream (docs/rest.md, Approvals stream): one row each time a batch starts
-- waiting (`pending`) or stops waiting (`decided`: a decision, a cancel, an expiry, or its
-- session deleted), written in the transaction that makes the change. `seq` is the event's id
-- on the stream: one writer commits at a time, so ids grow in commit order and a reader that
-- resumes after an id misses nothing. No foreign keys: the events of a deleted session stay.
CREATE TABLE approval_events (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id     TEXT NOT NULL,            -- the task's owner: who may decide
    task_id     TEXT NOT NULL,
    context_id  TEXT NOT NULL,
    batch_id    INTEGER NOT NULL,
    kind        TEXT NOT NULL,            -- pending | decided
    outcome     TEXT,                     -- decided: a2a | text | rest | cancel | expiry | deleted
    decided_by  TEXT,                     -- decided: who (none for a deleted session)
    created_at  TEXT NOT NULL
);
CREATE INDEX approval_events_by_user ON approval_events (user_id, seq);
