-- Chats relayed to remote A2A agents (kagent's among them) are recorded as they pass
-- (crates/server/README.md, Relayed chats). Their tasks are driven by the remote agent, never by
-- a runner of ours: a restart or another replica must not resume them, and a decision on them is
-- forwarded to the remote. `remote` marks them; the agent's ref is the `agent` column.
ALTER TABLE tasks ADD COLUMN remote BOOLEAN NOT NULL DEFAULT FALSE;
