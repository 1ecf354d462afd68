-- Read-only share links of chats, and people's feedback on answers, as in
-- migrations/sqlite/0005.

-- A read-only link to one chat. Only the SHA-256 of its token is kept, so reading the database
-- gives no live link. Revoking keeps the row; a revoked link reads nothing.
CREATE TABLE shares (
    id            TEXT PRIMARY KEY NOT NULL,
    context_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    user_id       TEXT NOT NULL,          -- the chat's owner, who made it
    token_sha256  TEXT NOT NULL UNIQUE,   -- hex
    created_at    TEXT NOT NULL,
    revoked_at    TEXT,
    seq           BIGINT GENERATED ALWAYS AS IDENTITY  -- order of making, within a millisecond
);
CREATE INDEX shares_by_context ON shares (context_id, revoked_at);

-- Thumbs up or down on an agent's answer: the task and the message it rated.
CREATE TABLE feedback (
    id          TEXT PRIMARY KEY NOT NULL,
    user_id     TEXT NOT NULL,
    context_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    task_id     TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    message_id  TEXT,                     -- the answer's message; NULL: the task had none
    rating      TEXT NOT NULL,            -- up | down
    reason      TEXT,
    created_at  TEXT NOT NULL,
    seq         BIGINT GENERATED ALWAYS AS IDENTITY  -- order of rating, within a millisecond
);
CREATE INDEX feedback_by_user ON feedback (user_id, created_at);
CREATE INDEX feedback_by_context ON feedback (context_id, created_at);
