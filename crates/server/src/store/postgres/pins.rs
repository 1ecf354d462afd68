//! Pinned tool definitions in PostgreSQL.

use sqlx::postgres::PgRow;
use sqlx::Row;

use super::{Postgres, Result};
use crate::store::pins::*;

fn pin_from_row(row: &PgRow) -> Result<ToolPinRow> {
    Ok(ToolPinRow {
        agent: row.try_get(0)?,
        tool: row.try_get(1)?,
        source: row.try_get(2)?,
        digest: row.try_get(3)?,
        definition: row.try_get(4)?,
        pinned_at: row.try_get(5)?,
        pinned_by: row.try_get(6)?,
    })
}

/// Binds a pin's columns as $1 to $7, in the table's order.
fn bind_pin<'q>(
    query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    pin: &'q ToolPinRow,
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    query
        .bind(&pin.agent)
        .bind(&pin.tool)
        .bind(&pin.source)
        .bind(&pin.digest)
        .bind(&pin.definition)
        .bind(&pin.pinned_at)
        .bind(&pin.pinned_by)
}

impl Postgres {
    /// The pins of `agent`'s tools.
    pub async fn tool_pins(&self, agent: &str) -> Result<Vec<ToolPinRow>> {
        let rows = sqlx::query(&format!("{PIN_SELECT} WHERE agent = $1 ORDER BY tool"))
            .bind(agent)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(pin_from_row).collect()
    }

    /// Pins `pin` unless its tool has a pin already (another replica may have pinned it a
    /// moment ago); the tool's pin either way.
    pub async fn pin_first_seen(&self, pin: ToolPinRow) -> Result<ToolPinRow> {
        bind_pin(
            sqlx::query(
                "INSERT INTO tool_pins (agent, tool, source, digest, definition, pinned_at,
                     pinned_by)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (agent, tool) DO NOTHING",
            ),
            &pin,
        )
        .execute(&self.pool)
        .await?;
        let row = sqlx::query(&format!("{PIN_SELECT} WHERE agent = $1 AND tool = $2"))
            .bind(&pin.agent)
            .bind(&pin.tool)
            .fetch_one(&self.pool)
            .await?;
        pin_from_row(&row)
    }

    /// Replaces the pin of `pin`'s tool if it is still `was_digest`, and revokes in the same
    /// transaction every grant in force for that tool of that agent; whether it was replaced.
    pub async fn repin_tool(&self, pin: ToolPinRow, was_digest: &str) -> Result<bool> {
        let mut transaction = self.pool.begin().await?;
        let replaced = bind_pin(
            sqlx::query(
                "UPDATE tool_pins SET source = $3, digest = $4, definition = $5, pinned_at = $6,
                     pinned_by = $7
                 WHERE agent = $1 AND tool = $2 AND digest = $8",
            ),
            &pin,
        )
        .bind(was_digest)
        .execute(&mut *transaction)
        .await?
        .rows_affected()
            == 1;
        if replaced {
            sqlx::query(
                "UPDATE policies SET revoked_at = $3
                 WHERE agent = $1 AND tool = $2 AND revoked_at IS NULL",
            )
            .bind(&pin.agent)
            .bind(&pin.tool)
            .bind(&pin.pinned_at)
            .execute(&mut *transaction)
            .await?;
        }
        transaction.commit().await?;
        Ok(replaced)
    }
}
