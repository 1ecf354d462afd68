//! Signoff's A2A agent server: `http` (axum) -> `agent` (runtime) -> `store` (SQLite).
