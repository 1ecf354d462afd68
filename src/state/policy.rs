//! The "always allow" choice on a pending card, before it takes effect: where (this chat, or
//! this agent for me), what (any arguments, these exact arguments, or under a folder) and for
//! how long (until revoked, an hour, a number of calls), how it reads, and the
//! `POST /api/policies` body it makes (docs/rest.md, Policies); and what is left of a grant.

use std::collections::BTreeMap;

use serde_json::Value;
use signoff_protocol::rest::{ArgMatch, NewPolicy, Policy, PolicyScope};

/// What an "always allow" covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowWhat {
    AnyArgs,
    ExactArgs,
    /// Calls whose `path` is under this folder (`notes/`).
    Folder(String),
}

/// How long an "always allow" lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lasting {
    UntilRevoked,
    /// An hour from now (`expires_in_secs`).
    OneHour,
    /// This many calls (`uses`), at least 1.
    Uses(u32),
}

/// The number of calls a person typed for a counted grant, or what is wrong with it.
pub fn parse_uses(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(uses) if uses >= 1 => Ok(uses),
        _ => Err(format!(
            "\"{}\" is not a number of calls: enter a whole number, 1 or more.",
            text.trim()
        )),
    }
}

/// The folder of a call's `path` argument (`notes/` for `notes/a.txt`), when it has one.
pub fn folder_of(args: &Value) -> Option<String> {
    let path = args.get("path")?.as_str()?;
    let (folder, _) = path.trim_start_matches("./").rsplit_once('/')?;
    (!folder.is_empty() && !folder.split('/').any(|part| part == ".."))
        .then(|| format!("{folder}/"))
}

/// How the choice reads: "write_file with any arguments, in this chat, for the next 2 calls".
pub fn describe(tool: &str, scope: PolicyScope, what: &AllowWhat, lasting: Lasting) -> String {
    let what = match what {
        AllowWhat::AnyArgs => format!("{tool} with any arguments"),
        AllowWhat::ExactArgs => format!("{tool} with exactly these arguments"),
        AllowWhat::Folder(folder) => format!("{tool} with path under {folder}"),
    };
    let place = match scope {
        PolicyScope::Chat => "in this chat",
        PolicyScope::Agent => "in every chat with this agent",
    };
    let time = match lasting {
        Lasting::UntilRevoked => "until you revoke it".to_owned(),
        Lasting::OneHour => "for one hour".to_owned(),
        Lasting::Uses(1) => "for the next call only".to_owned(),
        Lasting::Uses(uses) => format!("for the next {uses} calls"),
    };
    format!("{what}, {place}, {time}")
}

/// What is left of a grant at `now_ms`, as the Policies panel says it ("1 use left",
/// "59 min left", both), given when it expires (`expires_ms`, from its `expires_at`); `None`
/// for a grant until revoked.
pub fn left_of(uses_left: Option<i64>, expires_ms: Option<f64>, now_ms: f64) -> Option<String> {
    let uses = uses_left.map(|uses| match uses {
        1 => "1 use left".to_owned(),
        uses => format!("{uses} uses left"),
    });
    let time = expires_ms.map(|at| {
        let minutes = ((at - now_ms) / 60_000.0).ceil().max(0.0) as u64;
        match minutes {
            0..=1 => "under a minute left".to_owned(),
            2..=59 => format!("{minutes} min left"),
            _ if minutes % 60 == 0 => format!("{} h left", minutes / 60),
            _ => format!("{} h {} min left", minutes / 60, minutes % 60),
        }
    });
    match (uses, time) {
        (Some(uses), Some(time)) => Some(format!("{uses}, {time}")),
        (one, other) => one.or(other),
    }
}

/// Whether a listed grant still applies at `now_ms` (the server lists only those in force,
/// but one that expires while the list is shown stops applying then).
pub fn in_force(policy: &Policy, expires_ms: Option<f64>, now_ms: f64) -> bool {
    policy.uses_left.is_none_or(|uses| uses > 0) && expires_ms.is_none_or(|at| at > now_ms)
}

/// A listed policy's summary without what is left of it, which the panel says on its own
/// (the server's summary ends with ", 2 more calls" and ", until …" for a grant).
pub fn base_summary(policy: &Policy) -> &str {
    let mut summary = policy.summary.as_str();
    if policy.expires_at.is_some() {
        if let Some((base, _)) = summary.rsplit_once(", until ") {
            summary = base;
        }
    }
    let left = match policy.uses_left {
        Some(0) => Some(", no more calls".to_owned()),
        Some(1) => Some(", 1 more call".to_owned()),
        Some(uses) => Some(format!(", {uses} more calls")),
        None => None,
    };
    if let Some(left) = left {
        summary = summary.strip_suffix(&left).unwrap_or(summary);
    }
    summary
}

