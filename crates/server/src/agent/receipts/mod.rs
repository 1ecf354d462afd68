//! Signed decision receipts (README, Audit): the key that signs them, the public keys served and
//! exported, the export (JSON lines, or OCSF API Activity events: `ocsf`) and the offline check
//! of an export (`verify`). The store writes each receipt in its decision's commit
//! (`store::receipts`); this layer holds the key it signs with.
//!
//! The key is a file of its own (`--audit-key`, by default `audit-key` in the data folder),
//! not a row of the database as the push signing key is: a receipt is evidence against
//! whoever can change the database, and a key kept there would let them sign a rewritten
//! chain. Each replica may have its own file; every key a server signs with is recorded
//! (`receipt_keys`) and stays served after a rotation, so the whole chain checks.

mod ocsf;
mod verify;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair};
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use sha2::{Digest, Sha256};
use signoff_protocol::receipt::{ExportHeader, ReceiptKey, ReceiptKeys, EXPORT_FORMAT, GENESIS};

use crate::agent::error::{AgentError, Result};
use crate::store::{self, ReceiptKeyRow, Store};

pub use ocsf::ocsf_event;
pub use verify::{verify, Verified};

/// The key file's name in the data folder when `--audit-key` names none.
pub const KEY_FILE: &str = "audit-key";

/// How many receipts an export reads at a time.
const PAGE: i64 = 1000;

/// The receipt signing key: an Ed25519 key pair read from its file.
pub struct ReceiptSigner {
    pair: Ed25519KeyPair,
    kid: String,
}

impl std::fmt::Debug for ReceiptSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReceiptSigner")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

fn key_error(path: &Path, what: impl std::fmt::Display) -> AgentError {
    AgentError::Receipts(format!("the audit key {}: {what}", path.display()))
}

/// A key's id: the first 12 bytes of the SHA-256 of its public key, base64url (as the push
/// signing key's).
fn kid_of(public: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(&Sha256::digest(public)[..12])
}

impl ReceiptSigner {
    /// The key in `path`, made and written there (readable by its owner only) when the file
    /// does not exist yet.
    pub fn load_or_create(path: &Path) -> Result<ReceiptSigner> {
        match std::fs::read_to_string(path) {
            Ok(text) => ReceiptSigner::from_text(path, &text),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                let text = new_key_text(path)?;
                write_key_file(path, &text)?;
                ReceiptSigner::from_text(path, &text)
            }
            Err(err) => Err(key_error(path, err)),
        }
    }

    fn from_text(path: &Path, text: &str) -> Result<ReceiptSigner> {
        let pkcs8 = STANDARD
            .decode(text.trim())
            .map_err(|err| key_error(path, format!("not base64: {err}")))?;
        let pair = Ed25519KeyPair::from_pkcs8(&pkcs8)
            .map_err(|err| key_error(path, format!("not an Ed25519 PKCS#8 key: {err}")))?;
        let kid = kid_of(pair.public_key().as_ref());
        Ok(ReceiptSigner { pair, kid })
    }

    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The public key as the store records it.
    pub fn public_row(&self) -> ReceiptKeyRow {
        ReceiptKeyRow {
            kid: self.kid.clone(),
            public_key: URL_SAFE_NO_PAD.encode(self.pair.public_key().as_ref()),
            created_at: store::now(),
        }
    }
}

impl store::Seal for ReceiptSigner {
    fn kid(&self) -> &str {
        &self.kid
    }

    fn sign(&self, message: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(self.pair.sign(message).as_ref())
    }
}

/// A new key's PKCS#8 document, base64.
fn new_key_text(path: &Path) -> Result<String> {
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new())
        .map_err(|err| key_error(path, format!("cannot make a key: {err}")))?;
    Ok(STANDARD.encode(pkcs8.as_ref()))
}

/// Writes a key file that did not exist, readable by its owner only.
fn write_key_file(path: &Path, text: &str) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(|err| key_error(path, err))?;
    file.write_all(format!("{text}\n").as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|err| key_error(path, err))
}

