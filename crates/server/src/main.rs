//! The `signoff` binary: parses the configuration, binds, and serves until SIGINT or SIGTERM.

// A panic inside one task's runner must fail that task, not the process: the runtime catches it
// at the task's boundary, which needs unwinding (Cargo.toml's release profile).
#[cfg(panic = "abort")]
compile_error!("the signoff server must be built with panic = \"unwind\"");

use clap::Parser;

// Many small allocations per event (JSON values, strings) from many threads: see Cargo.toml.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use signoff_server::Config;

async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %err, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(err) => {
                tracing::error!(error = %err, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}

/// Threads for the blocking work tokio does itself (resolving the host names of upstream model
/// servers and remote agents). Tokio's default of 512 lets a burst start hundreds of
/// short-lived threads, and creating a thread costs far more than the work it then does. (The
/// file tools run in place: see `agent::files`.)
const BLOCKING_THREADS: usize = 4;

fn main() -> anyhow::Result<()> {
    // `signoff policy check|test …`: tools for a policy folder, not a server.
    if std::env::args().nth(1).as_deref() == Some("policy") {
        let cli = signoff_server::policy_cli::PolicyCli::parse_from(std::env::args().skip(1));
        let passed = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(signoff_server::policy_cli::run(cli, &mut std::io::stdout()))?;
        std::process::exit(if passed { 0 } else { 1 });
    }
    // `signoff audit export|verify|rotate-key`: the signed decision receipts, no server.
    if std::env::args().nth(1).as_deref() == Some("audit") {
        let cli = signoff_server::audit_cli::AuditCli::parse_from(std::env::args().skip(1));
        let code = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(signoff_server::audit_cli::run(cli, &mut std::io::stdout()));
        std::process::exit(match code {
            Ok(code) => code,
            Err(err) => {
                // Exit 2 (cannot read what it was given), not anyhow's 1 (a broken chain).
                use std::io::Write as _;
                let _ = writeln!(std::io::stderr(), "error: {err}");
                2
            }
        });
    }
    let config = Config::parse();
    // Before the async runtime: the trace exporter (when on) runs on a thread of its own.
    let telemetry = signoff_server::telemetry::init(config.log_format)?;
    let served = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(BLOCKING_THREADS)
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|runtime| runtime.block_on(serve(config)));
    // The server has stopped: its last spans are in, and go out now.
    telemetry.shutdown();
    served
}

async fn serve(config: Config) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(config.addr).await?;
    let addr = listener.local_addr()?;
    tracing::info!(
        ui = %signoff_server::ui_source(&config),
        "signoff {}",
        signoff_server::VERSION
    );
    tracing::info!("listening on http://{addr}");
    signoff_server::run(listener, config, shutdown_signal()).await?;
    Ok(())
}
