//! `signoff-bench`: starts the real `signoff` binary on loopback with fresh data folders,
//! drives it over HTTP as clients would, and reports every figure (server and UI) as a table on
//! stdout and as JSON. `scripts/bench.sh` builds everything in release and runs it.

mod client;
mod error;
mod pin;
mod replicas;
mod report;
mod scenario;
mod server;
mod server_bench;
mod ship;
mod stats;
mod stub;
mod ui_ready;
mod ui_render;
mod ui_size;
mod ui_stream;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::OnceLock;

use clap::Parser;
use tokio::time::Instant;

use error::{BenchError, Result};
use report::{Machine, Results};
use server::ServerProcess;
use server_bench::Counts;
use stats::Figure;

/// The parts of the bench, each runnable alone with `--phases`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Phase {
    Latency,
    Load,
    Throughput,
    Footprint,
    /// The load's approve cycles decided by the requester, a second person, and a quorum of 2.
    Approvers,
    /// How long a held call takes to reach its approver's approvals stream.
    Reach,
    /// An MCP call through the gateway against the same call straight to its upstream.
    Gateway,
    /// RSS at rest with an OpenAI-compatible model and an MCP server over HTTP.
    Idle,
    Endpoints,
    /// A coding agent over ACP (the bench's own, no model): its permission request to the
    /// inbox, the decision to its answer, and the server's memory per live session.
    Acp,
    /// A paused batch's message to Slack's Web API (a stand-in) through the Slack app channel,
    /// with 1,000 batches pending.
    Slack,
    /// A paused batch's Web Push to an enrolled device's push service (a stand-in), with
    /// 1,000 batches pending.
    WebPush,
    /// The server's memory per waiting approval, at 10,000 and 100,000 waiting.
    Waiting,
    UiSize,
    UiRender,
    UiReady,
    Replicas,
    Ship,
}

#[derive(Debug, Parser)]
#[command(name = "signoff-bench", about = "Measures Signoff's server and UI")]
struct Args {
    /// The server binary to run (a release build of `signoff`).
    #[arg(long)]
    server: PathBuf,
    /// A folder for the servers' data folders; each server gets a fresh one inside.
    #[arg(long)]
    work_dir: PathBuf,
    /// Where to write the results as JSON.
    #[arg(long)]
    out: PathBuf,
    /// The git commit measured, for the results.
    #[arg(long, default_value = "unknown")]
    commit: String,
    /// The working tree has changes not in the commit.
    #[arg(long)]
    dirty: bool,
    /// Multiplies every count (1.0: the counts; 0.1 for a quick look).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// The output of scripts/ui-size.sh, for the UI transfer sizes.
    #[arg(long)]
    ui_size: Option<PathBuf>,
    /// The built UI (trunk's dist/), for the stream rendering figures.
    #[arg(long)]
    dist: Option<PathBuf>,
    /// crates/server/tests/mcp, where install.sh puts the MCP test servers.
    #[arg(long)]
    mcp_dir: Option<PathBuf>,
    /// A PostgreSQL admin URL the bench may create databases on, for the replicas phase
    /// (scripts/bench.sh passes its throwaway server's).
    #[arg(long)]
    postgres: Option<String>,
    /// The static binary (scripts/build-static.sh's target/static/signoff), for its size.
    #[arg(long)]
    static_binary: Option<PathBuf>,
    /// The container image's size in bytes (scripts/bench.sh reads it from podman).
    #[arg(long)]
    image_bytes: Option<u64>,
    /// Which parts to run (default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    phases: Vec<Phase>,
}

fn started() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

/// A progress line on stderr, so that stdout holds only the table.
pub fn progress(message: std::fmt::Arguments<'_>) {
    let secs = started().elapsed().as_secs_f64();
    let _ = writeln!(std::io::stderr(), "[bench {secs:6.1}s] {message}");
}

#[tokio::main]
async fn main() -> ExitCode {
    started();
    let args = Args::parse();
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let _ = writeln!(std::io::stderr(), "signoff-bench: {err}");
            ExitCode::FAILURE
        }
    }
}

