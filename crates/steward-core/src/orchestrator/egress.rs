//! Audit records of the connections a call made through the egress proxy: one `egress`
//! record per `CONNECT` tunnel or plain HTTP request, carrying the call's id, with the method,
//! host, port and address as input, the outcome (`completed` when allowed, `blocked` when the
//! proxy refused, `failed` when resolving or connecting failed) and, as detail, the reason and
//! the bytes each way. Queued like the call's own records, before its outcome.

use serde_json::json;
use steward_egress::{EgressRecord, Verdict};
use steward_protocol::{AuditOutcome, ToolCall};
use steward_store::StoreError;

use super::CallContext;
use super::record::{AuditRecord, Rule};

/// The audit action of an egress record.
pub(crate) const EGRESS_ACTION: &str = "egress";

/// Queues one audit record per egress record.
pub(crate) async fn queue(cx: &CallContext<'_>, call: &ToolCall, records: Vec<EgressRecord>) -> Result<(), StoreError> {
    for record in records {
        let outcome = match record.verdict {
            Verdict::Allowed => AuditOutcome::Completed,
            Verdict::Refused => AuditOutcome::Blocked,
            Verdict::Failed => AuditOutcome::Failed,
        };
        let input = json!({
            "tool": call.name,
            "method": record.method,
            "host": record.host,
            "port": record.port,
            "address": record.address.map(|a| a.to_string()),
        });
        let detail = format!(
            "{}: {}; {} bytes sent, {} bytes received",
            record.verdict.as_str(),
            record.reason,
            record.bytes_sent,
            record.bytes_received
        );
        AuditRecord::new(cx, call, Rule::EgressProxy.as_str(), 0.0, outcome)
            .action(EGRESS_ACTION.into())
            .input(cx.records.redactor.redact_value(&input))
            .detail(cx.records.redactor.redact(&detail))
            .queue(cx)
            .await?;
    }
    Ok(())
}
