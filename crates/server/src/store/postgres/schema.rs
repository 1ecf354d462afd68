//! The schema and its migrations (`migrations/postgres/`), applied in order at open. The
//! database records how far it is in `signoff_schema`. Replicas that start together take turns
//! under an advisory lock, so each migration runs once.

use sqlx::PgPool;

use super::Result;

/// Every migration, oldest first; a new one is appended, never edited. The same steps as the
/// SQLite backend's, in PostgreSQL's dialect.
const MIGRATIONS: [&str; 9] = [
    include_str!("../../../migrations/postgres/0001_init.sql"),
    include_str!("../../../migrations/postgres/0002_policies_and_deadlines.sql"),
    include_str!("../../../migrations/postgres/0003_leases.sql"),
    include_str!("../../../migrations/postgres/0004_queued_messages.sql"),
    include_str!("../../../migrations/postgres/0005_shares_and_feedback.sql"),
    include_str!("../../../migrations/postgres/0006_relayed_chats.sql"),
    include_str!("../../../migrations/postgres/0007_approval_events.sql"),
    include_str!("../../../migrations/postgres/0008_subagent_tasks.sql"),
    include_str!("../../../migrations/postgres/0009_logins.sql"),
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

/// Brings the database up to the last migration, all in one transaction under the lock.
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

/// Runs a migration script whole, as `psql` would: sent as one simple query, PostgreSQL parses
/// its statements itself (strings, comments and `DO` bodies included), in the open transaction.
async fn run_script(connection: &mut sqlx::PgConnection, script: &str) -> Result<()> {
    // Through `Executor::execute`, whose boxed future is `Send` as written: `RawSql::execute`'s
    // own async fn leaves the server's future `Send` only for one lifetime, which
    // `tokio::spawn` refuses.
    sqlx::Executor::execute(&mut *connection, sqlx::raw_sql(script)).await?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use sqlx::Connection;

    /// A script runs as written: a `;` or `--` inside a string or a `DO` block's body is SQL,
    /// not the end of a statement or a comment. Needs PostgreSQL, so it runs with the server's
    /// other PostgreSQL tests (`SIGNOFF_TEST_BACKEND=postgres`).
    #[tokio::test]
    async fn a_script_runs_whole() {
        if std::env::var("SIGNOFF_TEST_BACKEND").ok().as_deref() != Some("postgres") {
            return;
        }
        let url = std::env::var("SIGNOFF_TEST_POSTGRES_URL")
            .expect("SIGNOFF_TEST_POSTGRES_URL names the PostgreSQL the tests use");
        let mut connection = sqlx::PgConnection::connect(&url).await.unwrap();
        // Rolled back when dropped: the database is left as it was.
        let mut transaction = connection.begin().await.unwrap();
        let script = "CREATE TEMP TABLE script_notes (note TEXT NOT NULL); -- a table;
INSERT INTO script_notes (note) VALUES ('one -- two;
three');
DO $$
BEGIN
  INSERT INTO script_notes (note) VALUES ('from a block');
END
$$;
";
        run_script(&mut transaction, script).await.unwrap();
        let notes: Vec<String> = sqlx::query_scalar("SELECT note FROM script_notes ORDER BY note")
            .fetch_all(&mut *transaction)
            .await
            .unwrap();
        assert_eq!(notes, ["from a block", "one -- two;\nthree"]);
    }
}
