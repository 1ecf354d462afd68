-- Signed decision receipts (src/store/receipts.rs): one per decided call, written in the
-- decision's own commit, chained by the digest of the one before, so the trail shows whether
-- it was altered. One chain per store.
CREATE TABLE receipts (
    seq          INTEGER PRIMARY KEY,  -- 1, 2, 3, … in chain order; a fork cannot be written
    task_id      TEXT,                 -- NULL for a call settled at once (no task)
    call_id      TEXT NOT NULL,
    body         TEXT NOT NULL,        -- the receipt's RFC 8785 text, as signed
    digest       TEXT NOT NULL,        -- hex sha256 of body: the next receipt's "prev"
    kid          TEXT NOT NULL,        -- the signing key's id
    sig          TEXT NOT NULL         -- base64url Ed25519 signature of body
);
CREATE INDEX receipts_by_task ON receipts (task_id);

-- The chain's head, one row: a writer moves it in the transaction that appends, which on
-- PostgreSQL holds its row lock until commit, so replicas append one after the other.
CREATE TABLE receipt_head (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    seq     INTEGER NOT NULL,
    digest  TEXT NOT NULL
);
INSERT INTO receipt_head (id, seq, digest)
VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');

-- Every public key receipts were signed with (current and rotated out), as servers recorded
-- them at start: served at /api/audit/keys and exported with the chain.
CREATE TABLE receipt_keys (
    kid         TEXT PRIMARY KEY NOT NULL,
    public_key  TEXT NOT NULL,         -- base64url of the 32-byte Ed25519 public key
    created_at  TEXT NOT NULL
);
