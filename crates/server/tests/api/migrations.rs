//! Upgrading a database made by an older schema: the migration that rebuilds SQLite's tables
//! without AUTOINCREMENT keeps every row with its id and every index, the deadline index holds
//! only batches with a deadline (on both backends), and the upgraded server serves the old chat
//! and new ones.

use rusqlite::types::Value as Sql;
use rusqlite::Connection;
use serde_json::json;

use crate::hitl::pause;
use crate::support::*;

/// The SQLite migrations before the rebuild, as an older binary applied them.
const OLD_SQLITE: [&str; 8] = [
    include_str!("../../migrations/sqlite/0001_init.sql"),
    include_str!("../../migrations/sqlite/0002_policies_and_deadlines.sql"),
    include_str!("../../migrations/sqlite/0003_leases.sql"),
    include_str!("../../migrations/sqlite/0004_queued_messages.sql"),
    include_str!("../../migrations/sqlite/0005_shares_and_feedback.sql"),
    include_str!("../../migrations/sqlite/0006_relayed_chats.sql"),
    include_str!("../../migrations/sqlite/0007_approval_events.sql"),
    include_str!("../../migrations/sqlite/0008_subagent_tasks.sql"),
];

const T0: &str = "2026-11-20T10:00:00.000Z";

/// Rows in every table, ids with gaps, and `sqlite_sequence` past the highest ids (their rows
/// deleted with a chat): what an older server leaves behind. One chat waits on a batch of one
/// `write_file` with a deadline, one chat is done.
fn old_rows(db: &Connection) {
    let requests = json!([{"name": "write_file", "description": "Create a file.",
                           "args": {"path": "old.txt", "content": "hi"}}])
    .to_string();
    let transcript = json!([{"role": "user", "content": "write old.txt: hi"}]).to_string();
    db.execute_batch(&format!(
        "INSERT INTO sessions VALUES ('ctx-wait', 'local', 'default/demo', 'waiting chat', '{T0}', '{T0}');
         INSERT INTO sessions VALUES ('ctx-done', 'local', 'default/demo', 'done chat', '{T0}', '{T0}');
         INSERT INTO tasks (seq_no, id, context_id, user_id, agent, state, transcript, last_seq,
                            created_at, updated_at, lease_owner, lease_until, remote)
           VALUES (3, 'task-done', 'ctx-done', 'local', 'default/demo', 'completed', '[]', 2,
                   '{T0}', '{T0}', NULL, NULL, 0),
                  (7, 'task-wait', 'ctx-wait', 'local', 'default/demo', 'input-required',
                   '{transcript}', 1, '{T0}', '{T0}', 'replica-1', '{T0}', 0);
         INSERT INTO task_events VALUES ('task-done', 1, '{{\"kind\":\"status-update\"}}', 0, '{T0}'),
                                        ('task-done', 2, '{{\"kind\":\"status-update\"}}', 1, '{T0}'),
                                        ('task-wait', 1, '{{\"kind\":\"status-update\"}}', 1, '{T0}');
         INSERT INTO batches (id, task_id, state, requests, created_at, decided_at, expires_at)
           VALUES (4, 'task-done', 'decided', '[]', '{T0}', '{T0}', NULL),
                  (9, 'task-wait', 'pending', '{requests}', '{T0}', NULL, '2126-01-01T00:00:00.000Z');
         INSERT INTO decisions VALUES (5, 4, 'task-done', 'local', 'rest', '{{\"decision_type\":\"approve\"}}',
                                       'approved', '{T0}');
         INSERT INTO calls (task_id, call_id, position, name, source, args, args_sha256, batch_id,
                            status)
           VALUES ('task-wait', 'call_1', 0, 'write_file', 'builtin', '{{}}', 'ab', 9, 'held');
         INSERT INTO queued_messages VALUES (6, 'task-wait', '{{\"parts\":[]}}', '{T0}');
         INSERT INTO approval_events (seq, user_id, task_id, context_id, batch_id, kind, outcome,
                                      decided_by, created_at)
           VALUES (10, 'local', 'task-done', 'ctx-done', 4, 'pending', NULL, NULL, '{T0}'),
                  (11, 'local', 'task-done', 'ctx-done', 4, 'decided', 'rest', 'local', '{T0}'),
                  (12, 'local', 'task-wait', 'ctx-wait', 9, 'pending', NULL, NULL, '{T0}');
         INSERT INTO subagent_tasks VALUES ('task-done', 'call_9', 'default/helper', 'task-child',
                                            'ctx-child', 1, 1, '{T0}');
         INSERT INTO policies VALUES ('pol-1', 'local', 'default/demo', 'read_file', 'agent', NULL,
                                      NULL, 'local', '{T0}', NULL);
         INSERT INTO shares VALUES ('share-1', 'ctx-done', 'local', 'cafe', '{T0}', NULL);
         INSERT INTO feedback VALUES ('fb-1', 'local', 'ctx-done', 'task-done', NULL, 'up', NULL, '{T0}');
         UPDATE sqlite_sequence SET seq = seq + 100;"
    ))
    .unwrap();
}

