//! The load balancer the README documents, for real: Debian's nginx, run with `deploy/nginx.conf`
//! (the file the README quotes, checked here to be the same text) in front of three replicas of
//! the real binary on one PostgreSQL. Only the replicas' addresses, the listening port and the
//! certificate's paths are put in for the test's own; the rest of the file runs as written.
//!
//! Through nginx: agent cards name nginx's address, a chat streams each event as it comes (the
//! first one arrives while the task still works), a batch paused through one replica is decided
//! through another, a stream cut by a replica's SIGKILL is resumed by the client with every
//! event of the task's log, and a stopped replica is left out while the others answer.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use sqlx::Connection;

use crate::support::*;

const REPLICAS: usize = 3;
/// How long a stream may wait for its next event here: a takeover after a kill waits out the
/// dead replica's lease (10 s) first.
const STREAM_PATIENCE: Duration = Duration::from_secs(60);
/// At most how many events a counting task may have logged when its first event reaches the
/// client through nginx: the few before the first number, and room for a slow machine (25
/// events are more than a second of counting); buffering holds back some 50.
const UNBUFFERED_LEAD: i64 = 25;

/// The nginx binary: `SIGNOFF_TEST_NGINX`, else Debian's (scripts/test.sh installs it).
fn nginx_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("SIGNOFF_TEST_NGINX") {
        return PathBuf::from(path);
    }
    let debian = Path::new("/usr/sbin/nginx");
    assert!(
        debian.exists(),
        "no nginx at /usr/sbin/nginx: install Debian's nginx-light (scripts/test.sh does) or \
         set SIGNOFF_TEST_NGINX"
    );
    debian.to_owned()
}

fn repo_file(path: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|err| panic!("{}: {err}", file.display()))
}

/// `deploy/nginx.conf` with the test's addresses put in: the upstream's servers, the listening
/// port and the certificate's paths, each found exactly where the file has it.
fn configured(replicas: &[String], port: u16, tls: &Path) -> String {
    let text = repo_file("deploy/nginx.conf");
    let mut upstream_servers = 0;
    let mut listens = 0;
    let mut out = String::new();
    let mut in_upstream = false;
    for line in text.lines() {
        let trimmed = line.trim();
        let mut line = line.to_owned();
        if trimmed.starts_with("upstream signoff {") {
            in_upstream = true;
        } else if in_upstream && trimmed == "}" {
            in_upstream = false;
        } else if in_upstream && trimmed.starts_with("server ") {
            let address = replicas
                .get(upstream_servers)
                .expect("deploy/nginx.conf names as many replicas as the test runs");
            line = format!("    server {address};");
            upstream_servers += 1;
        } else if trimmed.starts_with("listen ") {
            assert_eq!(trimmed, "listen 443 ssl;", "deploy/nginx.conf's listen");
            line = format!("    listen 127.0.0.1:{port} ssl;");
            listens += 1;
        } else if let Some(rest) = trimmed.strip_prefix("ssl_certificate_key ") {
            assert!(rest.ends_with(';'));
            line = format!("    ssl_certificate_key {};", tls.join("key.pem").display());
        } else if let Some(rest) = trimmed.strip_prefix("ssl_certificate ") {
            assert!(rest.ends_with(';'));
            line = format!("    ssl_certificate {};", tls.join("cert.pem").display());
        }
        out.push_str(&line);
        out.push('\n');
    }
    assert_eq!(
        upstream_servers,
        replicas.len(),
        "upstream servers in the file"
    );
    assert_eq!(listens, 1, "listen lines in the file");
    out
}

/// The README's nginx block must be deploy/nginx.conf, line for line.
fn assert_readme_quotes_the_file() {
    let readme = repo_file("README.md");
    let file = repo_file("deploy/nginx.conf");
    let start = readme
        .find("```nginx\n")
        .expect("the README shows the nginx configuration")
        + "```nginx\n".len();
    let block = &readme[start..];
    let block = &block[..block.find("```").unwrap()];
    let unindented: String = block
        .lines()
        .map(|line| line.strip_prefix("  ").unwrap_or(line))
        .map(|line| format!("{line}\n"))
        .collect();
    assert_eq!(
        unindented.trim_end(),
        file.trim_end(),
        "the README's nginx block differs from deploy/nginx.conf"
    );
}

