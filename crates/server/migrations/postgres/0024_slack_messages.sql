-- The Slack app channel's posted messages (crates/server/src/store/slack.rs): each copy of a
-- batch posted with chat.postMessage, by the Slack channel and `ts` Slack answered with, so
-- every copy is updated (chat.update) once the batch is decided, canceled, expired or handed
-- over.
CREATE TABLE slack_messages (
    slack_channel  TEXT NOT NULL,              -- Slack's channel id, as chat.postMessage answered
    ts             TEXT NOT NULL,              -- the message's timestamp: its id in the channel
    channel        TEXT NOT NULL,              -- the notifications channel that posted it
    task_id        TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    batch_id       BIGINT NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    posted_at      TEXT NOT NULL,              -- RFC 3339
    PRIMARY KEY (slack_channel, ts)
);
CREATE INDEX slack_messages_by_batch ON slack_messages (batch_id);
