//! Property tests over hostile user text: arbitrary Unicode (case mappings that change byte
//! length, combining and bidi marks, NUL, byte-order marks), lone surrogates written as JSON
//! escapes, and arbitrary bytes, thrown at the SSE parser, both codecs' request decoders, the
//! plain-text decision and the duplicate-key scan.
//!
//! Each module's properties run with proptest's default case count (PROPTEST_CASES overrides
//! it); `scripts/fuzz.sh` runs them for minutes with fresh seeds.

// Helpers outside #[test] functions panic on bad input too; that is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::{Map, Value};

/// Characters that break code assuming one byte per character, case mapping that keeps
/// lengths, or text without invisible controls.
const TRICKY: &[char] = &[
    '\u{130}',  // İ: lowercases to "i̇", 2 bytes -> 3
    '\u{212A}', // KELVIN SIGN: lowercases to ASCII 'k', 3 bytes -> 1
    '\u{23A}',  // Ⱥ: lowercases to ⱥ, 2 bytes -> 3
    '\u{DF}',   // ß: uppercases to "SS"
    '\u{1E9E}', // ẞ
    '\u{FB03}', // ﬃ: uppercases to "FFI"
    '\u{17F}',  // ſ: uppercases to ASCII 'S'
    '\u{3A3}',  // Σ: lowercases by context
    '\u{301}',  // combining acute
    '\u{308}',  // combining diaeresis
    '\u{20DD}', // combining enclosing circle
    '\u{200F}', // RIGHT-TO-LEFT MARK
    '\u{202E}', // RIGHT-TO-LEFT OVERRIDE
    '\u{2067}', // RIGHT-TO-LEFT ISOLATE
    '\u{200B}', // ZERO WIDTH SPACE
    '\u{200D}', // ZERO WIDTH JOINER
    '\0',
    '\u{1}',
    '\u{7F}',
    '\u{85}',   // NEXT LINE
    '\u{2028}', // LINE SEPARATOR
    '\u{FEFF}', // byte-order mark
    '\u{FFFD}',
    '\u{FFFF}',
    '\u{10FFFF}',
    '\u{1F600}',
    '\r',
    '\n',
    '\t',
    ' ',
    '"',
    '\\',
    ':',
    '<',
    '&',
];

fn hostile_char() -> impl Strategy<Value = char> {
    prop_oneof![
        3 => any::<char>(),
        3 => prop::sample::select(TRICKY),
        2 => prop::char::range(' ', '~'),
    ]
}

/// Hostile characters mixed with `words` (which give the text meaning to the code under test).
fn text_with(words: &'static [&'static str]) -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        5 => hostile_char().prop_map(String::from),
        1 => prop::sample::select(words).prop_map(str::to_owned),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

const NO_WORDS: &[&str] = &["", "\r\n", "İSTANBUL", "o\u{212A}"];

fn hostile_text() -> impl Strategy<Value = String> {
    text_with(NO_WORDS)
}

/// Cuts `bytes` at the given places (any byte, inside UTF-8 characters too).
fn chunks<'a>(bytes: &'a [u8], cuts: &[prop::sample::Index]) -> Vec<&'a [u8]> {
    let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut.index(bytes.len() + 1)).collect();
    cuts.sort_unstable();
    let mut chunks = Vec::new();
    let mut start = 0;
    for cut in cuts {
        chunks.push(&bytes[start..cut]);
        start = cut;
    }
    chunks.push(&bytes[start..]);
    chunks
}

