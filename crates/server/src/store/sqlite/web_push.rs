//! Web Push subscriptions in SQLite.

use rusqlite::{params, Row};

use super::{Result, Sqlite};
use crate::store::web_push::*;

fn subscription_from_row(row: &Row<'_>) -> Result<PushSubscriptionRow> {
    Ok(PushSubscriptionRow {
        id: row.get(0)?,
        user_id: row.get(1)?,
        device: row.get(2)?,
        endpoint: row.get(3)?,
        p256dh: row.get(4)?,
        auth: row.get(5)?,
        created_at: row.get(6)?,
    })
}

impl Sqlite {
    pub async fn put_push_subscription(
        &self,
        row: PushSubscriptionRow,
        cap: usize,
    ) -> Result<bool> {
        self.write(move |connection| {
            let held: i64 = connection
                .prepare_cached(
                    "SELECT count(*) FROM push_subscriptions WHERE user_id = ?1 AND endpoint <> ?2",
                )?
                .query_row([&row.user_id, &row.endpoint], |found| found.get(0))?;
            if held >= cap as i64 {
                return Ok(false);
            }
            // The endpoint is the browser's: enrolled again (by anyone), it is that enrolment.
            connection
                .prepare_cached("DELETE FROM push_subscriptions WHERE endpoint = ?1")?
                .execute([&row.endpoint])?;
            connection
                .prepare_cached(
                    "INSERT INTO push_subscriptions (id, user_id, device, endpoint, p256dh, auth,
                                                     created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )?
                .execute(params![
                    row.id,
                    row.user_id,
                    row.device,
                    row.endpoint,
                    row.p256dh,
                    row.auth,
                    row.created_at
                ])?;
            Ok(true)
        })
        .await
    }

    pub async fn push_subscriptions(&self, user_id: &str) -> Result<Vec<PushSubscriptionRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{PUSH_SUBSCRIPTION_SELECT} WHERE user_id = ?1 ORDER BY created_at, id"
            ))?;
            let mut rows = statement.query([user_id])?;
            let mut subscriptions = Vec::new();
            while let Some(row) = rows.next()? {
                subscriptions.push(subscription_from_row(row)?);
            }
            Ok(subscriptions)
        })
    }

    pub async fn delete_push_subscription(&self, user_id: &str, id: &str) -> Result<bool> {
        let (user_id, id) = (user_id.to_owned(), id.to_owned());
        self.write(move |connection| {
            let deleted = connection
                .prepare_cached("DELETE FROM push_subscriptions WHERE user_id = ?1 AND id = ?2")?
                .execute([&user_id, &id])?;
            Ok(deleted > 0)
        })
        .await
    }
}
