//! The agents file's `acp` entry: a coding agent that speaks the Agent Client Protocol over
//! stdio (Claude Code through `claude-code-acp`, Gemini CLI with `--experimental-acp`), run by
//! Signoff in place of a model and tools (`agent::acp` runs it). Checked into an [`AcpLaunch`].
//!
//! ```toml
//! [[agents]]
//! name = "claude-code"
//! acp = { command = ["node", "/opt/claude-code-acp/dist/index.js"],
//!         cwd = "/srv/work",                          # its one working folder
//!         env = { IS_SANDBOX = "1" },                 # plain variables
//!         env_from_env = { ANTHROPIC_API_KEY = "SIGNOFF_ANTHROPIC_KEY" },  # copied from Signoff's
//!         env_from_file = { GEMINI_API_KEY = "/run/secrets/gemini" },       # read at start-up
//!         allow = ["read", "search"],                 # tool kinds allowed without asking
//!         max_sessions = 4 }                          # live chats (processes) at once
//! ```
//!
//! The process gets a clean environment: `PATH`, `HOME`, `LANG` and the `TZ` of Signoff's, and
//! the variables above, nothing else of Signoff's (its own secrets stay its own).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ConfigError;

/// How many chats of one ACP agent run at once when `max_sessions` is not set.
pub const DEFAULT_MAX_SESSIONS: usize = 4;
/// The variables of Signoff's own environment an ACP agent inherits.
const INHERITED: [&str; 4] = ["PATH", "HOME", "LANG", "TZ"];

/// `acp = { … }` of an agent.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcpSpec {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// The agent's working folder (relative: inside the data directory); it must exist.
    pub cwd: PathBuf,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Variables whose values are Signoff's own variables of the given names.
    #[serde(default)]
    pub env_from_env: BTreeMap<String, String>,
    /// Variables whose values are the contents of the given files (a trailing newline dropped).
    #[serde(default)]
    pub env_from_file: BTreeMap<String, PathBuf>,
    /// Tool kinds (`read`, `search`, `edit`, `execute`, …) allowed without asking anyone.
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub max_sessions: Option<usize>,
}

/// A checked `acp` entry: what starting the agent takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcpLaunch {
    pub program: String,
    pub args: Vec<String>,
    /// The whole environment of the process.
    pub env: Vec<(String, String)>,
    /// The values that came from Signoff's environment or from files, kept out of the log.
    pub secrets: Vec<String>,
    pub cwd: PathBuf,
    pub allow: Vec<String>,
    pub max_sessions: usize,
}

/// The ACP tool kinds (the protocol's `ToolKind`).
pub const TOOL_KINDS: [&str; 10] = [
    "read",
    "edit",
    "delete",
    "move",
    "search",
    "execute",
    "think",
    "fetch",
    "switch_mode",
    "other",
];

