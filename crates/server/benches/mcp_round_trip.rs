//! Bench: the time of one tool round trip through a reused MCP connection (rmcp over stdio to
//! @modelcontextprotocol/server-filesystem, installed by tests/mcp/install.sh): connect once,
//! then time many `read_file` calls one after another and print the median and the 90th and
//! 99th percentiles. Run with `cargo bench -p signoff-server --bench mcp_round_trip`.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use signoff_server::agent::config::McpStdioSpec;
use signoff_server::agent::mcp::{Connections, McpSource};
use signoff_server::agent::tools::ToolSource;

const CALLS: usize = 2000;
const WARM_UP: usize = 50;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(bench());
}

async fn bench() {
    let server = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(
        server.exists(),
        "{} is missing: run crates/server/tests/mcp/install.sh first",
        server.display()
    );
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("readme.txt"), "hello").unwrap();
    let spec = McpStdioSpec {
        name: "fs".to_owned(),
        command: "node".to_owned(),
        args: vec![
            server.display().to_string(),
            folder.path().display().to_string(),
        ],
        env: Default::default(),
        cwd: Some(folder.path().to_owned()),
        tools: None,
        prefix: None,
        require_approval: Vec::new(),
        timeout_secs: None,
        connect_timeout_secs: None,
        approvers: None,
        requester_may_approve: None,
        quorum: None,
        tool_approvers: Default::default(),
    }
    .check("bench", folder.path())
    .unwrap();
    let mut connections = Connections::default();
    let connection = connections.get(&spec);
    let source = McpSource::new(spec, connection, "bench".to_owned());
    let connect = Instant::now();
    source
        .first_connect()
        .await
        .expect("server-filesystem connects");
    let connect = connect.elapsed();

    let timeout = Duration::from_secs(10);
    for _ in 0..WARM_UP {
        source
            .call("read_file", json!({"path": "readme.txt"}), timeout)
            .await
            .unwrap();
    }
    let mut times = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let start = Instant::now();
        let response = source
            .call("read_file", json!({"path": "readme.txt"}), timeout)
            .await
            .unwrap();
        times.push(start.elapsed());
        assert_eq!(response["isError"], false);
    }
    times.sort();
    let at = |fraction: f64| times[((times.len() - 1) as f64 * fraction) as usize];
    println!(
        "mcp round trip (stdio, server-filesystem read_file, reused connection, {CALLS} calls): \
         median {:.3} ms, p90 {:.3} ms, p99 {:.3} ms (first connect {:.0} ms)",
        ms(at(0.5)),
        ms(at(0.9)),
        ms(at(0.99)),
        ms(connect)
    );
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
