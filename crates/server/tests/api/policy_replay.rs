//! `signoff policy replay` (docs/policies.md, Replaying the audit): a store seeded through its
//! own API with 325 audited calls, a candidate policy folder replayed over the last 7 days of
//! them, and the counts by tool and direction checked against the ones worked out by hand
//! below, on SQLite and PostgreSQL.

use clap::Parser;
use serde_json::{json, Value};
use signoff_protocol::TaskState;
use signoff_server::policy_cli::{run, PolicyCli};
use signoff_server::store::{Database, NewCall, SettledCallRow, Store, TaskRow, Verdict};

use crate::support::create_database;

const AGENTS: &str = r#"
[[agents]]
name = "demo"

[[agents.tools]]
kind = "builtin_files"
require_approval = ["write_file", "delete_file", "list_directory"]
"#;

/// The candidate: writes under etc/ refused, reads allowed, sre's notes allowed, deletes asked
/// of sre.
const CANDIDATE: &str = r#"
@id("no-etc")
@reason("nothing under etc/")
forbid (principal, action, resource == Signoff::Tool::"write_file")
when { context.args has path && context.args.path like "etc/*" };

@id("reads")
permit (principal, action, resource) when { resource.readOnlyHint };

@id("sre-notes")
permit (principal in Signoff::Group::"sre", action, resource == Signoff::Tool::"write_file")
when { context.args has path && context.args.path like "notes/*" };

@id("sre-deletes")
@ask("deleting is for sre")
@approvers("group:sre")
permit (principal, action, resource == Signoff::Tool::"delete_file");
"#;

fn why(by: &str, id: &str, outcome: &str) -> Value {
    json!({"by": by, "id": id, "outcome": outcome, "summary": format!("{by} {id} {outcome}")})
}

/// One kind of seeded call: how many, by whom, of which tool, and what the gate recorded.
struct Kind {
    count: usize,
    agent: &'static str,
    groups: &'static [&'static str],
    tool: &'static str,
    path: &'static str,
    why: Option<Value>,
    days_ago: i64,
}

fn kinds() -> Vec<Kind> {
    let default_ask = || Some(why("default", "require_approval", "ask"));
    let kind = |count, groups, tool, path, why| Kind {
        count,
        agent: "default/demo",
        groups,
        tool,
        path,
        why,
        days_ago: 1,
    };
    vec![
        // A: reads ran without asking; "reads" allows them: unchanged.
        kind(
            60,
            &["dev"],
            "read_file",
            "a.txt",
            Some(why("default", "require_approval", "allow")),
        ),
        // B: writes under etc/ asked; "no-etc" refuses them: write_file ask → deny.
        kind(40, &["dev"], "write_file", "etc/passwd", default_ask()),
        // C: sre's notes asked; "sre-notes" allows them: write_file ask → allow.
        kind(50, &["sre"], "write_file", "notes/a.txt", default_ask()),
        // D: dev's notes asked, and still ask: unchanged.
        kind(30, &["dev"], "write_file", "notes/b.txt", default_ask()),
        // E: dev's notes a grant allowed; the same grant answers the same ask: unchanged.
        kind(
            20,
            &["dev"],
            "write_file",
            "notes/c.txt",
            Some(why("grant", "g1", "allow")),
        ),
        // F: deletes asked; "sre-deletes" asks: unchanged.
        kind(40, &["dev"], "delete_file", "old.txt", default_ask()),
        // G: listings an old policy asked for; "reads" allows them: list_directory ask → allow.
        kind(
            25,
            &["dev"],
            "list_directory",
            ".",
            Some(why("policy", "old-lists", "ask")),
        ),
        // H: sre's writes under etc/ an old policy allowed; "no-etc": write_file allow → deny.
        kind(
            15,
            &["sre"],
            "write_file",
            "etc/hosts",
            Some(why("policy", "old-sre", "allow")),
        ),
        // I: calls made before policies: no recorded outcome, skipped.
        kind(10, &["dev"], "write_file", "notes/d.txt", None),
        // J: an agent no longer configured: skipped.
        Kind {
            agent: "default/gone",
            ..kind(5, &["dev"], "write_file", "notes/e.txt", default_ask())
        },
        // K: ten days ago, before the window: not read at all.
        Kind {
            days_ago: 10,
            ..kind(30, &["sre"], "write_file", "etc/old", default_ask())
        },
    ]
}

/// Seeds `store` with one task per call of [`kinds`], each created `days_ago`.
async fn seed(store: &Store) {
    let mut n = 0;
    for kind in kinds() {
        for _ in 0..kind.count {
            n += 1;
            let at = (chrono::Utc::now() - chrono::Duration::days(kind.days_ago)
                + chrono::Duration::seconds(n))
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            let task_id = format!("task-{n:03}");
            let row = TaskRow {
                created_at: at.clone(),
                updated_at: at,
                requester_groups: kind.groups.iter().map(|g| (*g).to_owned()).collect(),
                ..TaskRow::new(
                    task_id.clone(),
                    format!("context-{n:03}"),
                    format!("user-{}", n % 7),
                    kind.agent.to_owned(),
                    TaskState::Working,
                    "[]".to_owned(),
                )
            };
            assert!(store
                .create_task(&row, "chat", Vec::new(), None)
                .await
                .unwrap());
            let call = NewCall {
                call_id: "call_1".into(),
                name: kind.tool.to_owned(),
                source: "files".into(),
                args: json!({"path": kind.path, "content": "x"}),
                args_sha256: format!("sha-{n}"),
                held: false,
                auto: None,
                why: kind.why.clone(),
            };
            let commit = signoff_server::store::Commit {
                new_calls: vec![call],
                ..Default::default()
            };
            store.commit(&task_id, commit).await.unwrap();
        }
    }
}

