//! Who may approve a call (crates/server/README.md, Approvers): `approvers`,
//! `requester_may_approve` and `quorum`, set on an agent, a tool source, one tool of a source
//! (`[agents.tools.tool_approvers.NAME]`) or an `ask` argument rule. Each of the three takes
//! the most specific level that sets it: rule, then tool, then source, then agent.
//!
//! ```toml
//! [[agents]]
//! name = "ops"
//! approvers = ["group:sre", "user:alice@example.com"]
//! requester_may_approve = false     # the two-person rule
//! quorum = 2                        # distinct eligible people per call
//! ```
//!
//! With none of them set the requester decides alone, as everywhere else.
//!
//! The deadline ladder sits at the same levels (and on an `ask` rule): `remind_after` (the
//! batch is marked reminded and announced), `escalate_after` with `escalate_to` (those entries
//! may then decide it too), and `max_extend` (how far an eligible approver may push the
//! agent's `approval_timeout` deadline back, in all). Each is taken from the most specific
//! level that sets it, as the three above.

use serde::Deserialize;

use super::rules::parse_timeout;
use super::{AgentSpec, ConfigError, RuleAction};

/// The most approvals a call may need: a quorum is people, not a counter.
pub const MAX_QUORUM: u32 = 20;

/// The three settings at one level of the agents file; `None`: the level does not set it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApproversSpec {
    /// `group:NAME` or `user:SUBJECT-OR-EMAIL` entries.
    #[serde(default)]
    pub approvers: Option<Vec<String>>,
    /// `false`: the person who started the chat may not approve its calls (they may still
    /// reject or cancel them).
    #[serde(default)]
    pub requester_may_approve: Option<bool>,
    /// How many distinct eligible people must approve each call.
    #[serde(default)]
    pub quorum: Option<u32>,
    /// After this long waiting (humantime, `10m`) the batch is reminded, once.
    #[serde(default)]
    pub remind_after: Option<String>,
    /// After this long waiting the batch escalates, once: `escalate_to` may then decide it.
    #[serde(default)]
    pub escalate_after: Option<String>,
    /// `group:NAME` or `user:ID` entries an escalation makes eligible.
    #[serde(default)]
    pub escalate_to: Option<Vec<String>>,
    /// How far, in all, eligible approvers may push the batch's deadline back.
    #[serde(default)]
    pub max_extend: Option<String>,
    /// `true`: a hand-over makes the people it names eligible to approve even when the
    /// approvers do not name them (delegation outside the group). Unset or `false`: a
    /// hand-over lets them read the batch, and never widens who may approve.
    #[serde(default)]
    pub handover_may_widen: Option<bool>,
}

impl ApproversSpec {
    /// A tool source's own settings: who approves, the two-person rule and the quorum (the
    /// deadline ladder is set on an agent, a tool or a rule, not on a source).
    pub fn source_level(
        approvers: &Option<Vec<String>>,
        requester_may_approve: Option<bool>,
        quorum: Option<u32>,
    ) -> ApproversSpec {
        ApproversSpec {
            approvers: approvers.clone(),
            requester_may_approve,
            quorum,
            ..ApproversSpec::default()
        }
    }
}

/// Whether an identity value (a subject, an email, a group) is taken as given: not empty, no
/// whitespace of any kind (or an invisible zero-width character) at either end, no control or
/// bidirectional-override character anywhere. Values are never trimmed: `" sre"` and
/// `"sre\u{a0}"` are not `sre`, so they are refused rather than read as someone else.
pub fn is_clean(value: &str) -> bool {
    let invisible = |c: char| {
        c.is_whitespace() || matches!(c, '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}')
    };
    let hidden =
        |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    !value.is_empty()
        && !value.starts_with(invisible)
        && !value.ends_with(invisible)
        && !value.chars().any(hidden)
}

/// One checked `approvers` entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ApproverEntry {
    /// Everyone in the group.
    Group(String),
    /// The person whose subject or email this is.
    User(String),
}

impl ApproverEntry {
    /// The entry as the agents file spells it (`group:sre`).
    pub fn label(&self) -> String {
        match self {
            ApproverEntry::Group(group) => format!("group:{group}"),
            ApproverEntry::User(user) => format!("user:{user}"),
        }
    }

