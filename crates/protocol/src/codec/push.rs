//! Push-notification configs on the wire, both versions: v0.3 nests the config
//! (`{taskId, pushNotificationConfig: {id, url, token, authentication: {schemes, credentials}}}`)
//! and names the task `id` in the get, list and delete params; v1.0 flattens it
//! (`{taskId, id, url, token, authentication: {scheme, credentials}}`) and names the config `id`.
//! What a receiver is posted: v0.3 the Task object, v1.0 a `StreamResponse` (`{"task": …}`).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{field, parse, to_value, DecodeError};
use crate::model::{
    ProtocolVersion, PushAuthentication, PushConfig, PushConfigQuery, StreamEvent, Task,
    TaskPushConfig,
};

/// The push-config methods, whatever their name in a given version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PushMethod {
    Set,
    Get,
    List,
    Delete,
}

impl PushMethod {
    const ALL: [PushMethod; 4] = [
        PushMethod::Set,
        PushMethod::Get,
        PushMethod::List,
        PushMethod::Delete,
    ];

    /// Reads a JSON-RPC method name in the request's version; `None` for any other name. v1.0's
    /// list is `ListTaskPushNotificationConfigs`, as the specification's service and its SDKs
    /// name it; the singular of earlier drafts is read too.
    pub fn from_name(version: ProtocolVersion, name: &str) -> Option<PushMethod> {
        if version == ProtocolVersion::V1_0 && name == "ListTaskPushNotificationConfig" {
            return Some(PushMethod::List);
        }
        PushMethod::ALL
            .into_iter()
            .find(|method| method.name(version) == name)
    }

    pub fn name(self, version: ProtocolVersion) -> &'static str {
        match (version, self) {
            (ProtocolVersion::V0_3, PushMethod::Set) => "tasks/pushNotificationConfig/set",
            (ProtocolVersion::V0_3, PushMethod::Get) => "tasks/pushNotificationConfig/get",
            (ProtocolVersion::V0_3, PushMethod::List) => "tasks/pushNotificationConfig/list",
            (ProtocolVersion::V0_3, PushMethod::Delete) => "tasks/pushNotificationConfig/delete",
            (ProtocolVersion::V1_0, PushMethod::Set) => "CreateTaskPushNotificationConfig",
            (ProtocolVersion::V1_0, PushMethod::Get) => "GetTaskPushNotificationConfig",
            (ProtocolVersion::V1_0, PushMethod::List) => "ListTaskPushNotificationConfigs",
            (ProtocolVersion::V1_0, PushMethod::Delete) => "DeleteTaskPushNotificationConfig",
        }
    }
}

// ---- v0.3 ----

