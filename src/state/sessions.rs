//! The sidebar's session list: made from `GET /api/sessions` (the protocol crate's
//! [`SessionList`]), grouped Today / Yesterday / Older, newest first.

use signoff_protocol::rest::{Session, SessionList};

/// One stored chat.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    /// The A2A `contextId`.
    pub id: String,
    pub title: String,
    /// `namespace/name` of its agent, when the server says.
    pub agent: Option<String>,
    /// Milliseconds since the Unix epoch of the last activity (0 when unknown).
    pub updated_ms: i64,
}

/// A sidebar heading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Today,
    Yesterday,
    Older,
}

impl Group {
    pub fn label(self) -> &'static str {
        match self {
            Group::Today => "Today",
            Group::Yesterday => "Yesterday",
            Group::Older => "Older",
        }
    }
}

fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    // Howard Hinnant's algorithm: days since 1970-01-01 in the proleptic Gregorian calendar.
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Reads an RFC 3339 timestamp (`2026-11-21T10:00:00.123Z`, `…+02:00`) into Unix milliseconds.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    let text = text.trim();
    let number = |range: std::ops::Range<usize>| -> Option<i64> { text.get(range)?.parse().ok() };
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    let mut rest = text.get(19..)?;
    let mut millis = 0;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits: String = fraction.chars().take_while(char::is_ascii_digit).collect();
        let padded = format!("{digits:0<3}");
        millis = padded.get(0..3)?.parse().ok()?;
        rest = &fraction[digits.len()..];
    }
    let offset_minutes = match rest {
        "Z" | "z" | "" => 0,
        _ => {
            let sign = if rest.starts_with('-') { -1 } else { 1 };
            let hours: i64 = rest.get(1..3)?.parse().ok()?;
            let minutes: i64 = rest.get(4..6)?.parse().ok()?;
            sign * (hours * 60 + minutes)
        }
    };
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second
        - offset_minutes * 60;
    Some(seconds * 1000 + millis)
}

impl From<Session> for SessionInfo {
    fn from(session: Session) -> Self {
        let title = if session.title.trim().is_empty() {
            "New chat".to_owned()
        } else {
            session.title
        };
        // A timestamp that does not read sorts the session last rather than hiding it.
        let updated_ms = parse_timestamp(&session.updated_at)
            .or_else(|| parse_timestamp(&session.created_at))
            .unwrap_or(0);
        SessionInfo {
            id: session.id,
            title,
            agent: Some(session.agent),
            updated_ms,
        }
    }
}

/// The sessions of a `GET /api/sessions` answer.
pub fn sessions_of(list: SessionList) -> Vec<SessionInfo> {
    list.sessions.into_iter().map(SessionInfo::from).collect()
}

/// Groups sessions by the person's local day, newest first. `utc_offset_minutes` is the local
/// zone's offset (east positive).
pub fn group(
    mut sessions: Vec<SessionInfo>,
    now_ms: i64,
    utc_offset_minutes: i64,
) -> Vec<(Group, Vec<SessionInfo>)> {
    sessions.sort_by(|a, b| {
        b.updated_ms
            .cmp(&a.updated_ms)
            .then_with(|| b.id.cmp(&a.id))
    });
    let local_day = |ms: i64| (ms + utc_offset_minutes * 60_000).div_euclid(86_400_000);
    let today = local_day(now_ms);
    let mut groups: Vec<(Group, Vec<SessionInfo>)> = Vec::new();
    for session in sessions {
        let group = match today - local_day(session.updated_ms) {
            days if days <= 0 => Group::Today,
            1 => Group::Yesterday,
            _ => Group::Older,
        };
        match groups.last_mut() {
            Some((last, list)) if *last == group => list.push(session),
            Some(_) | None => groups.push((group, vec![session])),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn timestamps_read_with_offsets_and_fractions() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_timestamp("1970-01-02T00:00:01.5Z"), Some(86_401_500));
        assert_eq!(
            parse_timestamp("2026-11-21T10:00:00+02:00"),
            parse_timestamp("2026-11-21T08:00:00Z")
        );
        assert_eq!(
            parse_timestamp("2000-03-01T00:00:00.123456Z"),
            Some(951_868_800_123)
        );
        assert_eq!(parse_timestamp("yesterday"), None);
    }

    #[test]
    fn groups_by_local_day_newest_first() {
        let now = parse_timestamp("2026-11-21T12:00:00Z").unwrap_or(0);
        let session = |id: &str, title: &str, updated: &str| {
            json!({"id": id, "agent": "default/demo", "title": title,
                   "createdAt": "2026-11-01T08:00:00Z", "updatedAt": updated})
        };
        let body = json!({"sessions": [
            session("old", "Old", "2026-11-01T09:00:00Z"),
            session("y", "", "2026-11-20T23:30:00Z"),
            session("t1", "First", "2026-11-21T08:00:00Z"),
            session("t2", "Second", "2026-11-21T11:00:00Z"),
        ]});
        let sessions = sessions_of(serde_json::from_value(body).unwrap());
        assert_eq!(sessions[1].title, "New chat");
        assert_eq!(sessions[1].agent.as_deref(), Some("default/demo"));
        let summary = |offset| -> Vec<(Group, Vec<String>)> {
            group(sessions.clone(), now, offset)
                .into_iter()
                .map(|(group, list)| (group, list.into_iter().map(|s| s.id).collect()))
                .collect()
        };
        assert_eq!(
            summary(0),
            vec![
                (Group::Today, vec!["t2".to_owned(), "t1".to_owned()]),
                (Group::Yesterday, vec!["y".to_owned()]),
                (Group::Older, vec!["old".to_owned()]),
            ]
        );
        // One hour east of UTC, 23:30 UTC on the 20th is already the 21st.
        assert_eq!(summary(60)[0].1, vec!["t2", "t1", "y"]);
    }
}
