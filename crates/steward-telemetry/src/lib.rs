//! OpenTelemetry export of Steward's runs (SPEC R3), off by default.
//!
//! When `[telemetry]` or the standard `OTEL_EXPORTER_OTLP_*` variables name an endpoint
//! ([`Settings::resolve`]), each finished run is turned into spans ([`spans::record_run`]):
//! `invoke_agent` for the run, `chat` per model call, `execute_tool` per tool call, with the
//! GenAI semantic conventions' `gen_ai.*` attributes and Steward's own `steward.*` ones. They
//! go to the SDK's batch span processor — a bounded queue drained by a thread of its own, so
//! recording a run never waits on the network, and a full queue drops spans rather than
//! holding anything up — and from there over OTLP/HTTP with protobuf bodies
//! (`opentelemetry-otlp`) through the workspace's `reqwest` (`client`). A failed export is
//! reported once and otherwise ignored.
//!
//! The exporters belong to their owner, not to the process: an [`Exporters`] keeps one
//! exporter (one batch processor) per distinct [`Settings`] ([`Exporters::exporter`]), so
//! every run of a `steward serve` shares it, and [`Exporters::shutdown`] flushes what is
//! queued, within a time limit, when its owner is done.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod client;
mod error;
mod settings;
pub mod spans;

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use steward_protocol::{AuditRecord, Event};

pub use error::TelemetryError;
pub use settings::{DEFAULT_ENDPOINT, DEFAULT_TIMEOUT, HTTP_PROTOBUF, Settings, TelemetryConfig};

/// How long [`Exporters::shutdown`] waits for queued spans to be sent, at most.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(3);

/// Where a run's spans go: a tracer of an exporter started for its settings, and whether
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

/// The exporters started for one owner's runs (a Steward runtime), one per distinct
/// [`Settings`]: none at first, each started when a run first asks for its settings, all
/// flushed and stopped by [`Exporters::shutdown`]. An exporter dropped without it is stopped by
/// the SDK when its last tracer goes.
#[derive(Debug, Default)]
pub struct Exporters {
    started: Mutex<Vec<(Settings, SdkTracerProvider)>>,
}

impl Exporters {
    /// No exporter started yet.
    pub fn new() -> Exporters {
        Exporters::default()
    }

    fn started(&self) -> MutexGuard<'_, Vec<(Settings, SdkTracerProvider)>> {
        self.started.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The exporter for `settings`: the one started for them already, else a new one with an
    /// HTTP client from `client` (the caller's TLS set-up; given the export timeout), kept until
    /// [`Exporters::shutdown`].
    ///
    /// # Errors
    /// [`TelemetryError::Client`] when `client` fails, [`TelemetryError::Exporter`] when the
    /// OTLP exporter refuses the settings.
    pub fn exporter<E>(
        &self,
        settings: &Settings,
        client: impl FnOnce(Duration) -> Result<reqwest::Client, E>,
    ) -> Result<Exporter, TelemetryError>
    where
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let mut started = self.started();
        let tracer = |provider: &SdkTracerProvider| Exporter {
            tracer: provider.tracer("steward"),
            capture_content: settings.capture_content,
        };
        if let Some((_, provider)) = started.iter().find(|(s, _)| s == settings) {
            return Ok(tracer(provider));
        }
        let shown = settings.shown_endpoint();
        let http = client::OtlpClient::new(
            client(settings.timeout).map_err(|e| TelemetryError::Client(e.into()))?,
            shown.clone(),
        );
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
        started.push((settings.clone(), provider));
        Ok(made)
    }

    /// Sends what every exporter started here has queued and stops them, waiting at most
    /// `timeout` in all (an unreachable receiver costs at most that); an exporter asked for
    /// later starts afresh. Errors are not reported here (a failed export was reported
    /// already).
    pub async fn shutdown(&self, timeout: Duration) {
        let started: Vec<SdkTracerProvider> = self.started().drain(..).map(|(_, provider)| provider).collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(endpoint: &str) -> Settings {
        Settings {
            endpoint: endpoint.to_string(),
            headers: Default::default(),
            capture_content: false,
            timeout: Duration::from_millis(200),
        }
    }

    fn client(timeout: Duration) -> Result<reqwest::Client, Box<dyn std::error::Error + Send + Sync>> {
        Ok(steward_http::client_builder()?.timeout(timeout).build()?)
    }

    #[tokio::test]
    async fn each_owner_starts_its_own_exporters_one_per_settings_and_shutdown_stops_them() {
        let (one, other) = (Exporters::new(), Exporters::new());
        let first = settings("http://127.0.0.1:9/v1/traces");
        one.exporter(&first, client).expect("started");
        one.exporter(&first, client).expect("the same one");
        one.exporter(&settings("http://127.0.0.1:10/v1/traces"), client).expect("a second one");
        assert_eq!(one.started().len(), 2, "one exporter per distinct settings");
        assert!(other.started().is_empty(), "another owner's exporters are its own");
        one.shutdown(Duration::from_millis(300)).await;
        assert!(one.started().is_empty(), "shut down");
        one.exporter(&first, client).expect("started afresh after a shutdown");
        assert_eq!(one.started().len(), 1);
    }

    #[tokio::test]
    async fn a_client_that_cannot_be_made_is_an_error_and_starts_nothing() {
        let exporters = Exporters::new();
        let failed = exporters.exporter(&settings("http://127.0.0.1:9/v1/traces"), |_| Err("no TLS roots"));
        assert!(matches!(failed, Err(TelemetryError::Client(_))), "{failed:?}");
        assert!(exporters.started().is_empty());
    }
}