/// A self-signed certificate for 127.0.0.1 (openssl's command line): its PEM.
fn make_certificate(dir: &Path) -> Vec<u8> {
    let status = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-addext",
            "basicConstraints=critical,CA:FALSE",
            "-addext",
            "extendedKeyUsage=serverAuth",
            "-keyout",
        ])
        .arg(dir.join("key.pem"))
        .arg("-out")
        .arg(dir.join("cert.pem"))
        .stderr(Stdio::null())
        .status()
        .expect("openssl makes the test's certificate");
    assert!(status.success(), "openssl req failed");
    std::fs::read(dir.join("cert.pem")).unwrap()
}

/// nginx as one foreground process (no master, no daemon) with everything it writes in `dir`.
struct Nginx {
    child: Child,
    dir: PathBuf,
    /// `https://127.0.0.1:PORT`
    base: String,
}

impl Nginx {
    fn start(dir: &Path, replicas: &[String]) -> Nginx {
        let port = free_port();
        let base = format!("https://127.0.0.1:{port}");
        std::fs::write(dir.join("signoff.conf"), configured(replicas, port, dir)).unwrap();
        let d = dir.display();
        // The test's own frame around the file: paths in the temp folder, one process, and an
        // access log that says which replica answered each request.
        let main = format!(
            "daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/error.log info;\n\
             events {{ worker_connections 512; }}\n\
             http {{\n\
               log_format upstreams '$request_method $request_uri $status $upstream_addr';\n\
               access_log {d}/access.log upstreams;\n\
               client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;\n\
               fastcgi_temp_path {d}/fastcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n\
               include {d}/signoff.conf;\n\
             }}\n"
        );
        std::fs::write(dir.join("nginx.conf"), main).unwrap();
        let child = Command::new(nginx_binary())
            .arg("-p")
            .arg(dir)
            .arg("-e")
            .arg(dir.join("error.log"))
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("nginx starts");
        Nginx {
            child,
            dir: dir.to_owned(),
            base,
        }
    }

    /// The replica that answered each of the `count` requests for `path` (waiting for nginx to
    /// log them: it writes a line once it has finished a request, which may be just after the
    /// client read the end).
    async fn upstreams(&self, method: &str, path: &str, count: usize) -> Vec<String> {
        eventually(
            &format!("{count} {method} {path} in nginx's access log"),
            || async {
                let logged = self.upstreams_of(method, path);
                (logged.len() >= count).then_some(logged)
            },
        )
        .await
    }