/// Every row of every table (the id columns included), table by table.
fn all_rows(db: &Connection) -> Vec<(String, Vec<Vec<Sql>>)> {
    let tables: Vec<String> = db
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'sqlite_sequence'
             ORDER BY name",
        )
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    tables
        .into_iter()
        .map(|table| {
            let mut statement = db
                .prepare(&format!("SELECT * FROM {table} ORDER BY 1, 2"))
                .unwrap();
            let width = statement.column_count();
            let rows = statement
                .query_map([], |row| {
                    (0..width).map(|index| row.get::<_, Sql>(index)).collect()
                })
                .unwrap()
                .collect::<rusqlite::Result<Vec<Vec<Sql>>>>()
                .unwrap();
            (table, rows)
        })
        .collect()
}

/// An index as the schema has it.
#[derive(Debug, PartialEq)]
struct Index {
    name: String,
    table: String,
    unique: bool,
    columns: Vec<String>,
    /// The WHERE of a partial index, its spaces collapsed.
    partial: Option<String>,
}

/// Every index, by name.
fn all_indexes(db: &Connection) -> Vec<Index> {
    let named: Vec<(String, String, Option<String>)> = db
        .prepare("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' ORDER BY name")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    named
        .into_iter()
        .map(|(name, table, sql)| {
            let columns: Vec<String> = db
                .prepare(&format!("PRAGMA index_info('{name}')"))
                .unwrap()
                .query_map([], |row| row.get(2))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            let unique = sql.as_deref().is_none_or(|sql| sql.contains("UNIQUE"));
            let partial = sql
                .as_deref()
                .and_then(|sql| sql.split_once(" WHERE "))
                .map(|(_, condition)| condition.split_whitespace().collect::<Vec<_>>().join(" "));
            Index {
                name,
                table,
                unique,
                columns,
                partial,
            }
        })
        .collect()
}

