-- "Always allow" policies and approval deadlines, as in migrations/sqlite/0002.

CREATE TABLE policies (
    id          TEXT PRIMARY KEY NOT NULL,
    user_id     TEXT NOT NULL,
    agent       TEXT NOT NULL,
    tool        TEXT NOT NULL,
    scope       TEXT NOT NULL,            -- chat | agent
    context_id  TEXT,
    args        TEXT,                     -- JSON: argument name -> matcher; NULL: any arguments
    created_by  TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);
CREATE INDEX policies_by_owner ON policies (user_id, agent, revoked_at);

ALTER TABLE batches ADD COLUMN expires_at TEXT;
CREATE INDEX batches_by_deadline ON batches (expires_at) WHERE state = 'pending';
