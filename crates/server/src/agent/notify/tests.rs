//! Tests of the notification channels' configuration and rows.
use super::*;
use serde_json::Value;

/// A batch of alice's that waits, as the runtime tells it.
fn alices_notice(public_url: &str) -> payload::Notice {
    let about = payload::About {
        task_id: "t1",
        context_id: "c1",
        agent: "default/demo",
        requester: "alice",
    };
    payload::pending(&about, public_url, &[], None)
}

/// Loads a notifications file of `channels` (TOML after `[[channels]]`).
fn load(dir: &Path, channels: &str) -> Result<Notifications, NotifyConfigError> {
    let path = dir.join("notifications.toml");
    std::fs::write(&path, format!("[[channels]]\n{channels}")).unwrap();
    Notifications::load(&path, Some("https://signoff.example.com"))
}

// The SMTP transport's pool runs on the runtime, as the server's does.
#[tokio::test]
async fn an_email_channel_is_checked_and_never_shows_its_password() {
    let dir = tempfile::tempdir().unwrap();
    let password = dir.path().join("smtp-password");
    std::fs::write(&password, "hunter2-secret\n").unwrap();
    let good = format!(
        "name = \"mail\"\nkind = \"email\"\n[channels.email]\nsmtp_host = \"smtp.example.com\"\n\
         username = \"signoff\"\npassword_file = {:?}\nfrom = \"Signoff <s@example.com>\"\n\
         to = [\"oncall@example.com\"]\npeople = {{ alice = \"alice@example.com\" }}\n",
        password.display().to_string()
    );
    let loaded = load(dir.path(), &good).unwrap();
    let email = loaded.email("mail").unwrap();
    assert_eq!(email.to.len(), 1);
    assert!(email.to_requester);
    assert!(email.people.contains_key("alice"));
    assert!(!format!("{loaded:?}").contains("hunter2"));
    for (broken, field, says) in [
        (
            good.replace("username = \"signoff\"\n", ""),
            "email.username",
            "a password needs its username",
        ),
        (
            good.replace("oncall@example.com", "not an address"),
            "email.to[0]",
            "not an email address",
        ),
        (
            good.replace("smtp_host", "tls = \"ssl\"\nsmtp_host"),
            "email.tls",
            "not a TLS mode",
        ),
        (
            good.replace("kind = \"email\"", "kind = \"slack\"\nurl = \"https://h\""),
            "email",
            "only a channel of kind",
        ),
    ] {
        let err = load(dir.path(), &broken).unwrap_err();
        assert_eq!(err.path, format!("channels[0].{field}"), "{err}");
        assert!(err.message.contains(says), "{err}");
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }
}

#[test]
fn a_channel_routed_by_group_takes_the_batches_those_groups_may_decide() {
    let dir = tempfile::tempdir().unwrap();
    let channel = |route: &str| {
        format!(
            "name = \"ops\"\nkind = \"slack\"\nurl = \"https://h.example/x\"\nroute = {route}\n"
        )
    };
    let loaded = load(dir.path(), &channel("{ groups = [\"sre\"] }")).unwrap();
    assert!(loaded.needs_audience());
    let audience = |groups: &[&str]| Audience {
        groups: groups.iter().map(|g| g.to_string()).collect(),
        users: vec!["lead@example.com".into()],
        members: Vec::new(),
    };
    let rows = |audience: &Audience| {
        loaded.for_event(
            NotificationKind::Pending,
            "default/demo",
            audience,
            alices_notice,
        )
    };
    assert_eq!(rows(&audience(&["dev", "sre"])).len(), 1);
    assert!(rows(&audience(&["dev"])).is_empty());
    assert!(rows(&Audience::default()).is_empty(), "the requester alone");
    let everyone = load(dir.path(), &channel("{ agents = [\"default/demo\"] }")).unwrap();
    assert!(!everyone.needs_audience());
    for (route, says) in [
        ("{ groups = [] }", "lists no group"),
        ("{ groups = [\"group:sre\"] }", "not a group's name"),
    ] {
        let err = load(dir.path(), &channel(route)).unwrap_err();
        assert_eq!(err.path, "channels[0].route.groups", "{err}");
        assert!(err.message.contains(says), "{err}");
    }
}

