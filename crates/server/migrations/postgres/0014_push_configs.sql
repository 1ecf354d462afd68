-- A2A push notifications (crates/server/src/notify/): where each task's updates are posted, and
-- the key every replica signs them with.

-- One push config of a task, set by the task's owner over A2A in `version` ("0.3" or "1.0"),
-- the version of the payload posted to `url`. Deleted with the task (the foreign key cascades).
CREATE TABLE push_configs (
    task_id           TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    id                TEXT NOT NULL,
    user_id           TEXT NOT NULL,
    version           TEXT NOT NULL,
    url               TEXT NOT NULL,
    token             TEXT,
    auth_scheme       TEXT,
    auth_credentials  TEXT,
    created_at        TEXT NOT NULL,
    PRIMARY KEY (task_id, id)
);

-- The server's signing keys by name: a PKCS#8 document, base64. The first replica to need one
-- writes it; the others, and the same replica after a restart, read that one.
CREATE TABLE server_keys (
    name        TEXT PRIMARY KEY NOT NULL,
    pkcs8       TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
