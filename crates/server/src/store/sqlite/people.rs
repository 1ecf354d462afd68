//! The directory of people in SQLite.

use rusqlite::{params, Row};

use super::{Result, Sqlite};
use crate::store::logins::{groups_from_json, groups_json};
use crate::store::people::*;

pub(super) fn person_from_row(row: &Row<'_>) -> Result<PersonRow> {
    Ok(PersonRow {
        user_id: row.get(0)?,
        name: row.get(1)?,
        email: row.get(2)?,
        groups: groups_from_json(&row.get::<_, String>(3)?)?,
        last_seen: row.get(4)?,
    })
}

impl Sqlite {
    pub async fn put_person(&self, person: PersonRow) -> Result<()> {
        let groups = groups_json(&person.groups)?;
        self.write(move |connection| {
            connection
                .prepare_cached(
                    "INSERT INTO people (user_id, name, email, groups_json, last_seen)
                     VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (user_id) DO UPDATE SET name = ?2, email = ?3,
                         groups_json = ?4, last_seen = ?5",
                )?
                .execute(params![
                    person.user_id,
                    person.name,
                    person.email,
                    groups,
                    person.last_seen
                ])?;
            Ok(())
        })
        .await
    }

    pub async fn person(&self, user_id: &str) -> Result<Option<PersonRow>> {
        self.read(|connection| {
            let mut statement =
                connection.prepare_cached(&format!("{PERSON_SELECT} WHERE user_id = ?1"))?;
            let mut rows = statement.query([user_id])?;
            match rows.next()? {
                Some(row) => Ok(Some(person_from_row(row)?)),
                None => Ok(None),
            }
        })
    }

    pub async fn people_in_groups(&self, groups: &[String]) -> Result<Vec<PersonRow>> {
        let wanted = groups_json(groups)?;
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{PERSON_SELECT} WHERE EXISTS (
                     SELECT 1 FROM json_each(people.groups_json) AS own
                     WHERE own.value IN (SELECT value FROM json_each(?1)))
                 ORDER BY user_id"
            ))?;
            let mut rows = statement.query([&wanted])?;
            let mut people = Vec::new();
            while let Some(row) = rows.next()? {
                people.push(person_from_row(row)?);
            }
            Ok(people)
        })
    }
}
