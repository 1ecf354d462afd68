//! The schema and its migrations (`migrations/postgres/`), applied in order at open. The
//! database records how far it is in `signoff_schema`. Replicas that start together take turns
//! under an advisory lock, so each migration runs once.

use sqlx::PgPool;

use super::Result;

/// Every migration, oldest first; a new one is appended, never edited. The same steps as the
/// SQLite backend's, in PostgreSQL's dialect.
const MIGRATIONS: [&str; 8] = [
    include_str!("../../../migrations/postgres/0001_init.sql"),
    include_str!("../../../migrations/postgres/0002_policies_and_deadlines.sql"),
    include_str!("../../../migrations/postgres/0003_leases.sql"),
    include_str!("../../../migrations/postgres/0004_queued_messages.sql"),
    include_str!("../../../migrations/postgres/0005_shares_and_feedback.sql"),
    include_str!("../../../migrations/postgres/0006_relayed_chats.sql"),
    include_str!("../../../migrations/postgres/0007_approval_events.sql"),
    include_str!("../../../migrations/postgres/0008_subagent_tasks.sql"),
];

/// The schema version of a database with every migration of this binary applied.
pub(super) const LATEST: i64 = MIGRATIONS.len() as i64;

/// The version the database is at.
pub(super) async fn applied(pool: &PgPool) -> Result<i64> {
    let applied: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM signoff_schema")
        .fetch_one(pool)
        .await?;
    Ok(applied.unwrap_or(0))
}

/// The advisory lock the migrating replica holds ("signoff" in ASCII).
const MIGRATION_LOCK: i64 = 0x0073_6967_6e6f_6666;

/// Brings the database up to the last migration, each in its own transaction.
pub(super) async fn migrate(pool: &PgPool) -> Result<()> {
    let mut transaction = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(MIGRATION_LOCK)
        .execute(&mut *transaction)
        .await?;
    sqlx::query("CREATE TABLE IF NOT EXISTS signoff_schema (version BIGINT NOT NULL)")
        .execute(&mut *transaction)
        .await?;
    let applied: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM signoff_schema")
        .fetch_one(&mut *transaction)
        .await?;
    let applied = applied.unwrap_or(0);
    for (index, sql) in MIGRATIONS.iter().enumerate() {
        let version = index as i64 + 1;
        if version <= applied {
            continue;
        }
        run_script(&mut transaction, sql).await?;
        sqlx::query("INSERT INTO signoff_schema (version) VALUES ($1)")
            .bind(version)
            .execute(&mut *transaction)
            .await?;
    }
    transaction.commit().await?;
    if applied > MIGRATIONS.len() as i64 {
        tracing::warn!(
            applied,
            known = MIGRATIONS.len(),
            "the database is newer than this binary"
        );
    }
    Ok(())
}

/// Runs a migration's statements one by one. They are split on the `;` that ends a line: the
/// migrations are written so (no `;` at the end of a comment line or inside a string).
async fn run_script(connection: &mut sqlx::PgConnection, script: &str) -> Result<()> {
    for statement in statements(script) {
        sqlx::query(&statement).execute(&mut *connection).await?;
    }
    Ok(())
}

/// The statements of a migration script: split where a line ends with `;`, comments dropped.
fn statements(script: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in script.lines() {
        let code = match line.find("--") {
            Some(at) => &line[..at],
            None => line,
        };
        let code = code.trim_end();
        if code.trim().is_empty() {
            continue;
        }
        current.push_str(code);
        current.push('\n');
        if code.ends_with(';') {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.trim().is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_migration_splits_into_whole_statements() {
        for script in MIGRATIONS {
            let statements = statements(script);
            assert!(!statements.is_empty());
            for statement in statements {
                let statement = statement.trim();
                assert!(statement.ends_with(';'), "{statement}");
                assert!(!statement.contains("--"), "{statement}");
            }
        }
    }
}
