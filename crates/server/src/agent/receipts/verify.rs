//! The offline check of an export (`signoff audit verify`): every receipt signed by a known
//! key over its RFC 8785 text, numbered 1, 2, 3, … and linked to the one before by its digest,
//! and as many as the header counts. Pure: the text and the keys in, the verdict out.

use std::collections::HashMap;

use aws_lc_rs::signature::{UnparsedPublicKey, ED25519};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::Value;
use signoff_protocol::canonical::canonical;
use signoff_protocol::receipt::{ExportHeader, ReceiptKey, EXPORT_FORMAT, GENESIS};

use crate::store::sha256_hex;

/// What a check of an export found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verified {
    /// Every receipt is signed and in its place: how many there are.
    Holds { count: i64 },
    /// The first receipt that was altered, removed or moved: its number in the chain (the
    /// number it should have there), the line of the file, and what is wrong.
    Broken { seq: i64, line: usize, why: String },
    /// The file is no export, or its keys do not read.
    Unreadable(String),
}

/// Checks `text`, an export, against `pinned` keys (a `--keys` file's), or the keys its own
/// header carries when there are none.
pub fn verify(text: &str, pinned: Option<&[ReceiptKey]>) -> Verified {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty());
    let Some((_, first)) = lines.next() else {
        return Verified::Unreadable("the file is empty: no export header".into());
    };
    let header: ExportHeader = match serde_json::from_str(first) {
        Ok(header) => header,
        Err(err) => {
            return Verified::Unreadable(format!("line 1 is not a receipts export header: {err}"))
        }
    };
    if header.format != EXPORT_FORMAT {
        return Verified::Unreadable(format!(
            "the export's format is {:?}; this version reads {EXPORT_FORMAT:?}",
            header.format
        ));
    }
    let keys = match public_keys(pinned.unwrap_or(&header.keys)) {
        Ok(keys) => keys,
        Err(err) => return Verified::Unreadable(err),
    };
    let mut expected = 1;
    let mut prev = GENESIS.to_owned();
    let mut last_line = 1;
    for (index, line) in lines {
        let line_no = index + 1;
        last_line = line_no;
        let broken = |why: String| Verified::Broken {
            seq: expected,
            line: line_no,
            why,
        };
        match check_line(line, expected, &prev, &keys) {
            Ok(digest) => prev = digest,
            Err(why) => return broken(why),
        }
        if expected > header.count {
            return broken(format!(
                "the header counts {} receipts; this one is past them",
                header.count
            ));
        }
        expected += 1;
    }
    if expected <= header.count {
        return Verified::Broken {
            seq: expected,
            line: last_line + 1,
            why: format!(
                "receipt {expected} is missing: the file ends after {} of the {} receipts its \
                 header counts",
                expected - 1,
                header.count
            ),
        };
    }
    if prev != header.head {
        return Verified::Broken {
            seq: expected - 1,
            line: last_line,
            why: "the last receipt is not the one the header names as the chain's head".into(),
        };
    }
    Verified::Holds {
        count: expected - 1,
    }
}

/// The keys by id, each 32 bytes.
fn public_keys(keys: &[ReceiptKey]) -> Result<HashMap<String, Vec<u8>>, String> {
    keys.iter()
        .map(|key| {
            if key.kty != "OKP" || key.crv != "Ed25519" {
                return Err(format!(
                    "key {:?} is {} {}, not an OKP Ed25519 key",
                    key.kid, key.kty, key.crv
                ));
            }
            let bytes = URL_SAFE_NO_PAD
                .decode(&key.x)
                .ok()
                .filter(|bytes| bytes.len() == 32)
                .ok_or_else(|| format!("key {:?}: x is not 32 bytes of base64url", key.kid))?;
            Ok((key.kid.clone(), bytes))
        })
        .collect()
}