    /// Reads `group:NAME` or `user:ID`.
    pub fn parse(text: &str) -> Result<ApproverEntry, String> {
        let (kind, name) = text
            .split_once(':')
            .ok_or_else(|| format!("{text:?} must be group:NAME or user:SUBJECT-OR-EMAIL"))?;
        if name.trim().is_empty() {
            return Err(format!("{text:?} names no {kind}"));
        }
        // Taken byte for byte, as people's identities are: `group: sre` or `sre\u{a0}` would
        // name nobody (or, trimmed, somebody else).
        if !is_clean(name) {
            return Err(format!(
                "{text:?}: the name has spaces around it or a control character"
            ));
        }
        match kind.trim() {
            "group" => Ok(ApproverEntry::Group(name.to_owned())),
            "user" => Ok(ApproverEntry::User(name.to_owned())),
            other => Err(format!(
                "{text:?}: {other:?} is neither group nor user (write group:NAME or user:ID)"
            )),
        }
    }
}

impl ApproversSpec {
    /// Whether the level sets anything.
    pub fn is_empty(&self) -> bool {
        self == &ApproversSpec::default()
    }

    /// `self` over `general`: each setting from the most specific level that sets it.
    pub fn over(&self, general: &ApproversSpec) -> ApproversSpec {
        ApproversSpec {
            approvers: self.approvers.clone().or_else(|| general.approvers.clone()),
            requester_may_approve: self.requester_may_approve.or(general.requester_may_approve),
            quorum: self.quorum.or(general.quorum),
            remind_after: self
                .remind_after
                .clone()
                .or_else(|| general.remind_after.clone()),
            escalate_after: self
                .escalate_after
                .clone()
                .or_else(|| general.escalate_after.clone()),
            escalate_to: self
                .escalate_to
                .clone()
                .or_else(|| general.escalate_to.clone()),
            max_extend: self
                .max_extend
                .clone()
                .or_else(|| general.max_extend.clone()),
            handover_may_widen: self.handover_may_widen.or(general.handover_may_widen),
        }
    }

    /// Checks this level's own values; `at` is its path (`agents[0]`).
    pub fn check(&self, at: &str) -> Result<(), ConfigError> {
        if let Some(entries) = &self.approvers {
            if entries.is_empty() {
                return Err(ConfigError::invalid(
                    format!("{at}.approvers"),
                    "lists nobody; name at least one group:NAME or user:ID, or leave it out",
                ));
            }
            for (index, entry) in entries.iter().enumerate() {
                ApproverEntry::parse(entry).map_err(|message| {
                    ConfigError::invalid(format!("{at}.approvers[{index}]"), message)
                })?;
            }
        }
        if let Some(quorum) = self.quorum {
            if quorum == 0 || quorum > MAX_QUORUM {
                return Err(ConfigError::invalid(
                    format!("{at}.quorum"),
                    format!("{quorum} must be between 1 and {MAX_QUORUM}"),
                ));
            }
        }
        self.check_ladder(at)
    }

    /// Checks this level's deadline ladder: durations that parse, and an escalation that says
    /// both when and to whom.
    fn check_ladder(&self, at: &str) -> Result<(), ConfigError> {
        for (field, value) in [
            ("remind_after", &self.remind_after),
            ("escalate_after", &self.escalate_after),
            ("max_extend", &self.max_extend),
        ] {
            if let Some(text) = value {
                parse_timeout(&format!("{at}.{field}"), text)?;
            }
        }
        if let Some(entries) = &self.escalate_to {
            if entries.is_empty() {
                return Err(ConfigError::invalid(
                    format!("{at}.escalate_to"),
                    "lists nobody; name at least one group:NAME or user:ID",
                ));
            }
            for (index, entry) in entries.iter().enumerate() {
                ApproverEntry::parse(entry).map_err(|message| {
                    ConfigError::invalid(format!("{at}.escalate_to[{index}]"), message)
                })?;
            }
        }
        match (&self.escalate_after, &self.escalate_to) {
            (Some(_), None) => Err(ConfigError::invalid(
                format!("{at}.escalate_after"),
                "escalates to nobody: set `escalate_to` beside it",
            )),
            (None, Some(_)) => Err(ConfigError::invalid(
                format!("{at}.escalate_to"),
                "never escalates: set `escalate_after` beside it",
            )),
            _ => Ok(()),
        }
    }

