//! The OTLP exporter's HTTP client: the workspace's `reqwest` behind `opentelemetry-http`'s
//! trait. The SDK's batch processor exports from a thread of its own, outside any Tokio
//! runtime, so the request runs there on a small runtime of the client's own; called inside a
//! runtime, it simply awaits. A failed export is reported once per process (at `error` level
//! of the log), then stays quiet: telemetry never disturbs a run.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
use http::{Request, Response};
use opentelemetry_http::{HttpClient, HttpError};

/// Whether a failed export was reported already (once per process).
static REPORTED: AtomicBool = AtomicBool::new(false);

/// Sends OTLP requests with `client`.
#[derive(Debug)]
pub(crate) struct OtlpClient {
    client: reqwest::Client,
    /// The endpoint as messages show it (no credentials).
    shown: String,
    /// The runtime requests run on outside Tokio (built on first use, on the exporting thread).
    runtime: OnceLock<std::io::Result<tokio::runtime::Runtime>>,
}

impl OtlpClient {
    /// A client posting with `client` to the endpoint shown as `shown`.
    pub(crate) fn new(client: reqwest::Client, shown: String) -> Self {
        OtlpClient { client, shown, runtime: OnceLock::new() }
    }

    fn report_once(&self, why: &str) {
        if !REPORTED.swap(true, Ordering::SeqCst) {
            tracing::error!(
                "telemetry: spans could not be exported to {}: {why} (runs are not affected; reported once)",
                self.shown
            );
        }
    }
}

#[async_trait]
impl HttpClient for OtlpClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let outcome = if tokio::runtime::Handle::try_current().is_ok() {
            send(&self.client, request).await
        } else {
            let runtime =
                self.runtime.get_or_init(|| tokio::runtime::Builder::new_current_thread().enable_all().build());
            match runtime {
                Ok(runtime) => runtime.block_on(send(&self.client, request)),
                Err(e) => Err(format!("no runtime for the export: {e}").into()),
            }
        };
        match &outcome {
            Err(e) => self.report_once(&error_chain(e.as_ref())),
            Ok(response) if !response.status().is_success() => {
                self.report_once(&format!("the receiver answered {}", response.status()))
            }
            Ok(_) => {}
        }
        outcome
    }
}

async fn send(client: &reqwest::Client, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
    let request = reqwest::Request::try_from(request)?;
    // Errors without the URL: it may hold credentials (the report shows it without them).
    let response = client.execute(request).await.map_err(reqwest::Error::without_url)?;
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.bytes().await.map_err(reqwest::Error::without_url)?;
    let mut out = Response::builder().status(status).body(body)?;
    *out.headers_mut() = headers;
    Ok(out)
}

/// An error and its causes, `: `-separated (reqwest's own message alone says little).
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let shown = cause.to_string();
        if !text.contains(&shown) {
            text.push_str(": ");
            text.push_str(&shown);
        }
        source = cause.source();
    }
    text
}
