//! An incremental Server-Sent Events parser and writer (docs/wire.md, SSE framing).
//!
//! Browsers cannot POST with `EventSource`, so the UI reads the response body itself; chunks
//! end anywhere, inside a line or inside a UTF-8 character. The parser therefore buffers
//! BYTES and decodes a line only once its end is seen (a line end is an ASCII byte, never part
//! of a multi-byte character). Lines end with LF, CRLF or a lone CR, as the SSE spec allows.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if the event had one.
    pub event: Option<String>,
    /// The `id:` field given in THIS event, if any (see [`SseParser::last_event_id`]).
    pub id: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// What the parser yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseFrame {
    Event(SseEvent),
    /// `data: [DONE]`, the end-of-stream marker some peers (OpenAI-style) send.
    Done,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// One event (its data, fields and the line being read) grew past the parser's limit.
    #[error("an SSE event is larger than the limit of {limit} bytes")]
    EventTooLarge { limit: usize },
    #[error("an SSE line is not valid UTF-8")]
    InvalidUtf8,
}

const DONE: &str = "[DONE]";
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Feed it bytes as they arrive; it returns the events completed so far.
///
/// After an error the parser has dropped the event it was reading; the stream is not
/// trustworthy any more and should be abandoned.
#[derive(Debug, Clone)]
pub struct SseParser {
    /// The bytes of the line being read. Together with `data`, `event` and `id` it is held
    /// under `max_event_bytes`, so a peer that never ends a line or an event cannot make the
    /// client (a browser tab) buffer without bound.
    line: Vec<u8>,
    data: String,
    event: Option<String>,
    id: Option<String>,
    last_event_id: Option<String>,
    /// The previous chunk ended with CR: a LF starting this chunk ends the same line.
    after_cr: bool,
    /// No line has been read yet (a byte-order mark may start the stream).
    at_start: bool,
    max_event_bytes: usize,
}

impl SseParser {
    /// A parser that refuses any event larger than `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> Self {
        SseParser {
            line: Vec::new(),
            data: String::new(),
            event: None,
            id: None,
            last_event_id: None,
            after_cr: false,
            at_start: true,
            max_event_bytes,
        }
    }

    /// The last `id:` seen in the stream (SSE's "last event ID", kept across events).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// Reads a chunk; returns the frames it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseFrame>, SseError> {
        let mut frames = Vec::new();
        let mut rest = chunk;
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(end) = rest
            .iter()
            .position(|byte| *byte == b'\n' || *byte == b'\r')
        {
            self.line.extend_from_slice(&rest[..end]);
            self.check_size()?;
            let terminator_len = match (rest[end], rest.get(end + 1)) {
                (b'\r', Some(b'\n')) => 2,
                (b'\r', None) => {
                    // The LF of a CRLF may come in the next chunk.
                    self.after_cr = true;
                    1
                }
                (_, _) => 1,
            };
            rest = &rest[end + terminator_len..];
            let line = std::mem::take(&mut self.line);
            if let Some(frame) = self.process_line(&line)? {
                frames.push(frame);
            }
        }
        self.line.extend_from_slice(rest);
        self.check_size()?;
        Ok(frames)
    }

    /// The stream ended. Leniently, a last line or event without its terminating blank line
    /// is still delivered (a truncated JSON payload then fails to decode, loudly).
    pub fn finish(&mut self) -> Result<Vec<SseFrame>, SseError> {
        let mut frames = Vec::new();
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            if let Some(frame) = self.process_line(&line)? {
                frames.push(frame);
            }
        }
        if let Some(frame) = self.dispatch() {
            frames.push(frame);
        }
        self.after_cr = false;
        Ok(frames)
    }

    fn check_size(&mut self) -> Result<(), SseError> {
        let size = self.line.len()
            + self.data.len()
            + self.event.as_ref().map_or(0, String::len)
            + self.id.as_ref().map_or(0, String::len);
        if size > self.max_event_bytes {
            self.reset_event();
            self.line.clear();
            return Err(SseError::EventTooLarge {
                limit: self.max_event_bytes,
            });
        }
        Ok(())
    }

    fn process_line(&mut self, line: &[u8]) -> Result<Option<SseFrame>, SseError> {
        let mut line = line;
        if self.at_start {
            self.at_start = false;
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        let line = match std::str::from_utf8(line) {
            Ok(line) => line,
            Err(_) => {
                self.reset_event();
                return Err(SseError::InvalidUtf8);
            }
        };
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        if line.starts_with(':') {
            return Ok(None); // a comment, such as a keep-alive
        }
        let (name, value) = match line.split_once(':') {
            Some((name, value)) => (name, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match name {
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
            }
            "event" => self.event = Some(value.to_owned()),
            // The SSE spec ignores an id holding NUL.
            "id" if !value.contains('\0') => {
                self.id = Some(value.to_owned());
                self.last_event_id = Some(value.to_owned());
            }
            // `retry:` and unknown fields are ignored, as the SSE spec says.
            _ => {}
        }
        self.check_size()?;
        Ok(None)
    }

    /// A blank line ends an event; one without data is dropped, as the SSE spec says.
    fn dispatch(&mut self) -> Option<SseFrame> {
        let mut data = std::mem::take(&mut self.data);
        let event = self.event.take();
        let id = self.id.take();
        if data.is_empty() {
            return None;
        }
        data.pop(); // the '\n' after the last data line
        if data == DONE {
            return Some(SseFrame::Done);
        }
        Some(SseFrame::Event(SseEvent { event, id, data }))
    }

    fn reset_event(&mut self) {
        self.data.clear();
        self.event = None;
        self.id = None;
    }
}

/// One event holding `data`: a `data:` line per line of it, then the blank line.
pub fn encode_data(data: &str) -> String {
    let mut out = String::with_capacity(data.len() + 8);
    for line in split_lines(data) {
        out.push_str("data: ");
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    out
}

/// A comment line and a blank line: a keep-alive that no client dispatches.
pub fn encode_comment(text: &str) -> String {
    let mut out = String::new();
    for line in split_lines(text) {
        out.push_str(": ");
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    out
}

/// Splits at LF, CRLF and lone CR, every line end SSE knows, so no line can smuggle a field.
fn split_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut rest = text;
    while let Some(end) = rest.find(['\n', '\r']) {
        lines.push(&rest[..end]);
        let terminator_len = if rest[end..].starts_with("\r\n") {
            2
        } else {
            1
        };
        rest = &rest[end + terminator_len..];
    }
    lines.push(rest);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(data: &str) -> SseFrame {
        SseFrame::Event(SseEvent {
            event: None,
            id: None,
            data: data.to_owned(),
        })
    }

    #[test]
    fn encoded_data_parses_back() {
        for data in [
            "{\"a\":1}",
            "two\nlines",
            "cr\rand\r\ncrlf",
            " leading space",
            "",
        ] {
            let mut parser = SseParser::new(1024);
            let frames = parser.feed(encode_data(data).as_bytes()).unwrap();
            let expected = data.replace("\r\n", "\n").replace('\r', "\n");
            assert_eq!(frames, vec![event(&expected)], "{data:?}");
        }
    }

    #[test]
    fn comments_dispatch_nothing() {
        let mut parser = SseParser::new(1024);
        assert_eq!(
            parser
                .feed(encode_comment("keep-alive").as_bytes())
                .unwrap(),
            vec![]
        );
    }
}
