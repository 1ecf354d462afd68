//! Signed decision receipts, written once for both backends over [`Transaction`]: every write
//! that decides a call (a decision on a batch, a call a rule, a grant or a policy decided as
//! it was recorded, a call settled at once) appends one receipt per call in its own commit.
//!
//! The chain has one head per store (`receipt_head`, one row). An append moves the head first,
//! with an UPDATE that on PostgreSQL holds the row's lock until the transaction ends: replicas
//! append one after the other, each from the head the last one committed, so the chain has no
//! gap and no fork (`receipts.seq` is its primary key besides). SQLite has one writer. The head
//! is taken late in every transaction and nothing is waited for after it but the approvals
//! stream's lock, which is taken last everywhere, so no two writers wait on each other.
//!
//! The store builds and links the receipts; the signature comes from a [`Seal`] the agent layer
//! installs (`Store::seal_receipts`), which holds the key. The server installs its key before
//! it serves anything, so every decision it writes has its receipt; a store opened without
//! one (a store-level test's, a tool's, the bench's "without") writes none, rather than
//! receipts no one could check.

use std::sync::{Arc, RwLock};

use serde_json::Value;
use sha2::{Digest, Sha256};
use signoff_protocol::canonical::canonical;
use signoff_protocol::receipt::Receipt;

use super::write::{Param, Transaction};
use super::{Channel, Result, StoreError, Verdict};

/// What signs receipts: the server's receipt key.
pub trait Seal: Send + Sync {
    /// The key's id, written into each receipt it signs.
    fn kid(&self) -> &str;
    /// The base64url Ed25519 signature of `message`.
    fn sign(&self, message: &[u8]) -> String;
}

/// The seal a store signs with, set once the server has its key.
#[derive(Clone, Default)]
pub(super) struct SealSlot(Arc<RwLock<Option<Arc<dyn Seal>>>>);

