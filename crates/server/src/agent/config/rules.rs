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
//! `any = true` (present, with any value). Globs are `globset`'s, kept within a folder except
//! for `**`; globs and regexes are bounded in length and compiled size, so a matcher compiles
//! quickly however it is written.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use signoff_protocol::hitl::elicitation::ELICITATION;
use signoff_protocol::hitl::ASK_USER;

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
    /// Who may approve the calls an `ask` rule holds (`super::approvers`).
    #[serde(default)]
    pub approvers: Option<Vec<String>>,
    #[serde(default)]
    pub requester_may_approve: Option<bool>,
    #[serde(default)]
    pub quorum: Option<u32>,
    /// The deadline ladder of the calls the rule holds (`super::approvers`).
    #[serde(default)]
    pub remind_after: Option<String>,
    #[serde(default)]
    pub escalate_after: Option<String>,
    #[serde(default)]
    pub escalate_to: Option<Vec<String>>,
    #[serde(default)]
    pub max_extend: Option<String>,
    /// `true`: a hand-over may make people eligible whom the rule's approvers do not name.
    #[serde(default)]
    pub handover_may_widen: Option<bool>,
}

impl RuleSpec {
    /// The rule's own approver settings.
    pub fn approver_spec(&self) -> super::ApproversSpec {
        super::ApproversSpec {
            approvers: self.approvers.clone(),
            requester_may_approve: self.requester_may_approve,
            quorum: self.quorum,
            remind_after: self.remind_after.clone(),
            escalate_after: self.escalate_after.clone(),
            escalate_to: self.escalate_to.clone(),
            max_extend: self.max_extend.clone(),
            handover_may_widen: self.handover_may_widen,
        }
    }
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

/// The longest glob or regex a matcher takes, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1024;

/// The most memory a regex may compile to (the regex crate's `size_limit`), in bytes: enough
/// for any path pattern a person writes, and it bounds the compile time (`(\w+\s*){200}`
/// needs megabytes and tens of milliseconds; it is refused).
pub const MAX_REGEX_BYTES: usize = 256 * 1024;

/// The most memory a regex's lazy DFA may use while matching (`dfa_size_limit`); past it the
/// regex falls back to slower engines, never to a wrong answer.
const REGEX_DFA_BYTES: usize = 256 * 1024;

/// A checked, compiled matcher.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// The glob as written, and its matcher.
    Glob(String, globset::GlobMatcher),
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
            return Ok(Matcher::Glob(glob.clone(), glob_matcher(glob)?));
        }
        if let Some(value) = &self.equals {
            return Ok(Matcher::Equals(value.clone()));
        }
        if let Some(pattern) = &self.regex {
            return Ok(Matcher::Regex(whole_regex(pattern)?));
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
            Matcher::Glob(_, glob) => value
                .as_str()
                .and_then(normalize_path)
                .is_some_and(|path| glob.is_match(path)),
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

/// A glob's matcher: `*`, `?` and `[…]` stay within one folder and match any character there
/// but `/` (a newline or another control character too), `**` as a whole path part crosses
/// folders (`a/**` is everything below `a`, `**/x` an `x` at any depth), `[!…]` is a negated
/// class, and `\`, `{`, `}` and `,` are plain characters (as they were before globset: a
/// folder name holding them keeps its meaning).
fn glob_matcher(glob: &str) -> Result<globset::GlobMatcher, String> {
    if glob.is_empty() {
        return Err("a glob must not be empty".into());
    }
    if glob.len() > MAX_PATTERN_BYTES {
        return Err(format!(
            "glob is {} bytes long; the limit is {MAX_PATTERN_BYTES}",
            glob.len()
        ));
    }
    // Globs are compared with normalized paths, which never start with `./` or `/`.
    let trimmed = glob.trim_start_matches("./").trim_start_matches('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in trimmed.split('/') {
        if part.contains("**") && part != "**" {
            return Err(format!(
                "glob {glob:?} has ** inside a name: ** stands for whole folders \
                 (a/**, **/b, a/**/b); use * within a name"
            ));
        }
        // `**/**` is `**` (globset would read it as "a path ending in /").
        if !(part == "**" && parts.last() == Some(&"**")) {
            parts.push(part);
        }
    }
    let pattern = literal_braces(glob, &parts.join("/"))?;
    globset::GlobBuilder::new(&pattern)
        .literal_separator(true)
        .backslash_escape(false)
        .build()
        .map(|compiled| compiled.compile_matcher())
        .map_err(|err| match err.kind() {
            globset::ErrorKind::UnclosedClass => format!("glob {glob:?} has a [ without its ]"),
            globset::ErrorKind::InvalidRange(low, high) => {
                format!("glob {glob:?} has the range {low}-{high}, which runs backwards")
            }
            globset::ErrorKind::InvalidRecursive
            | globset::ErrorKind::UnclosedAlternates
            | globset::ErrorKind::UnopenedAlternates
            | globset::ErrorKind::NestedAlternates
            | globset::ErrorKind::TooManyNestedAlternates
            | globset::ErrorKind::DanglingEscape
            | globset::ErrorKind::Regex(_)
            | _ => format!("glob {glob:?} is not valid: {err}"),
        })
}

/// `pattern` (of `glob`) with `{` and `}` outside classes written as classes, so globset reads
/// them as plain characters; refuses a `[…]` class holding a non-ASCII character (the matcher
/// compares bytes there, so `[é]` would never match `é`).
fn literal_braces(glob: &str, pattern: &str) -> Result<String, String> {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' => out.push_str("[{]"),
            '}' => out.push_str("[}]"),
            '[' => {
                out.push('[');
                // As globset reads a class: `!` or `^` negates, a `]` right after is a member.
                if let Some(negation) = chars.next_if(|next| matches!(next, '!' | '^')) {
                    out.push(negation);
                }
                let mut first = true;
                for member in chars.by_ref() {
                    if !member.is_ascii() {
                        return Err(format!(
                            "glob {glob:?} has {member:?} in a [...] class, which may hold only \
                             ASCII characters (write it out, or use ? or *)"
                        ));
                    }
                    out.push(member);
                    if member == ']' && !first {
                        break;
                    }
                    first = false;
                }
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

/// A regex that must match a whole string. The pattern is compiled alone first: `a)|(b` is no
/// regex, but wrapped as `^(?:a)|(b)$` it would compile to one that matches far more than any
/// reading of it.
fn whole_regex(pattern: &str) -> Result<regex::Regex, String> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(format!(
            "regex is {} bytes long; the limit is {MAX_PATTERN_BYTES}",
            pattern.len()
        ));
    }
    let build = |text: &str| {
        regex::RegexBuilder::new(text)
            .size_limit(MAX_REGEX_BYTES)
            .dfa_size_limit(REGEX_DFA_BYTES)
            .build()
            .map_err(|err| {
                if let regex::Error::CompiledTooBig(limit) = err {
                    format!(
                        "regex {pattern:?} is too complex: it compiles to more than {limit} \
                         bytes (fewer or smaller repetitions, or ASCII classes such as \
                         [a-z0-9_] instead of \\w, make it smaller)"
                    )
                } else {
                    format!("regex {pattern:?} does not compile: {err}")
                }
            })
    };
    build(pattern)?;
    build(&format!("^(?:{pattern})$"))
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
        if rule.tool == ASK_USER && rule.action == RuleAction::Allow {
            return Err(ConfigError::invalid(
                format!("{at}.action"),
                format!(
                    "{ASK_USER} asks the person questions, which always wait for their \
                     answers; a rule may ask or deny them, not allow them"
                ),
            ));
        }
        // `elicitation` is no tool of the agent's: it names the approvals its servers ask for
        // (Codex's commands), which meet the rules before anyone is asked.
        if let Some(exposed) = exposed.filter(|_| rule.tool != ELICITATION) {
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
    fn globs_match_any_character_within_a_name_and_only_there() {
        let matches = |pattern: &str, path: &str| glob(pattern).matches(Some(&json!(path)));
        assert!(matches(".git/**", ".git/hooks/x\npre-commit"));
        assert!(matches(".git/**", ".git/\r\t\u{1}\u{7f}"));
        assert!(matches("*.txt", "a\nb.txt"));
        assert!(matches("a?b", "a\nb"));
        assert!(matches("[!x]", "\n"));
        assert!(matches("notes[!x]*", "notes-a.txt"));
        assert!(
            !matches("notes[!x]*", "notes/deep.txt"),
            "a class stays in a name"
        );
        assert!(!matches("notes?deep", "notes/deep"));
        assert!(!matches("[!x]", "/"));
        assert!(matches("**/**", "a/b") && matches("a/**/**/b", "a/b"));
        assert!(matches("a\\b", "a\\b"), "a backslash is a plain character");
        assert!(
            matches("{a,b}.txt", "{a,b}.txt"),
            "braces are plain characters"
        );
        assert!(!matches("{a,b}.txt", "b.txt"));
        assert!(matches("[{]x[!}]", "{xa"));
    }

    #[test]
    fn regexes_are_checked_alone_and_bounded() {
        let error = |pattern: &str| {
            MatchSpec {
                regex: Some(pattern.into()),
                ..MatchSpec::default()
            }
            .compile()
            .unwrap_err()
        };
        assert!(
            error("notes/.*)|(?:").starts_with("regex \"notes/.*)|(?:\" does not compile"),
            "{}",
            error("notes/.*)|(?:")
        );
        assert!(
            error("(\\w+\\s*){200}").contains("is too complex: it compiles to more than"),
            "{}",
            error("(\\w+\\s*){200}")
        );
        assert_eq!(
            error(&"a".repeat(MAX_PATTERN_BYTES + 1)),
            "regex is 1025 bytes long; the limit is 1024"
        );
        let fine = MatchSpec {
            regex: Some(".*secret.*|[a-z0-9_]{1,64}\\.md|\\w+".into()),
            ..MatchSpec::default()
        }
        .compile()
        .unwrap();
        assert!(fine.matches(Some(&json!("my-secret.txt"))));
        assert!(!fine.matches(Some(&json!("notes/a.txt"))));
    }

    #[test]
    fn a_rule_cannot_allow_questions() {
        let rule = |action: RuleAction| RuleSpec {
            tool: ASK_USER.into(),
            action,
            when: None,
            approvers: None,
            requester_may_approve: None,
            quorum: None,
            remind_after: None,
            escalate_after: None,
            escalate_to: None,
            max_extend: None,
            handover_may_widen: None,
        };
        let error = check_rules("agents[0]", &[rule(RuleAction::Allow)], None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "agents file: agents[0].rules[0].action: ask_user asks the person questions, which \
             always wait for their answers; a rule may ask or deny them, not allow them"
        );
        check_rules(
            "agents[0]",
            &[rule(RuleAction::Ask), rule(RuleAction::Deny)],
            None,
        )
        .unwrap();
    }

    #[test]
    fn a_rule_may_name_the_approvals_servers_ask_for_though_no_tool_has_that_name() {
        let rule = |tool: &str| RuleSpec {
            tool: tool.into(),
            action: RuleAction::Deny,
            when: None,
            approvers: None,
            requester_may_approve: None,
            quorum: None,
            remind_after: None,
            escalate_after: None,
            escalate_to: None,
            max_extend: None,
            handover_may_widen: None,
        };
        let exposed = ["codex"];
        check_rules("agents[0]", &[rule(ELICITATION)], Some(&exposed)).unwrap();
        let error = check_rules("agents[0]", &[rule("codex-reply")], Some(&exposed)).unwrap_err();
        assert!(error.to_string().contains("not an exposed tool"), "{error}");
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
        assert!(error(json!({"glob": "a**"})).contains("has ** inside a name"));
        assert!(error(json!({"glob": "[é]"})).contains("may hold only ASCII"));
        assert!(error(json!({"glob": "a[é]"})).contains("may hold only ASCII"));
        assert_eq!(error(json!({"min": 5, "max": 1})), "min 5 is above max 1");
        assert!(error(json!({"any": false})).starts_with("any must be true"));
    }
}
