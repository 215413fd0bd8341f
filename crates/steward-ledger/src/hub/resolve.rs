//! Held attempts and the human decisions on them (SPEC H3): `steward ledger held` lists them,
//! `steward ledger resolve ATTEMPT --as completed|failed|retry` records a decision in the
//! journal and the audit log. A decision never runs anything: `retry` only records that the
//! request may be attempted again, which takes a fresh approval from the owner (the journal
//! never attempts one approval twice).

use steward_protocol::{AuditEntry, AuditOutcome};
use steward_store::{JournalRecord, JournalState, JournalStore, Store, StoreError};

/// A human decision on a held attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// The work is known to be done.
    Completed,
    /// The work is known to have failed (or must not be done).
    Failed,
    /// The request may be attempted again under a fresh approval.
    Retry,
}

impl Resolution {
    /// `completed`, `failed`, `retry`.
    pub fn as_str(self) -> &'static str {
        match self {
            Resolution::Completed => "completed",
            Resolution::Failed => "failed",
            Resolution::Retry => "retry",
        }
    }

    /// The resolution named `name`.
    pub fn parse(name: &str) -> Option<Resolution> {
        [Resolution::Completed, Resolution::Failed, Resolution::Retry].into_iter().find(|r| r.as_str() == name)
    }
}

/// Why a resolution was refused.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// No journal row has this attempt id.
    #[error("no attempt {0} in the hub journal")]
    NotFound(String),
    /// The row is not `held` (it is in the named state).
    #[error("attempt {0} is {1}, not held: only held attempts are resolved")]
    NotHeld(String, JournalState),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The held rows, oldest first.
pub async fn held(journal: &dyn JournalStore) -> Result<Vec<JournalRecord>, StoreError> {
    journal.journal_list(&[JournalState::Held]).await
}

/// Records `resolution` of held attempt `attempt_id` by `owner_id`: an audit record
/// (action `hub_resolve`, committed first), then the row moves `held` → `resolved`, updated
/// at `now`.
pub async fn resolve(
    journal: &dyn JournalStore,
    store: &dyn Store,
    attempt_id: &str,
    resolution: Resolution,
    owner_id: &str,
    now: steward_protocol::Timestamp,
) -> Result<JournalRecord, ResolveError> {
    let row = journal.journal_get(attempt_id).await?.ok_or_else(|| ResolveError::NotFound(attempt_id.to_string()))?;
    if row.state != JournalState::Held {
        return Err(ResolveError::NotHeld(attempt_id.to_string(), row.state));
    }
    store
        .append_audit(AuditEntry {
            agent: owner_id.to_string(),
            run_id: row.run_id.clone().unwrap_or_default(),
            call_id: row.attempt_id.clone(),
            action: "hub_resolve".into(),
            input: serde_json::json!({
                "attempt_id": row.attempt_id,
                "approval_id": row.approval_id,
                "request_id": row.request_id,
                "held_from": row.held_from.map(JournalState::as_str),
                "note": row.note,
                "resolution": resolution.as_str(),
            }),
            policy: "human".into(),
            risk: 0.0,
            outcome: match resolution {
                Resolution::Completed => AuditOutcome::Completed,
                Resolution::Failed => AuditOutcome::Failed,
                Resolution::Retry => AuditOutcome::Escalated,
            },
            latency_ms: 0,
            sandbox: String::new(),
            approval_id: row.approval_id.clone(),
            rollback_token: String::new(),
            detail: format!("held attempt resolved as {} by a human", resolution.as_str()),
        })
        .await?;
    let mut next = row.clone();
    next.state = JournalState::Resolved;
    next.resolution = Some(resolution.as_str().to_string());
    next.updated_at = now;
    if !journal.journal_update(&next, JournalState::Held).await? {
        let now = journal.journal_get(attempt_id).await?.map_or(JournalState::Held, |r| r.state);
        return Err(ResolveError::NotHeld(attempt_id.to_string(), now));
    }
    Ok(next)
}
