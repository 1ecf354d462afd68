//! Tests of `openai`.

#![allow(clippy::unwrap_used)]
use super::*;

fn spec() -> OpenAiSpec {
    OpenAiSpec {
        base_url: "http://127.0.0.1:9/v1/".into(),
        model: "gpt-test".into(),
        api_key_env: Some("TEST_KEY".into()),
        timeout_secs: None,
        temperature: None,
        max_tokens: None,
    }
}

#[test]
fn reads_the_key_from_the_named_variable() {
    let config = OpenAiConfig::from_spec(&spec(), "agents[0].model", |name| {
        (name == "TEST_KEY").then(|| "sk-secret".to_owned())
    })
    .unwrap();
    assert_eq!(config.api_key.as_deref(), Some("sk-secret"));
    assert_eq!(config.base_url, "http://127.0.0.1:9/v1");
    assert!(!format!("{config:?}").contains("sk-secret"));
    let missing = OpenAiConfig::from_spec(&spec(), "agents[0].model", |_| None)
        .unwrap_err()
        .to_string();
    assert_eq!(
        missing,
        "agents file: agents[0].model.api_key_env: the environment variable TEST_KEY is \
         not set or empty"
    );
}

#[test]
fn refuses_a_base_url_that_is_not_http() {
    let mut bad = spec();
    bad.base_url = "ftp://example.com".into();
    let err = OpenAiConfig::from_spec(&bad, "agents[0].model", |_| Some("k".into()))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("agents file: agents[0].model.base_url:"),
        "{err}"
    );
}

#[test]
fn tool_results_as_the_model_reads_them() {
    let ok = json!({"content": [{"type": "text", "text": "done"}], "isError": false});
    assert_eq!(tool_content(&ok, None), "done");
    let failed = json!({"content": [{"type": "text", "text": "no such file"}], "isError": true});
    assert_eq!(tool_content(&failed, None), r#"{"error":"no such file"}"#);
    let rejected = json!({"status": "rejected", "reason": "too risky"});
    // Compared as JSON: key order depends on serde_json's `preserve_order`, which another
    // crate in the workspace may switch on.
    assert_eq!(
        serde_json::from_str::<Value>(&tool_content(&rejected, None)).unwrap(),
        rejected
    );
    let edited = tool_content(&ok, Some(&json!({"path": "a.txt"})));
    assert_eq!(
        serde_json::from_str::<Value>(&edited).unwrap(),
        json!({"note": "the person edited the arguments before the call ran",
               "proposed": {"path": "a.txt"}, "result": "done"})
    );
}

#[test]
fn assembles_calls_and_checks_their_arguments() {
    let call = |arguments: &str| PartialCall {
        id: String::new(),
        name: "write_file".into(),
        arguments: arguments.into(),
    };
    assert_eq!(
        complete_call(call("")).unwrap(),
        ModelToolCall::new("", "write_file", json!({})),
        "an id left out stays out: the runtime gives every call its own"
    );
    let broken = complete_call(call("{\"path\": ")).unwrap_err();
    assert!(
        broken.starts_with("the model called write_file with arguments that are not valid JSON"),
        "{broken}"
    );
    assert_eq!(
        complete_call(call("[1]")).unwrap_err(),
        "the model called write_file with arguments that are not a JSON object"
    );
}
