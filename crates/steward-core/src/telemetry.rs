//! OpenTelemetry export at the composition point (SPEC R3): [`crate::prepare`] resolves the
//! exporter of a run from `[telemetry]` and the `OTEL_*` variables ([`exporter_for`]), and
//! [`crate::ReadyRun::run`] hands the finished run to it ([`record`]), so every front end
//! exports the same spans. The spans are built from what the run recorded — its events and
//! audit records, read back once it has ended and its records are flushed — and queued for
//! the exporter's own thread: the run never waits on the network, and nothing that goes wrong
//! here changes its outcome. The process flushes the queue when it ends
//! ([`steward_telemetry::shutdown`]).

use std::time::Duration;

use steward_policy::Redactor;
use steward_store::RunRecord;
use steward_telemetry::{Exporter, Settings};

use crate::Runtime;
use steward_config::Config;

/// How long reading a finished run back for its spans may take before they are given up.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The exporter the runs of `config` use, or `None` when export is off. A setting that asks
/// for export but cannot be honoured (`grpc`, an endpoint that is not a URL) leaves export off
/// and says why in `warnings`, which the front end shows.
pub(crate) fn exporter_for(
    config: &Config,
    env: fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
) -> Option<Exporter> {
    let resolved = Settings::resolve(&config.telemetry, &env).and_then(|settings| match settings {
        None => Ok(None),
        Some(settings) => steward_telemetry::exporter(&settings, |timeout| {
            let builder = steward_http::client_builder().map_err(|e| format!("TLS set-up failed: {e}"))?;
            builder
                .timeout(timeout)
                .connect_timeout(timeout.min(Duration::from_secs(5)))
                .build()
                .map_err(|e| e.to_string())
        })
        .map(Some),
    });
    resolved.unwrap_or_else(|why| {
        warnings.push(format!("telemetry is off: {why}"));
        None
    })
}

/// Reads the finished `run` back (events, audit records) and queues its spans on `exporter`,
/// tool content passed through `redactor` (the run's). Quick, bounded by [`READ_TIMEOUT`];
/// a failure is logged and leaves the run as it is.
pub(crate) async fn record(exporter: &Exporter, rt: &Runtime, run: &RunRecord, redactor: &Redactor) {
    let read = async {
        let events = rt.store.events(&run.id, 0).await?;
        let audit = rt.store.audit_records(Some(run.id.as_str())).await?;
        Ok::<_, steward_store::StoreError>((events, audit))
    };
    match tokio::time::timeout(READ_TIMEOUT, read).await {
        Ok(Ok((events, audit))) => exporter.record_run(&events, &audit, &|text| redactor.redact(text)),
        Ok(Err(e)) => tracing::warn!(run = %run.id, "telemetry: the run could not be read back for its spans: {e}"),
        Err(_) => tracing::warn!(run = %run.id, "telemetry: reading the run back for its spans took too long"),
    }
}
