//! The `reviewer` of an agent in the agents file: a first reviewer its calls go through before
//! a person is asked (`agent::reviewer` runs it). It is a model (an OpenAI-compatible
//! endpoint), an HTTP endpoint or a command.
//!
//! ```toml
//! [agents.reviewer]
//! kind = "http"                       # "model", "http" or "command"
//! url = "http://127.0.0.1:9000/review"
//! timeout = "5s"                      # the default
//! mode = "live"                       # or "shadow": it only records what it would decide
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::{parse_timeout, ConfigError, OpenAiSpec};

/// How long a reviewer may take when the agents file says nothing.
pub const DEFAULT_REVIEW_TIMEOUT: Duration = Duration::from_secs(5);

/// What a reviewer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewerKind {
    /// An OpenAI-compatible Chat Completions endpoint, given the documented prompt.
    Model,
    /// An endpoint that takes the review request as a JSON POST and answers JSON.
    Http,
    /// A program that reads the review request on stdin and writes its answer on stdout.
    Command,
}

/// Whether the reviewer's verdicts count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewerMode {
    /// Its approvals run calls, its denials and asks go to a person.
    #[default]
    Live,
    /// It is asked, its verdict recorded, and a person decides as if it were not there.
    Shadow,
}

/// The `reviewer` table of an agent.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewerSpec {
    pub kind: ReviewerKind,
    #[serde(default)]
    pub mode: ReviewerMode,
    /// How long one review may take (humantime, `5s`); longer asks a person.
    #[serde(default)]
    pub timeout: Option<String>,
    /// `model`: the API root (`{base_url}/chat/completions`).
    #[serde(default)]
    pub base_url: Option<String>,
    /// `model`: the model name the endpoint knows.
    #[serde(default)]
    pub model: Option<String>,
    /// `model`: the environment variable holding the API key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// `http`: where the review request is POSTed.
    #[serde(default)]
    pub url: Option<String>,
    /// `command`: the program and its arguments; a relative program is found in the data
    /// directory.
    #[serde(default)]
    pub command: Option<Vec<String>>,
}

/// A reviewer spec checked: its backend and its timeout.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedReviewer {
    pub backend: ReviewerBackend,
    pub mode: ReviewerMode,
    pub timeout: Duration,
}

/// Where a checked reviewer is asked.
#[derive(Debug, Clone, PartialEq)]
pub enum ReviewerBackend {
    Model(OpenAiSpec),
    Http { url: String },
    Command { program: PathBuf, args: Vec<String> },
}

