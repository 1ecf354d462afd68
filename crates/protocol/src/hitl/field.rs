//! What a question's free-text answer must be: any text for the model's `ask_user`, or a typed
//! value for a form field an MCP server asks for (`elicitation`): a bounded string, an email, a
//! URI, a date, a date-time, a number, yes or no. The same check runs in the browser before an
//! answer is sent and on the server before it is stored, so both refuse the same answers.

use serde_json::{json, Map, Number, Value};

/// What a free-text answer must be: any text (`ask_user`'s), or a form field's typed value.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum AnswerKind {
    #[default]
    Text,
    /// Text of a bounded length, in characters.
    Bounded {
        min: Option<u64>,
        max: Option<u64>,
    },
    Email,
    /// An absolute URI (`scheme:rest`).
    Uri,
    /// `YYYY-MM-DD`.
    Date,
    /// RFC 3339: `YYYY-MM-DDTHH:MM:SS` with a zone (`Z` or `+01:00`).
    DateTime,
    /// A number (`integer`: a whole one) within its bounds. The bounds are JSON numbers, and
    /// answers are read as JSON reads them, so the browser's download needs no float code of
    /// its own.
    Number {
        integer: bool,
        min: Option<Number>,
        max: Option<Number>,
    },
    /// Yes or no (the choices are [`YES`] and [`NO`]).
    Boolean,
}

/// The choices of a yes-or-no question.
pub const YES: &str = "Yes";
pub const NO: &str = "No";

impl AnswerKind {
    /// Reads the kind a question object carries (`"kind"` and its bounds); plain text if none.
    pub(super) fn from_value(value: &Value) -> AnswerKind {
        let number = |key: &str| value.get(key).and_then(Value::as_number).cloned();
        let count = |key: &str| value.get(key).and_then(Value::as_u64);
        match value.get("kind").and_then(Value::as_str) {
            Some("text") => AnswerKind::Bounded {
                min: count("min_length"),
                max: count("max_length"),
            },
            Some("email") => AnswerKind::Email,
            Some("uri") => AnswerKind::Uri,
            Some("date") => AnswerKind::Date,
            Some("date-time") => AnswerKind::DateTime,
            Some(kind @ ("number" | "integer")) => AnswerKind::Number {
                integer: kind == "integer",
                min: number("minimum"),
                max: number("maximum"),
            },
            Some("boolean") => AnswerKind::Boolean,
            _ => AnswerKind::Text,
        }
    }

    /// Writes the kind into a question object (nothing for plain text).
    pub(super) fn write(&self, object: &mut Map<String, Value>) {
        let mut put = |key: &str, value: Value| {
            object.insert(key.to_owned(), value);
        };
        match self {
            AnswerKind::Text => {}
            AnswerKind::Bounded { min, max } => {
                put("kind", json!("text"));
                if let Some(min) = min {
                    put("min_length", json!(min));
                }
                if let Some(max) = max {
                    put("max_length", json!(max));
                }
            }
            AnswerKind::Email => put("kind", json!("email")),
            AnswerKind::Uri => put("kind", json!("uri")),
            AnswerKind::Date => put("kind", json!("date")),
            AnswerKind::DateTime => put("kind", json!("date-time")),
            AnswerKind::Number { integer, min, max } => {
                put("kind", json!(if *integer { "integer" } else { "number" }));
                if let Some(min) = min {
                    put("minimum", json!(min));
                }
                if let Some(max) = max {
                    put("maximum", json!(max));
                }
            }
            AnswerKind::Boolean => put("kind", json!("boolean")),
        }
    }

