//! Argument rules and approval expiry of an agent, and the matcher language they share with
//! the people's "always allow" policies (crates/server/README.md, Argument rules):
//!
//! ```toml
//! [[agents]]
//! name = "files"
//! approval_timeout = "30m"        # humantime; none by default
//! on_timeout = "reject"           # or "cancel"
//!
//! [[agents.rules]]
//! tool = "write_file"
//! action = "deny"                 # allow | ask | deny
//! when = { path = { glob = ".git/**" } }
//!
//! [[agents.rules]]
//! tool = "write_file"
//! action = "allow"
//! when = { path = { glob = "notes/**" } }
//! ```
//!
//! Rules are tried in order; the first whose tool and `when` match decides. A call no rule
//! matches falls back to the tool's `require_approval`. Each argument of `when` takes one
//! matcher: `glob` (a string argument, paths compared after resolving `.` and `..`), `equals`
//! (any JSON value), `regex` (the whole string must match), `min` and/or `max` (a number), or
//! `any = true` (present, with any value).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::ConfigError;

/// What a rule does with the calls it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleAction {
    /// Runs without asking.
    Allow,
    /// Waits for a person's decision.
    Ask,
    /// Refused without asking; the model is told which rule refused it.
    Deny,
}

impl RuleAction {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleAction::Allow => "allow",
            RuleAction::Ask => "ask",
            RuleAction::Deny => "deny",
        }
    }
}

/// What happens to a batch nobody decided within `approval_timeout`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnTimeout {
    /// The calls end expired and the model goes on, told they expired unanswered.
    #[default]
    Reject,
    /// The calls end expired and the task ends `canceled`.
    Cancel,
}

/// One `[[agents.rules]]` entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// The exposed tool the rule is about.
    pub tool: String,
    pub action: RuleAction,
    /// Per argument name, the matcher its value must pass; all must. Omitted: any call.
    #[serde(default)]
    pub when: Option<BTreeMap<String, MatchSpec>>,
}

/// One argument's matcher, as the agents file and `POST /api/policies` spell it: exactly one of
/// `glob`, `equals`, `regex`, `min`/`max` (either or both) and `any`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatchSpec {
    #[serde(default)]
    pub glob: Option<String>,
    #[serde(default)]
    pub equals: Option<Value>,
    #[serde(default)]
    pub regex: Option<String>,
    #[serde(default)]
    pub min: Option<f64>,
    #[serde(default)]
    pub max: Option<f64>,
    #[serde(default)]
    pub any: Option<bool>,
}

/// A checked, compiled matcher.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// The glob as written, and the pattern it compiles to.
    Glob(String, regex::Regex),
    Equals(Value),
    Regex(regex::Regex),
    Range {
        min: Option<f64>,
        max: Option<f64>,
    },
    Any,
}

impl MatchSpec {
    /// Checks that exactly one matcher is given and that it compiles.
    pub fn compile(&self) -> Result<Matcher, String> {
        let given = [
            self.glob.is_some(),
            self.equals.is_some(),
            self.regex.is_some(),
            self.min.is_some() || self.max.is_some(),
            self.any.is_some(),
        ];
        if given.iter().filter(|given| **given).count() != 1 {
            return Err("give exactly one of glob, equals, regex, min/max or any".into());
        }
        if let Some(glob) = &self.glob {
            return Ok(Matcher::Glob(glob.clone(), glob_regex(glob)?));
        }
        if let Some(value) = &self.equals {
            return Ok(Matcher::Equals(value.clone()));
        }
        if let Some(pattern) = &self.regex {
            let anchored = format!("^(?:{pattern})$");
            let compiled = regex::Regex::new(&anchored)
                .map_err(|err| format!("regex {pattern:?} does not compile: {err}"))?;
            return Ok(Matcher::Regex(compiled));
        }
        if let Some(any) = self.any {
            if !any {
                return Err("any must be true (leave the argument out to not check it)".into());
            }
            return Ok(Matcher::Any);
        }
        if let (Some(min), Some(max)) = (self.min, self.max) {
            if min > max {
                return Err(format!("min {min} is above max {max}"));
            }
        }
        Ok(Matcher::Range {
            min: self.min,
            max: self.max,
        })
    }
}

