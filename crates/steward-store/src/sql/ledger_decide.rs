//! The ledger's decisions (approve, revoke, claim, result), taken inside one write transaction
//! from the rows they read under its locks.

use async_trait::async_trait;
use steward_protocol::Timestamp;

use crate::StoreError;
use crate::ledger::{
    ApproveInput, ApproveOutcome, AuthorityRecord, ClaimInput, ClaimOutcome, DenyReason, ResultInput, ResultOutcome,
    ResultRecord, RevokeOutcome, WorkApprovalRecord, WorkRequestRecord, WorkStatus, decide_claim, status_for_outcome,
};

/// The row operations of one open write transaction (see [`super::ledger`]); the
/// decisions built on them ([`approve_in`], [`revoke_in`], [`claim_in`], [`result_in`]) are
/// shared. `lock` asks PostgreSQL for `FOR UPDATE` (SQLite's transaction already holds the
/// database's write lock).
#[async_trait]
pub(crate) trait LedgerTx: Send {
    /// A request by id.
    async fn request(&mut self, id: &str, lock: bool) -> Result<Option<WorkRequestRecord>, StoreError>;
    /// An approval by id.
    async fn approval(&mut self, id: &str, lock: bool) -> Result<Option<WorkApprovalRecord>, StoreError>;
    /// The authority issued under an approval.
    async fn authority_by_approval(&mut self, approval_id: &str) -> Result<Option<AuthorityRecord>, StoreError>;
    /// An authority by id.
    async fn authority(&mut self, id: &str, lock: bool) -> Result<Option<AuthorityRecord>, StoreError>;
    /// The result of an attempt.
    async fn result(&mut self, attempt_id: &str) -> Result<Option<ResultRecord>, StoreError>;
    /// Inserts an approval.
    async fn insert_approval(&mut self, approval: &WorkApprovalRecord) -> Result<(), StoreError>;
    /// Sets a request's status, epoch and update time.
    async fn set_request(&mut self, id: &str, status: WorkStatus, epoch: u64, at: Timestamp) -> Result<(), StoreError>;
    /// Inserts an authority.
    async fn insert_authority(&mut self, authority: &AuthorityRecord) -> Result<(), StoreError>;
    /// Inserts a result.
    async fn insert_result(&mut self, result: &ResultRecord) -> Result<(), StoreError>;
    /// Counts a duplicate report of an attempt.
    async fn count_duplicate(&mut self, attempt_id: &str) -> Result<(), StoreError>;
}

/// Approves inside `tx` (see [`LedgerStore::approve_work_request`]).
pub(crate) async fn approve_in(tx: &mut dyn LedgerTx, input: &ApproveInput) -> Result<ApproveOutcome, StoreError> {
    let Some(request) = tx.request(&input.request_id, true).await? else { return Ok(ApproveOutcome::NotFound) };
    if request.requester != input.owner_id {
        return Ok(ApproveOutcome::NotOwner);
    }
    if request.status != WorkStatus::Open {
        return Ok(ApproveOutcome::NotOpen(request.status));
    }
    if request.revision != input.revision {
        return Ok(ApproveOutcome::StaleRevision(request.revision));
    }
    let approval = WorkApprovalRecord {
        id: crate::new_id("wap_"),
        request_id: request.id.clone(),
        revision: request.revision,
        epoch: request.epoch,
        repository: request.repository.clone(),
        pr_number: request.pr_number,
        head_sha: input.head_sha.clone(),
        scope: input.scope.clone(),
        approved_by: input.owner_id.clone(),
        approved_at: input.at,
        expires_at: input.expires_at,
    };
    tx.insert_approval(&approval).await?;
    tx.set_request(&request.id, WorkStatus::Approved, request.epoch, input.at).await?;
    Ok(ApproveOutcome::Approved(approval))
}