/// The server's figures: latency, load and throughput on one server, then the phases that
/// start servers of their own.
async fn server_figures(
    args: &Args,
    phases: &[Phase],
    counts: &Counts,
    mcp_dir: Option<&Path>,
) -> Result<Vec<Figure>> {
    let mut figures = Vec::new();
    // Latency, load and throughput share one server, in that order: load runs before
    // throughput's many thousand chats fill the database.
    let shared = [Phase::Latency, Phase::Load, Phase::Throughput];
    if phases.iter().any(|phase| shared.contains(phase)) {
        let server = ServerProcess::start(&args.server, &args.work_dir.join("main"), None).await?;
        // The prompt reads c.txt; give it something to read.
        let c_txt = server.sandbox().join("c.txt");
        std::fs::write(&c_txt, "hello from c.txt\n").map_err(|err| BenchError::io(&c_txt, err))?;
        progress(format_args!("server pid {} at {}", server.pid, server.base));
        if phases.contains(&Phase::Latency) {
            figures.extend(server_bench::latency(&server, counts).await);
        }
        if phases.contains(&Phase::Load) {
            figures.extend(server_bench::load(&server, counts).await);
        }
        if phases.contains(&Phase::Throughput) {
            figures.extend(server_bench::throughput(&server, counts).await);
        }
        server.stop().await?;
    }
    if phases.contains(&Phase::Footprint) {
        match server_bench::footprint(&args.server, &args.work_dir, counts).await {
            Ok(more) => figures.extend(more),
            Err(err) => figures.push(Figure::missing(
                "footprint (fresh server)",
                "footprint",
                "-",
                format!("failed: {err}"),
            )),
        }
    }
    if phases.contains(&Phase::Approvers) {
        figures.extend(server_bench::approvers(&args.server, &args.work_dir, counts).await);
    }
    if phases.contains(&Phase::Reach) {
        figures.extend(server_bench::reach(&args.server, &args.work_dir, counts).await);
    }
    if phases.contains(&Phase::Gateway) {
        figures.extend(server_bench::gateway(&args.server, &args.work_dir, mcp_dir, counts).await);
    }
    if phases.contains(&Phase::Idle) {
        figures.extend(
            server_bench::idle_deployed(
                &args.server,
                &args.work_dir,
                mcp_dir,
                "footprint (fresh server)",
            )
            .await,
        );
    }
    if phases.contains(&Phase::Endpoints) {
        figures
            .extend(server_bench::endpoints(&args.server, &args.work_dir, mcp_dir, counts).await);
    }
    if phases.contains(&Phase::Acp) {
        figures.extend(server_bench::acp(&args.server, &args.work_dir, counts).await);
    }
    if phases.contains(&Phase::Slack) {
        figures.extend(server_bench::slack(&args.server, &args.work_dir, counts).await);
    }
    if phases.contains(&Phase::WebPush) {
        figures.extend(server_bench::web_push(&args.server, &args.work_dir, counts).await);
    }
    if phases.contains(&Phase::Waiting) {
        figures.extend(server_bench::waiting(&args.server, &args.work_dir, counts).await);
    }
    Ok(figures)
}

async fn run(args: Args) -> Result<()> {
    let phases = if args.phases.is_empty() {
        vec![
            Phase::UiSize,
            Phase::Latency,
            Phase::Load,
            Phase::Throughput,
            Phase::Footprint,
            Phase::Approvers,
            Phase::Reach,
            Phase::Gateway,
            Phase::Idle,
            Phase::Endpoints,
            Phase::Acp,
            Phase::Slack,
            Phase::WebPush,
            Phase::Waiting,
            Phase::UiRender,
            Phase::UiReady,
            Phase::Replicas,
            Phase::Ship,
        ]
    } else {
        args.phases.clone()
    };
    let counts = Counts::scaled(args.scale);
    // The agents files name the MCP server by an absolute path (the server's cwd differs).
    let mcp_dir = args
        .mcp_dir
        .as_ref()
        .map(|dir| std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone()));
    std::fs::create_dir_all(&args.work_dir).map_err(|err| BenchError::io(&args.work_dir, err))?;
    let mut figures: Vec<Figure> = Vec::new();

    if phases.contains(&Phase::UiSize) {
        figures.extend(ui_size::figures(args.ui_size.as_deref()));
        figures.extend(
            ui_size::wire_figures(&args.server, &args.work_dir, args.dist.as_deref()).await,
        );
    }

    figures.extend(server_figures(&args, &phases, &counts, mcp_dir.as_deref()).await?);

    if phases.contains(&Phase::UiRender) {
        figures.extend(
            ui_render::figures(
                args.dist.as_deref(),
                &args.work_dir,
                &ui_render::UiCounts::scaled(args.scale),
            )
            .await,
        );
    }

    if phases.contains(&Phase::UiReady) {
        figures.extend(
            ui_ready::figures(
                &args.server,
                args.dist.as_deref(),
                &args.work_dir,
                ui_ready::loads(args.scale),
            )
            .await,
        );
    }

    if phases.contains(&Phase::Replicas) {
        figures.extend(
            replicas::figures(
                &args.server,
                &args.work_dir,
                args.postgres.as_deref(),
                counts.load_large,
                counts.latency_chats,
            )
            .await,
        );
    }

    if phases.contains(&Phase::Ship) {
        figures.extend(
            ship::figures(
                &args.server,
                &args.work_dir,
                args.postgres.as_deref(),
                args.static_binary.as_deref(),
                args.image_bytes,
            )
            .await,
        );
    }

    let results = Results {
        machine: Machine::this(),
        commit: args.commit.clone(),
        dirty: args.dirty,
        duration_secs: started().elapsed().as_secs_f64(),
        scale: args.scale,
        figures,
    };
    if let Some(parent) = args.out.parent() {
        std::fs::create_dir_all(parent).map_err(|err| BenchError::io(parent, err))?;
    }
    let json = serde_json::to_vec_pretty(&results)?;
    std::fs::write(&args.out, json).map_err(|err| BenchError::io(&args.out, err))?;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(report::table(&results).as_bytes())
        .map_err(|err| BenchError::io("stdout", err))?;
    Ok(())
}
