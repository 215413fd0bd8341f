//! `[telemetry]` and the standard `OTEL_*` environment variables, resolved into the
//! [`Settings`] of one exporter, or into nothing: export is off unless an endpoint is named.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::TelemetryError;

/// `[telemetry]`: OpenTelemetry export of every run's trace as spans — `invoke_agent`
/// per run, `chat` per model call, `execute_tool` per tool call — over OTLP/HTTP (protobuf).
/// Off unless an endpoint is set here or in `OTEL_EXPORTER_OTLP_ENDPOINT` /
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; `OTEL_SDK_DISABLED=true` or
/// `OTEL_TRACES_EXPORTER=none` turns it off whatever the configuration says. The environment
/// variables win over the keys here. Spans are sent in the background and never hold up or
/// fail a run. Only the user's configuration may set it: a workspace must not decide where a
/// trace is sent.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// `false` never exports; `true` exports to the endpoint (default
    /// `http://localhost:4318`); unset exports when an endpoint is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Base URL of the OTLP/HTTP receiver (a collector's `http://localhost:4318`); `/v1/traces` is
    /// appended. `OTEL_EXPORTER_OTLP_ENDPOINT` (also a base URL) and
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full URL) take precedence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// `http/protobuf`, the only protocol supported (default). `grpc` and `http/json` are
    /// refused with a message and nothing is exported. `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` and
    /// `OTEL_EXPORTER_OTLP_PROTOCOL` take precedence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Headers sent with every export (a hosted backend's API key), in addition to
    /// `OTEL_EXPORTER_OTLP_HEADERS` / `OTEL_EXPORTER_OTLP_TRACES_HEADERS`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Put tool-call arguments and results on the `execute_tool` spans
    /// (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`), redacted with the run's
    /// redactor and cut to 4,096 characters each (default false: names, decisions and ids only).
    #[serde(default)]
    pub capture_content: bool,
}

/// The default OTLP/HTTP base URL (`enabled = true` without an endpoint).
pub const DEFAULT_ENDPOINT: &str = "http://localhost:4318";

/// The only protocol supported.
pub const HTTP_PROTOBUF: &str = "http/protobuf";

/// How long one export may take when `OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT` does not say.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// What one exporter needs: where, with which headers, whether tool content goes on spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The full URL spans are posted to (`…/v1/traces`).
    pub endpoint: String,
    /// Headers from `[telemetry] headers` (the exporter adds those of the environment).
    pub headers: BTreeMap<String, String>,
    /// `[telemetry] capture_content`.
    pub capture_content: bool,
    /// Time allowed for one export request.
    pub timeout: Duration,
}

