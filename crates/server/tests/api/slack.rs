//! The Slack channel's messages checked against counterparts of Slack's own, since Slack cannot
//! be reached from here: a real server with a `kind = "slack"` channel to a receiver on port 0
//! sends a message for each event (pending, extended, decided, expired, reminded, escalated,
//! canceled) of batches full of hostile text; every body it POSTs must
//!
//! - type-check against Slack's published types (npm's `@slack/types` `KnownBlock` and
//!   `@slack/webhook` `IncomingWebhookSendArguments`, with `tsc --noEmit --strict`;
//!   `tests/slack/install.sh` installs them),
//! - keep within Block Kit's documented limits (below, with where Slack gives them),
//! - ping nobody: no `<` or `>` reaches Slack in a mrkdwn text (`<!channel>`, `<@U…>` and
//!   `<url|text>` are Slack's mention and link syntax), every `&` starts an entity, and every
//!   mrkdwn text is `verbatim` (no automatic `@here` or `#channel` links),
//! - and show what it reports, with secrets masked.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::support::*;

/// People by token. Slack's mention and link syntax in user ids: a token's user is any text
/// without `=`, `:` or `,`, as an identity provider's subject may be.
const REQUESTER: &str = "<!channel> Zoë <@U024BE7LH> & co @here";
const APPROVER: &str = "<!here> dana <#C024BE7LH> 😀 &amp;";

/// `demo` waits up to an hour and may be extended; `brief` expires after a second; `ladder`
/// reminds after one second and escalates to hostile entries after two.
const AGENTS: &str = "\
[[agents]]\nname = \"demo\"\napprovers = [\"group:sre\"]\n\
approval_timeout = \"1h\"\nmax_extend = \"30m\"\n\
[[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\", \"delete_file\"]\n\
[[agents]]\nname = \"brief\"\napprovers = [\"group:sre\"]\napproval_timeout = \"1s\"\n\
[[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n\
[[agents]]\nname = \"ladder\"\napprovers = [\"group:sre\"]\n\
remind_after = \"1s\"\nescalate_after = \"2s\"\n\
escalate_to = [\"user:<!channel>\", \"group:<@U024BE7LH>&here\"]\n\
[[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";

/// A Slack webhook stand-in: answers `ok` as Slack does, and keeps every body.
struct Receiver {
    url: String,
    bodies: Arc<Mutex<Vec<String>>>,
}

async fn receiver() -> Receiver {
    let bodies: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = bodies.clone();
    let app = axum::Router::new().route(
        "/services/T0/B0/X",
        axum::routing::post(move |body: String| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(body);
                (StatusCode::OK, "ok")
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/services/T0/B0/X", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Receiver { url, bodies }
}

async fn spawn_slack(url: &str) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let agents = write_agents(dir.path(), AGENTS);
    let file = dir.path().join("notifications.toml");
    std::fs::write(
        &file,
        format!(
            "[delivery]\nretry_base = \"50ms\"\nretry_max = \"200ms\"\nretry_for = \"1h\"\n\
             poll = \"50ms\"\ntimeout = \"2s\"\n\n[[channels]]\nname = \"team-slack\"\n\
             kind = \"slack\"\nurl = \"{url}\"\n"
        ),
    )
    .unwrap();
    spawn_in(dir, move |config| {
        config.agents_file = Some(agents);
        config.notifications = Some(file);
        config.public_url = Some("https://signoff.example.com".into());
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec![
            format!("req-token={REQUESTER}:sre"),
            format!("dana-token={APPROVER}:sre"),
        ];
    })
    .await
}

/// The requester asks `agent` for `text` in the chat `context` (a new one when `None`); the
/// paused task.
async fn pause(app: &TestApp, agent: &str, text: &str, context: Option<&str>) -> String {
    let body = message_request("message/stream", message_v03(text, None, context));
    let response = app
        .post(&format!("/api/a2a/default/{agent}"))
        .bearer_auth("req-token")
        .json(&body)
        .send()
        .await
        .unwrap();
    let results = results(&SseStream::new(response).collect().await);
    assert_eq!(
        states(&results).last().map(String::as_str),
        Some("input-required"),
        "{results:?}"
    );
    task_id(&results)
}

/// Where `tests/slack/install.sh` put Slack's types and the compiler.
pub(crate) fn node_modules() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/slack/node_modules");
    assert!(
        dir.join("@slack/webhook/package.json").exists() && dir.join("typescript/bin/tsc").exists(),
        "Slack's types are not installed: run crates/server/tests/slack/install.sh"
    );
    dir
}

