//! The replicas under test and the requests made of them: each request goes to one replica,
//! picked at random among the live ones; an error is expected only from a replica that was
//! killed, and any other is recorded as unexpected.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use serde_json::{json, Value};
use signoff_protocol::sse::{SseFrame, SseParser};

use crate::support::*;

/// A small deterministic generator (splitmix64): each chat picks its replicas from its own
/// seed, so a failing run can be replayed.
pub struct Picker(u64);

impl Picker {
    pub fn new(seed: u64) -> Picker {
        Picker(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    pub fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// The rest of a followed stream: its events after the first, or `Err` if it was cut.
pub type Rest = tokio::task::JoinHandle<Result<Vec<Value>, ()>>;

/// How long one request may take, a takeover after a kill included.
const REQUEST_PATIENCE: Duration = Duration::from_secs(90);

struct Replica {
    /// `None` while it is down.
    server: Option<Binary>,
    base: String,
}

#[derive(Default)]
struct Errors {
    /// Bases of replicas that were killed: their connections may fail.
    killed: HashSet<String>,
    expected: usize,
    unexpected: Vec<String>,
}

/// What the cluster saw go wrong.
pub struct Report {
    pub expected: usize,
    pub unexpected: Vec<String>,
}

pub struct Cluster {
    data_dir: PathBuf,
    database: String,
    replicas: Mutex<Vec<Replica>>,
    shared: Arc<Shared>,
}

/// What requests spawned on their own need.
struct Shared {
    client: reqwest::Client,
    errors: Mutex<Errors>,
}

impl Cluster {
    /// `count` replicas of the real binary on `database`, sharing `data_dir` (the sandbox the
    /// demo agent's file tools work in is a shared volume, as in production).
    pub async fn start(count: usize, data_dir: &Path, database: &str) -> Cluster {
        let mut replicas = Vec::new();
        for _ in 0..count {
            let server = start_binary(data_dir, &[], &[("SIGNOFF_DATABASE_URL", database)]).await;
            replicas.push(Replica {
                base: server.base.clone(),
                server: Some(server),
            });
        }
        Cluster {
            data_dir: data_dir.to_owned(),
            database: database.to_owned(),
            replicas: Mutex::new(replicas),
            shared: Arc::new(Shared {
                client: reqwest::Client::new(),
                errors: Mutex::new(Errors::default()),
            }),
        }
    }

    /// SIGKILLs replica `index`.
    pub fn kill(&self, index: usize) {
        let mut replicas = self.replicas.lock().unwrap();
        let replica = &mut replicas[index];
        self.shared
            .errors
            .lock()
            .unwrap()
            .killed
            .insert(replica.base.clone());
        replica
            .server
            .take()
            .expect("the replica is running")
            .kill();
    }

    /// Starts replica `index` again (on a new port).
    pub async fn restart(&self, index: usize) {
        let server = start_binary(
            &self.data_dir,
            &[],
            &[("SIGNOFF_DATABASE_URL", &self.database)],
        )
        .await;
        let mut replicas = self.replicas.lock().unwrap();
        replicas[index] = Replica {
            base: server.base.clone(),
            server: Some(server),
        };
    }

    pub fn report(&self) -> Report {
        let errors = self.shared.errors.lock().unwrap();
        Report {
            expected: errors.expected,
            unexpected: errors.unexpected.clone(),
        }
    }

    /// The base URL of a live replica, picked at random.
    pub fn pick(&self, picker: &mut Picker) -> String {
        let replicas = self.replicas.lock().unwrap();
        let live: Vec<&Replica> = replicas.iter().filter(|r| r.server.is_some()).collect();
        live[picker.below(live.len())].base.clone()
    }

    /// A JSON-RPC request to the demo agent on `base` answered as a stream; its events (error
    /// events included), or `Err` when the connection failed (recorded).
    pub async fn stream(&self, base: &str, body: Value) -> Result<Vec<Value>, ()> {
        let request = self
            .shared
            .client
            .post(format!("{base}{DEMO}"))
            .header("accept", "text/event-stream")
            .json(&body)
            .send();
        let answer = async {
            let response = request.await?;
            let status = response.status();
            let bytes = response.bytes().await?;
            Ok::<_, reqwest::Error>((status, bytes))
        };
        match tokio::time::timeout(REQUEST_PATIENCE, answer).await {
            Err(_) => panic!("a request to {base} hung: {body}"),
            Ok(Err(err)) => {
                self.shared.failed(base, format!("{err}"));
                Err(())
            }
            Ok(Ok((status, bytes))) if status != 200 => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                self.shared.failed(base, format!("HTTP {status}: {text}"));
                Err(())
            }
            Ok(Ok((_, bytes))) => Ok(sse_payloads(&bytes)),
        }
    }

    /// Opens a stream on `base` and waits for its first event (for a resubscribe, the task):
    /// from then on the replica follows the task. Returns that event, and a task that collects
    /// the rest; `Err` when the connection failed (recorded).
    pub async fn follow(&self, base: &str, body: Value) -> Result<(Value, Rest), ()> {
        let shared = self.shared.clone();
        let base = base.to_owned();
        let sent = shared
            .client
            .post(format!("{base}{DEMO}"))
            .header("accept", "text/event-stream")
            .json(&body)
            .send();
        let response = match tokio::time::timeout(REQUEST_PATIENCE, sent).await {
            Err(_) => panic!("a request to {base} hung: {body}"),
            Ok(Err(err)) => {
                shared.failed(&base, format!("{err}"));
                return Err(());
            }
            Ok(Ok(response)) => response,
        };
        let mut stream = EventStream {
            chunks: Box::pin(response.bytes_stream()),
            parser: SseParser::new(1 << 24),
            events: Vec::new(),
        };
        if let Err(err) = stream.read(true).await {
            shared.failed(&base, err);
            return Err(());
        }
        if stream.events.is_empty() {
            shared.failed(&base, "the stream ended without an event".into());
            return Err(());
        }
        let first = stream.events.remove(0);
        let rest = tokio::spawn(async move {
            match stream.read(false).await {
                Ok(()) => Ok(stream.events),
                Err(err) => {
                    shared.failed(&base, err);
                    Err(())
                }
            }
        });
        Ok((first, rest))
    }

    /// A non-streaming JSON-RPC call on `base`; its answer, or `Err` (recorded).
    async fn rpc(&self, base: &str, body: Value) -> Result<Value, ()> {
        let sent = self
            .shared
            .client
            .post(format!("{base}{DEMO}"))
            .json(&body)
            .send();
        let answer = async { sent.await?.json::<Value>().await };
        match tokio::time::timeout(REQUEST_PATIENCE, answer).await {
            Err(_) => panic!("a request to {base} hung: {body}"),
            Ok(Err(err)) => {
                self.shared.failed(base, format!("{err}"));
                Err(())
            }
            Ok(Ok(value)) => Ok(value),
        }
    }

    /// Decides `task` over REST on `base`; the answer's status, or `Err` when the connection
    /// failed (recorded).
    pub async fn decide_rest(&self, base: &str, task: &str, data: Value) -> Result<u16, ()> {
        let sent = self
            .shared
            .client
            .post(format!("{base}/api/approvals/{task}"))
            .json(&data)
            .send();
        let answer = async {
            let response = sent.await?;
            let status = response.status().as_u16();
            response.bytes().await?;
            Ok::<_, reqwest::Error>(status)
        };
        match tokio::time::timeout(REQUEST_PATIENCE, answer).await {
            Err(_) => panic!("a decision to {base} hung"),
            Ok(Err(err)) => {
                self.shared.failed(base, format!("{err}"));
                Err(())
            }
            Ok(Ok(status)) => Ok(status),
        }
    }

    /// Cancels `task` on `base`; the JSON-RPC answer, or `Err` (recorded).
    pub async fn cancel(&self, base: &str, task: &str) -> Result<Value, ()> {
        self.rpc(base, request("tasks/cancel", json!({"id": task})))
            .await
    }

    /// The task's state as a live replica reports it (asked again after a failure).
    pub async fn state(&self, picker: &mut Picker, task: &str) -> String {
        loop {
            let base = self.pick(picker);
            if let Ok(got) = self
                .rpc(&base, request("tasks/get", json!({"id": task})))
                .await
            {
                return got["result"]["status"]["state"]
                    .as_str()
                    .unwrap_or_else(|| panic!("tasks/get: {got}"))
                    .to_owned();
            }
        }
    }

    /// Waits until the task's state passes `done` (asking replicas at random).
    pub async fn wait_for(&self, picker: &mut Picker, task: &str, done: impl Fn(&str) -> bool) {
        let deadline = tokio::time::Instant::now() + REQUEST_PATIENCE;
        loop {
            let state = self.state(picker, task).await;
            if done(&state) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "task {task} stayed {state}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Task `nth` of a chat (0 for its first message's), if the message was taken; for a
    /// message whose answer was cut.
    pub async fn task_of_context(
        &self,
        picker: &mut Picker,
        context: &str,
        nth: usize,
    ) -> Option<String> {
        loop {
            let base = self.pick(picker);
            let got = self
                .shared
                .client
                .get(format!("{base}/api/sessions/{context}"))
                .send()
                .await;
            let response = match got {
                Ok(response) => response,
                Err(err) => {
                    self.shared.failed(&base, format!("{err}"));
                    continue;
                }
            };
            if response.status() == 404 {
                return None;
            }
            let body: Value = response.json().await.unwrap();
            return body["tasks"][nth]["id"].as_str().map(str::to_owned);
        }
    }
}

/// An SSE answer read as it comes.
struct EventStream {
    chunks: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
    parser: SseParser,
    events: Vec<Value>,
}

impl EventStream {
    /// Reads events until the first one (`until_first`) or the end.
    async fn read(&mut self, until_first: bool) -> Result<(), String> {
        loop {
            if until_first && !self.events.is_empty() {
                return Ok(());
            }
            match tokio::time::timeout(REQUEST_PATIENCE, self.chunks.next()).await {
                Err(_) => panic!("a stream hung"),
                Ok(None) => return Ok(()),
                Ok(Some(Err(err))) => return Err(format!("{err}")),
                Ok(Some(Ok(chunk))) => {
                    for frame in self.parser.feed(&chunk).unwrap() {
                        if let SseFrame::Event(event) = frame {
                            self.events.push(serde_json::from_str(&event.data).unwrap());
                        }
                    }
                }
            }
        }
    }
}

impl Shared {
    fn failed(&self, base: &str, what: String) {
        let mut errors = self.errors.lock().unwrap();
        if errors.killed.contains(base) {
            errors.expected += 1;
        } else {
            errors.unexpected.push(format!("{base}: {what}"));
        }
    }
}