    /// Whether a (trimmed, non-empty) free-text answer fits; the reason it does not, worded to
    /// follow "the answer to <question> ".
    pub fn check(&self, answer: &str) -> Result<(), String> {
        match self {
            AnswerKind::Text | AnswerKind::Boolean => Ok(()),
            AnswerKind::Bounded { min, max } => {
                let length = answer.chars().count() as u64;
                match (min, max) {
                    (Some(min), _) if length < *min => {
                        Err(format!("must be at least {min} characters long"))
                    }
                    (_, Some(max)) if length > *max => {
                        Err(format!("must be at most {max} characters long"))
                    }
                    _ => Ok(()),
                }
            }
            AnswerKind::Email => is_email(answer)
                .then_some(())
                .ok_or_else(|| "must be an email address, like name@example.com".to_owned()),
            AnswerKind::Uri => is_uri(answer)
                .then_some(())
                .ok_or_else(|| "must be a URI, like https://example.com/page".to_owned()),
            AnswerKind::Date => is_date(answer)
                .then_some(())
                .ok_or_else(|| "must be a date, like 2026-12-31".to_owned()),
            AnswerKind::DateTime => is_date_time(answer).then_some(()).ok_or_else(|| {
                "must be a date and time with its zone, like 2026-12-31T09:30:00Z".to_owned()
            }),
            AnswerKind::Number { integer, min, max } => {
                check_number(answer, *integer, min.as_ref(), max.as_ref())
            }
        }
    }

    /// The JSON value a checked answer is sent as: a number for a number field, `true` or
    /// `false` for yes or no, the text otherwise.
    pub fn to_json(&self, answer: &str) -> Value {
        match self {
            AnswerKind::Number { integer, .. } => read_number(answer, *integer)
                .map(Value::Number)
                .unwrap_or_else(|| json!(answer)),
            AnswerKind::Boolean => Value::Bool(answer == YES),
            AnswerKind::Text
            | AnswerKind::Bounded { .. }
            | AnswerKind::Email
            | AnswerKind::Uri
            | AnswerKind::Date
            | AnswerKind::DateTime => json!(answer),
        }
    }
}

/// A number answer as JSON reads it (`12`, `-0.5`, `1e3`; no `NaN` or `inf`): a whole one
/// for an integer field.
fn read_number(answer: &str, integer: bool) -> Option<Number> {
    let number: Number = serde_json::from_str(answer).ok()?;
    match integer {
        true => number.as_i64().map(Number::from),
        false => Some(number),
    }
}

fn check_number(
    answer: &str,
    integer: bool,
    min: Option<&Number>,
    max: Option<&Number>,
) -> Result<(), String> {
    let Some(value) = read_number(answer, integer).and_then(|number| number.as_f64()) else {
        return Err(match integer {
            true => "must be a whole number".to_owned(),
            false => "must be a number".to_owned(),
        });
    };
    let past = |bound: Option<&Number>, beyond: fn(f64, f64) -> bool| {
        bound.is_some_and(|bound| bound.as_f64().is_some_and(|bound| beyond(value, bound)))
    };
    match (min, max) {
        (Some(min), _) if past(Some(min), |value, min| value < min) => {
            Err(format!("must be at least {min}"))
        }
        (_, Some(max)) if past(Some(max), |value, max| value > max) => {
            Err(format!("must be at most {max}"))
        }
        _ => Ok(()),
    }
}

/// `local@domain.tld`, without spaces: what a person can be told to correct, not RFC 5322.
fn is_email(text: &str) -> bool {
    let Some((local, domain)) = text.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.contains('@')
        && !text.contains(char::is_whitespace)
        && domain.split('.').count() >= 2
        && domain.split('.').all(|label| !label.is_empty())
}

/// `scheme:rest`, the scheme a letter then letters, digits, `+`, `-` or `.` (RFC 3986).
fn is_uri(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let mut letters = scheme.chars();
    letters
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic())
        && letters.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && !text.contains(char::is_whitespace)
}

