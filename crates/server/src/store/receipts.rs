//! Signed decision receipts, written once for both backends over [`Transaction`]: every write
//! that decides a call (a decision on a batch, a call a rule, a grant or a policy decided as
//! it was recorded, a call settled at once) appends one receipt per call in its own commit.
//!
//! The chain has one head per store: where the last receipt is (its `seq`, the chain's order
//! and the table's primary key, so a fork cannot be written, and its digest). SQLite has one
//! writer, so its head is simply the last receipt, read in the appending transaction. On
//! PostgreSQL replicas share the chain, and its head is a row of its own (`receipt_head`):
//! an append moves it with an UPDATE that holds the row's lock until the transaction ends, so
//! replicas append one after the other, each from the head the last one committed, with no
//! gap and no fork. That UPDATE also bets on where the head is (where this store last moved
//! it) and inserts the receipts in the same round trip; see [`append`]. The head is taken
//! late in every transaction and nothing is waited for after it but the approvals stream's
//! lock, which is taken last everywhere, so no two writers wait on each other.
//!
//! The store builds and links the receipts; the signature comes from a [`Seal`] the agent layer
//! installs (`Store::seal_receipts`), which holds the key. The server installs its key before
//! it serves anything, so every decision it writes has its receipt; a store opened without
//! one (a store-level test's, a tool's, the bench's "without") writes none, rather than
//! receipts no one could check.

use std::sync::{Arc, Mutex, RwLock};

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
pub(super) struct SealSlot(Arc<RwLock<Option<Sealer>>>);

