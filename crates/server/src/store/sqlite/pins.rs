//! Pinned tool definitions in SQLite.

use rusqlite::{params, Row, ToSql};

use super::{Result, Sqlite};
use crate::store::pins::*;

fn pin_from_row(row: &Row<'_>) -> rusqlite::Result<ToolPinRow> {
    Ok(ToolPinRow {
        agent: row.get(0)?,
        tool: row.get(1)?,
        source: row.get(2)?,
        digest: row.get(3)?,
        definition: row.get(4)?,
        pinned_at: row.get(5)?,
        pinned_by: row.get(6)?,
    })
}

/// A pin's columns as ?1 to ?7, in the table's order, then `more` as ?8.
fn pin_params<'a>(pin: &'a ToolPinRow, more: Option<&'a String>) -> Vec<&'a dyn ToSql> {
    let mut values: Vec<&dyn ToSql> = vec![
        &pin.agent,
        &pin.tool,
        &pin.source,
        &pin.digest,
        &pin.definition,
        &pin.pinned_at,
        &pin.pinned_by,
    ];
    values.extend(more.map(|value| value as &dyn ToSql));
    values
}

impl Sqlite {
    /// The pins of `agent`'s tools.
    pub async fn tool_pins(&self, agent: &str) -> Result<Vec<ToolPinRow>> {
        self.read(|connection| {
            let mut statement = connection
                .prepare_cached(&format!("{PIN_SELECT} WHERE agent = ?1 ORDER BY tool"))?;
            let rows = statement.query_map([agent], pin_from_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Pins `pin` unless its tool has a pin already; the tool's pin either way.
    pub async fn pin_first_seen(&self, pin: ToolPinRow) -> Result<ToolPinRow> {
        self.write(move |connection| {
            connection
                .prepare_cached(
                    "INSERT INTO tool_pins (agent, tool, source, digest, definition, pinned_at,
                         pinned_by)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                     ON CONFLICT (agent, tool) DO NOTHING",
                )?
                .execute(pin_params(&pin, None).as_slice())?;
            let stored = connection
                .prepare_cached(&format!("{PIN_SELECT} WHERE agent = ?1 AND tool = ?2"))?
                .query_row([&pin.agent, &pin.tool], pin_from_row)?;
            Ok(stored)
        })
        .await
    }

    /// Replaces the pin of `pin`'s tool if it is still `was_digest`, and revokes in the same
    /// write every grant in force for that tool of that agent (made for the old definition);
    /// whether it was replaced.
    pub async fn repin_tool(&self, pin: ToolPinRow, was_digest: &str) -> Result<bool> {
        let was_digest = was_digest.to_owned();
        // One write: the writer runs it in its transaction, so the pin and the revokes commit
        // together.
        self.write(move |connection| {
            let replaced = connection
                .prepare_cached(
                    "UPDATE tool_pins SET source = ?3, digest = ?4, definition = ?5,
                         pinned_at = ?6, pinned_by = ?7
                     WHERE agent = ?1 AND tool = ?2 AND digest = ?8",
                )?
                .execute(pin_params(&pin, Some(&was_digest)).as_slice())?;
            if replaced == 1 {
                connection
                    .prepare_cached(
                        "UPDATE policies SET revoked_at = ?3
                         WHERE agent = ?1 AND tool = ?2 AND revoked_at IS NULL",
                    )?
                    .execute(params![pin.agent, pin.tool, pin.pinned_at])?;
            }
            Ok(replaced == 1)
        })
        .await
    }
}
