//! The SSE parser: line ends, fields, comments, `[DONE]`, UTF-8 split across chunks, and the
//! bounded buffer. Every case is checked fed whole and fed one byte at a time.

// Helpers outside #[test] functions panic on bad input too; that is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use signoff_protocol::sse::{encode_comment, encode_data, SseError, SseEvent, SseFrame, SseParser};

fn data(data: &str) -> SseFrame {
    SseFrame::Event(SseEvent {
        event: None,
        id: None,
        data: data.to_owned(),
    })
}

fn parse<'a>(
    limit: usize,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Vec<SseFrame>, SseError> {
    let mut parser = SseParser::new(limit);
    let mut frames = Vec::new();
    for chunk in chunks {
        frames.extend(parser.feed(chunk)?);
    }
    frames.extend(parser.finish()?);
    Ok(frames)
}

/// Parses `input` whole and byte by byte; both must give `expect`.
fn check(input: &[u8], expect: Result<Vec<SseFrame>, SseError>) {
    assert_eq!(
        parse(1024, [input]),
        expect,
        "whole: {:?}",
        String::from_utf8_lossy(input)
    );
    assert_eq!(
        parse(1024, input.chunks(1)),
        expect,
        "byte by byte: {:?}",
        String::from_utf8_lossy(input)
    );
}

#[test]
fn every_line_end_works() {
    for input in [
        "data: a\n\ndata: b\n\n",
        "data: a\r\n\r\ndata: b\r\n\r\n",
        "data: a\r\rdata: b\r\r",
        "data: a\r\n\ndata: b\n\r",
    ] {
        check(input.as_bytes(), Ok(vec![data("a"), data("b")]));
    }
}

#[test]
fn a_crlf_split_across_chunks_is_one_line_end() {
    // If the LF after a chunk-final CR were a line of its own, this would be two events.
    let frames = parse(1024, [&b"data: a\r"[..], b"\ndata: b\r", b"\n\r", b"\n"]).unwrap();
    assert_eq!(frames, vec![data("a\nb")]);
}

#[test]
fn data_lines_join_with_newlines() {
    check(
        b"data: {\"a\":\ndata: 1}\n\n",
        Ok(vec![data("{\"a\":\n1}")]),
    );
    check(
        b"data:no space\ndata:  two\n\n",
        Ok(vec![data("no space\n two")]),
    );
    check(b"data\n\n", Ok(vec![data("")]));
    check(b"data:\ndata:\n\n", Ok(vec![data("\n")]));
}

#[test]
fn comments_and_unknown_fields_are_ignored() {
    check(
        b": keep-alive\n\n:another\nretry: 100\nfoo: bar\ndata: x\n\n",
        Ok(vec![data("x")]),
    );
    check(encode_comment("keep-alive").as_bytes(), Ok(vec![]));
}

#[test]
fn event_and_id_fields_belong_to_their_event() {
    check(
        b"event: update\nid: 7\ndata: x\n\ndata: y\n\n",
        Ok(vec![
            SseFrame::Event(SseEvent {
                event: Some("update".to_owned()),
                id: Some("7".to_owned()),
                data: "x".to_owned(),
            }),
            data("y"),
        ]),
    );
    let mut parser = SseParser::new(1024);
    parser
        .feed(b"id: 7\ndata: x\n\ndata: y\n\nid: bad\0id\ndata: z\n\n")
        .unwrap();
    assert_eq!(parser.last_event_id(), Some("7"));
    // An event with no data is not dispatched; its event name does not leak into the next.
    check(b"event: ping\n\ndata: z\n\n", Ok(vec![data("z")]));
}

#[test]
fn done_marker_is_a_frame_of_its_own() {
    check(
        b"data: 1\n\ndata: [DONE]\n\n",
        Ok(vec![data("1"), SseFrame::Done]),
    );
}

#[test]
fn utf8_split_across_chunks_is_decoded_whole() {
    let input = "data: héllo ✓ 😀\n\n".as_bytes();
    for split in 0..=input.len() {
        let frames = parse(1024, [&input[..split], &input[split..]]).unwrap();
        assert_eq!(frames, vec![data("héllo ✓ 😀")], "split at {split}");
    }
}

#[test]
fn invalid_utf8_is_an_error() {
    check(b"data: \xff\xfe\n\n", Err(SseError::InvalidUtf8));
}

#[test]
fn a_leading_byte_order_mark_is_dropped() {
    check(b"\xEF\xBB\xBFdata: x\n\n", Ok(vec![data("x")]));
}

#[test]
fn the_last_event_is_delivered_without_its_blank_line() {
    check(b"data: a\n\ndata: b", Ok(vec![data("a"), data("b")]));
    check(b"data: a\n\ndata: b\n", Ok(vec![data("a"), data("b")]));
}

#[test]
fn an_event_larger_than_the_limit_is_refused() {
    let limit = 16;
    let error = Err(SseError::EventTooLarge { limit });
    // One long line, never ended.
    let long = vec![b'x'; 100];
    assert_eq!(parse(limit, [long.as_slice()]), error);
    assert_eq!(parse(limit, long.chunks(1)), error);
    // Many short data lines that add up.
    let many = "data: 12345\n".repeat(5);
    assert_eq!(parse(limit, [many.as_bytes()]), error);
    assert_eq!(parse(limit, many.as_bytes().chunks(1)), error);
    // Events under the limit pass, however many there are.
    let fine = "data: 12345\n\n".repeat(50);
    assert_eq!(parse(limit, [fine.as_bytes()]).unwrap().len(), 50);
    assert_eq!(
        SseError::EventTooLarge { limit }.to_string(),
        "an SSE event is larger than the limit of 16 bytes"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever the data and the chunking, what `encode_data` writes parses back to it.
    #[test]
    fn encoded_events_parse_back_in_any_chunking(
        events in prop::collection::vec("[a-z {}\"é✓\n]{0,20}", 1..5),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..10),
    ) {
        let stream: String = events.iter().map(|event| encode_data(event)).collect();
        let bytes = stream.as_bytes();
        let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut.index(bytes.len() + 1)).collect();
        cuts.sort_unstable();
        let mut chunks = Vec::new();
        let mut start = 0;
        for cut in cuts {
            chunks.push(&bytes[start..cut]);
            start = cut;
        }
        chunks.push(&bytes[start..]);
        let expected: Vec<SseFrame> = events.iter().map(|event| data(event)).collect();
        prop_assert_eq!(parse(1 << 16, chunks).unwrap(), expected);
    }
}
