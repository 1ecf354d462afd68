//! Tests of `relay`.

#![allow(clippy::unwrap_used)]
use super::*;

#[test]
fn the_agents_file_checks_a_remote_entry() {
    let error = |text: &str| AgentsFile::parse(text).err().map(|err| err.to_string());
    let remote = "[[agents]]\nname = \"k8s\"\nnamespace = \"kagent\"\n";
    assert_eq!(
        error(&format!(
            "{remote}remote = {{ url = \"http://kagent:8083/api/a2a/kagent/k8s/\" }}\n"
        )),
        None
    );
    assert_eq!(
        error(&format!("{remote}remote = {{ url = \"kagent:8083\" }}\n")).as_deref(),
        Some("agents file: agents[0].remote.url: \"kagent:8083\" must start with http:// or https://")
    );
    assert_eq!(
        error(&format!(
            "{remote}remote = {{ url = \"http://kagent\" }}\n[[agents.tools]]\nkind = \"builtin_files\"\n"
        ))
        .as_deref(),
        Some("agents file: agents[0].tools: a remote agent brings its own tools; remove `tools`")
    );
}

#[test]
fn tells_where_events_end() {
    for (tail, expected) in [
        (&b""[..], true),
        (b"}\n\n", true),
        (b"}\r\n\r\n", true),
        (b"}\r\r", true),
        (b"}\n", false),
        (b"}\r\n", false),
        (b"data", false),
    ] {
        assert_eq!(between_events(tail), expected, "{tail:?}");
    }
}

#[test]
fn card_urls_point_at_the_relay() {
    let mut card = json!({
        "name": "k8s",
        "url": "http://kagent:8083/api/a2a/kagent/k8s/",
        "additionalInterfaces": [
            {"url": "http://kagent:8083/api/a2a/kagent/k8s/", "transport": "JSONRPC"},
            {"url": "kagent:9000", "transport": "GRPC"}
        ],
        "supportedInterfaces": [
            {"url": "http://kagent:8083/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ]
    });
    rewrite_card(&mut card, "http://us/api/a2a/kagent/k8s");
    assert_eq!(
        card,
        json!({
            "name": "k8s",
            "url": "http://us/api/a2a/kagent/k8s",
            "additionalInterfaces": [
                {"url": "http://us/api/a2a/kagent/k8s", "transport": "JSONRPC"}
            ],
            "supportedInterfaces": [
                {"url": "http://us/api/a2a/kagent/k8s", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            ]
        })
    );
}
