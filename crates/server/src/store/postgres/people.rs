//! The directory of people in PostgreSQL.

use sqlx::postgres::PgRow;
use sqlx::Row;

use super::{Postgres, Result};
use crate::store::logins::{groups_from_json, groups_json};
use crate::store::people::*;

pub(super) fn person_from_row(row: &PgRow) -> Result<PersonRow> {
    Ok(PersonRow {
        user_id: row.try_get(0)?,
        name: row.try_get(1)?,
        email: row.try_get(2)?,
        groups: groups_from_json(&row.try_get::<String, _>(3)?)?,
        last_seen: row.try_get(4)?,
    })
}

impl Postgres {
    pub async fn put_person(&self, person: PersonRow) -> Result<()> {
        sqlx::query(
            "INSERT INTO people (user_id, name, email, groups_json, last_seen)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (user_id) DO UPDATE SET name = $2, email = $3, groups_json = $4,
                 last_seen = $5",
        )
        .bind(&person.user_id)
        .bind(person.name.as_deref())
        .bind(person.email.as_deref())
        .bind(groups_json(&person.groups)?)
        .bind(&person.last_seen)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn person(&self, user_id: &str) -> Result<Option<PersonRow>> {
        let row = sqlx::query(&format!("{PERSON_SELECT} WHERE user_id = $1"))
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(person_from_row).transpose()
    }

    pub async fn people_in_groups(&self, groups: &[String]) -> Result<Vec<PersonRow>> {
        let rows = sqlx::query(&format!(
            "{PERSON_SELECT} WHERE groups_json::jsonb ?| $1 ORDER BY user_id"
        ))
        .bind(groups)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(person_from_row).collect()
    }
}
