//! OpenTelemetry export at the composition point (SPEC R3): [`crate::prepare`] resolves where
//! a run's spans go from `[telemetry]` and the `OTEL_*` variables ([`settings_for`]), and
//! [`crate::ReadyRun::run`] hands the finished run to the runtime's exporter for those
//! settings ([`record`]), so every front end exports the same spans. The spans are built from
//! what the run recorded — its events and audit records, read back once it has ended and its
//! records are flushed — and queued for the exporter's own thread: the run never waits on the
//! network, and nothing that goes wrong here changes its outcome. The runtime's owner flushes
//! the queue when it is done with it ([`crate::Runtime::shutdown`]).

use std::time::Duration;

use steward_policy::Redactor;
use steward_store::RunRecord;
use steward_telemetry::Settings;

use crate::Runtime;
use steward_config::Config;

/// How long reading a finished run back for its spans may take before they are given up.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the runs of `config` export their spans, or `None` when export is off. A setting
/// that asks for export but cannot be honoured (`grpc`, an endpoint that is not a URL) leaves
/// export off and says why in `warnings`, which the front end shows.
pub(crate) fn settings_for(
    config: &Config,
    env: fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
) -> Option<Settings> {
    Settings::resolve(&config.telemetry, &env).unwrap_or_else(|why| {
        warnings.push(format!("telemetry is off: {why}"));
        None
    })
}

/// Reads the finished `run` back (events, audit records) and queues its spans on the
/// runtime's exporter for `settings` (started on first use), tool content passed through
/// `redactor` (the run's). Quick, bounded by [`READ_TIMEOUT`]; a failure, an exporter that
/// cannot start included, is logged and leaves the run as it is.
pub(crate) async fn record(settings: &Settings, rt: &Runtime, run: &RunRecord, redactor: &Redactor) {
    let started = rt.telemetry.exporter(settings, |timeout| {
        let builder = steward_http::client_builder().map_err(|e| format!("TLS set-up failed: {e}"))?;
        builder.timeout(timeout).connect_timeout(timeout.min(Duration::from_secs(5))).build().map_err(|e| e.to_string())
    });
    let exporter = match started {
        Ok(exporter) => exporter,
        // Shown like a failed export (an error, which the CLI prints): the endpoint was checked
        // when the run was prepared, so this is the TLS set-up or the exporter itself failing.
        Err(e) => {
            tracing::error!(run = %run.id, "telemetry is off: {e}");
            return;
        }
    };
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
