//! The one writer: the write connection and a queue of writes, committed in groups. A caller
//! queues its write and, when no one else is writing, becomes the leader: it runs every queued
//! write in one shared transaction, commits once, and only then answers each caller. Writes
//! queued while a leader works wait for it to take them in its next group.
//!
//! A write that fails (a lost compare-and-set) must roll back alone. Savepoints around every
//! write would do that, but they copy each page a write touches, for the rare failure; so a
//! group runs without them first, and only when one of its writes fails is the whole group
//! rolled back and replayed with a savepoint around each write. That is why a write can run
//! twice: it is `FnMut`, and it must not change anything outside the database.
//!
//! So nothing is announced before its commit is in the log, a thousand tasks stepping at once
//! share a few transactions instead of a thousand, and a lone write runs at once on its
//! caller's thread, without waking another.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard, TryLockError};

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::{Result, StoreError};

/// The most writes one transaction takes, so one group never holds the others up for long.
const MAX_GROUP: usize = 256;

/// A queued write, type-erased so writes of any result type share the queue.
trait Job: Send {
    /// Runs the write on the connection (again, when its group is replayed); whether it
    /// succeeded.
    fn run(&mut self, connection: &Connection) -> bool;
    /// Answers the caller once the group's commit is known.
    fn deliver(self: Box<Self>, committed: std::result::Result<(), String>);
}

struct Write<T, F> {
    work: F,
    outcome: Option<Result<T>>,
    answer: oneshot::Sender<Result<T>>,
}

impl<T, F> Job for Write<T, F>
where
    T: Send,
    F: FnMut(&Connection) -> Result<T> + Send,
{
    fn run(&mut self, connection: &Connection) -> bool {
        // A bug in one write must not stop the others: it fails alone.
        let outcome =
            catch_unwind(AssertUnwindSafe(|| (self.work)(connection))).unwrap_or_else(|_| {
                tracing::error!("a store write panicked; its changes are rolled back");
                Err(StoreError::Commit("the write panicked".into()))
            });
        let succeeded = outcome.is_ok();
        self.outcome = Some(outcome);
        succeeded
    }

    fn deliver(self: Box<Self>, committed: std::result::Result<(), String>) {
        let outcome = match (committed, self.outcome) {
            (Ok(()), Some(outcome)) => outcome,
            (Ok(()), None) => Err(StoreError::Closed),
            (Err(err), _) => Err(StoreError::Commit(err)),
        };
        let _ = self.answer.send(outcome);
    }
}

pub(super) struct Writer {
    /// `None` once closed.
    connection: Mutex<Option<Connection>>,
    queue: Mutex<VecDeque<Box<dyn Job>>>,
}

impl Writer {
    pub(super) fn new(connection: Connection) -> Writer {
        Writer {
            connection: Mutex::new(Some(connection)),
            queue: Mutex::new(VecDeque::new()),
        }
    }

    /// Runs `work` in the next group and answers once that group has committed. `work` may run
    /// twice (see the module's note), so it must only change the database.
    pub(super) async fn write<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> Result<T> + Send + 'static,
    {
        let (answer, answered) = oneshot::channel();
        let job: Box<dyn Job> = Box::new(Write {
            work,
            outcome: None,
            answer,
        });
        lock(&self.queue).push_back(job);
        self.lead();
        answered.await.map_err(|_| StoreError::Closed)?
    }

    /// Commits queued writes until the queue is empty, unless another caller is already doing
    /// so (it will take ours too).
    fn lead(&self) {
        loop {
            let connection = match self.connection.try_lock() {
                Ok(connection) => connection,
                Err(TryLockError::WouldBlock) => return,
                Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            };
            match connection.as_ref() {
                Some(connection) => loop {
                    let group: Vec<Box<dyn Job>> = {
                        let mut queue = lock(&self.queue);
                        let take = queue.len().min(MAX_GROUP);
                        queue.drain(..take).collect()
                    };
                    if group.is_empty() {
                        break;
                    }
                    commit_group(connection, group);
                },
                // Closed: queued writes are dropped, so their callers get `Closed`.
                None => lock(&self.queue).clear(),
            }
            drop(connection);
            // A write queued after our last look, while we still held the connection, found
            // it busy and left it to us.
            if lock(&self.queue).is_empty() {
                return;
            }
        }
    }

