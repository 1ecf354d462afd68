//! `signoff audit export`, `verify` and `rotate-key`: the chain of signed decision receipts
//! written out (JSON lines, or OCSF events for a SIEM), an export checked offline, and the
//! receipt key replaced (README, Audit).

use std::io::Write;
use std::path::PathBuf;

use signoff_protocol::receipt::{ReceiptKey, ReceiptKeys};

use crate::agent::receipts::{self, ExportFormat, Verified};
use crate::policy_cli::{open_store, CliError, StoreArgs};

/// `signoff audit …`.
#[derive(Debug, clap::Parser)]
#[command(
    name = "signoff audit",
    about = "Export and verify the signed decision receipts"
)]
pub struct AuditCli {
    #[command(subcommand)]
    pub command: AuditCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum AuditCommand {
    /// Writes the whole chain of receipts: JSON lines that `audit verify` checks (the public
    /// keys in the first line), or OCSF API Activity events.
    Export {
        #[command(flatten)]
        store: StoreArgs,
        /// `jsonl` or `ocsf`.
        #[arg(long, default_value = "jsonl")]
        format: String,
        /// The file to write; standard output without it.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Checks an export offline: exits 0 when the chain holds, 1 when a receipt was altered,
    /// removed or moved (naming the first), 2 when the file cannot be read.
    Verify {
        /// The export (`audit export --format jsonl`).
        file: PathBuf,
        /// The public keys to trust (`GET /api/audit/keys`, kept apart from the export);
        /// without it, the keys the export carries.
        #[arg(long)]
        keys: Option<PathBuf>,
    },
    /// Replaces the receipt key with a new one (the old file is kept beside it, renamed);
    /// restart the server to sign with it. Old receipts still verify: the old public key
    /// stays recorded and served.
    RotateKey {
        /// The key file (the server's --audit-key); without it, audit-key in the data folder.
        #[arg(long = "audit-key", env = "SIGNOFF_AUDIT_KEY")]
        audit_key: Option<PathBuf>,
        /// The server's data folder.
        #[arg(long, env = "SIGNOFF_DATA_DIR", default_value = "./data")]
        data_dir: PathBuf,
    },
}

/// Runs a subcommand, writing its report to `out`; the exit code (an error exits 2).
pub async fn run(cli: AuditCli, out: &mut impl Write) -> Result<i32, CliError> {
    match cli.command {
        AuditCommand::Export {
            store,
            format,
            out: file,
        } => {
            let format = ExportFormat::parse(&format)
                .ok_or_else(|| CliError(format!("--format {format:?}: expected jsonl or ocsf")))?;
            let store = open_store(&store).await?;
            let exported = receipts::export(&store, format).await;
            store.close().await;
            let exported = exported.map_err(|err| CliError(format!("the export: {err}")))?;
            match file {
                Some(path) => std::fs::write(&path, exported)
                    .map_err(|err| CliError(format!("{}: {err}", path.display())))?,
                None => out
                    .write_all(exported.as_bytes())
                    .map_err(|err| CliError(format!("standard output: {err}")))?,
            }
            Ok(0)
        }
        AuditCommand::Verify { file, keys } => {
            let text = std::fs::read_to_string(&file)
                .map_err(|err| CliError(format!("{}: {err}", file.display())))?;
            let pinned = keys.map(|path| read_keys(&path)).transpose()?;
            let verified = receipts::verify(&text, pinned.as_deref());
            Ok(report(&file, &verified, out))
        }
        AuditCommand::RotateKey {
            audit_key,
            data_dir,
        } => {
            let path = receipts::key_path(audit_key.as_deref(), &data_dir);
            let (old, new) =
                receipts::rotate_key(&path).map_err(|err| CliError(err.to_string()))?;
            let _ = match old {
                Some(old) => writeln!(
                    out,
                    "{}: key {new} replaces {old} (kept as {}.{old}.retired); restart the \
                     server to sign with it",
                    path.display(),
                    path.display()
                ),
                None => writeln!(out, "{}: new key {new}", path.display()),
            };
            Ok(0)
        }
    }
}

/// A `--keys` file: a key set as `GET /api/audit/keys` serves it, or an export's header.
fn read_keys(path: &std::path::Path) -> Result<Vec<ReceiptKey>, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| CliError(format!("--keys {}: {err}", path.display())))?;
    let first = text.lines().next().unwrap_or_default();
    serde_json::from_str::<ReceiptKeys>(&text)
        .or_else(|_| serde_json::from_str::<ReceiptKeys>(first))
        .map(|set| set.keys)
        .map_err(|err| {
            CliError(format!(
                "--keys {}: not a key set ({{\"keys\": [...]}}): {err}",
                path.display()
            ))
        })
}

/// Says what the check found; the exit code.
fn report(file: &std::path::Path, verified: &Verified, out: &mut impl Write) -> i32 {
    let file = file.display();
    match verified {
        Verified::Holds { count } => {
            let _ = writeln!(
                out,
                "{file}: the chain holds: {count} receipts, each signed"
            );
            0
        }
        Verified::Broken { seq, line, why } => {
            let _ = writeln!(
                out,
                "{file}: the chain is broken at receipt {seq} (line {line}): {why}"
            );
            1
        }
        Verified::Unreadable(why) => {
            let _ = writeln!(out, "{file}: cannot be checked: {why}");
            2
        }
    }
}