impl AcpSpec {
    /// Checks the entry at `at` (such as `agents[2].acp`); relative folders are inside
    /// `data_dir`. Reads the secret files, so the agent never starts without them.
    pub fn check(&self, at: &str, data_dir: &Path) -> Result<AcpLaunch, ConfigError> {
        let invalid =
            |field: &str, message: String| ConfigError::invalid(format!("{at}.{field}"), message);
        let Some((program, args)) = self.command.split_first() else {
            return Err(invalid("command", "must name the program to start".into()));
        };
        if program.trim().is_empty() {
            return Err(invalid("command", "must name the program to start".into()));
        }
        for kind in &self.allow {
            if !TOOL_KINDS.contains(&kind.as_str()) {
                return Err(invalid(
                    "allow",
                    format!(
                        "{kind:?} is not an ACP tool kind (they are: {})",
                        TOOL_KINDS.join(", ")
                    ),
                ));
            }
        }
        if self.max_sessions == Some(0) {
            return Err(invalid("max_sessions", "must be at least 1".into()));
        }
        let cwd = data_dir.join(&self.cwd);
        if !cwd.is_dir() {
            return Err(invalid("cwd", format!("{} is not a folder", cwd.display())));
        }
        let mut env: BTreeMap<String, String> = INHERITED
            .iter()
            .filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?)))
            .collect();
        env.extend(self.env.clone());
        let mut secrets = Vec::new();
        for (name, from) in &self.env_from_env {
            let value = std::env::var(from).map_err(|_| {
                invalid(
                    &format!("env_from_env.{name}"),
                    format!("Signoff's environment has no variable {from}"),
                )
            })?;
            secrets.push(value.clone());
            env.insert(name.clone(), value);
        }
        for (name, path) in &self.env_from_file {
            let path = data_dir.join(path);
            let text = std::fs::read_to_string(&path).map_err(|err| {
                invalid(
                    &format!("env_from_file.{name}"),
                    format!("cannot read {}: {err}", path.display()),
                )
            })?;
            let value = text.strip_suffix('\n').unwrap_or(&text).to_owned();
            secrets.push(value.clone());
            env.insert(name.clone(), value);
        }
        secrets.retain(|secret| !secret.is_empty());
        Ok(AcpLaunch {
            program: program.clone(),
            args: args.to_vec(),
            env: env.into_iter().collect(),
            secrets,
            cwd,
            allow: self.allow.clone(),
            max_sessions: self.max_sessions.unwrap_or(DEFAULT_MAX_SESSIONS),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn spec(toml_text: &str) -> AcpSpec {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn an_entry_is_checked_into_the_process_it_starts() {
        let dir = std::env::temp_dir().join(format!("signoff-acp-config-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("work")).unwrap();
        std::fs::write(dir.join("key"), "sk-secret\n").unwrap();
        let launch = spec(
            "command = [\"node\", \"agent.js\"]\ncwd = \"work\"\nenv = { A = \"1\" }\n\
             env_from_file = { KEY = \"key\" }\nallow = [\"read\"]\n",
        )
        .check("agents[0].acp", &dir)
        .unwrap();
        assert_eq!(
            (launch.program.as_str(), launch.args.as_slice()),
            ("node", &["agent.js".to_owned()][..])
        );
        assert!(launch.env.contains(&("KEY".into(), "sk-secret".into())));
        assert!(launch.env.contains(&("A".into(), "1".into())));
        assert_eq!(launch.secrets, ["sk-secret"]);
        assert_eq!(launch.cwd, dir.join("work"));
        assert_eq!(launch.max_sessions, DEFAULT_MAX_SESSIONS);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The README's "Coding agents" example is a file that loads, with the rule it describes.
    #[test]
    fn the_readme_example_loads() {
        let readme = include_str!("../../../../../README.md");
        let (_, section) = readme.split_once("\n## Coding agents\n").unwrap();
        let (_, rest) = section.split_once("```toml\n").unwrap();
        let (toml, _) = rest.split_once("```").unwrap();
        let file = super::super::AgentsFile::parse(toml).unwrap();
        let coder = &file.agents[0];
        let acp = coder.acp.as_ref().unwrap();
        assert_eq!(acp.command[0], "node");
        assert_eq!(
            acp.env_from_env["ANTHROPIC_API_KEY"],
            "SIGNOFF_ANTHROPIC_KEY"
        );
        assert_eq!(coder.rules[0].tool, "execute");
        // Gemini CLI's, after it (crates/server/tests/acp runs it).
        let (_, rest) = rest.split_once("```toml\n").unwrap();
        let (toml, _) = rest.split_once("```").unwrap();
        let file = super::super::AgentsFile::parse(toml).unwrap();
        let gemini = file.agents[0].acp.as_ref().unwrap();
        assert_eq!(gemini.command.last().unwrap(), "--experimental-acp");
        assert!(gemini.env_from_file.contains_key("GEMINI_API_KEY"));
    }

    #[test]
    fn a_bad_entry_says_which_field_and_why() {
        let here = Path::new("/");
        let error = |text: &str| {
            spec(text)
                .check("agents[0].acp", here)
                .unwrap_err()
                .to_string()
        };
        assert!(error("command = []\ncwd = \"/\"").contains("agents[0].acp.command"));
        assert!(error("command = [\"x\"]\ncwd = \"/no/such/folder\"").contains("is not a folder"));
        let kind = error("command = [\"x\"]\ncwd = \"/\"\nallow = [\"Read\"]");
        assert!(kind.contains("\"Read\" is not an ACP tool kind"), "{kind}");
        let missing = error(
            "command = [\"x\"]\ncwd = \"/\"\nenv_from_env = { K = \"SIGNOFF_NO_SUCH_VARIABLE\" }",
        );
        assert!(
            missing.contains("has no variable SIGNOFF_NO_SUCH_VARIABLE"),
            "{missing}"
        );
        assert!(error("command = [\"x\"]\ncwd = \"/\"\nmax_sessions = 0").contains("at least 1"));
        assert!(toml::from_str::<AcpSpec>("command = [\"x\"]\ncwd = \"/\"\nargs = []").is_err());
    }
}
