//! How a sign-in and a JWT name someone: an email only when the provider verified it, and
//! `user:EMAIL` approvers matched against that alone (never a subject shaped like an address);
//! a JWT of another kind, with a `crit` header, issued in the future or living too long is
//! refused; a sign-in finishes only in the browser that started it, and starting one writes
//! nothing to the store.

use super::*;

/// The demo agent, whose writes carol (by her address) approves.
const CAROL_APPROVES: &str = "[[agents]]\nname = \"demo\"\n\
    approvers = [\"user:carol@example.com\"]\n\
    [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";

/// A JWT for this server's API signed with the provider's own key: `claims` over a subject,
/// issuer, audience and ten minutes of life (a `null` leaves a claim out); `header` its
/// header.
fn provider_signed(provider: &Provider, header: &Header, claims: Value) -> String {
    let key = EncodingKey::from_rsa_pem(&provider.pem("provider.pem")).unwrap();
    let mut all = json!({"iss": provider.issuer, "aud": "signoff-api", "sub": "mallory",
                         "iat": now(), "exp": now() + 600});
    for (name, value) in claims.as_object().unwrap() {
        if value.is_null() {
            all.as_object_mut().unwrap().remove(name);
        } else {
            all[name] = value.clone();
        }
    }
    jsonwebtoken::encode(header, &all, &key).unwrap()
}

fn provider_header() -> Header {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("provider-key-1".into());
    header
}

#[tokio::test]
async fn an_unverified_email_approves_as_nobody_and_a_verified_one_as_its_owner() {
    let scratch = tempfile::tempdir().unwrap();
    let agents = write_agents(scratch.path(), CAROL_APPROVES);
    let (provider, apps) = start_with(1, &[], move |config| {
        config.agents_file = Some(agents.clone());
    })
    .await;
    let app = &apps[0];
    // dave's provider says his address is carol's, unverified: he signs in without an email.
    let (daves, daves_jar) = browser();
    sign_in(&daves, &app.base, "/", "dave").await;
    let (status, me) = me_with_cookie(&app.base, &session_cookie(&daves_jar, &app.base)).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["user"], "dave");
    assert_eq!(me.get("email"), None, "{me}");
    // Alice asks for a write that only carol's address may approve.
    let (browser, jar) = browser();
    sign_in(&browser, &app.base, "/", "alice").await;
    let cookie = session_cookie(&jar, &app.base);
    let message = a2a::message_request(
        "message/send",
        a2a::message_v03("write c.txt: hi", None, None),
    );
    let answer: Value = reqwest::Client::new()
        .post(app.url(DEMO))
        .header("cookie", &cookie)
        .header("sec-fetch-site", "same-origin")
        .json(&message)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let task = answer["result"]["id"].as_str().expect("a task").to_owned();
    let decide = |token: String| {
        let request = reqwest::Client::new()
            .post(app.url(&format!("/api/approvals/{task}")))
            .bearer_auth(token)
            .json(&json!({"decision_type": "approve"}));
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };
    let header = provider_header();
    let unverified = [
        json!({"email": "carol@example.com", "email_verified": false}),
        json!({"email": "carol@example.com"}),
        json!({"email": "carol@example.com", "email_verified": "false"}),
        // A subject shaped like carol's address is not carol.
        json!({"sub": "carol@example.com"}),
    ];
    for claims in unverified {
        let token = provider_signed(&provider, &header, claims.clone());
        let (status, body) = eventually("alice's batch to wait", || {
            let decided = decide(token.clone());
            async move {
                let (status, body) = decided.await;
                (status != 409).then_some((status, body))
            }
        })
        .await;
        // Refused as anyone not eligible is (or not even shown the task).
        assert!([403, 404].contains(&status), "{claims}: {status} {body}");
    }
    assert!(!app.sandbox().join("c.txt").exists());
    // Verified, the address is carol's, whatever the subject.
    let verified = json!({"sub": "c-7", "email": "carol@example.com", "email_verified": true});
    let (status, body) = decide(provider_signed(&provider, &header, verified)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["decision"]["decidedBy"], "c-7", "{body}");
}

#[tokio::test]
async fn jwts_of_another_kind_from_the_future_or_too_long_lived_are_refused() {
    let (provider, apps) = start(1).await;
    let app = &apps[0];
    let typed = |typ: &str| {
        let mut header = provider_header();
        header.typ = Some(typ.to_owned());
        header
    };
    let mut critical = provider_header();
    critical.crit = Some(vec!["exp".to_owned()]);
    let day = 24 * 60 * 60;
    let hostile = [
        ("crit", provider_signed(&provider, &critical, json!({}))),
        (
            "logout token",
            provider_signed(&provider, &typed("logout+jwt"), json!({})),
        ),
        (
            "security event",
            provider_signed(&provider, &typed("secevent+jwt"), json!({})),
        ),
        (
            "issued in the future",
            provider_signed(
                &provider,
                &provider_header(),
                json!({"iat": now() + 3600, "exp": now() + 4000}),
            ),
        ),
        (
            "valid for ten days",
            provider_signed(
                &provider,
                &provider_header(),
                json!({"exp": now() + 10 * day}),
            ),
        ),
        (
            "no iat, valid for ten days",
            provider_signed(
                &provider,
                &provider_header(),
                json!({"iat": null, "exp": now() + 10 * day}),
            ),
        ),
        (
            "a padded subject",
            provider_signed(&provider, &provider_header(), json!({"sub": "alice\u{a0}"})),
        ),
        (
            "a padded group",
            provider_signed(&provider, &provider_header(), json!({"groups": [" sre"]})),
        ),
    ];
    let message = a2a::message_request("message/send", a2a::message_v03("rm -rf", None, None));
    for (case, token) in &hostile {
        let (status, body) = app.post_json_as(DEMO, Some(token), &message).await;
        assert_eq!(status, 401, "{case}: {body}");
    }
    // The same, as plain JWTs and access tokens living a day, are taken.
    for typ in ["JWT", "at+jwt", "application/at+jwt"] {
        let token = provider_signed(&provider, &typed(typ), json!({"exp": now() + day}));
        let (status, body) = app.get_as("/api/sessions", Some(&token)).await;
        assert_eq!(status, 200, "{typ}: {body}");
        assert_eq!(body["sessions"], json!([]), "nothing of mallory's ran");
    }
}

