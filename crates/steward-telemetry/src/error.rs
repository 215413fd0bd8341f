//! Why telemetry asked for in the configuration or the environment cannot be done. Each
//! variant's message is a sentence for the user and never shows an endpoint's credentials.

use std::error::Error as StdError;

/// Export was asked for but cannot be done; the run goes on without it.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// `OTEL_TRACES_EXPORTER` names an exporter other than `otlp` or `none`.
    #[error(
        "OTEL_TRACES_EXPORTER={0} is not supported: Steward exports traces over OTLP (`otlp`) or not at all (`none`)"
    )]
    UnsupportedExporter(String),
    /// The OTLP protocol (`from`: the variable or key that set it) is not `http/protobuf`.
    #[error("{}", protocol_message(.protocol, .from))]
    UnsupportedProtocol {
        /// The protocol asked for, e.g. `grpc`.
        protocol: String,
        /// Where it was set: an `OTEL_*` variable, `[telemetry] protocol` or the default.
        from: &'static str,
    },
    /// The endpoint parses as a URL but not an `http://` or `https://` one with a host.
    #[error("the OTLP endpoint `{endpoint}` is not an http:// or https:// URL")]
    NotHttp {
        /// The endpoint without credentials, query or fragment.
        endpoint: String,
    },
    /// The endpoint is not a URL at all.
    #[error("the OTLP endpoint `{endpoint}` is not a URL: {reason}")]
    NotAUrl {
        /// The endpoint as messages show it (`(not a URL)`: what was given may hold credentials).
        endpoint: String,
        /// The URL parser's reason.
        reason: String,
    },
    /// The caller's HTTP client (its TLS set-up) could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(#[source] Box<dyn StdError + Send + Sync>),
    /// The OTLP exporter refused its settings.
    #[error("cannot export to {endpoint}: {source}")]
    Exporter {
        /// The endpoint without credentials, query or fragment.
        endpoint: String,
        /// The exporter's reason.
        source: opentelemetry_otlp::ExporterBuildError,
    },
}

fn protocol_message(protocol: &str, from: &str) -> String {
    match protocol {
        "grpc" => format!(
            "OTLP over gRPC ({from} = grpc) is not supported: Steward exports over OTLP/HTTP; set the protocol to \
             `http/protobuf` and the endpoint to the receiver's HTTP port (a collector's 4318, not 4317)"
        ),
        "http/json" => format!(
            "OTLP over HTTP/JSON ({from} = http/json) is not supported: Steward exports OTLP/HTTP with protobuf bodies; \
             set the protocol to `http/protobuf`"
        ),
        other => format!("{from} = `{other}` is not an OTLP protocol Steward supports (use `http/protobuf`)"),
    }
}
