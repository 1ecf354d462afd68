-- Decision links (crates/server/src/agent/runtime/links.rs, docs/notifications.md): an Approve or
-- a Reject link in a message to one person, bound to that person, that batch and that action.
-- Only the SHA-256 of its token is kept, so reading the database gives no live link. It decides
-- once (`used_at`, set in the decision's own transaction), until `expires_at`, and only while
-- its batch still waits (a batch decided elsewhere leaves its links dead).
CREATE TABLE decision_links (
    token_sha256  TEXT PRIMARY KEY NOT NULL,  -- hex
    task_id       TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    batch_id      INTEGER NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    user_id       TEXT NOT NULL,              -- the person it decides as
    action        TEXT NOT NULL,              -- approve | reject
    created_at    TEXT NOT NULL,
    expires_at    TEXT NOT NULL,
    used_at       TEXT
);
CREATE INDEX decision_links_by_task ON decision_links (task_id);