/// The key file `--audit-key` names, or the data folder's.
pub fn key_path(audit_key: Option<&Path>, data_dir: &Path) -> PathBuf {
    audit_key.map_or_else(|| data_dir.join(KEY_FILE), Path::to_owned)
}

/// Rotates the key in `path`: the old file is kept beside it as `<file>.<kid>.retired`, a new
/// key takes its place. Servers sign with the new key from their next start, and record it
/// then; the old key's public part stays recorded and served. The old and new key's ids.
pub fn rotate_key(path: &Path) -> Result<(Option<String>, String)> {
    let old = match std::fs::read_to_string(path) {
        Ok(text) => Some(ReceiptSigner::from_text(path, &text)?),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => return Err(key_error(path, err)),
    };
    let text = new_key_text(path)?;
    let new = ReceiptSigner::from_text(path, &text)?;
    if let Some(old) = &old {
        let mut retired = path.as_os_str().to_owned();
        retired.push(format!(".{}.retired", old.kid));
        std::fs::rename(path, PathBuf::from(retired)).map_err(|err| key_error(path, err))?;
    }
    write_key_file(path, &text)?;
    Ok((old.map(|old| old.kid), new.kid))
}

/// Loads (or makes) the server's key, records its public part and has the store sign every
/// receipt with it.
pub async fn install(store: &Store, path: &Path) -> Result<Arc<ReceiptSigner>> {
    let signer = Arc::new(ReceiptSigner::load_or_create(path)?);
    store.record_receipt_key(signer.public_row()).await?;
    store.seal_receipts(signer.clone());
    Ok(signer)
}

/// Every public key receipts were signed with, as JSON Web Keys.
pub async fn keys(store: &Store) -> Result<ReceiptKeys> {
    let keys = store
        .receipt_keys()
        .await?
        .into_iter()
        .map(|row| ReceiptKey::ed25519(row.kid, row.public_key, row.created_at))
        .collect();
    Ok(ReceiptKeys { keys })
}

/// How an export is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// The header, then one `{"receipt": …, "sig": …}` per line: what `audit verify` checks.
    Jsonl,
    /// One OCSF API Activity event per line, for a SIEM (`ocsf`), each with its signed receipt.
    Ocsf,
}

impl ExportFormat {
    pub fn parse(text: &str) -> Option<ExportFormat> {
        match text {
            "jsonl" => Some(ExportFormat::Jsonl),
            "ocsf" => Some(ExportFormat::Ocsf),
            _ => None,
        }
    }
}

/// The whole chain in `format`, one line each.
pub async fn export(store: &Store, format: ExportFormat) -> Result<String> {
    let mut rows = Vec::new();
    let mut after = 0;
    loop {
        let page = store.receipts_after(after, PAGE).await?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        rows.extend(page);
    }
    let mut out = String::new();
    match format {
        ExportFormat::Jsonl => {
            let header = ExportHeader {
                format: EXPORT_FORMAT.to_owned(),
                exported_at: store::now(),
                count: rows.len() as i64,
                head: rows
                    .last()
                    .map_or_else(|| GENESIS.to_owned(), |row| store::sha256_hex(&row.body)),
                keys: keys(store).await?.keys,
            };
            out.push_str(&serde_json::to_string(&header).map_err(internal)?);
            out.push('\n');
            for row in &rows {
                out.push_str(&receipt_line(&row.body, &row.sig));
                out.push('\n');
            }
        }
        ExportFormat::Ocsf => {
            for row in &rows {
                let line = receipt_line(&row.body, &row.sig);
                let event = ocsf_event(&line)
                    .map_err(|err| AgentError::Receipts(format!("receipt {}: {err}", row.seq)))?;
                out.push_str(&serde_json::to_string(&event).map_err(internal)?);
                out.push('\n');
            }
        }
    }
    Ok(out)
}

/// One receipt's export line: its stored text as it was signed, byte for byte, and the
/// signature.
fn receipt_line(body: &str, sig: &str) -> String {
    format!(
        "{{\"receipt\":{body},\"sig\":{}}}",
        serde_json::Value::String(sig.to_owned())
    )
}

fn internal(err: serde_json::Error) -> AgentError {
    AgentError::Internal(err.to_string())
}
