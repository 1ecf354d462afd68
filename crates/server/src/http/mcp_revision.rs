//! Which MCP revision a request to the MCP endpoint speaks, and the checks of the stateless
//! 2026-07-28 revision. A request is of that revision when its `params._meta` names a protocol
//! version, or its `MCP-Protocol-Version` header names one that is not a handshake revision;
//! every other request is served as the handshake revisions are (`initialize` first).
//!
//! A 2026-07-28 request must carry its envelope in `_meta` (protocol version and client
//! capabilities), and its routing headers must say what its body says (`MCP-Protocol-Version`,
//! `Mcp-Method`, and `Mcp-Name` for `tools/call`), so a gateway or balancer that routes on the
//! headers cannot be told one thing while the server runs another. The first failed check
//! answers, with the revision's error code and HTTP status.

use axum::http::{HeaderMap, StatusCode};
use serde_json::{json, Value};

/// The stateless revision.
pub const STATELESS: &str = "2026-07-28";

/// The handshake revisions this server speaks, newest first; an `initialize` asking for
/// another (2026-07-28 included: it has no handshake) gets the first.
pub const HANDSHAKE: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

const VERSION_HEADER: &str = "mcp-protocol-version";
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";

/// JSON-RPC codes of the stateless revision.
const INVALID_PARAMS: i64 = -32602;
const HEADER_MISMATCH: i64 = -32020;
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The revision a request is served under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2025-11-25 and older: after an `initialize`, requests carry no envelope.
    Handshake,
    /// 2026-07-28: every request carries its envelope; results say `resultType`.
    Stateless,
}

impl Era {
    /// `result` as this revision answers it: a stateless result says it is complete.
    pub fn result(self, mut result: Value) -> Value {
        if let (Era::Stateless, Some(object)) = (self, result.as_object_mut()) {
            object.insert("resultType".into(), json!("complete"));
        }
        result
    }

    /// A listing's `result` as this revision answers it: a stateless one also says how long a
    /// client may cache it. Never: what it lists changes when a tool is held back or approved,
    /// and it is the caller's own (the endpoint takes sign-in).
    pub fn listing(self, result: Value) -> Value {
        let mut result = self.result(result);
        if let (Era::Stateless, Some(object)) = (self, result.as_object_mut()) {
            object.insert("ttlMs".into(), json!(0));
            object.insert("cacheScope".into(), json!("private"));
        }
        result
    }

    /// The HTTP status of an error answer: the stateless revision maps codes to statuses, the
    /// handshake revisions answer every JSON-RPC error with 200.
    pub fn error_status(self, code: i64) -> StatusCode {
        match (self, code) {
            (Era::Handshake, _) => StatusCode::OK,
            (Era::Stateless, -32601) => StatusCode::NOT_FOUND,
            (Era::Stateless, -32700 | -32600 | -32602 | -32022..=-32020) => StatusCode::BAD_REQUEST,
            (Era::Stateless, _) => StatusCode::OK,
        }
    }
}

/// The client capabilities a 2026-07-28 request's envelope carries (`Null` when none).
pub fn client_capabilities(params: &Value) -> &Value {
    params
        .get("_meta")
        .and_then(|meta| meta.get(CAPABILITIES_KEY))
        .unwrap_or(&Value::Null)
}

/// A request the stateless revision's checks refused: the JSON-RPC error to answer with.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl Refused {
    fn new(code: i64, message: impl Into<String>) -> Refused {
        Refused {
            code,
            message: message.into(),
            data: None,
        }
    }
}

