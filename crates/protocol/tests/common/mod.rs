//! Helpers shared by the protocol crate's integration tests: fixtures, SSE parsing, goldens.

#![allow(dead_code)] // each test binary uses a different subset
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use signoff_protocol::codec;
use signoff_protocol::sse::{SseFrame, SseParser};
use signoff_protocol::{Message, ProtocolVersion, StreamEvent};

/// Generous: the largest recorded event is under 10 KiB.
pub const MAX_EVENT_BYTES: usize = 1 << 20;

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kagent-0.10.4")
}

/// The fixture files with this suffix, sorted, as (name, path).
pub fn fixtures(suffix: &str) -> Vec<(String, PathBuf)> {
    let mut found: Vec<(String, PathBuf)> = fs::read_dir(fixtures_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?.to_owned();
            name.ends_with(suffix).then_some((name, path))
        })
        .collect();
    found.sort();
    assert!(!found.is_empty(), "no fixtures ending in {suffix}");
    found
}

pub fn fixture_bytes(name: &str) -> Vec<u8> {
    fs::read(fixtures_dir().join(name)).unwrap_or_else(|err| panic!("{name}: {err}"))
}

pub fn fixture_json(name: &str) -> Value {
    serde_json::from_slice(&fixture_bytes(name)).unwrap_or_else(|err| panic!("{name}: {err}"))
}

/// Parses a byte stream cut into the given chunks, `finish` included.
pub fn parse_chunks<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Vec<SseFrame> {
    let mut parser = SseParser::new(MAX_EVENT_BYTES);
    let mut frames = Vec::new();
    for chunk in chunks {
        frames.extend(parser.feed(chunk).unwrap());
    }
    frames.extend(parser.finish().unwrap());
    frames
}

/// The events of a recorded v0.3 stream, decoded into the model.
pub fn stream_events(name: &str) -> Vec<StreamEvent> {
    let bytes = fixture_bytes(name);
    decode_frames(name, &parse_chunks([bytes.as_slice()]))
}

pub fn decode_frames(name: &str, frames: &[SseFrame]) -> Vec<StreamEvent> {
    frames
        .iter()
        .enumerate()
        .map(|(i, frame)| match frame {
            SseFrame::Event(event) => {
                codec::decode_stream_response(ProtocolVersion::V0_3, &event.data)
                    .unwrap_or_else(|err| panic!("{name} event {i}: {err}"))
                    .unwrap_or_else(|err| panic!("{name} event {i} is an error: {err:?}"))
            }
            SseFrame::Done => panic!("{name} event {i}: unexpected [DONE]"),
        })
        .collect()
}

/// Compares `actual` with `tests/golden/<name>.json`; `UPDATE_GOLDEN=1` rewrites the file.
pub fn check_golden(name: &str, actual: &Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.json"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        let text = serde_json::to_string_pretty(actual).unwrap();
        fs::write(&path, text + "\n").unwrap();
        return;
    }
    let text = fs::read_to_string(&path).unwrap_or_else(|err| {
        panic!(
            "{}: {err} (run with UPDATE_GOLDEN=1 to create it)",
            path.display()
        )
    });
    let expected: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        actual,
        &expected,
        "{name} differs from {}; if the change is intended, re-bless with UPDATE_GOLDEN=1\nactual: {}",
        path.display(),
        serde_json::to_string_pretty(actual).unwrap()
    );
}

/// The messages carried by the status updates of a stream, in order.
pub fn status_messages(events: &[StreamEvent]) -> Vec<&Message> {
    events
        .iter()
        .filter_map(|event| {
            let StreamEvent::StatusUpdate(update) = event else {
                return None;
            };
            update.status.message.as_ref()
        })
        .collect()
}
