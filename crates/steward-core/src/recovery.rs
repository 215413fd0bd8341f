//! What a fresh start does about runs whose process died (SPEC R1, H3): they are marked
//! `interrupted`, never resumed; their pending approvals expire; and a tool call that was
//! approved but has no recorded outcome gets an audit record with outcome `unknown`, so
//! nothing is re-run on the assumption that it did not happen.
//!
//! Two ways to find such runs: by process id for runs of this machine at start
//! ([`recover_interrupted`]), and by lease for runs of other nodes sharing a PostgreSQL
//! database ([`keep_leases`], [`recover_expired_leases`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use steward_protocol::{ApprovalStatus, AuditEntry, AuditOutcome};
use steward_store::{RunStatus, Store, StoreError};
use tokio_util::sync::CancellationToken;

/// The runs this process executes (run id → the token that cancels the run). One is made
/// with the process's [`crate::Runtime`] ([`crate::Runtime::new`]) and shared by everything
/// that needs it: the agent loop registers each run it executes ([`ExecutingRuns::register`]),
/// [`keep_leases`] cancels those another node has taken over, and a front end can ask which
/// runs execute here ([`ExecutingRuns::ids`]) or cancel one ([`ExecutingRuns::cancel`]).
#[derive(Debug, Default)]
pub struct ExecutingRuns {
    runs: Mutex<BTreeMap<String, CancellationToken>>,
}