/// The revision `request` (one JSON-RPC request object) speaks, after the stateless
/// revision's checks if it speaks that one.
pub fn classify(
    headers: &HeaderMap,
    request: &serde_json::Map<String, Value>,
) -> Result<Era, Refused> {
    let meta = request.get("params").and_then(|params| params.get("_meta"));
    let body_version = meta.and_then(|meta| meta.get(VERSION_KEY));
    let header_version = header(headers, VERSION_HEADER)?;
    let stateless = body_version.is_some()
        || header_version.is_some_and(|version| !HANDSHAKE.contains(&version));
    if !stateless {
        return Ok(Era::Handshake);
    }
    let Some(meta) = meta.and_then(Value::as_object) else {
        return Err(Refused::new(
            INVALID_PARAMS,
            format!("params._meta must be an object carrying {VERSION_KEY} and {CAPABILITIES_KEY}"),
        ));
    };
    let missing: Vec<&str> = [VERSION_KEY, CAPABILITIES_KEY]
        .into_iter()
        .filter(|key| !meta.contains_key(*key))
        .collect();
    if !missing.is_empty() {
        return Err(Refused::new(
            INVALID_PARAMS,
            format!("params._meta lacks {}", missing.join(" and ")),
        ));
    }
    check_routing_headers(headers, request, meta.get(VERSION_KEY), header_version)?;
    match meta.get(VERSION_KEY).and_then(Value::as_str) {
        Some(STATELESS) => Ok(Era::Stateless),
        Some(requested) => Err(Refused {
            code: UNSUPPORTED_PROTOCOL_VERSION,
            message: format!("protocol version {requested} is not served here"),
            data: Some(json!({"requested": requested, "supported": [STATELESS]})),
        }),
        None => Err(Refused::new(
            INVALID_PARAMS,
            format!("{VERSION_KEY} must be a string"),
        )),
    }
}

/// The routing headers must say what the body says.
fn check_routing_headers(
    headers: &HeaderMap,
    request: &serde_json::Map<String, Value>,
    body_version: Option<&Value>,
    header_version: Option<&str>,
) -> Result<(), Refused> {
    let mismatch = |what: &str| Refused::new(HEADER_MISMATCH, what.to_owned());
    if header_version.is_none() || header_version.map(Value::from).as_ref() != body_version {
        return Err(mismatch(
            "the MCP-Protocol-Version header does not match params._meta's protocol version",
        ));
    }
    let method = request.get("method").and_then(Value::as_str);
    if header(headers, METHOD_HEADER)? != method {
        return Err(mismatch(
            "the Mcp-Method header does not match the request's method",
        ));
    }
    if method == Some("tools/call") {
        let name = request
            .get("params")
            .and_then(|params| params.get("name"))
            .and_then(Value::as_str);
        let named = header(headers, NAME_HEADER)?.map(decoded_header);
        if name.is_some() && named.as_ref().map(|named| named.as_deref()) != Some(name) {
            return Err(mismatch(
                "the Mcp-Name header does not match the tool the request calls",
            ));
        }
    }
    Ok(())
}

/// The one value of header `name`, if it has one; twice is refused (readers of the first and
/// of the last copy would disagree), and so is a value that is not visible ASCII.
fn header<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, Refused> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(Refused::new(
            HEADER_MISMATCH,
            format!("the {name} header appears more than once"),
        ));
    }
    value
        .to_str()
        .map(Some)
        .map_err(|_| Refused::new(HEADER_MISMATCH, format!("the {name} header is malformed")))
}

