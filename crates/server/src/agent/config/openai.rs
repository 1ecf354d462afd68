//! The `openai` model entry of the agents file: an OpenAI-compatible Chat Completions endpoint
//! (`agent::openai` resolves and serves it).
//!
//! ```toml
//! model = { kind = "openai", base_url = "https://api.openai.com/v1", model = "gpt-4o-mini",
//!           api_key_env = "OPENAI_API_KEY" }
//! ```

use serde::Deserialize;

/// The `model = { kind = "openai", … }` table of the agents file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenAiSpec {
    /// The API root, such as `https://api.openai.com/v1` or `http://localhost:11434/v1`;
    /// requests go to `{base_url}/chat/completions`.
    pub base_url: String,
    /// The model name the endpoint knows, such as `gpt-4o-mini`.
    pub model: String,
    /// The environment variable holding the API key (none: no `Authorization` header, as local
    /// servers such as Ollama expect).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Seconds to connect and receive the answer's headers (default 60). Silence once the
    /// answer streams is bounded by the server's `--model-timeout`.
    #[serde(default)]
    pub timeout_secs: Option<u64>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub max_tokens: Option<u32>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::{AgentsFile, ModelSpec};
    use super::*;

    #[test]
    fn the_agents_file_declares_it() {
        let file = AgentsFile::parse(
            "[[agents]]\nname = \"gpt\"\nmodel = { kind = \"openai\", base_url = \
             \"http://localhost:11434/v1\", model = \"llama3.2\", temperature = 0.2 }\n",
        )
        .unwrap();
        assert_eq!(
            file.agents[0].model,
            ModelSpec::OpenAi(OpenAiSpec {
                base_url: "http://localhost:11434/v1".into(),
                model: "llama3.2".into(),
                api_key_env: None,
                timeout_secs: None,
                temperature: Some(0.2),
                max_tokens: None,
            })
        );
        let typo = AgentsFile::parse(
            "[[agents]]\nname = \"gpt\"\nmodel = { kind = \"openai\", base_url = \"http://x\", \
             model = \"m\", api_key = \"sk-1\" }\n",
        )
        .unwrap_err()
        .to_string();
        assert!(typo.starts_with("agents file: agents[0].model"), "{typo}");
        assert!(typo.contains("unknown field `api_key`"), "{typo}");
    }
}
