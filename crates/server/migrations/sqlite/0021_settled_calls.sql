-- Calls asked for from outside (an MCP client's call through the gateway, a permission prompt, a
-- REST approval request) that the gate settled without asking anyone: the tool needs no approval,
-- or an agent's rule or a deployment policy allowed or denied it (src/agent/runtime/intake.rs,
-- "settled at once"). Such a call opens no chat; this row, written before it runs, is its audit,
-- and policy replays read it as they read a chat's calls.
CREATE TABLE settled_calls (
    id                TEXT PRIMARY KEY,
    user_id           TEXT NOT NULL,      -- who asked
    requester_groups  TEXT NOT NULL,      -- JSON array: the groups the gate saw
    agent             TEXT NOT NULL,      -- "namespace/name"
    tool              TEXT NOT NULL,
    source            TEXT NOT NULL,      -- the tool source that serves it
    args              TEXT NOT NULL,      -- JSON object, as asked
    args_sha256       TEXT NOT NULL,      -- of the arguments' RFC 8785 text
    verdict           TEXT NOT NULL,      -- approve | deny
    why               TEXT NOT NULL,      -- the gate's hitl::Why as JSON
    settled_at        TEXT NOT NULL
);
CREATE INDEX settled_calls_by_user ON settled_calls (user_id, settled_at);
CREATE INDEX settled_calls_by_time ON settled_calls (settled_at);