/// A header value as the revision encodes it: verbatim, or `=?base64?…?=` for text a header
/// cannot carry; `None` for a malformed encoding (it then matches nothing).
fn decoded_header(value: &str) -> Option<String> {
    use base64::Engine;
    let Some(payload) = value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Some(value.to_owned());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// The answer to `server/discover`: the revisions, capabilities and identity of this server.
pub fn discover(instructions: &str) -> Value {
    let mut versions = vec![STATELESS];
    versions.extend(HANDSHAKE);
    Era::Stateless.listing(json!({
        "supportedVersions": versions,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "signoff", "version": env!("CARGO_PKG_VERSION")},
        "instructions": instructions,
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, value.parse().unwrap());
        }
        headers
    }

    fn request(method: &str, params: Value) -> serde_json::Map<String, Value> {
        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
            .as_object()
            .unwrap()
            .clone()
    }

    fn envelope(version: &str) -> Value {
        json!({VERSION_KEY: version, CAPABILITIES_KEY: {}})
    }

    #[test]
    fn a_request_without_an_envelope_is_of_the_handshake_revisions() {
        let plain = request("tools/list", json!({}));
        assert_eq!(classify(&HeaderMap::new(), &plain), Ok(Era::Handshake));
        let after_handshake = headers(&[("mcp-protocol-version", "2025-06-18")]);
        assert_eq!(classify(&after_handshake, &plain), Ok(Era::Handshake));
    }

    #[test]
    fn a_stateless_request_whose_headers_say_what_its_body_says_is_served() {
        let call = request(
            "tools/call",
            json!({"name": "read_file", "arguments": {}, "_meta": envelope(STATELESS)}),
        );
        let routed = headers(&[
            ("mcp-protocol-version", STATELESS),
            ("mcp-method", "tools/call"),
            ("mcp-name", "read_file"),
        ]);
        assert_eq!(classify(&routed, &call), Ok(Era::Stateless));
        // A name a header cannot carry comes base64-encoded.
        let encoded = headers(&[
            ("mcp-protocol-version", STATELESS),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?cmVhZF9maWxl?="),
        ]);
        assert_eq!(classify(&encoded, &call), Ok(Era::Stateless));
    }

    #[test]
    fn headers_that_disagree_with_the_body_are_refused() {
        let call = request(
            "tools/call",
            json!({"name": "delete_file", "arguments": {}, "_meta": envelope(STATELESS)}),
        );
        let cases: [&[(&'static str, &str)]; 5] = [
            // Routed as a harmless read while the body deletes.
            &[
                ("mcp-protocol-version", STATELESS),
                ("mcp-method", "tools/call"),
                ("mcp-name", "read_file"),
            ],
            &[
                ("mcp-protocol-version", STATELESS),
                ("mcp-method", "tools/list"),
                ("mcp-name", "delete_file"),
            ],
            &[
                ("mcp-protocol-version", STATELESS),
                ("mcp-method", "tools/call"),
            ],
            &[("mcp-method", "tools/call"), ("mcp-name", "delete_file")],
            &[
                ("mcp-protocol-version", STATELESS),
                ("mcp-method", "tools/call"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "delete_file"),
            ],
        ];
        for case in cases {
            let refused = classify(&headers(case), &call).unwrap_err();
            assert_eq!(refused.code, HEADER_MISMATCH, "{case:?}: {refused:?}");
        }
    }

    #[test]
    fn a_stateless_request_needs_its_envelope_and_a_served_version() {
        let routed =
            |method| headers(&[("mcp-protocol-version", STATELESS), ("mcp-method", method)]);
        let without_meta = request("tools/list", json!({}));
        let refused = classify(&routed("tools/list"), &without_meta).unwrap_err();
        assert_eq!(refused.code, INVALID_PARAMS);
        let without_capabilities =
            request("tools/list", json!({"_meta": {VERSION_KEY: STATELESS}}));
        let refused = classify(&routed("tools/list"), &without_capabilities).unwrap_err();
        assert!(refused.message.contains(CAPABILITIES_KEY), "{refused:?}");

        let future = request("server/discover", json!({"_meta": envelope("2027-01-01")}));
        let routed = headers(&[
            ("mcp-protocol-version", "2027-01-01"),
            ("mcp-method", "server/discover"),
        ]);
        let refused = classify(&routed, &future).unwrap_err();
        assert_eq!(refused.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(
            refused.data,
            Some(json!({"requested": "2027-01-01", "supported": [STATELESS]}))
        );
        assert_eq!(
            Era::Stateless.error_status(refused.code),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(Era::Handshake.error_status(refused.code), StatusCode::OK);
    }

    #[test]
    fn discover_names_every_revision_and_stateless_results_say_they_are_complete() {
        let answer = discover("x");
        assert_eq!(answer["supportedVersions"][0], STATELESS);
        assert_eq!(answer["resultType"], "complete");
        assert_eq!(
            (&answer["ttlMs"], &answer["cacheScope"]),
            (&json!(0), &json!("private"))
        );
        assert_eq!(
            Era::Stateless.result(json!({"tools": []}))["resultType"],
            "complete"
        );
        assert!(Era::Handshake
            .result(json!({"tools": []}))
            .get("resultType")
            .is_none());
    }
}
