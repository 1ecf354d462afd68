//! The A2A v1.0 wire structs: one level each; nested objects stay JSON so that each gets its
//! own path in a decode error. Every struct refuses unknown fields.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::Metadata;

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct WireMessage {
    pub(super) message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) task_id: Option<String>,
    pub(super) role: String,
    pub(super) parts: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) metadata: Option<Metadata>,
    /// Extension URIs; read past, Signoff implements none.
    #[serde(default, skip_serializing)]
    #[allow(dead_code)]
    pub(super) extensions: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) reference_task_ids: Option<Vec<String>>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct WirePart {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) text: Option<String>,
    /// Base64 bytes (ProtoJSON `bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) raw: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) metadata: Option<Metadata>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) filename: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) media_type: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct WireStatus {
    pub(super) state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) message: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) timestamp: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct WireArtifact {
    pub(super) artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) description: Option<String>,
    pub(super) parts: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) metadata: Option<Metadata>,
    #[serde(default, skip_serializing)]
    #[allow(dead_code)]
    pub(super) extensions: Option<Vec<String>>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct WireTask {
    pub(super) id: String,
    /// ProtoJSON leaves out empty strings, so an absent `contextId` is "".
    #[serde(default)]
    pub(super) context_id: String,
    pub(super) status: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) artifacts: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) history: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) metadata: Option<Metadata>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct WireStatusUpdate {
    pub(super) task_id: String,
    pub(super) context_id: String,
    pub(super) status: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) metadata: Option<Metadata>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct WireArtifactUpdate {
    pub(super) task_id: String,
    pub(super) context_id: String,
    pub(super) artifact: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) append: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) last_chunk: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) metadata: Option<Metadata>,
}

/// `StreamResponse` (and `SendMessageResponse`, which is its first two cases): exactly one key.
#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct WireStreamResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) task: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) message: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) status_update: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) artifact_update: Option<Value>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct WireSendParams {
    /// Multi-tenancy is not a Signoff concept; the tenant is read past.
    #[serde(default, skip_serializing)]
    #[allow(dead_code)]
    pub(super) tenant: Option<String>,
    pub(super) message: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) configuration: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) metadata: Option<Metadata>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct WireConfiguration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) accepted_output_modes: Option<Vec<String>>,
    /// Read past: Signoff sends no push notifications.
    #[serde(default, skip_serializing)]
    #[allow(dead_code)]
    pub(super) task_push_notification_config: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) history_length: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) return_immediately: Option<bool>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct WireTaskQuery {
    #[serde(default, skip_serializing)]
    #[allow(dead_code)]
    pub(super) tenant: Option<String>,
    pub(super) id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) history_length: Option<i64>,
}

/// `CancelTaskRequest` and `SubscribeToTaskRequest` (the latter has no metadata).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct WireTaskIdParams {
    #[serde(default, skip_serializing)]
    #[allow(dead_code)]
    pub(super) tenant: Option<String>,
    pub(super) id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) metadata: Option<Metadata>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct WireListTasksParams {
    #[serde(default, skip_serializing)]
    #[allow(dead_code)]
    pub(super) tenant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) page_size: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) page_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) history_length: Option<i64>,
    /// Not supported: refused rather than ignored, so a caller never gets an unfiltered list
    /// it believes is filtered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) status_timestamp_after: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) include_artifacts: Option<bool>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct WireListTasksResult {
    pub(super) tasks: Vec<Value>,
    #[serde(default)]
    pub(super) next_page_token: String,
    #[serde(default)]
    pub(super) page_size: i64,
    #[serde(default)]
    pub(super) total_size: i64,
}
