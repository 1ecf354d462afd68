-- "Always allow" policies and approval deadlines (crates/server/README.md, Policies and
-- Expiry).

-- A person's standing approval of one tool's calls: in one chat (`context_id`) or in every
-- chat of the agent, for its owner only. Revoking keeps the row (the audit names its id) and
-- every later call reads the table again, so a revoke counts on every replica at once.
CREATE TABLE policies (
    id          TEXT PRIMARY KEY NOT NULL,
    user_id     TEXT NOT NULL,            -- whose calls it approves
    agent       TEXT NOT NULL,            -- "namespace/name"
    tool        TEXT NOT NULL,
    scope       TEXT NOT NULL,            -- chat | agent
    context_id  TEXT,                     -- the chat of a chat policy
    args        TEXT,                     -- JSON: argument name -> matcher; NULL: any arguments
    created_by  TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);
CREATE INDEX policies_by_owner ON policies (user_id, agent, revoked_at);

-- When a pending batch expires unanswered (RFC 3339, UTC); NULL: it waits as long as it takes.
-- Expiring is the same compare-and-set as deciding, so a restart that finds a deadline passed
-- expires the batch once, and a decision that lost to it is refused.
ALTER TABLE batches ADD COLUMN expires_at TEXT;
CREATE INDEX batches_by_deadline ON batches (expires_at) WHERE state = 'pending';