impl SealSlot {
    pub(super) fn get(&self) -> Option<Arc<dyn Seal>> {
        // A poisoned lock still holds a whole `Option` (the write is one assignment).
        match self.0.read() {
            Ok(seal) => seal.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub(super) fn set(&self, seal: Arc<dyn Seal>) {
        match self.0.write() {
            Ok(mut slot) => *slot = Some(seal),
            Err(poisoned) => *poisoned.into_inner() = Some(seal),
        }
    }
}

/// What one receipt says of its decided call; the chain's place, the time and the key are
/// added as it is appended.
#[derive(Debug, Clone)]
pub(super) struct ReceiptFacts {
    pub task_id: Option<String>,
    pub call_id: String,
    pub tool: String,
    pub args_sha256: String,
    pub verdict: Verdict,
    pub decided_by: String,
    pub auth: Option<String>,
    pub channel: Channel,
    pub why: Value,
}

/// A stored receipt: its canonical text as signed, and the signature.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceiptRow {
    pub seq: i64,
    pub body: String,
    pub kid: String,
    pub sig: String,
}

/// A public key receipts were signed with, as recorded (`receipt_keys`).
#[derive(Debug, Clone, PartialEq)]
pub struct ReceiptKeyRow {
    pub kid: String,
    /// base64url of the 32-byte Ed25519 public key.
    pub public_key: String,
    pub created_at: String,
}

/// The hex SHA-256 of `text`. Written by table, not `format!` per byte: every call the gate
/// settles takes two (its arguments' and its receipt's).
pub fn sha256_hex(text: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(text.as_bytes());
    let mut hex = String::with_capacity(digest.len() * 2);
    for byte in digest {
        hex.push(char::from(HEX[usize::from(byte >> 4)]));
        hex.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    hex
}

/// Appends one receipt per fact to the chain, inside the caller's transaction, signed by
/// `seal`; nothing without a seal.
pub(super) async fn append(
    tx: &mut impl Transaction,
    seal: Option<&dyn Seal>,
    facts: Vec<ReceiptFacts>,
    now: &str,
) -> Result<()> {
    use Param::*;
    let Some(seal) = seal.filter(|_| !facts.is_empty()) else {
        return Ok(());
    };
    let count = facts.len() as i64;
    // The head moves first: its new number and the digest it had, under its lock.
    let (last, mut prev) = tx
        .optional_texts(
            "UPDATE receipt_head SET seq = seq + $1 WHERE id = 1
             RETURNING CAST(seq AS TEXT), digest",
            &[Int(count)],
        )
        .await?
        .ok_or_else(|| StoreError::Corrupt("receipt_head has no row".into()))?;
    let last: i64 = last
        .parse()
        .map_err(|err| StoreError::Corrupt(format!("receipt_head.seq: {err}")))?;
    let kid = seal.kid().to_owned();
    let mut rows = Vec::with_capacity(facts.len());
    for (index, fact) in facts.into_iter().enumerate() {
        let seq = last - count + 1 + index as i64;
        let receipt = Receipt {
            seq,
            prev: prev.clone(),
            at: now.to_owned(),
            task_id: fact.task_id.clone(),
            call_id: fact.call_id.clone(),
            tool: fact.tool,
            args_sha256: fact.args_sha256,
            verdict: fact.verdict.as_str().to_owned(),
            decided_by: fact.decided_by,
            auth: fact.auth,
            channel: fact.channel.as_str().to_owned(),
            why: fact.why,
            kid: kid.clone(),
        };
        let body = canonical(&serde_json::to_value(&receipt)?);
        let digest = sha256_hex(&body);
        let sig = seal.sign(body.as_bytes());
        prev = digest.clone();
        rows.push((seq, fact.task_id, fact.call_id, body, digest, sig));
    }
    // One statement for the decision's receipts, and on PostgreSQL the head's new digest in it
    // too: there each statement is a round trip.
    let with = tx.writes_in_with();
    let sql = insert_sql(rows.len(), with);
    let mut params = Vec::with_capacity(rows.len() * 7 + 1);
    for (seq, task_id, call_id, body, digest, sig) in &rows {
        params.extend([
            Int(*seq),
            OptionalText(task_id.as_deref()),
            Text(call_id),
            Text(body),
            Text(digest),
            Text(&kid),
            Text(sig),
        ]);
    }
    if with {
        params.push(Text(&prev));
        tx.execute(&sql, &params).await?;
        return Ok(());
    }
    tx.execute(&sql, &params).await?;
    tx.execute(
        "UPDATE receipt_head SET digest = $1 WHERE id = 1",
        &[Text(&prev)],
    )
    .await?;
    Ok(())
}

/// The statement that inserts `rows` receipts (seven placeholders each); `with`: inside a
/// `WITH` whose main statement moves the head to the next placeholder's digest.
fn insert_sql(rows: usize, with: bool) -> String {
    use std::fmt::Write as _;
    let mut sql = String::with_capacity(128 + rows * 40);
    if with {
        sql.push_str("WITH appended AS (");
    }
    sql.push_str("INSERT INTO receipts (seq, task_id, call_id, body, digest, kid, sig) VALUES ");
    for row in 0..rows {
        let first = row * 7;
        if row > 0 {
            sql.push_str(", ");
        }
        // Writing to a String cannot fail.
        let _ = write!(
            sql,
            "(${}, ${}, ${}, ${}, ${}, ${}, ${})",
            first + 1,
            first + 2,
            first + 3,
            first + 4,
            first + 5,
            first + 6,
            first + 7
        );
    }
    if with {
        let _ = write!(
            sql,
            ") UPDATE receipt_head SET digest = ${} WHERE id = 1",
            rows * 7 + 1
        );
    }
    sql
}

/// The `why` of a receipt: the audit's summary, the recorded decision, the reason given and
/// the gate's `Why`, each when there is one.
pub(super) fn why(
    summary: &str,
    decision: &Value,
    reason: Option<&str>,
    gate: Option<&Value>,
) -> Value {
    let mut why = serde_json::Map::new();
    why.insert("summary".into(), Value::String(summary.to_owned()));
    why.insert("decision".into(), decision.clone());
    if let Some(reason) = reason {
        why.insert("reason".into(), Value::String(reason.to_owned()));
    }
    if let Some(gate) = gate {
        why.insert("gate".into(), gate.clone());
    }
    Value::Object(why)
}

pub(super) const RECEIPT_SELECT: &str = "SELECT seq, body, kid, sig FROM receipts";
pub(super) const RECEIPT_KEY_SELECT: &str =
    "SELECT kid, public_key, created_at FROM receipt_keys ORDER BY created_at, kid";
pub(super) const RECEIPT_KEY_INSERT: &str =
    "INSERT INTO receipt_keys (kid, public_key, created_at) VALUES ($1, $2, $3)
     ON CONFLICT (kid) DO NOTHING";

#[cfg(test)]
mod tests {
    use super::insert_sql;

    #[test]
    fn the_insert_numbers_each_rows_placeholders_and_the_heads_after_them() {
        assert_eq!(
            insert_sql(2, false),
            "INSERT INTO receipts (seq, task_id, call_id, body, digest, kid, sig) VALUES \
             ($1, $2, $3, $4, $5, $6, $7), ($8, $9, $10, $11, $12, $13, $14)"
        );
        assert_eq!(
            insert_sql(1, true),
            "WITH appended AS (INSERT INTO receipts (seq, task_id, call_id, body, digest, kid, \
             sig) VALUES ($1, $2, $3, $4, $5, $6, $7)) UPDATE receipt_head SET digest = $8 \
             WHERE id = 1"
        );
    }
}
