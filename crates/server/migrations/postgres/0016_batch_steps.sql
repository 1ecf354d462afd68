-- Hand-overs and the deadline ladder of pending batches (crates/server/README.md, Approvers):
-- one row each time a batch is handed to a person or group, reminded, escalated or given a
-- later deadline, written only while the batch is pending. The `to_entries` of hand-over and
-- escalation rows may decide the batch besides the agents file's approvers, on every replica
-- (they are read with the batch). The unique index lets the ladder remind and escalate a batch
-- once, whichever replica's watch fires first.
CREATE TABLE batch_steps (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    batch_id    BIGINT NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    task_id     TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,            -- handover | remind | escalate | extend
    by_user     TEXT,                     -- who; none: the deadline ladder
    to_entries  TEXT NOT NULL,            -- JSON array of group:NAME and user:ID
    note        TEXT,
    expires_at  TEXT,                     -- extend: the new deadline
    from_expires_at TEXT,                 -- extend: the deadline it moved
    created_at  TEXT NOT NULL
);
CREATE INDEX batch_steps_by_batch ON batch_steps (batch_id, id);
CREATE UNIQUE INDEX batch_steps_once ON batch_steps (batch_id, kind)
    WHERE kind IN ('remind', 'escalate');