/// The request that makes the policy; `None` for a chat policy before the chat has an id.
pub fn new_policy(
    agent: &str,
    tool: &str,
    args: &Value,
    context_id: Option<&str>,
    scope: PolicyScope,
    what: &AllowWhat,
    lasting: Lasting,
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
        expires_in_secs: (lasting == Lasting::OneHour).then_some(3600),
        uses: match lasting {
            Lasting::Uses(uses) => Some(uses),
            Lasting::UntilRevoked | Lasting::OneHour => None,
        },
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
            describe(
                "write_file",
                PolicyScope::Chat,
                &folder,
                Lasting::UntilRevoked
            ),
            "write_file with path under notes/, in this chat, until you revoke it"
        );
        let body = new_policy(
            "default/demo",
            "write_file",
            &args,
            Some("s-1"),
            PolicyScope::Chat,
            &folder,
            Lasting::UntilRevoked,
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
            Lasting::UntilRevoked,
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
            &AllowWhat::AnyArgs,
            Lasting::UntilRevoked,
        )
        .is_none());
    }

    #[test]
    fn a_grant_for_an_hour_or_some_calls_asks_for_them_and_reads_so() {
        let args = json!({"path": "a.txt"});
        let body = |lasting| {
            let body = new_policy(
                "d/a",
                "write_file",
                &args,
                Some("s-1"),
                PolicyScope::Chat,
                &AllowWhat::AnyArgs,
                lasting,
            )
            .unwrap();
            (body.expires_in_secs, body.uses)
        };
        assert_eq!(body(Lasting::OneHour), (Some(3600), None));
        assert_eq!(body(Lasting::Uses(2)), (None, Some(2)));
        assert_eq!(body(Lasting::UntilRevoked), (None, None));
        let any = AllowWhat::AnyArgs;
        assert_eq!(
            describe("t", PolicyScope::Agent, &any, Lasting::OneHour),
            "t with any arguments, in every chat with this agent, for one hour"
        );
        assert_eq!(
            describe("t", PolicyScope::Chat, &any, Lasting::Uses(2)),
            "t with any arguments, in this chat, for the next 2 calls"
        );
        assert_eq!(parse_uses(" 3 "), Ok(3));
        assert!(parse_uses("0").unwrap_err().contains("1 or more"));
        assert!(parse_uses("two").unwrap_err().contains("\"two\""));
    }

    #[test]
    fn what_is_left_of_a_grant_reads_in_uses_and_minutes() {
        assert_eq!(left_of(Some(1), None, 0.0).as_deref(), Some("1 use left"));
        assert_eq!(left_of(Some(2), None, 0.0).as_deref(), Some("2 uses left"));
        let hour = 3_600_000.0;
        assert_eq!(left_of(None, Some(hour), 0.0).as_deref(), Some("1 h left"));
        assert_eq!(
            left_of(Some(3), Some(hour), 60_000.0).as_deref(),
            Some("3 uses left, 59 min left")
        );
        assert_eq!(left_of(None, None, 0.0), None);
        let policy = |summary: &str, uses_left, expires_at: Option<&str>| Policy {
            id: "p".into(),
            agent: "d/a".into(),
            tool: "t".into(),
            scope: PolicyScope::Chat,
            context_id: None,
            args: None,
            created_by: "u".into(),
            created_at: "c".into(),
            summary: summary.into(),
            expires_at: expires_at.map(str::to_owned),
            uses_left,
        };
        let both = policy(
            "t with any arguments, in this chat, 1 more call, until 2026-11-27T05:00:00Z",
            Some(1),
            Some("2026-11-27T05:00:00Z"),
        );
        assert_eq!(base_summary(&both), "t with any arguments, in this chat");
        assert!(in_force(&both, Some(10.0), 5.0));
        assert!(!in_force(&both, Some(10.0), 10.0), "expired");
        let spent = policy("t, no more calls", Some(0), None);
        assert!(!in_force(&spent, None, 0.0));
        assert_eq!(base_summary(&spent), "t");
        let plain = policy("t with any arguments, in this chat", None, None);
        assert_eq!(base_summary(&plain), plain.summary);
    }
}
