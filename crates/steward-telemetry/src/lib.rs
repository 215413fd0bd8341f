//! OpenTelemetry export of Steward's runs (SPEC R3), off by default.
//!
//! When `[telemetry]` or the standard `OTEL_EXPORTER_OTLP_*` variables name an endpoint
//! ([`Settings::resolve`]), each finished run is turned into spans ([`spans::record_run`]):
//! `invoke_agent` for the run, `chat` per model call, `execute_tool` per tool call, with the
//! GenAI semantic conventions' `gen_ai.*` attributes and Steward's own `steward.*` ones. They
//! go to the SDK's batch span processor — a bounded queue drained by a thread of its own, so
//! recording a run never waits on the network, and a full queue drops spans rather than
//! holding anything up — and from there over OTLP/HTTP with protobuf bodies
//! (`opentelemetry-otlp`) through the workspace's `reqwest` ([`client`]). A failed export is
//! reported once and otherwise ignored. [`shutdown`] flushes what is queued, within a time
//! limit, when the process ends.
//!
//! One exporter (one batch processor) is kept per distinct [`Settings`] for the life of the
//! process ([`exporter`]): every run of a `steward serve` shares it.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod client;
mod error;
mod settings;
pub mod spans;

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use steward_protocol::{AuditRecord, Event};

pub use error::TelemetryError;
pub use settings::{DEFAULT_ENDPOINT, DEFAULT_TIMEOUT, HTTP_PROTOBUF, Settings, TelemetryConfig};

/// How long [`shutdown`] waits for queued spans to be sent, at most.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(3);

/// The exporters started by this process, by their settings.
static PIPELINES: Mutex<Vec<(Settings, SdkTracerProvider)>> = Mutex::new(Vec::new());

fn pipelines() -> MutexGuard<'static, Vec<(Settings, SdkTracerProvider)>> {
    PIPELINES.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Where a run's spans go: a tracer of the process's exporter for its settings, and whether
/// tool content goes on the spans. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Exporter {
    tracer: SdkTracer,
    capture_content: bool,
}

impl Exporter {
    /// Whether tool arguments and results go on the spans (`[telemetry] capture_content`).
    pub fn captures_content(&self) -> bool {
        self.capture_content
    }

    /// Records one finished run from its `events` and `audit` records as spans and queues
    /// them for export; returns at once. `redact` (the run's redactor) is applied to tool
    /// content, which is only put on the spans when the settings capture it.
    pub fn record_run(&self, events: &[Event], audit: &[AuditRecord], redact: &dyn Fn(&str) -> String) {
        let content = self.capture_content.then_some(redact);
        spans::record_run(&self.tracer, events, audit, content);
    }
}

/// The exporter for `settings`, started on first use with an HTTP client from `client` (the
/// caller's TLS set-up; given the export timeout) and kept for the life of the process.
///
/// # Errors
/// [`TelemetryError::Client`] when `client` fails, [`TelemetryError::Exporter`] when the OTLP
/// exporter refuses the settings.
pub fn exporter<E>(
    settings: &Settings,
    client: impl FnOnce(Duration) -> Result<reqwest::Client, E>,
) -> Result<Exporter, TelemetryError>
where
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut pipelines = pipelines();
    let tracer = |provider: &SdkTracerProvider| Exporter {
        tracer: provider.tracer("steward"),
        capture_content: settings.capture_content,
    };
    if let Some((_, provider)) = pipelines.iter().find(|(s, _)| s == settings) {
        return Ok(tracer(provider));
    }
    let shown = settings.shown_endpoint();
    let http =
        client::OtlpClient::new(client(settings.timeout).map_err(|e| TelemetryError::Client(e.into()))?, shown.clone());
    let headers: HashMap<String, String> = settings.headers.clone().into_iter().collect();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(http)
        .with_endpoint(settings.endpoint.clone())
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_timeout(settings.timeout)
        .with_headers(headers)
        .build()
        .map_err(|source| TelemetryError::Exporter { endpoint: shown, source })?;
    let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource()).build();
    let made = tracer(&provider);
    pipelines.push((settings.clone(), provider));
    Ok(made)
}

/// The resource of Steward's spans: `service.name` `steward` unless `OTEL_SERVICE_NAME` or
/// `OTEL_RESOURCE_ATTRIBUTES` name the service, `service.version`, and what
/// `OTEL_RESOURCE_ATTRIBUTES` adds.
fn resource() -> Resource {
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.trim().is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| v.contains("service.name="));
    let builder =
        Resource::builder().with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    if named { builder.build() } else { builder.with_service_name("steward").build() }
}

/// Sends what every exporter of the process has queued and stops them, waiting at most
/// `timeout` in all (an unreachable receiver costs at most that); call it once when the
/// process ends. Errors are not reported here (a failed export was reported already).
pub async fn shutdown(timeout: Duration) {
    let started: Vec<SdkTracerProvider> = pipelines().drain(..).map(|(_, provider)| provider).collect();
    if started.is_empty() {
        return;
    }
    let flush = tokio::task::spawn_blocking(move || {
        for provider in started {
            let _ = provider.shutdown_with_timeout(timeout);
        }
    });
    let _ = tokio::time::timeout(timeout + Duration::from_millis(250), flush).await;
}