    /// The replica (`127.0.0.1:PORT`) that answered each logged request for `path`, in order:
    /// the last address nginx tried.
    fn upstreams_of(&self, method: &str, path: &str) -> Vec<String> {
        let log = std::fs::read_to_string(self.dir.join("access.log")).unwrap_or_default();
        log.lines()
            .filter_map(|line| {
                let mut fields = line.splitn(4, ' ');
                let (m, p, _status, upstream) = (
                    fields.next()?,
                    fields.next()?,
                    fields.next()?,
                    fields.next()?,
                );
                (m == method && p == path)
                    .then(|| upstream.rsplit(", ").next().unwrap_or(upstream).to_owned())
            })
            .collect()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Three replicas on one fresh PostgreSQL database behind nginx, and a client that trusts the
/// test's certificate.
struct Proxied {
    replicas: Vec<Option<Binary>>,
    addresses: Vec<String>,
    nginx: Nginx,
    client: reqwest::Client,
    database: String,
    data: tempfile::TempDir,
    _nginx_dir: tempfile::TempDir,
}

impl Proxied {
    async fn start() -> Proxied {
        assert_readme_quotes_the_file();
        let database = create_database().await;
        let data = tempfile::tempdir().unwrap();
        let mut replicas = Vec::new();
        let mut addresses = Vec::new();
        for _ in 0..REPLICAS {
            let server = start_binary(
                data.path(),
                &["--trust-proxy"],
                &[("SIGNOFF_DATABASE_URL", &database)],
            )
            .await;
            addresses.push(server.base.trim_start_matches("http://").to_owned());
            replicas.push(Some(server));
        }
        let nginx_dir = tempfile::tempdir().unwrap();
        let certificate = make_certificate(nginx_dir.path());
        let nginx = Nginx::start(nginx_dir.path(), &addresses);
        let client = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&certificate).unwrap())
            .build()
            .unwrap();
        let proxied = Proxied {
            replicas,
            addresses,
            nginx,
            client,
            database,
            data,
            _nginx_dir: nginx_dir,
        };
        // nginx answers once it listens; what it answered last says what went wrong if not.
        let mut last = String::new();
        for _ in 0..300 {
            match proxied.client.get(proxied.url("/healthz")).send().await {
                Ok(response) if response.status() == 200 => return proxied,
                Ok(response) => {
                    last = format!("{}: {}", response.status(), response.text().await.unwrap())
                }
                Err(err) => last = format!("{err:?}"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let log = std::fs::read_to_string(proxied.nginx.dir.join("error.log")).unwrap_or_default();
        panic!("nginx did not answer /healthz with 200: {last}\nits error log:\n{log}");
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.nginx.base)
    }

    /// A JSON-RPC call to the demo agent through nginx, answered as a stream.
    async fn stream(&self, body: Value) -> ProxiedStream {
        let response = self
            .client
            .post(self.url(DEMO))
            .header("accept", "text/event-stream")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        ProxiedStream {
            inner: SseStreamOrCut::new(response),
        }
    }

    async fn rpc(&self, body: Value) -> Value {
        let response = self.client.post(self.url(DEMO)).json(&body).send().await;
        response.unwrap().json().await.unwrap()
    }

    async fn state(&self, task: &str) -> String {
        let got = self.rpc(request("tasks/get", json!({"id": task}))).await;
        got["result"]["status"]["state"]
            .as_str()
            .unwrap_or_else(|| panic!("tasks/get: {got}"))
            .to_owned()
    }

    async fn wait_for_state(&self, task: &str, state: &str) {
        eventually(&format!("task {task} to be {state}"), || async {
            (self.state(task).await == state).then_some(())
        })
        .await;
    }

    /// The replica with an open A2A stream, by each one's own `/metrics`.
    async fn replica_streaming(&self) -> usize {
        eventually("a replica to report the open stream", || async {
            for (index, replica) in self.replicas.iter().enumerate() {
                let Some(replica) = replica else { continue };
                let text = reqwest::get(format!("{}/metrics", replica.base))
                    .await
                    .ok()?
                    .text()
                    .await
                    .ok()?;
                let scrape = parse_metrics(&text).unwrap();
                if scrape.value("signoff_open_streams", &[]) == Some(1.0) {
                    return Some(index);
                }
            }
            None
        })
        .await
    }

    /// A task's stored log, as the replicas serve it.
    async fn stored_log(&self, task: &str) -> Vec<Value> {
        let mut db = sqlx::PgConnection::connect(&self.database).await.unwrap();
        let texts: Vec<String> =
            sqlx::query_scalar("SELECT event FROM task_events WHERE task_id = $1 ORDER BY seq")
                .bind(task)
                .fetch_all(&mut db)
                .await
                .unwrap();
        texts
            .iter()
            .map(|t| serde_json::from_str(t).unwrap())
            .collect()
    }
}

/// An SSE answer through nginx, read as it comes; a cut connection ends it as `cut`.
struct ProxiedStream {
    inner: SseStreamOrCut,
}

impl ProxiedStream {
    /// The next event's `result`, or `None` at the end (or the cut).
    async fn next(&mut self) -> Option<Value> {
        self.inner.next().await.map(|event| {
            assert!(event.get("error").is_none(), "an error event: {event}");
            event["result"].clone()
        })
    }

    async fn rest(&mut self) -> Vec<Value> {
        let mut events = Vec::new();
        while let Some(event) = self.next().await {
            events.push(event);
        }
        events
    }
}

/// Like the support's `SseStream`, but a broken connection (a replica killed under nginx) ends
/// the stream and is remembered, instead of failing the test.
struct SseStreamOrCut {
    body: std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    parser: signoff_protocol::sse::SseParser,
    ready: std::collections::VecDeque<Value>,
    ended: bool,
    cut: bool,
}

impl SseStreamOrCut {
    fn new(response: reqwest::Response) -> SseStreamOrCut {
        SseStreamOrCut {
            body: Box::pin(response.bytes_stream()),
            parser: signoff_protocol::sse::SseParser::new(1 << 24),
            ready: Default::default(),
            ended: false,
            cut: false,
        }
    }

    async fn next(&mut self) -> Option<Value> {
        use futures_util::StreamExt;
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            if self.ended {
                return None;
            }
            let chunk = tokio::time::timeout(STREAM_PATIENCE, self.body.next())
                .await
                .expect("the next event through nginx");
            let frames = match chunk {
                Some(Ok(chunk)) => self.parser.feed(&chunk).unwrap(),
                Some(Err(_)) => {
                    self.ended = true;
                    self.cut = true;
                    Vec::new()
                }
                None => {
                    self.ended = true;
                    self.parser.finish().unwrap_or_default()
                }
            };
            for frame in frames {
                if let signoff_protocol::sse::SseFrame::Event(event) = frame {
                    self.ready
                        .push_back(serde_json::from_str(&event.data).unwrap());
                }
            }
        }
    }
}

fn is_final(result: &Value) -> bool {
    result["final"] == true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_streams_each_event_as_it_comes_and_cards_name_its_address() {
    let proxied = Proxied::start().await;

    // --trust-proxy and the forwarded headers: the card names nginx's address, port included.
    let card: Value = proxied
        .client
        .get(proxied.url(&format!("{DEMO}/.well-known/agent-card.json")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["url"], proxied.url(DEMO), "the card: {card}");

    // A long count (200 numbers, one every 50 ms): when its first event comes through nginx,
    // the task has only just begun. Buffered, nginx holds the events back until its buffers
    // fill (about 16 KB here, some 50 numbers) or the stream ends.
    let mut db = sqlx::PgConnection::connect(&proxied.database)
        .await
        .unwrap();
    let message = message_v03("count to 200", None, None);
    let mut stream = proxied
        .stream(message_request("message/stream", message))
        .await;
    let first = stream.next().await.expect("a first event");
    let task = task_id(std::slice::from_ref(&first));
    let logged: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM task_events WHERE task_id = $1")
        .bind(&task)
        .fetch_one(&mut db)
        .await
        .unwrap();
    assert!(
        logged < UNBUFFERED_LEAD,
        "the task had logged {logged} events when its first came through nginx"
    );
    let mut numbers = 0;
    while numbers < 3 {
        let event = stream.next().await.expect("the count goes on");
        numbers += usize::from(event["kind"] == "artifact-update");
    }
    // Stopped here, the stream ends at once with the cancel: it was passed on as it came.
    let canceled = proxied
        .rpc(request("tasks/cancel", json!({"id": task})))
        .await;
    assert_eq!(
        canceled["result"]["status"]["state"], "canceled",
        "{canceled}"
    );
    let rest = stream.rest().await;
    assert!(!stream.inner.cut, "the stream was cut");
    let last = rest.last().expect("the stream ends with the cancel");
    assert!(is_final(last), "the stream ends final: {last}");
    assert_eq!(last["status"]["state"], "canceled", "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_paused_through_one_replica_is_decided_through_another() {
    let proxied = Proxied::start().await;
    let message = message_v03("write nginx.txt: through nginx", None, None);
    let events = proxied
        .stream(message_request("message/stream", message))
        .await
        .rest()
        .await;
    let task = task_id(&events);
    assert_eq!(states(&events).last().unwrap(), "input-required");
    let paused_on = proxied.nginx.upstreams("POST", DEMO, 1).await;

    let decided = proxied
        .client
        .post(proxied.url(&format!("/api/approvals/{task}")))
        .json(&json!({"decision_type": "approve"}))
        .send()
        .await
        .unwrap();
    assert_eq!(decided.status(), 200, "{}", decided.text().await.unwrap());
    let decided_on = proxied
        .nginx
        .upstreams("POST", &format!("/api/approvals/{task}"), 1)
        .await;
    assert_eq!(paused_on.len(), 1, "{paused_on:?}");
    assert_eq!(decided_on.len(), 1, "{decided_on:?}");
    assert_ne!(
        paused_on[0], decided_on[0],
        "nginx sent the decision to the replica that paused the batch"
    );
    assert!(proxied.addresses.contains(&decided_on[0]));
    proxied.wait_for_state(&task, "completed").await;
    let written = std::fs::read_to_string(proxied.data.path().join("sandbox/nginx.txt"));
    assert_eq!(written.unwrap(), "through nginx");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_by_a_killed_replica_is_resumed_through_nginx_with_nothing_lost() {
    let mut proxied = Proxied::start().await;
    let message = message_v03("count to 100", None, None);
    let mut stream = proxied
        .stream(message_request("message/stream", message))
        .await;
    let mut before = vec![stream.next().await.expect("a first event")];
    let task = task_id(&before);
    // Mid-stream: a few numbers are through.
    while before
        .iter()
        .filter(|e| e["kind"] == "artifact-update")
        .count()
        < 3
    {
        before.push(stream.next().await.expect("the count goes on"));
    }
    let streaming = proxied.replica_streaming().await;
    proxied.replicas[streaming].take().unwrap().kill();
    before.extend(stream.rest().await);
    assert!(stream.inner.cut, "the killed replica's stream is cut");
    assert!(!before.iter().any(is_final), "cut before its end");

    // The client resubscribes through nginx, which sends it to a live replica; that replica
    // takes the task over once the dead one's lease lapses.
    let mut resumed = proxied
        .stream(request("tasks/resubscribe", json!({"id": task})))
        .await;
    let snapshot = resumed.next().await.expect("the task, first");
    assert_eq!(snapshot["id"], task, "{snapshot}");
    let after = resumed.rest().await;
    assert!(!resumed.inner.cut, "the resumed stream was cut");
    assert!(
        after.last().is_some_and(is_final),
        "the resumed stream ends final"
    );
    assert_eq!(proxied.state(&task).await, "completed");

    // Nothing lost: what came before the cut is the log's start, and what came after the
    // resubscribe's snapshot is the rest of the log up to its final event.
    let log = proxied.stored_log(&task).await;
    assert_eq!(before, log[..before.len()], "the start of the log");
    assert_eq!(after, log[log.len() - after.len()..], "the end of the log");
    // The message's stream and the resubscribe.
    let resumed_on = proxied.nginx.upstreams("POST", DEMO, 2).await[1].clone();
    assert_ne!(resumed_on, proxied.addresses[streaming]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_replica_is_left_out_while_the_others_answer() {
    let mut proxied = Proxied::start().await;
    let stopped = 0;
    let status = proxied.replicas[stopped].take().unwrap().terminate().await;
    assert!(status.success(), "a graceful stop: {status}");
    let direct = reqwest::get(format!("http://{}/readyz", proxied.addresses[stopped])).await;
    assert!(direct.is_err(), "the stopped replica still answers");

    for round in 0..2 * REPLICAS {
        let ready = proxied
            .client
            .get(proxied.url("/readyz"))
            .send()
            .await
            .unwrap();
        assert_eq!(ready.status(), 200, "readyz through nginx, round {round}");
        let answer = proxied
            .rpc(message_request(
                "message/send",
                message_v03("list files", None, None),
            ))
            .await;
        assert_eq!(
            answer["result"]["status"]["state"], "completed",
            "round {round}: {answer}"
        );
    }
    for upstream in proxied
        .nginx
        .upstreams("GET", "/readyz", 2 * REPLICAS)
        .await
    {
        assert_ne!(
            upstream, proxied.addresses[stopped],
            "readyz answered by the stopped one"
        );
    }
}