/// Checks one line as receipt number `expected` after the receipt whose digest is `prev`; the
/// digest of this one.
fn check_line(
    line: &str,
    expected: i64,
    prev: &str,
    keys: &HashMap<String, Vec<u8>>,
) -> Result<String, String> {
    let value: Value = serde_json::from_str(line)
        .map_err(|err| format!("receipt {expected} does not read as JSON: {err}"))?;
    let (Some(receipt), Some(sig)) = (
        value.get("receipt").filter(|receipt| receipt.is_object()),
        value.get("sig").and_then(Value::as_str),
    ) else {
        return Err(format!(
            "receipt {expected} is not a {{\"receipt\", \"sig\"}} line"
        ));
    };
    let seq = receipt.get("seq").and_then(Value::as_i64);
    if seq != Some(expected) {
        let held = seq.map_or_else(|| "no number".to_owned(), |seq| format!("receipt {seq}"));
        return Err(format!(
            "receipt {expected} is missing or out of place: this line holds {held}"
        ));
    }
    if receipt.get("prev").and_then(Value::as_str) != Some(prev) {
        return Err(format!(
            "receipt {expected} does not follow receipt {}: its prev is not that receipt's \
             digest",
            expected - 1
        ));
    }
    let kid = receipt
        .get("kid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if kid.is_empty() || sig.is_empty() {
        return Err(format!("receipt {expected} is not signed"));
    }
    let Some(public) = keys.get(kid) else {
        return Err(format!(
            "receipt {expected} is signed by key {kid:?}, which is not among the keys"
        ));
    };
    let body = canonical(receipt);
    let signature = URL_SAFE_NO_PAD
        .decode(sig)
        .map_err(|_| format!("receipt {expected}: its signature is not base64url"))?;
    UnparsedPublicKey::new(&ED25519, public)
        .verify(body.as_bytes(), &signature)
        .map_err(|_| {
            format!("receipt {expected} was altered: its signature does not verify over it")
        })?;
    Ok(sha256_hex(&body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::receipts::ReceiptSigner;
    use crate::store::Seal;
    use signoff_protocol::receipt::Receipt;

    fn signer() -> (ReceiptSigner, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let signer = ReceiptSigner::load_or_create(&dir.path().join("key")).unwrap();
        (signer, dir)
    }

    fn key_of(signer: &ReceiptSigner) -> ReceiptKey {
        let row = signer.public_row();
        ReceiptKey::ed25519(row.kid, row.public_key, row.created_at)
    }

    /// An export of `n` receipts signed by `signer`, as the store and `export` write them.
    fn chain(signer: &ReceiptSigner, n: i64) -> Vec<String> {
        let mut prev = GENESIS.to_owned();
        let mut lines = Vec::new();
        for seq in 1..=n {
            let receipt = Receipt {
                seq,
                prev: prev.clone(),
                at: "2026-12-04T10:00:00.000Z".into(),
                task_id: Some("t-1".into()),
                call_id: format!("call_{seq}"),
                tool: "write_file".into(),
                args_sha256: "ab".repeat(32),
                verdict: "approve".into(),
                decided_by: "alice".into(),
                auth: Some("tokens".into()),
                channel: "rest".into(),
                why: serde_json::json!({"summary": "Approved", "decision": {"kind": "approve"}}),
                kid: signer.kid().to_owned(),
            };
            let body = canonical(&serde_json::to_value(&receipt).unwrap());
            prev = sha256_hex(&body);
            lines.push(super::super::receipt_line(
                &body,
                &signer.sign(body.as_bytes()),
            ));
        }
        let header = ExportHeader {
            format: EXPORT_FORMAT.into(),
            exported_at: "2026-12-04T11:00:00.000Z".into(),
            count: n,
            head: prev,
            keys: vec![key_of(signer)],
        };
        lines.insert(0, serde_json::to_string(&header).unwrap());
        lines
    }

    fn text(lines: &[String]) -> String {
        lines.join("\n") + "\n"
    }

    fn broken_at(verified: Verified) -> i64 {
        match verified {
            Verified::Broken { seq, .. } => seq,
            other @ (Verified::Holds { .. } | Verified::Unreadable(_)) => {
                panic!("not broken: {other:?}")
            }
        }
    }

    #[test]
    fn a_whole_chain_holds_with_its_own_keys_and_with_pinned_ones() {
        let (signer, _dir) = signer();
        let lines = chain(&signer, 5);
        assert_eq!(verify(&text(&lines), None), Verified::Holds { count: 5 });
        let pinned = [key_of(&signer)];
        assert_eq!(
            verify(&text(&lines), Some(&pinned)),
            Verified::Holds { count: 5 }
        );
        // Another key pinned: the first receipt is refused.
        let (other, _other_dir) = self::signer();
        let pinned = [key_of(&other)];
        assert_eq!(broken_at(verify(&text(&lines), Some(&pinned))), 1);
    }

    #[test]
    fn one_byte_altered_names_its_receipt() {
        let (signer, _dir) = signer();
        let mut lines = chain(&signer, 5);
        lines[3] = lines[3].replace("write_file", "write_filf");
        let verified = verify(&text(&lines), None);
        assert!(
            matches!(&verified, Verified::Broken { seq: 3, line: 4, why } if why.contains("altered")),
            "{verified:?}"
        );
    }

    #[test]
    fn a_receipt_removed_names_it() {
        let (signer, _dir) = signer();
        let mut lines = chain(&signer, 5);
        lines.remove(2);
        assert_eq!(broken_at(verify(&text(&lines), None)), 2);
        // The last one removed: the header's count shows it.
        let mut lines = chain(&signer, 5);
        lines.pop();
        assert_eq!(broken_at(verify(&text(&lines), None)), 5);
    }

    #[test]
    fn two_receipts_swapped_name_the_first() {
        let (signer, _dir) = signer();
        let mut lines = chain(&signer, 5);
        lines.swap(2, 3);
        assert_eq!(broken_at(verify(&text(&lines), None)), 2);
    }

    #[test]
    fn a_renumbered_receipt_breaks_the_link_or_the_signature() {
        let (signer, _dir) = signer();
        let mut lines = chain(&signer, 3);
        lines.remove(2);
        lines[2] = lines[2].replace("\"seq\":3", "\"seq\":2");
        assert_eq!(broken_at(verify(&text(&lines), None)), 2);
    }

    #[test]
    fn what_is_no_export_is_unreadable() {
        assert!(matches!(verify("", None), Verified::Unreadable(_)));
        assert!(matches!(
            verify("not json\n", None),
            Verified::Unreadable(_)
        ));
        assert!(matches!(
            verify("{\"format\":\"other/1\",\"exported_at\":\"\",\"count\":0,\"head\":\"\",\"keys\":[]}", None),
            Verified::Unreadable(_)
        ));
        let (signer, _dir) = signer();
        assert_eq!(
            verify(&text(&chain(&signer, 0)), None),
            Verified::Holds { count: 0 }
        );
    }
}
