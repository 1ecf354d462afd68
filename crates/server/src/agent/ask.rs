//! The built-in `ask_user` tool (`ask_user = true` in the agents file): the model asks the
//! person one or more questions. Its calls always wait, like a call that needs approval; the
//! decision carries the answers (docs/wire.md, Questions), which the runtime keeps in the call's
//! run arguments, and "running" the call hands them back to the model as kagent 0.10 does.

use std::time::Duration;

use futures_util::future::{BoxFuture, FutureExt};
use serde_json::{json, Value};
use signoff_protocol::hitl::question::{answered_result, answers_from_args};
use signoff_protocol::hitl::{Question, ASK_USER};

use super::tools::{ToolError, ToolSource, ToolSpec};

/// The source's name, shown as the action request's `server`.
const SOURCE: &str = "signoff";

/// The question tool. It holds no state: the answers come with each call's run arguments.
#[derive(Debug, Clone, Copy, Default)]
pub struct AskUser;

impl AskUser {
    /// The tool as the model sees it: kagent's argument shape, so one card serves both.
    pub fn spec() -> ToolSpec {
        ToolSpec {
            name: ASK_USER.to_owned(),
            description: "Ask the user one or more questions and wait for the answers. Give \
                          `choices` for a question with set options (`multiple: true` lets \
                          the user pick several); leave them out for a free-text answer."
                .to_owned(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "questions": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "properties": {
                                "question": {"type": "string"},
                                "choices": {"type": "array", "items": {"type": "string"}},
                                "multiple": {"type": "boolean"}
                            },
                            "required": ["question"]
                        }
                    }
                },
                "required": ["questions"]
            }),
            source: SOURCE.to_owned(),
            hints: Default::default(),
        }
    }

    /// The tool result of an answered call: each question with its answer.
    fn answer(args: &Value) -> Result<Value, ToolError> {
        let questions = Question::list_from_args(args).ok_or_else(|| {
            ToolError::InvalidArgs("ask_user needs `questions`: a list of {question}".to_owned())
        })?;
        let answers = answers_from_args(args)
            .ok_or_else(|| ToolError::Failed("the question was not answered".to_owned()))?;
        Ok(answered_result(&questions, &answers))
    }
}

impl ToolSource for AskUser {
    fn name(&self) -> &str {
        SOURCE
    }

    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ToolSpec>, ToolError>> {
        async { Ok(vec![AskUser::spec()]) }.boxed()
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        args: Value,
        _timeout: Duration,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        let result = match tool {
            ASK_USER => AskUser::answer(&args),
            other => Err(ToolError::Unknown(other.to_owned())),
        };
        async move { result }.boxed()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use signoff_protocol::hitl::question::{answers_from_result, args_with_answers};

    #[tokio::test]
    async fn an_answered_call_returns_each_answer_beside_its_question() {
        let args = json!({"questions": [{"question": "Which database?", "choices": ["SQLite"]}]});
        let answered = args_with_answers(&args, &[vec!["SQLite".to_owned()]]);
        let result = AskUser
            .call(ASK_USER, answered, Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(
            answers_from_result(&result),
            Some(vec![(
                "Which database?".to_owned(),
                vec!["SQLite".to_owned()]
            )])
        );
        let unanswered = AskUser.call(ASK_USER, args, Duration::from_secs(1)).await;
        assert!(matches!(unanswered, Err(ToolError::Failed(_))));
    }
}