    /// Checks what a call would be decided under, once merged with every more general level:
    /// a two-person rule or a quorum above one needs approvers besides the requester.
    pub fn check_merged(&self, at: &str) -> Result<(), ConfigError> {
        if self.approvers.is_some() {
            return Ok(());
        }
        if self.handover_may_widen.is_some() {
            return Err(ConfigError::invalid(
                format!("{at}.handover_may_widen"),
                "names no approvers a hand-over could widen (without them the requester \
                 decides, and may hand over to anyone): set `approvers` here or on the agent",
            ));
        }
        if self.requester_may_approve == Some(false) {
            return Err(ConfigError::invalid(
                format!("{at}.requester_may_approve"),
                "false leaves nobody to approve: set `approvers` here or on the agent",
            ));
        }
        if let Some(quorum) = self.quorum.filter(|quorum| *quorum > 1) {
            return Err(ConfigError::invalid(
                format!("{at}.quorum"),
                format!(
                    "{quorum} approvals need more people than the requester: set `approvers` \
                     here or on the agent"
                ),
            ));
        }
        Ok(())
    }
}

/// Checks every level of one agent: each level's values, and what each tool, source and rule
/// would be decided under once merged with the levels above it. `at` is `agents[N]`.
pub(super) fn check_agent(at: &str, agent: &AgentSpec) -> Result<(), ConfigError> {
    let own = agent.approver_spec();
    own.check(at)?;
    if agent.remote.is_some() && !own.is_empty() {
        return Err(ConfigError::invalid(
            format!("{at}.approvers"),
            "a remote agent asks for approval itself; remove `approvers`,              `requester_may_approve` and `quorum`",
        ));
    }
    own.check_merged(at)?;
    // Whether some level of the agent names approvers (a rule's tool may be any source's).
    let mut anywhere = own.approvers.is_some();
    for (index, source) in agent.tools.iter().enumerate() {
        let at = format!("{at}.tools[{index}]");
        let (_, prefix, level, per_tool) = source.approver_levels();
        level.check(&at)?;
        // A key that names no tool would silently leave its calls to the requester.
        if let Some(exposed) = source.known_tools() {
            for tool in per_tool.keys() {
                let known = exposed
                    .iter()
                    .any(|name| tool == name || *tool == format!("{prefix}{name}"));
                if !known {
                    return Err(ConfigError::invalid(
                        format!("{at}.tool_approvers.{tool}"),
                        format!(
                            "{tool:?} is not an exposed tool of this source (exposed: {})",
                            exposed.join(", ")
                        ),
                    ));
                }
            }
        }
        let source_level = level.over(&own);
        source_level.check_merged(&at)?;
        anywhere |= level.approvers.is_some();
        for (tool, spec) in per_tool {
            let at = format!("{at}.tool_approvers.{tool}");
            spec.check(&at)?;
            spec.over(&source_level).check_merged(&at)?;
            anywhere |= spec.approvers.is_some();
        }
    }
    for (index, rule) in agent.rules.iter().enumerate() {
        let at = format!("{at}.rules[{index}]");
        let spec = rule.approver_spec();
        if spec.is_empty() {
            continue;
        }
        if rule.action != RuleAction::Ask {
            return Err(ConfigError::invalid(
                format!("{at}.approvers"),
                format!(
                    "a rule that does not ask (action = {}) has nobody to approve; use                      action = \"ask\"",
                    rule.action.as_str()
                ),
            ));
        }
        spec.check(&at)?;
        if !anywhere {
            spec.over(&own).check_merged(&at)?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn padded_and_control_characters_are_not_clean() {
        for good in ["sre", "alice@example.com", "Zoë Smith", "a b", "José"] {
            assert!(is_clean(good), "{good:?}");
        }
        for bad in [
            "",
            " sre",
            "sre ",
            "sre\u{a0}",
            "\u{2003}alice",
            "\talice",
            "alice\n",
            "al\u{0}ice",
            "\u{200b}alice",
            "alice\u{feff}",
            "ali\u{202e}ce",
            "a\u{7f}",
        ] {
            assert!(!is_clean(bad), "{bad:?}");
        }
    }

    #[test]
    fn entries_are_groups_or_users() {
        assert_eq!(
            ApproverEntry::parse("group:sre").unwrap(),
            ApproverEntry::Group("sre".into())
        );
        assert_eq!(
            ApproverEntry::parse("user:alice@example.com").unwrap(),
            ApproverEntry::User("alice@example.com".into())
        );
        assert!(ApproverEntry::parse("sre")
            .unwrap_err()
            .contains("group:NAME"));
        assert!(ApproverEntry::parse("team:sre")
            .unwrap_err()
            .contains("neither"));
        for padded in [
            "group: sre",
            "group:sre ",
            "user:\u{2003}alice",
            "group:sre\u{a0}",
        ] {
            let err = ApproverEntry::parse(padded).unwrap_err();
            assert!(err.contains("spaces around it"), "{padded:?}: {err}");
        }
        assert!(ApproverEntry::parse("group: ")
            .unwrap_err()
            .contains("names no group"));
    }

    fn error(text: &str) -> String {
        super::super::AgentsFile::parse(text)
            .unwrap_err()
            .to_string()
    }

    const FILES: &str = "[[agents.tools]]\nkind = \"builtin_files\"\n";

    #[test]
    fn the_agents_file_names_what_is_wrong_with_the_deadline_ladder() {
        let agent = |lines: &str| {
            error(&format!(
                "[[agents]]\nname = \"a\"\napprovers = [\"group:sre\"]\n{lines}"
            ))
        };
        assert!(agent("remind_after = \"soon\"\n")
            .contains("agents[0].remind_after: \"soon\" is not a duration"));
        assert!(agent("escalate_after = \"1h\"\n")
            .contains("agents[0].escalate_after: escalates to nobody: set `escalate_to`"));
        assert!(agent("escalate_to = [\"group:dba\"]\n")
            .contains("agents[0].escalate_to: never escalates: set `escalate_after`"));
        assert!(agent("escalate_after = \"1h\"\nescalate_to = [\"dba\"]\n")
            .contains("agents[0].escalate_to[0]: \"dba\" must be group:NAME"));
        assert!(agent("max_extend = \"0s\"\n").contains("agents[0].max_extend: must be longer"));
        let rule = error(&format!(
            "[[agents]]\nname = \"a\"\n{FILES}\
             [[agents.rules]]\ntool = \"write_file\"\naction = \"ask\"\n\
             approvers = [\"group:sre\"]\nescalate_after = \"5m\"\n"
        ));
        assert!(
            rule.contains("agents[0].rules[0].escalate_after: escalates to nobody"),
            "{rule}"
        );
        let fine = super::super::AgentsFile::parse(&format!(
            "[[agents]]\nname = \"a\"\napprovers = [\"group:sre\"]\nremind_after = \"10m\"\n\
             escalate_after = \"30m\"\nescalate_to = [\"group:dba\"]\nmax_extend = \"1h\"\n{FILES}\
             [agents.tools.tool_approvers.write_file]\nremind_after = \"1m\"\n"
        ));
        assert!(fine.is_ok(), "{fine:?}");
    }

    #[test]
    fn the_agents_file_names_what_is_wrong_with_approvers() {
        assert_eq!(
            error("[[agents]]\nname = \"a\"\napprovers = [\"sre\"]\n"),
            "agents file: agents[0].approvers[0]: \"sre\" must be group:NAME or \
             user:SUBJECT-OR-EMAIL"
        );
        assert_eq!(
            error("[[agents]]\nname = \"a\"\napprovers = [\"group:sre\"]\nquorum = 0\n"),
            "agents file: agents[0].quorum: 0 must be between 1 and 20"
        );
        assert_eq!(
            error("[[agents]]\nname = \"a\"\nrequester_may_approve = false\n"),
            "agents file: agents[0].requester_may_approve: false leaves nobody to approve: set \
             `approvers` here or on the agent"
        );
        assert!(error("[[agents]]\nname = \"a\"\nquorum = 2\n")
            .contains("agents[0].quorum: 2 approvals need more people than the requester"));
        assert!(error("[[agents]]\nname = \"a\"\napprovers = []\n")
            .contains("agents[0].approvers: lists nobody"));
        let typo = error(&format!(
            "[[agents]]\nname = \"a\"\n{FILES}\
             [agents.tools.tool_approvers.wrte_file]\napprovers = [\"group:sre\"]\n"
        ));
        assert!(
            typo.starts_with("agents file: agents[0].tools[0].tool_approvers.wrte_file: \"wrte_file\" is not an exposed tool"),
            "{typo}"
        );
        let allow = error(&format!(
            "[[agents]]\nname = \"a\"\n{FILES}\
             [[agents.rules]]\ntool = \"write_file\"\naction = \"allow\"\n\
             approvers = [\"group:sre\"]\n"
        ));
        assert!(
            allow.contains("agents[0].rules[0].approvers: a rule that does not ask"),
            "{allow}"
        );
        let remote = error(
            "[[agents]]\nname = \"a\"\nremote = { url = \"http://x\" }\n\
             approvers = [\"group:sre\"]\n",
        );
        assert!(
            remote.contains("a remote agent asks for approval itself"),
            "{remote}"
        );
    }

    #[test]
    fn handover_may_widen_is_a_bool_beside_approvers() {
        assert!(
            error("[[agents]]\nname = \"a\"\nhandover_may_widen = true\n").contains(
                "agents[0].handover_may_widen: names no approvers a hand-over could widen"
            )
        );
        let text = error(
            "[[agents]]\nname = \"a\"\napprovers = [\"group:sre\"]\nhandover_may_widen = \"yes\"\n",
        );
        assert!(
            text.contains("handover_may_widen") || text.contains("bool"),
            "{text}"
        );
        let file = super::super::AgentsFile::parse(&format!(
            "[[agents]]\nname = \"a\"\napprovers = [\"group:sre\"]\nhandover_may_widen = true\n\
             {FILES}[agents.tools.tool_approvers.write_file]\nhandover_may_widen = false\n"
        ))
        .unwrap();
        assert_eq!(file.agents[0].handover_may_widen, Some(true));
    }

    #[test]
    fn every_level_takes_approvers() {
        let file = super::super::AgentsFile::parse(&format!(
            "[[agents]]\nname = \"a\"\napprovers = [\"group:sre\"]\n\
             requester_may_approve = false\nquorum = 2\n{FILES}\
             approvers = [\"user:alice@example.com\"]\n\
             [agents.tools.tool_approvers.delete_file]\nquorum = 3\n\
             [[agents.rules]]\ntool = \"write_file\"\naction = \"ask\"\nquorum = 1\n"
        ))
        .unwrap();
        assert_eq!(file.agents[0].quorum, Some(2));
        assert_eq!(file.agents[0].rules[0].quorum, Some(1));
    }

    #[test]
    fn the_most_specific_level_wins_per_setting() {
        let agent = ApproversSpec {
            approvers: Some(vec!["group:sre".into()]),
            requester_may_approve: Some(false),
            quorum: None,
            ..ApproversSpec::default()
        };
        let tool = ApproversSpec {
            quorum: Some(2),
            ..ApproversSpec::default()
        };
        let merged = tool.over(&agent);
        assert_eq!(merged.approvers, Some(vec!["group:sre".to_owned()]));
        assert_eq!(merged.requester_may_approve, Some(false));
        assert_eq!(merged.quorum, Some(2));
    }

    /// The README's "Approvers" example is a file that loads, with the settings it describes.
    #[test]
    fn the_readme_example_loads() {
        let readme = include_str!("../../../../../README.md");
        let section = readme
            .split_once("\n## Approvers\n")
            .map(|(_, rest)| rest)
            .unwrap();
        let toml = section
            .split_once("```toml\n")
            .and_then(|(_, rest)| rest.split_once("```"))
            .map(|(block, _)| block)
            .unwrap();
        let file = super::super::AgentsFile::parse(toml).unwrap();
        let deploy = &file.agents[0];
        assert_eq!(deploy.name, "deploy");
        assert_eq!(deploy.approvers, Some(vec!["group:oncall".to_owned()]));
        assert_eq!(deploy.requester_may_approve, Some(false));
        let super::super::ToolSourceSpec::BuiltinFiles { tool_approvers, .. } = &deploy.tools[0]
        else {
            panic!("the example's tools are the built-in files");
        };
        assert_eq!(tool_approvers["delete_file"].quorum, Some(2));
    }
}
