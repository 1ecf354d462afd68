-- The notifications outbox (crates/server/src/store/outbox.rs): one row per notification to one
-- channel, written in the same commit as the event it reports (a batch paused, decided, canceled
-- or expired), so an event is never committed without its notifications nor announced by a
-- notification that did not commit. The sender claims due rows with a lease, delivers them and
-- deletes them; a row that exhausted its retries stays, `failed`, for an operator to read.
CREATE TABLE notifications (
    id               TEXT PRIMARY KEY NOT NULL,  -- the delivery id (webhook-id), the same on every retry
    channel          TEXT NOT NULL,              -- the operator's channel name
    kind             TEXT NOT NULL,              -- batch.pending | batch.decided | batch.canceled | batch.expired
    task_id          TEXT NOT NULL,
    batch_id         INTEGER,
    payload          TEXT NOT NULL,              -- JSON: what the event says, secrets masked
    state            TEXT NOT NULL,              -- pending | failed
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_ms  INTEGER NOT NULL,           -- Unix milliseconds
    lease_owner      TEXT,
    lease_until_ms   INTEGER,
    last_error       TEXT,
    created_at       TEXT NOT NULL,
    failed_at        TEXT
);
CREATE INDEX notifications_due ON notifications (next_attempt_ms) WHERE state = 'pending';
CREATE INDEX notifications_failed ON notifications (failed_at) WHERE state = 'failed';
