-- Ids from the rowid instead of AUTOINCREMENT, and a deadline index of deadlines only.
--
-- AUTOINCREMENT kept each table's highest id ever in `sqlite_sequence`: every insert into
-- tasks, batches, decisions, queued_messages or approval_events read that table and rewrote a
-- row of it, so nearly every commit carried one more page. A plain INTEGER PRIMARY KEY takes the
-- highest id in the table plus one: ids still grow in commit order while their newest row
-- stays, and approval events (whose ids a stream resumes after) are never deleted. An id is
-- given again only after the rows with the highest ids were deleted with their chat, and
-- nothing finds a deleted chat's rows by such a number: a decision's compare-and-set names the
-- batch's task too, and a deleted chat's approval events, which keep their batch ids, show a
-- batch only with its task (deleted in the same commit as its batches).
--
-- SQLite cannot drop AUTOINCREMENT in place: each table is rebuilt (created anew, every row
-- copied with its id, the old one dropped, the new one renamed) and its indexes made again.
-- Foreign keys are not enforced on the server's connections, so dropping the old tasks table
-- deletes none of the rows that refer to it, and the references name the table, which is
-- `tasks` again after the rename.

CREATE TABLE tasks_new (
    seq_no      INTEGER PRIMARY KEY,      -- creation order, for listing a session's tasks
    id          TEXT NOT NULL UNIQUE,
    context_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    user_id     TEXT NOT NULL,
    agent       TEXT NOT NULL,
    state       TEXT NOT NULL,            -- the A2A state, v0.3 spelling
    transcript  TEXT NOT NULL,            -- JSON: the conversation as the model sees it
    last_seq    INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    lease_owner TEXT,
    lease_until TEXT,
    remote      INTEGER NOT NULL DEFAULT 0
);
INSERT INTO tasks_new (seq_no, id, context_id, user_id, agent, state, transcript, last_seq,
                       created_at, updated_at, lease_owner, lease_until, remote)
    SELECT seq_no, id, context_id, user_id, agent, state, transcript, last_seq,
           created_at, updated_at, lease_owner, lease_until, remote
    FROM tasks;
DROP TABLE tasks;
ALTER TABLE tasks_new RENAME TO tasks;
CREATE INDEX tasks_by_context ON tasks (context_id, seq_no);
CREATE INDEX tasks_by_user ON tasks (user_id, seq_no);
CREATE INDEX tasks_by_state ON tasks (state);

CREATE TABLE batches_new (
    id          INTEGER PRIMARY KEY,
    task_id     TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    state       TEXT NOT NULL,            -- pending | decided | canceled
    requests    TEXT NOT NULL,            -- JSON array of action requests
    created_at  TEXT NOT NULL,
    decided_at  TEXT,
    expires_at  TEXT                      -- RFC 3339, UTC; NULL: it waits as long as it takes
);
INSERT INTO batches_new (id, task_id, state, requests, created_at, decided_at, expires_at)
    SELECT id, task_id, state, requests, created_at, decided_at, expires_at FROM batches;
DROP TABLE batches;
ALTER TABLE batches_new RENAME TO batches;
CREATE UNIQUE INDEX one_pending_batch_per_task ON batches (task_id) WHERE state = 'pending';
-- Only the pending batches that have a deadline: most have none, and the index of every pending
-- batch took an entry when a batch opened and lost it when it was decided, for nothing.
CREATE INDEX batches_by_deadline ON batches (expires_at)
    WHERE state = 'pending' AND expires_at IS NOT NULL;

CREATE TABLE decisions_new (
    id          INTEGER PRIMARY KEY,
    batch_id    INTEGER NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    task_id     TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    user_id     TEXT NOT NULL,
    channel     TEXT NOT NULL,            -- a2a | text | rest | cancel
    decision    TEXT NOT NULL,            -- JSON: the decision as given
    summary     TEXT NOT NULL,
    decided_at  TEXT NOT NULL
);
INSERT INTO decisions_new (id, batch_id, task_id, user_id, channel, decision, summary, decided_at)
    SELECT id, batch_id, task_id, user_id, channel, decision, summary, decided_at FROM decisions;
DROP TABLE decisions;
ALTER TABLE decisions_new RENAME TO decisions;
CREATE INDEX decisions_by_user ON decisions (user_id, id);

CREATE TABLE queued_messages_new (
    id          INTEGER PRIMARY KEY,
    task_id     TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    message     TEXT NOT NULL,            -- JSON: the A2A message, in the event log's version
    created_at  TEXT NOT NULL
);
INSERT INTO queued_messages_new (id, task_id, message, created_at)
    SELECT id, task_id, message, created_at FROM queued_messages;
DROP TABLE queued_messages;
ALTER TABLE queued_messages_new RENAME TO queued_messages;
CREATE INDEX queued_messages_by_task ON queued_messages (task_id, id);

CREATE TABLE approval_events_new (
    seq         INTEGER PRIMARY KEY,
    user_id     TEXT NOT NULL,            -- the task's owner: who may decide
    task_id     TEXT NOT NULL,
    context_id  TEXT NOT NULL,
    batch_id    INTEGER NOT NULL,
    kind        TEXT NOT NULL,            -- pending | decided
    outcome     TEXT,                     -- decided: a2a | text | rest | cancel | expiry | deleted
    decided_by  TEXT,                     -- decided: who (none for a deleted session)
    created_at  TEXT NOT NULL
);
INSERT INTO approval_events_new (seq, user_id, task_id, context_id, batch_id, kind, outcome,
                                 decided_by, created_at)
    SELECT seq, user_id, task_id, context_id, batch_id, kind, outcome, decided_by, created_at
    FROM approval_events;
DROP TABLE approval_events;
ALTER TABLE approval_events_new RENAME TO approval_events;
CREATE INDEX approval_events_by_user ON approval_events (user_id, seq);
