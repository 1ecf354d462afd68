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
    /// does not exist yet. Replicas that share a data folder and start together agree on one
    /// key: the file appears whole or not at all, and the first to make it wins.
    pub fn load_or_create(path: &Path) -> Result<ReceiptSigner> {
        match std::fs::read_to_string(path) {
            Ok(text) => ReceiptSigner::from_text(path, &text),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                let text = new_key_text(path)?;
                match write_key_file(path, &text) {
                    Ok(()) => ReceiptSigner::from_text(path, &text),
                    Err(Placed::Taken) => {
                        let text =
                            std::fs::read_to_string(path).map_err(|err| key_error(path, err))?;
                        ReceiptSigner::from_text(path, &text)
                    }
                    Err(Placed::Failed(err)) => Err(err),
                }
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

/// Why a key file was not put in place.
enum Placed {
    /// Another process put one there first.
    Taken,
    Failed(AgentError),
}

/// Writes a key file that does not exist yet, readable by its owner only: to a file of its
/// own first, then linked into place, which fails rather than replace a file there.
fn write_key_file(path: &Path, text: &str) -> std::result::Result<(), Placed> {
    let failed = |err: std::io::Error| Placed::Failed(key_error(path, err));
    let mut staged = path.as_os_str().to_owned();
    staged.push(format!(".{}.new", uuid::Uuid::new_v4().simple()));
    let staged = PathBuf::from(staged);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let written = options.open(&staged).and_then(|mut file| {
        file.write_all(format!("{text}\n").as_bytes())?;
        file.sync_all()
    });
    let linked = written.and_then(|()| std::fs::hard_link(&staged, path));
    // The staged name goes whatever happened; the key stays under `path` when it was linked.
    let _ = std::fs::remove_file(&staged);
    match linked {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Err(Placed::Taken),
        Err(err) => Err(failed(err)),
    }
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
    write_key_file(path, &text).map_err(|placed| match placed {
        Placed::Taken => key_error(path, "another key was written there meanwhile"),
        Placed::Failed(err) => err,
    })?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Seal;

    #[test]
    fn a_key_is_made_once_and_read_back_and_starters_at_once_agree_on_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEY_FILE);
        let kids: Vec<String> = std::thread::scope(|scope| {
            let starters: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| ReceiptSigner::load_or_create(&path).unwrap().kid))
                .collect();
            starters.into_iter().map(|s| s.join().unwrap()).collect()
        });
        assert!(kids.iter().all(|kid| *kid == kids[0]), "{kids:?}");
        assert_eq!(ReceiptSigner::load_or_create(&path).unwrap().kid, kids[0]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // Nothing staged is left beside it.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_rotation_keeps_the_old_key_beside_the_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEY_FILE);
        let old = ReceiptSigner::load_or_create(&path).unwrap();
        let (retired, new) = rotate_key(&path).unwrap();
        assert_eq!(retired.as_deref(), Some(old.kid()));
        assert_ne!(new, old.kid);
        assert_eq!(ReceiptSigner::load_or_create(&path).unwrap().kid, new);
        let kept = dir.path().join(format!("{KEY_FILE}.{}.retired", old.kid));
        assert_eq!(ReceiptSigner::load_or_create(&kept).unwrap().kid, old.kid);
        // A signature verifies with the public key recorded for it, and only with it.
        let message = b"{\"seq\":1}";
        let sig = URL_SAFE_NO_PAD.decode(old.sign(message)).unwrap();
        let public = URL_SAFE_NO_PAD.decode(old.public_row().public_key).unwrap();
        let key =
            aws_lc_rs::signature::UnparsedPublicKey::new(&aws_lc_rs::signature::ED25519, public);
        assert!(key.verify(message, &sig).is_ok());
        assert!(key.verify(b"{\"seq\":2}", &sig).is_err());
    }

    #[test]
    fn a_key_file_that_is_no_key_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEY_FILE);
        std::fs::write(&path, "not a key").unwrap();
        let err = ReceiptSigner::load_or_create(&path)
            .unwrap_err()
            .to_string();
        assert!(err.contains(KEY_FILE) && err.contains("base64"), "{err}");
    }
}
