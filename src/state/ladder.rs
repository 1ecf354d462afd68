//! A waiting batch's hand-over and deadline ladder in words (docs/rest.md, Hand-over and
//! Deadline ladder): whom "Ask…" names, what it says once the server took it, the marks the
//! inbox puts on a reminded or escalated batch, and which extensions of its deadline to offer.
//! Pure, so it is tested natively.

use signoff_protocol::rest::{HandedOver, LadderMarks};

use super::routing::approvers_label;

/// The extensions "Extend" offers: what the server is sent, and the button's text.
pub const EXTENSIONS: [(&str, &str, f64); 2] = [
    ("15m", "+15 min", 15.0 * MINUTE),
    ("1h", "+1 h", 60.0 * MINUTE),
];

const MINUTE: f64 = 60_000.0;

/// Whom a person typed into "Ask…", as the server names approvers: a bare name is a person
/// (`alice` is `user:alice`), `group:sre` and `user:bob` stay as typed; the server checks the
/// rest and says what is wrong. Nothing typed is an error saying what to type.
pub fn handover_target(typed: &str) -> Result<String, String> {
    let typed = typed.trim();
    if typed.is_empty() {
        return Err("Name a person (alice) or a group (group:sre) to ask.".to_owned());
    }
    if typed.contains(':') {
        Ok(typed.to_owned())
    } else {
        Ok(format!("user:{typed}"))
    }
}

/// What "Ask…" says once the server took it: "Asked alice", "Asked group sre".
pub fn handed_text(handed: &HandedOver) -> String {
    match handed.to.split_once(':') {
        Some(("group", name)) => format!("Asked group {name}"),
        Some((_, name)) => format!("Asked {name}"),
        None => format!("Asked {}", handed.to),
    }
}

/// The inbox's marks on a batch the ladder reached: "Reminded", "Escalated to sre".
pub fn ladder_marks(marks: &LadderMarks) -> Vec<String> {
    let mut shown = Vec::with_capacity(2);
    if marks.reminded_at.is_some() {
        shown.push("Reminded".to_owned());
    }
    if !marks.escalated_to.is_empty() {
        shown.push(format!(
            "Escalated to {}",
            approvers_label(&marks.escalated_to)
        ));
    }
    shown
}

/// How far the deadline may still move, in milliseconds, once the server said its limit: the
/// first deadline plus `max_extend`, less the deadline now (all in ms since the epoch). `None`
/// when `max_extend` is not a duration this reads; then every extension is offered and the
/// server says which is too far.
pub fn allowance_ms(first_ms: f64, max_extend: &str, now_deadline_ms: f64) -> Option<f64> {
    let max = duration_ms(max_extend)?;
    (!first_ms.is_nan() && !now_deadline_ms.is_nan())
        .then(|| (first_ms + max - now_deadline_ms).max(0.0))
}

/// The extensions to offer: all of them until the limit is known, then those that fit.
pub fn offered(allowance: Option<f64>) -> Vec<(&'static str, &'static str)> {
    let mut shown = Vec::with_capacity(EXTENSIONS.len());
    for (by, label, ms) in EXTENSIONS {
        if allowance.is_none_or(|left| ms <= left) {
            shown.push((by, label));
        }
    }
    shown
}

/// What "Extend" says once the server took it: "Extended by 15 min (in all at most 30m past
/// the first deadline)".
pub fn extended_text(label: &str, max_extend: &str) -> String {
    format!(
        "Extended by {} (in all at most {max_extend} past the first deadline)",
        label.trim_start_matches('+')
    )
}

/// A duration as the agents file writes one (`30m`, `1h 30m`, `90s`, `2 hours`), in
/// milliseconds; `None` for anything else.
pub fn duration_ms(text: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        // Whole numbers, read as integers: a float parser would cost the chunk 20 KB.
        let number = rest[..digits].parse::<u32>().ok()? as f64;
        rest = rest[digits..].trim_start();
        let unit_len = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "s" | "sec" | "secs" | "second" | "seconds" => 1_000.0,
            "m" | "min" | "mins" | "minute" | "minutes" => MINUTE,
            "h" | "hr" | "hrs" | "hour" | "hours" => 60.0 * MINUTE,
            "d" | "day" | "days" => 24.0 * 60.0 * MINUTE,
            _ => return None,
        };
        total += number * unit;
        rest = rest[unit_len..].trim_start();
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ask_names_a_person_or_a_group_and_says_whom_it_asked() {
        assert_eq!(handover_target(" alice ").as_deref(), Ok("user:alice"));
        assert_eq!(handover_target("group:sre").as_deref(), Ok("group:sre"));
        assert_eq!(
            handover_target("user:bob@example.com").as_deref(),
            Ok("user:bob@example.com")
        );
        assert_eq!(
            handover_target("  "),
            Err("Name a person (alice) or a group (group:sre) to ask.".to_owned())
        );
        let handed = |to: &str| HandedOver {
            task_id: "t-1".to_owned(),
            by: "bob".to_owned(),
            to: to.to_owned(),
        };
        assert_eq!(handed_text(&handed("user:alice")), "Asked alice");
        assert_eq!(handed_text(&handed("group:sre")), "Asked group sre");
    }

    #[test]
    fn the_inbox_marks_a_reminded_and_an_escalated_batch_in_words() {
        let mut marks = LadderMarks {
            reminded_at: Some("2026-11-22T18:15:00.000Z".to_owned()),
            escalated_to: Vec::new(),
            max_extend: None,
            first_expires_at: None,
        };
        assert_eq!(ladder_marks(&marks), ["Reminded"]);
        marks.escalated_to = vec!["group:sre".to_owned(), "user:dave".to_owned()];
        assert_eq!(
            ladder_marks(&marks),
            ["Reminded", "Escalated to sre or dave"]
        );
        marks.reminded_at = None;
        assert_eq!(ladder_marks(&marks), ["Escalated to sre or dave"]);
    }

    #[test]
    fn extensions_past_the_known_limit_are_not_offered() {
        assert_eq!(duration_ms("30m"), Some(30.0 * MINUTE));
        assert_eq!(duration_ms("1h 30m"), Some(90.0 * MINUTE));
        assert_eq!(duration_ms("2 hours"), Some(120.0 * MINUTE));
        assert_eq!(duration_ms("soon"), None);
        assert_eq!(duration_ms(""), None);
        assert_eq!(offered(None), [("15m", "+15 min"), ("1h", "+1 h")]);
        // First deadline at 0, max 30m, moved 15m so far: 15 min are left.
        let left = allowance_ms(0.0, "30m", 15.0 * MINUTE);
        assert_eq!(left, Some(15.0 * MINUTE));
        assert_eq!(offered(left), [("15m", "+15 min")]);
        assert!(offered(allowance_ms(0.0, "30m", 30.0 * MINUTE)).is_empty());
        assert_eq!(allowance_ms(0.0, "whenever", 0.0), None);
        assert_eq!(
            extended_text("+15 min", "30m"),
            "Extended by 15 min (in all at most 30m past the first deadline)"
        );
    }
}
