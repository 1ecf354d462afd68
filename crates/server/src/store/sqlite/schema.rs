//! The schema and its migrations, applied in order at open. The database records how far it
//! is in `PRAGMA user_version`.

use rusqlite::Connection;

use super::Result;

/// Every migration, oldest first; a new one is appended, never edited.
const MIGRATIONS: [&str; 9] = [
    include_str!("../../../migrations/sqlite/0001_init.sql"),
    include_str!("../../../migrations/sqlite/0002_policies_and_deadlines.sql"),
    include_str!("../../../migrations/sqlite/0003_leases.sql"),
    include_str!("../../../migrations/sqlite/0004_queued_messages.sql"),
    include_str!("../../../migrations/sqlite/0005_shares_and_feedback.sql"),
    include_str!("../../../migrations/sqlite/0006_relayed_chats.sql"),
    include_str!("../../../migrations/sqlite/0007_approval_events.sql"),
    include_str!("../../../migrations/sqlite/0008_subagent_tasks.sql"),
    include_str!("../../../migrations/sqlite/0009_logins.sql"),
];

/// The schema version of a database with every migration of this binary applied.
pub(super) const LATEST: i64 = MIGRATIONS.len() as i64;

/// Brings the database up to the last migration, each in its own transaction.
pub(super) fn migrate(connection: &Connection) -> Result<()> {
    let mut applied: i64 = connection.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    // Databases made before the version was kept in `user_version` recorded their migrations in
    // sqlx's table; they are that far.
    if applied == 0 && table_exists(connection, "_sqlx_migrations")? {
        applied = connection.query_row("SELECT COUNT(*) FROM _sqlx_migrations", [], |row| {
            row.get(0)
        })?;
    }
    for (index, sql) in MIGRATIONS.iter().enumerate() {
        let version = index as i64 + 1;
        if version <= applied {
            continue;
        }
        connection.execute_batch(&format!(
            "BEGIN IMMEDIATE; {sql}; PRAGMA user_version = {version}; COMMIT;"
        ))?;
    }
    if applied > MIGRATIONS.len() as i64 {
        tracing::warn!(
            applied,
            known = MIGRATIONS.len(),
            "the database is newer than this binary"
        );
    } else if applied < MIGRATIONS.len() as i64 {
        connection.execute_batch(&format!("PRAGMA user_version = {}", MIGRATIONS.len()))?;
    }
    Ok(())
}

fn table_exists(connection: &Connection, name: &str) -> Result<bool> {
    let count: i64 = connection.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [name],
        |row| row.get(0),
    )?;
    Ok(count > 0)
}
