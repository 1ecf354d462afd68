//! The Slack app channel's posted messages (`slack_messages`): each copy of a batch that
//! `chat.postMessage` posted, by Slack's channel and `ts`, so that every copy can be updated
//! once the batch no longer waits. Each backend's `slack` writes and reads it.

/// One posted copy of a batch in Slack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlackMessageRow {
    /// Slack's channel id, as `chat.postMessage` answered.
    pub slack_channel: String,
    /// The message's `ts`: its id within the channel.
    pub ts: String,
    /// The notifications channel that posted it.
    pub channel: String,
    pub task_id: String,
    pub batch_id: i64,
    /// RFC 3339.
    pub posted_at: String,
}

pub(super) const SLACK_MESSAGE_SELECT: &str =
    "SELECT slack_channel, ts, channel, task_id, batch_id, posted_at FROM slack_messages";
