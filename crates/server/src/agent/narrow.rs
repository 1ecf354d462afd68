//! What "narrower" means for a tool's arguments, so an approver may approve a smaller version of
//! a call (a shorter list of paths, a smaller amount) and the server refuses an edit that asks
//! for more. A tool says it per argument in its input schema (`"x-signoff-narrower": "at_most"`
//! on a property), and a Cedar policy that asks for the call can say it too
//! (`@narrower("amount: at_most, paths: subset")`). Where neither says anything, an edit is
//! checked by the gate alone, as any edit is.

use std::collections::BTreeMap;

use serde_json::Value;

/// The schema keyword that names an argument's narrowing.
pub const SCHEMA_KEYWORD: &str = "x-signoff-narrower";

/// How one argument may change in an approved edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Narrower {
    /// A number no larger than asked, and not across zero (-5 is not a smaller payment of 100).
    AtMost,
    /// A list of some of the items asked, none added.
    Subset,
    /// A relative path inside the one asked (or the same path).
    Within,
    /// Unchanged.
    Same,
}

impl Narrower {
    pub fn parse(text: &str) -> Option<Narrower> {
        match text.trim() {
            "at_most" => Some(Narrower::AtMost),
            "subset" => Some(Narrower::Subset),
            "within" => Some(Narrower::Within),
            "same" => Some(Narrower::Same),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Narrower::AtMost => "at_most",
            Narrower::Subset => "subset",
            Narrower::Within => "within",
            Narrower::Same => "same",
        }
    }

    /// Whether `edited` (absent: `None`) asks for no more than `asked`; else why not.
    fn admits(
        self,
        name: &str,
        asked: Option<&Value>,
        edited: Option<&Value>,
    ) -> Result<(), String> {
        if asked == edited {
            return Ok(());
        }
        if self == Narrower::Same {
            return Err(format!("{name} must stay as asked"));
        }
        let (Some(asked), Some(edited)) = (asked, edited) else {
            // Dropping a list's items is narrower; anything else dropped or added is not.
            return match (self, asked, edited) {
                (Narrower::Subset, Some(Value::Array(_)), None) => Ok(()),
                _ => Err(format!("{name} must stay as asked")),
            };
        };
        let narrower = match self {
            Narrower::AtMost => match (asked.as_f64(), edited.as_f64()) {
                (Some(asked), Some(edited)) => edited * asked >= 0.0 && edited.abs() <= asked.abs(),
                _ => false,
            },
            Narrower::Subset => match (asked, edited) {
                (Value::Array(asked), Value::Array(edited)) => {
                    edited.iter().all(|item| asked.contains(item))
                }
                _ => false,
            },
            Narrower::Within => match (asked.as_str(), edited.as_str()) {
                (Some(asked), Some(edited)) => within(asked, edited),
                _ => false,
            },
            // Refused above.
            Narrower::Same => false,
        };
        match narrower {
            true => Ok(()),
            false => Err(format!(
                "{name} may only be narrowed ({}): {edited} asks for more than {asked}",
                self.explain()
            )),
        }
    }

    fn explain(self) -> &'static str {
        match self {
            Narrower::AtMost => "a number no larger than asked, of the same sign",
            Narrower::Subset => "some of the items asked, none added",
            Narrower::Within => "a path inside the one asked",
            Narrower::Same => "unchanged",
        }
    }
}

/// Whether relative path `edited` is `asked` or inside it, with no `..`, no absolute path and
/// no empty or `.` step standing for more than it says.
fn within(asked: &str, edited: &str) -> bool {
    let steps = |path: &str| -> Option<Vec<String>> {
        if path.starts_with('/') || path.contains('\\') {
            return None;
        }
        let mut steps = Vec::new();
        for step in path.split('/') {
            match step {
                "" | "." => continue,
                ".." => return None,
                step => steps.push(step.to_owned()),
            }
        }
        Some(steps)
    };
    match (steps(asked), steps(edited)) {
        (Some(asked), Some(edited)) => edited.starts_with(&asked),
        _ => false,
    }
}

/// Each argument's narrowing, by name: what a tool's schema says, and what the policies that
/// asked for the call add. Where both name an argument differently, it must stay as asked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Narrowing {
    rules: BTreeMap<String, Narrower>,
}

