//! Logs and traces of the `signoff` binary: log lines as text (the default) or JSON
//! (`--log-format json`), and OpenTelemetry traces over OTLP/HTTP (protobuf), exported only
//! when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set.
//!
//! The traces are the runtime's `tracing` spans: `message` -> `run` -> `model_turn`,
//! `tool_call`, `pause`; and `decision` -> `resume` -> the same again, each with `task.id` (and
//! `context.id` where the runner knows it). `RUST_LOG` filters the log lines only: the spans of
//! this crate are always exported at `info`.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// How log lines are written to stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// One line of text per event, for people.
    #[default]
    Text,
    /// One JSON object per line (`timestamp`, `level`, `fields`, `target`, `span`, `spans`),
    /// for log collectors.
    Json,
}

/// The variables that switch trace export on, in the exporter's order of preference (it reads
/// them itself: the first is the full URL, the second gets `/v1/traces` appended).
const ENDPOINT_VARIABLES: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// The service name in the traces' resource, unless `OTEL_SERVICE_NAME` gives another.
const SERVICE_NAME: &str = "signoff";

/// Why logging or tracing could not start.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("the OTLP trace exporter: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    /// Traces go out over plain http only, to a collector beside the server.
    #[error(
        "{0} is https; traces go out over plain http only (run a collector beside the server)"
    )]
    Https(String),
    #[error("logging was set up twice: {0}")]
    Subscriber(#[from] tracing_subscriber::util::TryInitError),
}

/// What must outlive the server: the trace pipeline, flushed by [`Telemetry::shutdown`].
#[derive(Debug)]
pub struct Telemetry {
    traces: Option<SdkTracerProvider>,
}

/// The OTLP endpoint from the environment, if trace export is on.
fn otlp_endpoint() -> Option<String> {
    ENDPOINT_VARIABLES.iter().find_map(|name| {
        std::env::var(name)
            .ok()
            .filter(|value| !value.trim().is_empty())
    })
}

/// Installs the global logger (and the trace exporter when an OTLP endpoint is set). Call it
/// once, before the async runtime starts: the exporter runs on a thread of its own.
pub fn init(format: LogFormat) -> Result<Telemetry, TelemetryError> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let logs = match format {
        LogFormat::Text => {
            // Colors only on a terminal (and never with NO_COLOR), so logs piped to files stay
            // plain.
            let color = std::io::IsTerminal::is_terminal(&std::io::stdout())
                && std::env::var_os("NO_COLOR").is_none();
            tracing_subscriber::fmt::layer().with_ansi(color).boxed()
        }
        LogFormat::Json => tracing_subscriber::fmt::layer().json().boxed(),
    }
    .with_filter(filter);
    let endpoint = otlp_endpoint();
    let traces = match &endpoint {
        Some(url) => {
            refuse_https(url)?;
            Some(tracer_provider()?)
        }
        None => None,
    };
    let spans = traces.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer(SERVICE_NAME))
            .with_filter(Targets::new().with_target("signoff_server", Level::INFO))
    });
    tracing_subscriber::registry()
        .with(logs)
        .with(spans)
        .try_init()?;
    if let Some(endpoint) = endpoint {
        tracing::info!(endpoint, "exporting traces over OTLP/HTTP");
    }
    Ok(Telemetry { traces })
}

/// An https endpoint is refused at start rather than failing every export unseen.
fn refuse_https(url: &str) -> Result<(), TelemetryError> {
    if url.trim_start().to_ascii_lowercase().starts_with("https:") {
        return Err(TelemetryError::Https(url.to_owned()));
    }
    Ok(())
}

/// Spans batched and sent over OTLP/HTTP with protobuf, to the endpoint the environment names.
fn tracer_provider() -> Result<SdkTracerProvider, TelemetryError> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .build()?;
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name(SERVICE_NAME);
    }
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build())
}

impl Telemetry {
    /// Sends the spans still batched and stops the exporter (after the server has stopped, so
    /// the last spans are in).
    pub fn shutdown(self) {
        if let Some(provider) = self.traces {
            if let Err(err) = provider.shutdown() {
                tracing::warn!(error = %err, "could not flush the last traces");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_https_collector_is_refused_with_a_reason() {
        assert!(refuse_https("http://127.0.0.1:4318").is_ok());
        let refused = refuse_https("HTTPS://collector:4318").unwrap_err();
        assert_eq!(
            refused.to_string(),
            "HTTPS://collector:4318 is https; traces go out over plain http only (run a \
             collector beside the server)"
        );
    }
}
