//! The bench's one error type: what stops a phase or the whole run.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("I/O on {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("HTTP: {0}")]
    Http(#[from] reqwest::Error),
    #[error("HTTP status {status} from {url}")]
    Status { status: u16, url: String },
    /// The server answered a JSON-RPC error (code and message as sent).
    #[error("JSON-RPC error {code}: {message}")]
    Rpc { code: i64, message: String },
    #[error("protocol: {0}")]
    Protocol(String),
    /// The server did not do what the scenario expects (a wrong state, a missing event).
    #[error("unexpected: {0}")]
    Unexpected(String),
    #[error("timed out: {0}")]
    Timeout(String),
    #[error("browser: {0}")]
    Browser(String),
    #[error("server: {0}")]
    Server(String),
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
}

impl BenchError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> BenchError {
        BenchError::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T, E = BenchError> = std::result::Result<T, E>;