fn digits(text: &str, count: usize) -> Option<u32> {
    (text.len() == count && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

fn is_date(text: &str) -> bool {
    let mut parts = text.split('-');
    let (Some(year), Some(month), Some(day), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Some(year), Some(month), Some(day)) = (digits(year, 4), digits(month, 2), digits(day, 2))
    else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// RFC 3339's `date-time`: a date, `T`, `HH:MM:SS` with optional fractions, then `Z` or an
/// offset.
fn is_date_time(text: &str) -> bool {
    let Some((date, time)) = text.split_once(['T', 't']) else {
        return false;
    };
    let (clock, zone_ok) = match time.strip_suffix(['Z', 'z']) {
        Some(clock) => (clock, true),
        None => match time.rfind(['+', '-']) {
            Some(at) => (&time[..at], is_clock(&time[at + 1..], false)),
            None => (time, false),
        },
    };
    is_date(date) && zone_ok && is_clock(clock, true)
}

/// `HH:MM` (an offset) or `HH:MM:SS[.fff]` (a time of day).
fn is_clock(text: &str, with_seconds: bool) -> bool {
    let (text, fraction) = match text.split_once('.') {
        Some((whole, fraction)) if with_seconds => (whole, Some(fraction)),
        Some(_) => return false,
        None => (text, None),
    };
    if fraction
        .is_some_and(|digits| digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()))
    {
        return false;
    }
    let parts: Vec<&str> = text.split(':').collect();
    let limits: &[u32] = if with_seconds {
        &[23, 59, 60]
    } else {
        &[23, 59]
    };
    parts.len() == limits.len()
        && parts
            .iter()
            .zip(limits)
            .all(|(part, limit)| digits(part, 2).is_some_and(|value| value <= *limit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_answers_are_checked() {
        let email = AnswerKind::Email;
        assert!(email.check("ada@example.com").is_ok());
        assert!(email.check("ada@example").is_err() && email.check("a b@x.io").is_err());
        assert!(AnswerKind::Uri.check("https://example.com/x").is_ok());
        assert!(AnswerKind::Uri.check("example.com").is_err());
        assert!(AnswerKind::Date.check("2028-02-29").is_ok());
        assert!(AnswerKind::Date.check("2027-02-29").is_err());
        assert!(AnswerKind::Date.check("2027-13-01").is_err());
        let at = AnswerKind::DateTime;
        assert!(at.check("2026-12-31T09:30:00Z").is_ok());
        assert!(at.check("2026-12-31T09:30:00.25+01:00").is_ok());
        assert!(at.check("2026-12-31T09:30").is_err() && at.check("2026-12-31T25:00:00Z").is_err());
        let count = AnswerKind::Number {
            integer: true,
            min: Some(1.into()),
            max: Some(5.into()),
        };
        assert!(count.check("3").is_ok());
        assert_eq!(count.check("2.5"), Err("must be a whole number".to_owned()));
        assert_eq!(count.check("9"), Err("must be at most 5".to_owned()));
        assert_eq!(count.to_json("3"), json!(3));
        let amount = AnswerKind::Number {
            integer: false,
            min: None,
            max: None,
        };
        assert_eq!(amount.to_json("2.5"), json!(2.5));
        assert!(amount.check("NaN").is_err() && amount.check("inf").is_err());
        let name = AnswerKind::Bounded {
            min: Some(2),
            max: Some(4),
        };
        assert!(
            name.check("Ada").is_ok() && name.check("A").is_err() && name.check("Adaline").is_err()
        );
        assert_eq!(AnswerKind::Boolean.to_json(YES), json!(true));
        assert_eq!(AnswerKind::Boolean.to_json(NO), json!(false));
    }

    #[test]
    fn kinds_round_trip_through_a_question_object() {
        for kind in [
            AnswerKind::Text,
            AnswerKind::Bounded {
                min: Some(1),
                max: None,
            },
            AnswerKind::Email,
            AnswerKind::Uri,
            AnswerKind::Date,
            AnswerKind::DateTime,
            AnswerKind::Number {
                integer: true,
                min: Some(0.into()),
                max: Some(10.into()),
            },
            AnswerKind::Boolean,
        ] {
            let mut object = Map::new();
            kind.write(&mut object);
            assert_eq!(AnswerKind::from_value(&Value::Object(object)), kind);
        }
    }
}