impl SealSlot {
    pub(super) fn get(&self) -> Option<Sealer> {
        // A poisoned lock still holds a whole `Option` (the write is one assignment).
        match self.0.read() {
            Ok(sealer) => sealer.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub(super) fn set(&self, seal: Arc<dyn Seal>) {
        let sealer = Sealer {
            seal,
            last_head: Arc::default(),
        };
        match self.0.write() {
            Ok(mut slot) => *slot = Some(sealer),
            Err(poisoned) => *poisoned.into_inner() = Some(sealer),
        }
    }
}

/// The chain's head: the last receipt's number and digest.
#[derive(Debug, Clone, PartialEq)]
struct Head {
    seq: i64,
    digest: String,
}

/// What a store's appends use: the seal, and the head this store last moved the chain to.
/// That head is a guess (another replica may have appended since, or its transaction rolled
/// back), checked in the write itself: on PostgreSQL a right guess appends in one round trip.
#[derive(Clone)]
pub(super) struct Sealer {
    seal: Arc<dyn Seal>,
    last_head: Arc<Mutex<Option<Head>>>,
}

impl Sealer {
    fn guess(&self) -> Option<Head> {
        match self.last_head.lock() {
            Ok(head) => head.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn moved_to(&self, head: Head) {
        match self.last_head.lock() {
            Ok(mut last) => *last = Some(head),
            Err(poisoned) => *poisoned.into_inner() = Some(head),
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
/// `sealer`'s seal; nothing without one.
///
/// SQLite reads the last receipt and inserts after it: no head row is written, which is one
/// page less in the decision's commit. On PostgreSQL the append first bets on the head this
/// store last moved the chain to: one statement moves the head only if it is still there,
/// and inserts the receipts only if it moved. Lost (another replica appended, or this store's
/// last append rolled back), that statement has still taken the head's lock and read where
/// it is, and one more statement appends from there. Otherwise the head is locked and read
/// first.
pub(super) async fn append(
    tx: &mut impl Transaction,
    sealer: Option<&Sealer>,
    facts: Vec<ReceiptFacts>,
    now: &str,
) -> Result<()> {
    let Some(sealer) = sealer.filter(|_| !facts.is_empty()) else {
        return Ok(());
    };
    if tx.sole_writer() {
        let head = last_receipt(tx).await?;
        let rows = signed(sealer.seal.as_ref(), &head, &facts, now)?;
        let insert = insert_sql(rows.len());
        tx.execute(&insert, &row_params(&rows)).await?;
        return Ok(());
    }
    let head = match sealer.guess() {
        Some(guess) => {
            let rows = signed(sealer.seal.as_ref(), &guess, &facts, now)?;
            match bet_on_head(tx, &guess, &rows).await? {
                None => {
                    sealer.moved_to(head_after(&guess, &rows));
                    return Ok(());
                }
                Some(current) => current,
            }
        }
        None => lock_head(tx).await?,
    };
    let rows = signed(sealer.seal.as_ref(), &head, &facts, now)?;
    let last = head_after(&head, &rows);
    write_rows(tx, &rows, &last).await?;
    sealer.moved_to(last);
    Ok(())
}

/// One receipt ready to insert.
struct SignedRow {
    seq: i64,
    task_id: Option<String>,
    call_id: String,
    body: String,
    digest: String,
    kid: String,
    sig: String,
}

/// The receipts of `facts`, chained on from `head` and signed.
fn signed(
    seal: &dyn Seal,
    head: &Head,
    facts: &[ReceiptFacts],
    now: &str,
) -> Result<Vec<SignedRow>> {
    let kid = seal.kid().to_owned();
    let mut prev = head.digest.clone();
    let mut rows = Vec::with_capacity(facts.len());
    for (index, fact) in facts.iter().enumerate() {
        let seq = head.seq + 1 + index as i64;
        let receipt = Receipt {
            seq,
            prev: prev.clone(),
            at: now.to_owned(),
            task_id: fact.task_id.clone(),
            call_id: fact.call_id.clone(),
            tool: fact.tool.clone(),
            args_sha256: fact.args_sha256.clone(),
            verdict: fact.verdict.as_str().to_owned(),
            decided_by: fact.decided_by.clone(),
            auth: fact.auth.clone(),
            channel: fact.channel.as_str().to_owned(),
            why: fact.why.clone(),
            kid: kid.clone(),
        };
        let body = canonical(&serde_json::to_value(&receipt)?);
        let digest = sha256_hex(&body);
        let sig = seal.sign(body.as_bytes());
        prev = digest.clone();
        rows.push(SignedRow {
            seq,
            task_id: fact.task_id.clone(),
            call_id: fact.call_id.clone(),
            body,
            digest,
            kid: kid.clone(),
            sig,
        });
    }
    Ok(rows)
}

/// Where the chain's head is once `rows` (chained on from `head`) are appended.
fn head_after(head: &Head, rows: &[SignedRow]) -> Head {
    match rows.last() {
        Some(last) => Head {
            seq: last.seq,
            digest: last.digest.clone(),
        },
        None => head.clone(),
    }
}

/// The head of a chain no one else writes (SQLite's): its last receipt, or the start.
async fn last_receipt(tx: &mut impl Transaction) -> Result<Head> {
    let last = tx
        .optional_texts(
            "SELECT CAST(seq AS TEXT), digest FROM receipts ORDER BY seq DESC LIMIT 1",
            &[],
        )
        .await?;
    match last {
        None => Ok(Head {
            seq: 0,
            digest: START_DIGEST.to_owned(),
        }),
        row => head_of(row),
    }
}

/// The `prev` of the first receipt (as `receipt_head` starts on PostgreSQL).
const START_DIGEST: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// PostgreSQL: locks the head's row until the transaction ends and reads it.
async fn lock_head(tx: &mut impl Transaction) -> Result<Head> {
    let row = tx
        .optional_texts(
            "UPDATE receipt_head SET seq = seq WHERE id = 1 RETURNING CAST(seq AS TEXT), digest",
            &[],
        )
        .await?;
    head_of(row)
}

fn head_of(row: Option<(String, String)>) -> Result<Head> {
    let (seq, digest) = row.ok_or_else(|| StoreError::Corrupt("receipt_head has no row".into()))?;
    let seq = seq
        .parse()
        .map_err(|err| StoreError::Corrupt(format!("the receipts' head seq: {err}")))?;
    Ok(Head { seq, digest })
}

/// PostgreSQL: moves the head from `guess` past `rows` and inserts them, in one statement, if
/// the head is still at `guess`; `None` when it was, else where the head is (its row locked by
/// the statement either way).
async fn bet_on_head(
    tx: &mut impl Transaction,
    guess: &Head,
    rows: &[SignedRow],
) -> Result<Option<Head>> {
    use Param::*;
    let last = head_after(guess, rows);
    let first = rows.len() * 7;
    let sql = format!(
        "WITH head AS (UPDATE receipt_head SET
             seq = CASE WHEN seq = ${old_seq} AND digest = ${old_digest} THEN ${new_seq} ELSE seq END,
             digest = CASE WHEN seq = ${old_seq} AND digest = ${old_digest} THEN ${new_digest}
                      ELSE digest END
           WHERE id = 1 RETURNING seq, digest),
         appended AS (INSERT INTO receipts (seq, task_id, call_id, body, digest, kid, sig)
           SELECT row.* FROM ({values}) AS row, head WHERE head.digest = ${new_digest})
         SELECT CAST(seq AS TEXT), digest FROM head",
        values = values_sql(rows.len(), true),
        old_seq = first + 1,
        old_digest = first + 2,
        new_seq = first + 3,
        new_digest = first + 4,
    );
    let mut params = row_params(rows);
    params.extend([
        Int(guess.seq),
        Text(&guess.digest),
        Int(last.seq),
        Text(&last.digest),
    ]);
    let head = head_of(tx.optional_texts(&sql, &params).await?)?;
    Ok((head != last).then_some(head))
}

/// PostgreSQL: inserts `rows` and moves the head to `last`, the head's row already locked, in
/// one statement.
async fn write_rows(tx: &mut impl Transaction, rows: &[SignedRow], last: &Head) -> Result<()> {
    use Param::*;
    let mut params = row_params(rows);
    params.extend([Int(last.seq), Text(&last.digest)]);
    let placeholders = rows.len() * 7;
    let (seq, digest) = (placeholders + 1, placeholders + 2);
    let sql = format!(
        "WITH appended AS ({}) \
         UPDATE receipt_head SET seq = ${seq}, digest = ${digest} WHERE id = 1",
        insert_sql(rows.len())
    );
    tx.execute(&sql, &params).await?;
    Ok(())
}

fn insert_sql(rows: usize) -> String {
    format!(
        "INSERT INTO receipts (seq, task_id, call_id, body, digest, kid, sig) {}",
        values_sql(rows, false)
    )
}

fn row_params(rows: &[SignedRow]) -> Vec<Param<'_>> {
    use Param::*;
    let mut params = Vec::with_capacity(rows.len() * 7 + 4);
    for row in rows {
        params.extend([
            Int(row.seq),
            OptionalText(row.task_id.as_deref()),
            Text(&row.call_id),
            Text(&row.body),
            Text(&row.digest),
            Text(&row.kid),
            Text(&row.sig),
        ]);
    }
    params
}

/// `VALUES` with seven placeholders for each of `rows` rows; `typed`: each cast to its column's
/// type, for a `VALUES` that is not an INSERT's own (PostgreSQL then infers no types).
fn values_sql(rows: usize, typed: bool) -> String {
    use std::fmt::Write as _;
    const CASTS: [&str; 7] = [
        "::BIGINT", "::TEXT", "::TEXT", "::TEXT", "::TEXT", "::TEXT", "::TEXT",
    ];
    let mut sql = String::with_capacity(8 + rows * 80);
    sql.push_str("VALUES ");
    for row in 0..rows {
        sql.push_str(if row > 0 { ", (" } else { "(" });
        for (column, cast) in CASTS.iter().enumerate() {
            let cast = if typed { cast } else { "" };
            let separator = if column > 0 { ", " } else { "" };
            // Writing to a String cannot fail.
            let _ = write!(sql, "{separator}${}{cast}", row * 7 + column + 1);
        }
        sql.push(')');
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
    use super::values_sql;

    #[test]
    fn the_values_number_each_rows_seven_placeholders() {
        assert_eq!(
            values_sql(2, false),
            "VALUES ($1, $2, $3, $4, $5, $6, $7), ($8, $9, $10, $11, $12, $13, $14)"
        );
        assert_eq!(
            values_sql(1, true),
            "VALUES ($1::BIGINT, $2::TEXT, $3::TEXT, $4::TEXT, $5::TEXT, $6::TEXT, $7::TEXT)"
        );
    }
}