/// `text` as a JSON string literal. Characters whose index has its bit set in `escape_mask`
/// are written as `\u` escapes (astral ones as a surrogate pair), as some clients write them;
/// `inject` puts a raw escape sequence (a lone surrogate) before the character at its index.
fn json_string(text: &str, escape_mask: u64, inject: Option<(usize, &str)>) -> String {
    let mut out = String::from('"');
    let count = text.chars().count();
    for (i, c) in text.chars().chain(std::iter::once('\0')).enumerate() {
        if let Some((at, raw)) = inject {
            if at % (count + 1) == i {
                out.push_str(raw);
            }
        }
        if i == count {
            break;
        }
        if escape_mask & (1 << (i % 64)) != 0 || (c as u32) < 0x20 {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else if c == '"' || c == '\\' {
            out.push('\\');
            out.push(c);
        } else {
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// Lone surrogates, as escapes: each makes the string invalid (serde_json refuses them).
const LONE_SURROGATES: &[&str] = &[
    "\\ud800",
    "\\udfff",
    "\\udc00\\ud800",
    "\\ud83d\\u0041",
    "\\ud83d",
];

/// Arbitrary JSON whose strings are hostile and whose keys are often A2A field names.
fn arb_json() -> impl Strategy<Value = Value> {
    const TOKENS: &[&str] = &[
        "user",
        "agent",
        "ROLE_USER",
        "ROLE_AGENT",
        "text",
        "data",
        "file",
        "message",
        "task",
        "status-update",
        "artifact-update",
        "working",
        "input-required",
        "TASK_STATE_WORKING",
        "TASK_STATE_INPUT_REQUIRED",
        "approve",
        "reject",
        "batch",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        // Fractions with few bits, so they survive JSON text exactly (serde_json's default
        // float parser is not always correctly rounded).
        any::<i32>().prop_map(|n| Value::from(f64::from(n) / 8.0)),
        hostile_text().prop_map(Value::from),
        prop::sample::select(TOKENS).prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((json_key(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

fn json_key() -> impl Strategy<Value = String> {
    const FIELDS: &[&str] = &[
        "message",
        "messageId",
        "role",
        "parts",
        "kind",
        "text",
        "data",
        "file",
        "bytes",
        "uri",
        "raw",
        "url",
        "name",
        "mimeType",
        "mediaType",
        "filename",
        "metadata",
        "configuration",
        "historyLength",
        "acceptedOutputModes",
        "blocking",
        "returnImmediately",
        "id",
        "taskId",
        "contextId",
        "referenceTaskIds",
        "tenant",
        "pageSize",
        "pageToken",
        "status",
        "state",
        "decision_type",
        "decisions",
    ];
    prop_oneof![
        3 => prop::sample::select(FIELDS).prop_map(str::to_owned),
        1 => hostile_text(),
    ]
}

mod sse {
    use super::*;
    use signoff_protocol::sse::{
        encode_comment, encode_data, SseError, SseEvent, SseFrame, SseParser,
    };

    /// Streams that look like SSE: field lines with hostile values and any line end, blank
    /// lines, and (in one stream of four) raw bytes and invalid UTF-8.
    fn sse_soup() -> impl Strategy<Value = Vec<u8>> {
        const FIELDS: &[&str] = &[
            "data:",
            "data: ",
            "data",
            "event: ",
            "id: ",
            "id:",
            "retry: 5",
            ":",
            "x:",
            "",
            "\u{FEFF}data: ",
        ];
        const LINE_ENDS: &[&str] = &["\n", "\r", "\r\n", "\n\n", "\r\r", "\r\n\r\n", ""];
        const INVALID_UTF8: &[&[u8]] = &[
            b"\xff",
            b"\xc3",
            b"\xe2\x9c",
            b"\xed\xa0\x80",
            b"\xf4\x90\x80\x80",
            b"\xc0\xaf",
            b"\xEF\xBB\xBF",
        ];
        fn line() -> impl Strategy<Value = Vec<u8>> {
            (
                prop::sample::select(FIELDS),
                prop_oneof![3 => hostile_text(), 1 => Just("[DONE]".to_owned())],
                prop::sample::select(LINE_ENDS),
            )
                .prop_map(|(field, value, end)| format!("{field}{value}{end}").into_bytes())
        }
        let raw = prop_oneof![
            4 => line(),
            1 => prop::collection::vec(any::<u8>(), 0..8),
            1 => prop::sample::select(INVALID_UTF8).prop_map(<[u8]>::to_vec),
        ];
        prop_oneof![
            3 => prop::collection::vec(line(), 0..16),
            1 => prop::collection::vec(raw, 0..16),
        ]
        .prop_map(|pieces| pieces.concat())
    }

    /// Everything a stream yields up to its first error, and the last event id.
    fn parse(limit: usize, chunks: &[&[u8]]) -> Result<(Vec<SseFrame>, Option<String>), SseError> {
        let mut parser = SseParser::new(limit);
        let mut frames = Vec::new();
        for chunk in chunks {
            frames.extend(parser.feed(chunk)?);
        }
        frames.extend(parser.finish()?);
        Ok((frames, parser.last_event_id().map(str::to_owned)))
    }

    fn limit() -> impl Strategy<Value = usize> {
        prop_oneof![0..64usize, Just(1 << 16)]
    }

    proptest! {
        /// Any bytes, any chunking, any limit: no panic, even when fed on after an error.
        #[test]
        fn arbitrary_bytes_never_panic(
            bytes in sse_soup(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
            limit in limit(),
        ) {
            let mut parser = SseParser::new(limit);
            for chunk in chunks(&bytes, &cuts) {
                let _ = parser.feed(chunk);
            }
            let _ = parser.finish();
            let _ = parser.last_event_id();
        }

        /// Chunks end anywhere: fed whole or cut up, a stream yields the same frames, last
        /// event id and first error.
        #[test]
        fn chunking_never_changes_the_result(
            bytes in sse_soup(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
            limit in limit(),
        ) {
            prop_assert_eq!(parse(limit, &chunks(&bytes, &cuts)), parse(limit, &[bytes.as_slice()]));
        }

        /// `encode_data` of any text parses back to that text (line ends become LF, as SSE
        /// has only one), whatever comments are between the events and however the stream is cut.
        #[test]
        fn encoded_hostile_text_parses_back(
            events in prop::collection::vec((prop::option::of(hostile_text()), hostile_text()), 1..5),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
        ) {
            let mut stream = String::new();
            let mut expected = Vec::new();
            for (comment, data) in &events {
                if let Some(comment) = comment {
                    stream.push_str(&encode_comment(comment));
                }
                stream.push_str(&encode_data(data));
                let data = data.replace("\r\n", "\n").replace('\r', "\n");
                expected.push(if data == "[DONE]" {
                    SseFrame::Done
                } else {
                    SseFrame::Event(SseEvent { event: None, id: None, data })
                });
            }
            let parsed = parse(1 << 20, &chunks(stream.as_bytes(), &cuts));
            prop_assert_eq!(parsed, Ok((expected, None)));
        }
    }
}

mod codec {
    use super::*;
    use signoff_protocol::codec::{self, Method};
    use signoff_protocol::json_keys::{reject_duplicate_keys, KeyError};
    use signoff_protocol::jsonrpc::{Request, Response};
    use signoff_protocol::{
        FileBody, FileContent, Message, Part, PartContent, ProtocolVersion, Role,
        SendConfiguration, SendMessageParams,
    };

    const VERSIONS: [ProtocolVersion; 2] = [ProtocolVersion::V0_3, ProtocolVersion::V1_0];

    /// Every decoder that reads what a peer sent; the result does not matter, only that
    /// there is one.
    fn decode_everything(value: &Value) {
        for v in VERSIONS {
            let _ = codec::decode_send_params(v, value);
            let _ = codec::decode_task_query(v, value);
            let _ = codec::decode_task_id_params(v, value);
            let _ = codec::decode_event(v, value);
            let _ = codec::decode_send_result(v, value);
            let _ = codec::decode_task(v, value);
            let _ = codec::decode_message(v, value);
            let _ = codec::decode_stream_response(v, &value.to_string());
        }
        let _ = codec::decode_list_tasks_params(value);
        let _ = codec::decode_list_tasks_result(value);
        let _ = codec::decode_agent_card(value);
        let _ = serde_json::from_value::<Request>(value.clone());
        let _ = Response::from_value(value.clone());
    }

    /// Replaces the `n`th node (pre-order, modulo the node count) of `value`.
    fn replace_node(value: &mut Value, n: usize, replacement: Value) {
        fn count(value: &Value) -> usize {
            1 + match value {
                Value::Array(items) => items.iter().map(count).sum(),
                Value::Object(object) => object.values().map(count).sum(),
                Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => 0,
            }
        }
        fn walk(value: &mut Value, n: &mut usize, replacement: &mut Option<Value>) {
            if *n == 0 {
                if let Some(replacement) = replacement.take() {
                    *value = replacement;
                }
                return;
            }
            *n -= 1;
            match value {
                Value::Array(items) => items.iter_mut().for_each(|v| walk(v, n, replacement)),
                Value::Object(object) => object.values_mut().for_each(|v| walk(v, n, replacement)),
                Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
            }
        }
        let mut n = n % count(value);
        walk(value, &mut n, &mut Some(replacement));
    }

    fn hostile_object() -> impl Strategy<Value = Map<String, Value>> {
        prop::collection::vec((json_key(), arb_json()), 0..4)
            .prop_map(|entries| entries.into_iter().collect())
    }

    fn hostile_part() -> impl Strategy<Value = Part> {
        let content = prop_oneof![
            hostile_text().prop_map(PartContent::Text),
            hostile_object().prop_map(|data| PartContent::Data(Value::Object(data))),
            (
                prop::option::of(hostile_text()),
                prop::option::of(hostile_text()),
                prop_oneof![
                    hostile_text().prop_map(FileBody::Bytes),
                    hostile_text().prop_map(FileBody::Uri),
                ],
            )
                .prop_map(|(name, media_type, body)| {
                    PartContent::File(FileContent {
                        name,
                        media_type,
                        body,
                    })
                }),
        ];
        (content, prop::option::of(hostile_object()))
            .prop_map(|(content, metadata)| Part { content, metadata })
    }

    /// Send params with hostile text in every string the model has.
    fn hostile_send_params() -> impl Strategy<Value = SendMessageParams> {
        let message = (
            hostile_text(),
            prop_oneof![Just(Role::User), Just(Role::Agent)],
            prop::collection::vec(hostile_part(), 1..4),
            prop::option::of(hostile_text()),
            prop::option::of(hostile_text()),
            prop::collection::vec(hostile_text(), 0..3),
            prop::option::of(hostile_object()),
            prop::collection::vec(hostile_text(), 0..3),
        )
            .prop_map(
                |(
                    message_id,
                    role,
                    parts,
                    task_id,
                    context_id,
                    reference_task_ids,
                    metadata,
                    extensions,
                )| {
                    Message {
                        message_id,
                        role,
                        parts,
                        task_id,
                        context_id,
                        reference_task_ids,
                        metadata,
                        extensions,
                    }
                },
            );
        let configuration = (
            prop::collection::vec(hostile_text(), 0..3),
            prop::option::of(any::<u32>()),
            prop::option::of(any::<bool>()),
        )
            .prop_map(
                |(accepted_output_modes, history_length, blocking)| SendConfiguration {
                    accepted_output_modes,
                    history_length,
                    blocking,
                    push: None,
                },
            );
        (
            message,
            prop::option::of(configuration),
            prop::option::of(hostile_object()),
        )
            .prop_map(|(message, configuration, metadata)| SendMessageParams {
                message,
                configuration,
                metadata,
            })
    }

    /// What the server does with a body (crates/server/src/http/a2a.rs): parse, read the
    /// envelope, then decode the params of `message/send` in the request's version.
    fn decode_send_body(v: ProtocolVersion, body: &[u8]) -> Result<SendMessageParams, String> {
        let value: Value = serde_json::from_slice(body).map_err(|err| err.to_string())?;
        let object = value.as_object().ok_or("not an object")?;
        if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err("not JSON-RPC 2.0".to_owned());
        }
        let name = object
            .get("method")
            .and_then(Value::as_str)
            .ok_or("no method")?;
        if Method::from_name(v, name) != Some(Method::SendMessage) {
            return Err(format!("not message/send: {name}"));
        }
        let params = object.get("params").cloned().unwrap_or(Value::Null);
        codec::decode_send_params(v, &params).map_err(|err| err.to_string())
    }

    /// A `message/send` body as a client would write it, with `text_literal` as the text.
    fn send_body(v: ProtocolVersion, text_literal: &str) -> String {
        match v {
            ProtocolVersion::V0_3 => format!(
                r#"{{"jsonrpc":"2.0","id":7,"method":"message/send","params":{{"message":{{"kind":"message","messageId":"m-1","role":"user","parts":[{{"kind":"text","text":{text_literal}}}]}}}}}}"#
            ),
            ProtocolVersion::V1_0 => format!(
                r#"{{"jsonrpc":"2.0","id":"7","method":"SendMessage","params":{{"message":{{"messageId":"m-1","role":"ROLE_USER","parts":[{{"text":{text_literal}}}]}}}}}}"#
            ),
        }
    }

    proptest! {
        /// Any JSON at all, handed to every decoder of both versions: errors, never panics.
        #[test]
        fn arbitrary_json_never_panics(value in arb_json()) {
            decode_everything(&value);
        }

        /// Valid params with one node swapped for arbitrary JSON: errors, never panics.
        #[test]
        fn mutated_send_params_never_panic(
            params in hostile_send_params(),
            node in any::<usize>(),
            replacement in arb_json(),
        ) {
            for v in VERSIONS {
                let mut value = codec::encode_send_params(v, &params);
                replace_node(&mut value, node, replacement.clone());
                decode_everything(&value);
            }
        }

        /// Hostile text in every string field survives both codecs, through JSON text and back,
        /// exactly.
        #[test]
        fn hostile_strings_in_every_field_decode_exactly(params in hostile_send_params()) {
            for v in VERSIONS {
                let body = serde_json::to_vec(&codec::encode_send_params(v, &params)).unwrap();
                let value: Value = serde_json::from_slice(&body).unwrap();
                prop_assert_eq!(codec::decode_send_params(v, &value), Ok(params.clone()));
            }
        }

        /// A `message/send` body whose text is any Unicode, partly written as `\u` escapes,
        /// decodes (as the server decodes it) to that exact text.
        #[test]
        fn a_send_body_keeps_its_exact_text(text in hostile_text(), escape_mask in any::<u64>()) {
            let literal = json_string(&text, escape_mask, None);
            for v in VERSIONS {
                let body = send_body(v, &literal);
                prop_assert_eq!(reject_duplicate_keys(body.as_bytes()), Ok(()));
                let params = decode_send_body(v, body.as_bytes());
                let params = params.map_err(|err| TestCaseError::fail(format!("{err}: {body}")))?;
                prop_assert_eq!(&params.message.parts, &vec![Part::text(text.clone())]);
                prop_assert_eq!(params.message.text(), text.clone());
            }
        }

        /// A lone surrogate escape anywhere in the text makes the body invalid JSON: a parse
        /// error for the server and a syntax error for the duplicate-key scan, no panic.
        #[test]
        fn a_lone_surrogate_is_a_parse_error(
            text in hostile_text(),
            escape_mask in any::<u64>(),
            at in any::<usize>(),
            surrogate in prop::sample::select(LONE_SURROGATES),
        ) {
            let literal = json_string(&text, escape_mask, Some((at, surrogate)));
            for v in VERSIONS {
                let body = send_body(v, &literal);
                prop_assert!(serde_json::from_slice::<Value>(body.as_bytes()).is_err(), "{}", body);
                prop_assert!(decode_send_body(v, body.as_bytes()).is_err());
                prop_assert!(matches!(reject_duplicate_keys(body.as_bytes()), Err(KeyError::Syntax(_))));
            }
        }
    }
}

mod decision {
    use super::*;
    use signoff_protocol::hitl::{Decision, DecisionError};
    use signoff_protocol::{Message, Part, Role};

    const APPROVE_WORDS: [&str; 5] = ["approve", "approved", "yes", "proceed", "continue"];
    const POLITE_WORDS: [&str; 8] = [
        "please", "ok", "okay", "go", "ahead", "sure", "thanks", "all",
    ];
    const REJECT_WORDS: [&str; 5] = ["deny", "reject", "no", "cancel", "stop"];
    const DECISION_WORDS: &[&str] = &[
        "approve", "APPROVED", "yes", "Proceed", "no", "Reject", "stop", "please", "ok",
    ];

    /// Text of characters that are not letters or digits: what may surround a decision word.
    fn separators() -> impl Strategy<Value = String> {
        prop::collection::vec(
            hostile_char().prop_map(|c| if c.is_alphanumeric() { ' ' } else { c }),
            0..12,
        )
        .prop_map(|chars| chars.into_iter().collect())
    }

    /// The word in a random mix of upper and lower case.
    fn any_case(word: &'static str) -> impl Strategy<Value = String> {
        any::<u64>().prop_map(move |mask| {
            word.chars()
                .enumerate()
                .map(|(i, c)| {
                    if mask & (1 << i) != 0 {
                        c.to_ascii_uppercase()
                    } else {
                        c
                    }
                })
                .collect()
        })
    }

    /// `text` cut at the given places, each moved back to a character boundary.
    fn char_chunks(text: &str, cuts: &[prop::sample::Index]) -> Vec<String> {
        let mut cuts: Vec<usize> = cuts
            .iter()
            .map(|cut| {
                let mut at = cut.index(text.len() + 1);
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                at
            })
            .collect();
        cuts.sort_unstable();
        let mut chunks = Vec::new();
        let mut start = 0;
        for cut in cuts {
            chunks.push(text[start..cut].to_owned());
            start = cut;
        }
        chunks.push(text[start..].to_owned());
        chunks
    }

    fn text_message(parts: Vec<Part>) -> Message {
        Message::new("m", Role::User, parts)
    }

    proptest! {
        /// Any text: a decision or none, never a panic; from a message, the same as from its text
        /// read as a reply; a reply decides at least whenever the text decision does, the same way.
        #[test]
        fn arbitrary_text_never_panics(text in text_with(DECISION_WORDS)) {
            let decided = Decision::from_reply(&text);
            let from_message = Decision::from_message_or_text(&text_message(vec![Part::text(&text)]));
            prop_assert_eq!(from_message, decided.clone().ok_or(DecisionError::NoDecision));
            if let Some(decision) = Decision::from_text(&text) {
                prop_assert_eq!(decided, Some(decision));
            }
        }

        /// Approve and polite words in any case, between any non-word characters, approve.
        #[test]
        fn approval_words_among_any_separators_approve(
            words in prop::collection::vec(
                prop_oneof![
                    prop::sample::select(&APPROVE_WORDS[..]),
                    prop::sample::select(&POLITE_WORDS[..]),
                ],
                0..5,
            ),
            approve in prop::sample::select(&APPROVE_WORDS[..]),
            at in any::<prop::sample::Index>(),
            cases in any::<u64>(),
            gaps in prop::collection::vec(separators(), 7),
        ) {
            let mut words: Vec<&str> = words;
            words.insert(at.index(words.len() + 1), approve);
            let mut text = gaps[0].clone();
            for (i, word) in words.iter().enumerate() {
                let cased: String = word
                    .chars()
                    .enumerate()
                    .map(|(j, c)| if cases & (1 << ((i * 8 + j) % 64)) != 0 { c.to_ascii_uppercase() } else { c })
                    .collect();
                text.push(' ');
                text.push_str(&cased);
                text.push(' ');
                text.push_str(&gaps[(i + 1) % gaps.len()]);
            }
            prop_assert_eq!(Decision::from_text(&text), Some(Decision::approve_all()), "{:?}", text);
        }

        /// A reject word in any text without an approve word rejects, with the whole text
        /// (trimmed) as the reason.
        #[test]
        fn a_reject_word_in_any_text_rejects(
            before in hostile_text(),
            word in prop::sample::select(&REJECT_WORDS[..]).prop_flat_map(any_case),
            after in hostile_text(),
        ) {
            let lower = format!("{before} {after}").to_lowercase();
            // Rare, but random text may spell an approve word; then the rule is different.
            prop_assume!(!APPROVE_WORDS.iter().any(|approve| lower.contains(approve)));
            let text = format!("{before} {word} {after}");
            prop_assert_eq!(
                Decision::from_text(&text),
                Some(Decision::deny_all(Some(text.trim().to_owned()))),
                "{:?}", text
            );
        }

        /// An approve word next to a reject word, anywhere in any text, decides nothing.
        #[test]
        fn approve_and_reject_together_decide_nothing(
            texts in prop::collection::vec(hostile_text(), 3),
            approve in prop::sample::select(&APPROVE_WORDS[..]).prop_flat_map(any_case),
            reject in prop::sample::select(&REJECT_WORDS[..]).prop_flat_map(any_case),
            reject_first in any::<bool>(),
        ) {
            let (first, second) = if reject_first { (&reject, &approve) } else { (&approve, &reject) };
            let text = format!("{} {first} {} {second} {}", texts[0], texts[1], texts[2]);
            prop_assert_eq!(Decision::from_text(&text), None, "{:?}", text);
        }

        /// A message's text parts are joined before deciding: however the text is split into
        /// parts, and whatever DataParts without a decision sit between them, the decision is
        /// the same as for the whole text.
        #[test]
        fn text_split_into_parts_decides_like_the_whole(
            text in text_with(DECISION_WORDS),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
            data in prop::collection::vec(arb_json(), 0..3),
        ) {
            prop_assume!(data.iter().all(|data| data.get("decision_type").is_none()));
            let mut parts: Vec<Part> = char_chunks(&text, &cuts).into_iter().map(Part::text).collect();
            for (i, data) in data.into_iter().enumerate() {
                parts.insert(i.min(parts.len()), Part::data(data));
            }
            let message = text_message(parts);
            prop_assert_eq!(
                Decision::from_message_or_text(&message),
                Decision::from_reply(&text).ok_or(DecisionError::NoDecision)
            );
        }

        /// Any JSON as a decision DataPart: a decision or an error, never a panic.
        #[test]
        fn arbitrary_decision_data_never_panics(data in arb_json(), text in hostile_text()) {
            let _ = Decision::from_data(&data);
            let mut decision = Map::new();
            decision.insert("decision_type".to_owned(), data);
            let message = text_message(vec![Part::data(Value::Object(decision)), Part::text(text)]);
            let _ = Decision::from_message_or_text(&message);
        }
    }
}

mod json_keys {
    use super::*;
    use signoff_protocol::json_keys::{reject_duplicate_keys, KeyError};

    /// A generated document, written by hand so keys can repeat and be spelled with escapes.
    #[derive(Debug, Clone)]
    enum Doc {
        Scalar(&'static str),
        Array(Vec<Doc>),
        Object(Vec<(String, u64, Doc)>),
    }

    /// Few keys, so they repeat; some equal only after unescaping or only after (wrongly)
    /// normalizing or case-folding them.
    const KEYS: &[&str] = &[
        "a",
        "b",
        "A",
        "é",
        "e\u{301}",
        "\u{130}",
        "i\u{307}",
        "\u{212A}",
        "k",
        "",
        "a.b",
        "\u{1F600}",
        "\0",
        "\"",
        "[0]",
    ];

    fn doc() -> impl Strategy<Value = Doc> {
        const SCALARS: &[&str] = &["1", "-0.5e3", "null", "true", "\"s\"", "\"\\u00e9\""];
        fn key() -> impl Strategy<Value = String> {
            prop_oneof![
                4 => prop::sample::select(KEYS).prop_map(str::to_owned),
                1 => hostile_text(),
            ]
        }
        let value = prop::sample::select(SCALARS)
            .prop_map(Doc::Scalar)
            .prop_recursive(5, 40, 5, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..5).prop_map(Doc::Array),
                    prop::collection::vec((key(), any::<u64>(), inner), 0..5).prop_map(Doc::Object),
                ]
            });
        // An object at the top, as every request body has.
        prop::collection::vec((key(), any::<u64>(), value), 0..6).prop_map(Doc::Object)
    }

    fn write(doc: &Doc, out: &mut String) {
        match doc {
            Doc::Scalar(scalar) => out.push_str(scalar),
            Doc::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            Doc::Object(entries) => {
                out.push_str("{ ");
                for (i, (key, escapes, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" ,\n");
                    }
                    out.push_str(&json_string(key, *escapes, None));
                    out.push_str(" : ");
                    write(value, out);
                }
                out.push('}');
            }
        }
    }

    /// The documented path: `.key`, or `["key"]` for a key that is empty or holds `.`,
    /// brackets, quotes, a backslash, whitespace or a control character.
    fn push_key(path: &mut String, key: &str) {
        let quoted = key.is_empty()
            || key.chars().any(|c| {
                matches!(c, '.' | '[' | ']' | '"' | '\\') || c.is_whitespace() || c.is_control()
            });
        if quoted {
            path.push_str(&format!("[{}]", serde_json::to_string(key).unwrap()));
        } else {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(key);
        }
    }

    /// The first repeated key in document order, with its path: a plain tree walk.
    fn first_duplicate(doc: &Doc, path: &str) -> Option<(String, String)> {
        match doc {
            Doc::Scalar(_) => None,
            Doc::Array(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, item)| first_duplicate(item, &format!("{path}[{i}]"))),
            Doc::Object(entries) => {
                let mut seen: Vec<&str> = Vec::new();
                for (key, _, value) in entries {
                    let mut key_path = path.to_owned();
                    push_key(&mut key_path, key);
                    if seen.contains(&key.as_str()) {
                        return Some((key_path, key.clone()));
                    }
                    if let Some(found) = first_duplicate(value, &key_path) {
                        return Some(found);
                    }
                    seen.push(key);
                }
                None
            }
        }
    }

    fn doc_text() -> impl Strategy<Value = String> {
        doc().prop_map(|doc| {
            let mut text = String::new();
            write(&doc, &mut text);
            text
        })
    }

    /// Bytes that are JSON-ish: generated documents, documents with a span replaced by
    /// JSON tokens or raw bytes, and token soup.
    fn json_soup() -> impl Strategy<Value = Vec<u8>> {
        const TOKENS: &[&str] = &[
            "{",
            "}",
            "[",
            "]",
            ":",
            ",",
            "\"a\"",
            "\"\\u0061\"",
            "\"\\ud800\"",
            "\"",
            "\\",
            "1",
            "-",
            "1e999",
            "null",
            "tru",
            " ",
            "\n",
        ];
        fn piece() -> impl Strategy<Value = Vec<u8>> {
            prop_oneof![
                4 => prop::sample::select(TOKENS).prop_map(|token| token.as_bytes().to_vec()),
                1 => hostile_text().prop_map(String::into_bytes),
                1 => prop::collection::vec(any::<u8>(), 0..6),
            ]
        }
        let soup = prop::collection::vec(piece(), 0..60).prop_map(|pieces| pieces.concat());
        let spliced = (doc_text(), any::<prop::sample::Index>(), 0..8usize, piece()).prop_map(
            |(text, at, len, piece)| {
                let mut bytes = text.into_bytes();
                let at = at.index(bytes.len() + 1);
                let end = (at + len).min(bytes.len());
                bytes.splice(at..end, piece);
                bytes
            },
        );
        prop_oneof![
            1 => doc_text().prop_map(String::into_bytes),
            2 => spliced,
            1 => soup,
        ]
    }

    proptest! {
        /// Any bytes: an answer, never a panic; a syntax error exactly when serde_json cannot
        /// parse them either (unless a duplicate came first).
        #[test]
        fn arbitrary_bytes_never_panic(bytes in json_soup()) {
            let found = reject_duplicate_keys(&bytes);
            let parses = serde_json::from_slice::<Value>(&bytes).is_ok();
            match found {
                Ok(()) => prop_assert!(parses),
                Err(KeyError::Syntax(_)) => prop_assert!(!parses),
                Err(KeyError::Duplicate { .. }) => {}
            }
        }

        /// Generated documents: the scan finds exactly the first duplicate a tree walk finds.
        #[test]
        fn agrees_with_a_tree_walk(doc in doc()) {
            let mut text = String::new();
            write(&doc, &mut text);
            let expected = match first_duplicate(&doc, "") {
                None => Ok(()),
                Some((path, key)) => Err(KeyError::Duplicate { path, key }),
            };
            prop_assert_eq!(reject_duplicate_keys(text.as_bytes()), expected, "{}", text);
            prop_assert!(serde_json::from_str::<Value>(&text).is_ok(), "{}", text);
        }
    }
}
