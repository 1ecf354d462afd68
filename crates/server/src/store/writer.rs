//! The one writer: a thread that owns the write connection and commits concurrent writes in
//! groups. Every write is a job run inside its own SAVEPOINT of a shared transaction, so a job
//! that fails (a lost compare-and-set) rolls back alone; the group commits once; and only then
//! does each job's caller get its answer. Nothing is announced before its commit is durable,
//! yet a thousand tasks stepping at once share one transaction instead of a thousand.

use std::sync::mpsc;
use std::sync::Mutex;
use std::thread::JoinHandle;

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::{Result, StoreError};

/// Hands a job's answer to its caller once the group's commit is known.
type Deliver = Box<dyn FnOnce(std::result::Result<(), String>) + Send>;
/// A job: runs on the writer's connection, returns how to deliver its answer.
type Job = Box<dyn FnOnce(&Connection) -> Deliver + Send>;

/// The most jobs one transaction takes, so one group never holds the others up for long.
const MAX_GROUP: usize = 256;

pub(super) struct Writer {
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Writer {
    pub(super) fn start(connection: Connection) -> std::io::Result<Writer> {
        let (sender, receiver) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("signoff-store-writer".into())
            .spawn(move || run(&connection, &receiver))?;
        Ok(Writer {
            jobs: Mutex::new(Some(sender)),
            thread: Mutex::new(Some(thread)),
        })
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
        let sent = match self.jobs.lock() {
            Ok(jobs) => jobs.as_ref().is_some_and(|jobs| jobs.send(job).is_ok()),
            Err(_) => false,
        };
        if !sent {
            return Err(StoreError::Closed);
        }
        answered.await.map_err(|_| StoreError::Closed)?
    }

    /// Stops taking jobs, lets the thread finish the queued ones, and waits for it.
    pub(super) fn close(&self) {
        if let Ok(mut jobs) = self.jobs.lock() {
            jobs.take();
        }
        let thread = self.thread.lock().ok().and_then(|mut thread| thread.take());
        if let Some(thread) = thread {
            if thread.join().is_err() {
                tracing::error!("the store's writer thread panicked");
            }
        }
    }
}

fn in_savepoint<T>(
    connection: &Connection,
    work: impl FnOnce(&Connection) -> Result<T>,
) -> Result<T> {
    connection.execute_batch("SAVEPOINT job")?;
    match work(connection) {
        Ok(value) => {
            connection.execute_batch("RELEASE job")?;
            Ok(value)
        }
        Err(err) => {
            connection.execute_batch("ROLLBACK TO job; RELEASE job")?;
            Err(err)
        }
    }
}

fn run(connection: &Connection, jobs: &mpsc::Receiver<Job>) {
    while let Ok(first) = jobs.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match jobs.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        // Without the shared transaction each SAVEPOINT is a transaction of its own: slower,
        // still correct.
        let shared = connection.execute_batch("BEGIN IMMEDIATE").is_ok();
        let mut deliveries: Vec<Deliver> = Vec::with_capacity(group.len());
        for job in group {
            // A bug in one job must not stop the writer for everyone: its caller gets `Closed`
            // (its answer went down with the job) and its changes are rolled back.
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(connection))) {
                Ok(deliver) => deliveries.push(deliver),
                Err(_) => {
                    tracing::error!("a store write panicked; its changes are rolled back");
                    let _ = connection.execute_batch("ROLLBACK TO job; RELEASE job");
                }
            }
        }
        let committed = if shared {
            connection.execute_batch("COMMIT").map_err(|err| {
                let _ = connection.execute_batch("ROLLBACK");
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
}
