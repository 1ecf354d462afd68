//! TEMPORARY stand-in for `signoff_protocol::sse`, which is not written yet, with the
//! contract's names so call sites need no change. Delete this module once the protocol crate
//! has it.

pub mod sse {
    //! A minimal SSE parser with the contract's shape.

    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SseEvent {
        pub event: Option<String>,
        pub id: Option<String>,
        pub data: String,
    }

    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum SseFrame {
        Event(SseEvent),
        Done,
    }

    #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
    pub enum SseError {
        #[error("an SSE event is larger than {limit} bytes")]
        EventTooLarge { limit: usize },
        #[error("the stream is not UTF-8")]
        InvalidUtf8,
    }

    pub struct SseParser {
        buffer: Vec<u8>,
        limit: usize,
        data: Vec<String>,
    }

    impl SseParser {
        pub fn new(limit: usize) -> Self {
            SseParser {
                buffer: Vec::new(),
                limit,
                data: Vec::new(),
            }
        }

        pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseFrame>, SseError> {
            self.buffer.extend_from_slice(chunk);
            let mut frames = Vec::new();
            while let Some(end) = self.buffer.iter().position(|byte| *byte == b'\n') {
                let mut line: Vec<u8> = self.buffer.drain(..=end).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                let line = String::from_utf8(line).map_err(|_| SseError::InvalidUtf8)?;
                if line.is_empty() {
                    if !self.data.is_empty() {
                        let data = self.data.join("\n");
                        self.data.clear();
                        frames.push(if data == "[DONE]" {
                            SseFrame::Done
                        } else {
                            SseFrame::Event(SseEvent {
                                event: None,
                                id: None,
                                data,
                            })
                        });
                    }
                } else if let Some(value) = line.strip_prefix("data:") {
                    self.data
                        .push(value.strip_prefix(' ').unwrap_or(value).to_owned());
                }
            }
            if self.buffer.len() + self.data.iter().map(String::len).sum::<usize>() > self.limit {
                return Err(SseError::EventTooLarge { limit: self.limit });
            }
            Ok(frames)
        }

        pub fn finish(&mut self) -> Result<Vec<SseFrame>, SseError> {
            self.feed(b"\n\n")
        }
    }
}