const TS_HEAD: &str = "import type { KnownBlock } from \"@slack/types\";\n\
import type { IncomingWebhookSendArguments } from \"@slack/webhook\";\n\
// An incoming webhook's arguments whose blocks are Slack's known ones (the SDK also takes any\n\
// `{type: string}` as a block, which would check nothing) and whose fallback text is given.\n\
type Message = Omit<IncomingWebhookSendArguments, \"blocks\" | \"text\"> &\n\
  { text: string; blocks: KnownBlock[] };\n";

/// What `tsc --noEmit --strict` says of `messages` (each a JSON body) written into `name.ts`
/// as `const m{i}: Message = …;`, beside `control`'s messages in `control.ts`: each error
/// line, by file.
fn type_errors(messages: &[Value], control: &[Value]) -> (Vec<String>, Vec<String>) {
    type_errors_with(TS_HEAD, messages, control)
}

/// [`type_errors`] with `head` (imports and the `Message` type) in place of the incoming
/// webhook's.
pub(crate) fn type_errors_with(
    head: &str,
    messages: &[Value],
    control: &[Value],
) -> (Vec<String>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(node_modules(), dir.path().join("node_modules")).unwrap();
    let write = |name: &str, messages: &[Value]| {
        let mut text = head.to_owned();
        for (index, message) in messages.iter().enumerate() {
            text.push_str(&format!("export const m{index}: Message = {message};\n"));
        }
        std::fs::write(dir.path().join(format!("{name}.ts")), text).unwrap();
    };
    write("messages", messages);
    write("control", control);
    let output = std::process::Command::new("node")
        .current_dir(dir.path())
        .args([
            "node_modules/typescript/bin/tsc",
            "--noEmit",
            "--strict",
            "--skipLibCheck",
            "--target",
            "es2022",
            "--module",
            "nodenext",
            "--moduleResolution",
            "nodenext",
            "messages.ts",
            "control.ts",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let errors: Vec<String> = stdout
        .lines()
        .filter(|line| line.contains("error TS"))
        .map(str::to_owned)
        .collect();
    assert_eq!(
        output.status.success(),
        errors.is_empty(),
        "tsc: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let of = |file: &str| {
        errors
            .iter()
            .filter(|line| line.starts_with(file))
            .cloned()
            .collect()
    };
    (of("messages.ts"), of("control.ts"))
}

/// A string's length as Slack's limits count it: UTF-16 units, never fewer than characters.
fn units(text: &Value) -> usize {
    text.as_str().map_or(0, |text| text.encode_utf16().count())
}

/// How `message` breaks Block Kit's documented limits, each named:
/// - at most 50 blocks in a message (docs.slack.dev/reference/block-kit/blocks);
/// - a section's text 1 to 3000 characters, its `fields` at most 10 of at most 2000 each
///   (…/blocks/section-block; …/composition-objects/text-object);
/// - a button's text at most 75 characters, its `url` at most 3000
///   (…/block-elements/button-element);
/// - a context block at most 10 elements (…/blocks/context-block);
/// - a header's text at most 150 characters (…/blocks/header-block);
/// - `action_id`s unique within the message (…/block-elements/button-element: unique among
///   the action ids of its block; the whole message is stricter);
/// - the top-level `text` given, not empty: the fallback shown in notifications
///   (docs.slack.dev/messaging, payloads).
///
/// The same figures are in the comments of @slack/types' block-kit/*.d.ts.
pub(crate) fn limit_violations(message: &Value) -> Vec<String> {
    let mut broken = Vec::new();
    let mut check = |ok: bool, what: String| {
        if !ok {
            broken.push(what);
        }
    };
    check(units(&message["text"]) >= 1, "no fallback text".into());
    let blocks = message["blocks"].as_array().cloned().unwrap_or_default();
    check(blocks.len() <= 50, format!("{} blocks", blocks.len()));
    let mut action_ids = std::collections::HashSet::new();
    for (index, block) in blocks.iter().enumerate() {
        let at = format!("block {index} ({})", block["type"]);
        match block["type"].as_str() {
            Some("section") => {
                if !block["text"].is_null() {
                    let length = units(&block["text"]["text"]);
                    check(
                        (1..=3000).contains(&length),
                        format!("{at}: text of {length}"),
                    );
                }
                let fields = block["fields"].as_array().cloned().unwrap_or_default();
                check(fields.len() <= 10, format!("{at}: {} fields", fields.len()));
                for field in &fields {
                    let length = units(&field["text"]);
                    check(
                        (1..=2000).contains(&length),
                        format!("{at}: a field of {length}"),
                    );
                }
            }
            Some("context") => {
                let elements = block["elements"].as_array().map_or(0, Vec::len);
                check(elements <= 10, format!("{at}: {elements} elements"));
            }
            Some("header") => {
                let length = units(&block["text"]["text"]);
                check(length <= 150, format!("{at}: header of {length}"));
            }
            _ => {}
        }
        for element in block["elements"].as_array().into_iter().flatten() {
            if element["type"] == "button" {
                let text = units(&element["text"]["text"]);
                check(text <= 75, format!("{at}: button text of {text}"));
                let url = units(&element["url"]);
                check(url <= 3000, format!("{at}: button url of {url}"));
            }
            if let Some(id) = element["action_id"].as_str() {
                check(
                    action_ids.insert(id.to_owned()),
                    format!("{at}: action_id {id} again"),
                );
            }
        }
    }
    broken
}

/// Every mrkdwn text object in `value`.
fn mrkdwn_objects(value: &Value, into: &mut Vec<Value>) {
    match value {
        Value::Object(map) => {
            if map.get("type") == Some(&json!("mrkdwn")) {
                into.push(value.clone());
            }
            map.values().for_each(|inner| mrkdwn_objects(inner, into));
        }
        Value::Array(items) => items.iter().for_each(|inner| mrkdwn_objects(inner, into)),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

/// How `message` could ping or link: Slack's `<…>` syntax, a bare `&` (`&lt;` would then be
/// made of user text), or a mrkdwn text Slack parses for mentions (not `verbatim`). The
/// fallback `text` is mrkdwn too.
pub(crate) fn ping_risks(message: &Value) -> Vec<String> {
    let mut texts = Vec::new();
    mrkdwn_objects(message, &mut texts);
    texts.push(json!({"text": message["text"], "verbatim": true}));
    let mut risks = Vec::new();
    for object in texts {
        let text = object["text"].as_str().unwrap_or("");
        if text.contains(['<', '>']) {
            risks.push(format!("Slack's <…> syntax in {text:?}"));
        }
        let mut rest = text;
        while let Some(at) = rest.find('&') {
            rest = &rest[at..];
            if !["&amp;", "&lt;", "&gt;"]
                .iter()
                .any(|entity| rest.starts_with(entity))
            {
                risks.push(format!("a bare & in {text:?}"));
                break;
            }
            rest = &rest[1..];
        }
        if object["verbatim"] != true {
            risks.push(format!("not verbatim: {text:?}"));
        }
    }
    risks
}

/// Waits until the receiver has `count` bodies and the outbox is empty; the bodies as JSON.
async fn bodies(app: &TestApp, hook: &Receiver, count: usize) -> Vec<Value> {
    eventually("every Slack message sent", || async {
        let text = app.client.get(app.url("/metrics")).send().await.ok()?;
        let text = text.text().await.ok()?;
        let bodies = hook.bodies.lock().unwrap().clone();
        (bodies.len() >= count && text.contains("signoff_notifications_queued 0")).then_some(bodies)
    })
    .await
    .iter()
    .map(|body| serde_json::from_str(body).expect("a Slack message is JSON"))
    .collect()
}

/// The requester's batches on every agent, and what people do with them: `demo` pauses on
/// twelve calls (the message lists ten) with Slack's syntax, entities, unicode, long strings
/// and a secret in their arguments, in a chat whose id (in the link) is as hostile as an id may
/// be (256 bytes); it is extended with a hostile note and rejected with a reason as long as the
/// server takes. `brief`'s batch expires; `ladder`'s is reminded, escalated and canceled.
async fn every_event_of_hostile_batches(app: &TestApp) {
    let hostile = "<!channel> <https://evil.example|click> &amp; & @here #general Zoë 😀 \u{202e}";
    let mut calls = vec![
        "write key.txt: Bearer abc.def.ghijklmnop".to_owned(),
        "delete old&<b>.txt".to_owned(),
    ];
    calls.extend((1..=10).map(|n| format!("write f{n}.txt: {hostile} {}", "x".repeat(n * 60))));
    let mut context = String::new();
    for c in "<!channel>|é&".chars().cycle() {
        if context.len() + c.len_utf8() > 256 {
            break;
        }
        context.push(c);
    }
    let demo = pause(app, "demo", &calls.join("\n"), Some(&context)).await;

    let note = format!(
        "<!channel> look\n<https://evil.example|here> & {}",
        "ü".repeat(900)
    );
    let (status, body) = app
        .post_json_as(
            &format!("/api/approvals/{demo}/extend"),
            Some("dana-token"),
            &json!({"by": "5m", "note": note}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // A rejection's reason as long as the server takes (4 KiB): longer than a section may be.
    let reason = format!("<!here> no\n<@U024BE7LH> {}", "z&".repeat(2000));
    let reason = &reason[..4000];
    let (status, body) = app
        .post_json_as(
            &format!("/api/approvals/{demo}"),
            Some("dana-token"),
            &json!({"decision_type": "deny", "reason": reason}),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    pause(app, "brief", "write soon.txt: <!channel>", None).await;
    let ladder = pause(app, "ladder", "write later.txt: <@U024BE7LH>", None).await;
    eventually("the ladder's batch escalated", || async {
        let (_, inbox) = app.get_as("/api/approvals", Some("dana-token")).await;
        let batch = inbox["approvals"]
            .as_array()?
            .iter()
            .find(|b| b["taskId"] == ladder.as_str())?
            .clone();
        batch["ladder"]["escalatedTo"].is_array().then_some(())
    })
    .await;
    let cancel = request("tasks/cancel", json!({"id": ladder}));
    let response = app
        .post("/api/a2a/default/ladder")
        .bearer_auth("req-token")
        .json(&cancel)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

/// The limits and ping checks can fail: `message` changed to break each limit, with a mention,
/// a bare `&` and a text Slack would parse, is reported for each.
fn the_checks_catch_a_message_past_every_limit(message: &Value) {
    let mut broken = message.clone();
    let last = broken["blocks"].as_array().unwrap().len() - 1;
    broken["text"] = json!("");
    broken["blocks"][0]["text"]["text"] = json!("é".repeat(3001));
    broken["blocks"][0]["text"]["verbatim"] = json!(false);
    broken["blocks"][1]["fields"][0]["text"] = json!(format!("<!channel> {}", "x".repeat(2000)));
    let button = broken["blocks"][last]["elements"][0].clone();
    let mut other = button.clone();
    other["text"]["text"] = json!("b".repeat(76));
    other["url"] = json!(format!("https://x/{}", "u".repeat(3000)));
    broken["blocks"][last]["elements"] = json!([button, other]);
    let bare = json!({"type": "mrkdwn", "text": "&"});
    let crowded = json!({"type": "context", "elements": vec![bare; 11]});
    let header = json!({"type": "header", "text": {"type": "plain_text", "text": "h".repeat(151)}});
    let blocks = broken["blocks"].as_array_mut().unwrap();
    blocks.extend(std::iter::repeat_n(crowded, 50));
    blocks.push(header);
    let count = broken["blocks"].as_array().unwrap().len();
    let violations = limit_violations(&broken).join("\n");
    for limit in [
        "no fallback text",
        &format!("{count} blocks"),
        "text of 3001",
        "a field of 2011",
        "button text of 76",
        "button url of 3010",
        "again",
        "11 elements",
        "header of 151",
    ] {
        assert!(
            violations.contains(limit),
            "{limit} not found in:\n{violations}"
        );
    }
    let risks = ping_risks(&broken).join("\n");
    for risk in ["Slack's <…> syntax", "a bare &", "not verbatim"] {
        assert!(risks.contains(risk), "{risk} not found in:\n{risks}");
    }
}

#[tokio::test]
async fn slack_messages_of_hostile_batches_fit_slacks_types_and_limits_and_ping_nobody() {
    node_modules();
    let hook = receiver().await;
    let app = spawn_slack(&hook.url).await;

    every_event_of_hostile_batches(&app).await;

    // demo: pending, extended, decided; brief: pending, expired; ladder: pending, reminded,
    // escalated, canceled.
    let messages = bodies(&app, &hook, 9).await;
    let fallbacks: Vec<&str> = messages
        .iter()
        .map(|m| m["text"].as_str().unwrap_or(""))
        .collect();
    for said in [
        "waits for a sign-off (",
        "extended its deadline",
        "Rejected: ",
        "expired unanswered",
        "Reminder: ",
        "escalated to ",
        "was canceled",
    ] {
        assert!(
            fallbacks.iter().any(|text| text.contains(said)),
            "{said}: {fallbacks:#?}"
        );
    }

    let problems: Vec<String> = (messages.iter().enumerate())
        .flat_map(|(index, message)| {
            let problems = limit_violations(message)
                .into_iter()
                .chain(ping_risks(message));
            problems.map(move |problem| format!("message {index}: {problem}"))
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // What it shows: the hostile text escaped (so it is there, as text), the secret masked,
    // the calls past ten counted, the note, the link to the chat.
    let all = Value::Array(messages.clone()).to_string();
    for shown in [
        "&lt;!channel&gt; &lt;https://evil.example|click&gt; &amp;amp; &amp; @here",
        "Zoë 😀",
        "&lt;!channel&gt; Zoë &lt;@U024BE7LH&gt; &amp; co @here",
        "&lt;!here&gt; dana &lt;#C024BE7LH&gt; 😀 &amp;amp;",
        "user:&lt;!channel&gt;, group:&lt;@U024BE7LH&gt;&amp;here",
        "[masked]",
        "old&amp;&lt;b&gt;.txt",
        "and 2 more",
        "*Note*\\n&lt;!channel&gt; look\\n&lt;https://evil.example|here&gt;",
        "https://signoff.example.com/agents/default/demo/chat/%3C!channel%3E|%C3%A9&",
    ] {
        assert!(all.contains(shown), "{shown} is not in {all}");
    }
    assert!(
        !all.contains("abc.def.ghijklmnop"),
        "a secret reached Slack: {all}"
    );

    // Slack's types: every message checks, and a message with a mistake Slack would refuse
    // (a button's text in mrkdwn) does not, so the check can fail.
    let mut wrong = messages[0].clone();
    let last = wrong["blocks"].as_array().unwrap().len() - 1;
    wrong["blocks"][last]["elements"][0]["text"]["type"] = json!("mrkdwn");
    let (errors, control) = type_errors(&messages, &[wrong]);
    assert_eq!(errors, Vec::<String>::new());
    assert!(
        control.iter().any(|line| line.contains("\"plain_text\"")),
        "tsc let a mrkdwn button text through: {control:?}"
    );

    the_checks_catch_a_message_past_every_limit(&messages[0]);
    app.stop().await;
}

/// Draws `message` as Slack would show it (`tests/slack/render_blocks.py`, Block Kit to HTML)
/// and screenshots it in headless Chromium: `tests/artifacts/NAME.{html,png}` at the
/// repository's root, to be looked at. The renderer refuses a block it does not know.
pub(crate) fn screenshot(name: &str, message: &Value) {
    use std::io::Write as _;
    let tests = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut render = std::process::Command::new("python3")
        .arg(tests.join("slack/render_blocks.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 renders the message");
    render
        .stdin
        .take()
        .unwrap()
        .write_all(message.to_string().as_bytes())
        .unwrap();
    let page = render.wait_with_output().unwrap();
    assert!(page.status.success(), "render_blocks.py refused {message}");
    let artifacts = tests.join("../../../tests/artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let html = artifacts.join(format!("{name}.html"));
    let png = artifacts.join(format!("{name}.png"));
    std::fs::write(&html, &page.stdout).unwrap();
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let shot = std::process::Command::new(chromium)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--window-size=580,420",
        ])
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", html.canonicalize().unwrap().display()))
        .output()
        .expect("Chromium (scripts/setup.sh installs it) screenshots the message");
    assert!(
        shot.status.success() && png.metadata().is_ok_and(|meta| meta.len() > 0),
        "{}",
        String::from_utf8_lossy(&shot.stderr)
    );
}