#[tokio::test]
async fn an_old_sqlite_database_keeps_every_row_and_index_when_its_tables_lose_autoincrement() {
    if on_postgres() {
        // PostgreSQL's ids come from identity sequences: nothing is rebuilt there (its deadline
        // index is checked by the next test).
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("signoff.db");
    let (rows_before, indexes_before) = {
        let db = Connection::open(&path).unwrap();
        db.execute_batch("PRAGMA journal_mode = WAL").unwrap();
        for sql in OLD_SQLITE {
            db.execute_batch(sql).unwrap();
        }
        db.execute_batch("PRAGMA user_version = 8").unwrap();
        old_rows(&db);
        (all_rows(&db), all_indexes(&db))
    };

    // The server upgrades the database at start; the old chat's batch still waits.
    let app = spawn_in(dir, |_| {}).await;
    let (status, listed) = app.get("/api/approvals").await;
    assert_eq!(status, 200, "{listed}");
    let waiting: Vec<&str> = listed["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|batch| batch["taskId"].as_str().unwrap())
        .collect();
    assert_eq!(waiting, ["task-wait"], "{listed}");
    assert_eq!(
        listed["approvals"][0]["expiresAt"],
        "2126-01-01T00:00:00.000Z"
    );
    let dir = app.stop().await;

    let db = Connection::open(&path).unwrap();
    let version: i64 = db
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    // Every migration this binary has ran: as many as `migrations/sqlite/` holds.
    let migrations = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/sqlite"))
        .unwrap()
        .count() as i64;
    assert_eq!(version, migrations);
    // Later migrations may add tables and columns of their own (a column is added at a table's
    // end); the old tables keep every row, with the values of the old columns.
    let old_widths: Vec<(&String, usize)> = rows_before
        .iter()
        .map(|(table, rows)| (table, rows.first().map_or(0, Vec::len)))
        .collect();
    let rows_after: Vec<_> = all_rows(&db)
        .into_iter()
        .filter_map(|(table, rows)| {
            let (_, width) = old_widths.iter().find(|(old, _)| **old == table)?;
            let rows = rows.into_iter().map(|row| row[..*width].to_vec()).collect();
            Some((table, rows))
        })
        .collect();
    assert_eq!(rows_after, rows_before, "every row, with its id");
    let mut expected = indexes_before;
    for index in &mut expected {
        if index.name == "batches_by_deadline" {
            index.partial = Some("state = 'pending' AND expires_at IS NOT NULL".to_owned());
        }
    }
    // Later migrations may index the old tables too.
    // The list of chats leaves a subagent's own session out by its context; a task's
    // batches and audit rows are read by their task.
    for (name, table, columns) in [
        (
            "subagent_tasks_by_child_context",
            "subagent_tasks",
            &["child_context_id"][..],
        ),
        ("batches_by_task", "batches", &["task_id", "id"][..]),
        ("decisions_by_task", "decisions", &["task_id", "id"][..]),
    ] {
        expected.push(Index {
            name: name.to_owned(),
            table: table.to_owned(),
            unique: false,
            columns: columns.iter().map(|column| (*column).to_owned()).collect(),
            partial: None,
        });
    }
    expected.sort_by(|a, b| a.name.cmp(&b.name));
    let indexes_after: Vec<Index> = all_indexes(&db)
        .into_iter()
        .filter(|index| old_widths.iter().any(|(table, _)| **table == index.table))
        .collect();
    assert_eq!(
        indexes_after, expected,
        "every index, the deadline one narrowed"
    );
    let autoincrement: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE sql LIKE '%AUTOINCREMENT%'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(autoincrement, 0);
    let integrity: String = db
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    let dangling: i64 = db
        .query_row("SELECT COUNT(*) FROM pragma_foreign_key_check", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(dangling, 0, "every reference still finds its row");
    drop(db);

    // A new chat on the upgraded database: its rows take ids after the old ones.
    let app = spawn_in(dir, |_| {}).await;
    let (task, context) = pause(&app, None).await;
    let results = decide(&app, &task, &context, json!({"decision_type": "approve"})).await;
    assert_eq!(results.last().unwrap()["status"]["state"], "completed");
    let dir = app.stop().await;
    let db = Connection::open(dir.path().join("signoff.db")).unwrap();
    let id_of = |sql: &str| -> i64 { db.query_row(sql, [&task], |row| row.get(0)).unwrap() };
    assert_eq!(id_of("SELECT seq_no FROM tasks WHERE id = ?1"), 8);
    assert_eq!(id_of("SELECT id FROM batches WHERE task_id = ?1"), 10);
    assert_eq!(id_of("SELECT id FROM decisions WHERE task_id = ?1"), 6);
    assert_eq!(
        id_of("SELECT MIN(seq) FROM approval_events WHERE task_id = ?1"),
        13
    );
}

#[tokio::test]
async fn the_deadline_index_holds_only_pending_batches_with_a_deadline() {
    let app = spawn_app().await;
    let dir = app.data_dir.path().to_owned();
    // Ready: the server has migrated its database.
    assert_eq!(app.get("/readyz").await.0, 200);
    let condition = if on_postgres() {
        let url = database_url(&dir).await.unwrap();
        let mut connection = <sqlx::PgConnection as sqlx::Connection>::connect(&url)
            .await
            .unwrap();
        let definition: String = sqlx::query_scalar(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'batches_by_deadline'",
        )
        .fetch_one(&mut connection)
        .await
        .unwrap();
        definition
    } else {
        let db = Connection::open(dir.join("signoff.db")).unwrap();
        let sql: String = db
            .query_row(
                "SELECT sql FROM sqlite_master WHERE name = 'batches_by_deadline'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        let plan: String = db
            .query_row(
                "EXPLAIN QUERY PLAN SELECT task_id, id, expires_at FROM batches
                 WHERE state = 'pending' AND expires_at IS NOT NULL ORDER BY expires_at",
                [],
                |row| row.get(3),
            )
            .unwrap();
        // The restart's query of every deadline still reads the index, in its order.
        assert!(plan.contains("batches_by_deadline"), "{plan}");
        sql
    };
    let condition = condition.split_once("WHERE").unwrap().1;
    assert!(
        condition.contains("state") && condition.contains("pending"),
        "{condition}"
    );
    assert!(condition.contains("expires_at IS NOT NULL"), "{condition}");
}