impl Settings {
    /// The settings `config` and the environment (`env`, the process environment in
    /// production) give: `Ok(None)` when export is off, `Err` with a sentence for the user when
    /// it is asked for but cannot be done (an unsupported protocol or exporter, an endpoint that
    /// is not an `http(s)` URL). The sentence never shows an endpoint's credentials.
    pub fn resolve(
        config: &TelemetryConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Settings>, TelemetryError> {
        let var = |name: &str| env(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) || config.enabled == Some(false) {
            return Ok(None);
        }
        match var("OTEL_TRACES_EXPORTER").as_deref() {
            None | Some("otlp") => {}
            Some("none") => return Ok(None),
            Some(other) => {
                return Err(TelemetryError::UnsupportedExporter(other.to_string()));
            }
        }
        let endpoint = if let Some(full) = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            full
        } else if let Some(base) = var("OTEL_EXPORTER_OTLP_ENDPOINT") {
            traces_url(&base)
        } else if let Some(base) = config.endpoint.as_deref().map(str::trim).filter(|e| !e.is_empty()) {
            traces_url(base)
        } else if config.enabled == Some(true) {
            traces_url(DEFAULT_ENDPOINT)
        } else {
            return Ok(None);
        };
        let (protocol, from) = [
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", var("OTEL_EXPORTER_OTLP_PROTOCOL")),
            ("[telemetry] protocol", config.protocol.clone()),
        ]
        .into_iter()
        .find_map(|(from, value)| value.map(|v| (v, from)))
        .unwrap_or_else(|| (HTTP_PROTOBUF.to_string(), "the default"));
        check_protocol(&protocol, from)?;
        check_endpoint(&endpoint)?;
        let millis = var("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
            .or_else(|| var("OTEL_EXPORTER_OTLP_TIMEOUT"))
            .and_then(|v| v.parse::<u64>().ok());
        Ok(Some(Settings {
            endpoint,
            headers: config.headers.clone(),
            capture_content: config.capture_content,
            timeout: millis.map_or(DEFAULT_TIMEOUT, Duration::from_millis),
        }))
    }

    /// The endpoint without credentials, query or fragment, for messages.
    pub fn shown_endpoint(&self) -> String {
        shown(&self.endpoint)
    }
}

/// `base` with `/v1/traces` appended, as the OTLP exporter specification builds the traces
/// URL from `OTEL_EXPORTER_OTLP_ENDPOINT`.
fn traces_url(base: &str) -> String {
    format!("{}/v1/traces", base.trim_end_matches('/'))
}

fn check_protocol(protocol: &str, from: &'static str) -> Result<(), TelemetryError> {
    if protocol == HTTP_PROTOBUF {
        Ok(())
    } else {
        Err(TelemetryError::UnsupportedProtocol { protocol: protocol.to_string(), from })
    }
}

fn check_endpoint(endpoint: &str) -> Result<(), TelemetryError> {
    match reqwest::Url::parse(endpoint) {
        // The OTLP exporter parses the text as it is (`http::Uri`), which refuses what a URL
        // parser would percent-encode (a space, say): refused here, so that the user is told.
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host_str().is_some() => endpoint
            .parse::<http::Uri>()
            .map(|_| ())
            .map_err(|e| TelemetryError::NotAUrl { endpoint: shown(endpoint), reason: e.to_string() }),
        Ok(_) => Err(TelemetryError::NotHttp { endpoint: shown(endpoint) }),
        Err(e) => Err(TelemetryError::NotAUrl { endpoint: shown(endpoint), reason: e.to_string() }),
    }
}

/// `url` without user, password, query or fragment (they may hold credentials).
pub(crate) fn shown(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.set_query(None);
            url.set_fragment(None);
            url.to_string()
        }
        Err(_) => "(not a URL)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Settings::resolve` with the error as its message, which is what the user sees.
    fn resolve(config: &TelemetryConfig, vars: &[(&str, &str)]) -> Result<Option<Settings>, String> {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Settings::resolve(config, &move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
            .map_err(|e| e.to_string())
    }

    fn endpoint(config: &TelemetryConfig, vars: &[(&str, &str)]) -> Option<String> {
        resolve(config, vars).unwrap().map(|s| s.endpoint)
    }

    #[test]
    fn off_without_an_endpoint_and_on_with_one_from_the_environment_or_the_configuration() {
        let none = TelemetryConfig::default();
        assert_eq!(endpoint(&none, &[]), None);
        assert_eq!(
            endpoint(&none, &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/")]).as_deref(),
            Some("http://127.0.0.1:4318/v1/traces")
        );
        let traces = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:9999/custom"),
        ];
        assert_eq!(
            endpoint(&none, &traces).as_deref(),
            Some("http://b:9999/custom"),
            "the signal's own URL is used as is"
        );
        let configured = TelemetryConfig { endpoint: Some("https://otel.example:4318".into()), ..Default::default() };
        assert_eq!(endpoint(&configured, &[]).as_deref(), Some("https://otel.example:4318/v1/traces"));
        assert_eq!(
            endpoint(&configured, &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318")]).as_deref(),
            Some("http://env:4318/v1/traces"),
            "the environment wins over the configuration"
        );
        let enabled = TelemetryConfig { enabled: Some(true), ..Default::default() };
        assert_eq!(endpoint(&enabled, &[]).as_deref(), Some("http://localhost:4318/v1/traces"));
    }

    #[test]
    fn the_kill_switches_win() {
        let configured = TelemetryConfig { endpoint: Some("http://a:4318".into()), ..Default::default() };
        assert_eq!(endpoint(&configured, &[("OTEL_SDK_DISABLED", "TRUE")]), None);
        assert_eq!(endpoint(&configured, &[("OTEL_TRACES_EXPORTER", "none")]), None);
        assert!(endpoint(&configured, &[("OTEL_SDK_DISABLED", "false")]).is_some());
        let off = TelemetryConfig { enabled: Some(false), ..configured };
        assert_eq!(endpoint(&off, &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318")]), None);
    }

    #[test]
    fn grpc_json_and_other_exporters_are_refused_with_a_sentence() {
        let configured = TelemetryConfig { endpoint: Some("http://a:4317".into()), ..Default::default() };
        let grpc = resolve(&configured, &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).unwrap_err();
        assert!(
            grpc.contains("gRPC") && grpc.contains("OTEL_EXPORTER_OTLP_PROTOCOL") && grpc.contains("http/protobuf"),
            "{grpc}"
        );
        let from_config = TelemetryConfig { protocol: Some("grpc".into()), ..configured.clone() };
        assert!(resolve(&from_config, &[]).unwrap_err().contains("[telemetry] protocol = grpc"));
        assert!(resolve(&from_config, &[("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")]).unwrap().is_some());
        assert!(resolve(&configured, &[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")]).unwrap_err().contains("JSON"));
        assert!(resolve(&configured, &[("OTEL_TRACES_EXPORTER", "zipkin")]).unwrap_err().contains("zipkin"));
        // Off wins over a protocol that would be refused.
        assert_eq!(resolve(&TelemetryConfig::default(), &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]), Ok(None));
    }

    #[test]
    fn a_bad_endpoint_is_refused_without_showing_its_credentials() {
        let bad =
            resolve(&TelemetryConfig::default(), &[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://user:s3cret@h/x")]);
        let message = bad.unwrap_err();
        assert!(message.contains("not an http:// or https:// URL") && !message.contains("s3cret"), "{message}");
        assert!(resolve(&TelemetryConfig::default(), &[("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318")]).is_err());
        // A URL parser takes this (it encodes the space); the OTLP exporter would not.
        let spaced =
            TelemetryConfig { endpoint: Some("http://127.0.0.1:4318/my collector".into()), ..Default::default() };
        let message = resolve(&spaced, &[]).unwrap_err();
        assert!(message.contains("is not a URL"), "{message}");
    }

    #[test]
    fn the_timeout_comes_from_the_environment_in_milliseconds() {
        let configured = TelemetryConfig { endpoint: Some("http://a:4318".into()), ..Default::default() };
        assert_eq!(resolve(&configured, &[]).unwrap().unwrap().timeout, DEFAULT_TIMEOUT);
        let set = resolve(&configured, &[("OTEL_EXPORTER_OTLP_TIMEOUT", "2500")]).unwrap().unwrap();
        assert_eq!(set.timeout, Duration::from_millis(2500));
    }
}