#[tokio::test]
async fn a_token_lifetime_longer_than_the_flag_allows_is_refused() {
    let (provider, apps) = start_with(1, &[], |config| {
        config.oidc_max_token_lifetime = Duration::from_secs(60 * 60);
    })
    .await;
    let app = &apps[0];
    let hour = provider_signed(&provider, &provider_header(), json!({"exp": now() + 3000}));
    assert_eq!(app.get_as("/api/me", Some(&hour)).await.0, 200);
    let longer = provider_signed(&provider, &provider_header(), json!({"exp": now() + 7200}));
    assert_eq!(app.get_as("/api/me", Some(&longer)).await.0, 401);
}

/// A browser that follows every redirect but the provider's back to a Signoff callback: it
/// stops there, as an attacker does to hand the sign-in answer to someone else.
fn stopping_browser() -> reqwest::Client {
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        if attempt.url().path() == "/auth/callback" {
            attempt.stop()
        } else {
            attempt.follow()
        }
    });
    reqwest::Client::builder()
        .cookie_provider(Arc::new(reqwest::cookie::Jar::default()))
        .redirect(policy)
        .build()
        .unwrap()
}

/// Signs in at the provider as `who` from `browser`, starting at `base`'s `/auth/login`: the
/// callback URL the provider sends the browser to (not opened).
async fn sign_in_answer(browser: &reqwest::Client, base: &str, who: &str) -> String {
    let page = browser
        .get(format!("{base}/auth/login?return_to=%2Fapprovals"))
        .send()
        .await
        .unwrap();
    let at = page.url().clone();
    let login_form = page.text().await.unwrap();
    let consent = browser
        .post(at.join(&form_action(&login_form)).unwrap())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_body(&login_form, &format!("login={who}&password=any")))
        .send()
        .await
        .unwrap();
    let at = consent.url().clone();
    let consent_form = consent.text().await.unwrap();
    let back = browser
        .post(at.join(&form_action(&consent_form)).unwrap())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_body(&consent_form, ""))
        .send()
        .await
        .unwrap();
    assert!(back.status().is_redirection(), "{}", back.status());
    let location = back.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        location.starts_with(&format!("{base}/auth/callback?")),
        "{location}"
    );
    location
}

#[tokio::test]
async fn a_sign_in_answer_works_only_in_the_browser_that_started_it() {
    let (_provider, apps) = start(1).await;
    let app = &apps[0];
    // Anonymous requests to start a sign-in write nothing.
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for _ in 0..20 {
        let response = client.get(app.url("/auth/login")).send().await.unwrap();
        assert_eq!(response.status(), 303);
        let cookie = response.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(cookie.starts_with("signoff_login="), "{cookie}");
        for attribute in ["HttpOnly", "SameSite=Lax", "Max-Age=600", "Path=/"] {
            assert!(cookie.contains(attribute), "{attribute} in {cookie}");
        }
    }
    let rows = "SELECT COUNT(*) FROM login_attempts WHERE state_sha256 <> ?1";
    assert_eq!(sql_count(app.data_dir.path(), rows, "x").await, 0);

    // The attacker signs in as bob and hands the answer to alice's browser, which holds no
    // sign-in of its own, then to one that started its own.
    let attacker = stopping_browser();
    let answer = sign_in_answer(&attacker, &app.base, "bob").await;
    let (victim, jar) = browser();
    for started_its_own in [false, true] {
        if started_its_own {
            victim.get(app.url("/auth/login")).send().await.unwrap();
        }
        let page = victim.get(&answer).send().await.unwrap();
        assert_eq!(page.status(), 400);
        let text = page.text().await.unwrap();
        assert!(text.contains("not started in this browser"), "{text}");
        use reqwest::cookie::CookieStore;
        let cookies = jar
            .cookies(&app.base.parse().unwrap())
            .map(|value| value.to_str().unwrap().to_owned())
            .unwrap_or_default();
        assert!(!cookies.contains("signoff_session="), "{cookies}");
    }
    // In the browser that started it, the same answer signs bob in.
    let landed = attacker.get(&answer).send().await.unwrap();
    assert_eq!(landed.url().as_str(), app.url("/approvals"));
    let (status, me) = attacker
        .get(app.url("/api/me"))
        .send()
        .await
        .map(|response| (response.status().as_u16(), response))
        .unwrap();
    let me: Value = me.json().await.unwrap();
    assert_eq!((status, me["user"].clone()), (200, json!("bob")), "{me}");
}
