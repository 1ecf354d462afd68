//! The SQLite backend, the embedded default: one file in the data folder.
//!
//! Writes share one connection and commit in groups (`writer`): concurrent writes share a
//! transaction, a lone write runs at once on its caller's thread; SQLite allows one writer at a
//! time anyway. Reads run on their own connections (WAL lets them run beside the writer) and are
//! quick enough to run in place. Statements are prepared once per connection and cached.

mod approvals;
mod batches;
mod deadlines;
mod grants;
mod links;
mod logins;
mod outbox;
mod people;
mod pins;
mod push;
mod receipts;
mod relayed;
mod schema;
mod sessions;
mod settled;
mod sharing;
mod slack;
mod steps;
mod subagents;
mod tasks;
mod web_push;
mod writer;

use std::path::Path;
use std::sync::{Mutex, TryLockError};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::columns::*;
use super::rows;
use super::*;

use writer::Writer;

/// How many read connections serve the runtime at once.
const READERS: usize = 4;

/// The SQLite backend: one write connection that group-commits, and read connections.
pub(super) struct Sqlite {
    writer: Writer,
    readers: Vec<Mutex<Connection>>,
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

impl Sqlite {
    /// Opens (creating if needed) `signoff.db` in `data_dir` and runs the migrations, so a new
    /// binary upgrades an old database at start and nobody runs a separate migration step.
    pub(super) async fn open(data_dir: &Path) -> Result<Sqlite> {
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
        Ok(Sqlite { writer, readers })
    }

    /// Finishes the queued writes and closes the writer (later writes get [`StoreError::Closed`]).
    pub(super) async fn close(&self) {
        self.writer.close();
    }

    pub(super) async fn check_ready(&self) -> Result<()> {
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
        self.writer.write(work).await
    }

    /// Runs `work` on a free read connection. Reads are short (indexed lookups and small pages),
    /// so they run in place rather than paying a hop to another thread.
    fn read<T>(&self, work: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        for reader in &self.readers {
            match reader.try_lock() {
                Ok(connection) => return work(&connection),
                Err(TryLockError::WouldBlock) => continue,
                Err(TryLockError::Poisoned(poisoned)) => return work(&poisoned.into_inner()),
            }
        }
        // All busy: wait for the first (its holder never awaits while holding it).
        match self.readers[0].lock() {
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

impl Columns for rusqlite::Row<'_> {
    fn text(&self, index: usize) -> Result<String> {
        Ok(self.get(index)?)
    }

    fn optional_text(&self, index: usize) -> Result<Option<String>> {
        Ok(self.get(index)?)
    }

    fn int(&self, index: usize) -> Result<i64> {
        Ok(self.get(index)?)
    }

    fn optional_int(&self, index: usize) -> Result<Option<i64>> {
        Ok(self.get(index)?)
    }
}
