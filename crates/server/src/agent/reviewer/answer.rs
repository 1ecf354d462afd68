//! A reviewer's answer, read strictly: one JSON object with exactly `outcome`, `risk` and
//! `reason`, each of the allowed values; anything else is unreadable, and an unreadable
//! answer asks a person.

use serde::Deserialize;
use signoff_protocol::hitl::ReviewOutcome;

/// The longest reason kept, in bytes: a longer one is not an answer a card can show.
pub const MAX_REASON_BYTES: usize = 2000;

/// A reviewer's answer as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// `Approve`, `Deny` or `Ask`.
    pub outcome: ReviewOutcome,
    pub risk: &'static str,
    pub reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    outcome: String,
    risk: String,
    reason: String,
}

/// Reads an answer's text; the error says what is wrong with it, for the person's card.
pub fn read(text: &str) -> Result<Answer, String> {
    let text = text.trim();
    let unexpected = |err: String| format!("its answer is not the expected JSON object ({err})");
    signoff_protocol::json_keys::reject_duplicate_keys(text.as_bytes())
        .map_err(|err| unexpected(err.to_string()))?;
    let wire: Wire = serde_json::from_str(text).map_err(|err| unexpected(err.to_string()))?;
    let outcome = match wire.outcome.as_str() {
        "approve" => ReviewOutcome::Approve,
        "deny" => ReviewOutcome::Deny,
        "ask" => ReviewOutcome::Ask,
        other => {
            return Err(format!(
                "its outcome {other:?} is not \"approve\", \"deny\" or \"ask\""
            ))
        }
    };
    let risk = match wire.risk.as_str() {
        "low" => "low",
        "medium" => "medium",
        "high" => "high",
        other => {
            return Err(format!(
                "its risk {other:?} is not \"low\", \"medium\" or \"high\""
            ))
        }
    };
    let reason = wire.reason.trim().to_owned();
    if reason.is_empty() {
        return Err("its answer gives no reason".into());
    }
    if reason.len() > MAX_REASON_BYTES {
        return Err(format!(
            "its reason is longer than {MAX_REASON_BYTES} bytes"
        ));
    }
    Ok(Answer {
        outcome,
        risk,
        reason,
    })
}

/// A model's text answer: the JSON object, once a Markdown code fence around it (which models
/// add though told not to) is taken off.
pub fn read_model_text(text: &str) -> Result<Answer, String> {
    let trimmed = text.trim();
    let unfenced = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
        .unwrap_or(trimmed);
    read(unfenced)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_the_three_fields_with_their_values_are_an_answer() {
        let answer = read(r#"{"outcome":"deny","risk":"high","reason":" rm -rf / "}"#).unwrap();
        assert_eq!(answer.outcome, ReviewOutcome::Deny);
        assert_eq!(answer.risk, "high");
        assert_eq!(answer.reason, "rm -rf /");
        for (text, says) in [
            (
                r#"{"outcome":"maybe","risk":"low","reason":"r"}"#,
                "outcome \"maybe\"",
            ),
            (
                r#"{"outcome":"approve","risk":"none","reason":"r"}"#,
                "risk \"none\"",
            ),
            (
                r#"{"outcome":"approve","risk":"low","reason":" "}"#,
                "no reason",
            ),
            (r#"{"outcome":"approve","risk":"low"}"#, "expected JSON"),
            (
                r#"{"outcome":"approve","risk":"low","reason":"r","extra":1}"#,
                "expected JSON",
            ),
            (
                r#"{"outcome":"approve","outcome":"deny","risk":"low","reason":"r"}"#,
                "expected JSON",
            ),
            ("approve", "expected JSON"),
            ("", "expected JSON"),
        ] {
            let err = read(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
        let long = format!(
            r#"{{"outcome":"ask","risk":"low","reason":"{}"}}"#,
            "x".repeat(MAX_REASON_BYTES + 1)
        );
        assert!(read(&long).unwrap_err().contains("longer than"));
    }

    #[test]
    fn a_models_fenced_answer_reads() {
        let fenced =
            "```json\n{\"outcome\":\"approve\",\"risk\":\"low\",\"reason\":\"reads\"}\n```";
        assert_eq!(
            read_model_text(fenced).unwrap().outcome,
            ReviewOutcome::Approve
        );
        assert!(read_model_text("Sure! {\"outcome\":\"approve\"}").is_err());
    }
}