// The SMTP transport's pool runs on the runtime, as the server's does.
#[tokio::test]
async fn an_email_channel_writes_one_row_per_recipient() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(
        dir.path(),
        "name = \"mail\"\nkind = \"email\"\n[channels.email]\nsmtp_host = \"smtp.example.com\"\n\
         from = \"s@example.com\"\nto = [\"oncall@example.com\", \"oncall@example.com\"]\n\
         to_approvers = true\n",
    )
    .unwrap();
    let audience = Audience {
        groups: vec!["sre".into()],
        users: vec!["alice".into(), "lead@example.com".into()],
        members: Vec::new(),
    };
    let rows = loaded.for_event(
        NotificationKind::Pending,
        "default/demo",
        &audience,
        alices_notice,
    );
    let recipients: Vec<Value> = rows
        .iter()
        .map(|row| row.payload[RECIPIENT].clone())
        .collect();
    assert_eq!(
        recipients,
        [
            serde_json::json!({"requester": "alice"}),
            serde_json::json!({"address": "oncall@example.com"}),
            serde_json::json!({"approver": "lead@example.com"}),
        ],
        "each once; the requester is not also written to as an approver"
    );
    let ids: std::collections::HashSet<&str> = rows.iter().map(|row| row.id.as_str()).collect();
    assert_eq!(ids.len(), 3, "each row its own delivery id");
    assert!(rows
        .iter()
        .all(|row| row.payload["agent"] == "default/demo"));
}

#[tokio::test]
async fn group_members_get_one_row_per_address_and_the_requester_none() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(
        dir.path(),
        "name = \"mail\"\nkind = \"email\"\n[channels.email]\nsmtp_host = \"smtp.example.com\"\n\
         from = \"s@example.com\"\nto = [\"Dana@example.com\"]\nto_approvers = true\n\
         people = { erin = \"erin@work.example.com\", frank = \"erin@work.example.com\" }\n",
    )
    .unwrap();
    assert!(loaded.mails_approvers());
    let member = |id: &str, email: &str| Member {
        id: id.into(),
        email: email.into(),
    };
    let audience = Audience {
        groups: vec!["sre".into()],
        users: vec!["bob".into(), "lead@example.com".into()],
        members: vec![
            member("alice", "alice@example.com"),
            member("bob", "bob@example.com"),
            member("carol", "LEAD@example.com"),
            member("dana", "dana@example.com"),
            member("erin", "erin@example.com"),
            member("frank", "frank@example.com"),
        ],
    };
    let rows = loaded.for_event(
        NotificationKind::Pending,
        "default/demo",
        &audience,
        alices_notice,
    );
    let recipients: Vec<Value> = rows
        .iter()
        .map(|row| row.payload[RECIPIENT].clone())
        .collect();
    let member = |id: &str, email: &str| serde_json::json!({"member": {"id": id, "email": email}});
    assert_eq!(
        recipients,
        [
            serde_json::json!({"requester": "alice"}),
            // The fixed address is dana's own: her message, with her links, in its place.
            member("dana", "dana@example.com"),
            // bob is named by user and is a member: one message, his, with links.
            member("bob", "bob@example.com"),
            // `lead@example.com` is an id, never taken as an address: its row is mailed only
            // if the directory knows that person when it is sent.
            serde_json::json!({"approver": "lead@example.com"}),
            // carol's address is her own, from the directory.
            member("carol", "LEAD@example.com"),
            // The channel's people entry wins over the directory's address; frank's entry
            // is erin's address, which has its message already.
            member("erin", "erin@work.example.com"),
        ],
        "the requester is not written to as a member"
    );
}

