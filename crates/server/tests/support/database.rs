//! The test's database: SQLite in the test's data folder by default, or, with
//! `SIGNOFF_TEST_BACKEND=postgres`, a fresh database on the PostgreSQL server at
//! `SIGNOFF_TEST_POSTGRES_URL` (`scripts/test.sh` provides one). Its URL is kept in the data
//! folder, so a restart on the same folder finds the same database. Tests that look into the
//! database write their SQL once, with `?1` parameters, and it runs on either backend.

use std::path::Path;

use sqlx::{Connection, Executor};

/// The file in a test's data folder that names its PostgreSQL database.
const URL_FILE: &str = "test-database-url";

/// Whether this run's tests use PostgreSQL.
pub fn on_postgres() -> bool {
    std::env::var("SIGNOFF_TEST_BACKEND").is_ok_and(|backend| backend == "postgres")
}

/// The database URL for a server on `data_dir`: `None` for SQLite; on PostgreSQL, the
/// folder's database, created on first use.
pub async fn database_url(data_dir: &Path) -> Option<String> {
    if !on_postgres() {
        return None;
    }
    let file = data_dir.join(URL_FILE);
    if let Ok(url) = std::fs::read_to_string(&file) {
        return Some(url);
    }
    let url = create_database().await;
    std::fs::write(&file, &url).unwrap();
    Some(url)
}

/// A fresh database on the server at `SIGNOFF_TEST_POSTGRES_URL`; its URL.
pub async fn create_database() -> String {
    let admin = std::env::var("SIGNOFF_TEST_POSTGRES_URL").expect(
        "SIGNOFF_TEST_POSTGRES_URL names the PostgreSQL the tests use (scripts/test.sh starts one)",
    );
    let name = format!("signoff_test_{}", uuid::Uuid::new_v4().simple());
    let mut connection = sqlx::PgConnection::connect(&admin).await.unwrap();
    connection
        .execute(format!("CREATE DATABASE {name}").as_str())
        .await
        .unwrap();
    let (server, _) = admin.split('?').next().unwrap().rsplit_once('/').unwrap();
    format!("{server}/{name}")
}

/// `sql` with SQLite's `?N` parameters written as PostgreSQL's `$N`.
fn dialect(sql: &str) -> String {
    if on_postgres() {
        let mut out = String::with_capacity(sql.len());
        let mut chars = sql.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
                out.push('$');
            } else {
                out.push(c);
            }
        }
        out
    } else {
        sql.to_owned()
    }
}

/// Runs statements (without parameters) on the test database of `data_dir`, as a crash or a
/// corruption would leave it.
pub async fn sql_execute(data_dir: &Path, statements: &[&str]) {
    match database_url(data_dir).await {
        Some(url) => {
            let mut connection = sqlx::PgConnection::connect(&url).await.unwrap();
            for statement in statements {
                connection.execute(*statement).await.unwrap();
            }
        }
        None => {
            let db = rusqlite::Connection::open(data_dir.join("signoff.db")).unwrap();
            for statement in statements {
                db.execute(statement, []).unwrap();
            }
        }
    }
}

/// The number a counting query with one text parameter (`?1`) gives on the test database.
pub async fn sql_count(data_dir: &Path, sql: &str, parameter: &str) -> i64 {
    let sql = dialect(sql);
    match database_url(data_dir).await {
        Some(url) => {
            let mut connection = sqlx::PgConnection::connect(&url).await.unwrap();
            sqlx::query_scalar(&sql)
                .bind(parameter)
                .fetch_one(&mut connection)
                .await
                .unwrap()
        }
        None => {
            let db = rusqlite::Connection::open(data_dir.join("signoff.db")).unwrap();
            db.query_row(&sql, [parameter], |row| row.get(0)).unwrap()
        }
    }
}

/// The test database of `data_dir`, for tests that open the store themselves.
pub async fn test_database(data_dir: &Path) -> signoff_server::store::Database {
    let url = database_url(data_dir).await;
    signoff_server::store::Database::from_url(url.as_deref(), data_dir).unwrap()
}