/// Revokes inside `tx` (see [`LedgerStore::revoke_work_request`]).
pub(crate) async fn revoke_in(
    tx: &mut dyn LedgerTx,
    request_id: &str,
    owner_id: &str,
    at: Timestamp,
) -> Result<RevokeOutcome, StoreError> {
    let Some(mut request) = tx.request(request_id, true).await? else { return Ok(RevokeOutcome::NotFound) };
    if request.requester != owner_id {
        return Ok(RevokeOutcome::NotOwner);
    }
    if request.status.is_final() {
        return Ok(RevokeOutcome::AlreadyFinal(request.status));
    }
    request.epoch += 1;
    request.status = WorkStatus::Revoked;
    request.updated_at = at;
    tx.set_request(&request.id, WorkStatus::Revoked, request.epoch, at).await?;
    Ok(RevokeOutcome::Revoked(request))
}

/// Claims inside `tx`: locks the approval row, then its request, then decides
/// ([`decide_claim`]) and issues.
pub(crate) async fn claim_in(tx: &mut dyn LedgerTx, claim: &ClaimInput) -> Result<ClaimOutcome, StoreError> {
    let approval = tx.approval(&claim.approval_id, true).await?;
    let request = match &approval {
        Some(a) => tx.request(&a.request_id, true).await?,
        None => None,
    };
    let existing = match &approval {
        Some(a) => tx.authority_by_approval(&a.id).await?,
        None => None,
    };
    // Another owner's approval is not revealed, not even as spent.
    let foreign = approval.as_ref().is_some_and(|a| a.approved_by != claim.owner_id);
    let existing = if foreign { None } else { existing };
    if let Some(outcome) = decide_claim(claim, approval.as_ref(), request.as_ref(), existing.as_ref()) {
        return Ok(outcome);
    }
    let (Some(approval), Some(request)) = (approval, request) else {
        return Ok(ClaimOutcome::Denied(DenyReason::UnknownApproval));
    };
    let authority = AuthorityRecord {
        id: crate::new_id("ath_"),
        approval_id: approval.id.clone(),
        request_id: request.id.clone(),
        attempt_id: claim.attempt_id.clone(),
        hub_id: claim.hub_id.clone(),
        token_id: claim.token_id.clone(),
        issued_at: claim.at,
    };
    tx.insert_authority(&authority).await?;
    tx.set_request(&request.id, WorkStatus::Claimed, request.epoch, claim.at).await?;
    Ok(ClaimOutcome::Issued(authority))
}

/// Records a result inside `tx`; also answers the request id (for the audit record).
pub(crate) async fn result_in(
    tx: &mut dyn LedgerTx,
    input: &ResultInput,
) -> Result<(ResultOutcome, Option<String>), StoreError> {
    let Some(authority) = tx.authority(&input.authority_id, true).await? else {
        return Ok((ResultOutcome::UnknownAuthority, None));
    };
    let owner_matches = match tx.approval(&authority.approval_id, false).await? {
        Some(a) => a.approved_by == input.owner_id,
        None => false,
    };
    if !owner_matches {
        return Ok((ResultOutcome::UnknownAuthority, None));
    }
    // Before the attempt check, so that another token does not learn the attempt id either.
    if !authority.claimed_by(&input.token_id) {
        return Ok((ResultOutcome::OtherToken, Some(authority.request_id)));
    }
    if authority.attempt_id != input.attempt_id {
        return Ok((ResultOutcome::WrongAttempt(authority.attempt_id), Some(authority.request_id)));
    }
    if let Some(mut result) = tx.result(&input.attempt_id).await? {
        tx.count_duplicate(&input.attempt_id).await?;
        result.duplicates += 1;
        return Ok((ResultOutcome::Recorded { first: false, result }, Some(authority.request_id)));
    }
    let result = ResultRecord {
        attempt_id: input.attempt_id.clone(),
        authority_id: authority.id.clone(),
        outcome: input.outcome.clone(),
        evidence: input.evidence.clone(),
        reported_at: input.at,
        duplicates: 0,
    };
    tx.insert_result(&result).await?;
    if let Some(request) = tx.request(&authority.request_id, true).await?
        && request.status == WorkStatus::Claimed
    {
        tx.set_request(&request.id, status_for_outcome(&input.outcome), request.epoch, input.at).await?;
    }
    Ok((ResultOutcome::Recorded { first: true, result }, Some(authority.request_id)))
}
