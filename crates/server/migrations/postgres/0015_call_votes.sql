-- Each person's verdict on each call of a batch (crates/server/README.md, Approvers): the
-- approvals a call collects toward its quorum while its batch waits, and every approval and
-- rejection's audit (who, the approvers entries that made them eligible, the channel, the
-- time, and the SHA-256 of the arguments they saw). Written in the decision's own write, under
-- the same compare-and-set on the pending batch. An approval counts only while its hash is the
-- call's: an edit voids the approvals of other arguments.
CREATE TABLE call_votes (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    batch_id     BIGINT NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    task_id      TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    call_id      TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    email        TEXT,
    verdict      TEXT NOT NULL,            -- approve | deny
    reason       TEXT,
    run_args     TEXT,                     -- JSON: edited arguments (none: as asked)
    args_sha256  TEXT NOT NULL,            -- the arguments approved or rejected
    eligible_by  TEXT NOT NULL,            -- JSON array: group:NAME, user:ID or requester
    channel      TEXT NOT NULL,            -- a2a | text | rest
    voted_at     TEXT NOT NULL
);
CREATE INDEX call_votes_by_batch ON call_votes (batch_id, id);
