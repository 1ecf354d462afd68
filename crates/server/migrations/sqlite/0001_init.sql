-- Signoff's store. Every task transition is written here before it is announced
-- (ARCHITECTURE.md, invariant 4); streams are read back from `task_events`.

-- A session is one A2A contextId, talking to one agent, owned by one user.
CREATE TABLE sessions (
    id          TEXT PRIMARY KEY NOT NULL,
    user_id     TEXT NOT NULL,
    agent       TEXT NOT NULL,            -- "namespace/name"
    title       TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX sessions_by_user ON sessions (user_id, updated_at);

CREATE TABLE tasks (
    seq_no      INTEGER PRIMARY KEY AUTOINCREMENT, -- creation order, for listing a session's tasks
    id          TEXT NOT NULL UNIQUE,
    context_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    user_id     TEXT NOT NULL,
    agent       TEXT NOT NULL,
    state       TEXT NOT NULL,            -- the A2A state, v0.3 spelling
    transcript  TEXT NOT NULL,            -- JSON: the conversation as the model sees it
    last_seq    INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX tasks_by_context ON tasks (context_id, seq_no);
CREATE INDEX tasks_by_user ON tasks (user_id, seq_no);
CREATE INDEX tasks_by_state ON tasks (state);

-- The stream of each task, exactly as announced (encoded as A2A v0.3 events).
CREATE TABLE task_events (
    task_id     TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    event       TEXT NOT NULL,
    is_final    INTEGER NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (task_id, seq)
);

-- A batch of held tool calls waiting for a decision. The partial unique index keeps at most one
-- pending batch per task; deciding is a compare-and-set on `state` (invariant 5).
CREATE TABLE batches (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id     TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    state       TEXT NOT NULL,            -- pending | decided | canceled
    requests    TEXT NOT NULL,            -- JSON array of action requests
    created_at  TEXT NOT NULL,
    decided_at  TEXT
);
CREATE UNIQUE INDEX one_pending_batch_per_task ON batches (task_id) WHERE state = 'pending';

-- The audit trail: who decided which batch, when, through which channel.
CREATE TABLE decisions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    batch_id    INTEGER NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    task_id     TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    user_id     TEXT NOT NULL,
    channel     TEXT NOT NULL,            -- a2a | text | rest | cancel
    decision    TEXT NOT NULL,            -- JSON: the decision as given
    summary     TEXT NOT NULL,
    decided_at  TEXT NOT NULL
);
CREATE INDEX decisions_by_user ON decisions (user_id, id);

-- Every tool call the model asked for, with its verdict and execution record. `started_at`
-- without `finished_at` after a crash means the call may have run: it is reported as failed,
-- never re-run (exactly once across restarts).
CREATE TABLE calls (
    task_id         TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    call_id         TEXT NOT NULL,
    position        INTEGER NOT NULL,
    name            TEXT NOT NULL,
    source          TEXT NOT NULL,
    args            TEXT NOT NULL,        -- JSON, as proposed by the model
    args_sha256     TEXT NOT NULL,
    batch_id        INTEGER REFERENCES batches (id),
    status          TEXT NOT NULL,        -- auto | held | approved | rejected | canceled | started | finished
    verdict         TEXT,                 -- approve | deny | cancel, as decided (kept after the call runs)
    reason          TEXT,                 -- rejection reason
    run_args        TEXT,                 -- JSON, as run (edited or proposed)
    run_args_sha256 TEXT,
    result          TEXT,                 -- JSON response given to the model
    started_at      TEXT,
    finished_at     TEXT,
    PRIMARY KEY (task_id, call_id)
);
