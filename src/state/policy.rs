//! The "always allow" choice on a pending card, before it takes effect: where (this chat, or
//! this agent for me) and what (any arguments, these exact arguments, or under a folder), how
//! it reads, and the `POST /api/policies` body it makes (docs/rest.md, Policies).

use std::collections::BTreeMap;

use serde_json::Value;
use signoff_protocol::rest::{ArgMatch, NewPolicy, PolicyScope};

/// What an "always allow" covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowWhat {
    AnyArgs,
    ExactArgs,
    /// Calls whose `path` is under this folder (`notes/`).
    Folder(String),
}

/// The folder of a call's `path` argument (`notes/` for `notes/a.txt`), when it has one.
pub fn folder_of(args: &Value) -> Option<String> {
    let path = args.get("path")?.as_str()?;
    let (folder, _) = path.trim_start_matches("./").rsplit_once('/')?;
    (!folder.is_empty() && !folder.split('/').any(|part| part == ".."))
        .then(|| format!("{folder}/"))
}

/// How the choice reads: "write_file with any arguments, in this chat".
pub fn describe(tool: &str, scope: PolicyScope, what: &AllowWhat) -> String {
    let what = match what {
        AllowWhat::AnyArgs => format!("{tool} with any arguments"),
        AllowWhat::ExactArgs => format!("{tool} with exactly these arguments"),
        AllowWhat::Folder(folder) => format!("{tool} with path under {folder}"),
    };
    match scope {
        PolicyScope::Chat => format!("{what}, in this chat"),
        PolicyScope::Agent => format!("{what}, in every chat with this agent"),
    }
}

/// The request that makes the policy; `None` for a chat policy before the chat has an id.
pub fn new_policy(
    agent: &str,
    tool: &str,
    args: &Value,
    context_id: Option<&str>,
    scope: PolicyScope,
    what: &AllowWhat,
) -> Option<NewPolicy> {
    let context_id = match scope {
        PolicyScope::Chat => Some(context_id?.to_owned()),
        PolicyScope::Agent => None,
    };
    // Maps filled by `insert`, not `collect` or `from`: both sort their input, and each sort
    // is kilobytes of the download.
    let mut matchers = BTreeMap::new();
    let args = match what {
        AllowWhat::AnyArgs => None,
        AllowWhat::ExactArgs => {
            for (name, value) in args.as_object().into_iter().flatten() {
                let matcher = ArgMatch {
                    equals: Some(value.clone()),
                    ..ArgMatch::default()
                };
                matchers.insert(name.clone(), matcher);
            }
            Some(matchers)
        }
        AllowWhat::Folder(folder) => {
            let matcher = ArgMatch {
                glob: Some(format!("{folder}**")),
                ..ArgMatch::default()
            };
            matchers.insert("path".to_owned(), matcher);
            Some(matchers)
        }
    };
    Some(NewPolicy {
        agent: agent.to_owned(),
        tool: tool.to_owned(),
        scope,
        context_id,
        args,
        expires_in_secs: None,
        uses: None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_choice_reads_as_it_will_apply_and_makes_its_request() {
        let args = json!({"path": "notes/a.txt", "content": "hi"});
        assert_eq!(folder_of(&args).as_deref(), Some("notes/"));
        assert_eq!(folder_of(&json!({"path": "a.txt"})), None);
        assert_eq!(folder_of(&json!({"path": "../x/a.txt"})), None);
        let folder = AllowWhat::Folder("notes/".into());
        assert_eq!(
            describe("write_file", PolicyScope::Chat, &folder),
            "write_file with path under notes/, in this chat"
        );
        let body = new_policy(
            "default/demo",
            "write_file",
            &args,
            Some("s-1"),
            PolicyScope::Chat,
            &folder,
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&body).unwrap(),
            json!({"agent": "default/demo", "tool": "write_file", "scope": "chat",
                   "context_id": "s-1", "args": {"path": {"glob": "notes/**"}}})
        );
        let exact = new_policy(
            "default/demo",
            "write_file",
            &args,
            None,
            PolicyScope::Agent,
            &AllowWhat::ExactArgs,
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&exact).unwrap(),
            json!({"agent": "default/demo", "tool": "write_file", "scope": "agent",
                   "args": {"content": {"equals": "hi"}, "path": {"equals": "notes/a.txt"}}})
        );
        assert!(new_policy(
            "a/b",
            "t",
            &args,
            None,
            PolicyScope::Chat,
            &AllowWhat::AnyArgs
        )
        .is_none());
    }
}