impl ExecutingRuns {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The map, also after a thread panicked while holding it (an insert or a removal cannot
    /// leave it half-changed).
    fn runs(&self) -> MutexGuard<'_, BTreeMap<String, CancellationToken>> {
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers run `run_id`, executed by this process, until the returned guard is dropped:
    /// [`keep_leases`] cancels `cancel` should another node take the run over. Register only
    /// once the run is stored as `running`.
    pub fn register(self: &Arc<Self>, run_id: &str, cancel: CancellationToken) -> Executing {
        self.runs().insert(run_id.to_string(), cancel);
        Executing { registry: self.clone(), run_id: run_id.to_string() }
    }

    /// The ids of the runs registered now, in order.
    pub fn ids(&self) -> Vec<String> {
        self.runs().keys().cloned().collect()
    }

    /// True when run `run_id` is registered (executes in this process).
    pub fn contains(&self, run_id: &str) -> bool {
        self.runs().contains_key(run_id)
    }

    /// Cancels run `run_id` when it executes here; false when it is not registered.
    pub fn cancel(&self, run_id: &str) -> bool {
        match self.runs().get(run_id) {
            Some(cancel) => {
                cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Cancels the registered runs that `store` says this process must no longer execute
    /// ([`steward_store::LeaseStore::lost_runs`]: recovered by, or leased to, another node); returns their ids.
    pub async fn cancel_lost(&self, store: &dyn Store) -> Result<Vec<String>, StoreError> {
        let ids = self.ids();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let lost = store.lost_runs(&ids).await?;
        let runs = self.runs();
        for id in &lost {
            if let Some(cancel) = runs.get(id) {
                cancel.cancel();
            }
        }
        Ok(lost)
    }
}

/// A run registered by [`ExecutingRuns::register`]; dropping it ends the registration.
#[derive(Debug)]
pub struct Executing {
    registry: Arc<ExecutingRuns>,
    run_id: String,
}

impl Drop for Executing {
    fn drop(&mut self) {
        self.registry.runs().remove(&self.run_id);
    }
}

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
/// runs of this machine ([`steward_store::RunStore::local_running_runs`]) are judged: on a database shared by
/// several nodes, another node's process ids mean nothing here.
pub async fn recover_interrupted(
    store: &dyn Store,
    is_alive: &(dyn Fn(u32) -> bool + Sync),
) -> Result<Recovered, StoreError> {
    let mut recovered = Recovered::default();
    for run in store.local_running_runs().await? {
        if is_alive(run.pid) {
            continue;
        }
        recover_run(store, run, "the process running it ended unexpectedly; not resumed", &mut recovered).await?;
    }
    // Only when something was written (a start with nothing to recover waits for nothing).
    if !recovered.runs.is_empty() {
        store.flush().await?;
    }
    Ok(recovered)
}

/// Recovers the runs of other nodes whose lease expired (SPEC H3, several nodes on one
/// database): takes them over ([`steward_store::LeaseStore::take_over_expired_runs`], so no two nodes recover the
/// same run, for `ttl`) and recovers each exactly as [`recover_interrupted`] does: marked
/// `interrupted`, pending approvals `expired`, approved calls without an outcome recorded as
/// `unknown`. Nothing is re-executed here or anywhere. A store without leases recovers none.
pub async fn recover_expired_leases(store: &dyn Store, ttl: Duration) -> Result<Recovered, StoreError> {
    let mut recovered = Recovered::default();
    loop {
        let taken = store.take_over_expired_runs(ttl, TAKE_OVER_BATCH).await?;
        let more = taken.len() >= TAKE_OVER_BATCH as usize;
        for run in taken {
            let why = "the node running it stopped renewing its lease (it crashed or lost the database); \
                       recovered by another node, not resumed";
            recover_run(store, run, why, &mut recovered).await?;
        }
        if !more {
            break;
        }
    }
    // Only when something was written: a flush also hands over (and so takes away from the
    // run that queued it) a failed queued write.
    if !recovered.runs.is_empty() {
        store.flush().await?;
    }
    Ok(recovered)
}

/// Runs taken over per call of [`steward_store::LeaseStore::take_over_expired_runs`].
const TAKE_OVER_BATCH: u32 = 32;

/// How a process keeps the leases of the runs it executes (SPEC H3): renewed every
/// `renew_every`, each valid for `ttl`. Defaults: 5 s and 15 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseTiming {
    /// Time between two renewals (and two looks for expired leases of other nodes).
    pub renew_every: Duration,
    /// Lifetime of a lease: another node recovers a run whose lease is this old.
    pub ttl: Duration,
}

impl Default for LeaseTiming {
    fn default() -> Self {
        LeaseTiming { renew_every: Duration::from_secs(5), ttl: Duration::from_secs(15) }
    }
}

/// Until `stop` is cancelled: every `timing.renew_every`, renews the leases of the runs
/// process `pid` executes, cancels those of `executing` that another node has taken over
/// ([`ExecutingRuns::cancel_lost`]), then recovers the runs of other nodes whose lease expired, handing
/// what it recovered to `report`. Failures are logged and retried at the next tick. Does
/// nothing useful on a store without leases (SQLite), where it only costs a timer.
pub async fn keep_leases(
    store: Arc<dyn Store>,
    executing: Arc<ExecutingRuns>,
    pid: u32,
    timing: LeaseTiming,
    report: impl Fn(&Recovered) + Send,
    stop: CancellationToken,
) {
    loop {
        if let Err(e) = store.renew_leases(pid, timing.ttl).await {
            tracing::warn!("renewing run leases: {e}");
        }
        // A run whose lease was not renewed because another node took it over (this process
        // was paused or cut off past the TTL) stops at once: the other node has recovered it.
        match executing.cancel_lost(store.as_ref()).await {
            Ok(lost) => {
                for run in lost {
                    tracing::warn!(run = %run, "another node took this run over; it is cancelled here");
                }
            }
            Err(e) => tracing::warn!("checking the leases of the runs of this process: {e}"),
        }
        match recover_expired_leases(store.as_ref(), timing.ttl).await {
            Ok(recovered) if recovered.runs.is_empty() => {}
            Ok(recovered) => report(&recovered),
            Err(e) => tracing::warn!("recovering runs of stopped nodes: {e}"),
        }
        tokio::select! {
            _ = tokio::time::sleep(timing.renew_every) => {}
            _ = stop.cancelled() => return,
        }
    }
}

/// Interrupts one run whose executor is gone: unknown outcomes for approved calls, pending
/// approvals expired, then the run itself (last, so that a recovery cut short is redone).
async fn recover_run(
    store: &dyn Store,
    mut run: steward_store::RunRecord,
    why: &str,
    recovered: &mut Recovered,
) -> Result<(), StoreError> {
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
    run.error = Some(why.into());
    // Conditional like every finishing write: a run that ended meanwhile, or that yet another
    // node took over, keeps its record.
    if store.finish_run(&run).await? {
        recovered.runs.push(run.id);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_registered_until_its_guard_is_dropped() {
        let executing = Arc::new(ExecutingRuns::new());
        let cancel = CancellationToken::new();
        let guard = executing.register("run_a", cancel.clone());
        assert_eq!(executing.ids(), vec!["run_a".to_string()]);
        assert!(executing.contains("run_a"));
        assert!(!executing.cancel("run_b"), "not registered");
        assert!(!cancel.is_cancelled());
        assert!(executing.cancel("run_a"));
        assert!(cancel.is_cancelled());
        drop(guard);
        assert!(executing.ids().is_empty());
        assert!(!executing.contains("run_a"));
    }

    #[test]
    fn two_registries_know_only_their_own_runs() {
        let first = Arc::new(ExecutingRuns::new());
        let second = Arc::new(ExecutingRuns::new());
        let _a = first.register("run_a", CancellationToken::new());
        let _b = second.register("run_b", CancellationToken::new());
        assert_eq!(first.ids(), vec!["run_a".to_string()]);
        assert_eq!(second.ids(), vec!["run_b".to_string()]);
        assert!(!first.cancel("run_b"));
    }
}
