//! The store: sessions, tasks, each task's event log, pending batches with their deadlines,
//! decisions (the audit trail), tool-call execution records and people's "always allow"
//! policies, in SQLite. All SQL lives in this folder; the runtime
//! talks to [`Store`] only, so a second backend can take its place without the runtime knowing.
//!
//! It knows rows, typed columns and JSON values, nothing of HTTP and nothing of A2A versions:
//! the agent layer hands it events already encoded.
//!
//! Writes share one connection and commit in groups (`writer`): concurrent writes share a
//! transaction, a lone write runs at once on its caller's thread; SQLite allows one writer at a
//! time anyway. Reads run on their own
//! connections (WAL lets them run beside the writer) and are quick enough to run in place.
//! Statements are prepared once per connection and cached.

mod batches;
mod deadlines;
mod policies;
mod rows;
mod schema;
mod sessions;
mod tasks;
mod writer;

use std::path::Path;
use std::sync::{Arc, Mutex, TryLockError};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

pub use deadlines::Deadline;
pub use policies::{PolicyRow, PolicyScope};
pub use rows::*;

use writer::Writer;

/// What can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Db(#[from] rusqlite::Error),
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A row holds what this version cannot read (a state it does not know, JSON that is not).
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// A compare-and-set lost: the row was not in the expected state any more.
    #[error("conflict: {0}")]
    Conflict(&'static str),
    #[error("not found")]
    NotFound,
    /// A group of writes did not commit; nothing of it was kept.
    #[error("commit failed: {0}")]
    Commit(String),
    #[error("the store is closed")]
    Closed,
    /// The database is not at this binary's schema version (migrations missing, or a newer
    /// binary migrated it further).
    #[error("the database schema is at version {applied}; this binary needs {latest}")]
    Schema { applied: i64, latest: i64 },
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The current time as RFC 3339 with milliseconds, UTC (`2026-11-21T10:00:00.000Z`).
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// How many read connections serve the runtime at once.
const READERS: usize = 4;

#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    writer: Writer,
    readers: Vec<Mutex<Connection>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

fn connect(path: &Path, flags: OpenFlags) -> Result<Connection> {
    let connection = Connection::open_with_flags(path, flags)?;
    connection.busy_timeout(Duration::from_secs(10))?;
    connection.set_prepared_statement_cache_capacity(64);
    // WAL (set once by the writer, kept in the file) lets reads run beside the writer. With
    // WAL, NORMAL survives a process crash (SIGKILL): a commit is in the log before it returns;
    // only a power loss may drop the last commits.
    if !flags.contains(OpenFlags::SQLITE_OPEN_READ_ONLY) {
        connection.execute_batch("PRAGMA journal_mode = WAL")?;
        // A checkpoint copies every page changed since the last one into the database file.
        // Busy pages (a task's row, the tails of the event log and of the indexes) change many
        // times between checkpoints, so checkpointing every 16 MiB of log instead of SQLite's
        // 4 MiB copies each of them once where it would copy it four times.
        connection.execute_batch("PRAGMA wal_autocheckpoint = 4000")?;
    }
    // Foreign keys stay declared in the schema but are not enforced: every write already checks
    // its parent (a commit updates its task row first and fails if it is gone), the checks cost
    // an index lookup per inserted event, and deleting a session deletes its children itself.
    connection.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = OFF;")?;
    Ok(connection)
}

impl Store {
    /// Opens (creating if needed) `signoff.db` in `data_dir` and runs the migrations, so a new
    /// binary upgrades an old database at start and nobody runs a separate migration step.
    pub async fn open(data_dir: &Path) -> Result<Store> {
        let path = data_dir.join("signoff.db");
        let writer = connect(
            &path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        schema::migrate(&writer)?;
        let mut readers = Vec::with_capacity(READERS);
        for _ in 0..READERS {
            let reader = connect(
                &path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )?;
            readers.push(Mutex::new(reader));
        }
        let writer = Writer::new(writer);
        Ok(Store {
            inner: Arc::new(Inner { writer, readers }),
        })
    }

    /// Finishes the queued writes and closes the writer (later writes get [`StoreError::Closed`]).
    pub async fn close(&self) {
        self.inner.writer.close();
    }

    /// Whether the store can serve: a read answers, and the schema is at this binary's version.
    /// For readiness checks (`GET /readyz`): cheap enough to run on every probe.
    pub async fn check_ready(&self) -> Result<()> {
        let applied: i64 = self.read(|connection| {
            Ok(connection.query_row("PRAGMA user_version", [], |row| row.get(0))?)
        })?;
        if applied != schema::LATEST {
            return Err(StoreError::Schema {
                applied,
                latest: schema::LATEST,
            });
        }
        Ok(())
    }

    /// Runs `work` in the next group commit (see `writer`).
    async fn write<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> Result<T> + Send + 'static,
    {
        self.inner.writer.write(work).await
    }

    /// Runs `work` on a free read connection. Reads are short (indexed lookups and small pages),
    /// so they run in place rather than paying a hop to another thread.
    fn read<T>(&self, work: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        for reader in &self.inner.readers {
            match reader.try_lock() {
                Ok(connection) => return work(&connection),
                Err(TryLockError::WouldBlock) => continue,
                Err(TryLockError::Poisoned(poisoned)) => return work(&poisoned.into_inner()),
            }
        }
        // All busy: wait for the first (its holder never awaits while holding it).
        match self.inner.readers[0].lock() {
            Ok(connection) => work(&connection),
            Err(poisoned) => work(&poisoned.into_inner()),
        }
    }

    /// Runs several reads in one read transaction: they see one moment of the database, and
    /// pay for taking the snapshot once.
    fn read_together<T>(&self, work: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        self.read(|connection| {
            connection.prepare_cached("BEGIN")?.execute([])?;
            let outcome = work(connection);
            // A read-only transaction has nothing to keep: ending it either way is the same.
            connection.prepare_cached("ROLLBACK")?.execute([])?;
            outcome
        })
    }
}