impl ReviewerSpec {
    /// Checks the fields its kind needs and refuses the others; `at` is its path
    /// (`agents[0].reviewer`), `data_dir` where a relative program is found.
    pub fn check(&self, at: &str, data_dir: &Path) -> Result<CheckedReviewer, ConfigError> {
        let timeout = match &self.timeout {
            Some(text) => parse_timeout(&format!("{at}.timeout"), text)?,
            None => DEFAULT_REVIEW_TIMEOUT,
        };
        let given: [(&str, bool); 5] = [
            ("base_url", self.base_url.is_some()),
            ("model", self.model.is_some()),
            ("api_key_env", self.api_key_env.is_some()),
            ("url", self.url.is_some()),
            ("command", self.command.is_some()),
        ];
        let (kind, fields): (&str, &[&str]) = match self.kind {
            ReviewerKind::Model => ("a model", &["base_url", "model", "api_key_env"]),
            ReviewerKind::Http => ("an http", &["url"]),
            ReviewerKind::Command => ("a command", &["command"]),
        };
        if let Some((field, _)) = given
            .iter()
            .find(|(field, set)| *set && !fields.contains(field))
        {
            return Err(ConfigError::invalid(
                format!("{at}.{field}"),
                format!("{kind} reviewer takes only {}", fields.join(", ")),
            ));
        }
        let needed = |field: &str, value: &Option<String>| match value {
            Some(value) if !value.trim().is_empty() => Ok(value.trim().to_owned()),
            _ => Err(ConfigError::invalid(
                format!("{at}.{field}"),
                format!("{kind} reviewer needs {field}"),
            )),
        };
        let backend = match self.kind {
            ReviewerKind::Model => ReviewerBackend::Model(OpenAiSpec {
                base_url: needed("base_url", &self.base_url)?,
                model: needed("model", &self.model)?,
                api_key_env: self.api_key_env.clone(),
                timeout_secs: Some(timeout.as_secs().max(1)),
                temperature: Some(0.0),
                max_tokens: Some(400),
            }),
            ReviewerKind::Http => {
                let url = needed("url", &self.url)?;
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(ConfigError::invalid(
                        format!("{at}.url"),
                        format!("{url:?} must start with http:// or https://"),
                    ));
                }
                ReviewerBackend::Http { url }
            }
            ReviewerKind::Command => {
                let Some((program, args)) = self
                    .command
                    .as_deref()
                    .and_then(|command| command.split_first())
                    .filter(|(program, _)| !program.trim().is_empty())
                else {
                    return Err(ConfigError::invalid(
                        format!("{at}.command"),
                        "a command reviewer needs command = [\"program\", \"arg\", …]",
                    ));
                };
                let program = Path::new(program);
                let program = if program.is_relative() && program.components().count() > 1 {
                    data_dir.join(program)
                } else {
                    program.to_path_buf()
                };
                ReviewerBackend::Command {
                    program,
                    args: args.to_vec(),
                }
            }
        };
        Ok(CheckedReviewer {
            backend,
            mode: self.mode,
            timeout,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::AgentsFile;
    use super::*;

    fn parse(reviewer: &str) -> Result<CheckedReviewer, String> {
        let file = AgentsFile::parse(&format!(
            "[[agents]]\nname = \"a\"\n[agents.reviewer]\n{reviewer}\n"
        ))
        .map_err(|err| err.to_string())?;
        let spec = file.agents[0].reviewer.clone().unwrap();
        spec.check("agents[0].reviewer", Path::new("/data"))
            .map_err(|err| err.to_string())
    }

    #[test]
    fn each_kind_takes_its_own_fields() {
        let http =
            parse("kind = \"http\"\nurl = \"http://127.0.0.1:9/r\"\ntimeout = \"2s\"").unwrap();
        assert_eq!(
            http.backend,
            ReviewerBackend::Http {
                url: "http://127.0.0.1:9/r".into()
            }
        );
        assert_eq!(http.timeout, Duration::from_secs(2));
        assert_eq!(http.mode, ReviewerMode::Live);
        let command =
            parse("kind = \"command\"\ncommand = [\"bin/review\", \"-q\"]\nmode = \"shadow\"")
                .unwrap();
        assert_eq!(
            command.backend,
            ReviewerBackend::Command {
                program: PathBuf::from("/data/bin/review"),
                args: vec!["-q".into()]
            }
        );
        assert_eq!(command.mode, ReviewerMode::Shadow);
        assert_eq!(command.timeout, DEFAULT_REVIEW_TIMEOUT);
        let model =
            parse("kind = \"model\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"").unwrap();
        assert!(matches!(model.backend, ReviewerBackend::Model(spec) if spec.model == "m"));
    }

    #[test]
    fn a_field_of_another_kind_or_a_missing_one_is_named() {
        let err = parse("kind = \"http\"\nurl = \"http://x\"\ncommand = [\"x\"]").unwrap_err();
        assert!(
            err.contains("agents[0].reviewer.command: an http reviewer takes only url"),
            "{err}"
        );
        let err = parse("kind = \"model\"\nmodel = \"m\"").unwrap_err();
        assert!(err.contains("agents[0].reviewer.base_url"), "{err}");
        let err = parse("kind = \"http\"\nurl = \"ftp://x\"").unwrap_err();
        assert!(err.contains("must start with http://"), "{err}");
        let err = parse("kind = \"command\"\ncommand = []").unwrap_err();
        assert!(err.contains("agents[0].reviewer.command"), "{err}");
        let err = parse("kind = \"http\"\nurl = \"http://x\"\ntimeout = \"soon\"").unwrap_err();
        assert!(err.contains("agents[0].reviewer.timeout"), "{err}");
        let err = parse("kind = \"oracle\"").unwrap_err();
        assert!(err.contains("unknown variant `oracle`"), "{err}");
    }
}
