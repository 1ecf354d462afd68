//! Signed decision receipts as the server writes and exports them (README, Audit): one per
//! decided call, chained by the digest of the receipt before, each signed with Ed25519 over
//! its RFC 8785 text ([`crate::canonical`]).
//!
//! An export is JSON lines: an [`ExportHeader`] first, then one line per receipt,
//! `{"receipt": {…}, "sig": "…"}`, in chain order.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `prev` of the first receipt of a chain: 32 zero bytes, hex.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The export format's name and version, the header's `format`.
pub const EXPORT_FORMAT: &str = "signoff-receipts/1";

/// One receipt, as signed: the canonical text of this object is what the signature and the
/// next receipt's `prev` cover.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    /// The receipt's place in the chain: 1, 2, 3, …
    pub seq: i64,
    /// The hex SHA-256 of the previous receipt's canonical text ([`GENESIS`] for the first).
    pub prev: String,
    /// When the decision was committed (RFC 3339, UTC).
    pub at: String,
    /// The task the call belongs to; `None` for a call settled at once, which opens none.
    pub task_id: Option<String>,
    pub call_id: String,
    pub tool: String,
    /// The hex SHA-256 of the RFC 8785 text of the arguments that run (an approver's edit
    /// included), or that were refused.
    pub args_sha256: String,
    /// `approve`, `deny`, `cancel` or `expire`.
    pub verdict: String,
    /// The person on whose authority it was decided (the task's owner for a rule, a policy,
    /// an expiry or a cancel).
    pub decided_by: String,
    /// How that person signed in (`none`, `tokens`, `proxy`, `oidc_session`, `oidc_jwt`);
    /// `None` when no request decided.
    pub auth: Option<String>,
    /// Through which channel: `a2a`, `text`, `rest`, `link`, `policy`, `rule`, `expiry`,
    /// `cancel`.
    pub channel: String,
    /// What decided it: the audit's summary, the recorded decision, the reason given, and the
    /// gate's `Why` when a rule, a grant or a policy decided.
    pub why: Value,
    /// The id of the key that signed it.
    pub kid: String,
}

/// One public key receipts are signed with, as a JSON Web Key (OKP, Ed25519).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReceiptKey {
    pub kty: String,
    pub crv: String,
    pub alg: String,
    #[serde(rename = "use")]
    pub usage: String,
    pub kid: String,
    /// The 32-byte public key, base64url without padding.
    pub x: String,
    /// When a server first signed with it.
    pub created_at: String,
}

impl ReceiptKey {
    /// The JWK of the Ed25519 public key `x` (base64url) named `kid`.
    pub fn ed25519(kid: String, x: String, created_at: String) -> ReceiptKey {
        ReceiptKey {
            kty: "OKP".into(),
            crv: "Ed25519".into(),
            alg: "EdDSA".into(),
            usage: "sig".into(),
            kid,
            x,
            created_at,
        }
    }
}

/// The keys as `GET /api/audit/keys` serves them: every key receipts were signed with,
/// current and rotated out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReceiptKeys {
    pub keys: Vec<ReceiptKey>,
}

/// The first line of an export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportHeader {
    /// [`EXPORT_FORMAT`].
    pub format: String,
    pub exported_at: String,
    /// How many receipts follow, and the digest of the last: a receipt cut off the end shows.
    pub count: i64,
    pub head: String,
    pub keys: Vec<ReceiptKey>,
}