    /// Commits what is queued and closes the connection; later writes get `Closed`.
    pub(super) fn close(&self) {
        self.lead();
        let mut connection = lock(&self.connection);
        if let Some(connection) = connection.take() {
            if let Err((_, err)) = connection.close() {
                tracing::warn!(error = %err, "closing the database");
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs one of the statements that frame a write (prepared once, like every other).
fn run(connection: &Connection, sql: &str) -> rusqlite::Result<()> {
    connection.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// Runs the group in one transaction: first every write as is; if one fails, the whole group
/// again with a savepoint around each write, so the failed one rolls back alone.
fn commit_group(connection: &Connection, mut group: Vec<Box<dyn Job>>) {
    if run(connection, "BEGIN IMMEDIATE").is_ok() {
        if group.iter_mut().all(|job| job.run(connection)) {
            let committed = commit(connection);
            for job in group {
                job.deliver(committed.clone());
            }
            return;
        }
        if let Err(err) = run(connection, "ROLLBACK") {
            tracing::error!(error = %err, "rolling back a group of store writes");
        }
    }
    // Without the shared transaction each SAVEPOINT is a transaction of its own: slower, still
    // correct.
    let shared = run(connection, "BEGIN IMMEDIATE").is_ok();
    for job in group.iter_mut() {
        if let Err(err) = run(connection, "SAVEPOINT job") {
            tracing::error!(error = %err, "opening a savepoint");
        }
        if !job.run(connection) {
            let _ = run(connection, "ROLLBACK TO job");
        }
        let _ = run(connection, "RELEASE job");
    }
    let committed = if shared { commit(connection) } else { Ok(()) };
    for job in group {
        job.deliver(committed.clone());
    }
}

fn commit(connection: &Connection) -> std::result::Result<(), String> {
    run(connection, "COMMIT").map_err(|err| {
        let _ = run(connection, "ROLLBACK");
        tracing::error!(error = %err, "a group of store writes failed to commit");
        err.to_string()
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn writer() -> (tempfile::TempDir, Arc<Writer>) {
        let dir = tempfile::tempdir().unwrap();
        let connection = Connection::open(dir.path().join("w.db")).unwrap();
        connection
            .execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (n INTEGER PRIMARY KEY);")
            .unwrap();
        (dir, Arc::new(Writer::new(connection)))
    }

    fn count(dir: &tempfile::TempDir) -> i64 {
        let reader = Connection::open(dir.path().join("w.db")).unwrap();
        reader
            .query_row("SELECT COUNT(*) FROM t", [], |row| row.get(0))
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_writes_commit_and_a_failing_one_rolls_back_alone() {
        let (dir, writer) = writer();
        let mut handles = Vec::new();
        for n in 0..200i64 {
            let writer = writer.clone();
            handles.push(tokio::spawn(async move {
                writer
                    .write(move |connection| {
                        connection.execute("INSERT INTO t (n) VALUES (?1)", [n])?;
                        if n == 7 {
                            return Err(StoreError::Conflict("seven is refused"));
                        }
                        Ok(n)
                    })
                    .await
            }));
        }
        let mut refused = 0;
        for handle in handles {
            match handle.await.unwrap() {
                Ok(_) => {}
                Err(StoreError::Conflict(_)) => refused += 1,
                Err(other) => panic!("{other}"),
            }
        }
        assert_eq!(refused, 1);
        // Every answer came after its commit: a new connection sees all the others.
        assert_eq!(count(&dir), 199);
    }

    #[tokio::test]
    async fn writes_after_close_are_refused() {
        let (dir, writer) = writer();
        writer
            .write(|connection| Ok(connection.execute("INSERT INTO t (n) VALUES (1)", [])?))
            .await
            .unwrap();
        writer.close();
        let refused = writer
            .write(|connection| Ok(connection.execute("INSERT INTO t (n) VALUES (2)", [])?))
            .await;
        assert!(matches!(refused, Err(StoreError::Closed)), "{refused:?}");
        assert_eq!(count(&dir), 1);
    }
}