// The root README's example, with its secrets' files made here: it loads as it stands.
#[tokio::test]
async fn the_readmes_example_file_loads() {
    let readme = include_str!("../../../../../README.md");
    let section = &readme[readme.find("## Notifications").unwrap()..];
    let start = section.find("```toml\n").unwrap() + "```toml\n".len();
    let block = &section[start..start + section[start..].find("```").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    for (name, secret) in [
        ("signoff-webhook", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
        (
            "slack-webhook-url",
            "https://hooks.slack.com/services/T0/B0/X",
        ),
        ("smtp-password", "hunter2"),
    ] {
        std::fs::write(dir.path().join(name), secret).unwrap();
    }
    let path = dir.path().join("notifications.toml");
    let secrets = format!("{}/", dir.path().display());
    std::fs::write(&path, block.replace("/run/secrets/", &secrets)).unwrap();
    let loaded = Notifications::load(&path, Some("https://signoff.example.com")).unwrap();
    let names: Vec<&str> = loaded.channel_names().collect();
    assert_eq!(names, ["audit", "sre-slack", "mail"]);
    assert!(loaded.email("mail").is_some());
    assert!(loaded.needs_audience());
}

// The root README's Slack app example, with its secrets' files made here: it loads as it
// stands; and each wrong value of it is named, never showing a secret.
#[test]
fn the_readmes_slack_app_example_loads_and_each_wrong_value_is_named() {
    let readme = include_str!("../../../../../README.md");
    let section = &readme[readme.find("### Slack buttons that decide").unwrap()..];
    let start = section.find("```toml\n").unwrap() + "```toml\n".len();
    let block = &section[start..start + section[start..].find("```").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    for (name, secret) in [
        ("slack-bot-token", "xoxb-1-2-sekrit"),
        ("slack-signing-secret", "8f742231b10e8888abcd99yyyzzz85a5"),
    ] {
        std::fs::write(dir.path().join(name), secret).unwrap();
    }
    let path = dir.path().join("notifications.toml");
    let good = block.replace("/run/secrets/", &format!("{}/", dir.path().display()));
    std::fs::write(&path, &good).unwrap();
    let loaded = Notifications::load(&path, Some("https://signoff.example.com")).unwrap();
    let app = loaded.slack_app("sre-slack-app").unwrap();
    assert_eq!(app.slack_channel, "C0123ABCD");
    assert_eq!(app.mapped("U024BE7LH"), Some("alice"));
    assert!(loaded.email("sre-slack-app").is_none());
    let shown = format!("{loaded:?}");
    assert!(
        !shown.contains("sekrit") && !shown.contains("8f742231"),
        "{shown}"
    );
    for (broken, field, says) in [
        (
            good.replace("channel = \"C0123ABCD\"", "channel = \"#sre\""),
            "slack.channel",
            "not a Slack channel id",
        ),
        (
            good.replace(
                "signing_secret_file",
                "signing_secret_env = \"NO_SUCH_VAR_X\"\n#",
            ),
            "slack.signing_secret_file",
            "NO_SUCH_VAR_X is not set",
        ),
        (
            good.replace("bot_token_file", "#"),
            "slack.bot_token_file",
            "needs its bot token",
        ),
        (
            good.replace(
                "[channels.slack]",
                "url = \"https://x.example\"\n[channels.slack]",
            ),
            "url",
            "takes no url",
        ),
        (
            good.replace("kind = \"slack_app\"", "kind = \"slack\""),
            "slack",
            "only a channel of kind",
        ),
    ] {
        std::fs::write(&path, &broken).unwrap();
        let err = Notifications::load(&path, Some("https://signoff.example.com")).unwrap_err();
        assert_eq!(err.path, format!("channels[0].{field}"), "{err}");
        assert!(err.message.contains(says), "{err}");
        assert!(!err.to_string().contains("sekrit"), "{err}");
    }
}

#[test]
fn no_channel_may_take_the_push_notifications_name() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notifications.toml");
    let channel = |name: &str| {
        format!("[[channels]]\nname = \"{name}\"\nkind = \"slack\"\nurl = \"https://hooks.example.com/x\"\n")
    };
    std::fs::write(&file, channel(PUSH_CHANNEL)).unwrap();
    let err = Notifications::load(&file, Some("https://signoff.example.com")).unwrap_err();
    assert!(err.to_string().contains("A2A push"), "{err}");
    std::fs::write(&file, channel("ops")).unwrap();
    assert!(Notifications::load(&file, Some("https://signoff.example.com")).is_ok());
}

#[test]
fn retries_double_with_jitter_up_to_the_cap_and_stop_after_retry_for() {
    let delivery = Delivery {
        retry_base: Duration::from_secs(5),
        retry_max: Duration::from_secs(3600),
        retry_for: Duration::from_secs(24 * 3600),
        ..Delivery::default()
    };
    let at = |attempt, jitter| match delivery.after_failure(attempt, 0, 0, jitter) {
        AttemptFailed::RetryAt(at) => at,
        AttemptFailed::GiveUp => -1,
    };
    assert_eq!(at(1, 1.0), 5_000);
    assert_eq!(at(1, 0.0), 2_500);
    assert_eq!(at(3, 1.0), 20_000);
    assert_eq!(at(30, 1.0), 3_600_000, "capped");
    let day = 24 * 3600 * 1000;
    assert_eq!(
        delivery.after_failure(30, 0, day - 1000, 1.0),
        AttemptFailed::GiveUp
    );
    // About a day of attempts with the defaults: a few dozen.
    let (mut now, mut attempts) = (0, 0);
    while let AttemptFailed::RetryAt(next) = delivery.after_failure(attempts + 1, 0, now, 1.0) {
        now = next;
        attempts += 1;
    }
    assert!((25..40).contains(&attempts), "{attempts}");
    assert!(now > 20 * 3600 * 1000, "{now}");
}

#[test]
fn a_web_push_channel_writes_one_row_per_person_and_its_wrong_keys_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let good = "name = \"devices\"\nkind = \"web_push\"\n[channels.web_push]\ndetail = \"calls\"\n";
    let loaded = load(dir.path(), good).unwrap();
    assert!(loaded.pushes_to_devices() && loaded.needs_audience() && loaded.needs_members());
    let push = loaded.web_push("devices").unwrap();
    assert_eq!(push.detail, web_push::Detail::Calls);
    let audience = Audience {
        groups: vec!["sre".into()],
        users: vec!["bob".into(), "alice".into()],
        members: vec![Member {
            id: "carol".into(),
            email: "carol@example.com".into(),
        }],
    };
    let rows = loaded.for_event(
        NotificationKind::Pending,
        "default/demo",
        &audience,
        alices_notice,
    );
    let people: Vec<Value> = rows
        .iter()
        .map(|row| row.payload[RECIPIENT].clone())
        .collect();
    assert_eq!(
        people,
        [
            serde_json::json!({"requester": "alice"}),
            serde_json::json!({"approver": "bob"}),
            serde_json::json!({"member": {"id": "carol", "email": "carol@example.com"}}),
        ]
    );
    let plain = load(dir.path(), "name = \"devices\"\nkind = \"web_push\"\n").unwrap();
    assert_eq!(
        plain.web_push("devices").unwrap().detail,
        web_push::Detail::Generic
    );
    for (broken, field, says) in [
        (
            format!("{good}url = \"https://x.example\"\n")
                .replace("[channels.web_push]\ndetail = \"calls\"\n", ""),
            "url",
            "takes no url",
        ),
        (
            good.replace("calls", "everything"),
            "web_push.detail",
            "unknown variant",
        ),
        (
            good.replace("kind = \"web_push\"", "kind = \"slack\""),
            "web_push",
            "only a channel of kind",
        ),
    ] {
        let err = load(dir.path(), &broken).unwrap_err();
        assert_eq!(err.path, format!("channels[0].{field}"), "{err}");
        assert!(err.message.contains(says), "{err}");
    }
}

#[test]
fn counted_approvals_go_to_a_slack_app_by_default_a_webhook_that_names_them_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), "xoxb-1").unwrap();
    std::fs::write(dir.path().join("secret"), "s3").unwrap();
    let slack_app = format!(
        "name = \"app\"\nkind = \"slack_app\"\n[channels.slack]\nbot_token_file = \"{0}/token\"\n\
         signing_secret_file = \"{0}/secret\"\nchannel = \"C0123ABCD\"\n",
        dir.path().display()
    );
    let webhook = "name = \"hook\"\nkind = \"slack\"\nurl = \"https://hooks.example.com/x\"\n";
    let loaded = load(dir.path(), &format!("{slack_app}[[channels]]\n{webhook}")).unwrap();
    let takers = |kind| {
        let rows = loaded.for_event(kind, "default/demo", &Audience::default(), |url| {
            alices_notice(url)
        });
        rows.into_iter().map(|row| row.channel).collect::<Vec<_>>()
    };
    assert_eq!(takers(NotificationKind::Counted), ["app"]);
    assert_eq!(takers(NotificationKind::Pending), ["app", "hook"]);

    let named = "events = [\"batch.counted\"]\n";
    let secret = dir.path().join("whsec");
    std::fs::write(&secret, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
    let signed = format!(
        "name = \"hook\"\nkind = \"webhook\"\nurl = \"https://hooks.example.com/x\"\n\
         secret_file = \"{}\"\n{named}",
        secret.display()
    );
    let loaded = load(dir.path(), &signed).unwrap();
    let rows = loaded.for_event(
        NotificationKind::Counted,
        "default/demo",
        &Audience::default(),
        alices_notice,
    );
    assert_eq!(rows.len(), 1);
    let err = load(dir.path(), &format!("{webhook}{named}")).unwrap_err();
    assert_eq!(err.path, "channels[0].events[0]", "{err}");
    assert!(err.message.contains("slack_app or a webhook"), "{err}");
}
