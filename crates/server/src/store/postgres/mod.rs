//! The PostgreSQL backend, for replicas that share one database: a connection pool, each write
//! one transaction. The server's own group commit is not needed here: PostgreSQL flushes the
//! commits of concurrent transactions together.
//!
//! Its statements are the SQLite backend's in PostgreSQL's dialect (`$1` parameters, arrays for
//! many rows in one statement, `FOR UPDATE` where a read decides a write). Exactly-once holds
//! across processes: a decision's compare-and-set is one conditional `UPDATE`, which PostgreSQL
//! serialises on the row, so of two replicas deciding the same batch one wins.

mod approvals;
mod batches;
mod leases;
mod links;
mod logins;
mod outbox;
mod people;
mod pins;
mod push;
mod receipts;
mod records;
mod relayed;
mod schema;
mod settled;
mod sharing;
mod slack;
mod steps;
mod subagents;
mod tasks;
mod web_push;

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgRow};
use sqlx::{PgPool, Row};

use super::columns::*;
use super::*;

/// The most connections one process holds; a few replicas stay well under PostgreSQL's
/// default limit of 100.
const POOL_SIZE: u32 = 16;

pub(super) struct Postgres {
    pool: PgPool,
    /// This process's name among the replicas (a fresh one at every start).
    replica: String,
}

impl Postgres {
    /// Connects and brings the schema up to date (one replica at a time: see `schema`).
    pub(super) async fn open(url: &str) -> Result<Postgres> {
        let options: PgConnectOptions = url.parse()?;
        let pool = PgPoolOptions::new()
            .max_connections(POOL_SIZE)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options.application_name("signoff"))
            .await?;
        schema::migrate(&pool).await?;
        Ok(Postgres {
            pool,
            replica: uuid::Uuid::new_v4().to_string(),
        })
    }

    pub(super) async fn check_ready(&self) -> Result<()> {
        let applied = schema::applied(&self.pool).await?;
        if applied != schema::LATEST {
            return Err(StoreError::Schema {
                applied,
                latest: schema::LATEST,
            });
        }
        Ok(())
    }

    pub(super) async fn close(&self) {
        self.pool.close().await;
    }
}

impl Columns for PgRow {
    fn text(&self, index: usize) -> Result<String> {
        Ok(self.try_get(index)?)
    }

    fn optional_text(&self, index: usize) -> Result<Option<String>> {
        Ok(self.try_get(index)?)
    }

    fn int(&self, index: usize) -> Result<i64> {
        Ok(self.try_get(index)?)
    }

    fn optional_int(&self, index: usize) -> Result<Option<i64>> {
        Ok(self.try_get(index)?)
    }
}
