//! Deciding an approval from outside the process that runs the call (`steward approve` and
//! `steward deny`): the decision is recorded in the store, where the waiting run finds it
//! (its process follows the store with [`super::DecisionQueue::follow_store`], which hands the
//! decision to the waiting request).

use steward_protocol::{ApprovalRequest, ApprovalStatus, Timestamp};
use steward_store::{ApprovalDecisionRecord, RunRecord, RunStatus, Store, StoreError};

/// Why a decision was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum DecisionError {
    /// No pending approval of a running run has this id.
    #[error("no approval `{0}` waits in a running run; `steward approvals pending` lists them")]
    NotFound(String),
    /// The approval belongs to another owner's run: only the run's owner decides.
    #[error("not_owner: approval `{0}` belongs to another owner's run; only the run's owner may decide")]
    NotOwner(String),
    /// The approval's time is up.
    #[error("approval `{0}` has expired; it can no longer be decided")]
    Expired(String),
    /// Someone decided first.
    #[error("approval `{0}` has already been decided")]
    AlreadyDecided(String),
    /// The store failed.
    #[error("storage: {0}")]
    Store(#[from] StoreError),
}

/// The pending approval requests of `owner_id`'s running runs that have not expired at `now`,
/// oldest first, each with its run.
pub async fn pending(
    store: &dyn Store,
    owner_id: &str,
    now: Timestamp,
) -> Result<Vec<(RunRecord, ApprovalRequest)>, StoreError> {
    let mut found = Vec::new();
    for run in store.runs_with_status(RunStatus::Running).await? {
        if run.owner_id != owner_id {
            continue;
        }
        for request in store.approvals(&run.id).await? {
            if request.status == ApprovalStatus::Pending && request.expires_at > now {
                found.push((run.clone(), request));
            }
        }
    }
    found.sort_by_key(|(_, r)| r.created_at);
    Ok(found)
}

/// What the owner decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnerDecision {
    /// Approve, with the scope's wire name (`once`, `run` or `workspace`).
    Approve(String),
    /// Deny, with the reason shown to the model (empty: "denied by the owner").
    Deny(String),
}

/// Records `decided_by`'s decision on approval `approval_id` at `now` for the run that waits
/// on it in another process. Refused when no running run has a pending approval of that id,
/// when it is another owner's, when it has expired, or when it was already decided. The run
/// checks the decider and the expiry once more before acting on it, and an approval's call hash
/// (the hash of the request as read here) against the call it would run. Returns the request
/// decided, as read.
pub async fn record(
    store: &dyn Store,
    decided_by: &str,
    approval_id: &str,
    decision: OwnerDecision,
    now: Timestamp,
) -> Result<ApprovalRequest, DecisionError> {
    let mut found = None;
    for run in store.runs_with_status(RunStatus::Running).await? {
        if let Some(request) = store.approvals(&run.id).await?.into_iter().find(|a| a.id == approval_id) {
            found = Some(request);
            break;
        }
    }
    let Some(request) = found else { return Err(DecisionError::NotFound(approval_id.to_string())) };
    if request.owner_id != decided_by {
        return Err(DecisionError::NotOwner(approval_id.to_string()));
    }
    match request.status {
        ApprovalStatus::Pending if request.expires_at <= now => return Err(DecisionError::Expired(request.id)),
        ApprovalStatus::Pending => {}
        ApprovalStatus::Expired => return Err(DecisionError::Expired(request.id)),
        _ => return Err(DecisionError::AlreadyDecided(request.id)),
    }
    // The hash of the call as this decision saw it in the store: the run compares it with the
    // call it would run, so a request changed in the store in between is refused there.
    let call_hash = super::call_hash(&request);
    let (approve, scope, reason) = match decision {
        OwnerDecision::Approve(scope) => (true, scope, String::new()),
        OwnerDecision::Deny(reason) => (false, "once".to_string(), reason),
    };
    let record = ApprovalDecisionRecord {
        approval_id: request.id.clone(),
        run_id: request.run_id.clone(),
        decided_by: decided_by.to_string(),
        approve,
        scope,
        reason,
        created_at: now,
        call_hash,
    };
    if store.insert_approval_decision(&record).await? {
        store.flush().await?;
        Ok(request)
    } else {
        Err(DecisionError::AlreadyDecided(request.id))
    }
}
