//! The SMTP server the email tests send to: PyPI's aiosmtpd (`tests/email/install.sh`), writing
//! a Maildir through `tests/email/flaky_mailbox.py` (which refuses each `flaky…` address once),
//! and what it received.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::wait::eventually;

/// aiosmtpd with the flaky Maildir handler on a free port; stopped when dropped.
pub struct Smtp {
    pub port: u16,
    _child: tokio::process::Child,
}

pub async fn start_smtp(maildir: &Path) -> Smtp {
    let venv = std::env::var_os("SIGNOFF_EMAIL_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/signoff/email-venv")
        });
    let python = venv.join("bin/python");
    assert!(
        python.is_file(),
        "no aiosmtpd venv at {}: run crates/server/tests/email/install.sh",
        venv.display()
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = tokio::process::Command::new(python)
        .env(
            "PYTHONPATH",
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/email"),
        )
        .args(["-m", "aiosmtpd", "-n", "-l"])
        .arg(format!("127.0.0.1:{port}"))
        .args(["-c", "flaky_mailbox.FlakyMailbox"])
        .arg(maildir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    eventually("aiosmtpd listening", || async {
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()
            .map(|_| ())
    })
    .await;
    Smtp {
        port,
        _child: child,
    }
}

/// Each message in the Maildir: its envelope recipient and its text part.
pub fn messages(maildir: &Path) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = std::fs::read_dir(maildir.join("new"))
        .map(|dir| {
            dir.filter_map(|entry| Some(entry.ok()?.path()))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(path).unwrap();
            let message = mail_parser::MessageParser::default().parse(&bytes).unwrap();
            let to = message
                .header_raw("X-RcptTo")
                .unwrap_or_default()
                .trim()
                .to_owned();
            (to, message.body_text(0).unwrap_or_default().into_owned())
        })
        .collect();
    found.sort();
    found
}
