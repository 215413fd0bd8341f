//! What a fresh start does about runs whose process died (SPEC R1, H3): they are marked
//! `interrupted`, never resumed; their pending approvals expire; and a tool call that was
//! approved but has no recorded outcome gets an audit record with outcome `unknown`, so
//! nothing is re-run on the assumption that it did not happen.

use std::collections::BTreeMap;

use steward_protocol::{ApprovalStatus, AuditEntry, AuditOutcome};
use steward_store::{RunStatus, Store, StoreError};

/// What recovery changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// Runs marked `interrupted`.
    pub runs: Vec<String>,
    /// `(run id, call id)` of calls whose outcome is now recorded as `unknown`.
    pub unknown_calls: Vec<(String, String)>,
}

/// Marks every `running` run of this machine whose process is gone as interrupted.
/// `is_alive(pid)` tells whether a process still runs (the CLI checks the process table). Only
/// runs of this machine ([`Store::local_running_runs`]) are judged: on a database shared by
/// several nodes, another node's process ids mean nothing here.
pub async fn recover_interrupted(store: &dyn Store, is_alive: &dyn Fn(u32) -> bool) -> Result<Recovered, StoreError> {
    let mut recovered = Recovered::default();
    for mut run in store.local_running_runs().await? {
        if is_alive(run.pid) {
            continue;
        }
        let mut last: BTreeMap<String, steward_protocol::AuditRecord> = BTreeMap::new();
        for record in store.audit_records(Some(&run.id)).await? {
            if !record.entry.call_id.is_empty() {
                last.insert(record.entry.call_id.clone(), record);
            }
        }
        for (call_id, record) in last {
            if record.entry.outcome != AuditOutcome::Approved {
                continue;
            }
            store
                .append_audit(AuditEntry {
                    agent: "steward".into(),
                    outcome: AuditOutcome::Unknown,
                    latency_ms: 0,
                    detail: "the process ended after this call was approved and before its outcome was recorded; \
                             it is not re-run automatically"
                        .into(),
                    ..record.entry.clone()
                })
                .await?;
            recovered.unknown_calls.push((run.id.clone(), call_id));
        }
        for mut approval in store.approvals(&run.id).await? {
            if approval.status == ApprovalStatus::Pending {
                approval.status = ApprovalStatus::Expired;
                store.upsert_approval(&approval).await?;
            }
        }
        run.status = RunStatus::Interrupted;
        run.finished_at = Some(chrono::Utc::now());
        run.error = Some("the process running it ended unexpectedly; not resumed".into());
        store.update_run(&run).await?;
        recovered.runs.push(run.id);
    }
    store.flush().await?;
    Ok(recovered)
}