impl Narrowing {
    /// What `schema` (a tool's input schema) says of its properties.
    pub fn of_schema(schema: &Value) -> Narrowing {
        let mut narrowing = Narrowing::default();
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return narrowing;
        };
        for (name, property) in properties {
            let rule = property.get(SCHEMA_KEYWORD).and_then(Value::as_str);
            // An unknown word keeps the argument as asked: never laxer than meant.
            if let Some(rule) = rule {
                narrowing.add(name, Narrower::parse(rule).unwrap_or(Narrower::Same));
            }
        }
        narrowing
    }

    /// Adds `name`'s rule; one that differs from a rule already there makes it `Same`.
    pub fn add(&mut self, name: &str, rule: Narrower) {
        let entry = self.rules.entry(name.to_owned()).or_insert(rule);
        if *entry != rule {
            *entry = Narrower::Same;
        }
    }

    pub fn merge(&mut self, other: &Narrowing) {
        for (name, rule) in &other.rules {
            self.add(name, *rule);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether `edited` asks for no more than `asked`, argument by argument; else what widens.
    /// An argument without a rule must stay as asked: nothing says what narrower means for it.
    pub fn check(&self, asked: &Value, edited: &Value) -> Result<(), String> {
        if self.is_empty() {
            return Ok(());
        }
        let empty = serde_json::Map::new();
        let asked = asked.as_object().unwrap_or(&empty);
        let edited = edited.as_object().unwrap_or(&empty);
        let mut names: Vec<&String> = asked.keys().chain(edited.keys()).collect();
        names.sort();
        names.dedup();
        for name in names {
            let rule = self.rules.get(name).copied().unwrap_or(Narrower::Same);
            rule.admits(name, asked.get(name), edited.get(name))?;
        }
        Ok(())
    }
}

/// `@narrower("amount: at_most, paths: subset")`, read; else what is wrong with it.
pub fn parse_annotation(text: &str) -> Result<Narrowing, String> {
    let mut narrowing = Narrowing::default();
    for entry in text
        .split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
    {
        let (name, rule) = entry
            .split_once(':')
            .ok_or_else(|| format!("{entry:?} is not ARGUMENT: RULE"))?;
        let name = name.trim();
        if name.is_empty() {
            return Err(format!("{entry:?} names no argument"));
        }
        let rule = Narrower::parse(rule)
            .ok_or_else(|| format!("{:?} is not at_most, subset, within or same", rule.trim()))?;
        narrowing.add(name, rule);
    }
    if narrowing.is_empty() {
        return Err("names no argument (write ARGUMENT: RULE, …)".into());
    }
    Ok(narrowing)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rules(text: &str) -> Narrowing {
        parse_annotation(text).unwrap()
    }

    #[test]
    fn a_smaller_amount_and_fewer_paths_are_narrower_and_more_is_refused() {
        let narrowing = rules("amount: at_most, paths: subset");
        let asked = json!({"amount": 100, "paths": ["a", "b"], "memo": "rent"});
        for edit in [
            json!({"amount": 40, "paths": ["b"], "memo": "rent"}),
            json!({"amount": 99.5, "paths": [], "memo": "rent"}),
            json!({"amount": 0, "paths": ["a"], "memo": "rent"}),
            json!({"amount": 100, "memo": "rent"}),
            asked.clone(),
        ] {
            assert_eq!(narrowing.check(&asked, &edit), Ok(()), "{edit}");
        }
        for (edit, why) in [
            (
                json!({"amount": 101, "paths": ["a"], "memo": "rent"}),
                "amount may only",
            ),
            (
                json!({"amount": 10, "paths": ["a", "c"], "memo": "rent"}),
                "paths may only",
            ),
            (
                json!({"amount": "10", "paths": ["a"], "memo": "rent"}),
                "amount may only",
            ),
            (
                json!({"amount": -5, "paths": ["a"], "memo": "rent"}),
                "amount may only",
            ),
            // Arguments without a rule stay as asked; none may be added or dropped.
            (
                json!({"amount": 10, "paths": ["a"], "memo": "bonus"}),
                "memo must stay",
            ),
            (json!({"amount": 10, "paths": ["a"]}), "memo must stay"),
            (json!({"paths": ["a"], "memo": "rent"}), "amount must stay"),
            (
                json!({"amount": 10, "paths": ["a"], "memo": "rent", "to": "x"}),
                "to must stay",
            ),
        ] {
            let err = narrowing.check(&asked, &edit).unwrap_err();
            assert!(err.starts_with(why), "{edit}: {err}");
        }
    }

    #[test]
    fn a_path_within_the_one_asked_is_narrower_and_no_step_escapes_it() {
        let narrowing = rules("path: within");
        let asked = json!({"path": "notes"});
        for path in ["notes", "notes/", "notes/a.txt", "./notes/x/y", "notes//b"] {
            assert_eq!(
                narrowing.check(&asked, &json!({"path": path})),
                Ok(()),
                "{path}"
            );
        }
        for path in [
            "notes/../secrets",
            "/notes/a",
            "notesx",
            "other",
            "notes\\..\\x",
            "..",
        ] {
            assert!(
                narrowing.check(&asked, &json!({"path": path})).is_err(),
                "{path}"
            );
        }
        // "." asks for everything, so anything relative without ".." is inside it.
        assert_eq!(
            narrowing.check(&json!({"path": "."}), &json!({"path": "notes/a"})),
            Ok(())
        );
    }

    #[test]
    fn the_schema_and_the_policies_combine_and_disagreement_keeps_the_argument() {
        let schema = json!({"type": "object", "properties": {
            "amount": {"type": "integer", SCHEMA_KEYWORD: "at_most"},
            "paths": {"type": "array", SCHEMA_KEYWORD: "subsets please"},
            "memo": {"type": "string"}
        }});
        let mut narrowing = Narrowing::of_schema(&schema);
        let asked = json!({"amount": 5, "paths": ["a", "b"]});
        // An unknown word in the schema is read as "same".
        assert!(narrowing
            .check(&asked, &json!({"amount": 5, "paths": ["a"]}))
            .is_err());
        narrowing.merge(&rules("amount: subset"));
        assert!(narrowing
            .check(&asked, &json!({"amount": 4, "paths": ["a", "b"]}))
            .is_err());
        assert!(Narrowing::default()
            .check(&asked, &json!({"amount": 500}))
            .is_ok());
    }

    #[test]
    fn a_wrong_annotation_says_what_is_wrong() {
        assert!(parse_annotation("amount")
            .unwrap_err()
            .contains("ARGUMENT: RULE"));
        assert!(parse_annotation("amount: smaller")
            .unwrap_err()
            .contains("at_most"));
        assert!(parse_annotation(": at_most")
            .unwrap_err()
            .contains("names no argument"));
        assert!(parse_annotation(" , ")
            .unwrap_err()
            .contains("names no argument"));
    }
}