impl Matcher {
    /// Whether an argument's value (`None`: the call does not give it) passes.
    pub fn matches(&self, value: Option<&Value>) -> bool {
        let Some(value) = value else {
            return false;
        };
        match self {
            Matcher::Glob(_, pattern) => value
                .as_str()
                .and_then(normalize_path)
                .is_some_and(|path| pattern.is_match(&path)),
            Matcher::Equals(expected) => value == expected,
            Matcher::Regex(pattern) => value.as_str().is_some_and(|text| pattern.is_match(text)),
            Matcher::Range { min, max } => value.as_f64().is_some_and(|number| {
                min.is_none_or(|min| number >= min) && max.is_none_or(|max| number <= max)
            }),
            Matcher::Any => true,
        }
    }

    /// How a person reads it: `glob "notes/**"`, `= "a.txt"`, `between 1 and 5`.
    pub fn describe(&self) -> String {
        match self {
            Matcher::Glob(glob, _) => format!("glob {glob:?}"),
            Matcher::Equals(value) => format!("= {value}"),
            Matcher::Regex(pattern) => {
                let text = pattern.as_str();
                let inner = text
                    .strip_prefix("^(?:")
                    .and_then(|rest| rest.strip_suffix(")$"))
                    .unwrap_or(text);
                format!("regex {inner:?}")
            }
            Matcher::Range {
                min: Some(min),
                max: Some(max),
            } => format!("between {min} and {max}"),
            Matcher::Range {
                min: Some(min),
                max: None,
            } => format!("at least {min}"),
            Matcher::Range {
                min: None,
                max: Some(max),
            } => format!("at most {max}"),
            Matcher::Range {
                min: None,
                max: None,
            }
            | Matcher::Any => "any value".into(),
        }
    }
}

/// A path with `.` and `..` resolved and no leading `./` or `/`, as a glob sees it; `None`
/// for a path that climbs above its root (it matches no glob, so `notes/../../x` cannot pass
/// for `notes/**`).
fn normalize_path(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

/// A glob as an anchored regex: `**` crosses folders (`a/**` matches everything below `a`,
/// `**/x` an `x` at any depth), `*` and `?` stay within one, `[…]` is a character class
/// (`[!…]` negated).
fn glob_regex(glob: &str) -> Result<regex::Regex, String> {
    if glob.is_empty() {
        return Err("a glob must not be empty".into());
    }
    let mut out = String::from("^");
    // Globs are compared with normalized paths, which never start with `./` or `/`.
    let chars: Vec<char> = glob
        .trim_start_matches("./")
        .trim_start_matches('/')
        .chars()
        .collect();
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        match c {
            '*' if chars.get(index + 1) == Some(&'*') => {
                index += 1;
                if chars.get(index + 1) == Some(&'/') {
                    index += 1;
                    out.push_str("(?:.*/)?");
                } else {
                    out.push_str(".*");
                }
            }
            '*' => out.push_str("[^/]*"),
            '?' => out.push_str("[^/]"),
            '[' => {
                let close = chars[index + 1..]
                    .iter()
                    .position(|c| *c == ']')
                    .ok_or_else(|| format!("glob {glob:?} has a [ without its ]"))?;
                let class: String = chars[index + 1..index + 1 + close].iter().collect();
                if class.is_empty() {
                    return Err(format!("glob {glob:?} has an empty []"));
                }
                let class = class
                    .strip_prefix('!')
                    .map_or(class.clone(), |rest| format!("^{rest}"));
                out.push('[');
                out.push_str(&class.replace('\\', "\\\\").replace('[', "\\["));
                out.push(']');
                index += close + 1;
            }
            ']' => return Err(format!("glob {glob:?} has a ] without its [")),
            other => out.push_str(&regex::escape(&other.to_string())),
        }
        index += 1;
    }
    out.push('$');
    regex::Regex::new(&out).map_err(|err| format!("glob {glob:?} does not compile: {err}"))
}

/// Reads `approval_timeout` (humantime: `30m`, `1h 30m`, `90s`).
pub fn parse_timeout(at: &str, text: &str) -> Result<Duration, ConfigError> {
    let duration = humantime::parse_duration(text).map_err(|err| {
        ConfigError::invalid(
            at,
            format!("{text:?} is not a duration such as \"30m\" or \"1h 30m\": {err}"),
        )
    })?;
    if duration.is_zero() {
        return Err(ConfigError::invalid(at, "must be longer than zero"));
    }
    Ok(duration)
}

