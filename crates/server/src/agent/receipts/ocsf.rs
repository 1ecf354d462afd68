//! A receipt as an OCSF API Activity event (class 6003, category Application Activity), for a
//! SIEM. The mapping is the README's (Audit): the tool call is the API operation, the decider
//! the actor, the verdict the authorization's decision and the event's status; the signed
//! receipt rides along whole in `unmapped`, so what the SIEM keeps can still be checked.

use serde_json::{json, Value};

/// OCSF's API Activity class.
const CLASS_UID: i64 = 6003;
/// Application Activity.
const CATEGORY_UID: i64 = 6;
/// "Other": a decision on a call is none of Create, Read, Update or Delete.
const ACTIVITY_OTHER: i64 = 99;
/// The OCSF schema version the events follow.
const SCHEMA_VERSION: &str = "1.3.0";

/// The event of one export line (`{"receipt": …, "sig": …}`).
pub fn ocsf_event(line: &str) -> Result<Value, String> {
    let value: Value = serde_json::from_str(line).map_err(|err| err.to_string())?;
    let receipt = value.get("receipt").ok_or("no receipt")?;
    let text = |key: &str| receipt.get(key).and_then(Value::as_str).unwrap_or_default();
    let at = chrono::DateTime::parse_from_rfc3339(text("at"))
        .map_err(|err| format!("at: {err}"))?
        .timestamp_millis();
    let verdict = text("verdict");
    let allowed = verdict == "approve";
    let (status_id, status) = if allowed {
        (1, "Success")
    } else {
        (2, "Failure")
    };
    let why = receipt.get("why").cloned().unwrap_or(Value::Null);
    let summary = why
        .get("summary")
        .and_then(Value::as_str)
        .unwrap_or(verdict);
    let policy = why
        .get("gate")
        .and_then(|gate| gate.get("id"))
        .and_then(Value::as_str)
        .unwrap_or(text("channel"));
    let mut event = json!({
        "class_uid": CLASS_UID,
        "class_name": "API Activity",
        "category_uid": CATEGORY_UID,
        "category_name": "Application Activity",
        "activity_id": ACTIVITY_OTHER,
        "activity_name": "Decide",
        "type_uid": CLASS_UID * 100 + ACTIVITY_OTHER,
        "type_name": "API Activity: Other",
        "severity_id": 1,
        "severity": "Informational",
        "time": at,
        "status_id": status_id,
        "status": status,
        "status_detail": verdict,
        "message": summary,
        "metadata": {
            "version": SCHEMA_VERSION,
            "uid": receipt.get("seq").map(Value::to_string).unwrap_or_default(),
            "correlation_uid": receipt.get("task_id").and_then(Value::as_str),
            "log_name": "signoff-receipts",
            "product": {"name": "Signoff", "vendor_name": "Signoff", "version": crate::VERSION},
        },
        "actor": {
            "user": {"uid": text("decided_by"), "name": text("decided_by")},
            "authorizations": [{
                "decision": if allowed { "allow" } else { "deny" },
                "policy": {"name": policy},
            }],
            "app_name": "signoff",
        },
        "api": {
            "operation": text("tool"),
            "service": {"name": "signoff"},
            "request": {"uid": text("call_id")},
        },
        "src_endpoint": {"svc_name": text("channel")},
        "resources": [{"type": "tool_arguments", "uid": text("args_sha256")}],
    });
    // OCSF leaves out what is not known (a settled call has no task): no nulls.
    prune_nulls(&mut event);
    event["unmapped"] = json!({
        "auth": receipt.get("auth"),
        "receipt": receipt,
        "sig": value.get("sig"),
    });
    Ok(event)
}

fn prune_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, item| !item.is_null());
            map.values_mut().for_each(prune_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(prune_nulls),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receipt_maps_to_an_api_activity_event_with_the_receipt_inside() {
        let line = r#"{"receipt":{"args_sha256":"ab","at":"2026-12-04T10:00:00.000Z","auth":"tokens","call_id":"call_1","channel":"rest","decided_by":"alice","kid":"k","prev":"00","seq":7,"task_id":"t-1","tool":"write_file","verdict":"deny","why":{"summary":"Rejected by alice"}},"sig":"s"}"#;
        let event = ocsf_event(line).unwrap();
        assert_eq!(event["class_uid"], 6003);
        assert_eq!(event["type_uid"], 600399);
        assert_eq!(event["time"], 1_796_378_400_000_i64);
        assert_eq!(event["status_id"], 2);
        assert_eq!(event["actor"]["user"]["uid"], "alice");
        assert_eq!(event["actor"]["authorizations"][0]["decision"], "deny");
        assert_eq!(event["api"]["operation"], "write_file");
        assert_eq!(event["api"]["request"]["uid"], "call_1");
        assert_eq!(event["metadata"]["uid"], "7");
        assert_eq!(event["message"], "Rejected by alice");
        assert_eq!(event["unmapped"]["receipt"]["seq"], 7);
        assert!(ocsf_event("{}").is_err());
        // A call settled at once has no task: no correlation id rather than a null.
        let settled = line.replace("\"task_id\":\"t-1\"", "\"task_id\":null");
        let event = ocsf_event(&settled).unwrap();
        assert!(
            event["metadata"].get("correlation_uid").is_none(),
            "{event}"
        );
        assert!(event["unmapped"]["receipt"]["task_id"].is_null());
    }
}
