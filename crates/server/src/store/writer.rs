//! The one writer: the write connection and a queue of writes, committed in groups. A caller
//! queues its write and, when no one else is writing, becomes the leader: it runs every queued
//! write, each inside its own SAVEPOINT of one shared transaction (so a write that fails, a lost
//! compare-and-set, rolls back alone), commits once, and only then answers each caller. Writes
//! queued while a leader works wait for it to take them in its next group.
//!
//! So nothing is announced before its commit is in the log, a thousand tasks stepping at once
//! share a few transactions instead of a thousand, and a lone write runs at once on its
//! caller's thread, without waking another.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, TryLockError};

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::{Result, StoreError};

/// Hands a write's answer to its caller once its group's commit is known.
type Deliver = Box<dyn FnOnce(std::result::Result<(), String>) + Send>;
/// A queued write: runs on the connection, returns how to deliver its answer.
type Job = Box<dyn FnOnce(&Connection) -> Deliver + Send>;

/// The most writes one transaction takes, so one group never holds the others up for long.
const MAX_GROUP: usize = 256;

pub(super) struct Writer {
    /// `None` once closed.
    connection: Mutex<Option<Connection>>,
    queue: Mutex<VecDeque<Job>>,
}

impl Writer {
    pub(super) fn new(connection: Connection) -> Writer {
        Writer {
            connection: Mutex::new(Some(connection)),
            queue: Mutex::new(VecDeque::new()),
        }
    }

    /// Runs `work` in the next group and answers once that group has committed.
    pub(super) async fn write<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let (answer, answered) = oneshot::channel();
        let job: Job = Box::new(move |connection| {
            let outcome = in_savepoint(connection, work);
            Box::new(move |committed| {
                let outcome = match committed {
                    Ok(()) => outcome,
                    Err(err) => Err(StoreError::Commit(err)),
                };
                let _ = answer.send(outcome);
            })
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
                    let group: Vec<Job> = {
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

fn in_savepoint<T>(
    connection: &Connection,
    work: impl FnOnce(&Connection) -> Result<T>,
) -> Result<T> {
    run(connection, "SAVEPOINT job")?;
    match work(connection) {
        Ok(value) => {
            run(connection, "RELEASE job")?;
            Ok(value)
        }
        Err(err) => {
            run(connection, "ROLLBACK TO job")?;
            run(connection, "RELEASE job")?;
            Err(err)
        }
    }
}

fn commit_group(connection: &Connection, group: Vec<Job>) {
    // Without the shared transaction each SAVEPOINT is a transaction of its own: slower, still
    // correct.
    let shared = run(connection, "BEGIN IMMEDIATE").is_ok();
    let mut deliveries: Vec<Deliver> = Vec::with_capacity(group.len());
    for job in group {
        // A bug in one write must not stop the others: its caller gets `Closed` (its answer
        // went down with it) and its changes are rolled back.
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(connection))) {
            Ok(deliver) => deliveries.push(deliver),
            Err(_) => {
                tracing::error!("a store write panicked; its changes are rolled back");
                let _ = run(connection, "ROLLBACK TO job")
                    .and_then(|()| run(connection, "RELEASE job"));
            }
        }
    }
    let committed = if shared {
        run(connection, "COMMIT").map_err(|err| {
            let _ = run(connection, "ROLLBACK");
            err.to_string()
        })
    } else {
        Ok(())
    };
    if let Err(err) = &committed {
        tracing::error!(error = %err, "a group of store writes failed to commit");
    }
    for deliver in deliveries {
        deliver(committed.clone());
    }
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