/// Checks an agent's rules: known tools where `exposed` is known, matchers that compile.
/// `at` is the agent's path (`agents[0]`).
pub fn check_rules(
    at: &str,
    rules: &[RuleSpec],
    exposed: Option<&[&str]>,
) -> Result<(), ConfigError> {
    for (index, rule) in rules.iter().enumerate() {
        let at = format!("{at}.rules[{index}]");
        if let Some(exposed) = exposed {
            if !exposed.contains(&rule.tool.as_str()) {
                return Err(ConfigError::invalid(
                    format!("{at}.tool"),
                    format!(
                        "{:?} is not an exposed tool of this agent (exposed: {})",
                        rule.tool,
                        exposed.join(", ")
                    ),
                ));
            }
        }
        for (name, spec) in rule.when.iter().flatten() {
            spec.compile()
                .map_err(|message| ConfigError::invalid(format!("{at}.when.{name}"), message))?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod glob_props;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn glob(pattern: &str) -> Matcher {
        MatchSpec {
            glob: Some(pattern.into()),
            ..MatchSpec::default()
        }
        .compile()
        .unwrap()
    }

    #[test]
    fn globs_match_normalized_paths() {
        let notes = glob("notes/**");
        for path in [
            "notes/a.txt",
            "notes/deep/er/b.md",
            "./notes/a.txt",
            "x/../notes/a",
        ] {
            assert!(notes.matches(Some(&json!(path))), "{path}");
        }
        for path in [
            "notes",
            "notesx/a",
            "a/notes/b",
            "notes/../x",
            "notes/../../notes/a",
        ] {
            assert!(!notes.matches(Some(&json!(path))), "{path}");
        }
        assert!(!notes.matches(Some(&json!(3))), "not a string");
        assert!(!notes.matches(None), "missing");
        let star = glob("*.txt");
        assert!(star.matches(Some(&json!("a.txt"))));
        assert!(
            !star.matches(Some(&json!("d/a.txt"))),
            "* stays in one folder"
        );
        let any_depth = glob("**/*.txt");
        assert!(any_depth.matches(Some(&json!("a.txt"))));
        assert!(any_depth.matches(Some(&json!("d/e/a.txt"))));
        let class = glob("log[0-9].txt");
        assert!(class.matches(Some(&json!("log3.txt"))));
        assert!(!class.matches(Some(&json!("logx.txt"))));
        let negated = glob("[!.]*");
        assert!(negated.matches(Some(&json!("a"))));
        assert!(!negated.matches(Some(&json!(".git"))));
        assert!(
            glob("a+b(c).txt").matches(Some(&json!("a+b(c).txt"))),
            "escaped"
        );
    }

    #[test]
    fn equals_regex_range_and_any() {
        let spec = |value: Value| -> MatchSpec { serde_json::from_value(value).unwrap() };
        let equals = spec(json!({"equals": "a.txt"})).compile().unwrap();
        assert!(equals.matches(Some(&json!("a.txt"))));
        assert!(!equals.matches(Some(&json!("b.txt"))));
        let regex = spec(json!({"regex": "[a-z]+\\.md"})).compile().unwrap();
        assert!(regex.matches(Some(&json!("readme.md"))));
        assert!(!regex.matches(Some(&json!("x/readme.md"))), "whole string");
        let range = spec(json!({"min": 1, "max": 5})).compile().unwrap();
        assert!(range.matches(Some(&json!(1))) && range.matches(Some(&json!(5.0))));
        assert!(!range.matches(Some(&json!(6))) && !range.matches(Some(&json!("3"))));
        let at_most = spec(json!({"max": 2})).compile().unwrap();
        assert!(at_most.matches(Some(&json!(-10))));
        let any = spec(json!({"any": true})).compile().unwrap();
        assert!(any.matches(Some(&json!(null))) && !any.matches(None));
        assert_eq!(at_most.describe(), "at most 2");
        assert_eq!(regex.describe(), "regex \"[a-z]+\\\\.md\"");
    }

    #[test]
    fn bad_matchers_say_why() {
        let error = |value: Value| -> String {
            serde_json::from_value::<MatchSpec>(value)
                .unwrap()
                .compile()
                .unwrap_err()
        };
        assert_eq!(
            error(json!({"glob": "a", "equals": "b"})),
            "give exactly one of glob, equals, regex, min/max or any"
        );
        assert_eq!(
            error(json!({})),
            "give exactly one of glob, equals, regex, min/max or any"
        );
        assert_eq!(
            error(json!({"glob": "a[b"})),
            "glob \"a[b\" has a [ without its ]"
        );
        assert!(error(json!({"regex": "("})).starts_with("regex \"(\" does not compile"));
        assert_eq!(error(json!({"min": 5, "max": 1})), "min 5 is above max 1");
        assert!(error(json!({"any": false})).starts_with("any must be true"));
    }
}
