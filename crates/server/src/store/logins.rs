//! The rows of browser sign-ins (`--auth oidc`): signed-in sessions, keyed by their cookie's
//! SHA-256 (sign-ins on their way through the provider are cookies: `http/auth/attempt.rs`;
//! the `login_attempts` rows an older version wrote are only swept). Each backend's `logins`
//! writes and reads them.

/// A signed-in browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginRow {
    pub id_sha256: String,
    pub subject: String,
    pub name: Option<String>,
    pub email: Option<String>,
    pub groups: Vec<String>,
    pub refresh_token: Option<String>,
    pub id_token: Option<String>,
    /// RFC 3339, as [`super::now`] writes it.
    pub expires_at: String,
    pub created_at: String,
}

pub(super) const LOGIN_SELECT: &str = "SELECT id_sha256, subject, name, email, groups_json, \
     refresh_token, id_token, expires_at, created_at FROM logins";

/// The sessions [`Store::sweep_logins`](super::Store::sweep_logins) deletes (`?1`/`$1`: expired
/// before, `?2`/`$2`: idle before), in either backend's parameter syntax.
pub(super) fn sweep_sessions_sql(first: &str, second: &str) -> String {
    format!(
        "DELETE FROM logins WHERE (refresh_token IS NULL AND expires_at < {first})
             OR expires_at < {second}"
    )
}

/// The groups column's JSON.
pub(super) fn groups_json(groups: &[String]) -> super::Result<String> {
    Ok(serde_json::to_string(groups)?)
}

/// The groups column read back.
pub(super) fn groups_from_json(text: &str) -> super::Result<Vec<String>> {
    serde_json::from_str(text)
        .map_err(|err| super::StoreError::Corrupt(format!("a login's groups: {err}")))
}