#[derive(Serialize, Deserialize)]
struct V03Auth {
    schemes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    credentials: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct V03Config {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    authentication: Option<Value>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct V03TaskConfig {
    task_id: String,
    push_notification_config: Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct V03Query {
    id: String,
    #[serde(default)]
    push_notification_config_id: Option<String>,
}

fn v03_decode_config(value: &Value, path: &str) -> Result<PushConfig, DecodeError> {
    let wire: V03Config = parse(value, path)?;
    let authentication = match &wire.authentication {
        Some(auth) => {
            let auth_path = field(path, "authentication");
            let auth: V03Auth = parse(auth, &auth_path)?;
            let Some(scheme) = auth.schemes.into_iter().next() else {
                return Err(DecodeError::new(
                    &field(&auth_path, "schemes"),
                    "must name at least one scheme",
                ));
            };
            Some(PushAuthentication {
                scheme,
                credentials: auth.credentials,
            })
        }
        None => None,
    };
    Ok(PushConfig {
        id: wire.id,
        url: wire.url,
        token: wire.token,
        authentication,
    })
}

fn v03_encode_config(config: &PushConfig) -> Value {
    to_value(V03Config {
        id: config.id.clone(),
        url: config.url.clone(),
        token: config.token.clone(),
        authentication: config.authentication.as_ref().map(|auth| {
            to_value(V03Auth {
                schemes: vec![auth.scheme.clone()],
                credentials: auth.credentials.clone(),
            })
        }),
    })
}

// ---- v1.0 (ProtoJSON: unknown fields ignored, proto names accepted) ----

#[derive(Serialize, Deserialize)]
struct V10Auth {
    scheme: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    credentials: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct V10TaskConfig {
    #[serde(default, skip_serializing)]
    #[allow(dead_code)]
    tenant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    /// Absent inside `SendMessage`'s configuration, where the task is the message's.
    #[serde(default, alias = "task_id", skip_serializing_if = "Option::is_none")]
    task_id: Option<String>,
    url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    authentication: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct V10Query {
    #[serde(alias = "task_id")]
    task_id: String,
    #[serde(default)]
    id: Option<String>,
}

fn v10_decode(value: &Value, path: &str) -> Result<(Option<String>, PushConfig), DecodeError> {
    let wire: V10TaskConfig = parse(value, path)?;
    let authentication = match &wire.authentication {
        Some(auth) => {
            let auth: V10Auth = parse(auth, &field(path, "authentication"))?;
            Some(PushAuthentication {
                scheme: auth.scheme,
                credentials: auth.credentials,
            })
        }
        None => None,
    };
    let config = PushConfig {
        // ProtoJSON writes an unset string as "": no id then.
        id: wire.id.filter(|id| !id.is_empty()),
        url: wire.url,
        token: wire.token.filter(|token| !token.is_empty()),
        authentication,
    };
    Ok((wire.task_id, config))
}

fn v10_encode(task_id: Option<&str>, config: &PushConfig) -> Value {
    to_value(V10TaskConfig {
        tenant: None,
        id: config.id.clone(),
        task_id: task_id.map(str::to_owned),
        url: config.url.clone(),
        token: config.token.clone(),
        authentication: config.authentication.as_ref().map(|auth| {
            to_value(V10Auth {
                scheme: auth.scheme.clone(),
                credentials: auth.credentials.clone(),
            })
        }),
    })
}

// ---- both ----

/// Reads the push config inside a send's configuration (v0.3 `pushNotificationConfig`, v1.0
/// `taskPushNotificationConfig`).
pub(super) fn decode_send_push(
    v: ProtocolVersion,
    value: &Value,
    path: &str,
) -> Result<PushConfig, DecodeError> {
    match v {
        ProtocolVersion::V0_3 => v03_decode_config(value, path),
        ProtocolVersion::V1_0 => v10_decode(value, path).map(|(_, config)| config),
    }
}

pub(super) fn encode_send_push(v: ProtocolVersion, config: &PushConfig) -> Value {
    match v {
        ProtocolVersion::V0_3 => v03_encode_config(config),
        ProtocolVersion::V1_0 => v10_encode(None, config),
    }
}

/// Decodes the params of `tasks/pushNotificationConfig/set` (v1.0
/// `CreateTaskPushNotificationConfig`).
pub fn decode_push_set(v: ProtocolVersion, params: &Value) -> Result<TaskPushConfig, DecodeError> {
    match v {
        ProtocolVersion::V0_3 => {
            let wire: V03TaskConfig = parse(params, "params")?;
            let config = v03_decode_config(
                &wire.push_notification_config,
                "params.pushNotificationConfig",
            )?;
            Ok(TaskPushConfig {
                task_id: wire.task_id,
                config,
            })
        }
        ProtocolVersion::V1_0 => {
            let (task_id, config) = v10_decode(params, "params")?;
            let task_id =
                task_id.ok_or_else(|| DecodeError::new("params", "missing field `taskId`"))?;
            Ok(TaskPushConfig { task_id, config })
        }
    }
}

/// Decodes the params of the get, list and delete methods.
pub fn decode_push_query(
    v: ProtocolVersion,
    params: &Value,
) -> Result<PushConfigQuery, DecodeError> {
    match v {
        ProtocolVersion::V0_3 => {
            let wire: V03Query = parse(params, "params")?;
            Ok(PushConfigQuery {
                task_id: wire.id,
                config_id: wire.push_notification_config_id,
            })
        }
        ProtocolVersion::V1_0 => {
            let wire: V10Query = parse(params, "params")?;
            Ok(PushConfigQuery {
                task_id: wire.task_id,
                config_id: wire.id.filter(|id| !id.is_empty()),
            })
        }
    }
}

/// One task's push config, as set and get answer it.
pub fn encode_task_push_config(v: ProtocolVersion, config: &TaskPushConfig) -> Value {
    match v {
        ProtocolVersion::V0_3 => to_value(V03TaskConfig {
            task_id: config.task_id.clone(),
            push_notification_config: v03_encode_config(&config.config),
        }),
        ProtocolVersion::V1_0 => v10_encode(Some(&config.task_id), &config.config),
    }
}

/// Reads one task's push config as set and get answer it (for clients and tests).
pub fn decode_task_push_config(
    v: ProtocolVersion,
    value: &Value,
) -> Result<TaskPushConfig, DecodeError> {
    decode_push_set(v, value)
}

/// A task's push configs, as list answers them: v0.3 an array, v1.0 `{"configs": […]}`.
pub fn encode_push_config_list(v: ProtocolVersion, configs: &[TaskPushConfig]) -> Value {
    let items: Vec<Value> = configs
        .iter()
        .map(|config| encode_task_push_config(v, config))
        .collect();
    match v {
        ProtocolVersion::V0_3 => Value::Array(items),
        ProtocolVersion::V1_0 => json!({ "configs": items }),
    }
}

/// What a push receiver is posted about `task`: in v0.3 the Task object itself, in v1.0 a
/// `StreamResponse` holding it (`{"task": …}`), as each version's specification says.
pub fn encode_push_notification(v: ProtocolVersion, task: &Task) -> Value {
    super::encode_event(v, &StreamEvent::Task(task.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ProtocolVersion::{V0_3, V1_0};

    fn config() -> TaskPushConfig {
        TaskPushConfig {
            task_id: "t-1".into(),
            config: PushConfig {
                id: Some("c-1".into()),
                url: "https://example.com/hook".into(),
                token: Some("tok".into()),
                authentication: Some(PushAuthentication {
                    scheme: "Bearer".into(),
                    credentials: Some("secret".into()),
                }),
            },
        }
    }

    #[test]
    fn each_version_spells_a_config_its_way_and_reads_it_back() {
        let v03 = encode_task_push_config(V0_3, &config());
        assert_eq!(
            v03,
            json!({"taskId": "t-1", "pushNotificationConfig": {"id": "c-1",
                "url": "https://example.com/hook", "token": "tok",
                "authentication": {"schemes": ["Bearer"], "credentials": "secret"}}})
        );
        let v10 = encode_task_push_config(V1_0, &config());
        assert_eq!(
            v10,
            json!({"taskId": "t-1", "id": "c-1", "url": "https://example.com/hook",
                "token": "tok", "authentication": {"scheme": "Bearer", "credentials": "secret"}})
        );
        assert_eq!(decode_push_set(V0_3, &v03).unwrap(), config());
        assert_eq!(decode_push_set(V1_0, &v10).unwrap(), config());
        let snake = json!({"task_id": "t-1", "id": "c-1", "url": "https://example.com/hook",
            "token": "tok", "authentication": {"scheme": "Bearer", "credentials": "secret"},
            "tenant": "", "extra": 1});
        assert_eq!(decode_push_set(V1_0, &snake).unwrap(), config());
    }

    #[test]
    fn queries_and_lists_per_version() {
        let query = decode_push_query(V0_3, &json!({"id": "t-1", "pushNotificationConfigId": "c"}));
        assert_eq!(
            query.unwrap(),
            PushConfigQuery {
                task_id: "t-1".into(),
                config_id: Some("c".into())
            }
        );
        let query = decode_push_query(V1_0, &json!({"taskId": "t-1", "id": "c"})).unwrap();
        assert_eq!(query.config_id.as_deref(), Some("c"));
        assert!(encode_push_config_list(V0_3, &[config()]).is_array());
        assert_eq!(
            encode_push_config_list(V1_0, &[config()])["configs"][0]["id"],
            "c-1"
        );
        assert_eq!(
            PushMethod::from_name(V1_0, "ListTaskPushNotificationConfig"),
            Some(PushMethod::List)
        );
        assert_eq!(
            PushMethod::from_name(V0_3, "CreateTaskPushNotificationConfig"),
            None
        );
    }

    #[test]
    fn bad_configs_name_the_path() {
        let err = decode_push_set(
            V0_3,
            &json!({"taskId": "t", "pushNotificationConfig": {"url": "https://x",
                "authentication": {"schemes": []}}}),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "params.pushNotificationConfig.authentication.schemes: must name at least one scheme"
        );
        let err = decode_push_set(V1_0, &json!({"url": "https://x"})).unwrap_err();
        assert_eq!(err.to_string(), "params: missing field `taskId`");
    }
}
