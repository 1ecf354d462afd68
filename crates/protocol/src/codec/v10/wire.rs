//! The A2A v1.0 wire structs: one level each; nested objects stay JSON so that each gets its
//! own path in a decode error. Read as ProtoJSON parsers read (docs/wire.md, Versions): unknown
//! fields are ignored, and each field is accepted under its JSON (camelCase) name or its proto
//! (snake_case) name; both at once is a duplicate field. Written with the JSON names only.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::Metadata;

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireMessage {
    #[serde(alias = "message_id")]
    pub(super) message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "context_id")]
    pub(super) context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "task_id")]
    pub(super) task_id: Option<String>,
    pub(super) role: String,
    pub(super) parts: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) metadata: Option<Metadata>,
    /// The URIs of the extensions whose data the message carries (docs/wire.md, kagent's HITL
    /// extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) extensions: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "reference_task_ids")]
    pub(super) reference_task_ids: Option<Vec<String>>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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
    #[serde(alias = "media_type")]
    pub(super) media_type: Option<String>,
}

#[derive(Serialize, Deserialize)]
pub(super) struct WireStatus {
    pub(super) state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) message: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) timestamp: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireArtifact {
    #[serde(alias = "artifact_id")]
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
#[serde(rename_all = "camelCase")]
pub(super) struct WireTask {
    pub(super) id: String,
    /// ProtoJSON leaves out empty strings, so an absent `contextId` is "".
    #[serde(default)]
    #[serde(alias = "context_id")]
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
#[serde(rename_all = "camelCase")]
pub(super) struct WireStatusUpdate {
    #[serde(alias = "task_id")]
    pub(super) task_id: String,
    #[serde(alias = "context_id")]
    pub(super) context_id: String,
    pub(super) status: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) metadata: Option<Metadata>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireArtifactUpdate {
    #[serde(alias = "task_id")]
    pub(super) task_id: String,
    #[serde(alias = "context_id")]
    pub(super) context_id: String,
    pub(super) artifact: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) append: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "last_chunk")]
    pub(super) last_chunk: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) metadata: Option<Metadata>,
}

/// `StreamResponse` (and `SendMessageResponse`, which is its first two cases): exactly one key.
#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireStreamResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) task: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) message: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "status_update")]
    pub(super) status_update: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "artifact_update")]
    pub(super) artifact_update: Option<Value>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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
#[serde(rename_all = "camelCase")]
pub(super) struct WireConfiguration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "accepted_output_modes")]
    pub(super) accepted_output_modes: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "task_push_notification_config")]
    pub(super) task_push_notification_config: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub(super) history_length: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "return_immediately")]
    pub(super) return_immediately: Option<bool>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireTaskQuery {
    #[serde(default, skip_serializing)]
    #[allow(dead_code)]
    pub(super) tenant: Option<String>,
    pub(super) id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub(super) history_length: Option<i64>,
}

/// `CancelTaskRequest` and `SubscribeToTaskRequest` (the latter has no metadata).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireTaskIdParams {
    #[serde(default, skip_serializing)]
    #[allow(dead_code)]
    pub(super) tenant: Option<String>,
    pub(super) id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) metadata: Option<Metadata>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireListTasksParams {
    #[serde(default, skip_serializing)]
    #[allow(dead_code)]
    pub(super) tenant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "context_id")]
    pub(super) context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "page_size")]
    pub(super) page_size: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "page_token")]
    pub(super) page_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub(super) history_length: Option<i64>,
    /// Not supported: refused rather than ignored, so a caller never gets an unfiltered list
    /// it believes is filtered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "status_timestamp_after")]
    pub(super) status_timestamp_after: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "include_artifacts")]
    pub(super) include_artifacts: Option<bool>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireListTasksResult {
    pub(super) tasks: Vec<Value>,
    #[serde(default)]
    #[serde(alias = "next_page_token")]
    pub(super) next_page_token: String,
    #[serde(default)]
    #[serde(alias = "page_size")]
    pub(super) page_size: i64,
    #[serde(default)]
    #[serde(alias = "total_size")]
    pub(super) total_size: i64,
}