/// The stores to seed: SQLite in a folder, and PostgreSQL when this run has one.
async fn databases(dir: &std::path::Path) -> Vec<(&'static str, Database, Vec<String>)> {
    let sqlite_args = vec!["--data-dir".to_owned(), dir.display().to_string()];
    let mut out = vec![("sqlite", Database::Sqlite(dir.to_owned()), sqlite_args)];
    if std::env::var("SIGNOFF_TEST_POSTGRES_URL").is_ok_and(|url| !url.is_empty()) {
        let url = create_database().await;
        let args = vec!["--database".to_owned(), url.clone()];
        out.push(("postgres", Database::Postgres(url), args));
    }
    out
}

/// A folder with the agents file, the candidate policies and a data folder.
struct Folder {
    dir: tempfile::TempDir,
    agents: std::path::PathBuf,
    policies: std::path::PathBuf,
    data: std::path::PathBuf,
}

impl Folder {
    fn new() -> Folder {
        let dir = tempfile::tempdir().unwrap();
        let (agents, policies) = (dir.path().join("agents.toml"), dir.path().join("candidate"));
        std::fs::write(&agents, AGENTS).unwrap();
        std::fs::create_dir_all(&policies).unwrap();
        std::fs::write(policies.join("candidate.cedar"), CANDIDATE).unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        Folder {
            dir,
            agents,
            policies,
            data,
        }
    }

    /// The report of a replay of the last 7 days with `more` arguments, over the store that
    /// `store_args` name; the replay must pass.
    async fn replay(&self, more: &[&str], store_args: Vec<String>) -> String {
        let mut args: Vec<String> = ["policy", "replay", "--since", "7d"]
            .iter()
            .chain(more)
            .map(|arg| (*arg).to_owned())
            .collect();
        args.push("--agents".into());
        args.push(self.agents.display().to_string());
        args.push("--policies".into());
        args.push(self.policies.display().to_string());
        args.extend(store_args);
        let mut out = Vec::new();
        assert!(run(PolicyCli::parse_from(&args), &mut out).await.unwrap());
        String::from_utf8(out).unwrap()
    }
}

#[tokio::test]
async fn a_replay_counts_the_changed_outcomes_by_tool_and_direction() {
    let folder = Folder::new();
    for (name, database, store_args) in databases(&folder.data).await {
        let store = Store::open(&database).await.unwrap();
        seed(&store).await;
        store.close().await;
        let report = folder.replay(&["--examples", "2"], store_args).await;
        // By hand, from `kinds`: 295 calls in the window, 15 of them skipped (10 without an
        // outcome, 5 of a gone agent); unchanged A 60 + D 30 + E 20 + F 40 = 150; changed
        // B 40 + C 50 + G 25 + H 15 = 130.
        assert!(
            report.starts_with("Replayed 280 calls decided since 20"),
            "{name}: {report}"
        );
        for line in [
            "150 unchanged, 130 would change.",
            "Skipped 10 calls: no recorded gate outcome.",
            "Skipped 5 calls: its agent is no longer configured.",
            "list_directory: ask → allow: 25 calls",
            "write_file: allow → deny: 15 calls",
            "write_file: ask → allow: 50 calls",
            "write_file: ask → deny: 40 calls",
        ] {
            assert!(report.contains(line), "{name}: {line:?} in\n{report}");
        }
        assert_eq!(
            report.matches(" → ").count(),
            4,
            "{name}: no other change: {report}"
        );
        // Examples: two per change, each with what decided then and what would now.
        assert_eq!(report.matches("    was: ").count(), 8, "{name}: {report}");
        assert!(
            report.contains("    now: Denied by policy no-etc"),
            "{name}: {report}"
        );
        assert!(report.contains(r#""path":"etc/hosts""#), "{name}");
    }
    // A data folder without a database is a mistake, not an empty audit.
    let empty = folder.dir.path().join("nothing");
    let args = [
        "policy",
        "replay",
        "--since",
        "7d",
        "--policies",
        &folder.policies.display().to_string(),
        "--data-dir",
        &empty.display().to_string(),
    ];
    let err = run(PolicyCli::parse_from(args), &mut Vec::new())
        .await
        .unwrap_err();
    assert!(err.0.contains("no database"), "{err}");
    assert!(!empty.join("signoff.db").exists());
}

/// Calls the rules settled at once (no chat) are replayed too, as the calls of chats are.
#[tokio::test]
async fn calls_settled_at_once_are_replayed() {
    let folder = Folder::new();
    for (name, database, store_args) in databases(&folder.data).await {
        let store = Store::open(&database).await.unwrap();
        for (index, days_ago) in [(0, 1), (1, 2), (2, 9)] {
            let args = json!({"path": format!("notes/{index}.txt")});
            let at = (chrono::Utc::now() - chrono::Duration::days(days_ago))
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            store
                .insert_settled_call(SettledCallRow {
                    id: format!("settled-{name}-{index}"),
                    user_id: "alice".into(),
                    requester_groups: Vec::new(),
                    agent: "default/demo".into(),
                    tool: "read_file".into(),
                    source: "files".into(),
                    args_sha256: signoff_server::agent::approvals::args_sha256(&args),
                    args,
                    verdict: Verdict::Deny,
                    why: why("rule", "no-reads", "deny"),
                    settled_at: at,
                })
                .await
                .unwrap();
        }
        store.close().await;
        let report = folder.replay(&[], store_args).await;
        // The one of 9 days ago is outside the window; the candidate's "reads" allows the rest.
        assert!(report.starts_with("Replayed 2 calls"), "{name}: {report}");
        assert!(
            report.contains("read_file: deny → allow: 2 calls"),
            "{name}: {report}"
        );
    }
}
