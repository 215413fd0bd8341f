//! The work ledger's persistence (SPEC H1, H2): work requests, the owner's approvals pinned to
//! exactly what was approved, the one-time authorities issued to hubs, and their results.
//!
//! [`LedgerStore`] is implemented by the SQL store ([`crate::SqliteStore`], [`crate::PgStore`]) and reached
//! from any [`crate::Store`] with [`crate::Store::ledger`]. Every decision that changes state
//! (approve, revoke, claim, result) is taken inside ONE write transaction that first reads the
//! rows it depends on under a lock: `BEGIN IMMEDIATE` on SQLite (the database's write lock,
//! shared by every process on the file), `SELECT … FOR UPDATE` of the approval and request rows
//! on PostgreSQL (shared by every node). A claim is therefore one-time across processes and
//! nodes: of N concurrent claims of one approval exactly one is `issued`, the others see the
//! authority it created and are `spent` (the `ledger_authorities.approval_id` column is also
//! `UNIQUE`). After the commit, each change is appended to the audit chain
//! ([`crate::AuditStore::append_audit`]): action `ledger_request`, `ledger_approve`, `ledger_revoke`,
//! `ledger_claim` or `ledger_result`, `run_id` the request's id, `call_id` the attempt id,
//! `approval_id` the approval's id. Claim and result records name the id of the bearer token
//! that made them (`token_id`; never its secret).
//!
//! An authority belongs to the token that claimed it (its id is stored with the authority): only
//! that token may report its result, and a later claim of the same approval with another token
//! learns only that it is `spent`, not which authority or attempt holds it.
//!
//! Text written by requesters is stored as data; nothing in it is ever read as a pin, a scope
//! or a command.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use steward_protocol::{AuditEntry, AuditOutcome, Timestamp};

use crate::StoreError;

/// Where a work request stands; wire names are snake_case (`open`, `approved`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkStatus {
    /// Waiting for the owner's approval.
    Open,
    /// Approved; a hub may claim it until the approval expires.
    Approved,
    /// An authority was issued to a hub; no result yet.
    Claimed,
    /// The hub reported `completed`.
    Completed,
    /// The hub reported `failed`, `not_visible` or `head_moved`.
    Failed,
    /// Revoked by the owner (its epoch was bumped); nothing may start.
    Revoked,
}

impl WorkStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkStatus::Open => "open",
            WorkStatus::Approved => "approved",
            WorkStatus::Claimed => "claimed",
            WorkStatus::Completed => "completed",
            WorkStatus::Failed => "failed",
            WorkStatus::Revoked => "revoked",
        }
    }

    /// Parses a wire name; `None` for anything else.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "open" => WorkStatus::Open,
            "approved" => WorkStatus::Approved,
            "claimed" => WorkStatus::Claimed,
            "completed" => WorkStatus::Completed,
            "failed" => WorkStatus::Failed,
            "revoked" => WorkStatus::Revoked,
            _ => return None,
        })
    }

    /// True for `completed`, `failed` and `revoked`: nothing changes it any more.
    pub fn is_final(self) -> bool {
        matches!(self, WorkStatus::Completed | WorkStatus::Failed | WorkStatus::Revoked)
    }
}

impl std::fmt::Display for WorkStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A work request as stored (the wire `WorkRequest` of `steward-ledger`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkRequestRecord {
    /// `wrq_` + 16 hex.
    pub id: String,
    /// Starts at 1; an approval pins one revision.
    pub revision: u32,
    /// Starts at 1; bumped by every revocation.
    pub epoch: u64,
    /// What is asked for (`pr_summary`).
    pub kind: String,
    /// The owner id of whoever asked; only this owner sees, approves and revokes it.
    pub requester: String,
    /// The repository's name.
    pub repository: String,
    /// The pull request's number (≥ 1).
    pub pr_number: u64,
    /// Free text from the requester (data).
    pub text: String,
    /// Where it stands.
    pub status: WorkStatus,
    /// When it was made.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

/// An approval as stored, with every pin (the wire `WorkApproval`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkApprovalRecord {
    /// `wap_` + 16 hex.
    pub id: String,
    /// The request approved.
    pub request_id: String,
    /// The request's revision approved.
    pub revision: u32,
    /// The request's epoch at approval time.
    pub epoch: u64,
    /// The repository approved.
    pub repository: String,
    /// The pull request approved.
    pub pr_number: u64,
    /// The head commit approved (40 lowercase hex).
    pub head_sha: String,
    /// What the job may do (`read`).
    pub scope: String,
    /// The owner who approved.
    pub approved_by: String,
    /// When.
    pub approved_at: Timestamp,
    /// After this, nothing may be claimed under it.
    pub expires_at: Timestamp,
}

/// A one-time authority issued to a hub's attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthorityRecord {
    /// `ath_` + 16 hex.
    pub id: String,
    /// The approval it was issued under (at most one authority per approval).
    pub approval_id: String,
    /// The approval's request.
    pub request_id: String,
    /// The attempt it was issued to.
    pub attempt_id: String,
    /// The hub that claimed.
    pub hub_id: String,
    /// The id of the bearer token that claimed (never its secret); `''` for an authority issued
    /// before token ids were recorded (no token may report its result).
    pub token_id: String,
    /// When.
    pub issued_at: Timestamp,
}

impl AuthorityRecord {
    /// True when the token `token_id` claimed this authority (never for an empty id).
    pub fn claimed_by(&self, token_id: &str) -> bool {
        !token_id.is_empty() && self.token_id == token_id
    }
}

/// The result of an attempt, as first reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultRecord {
    /// The attempt (one result per attempt).
    pub attempt_id: String,
    /// Its authority.
    pub authority_id: String,
    /// `completed`, `failed`, `not_visible` or `head_moved`.
    pub outcome: String,
    /// The evidence, as JSON text.
    pub evidence: String,
    /// When the first report arrived.
    pub reported_at: Timestamp,
    /// How many later reports of the same attempt arrived (and were ignored).
    pub duplicates: u32,
}

/// One approval a hub may claim, with its request's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CandidateRecord {
    /// The approval.
    pub approval: WorkApprovalRecord,
    /// The request's text (data).
    pub text: String,
}

/// Where a candidate listing resumes: after the candidate with this approval time and id.
/// Shown to clients only as an opaque string ([`CandidateCursor::encode`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateCursor {
    /// RFC 3339 approval time of the last candidate seen (as stored).
    pub approved_at: String,
    /// Its approval id.
    pub approval_id: String,
}

impl CandidateCursor {
    /// The cursor after `approval`.
    pub fn after(approval: &WorkApprovalRecord) -> Self {
        CandidateCursor { approved_at: crate::timestamp_text(&approval.approved_at), approval_id: approval.id.clone() }
    }

    /// The opaque form: lowercase hex of `<approved_at> <approval id>`.
    pub fn encode(&self) -> String {
        hex::encode(format!("{} {}", self.approved_at, self.approval_id))
    }

    /// Reads an opaque cursor; `None` when it is not one this ledger made.
    pub fn decode(text: &str) -> Option<Self> {
        if text.len() > 512 {
            return None;
        }
        let bytes = hex::decode(text).ok()?;
        let text = String::from_utf8(bytes).ok()?;
        let (at, id) = text.split_once(' ')?;
        let valid = chrono::DateTime::parse_from_rfc3339(at).is_ok()
            && !id.is_empty()
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        valid.then(|| CandidateCursor { approved_at: at.to_string(), approval_id: id.to_string() })
    }
}

/// What the owner approves (see [`LedgerStore::approve_work_request`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApproveInput {
    /// The request.
    pub request_id: String,
    /// Who approves: must be the request's requester.
    pub owner_id: String,
    /// The revision the owner saw.
    pub revision: u32,
    /// The head SHA approved (40 lowercase hex; checked by the caller).
    pub head_sha: String,
    /// The scope granted (`read`).
    pub scope: String,
    /// When it was approved.
    pub at: Timestamp,
    /// When it expires (after `at`).
    pub expires_at: Timestamp,
}

/// What became of an approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApproveOutcome {
    /// Stored; the request is `approved`.
    Approved(WorkApprovalRecord),
    /// No such request.
    NotFound,
    /// The request belongs to another owner (nothing changed).
    NotOwner,
    /// The request is not `open` (it has this status).
    NotOpen(WorkStatus),
    /// The request's revision is not the one the owner saw (it is this one).
    StaleRevision(u32),
}

/// What became of a revocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevokeOutcome {
    /// The request is `revoked` and its epoch was bumped.
    Revoked(WorkRequestRecord),
    /// No such request.
    NotFound,
    /// The request belongs to another owner (nothing changed).
    NotOwner,
    /// The request already ended with this status (`completed`, `failed` or `revoked`).
    AlreadyFinal(WorkStatus),
}

/// A hub's claim of an approval; every pin is repeated (see the wire `ClaimRequest`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimInput {
    /// The approval claimed.
    pub approval_id: String,
    /// Its request.
    pub request_id: String,
    /// The revision the hub saw.
    pub revision: u32,
    /// The epoch the hub saw.
    pub epoch: u64,
    /// The head SHA the hub saw.
    pub head_sha: String,
    /// The owner the hub's token belongs to: another owner's approval is `unknown_approval`.
    pub owner_id: String,
    /// The hub.
    pub hub_id: String,
    /// The id of the bearer token that claims (stored with an issued authority).
    pub token_id: String,
    /// The hub's attempt id.
    pub attempt_id: String,
    /// When the claim arrived (compared with the expiry).
    pub at: Timestamp,
}

/// Why a claim was denied: the fixed reason codes of the wire `ClaimResponse`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DenyReason {
    /// `revoked`: the owner revoked the request.
    Revoked,
    /// `expired`: the approval expired.
    Expired,
    /// `stale_revision`: the claim names another revision than the approval's.
    StaleRevision,
    /// `stale_epoch`: the claim's (or the approval's) epoch is not the current one.
    StaleEpoch,
    /// `head_mismatch`: the claim names another head SHA than the approval's.
    HeadMismatch,
    /// `not_approved`: the request is not (or no longer) approved.
    NotApproved,
    /// `unknown_approval`: no such approval (of this owner, for this request).
    UnknownApproval,
}

impl DenyReason {
    /// The wire code.
    pub fn as_str(self) -> &'static str {
        match self {
            DenyReason::Revoked => "revoked",
            DenyReason::Expired => "expired",
            DenyReason::StaleRevision => "stale_revision",
            DenyReason::StaleEpoch => "stale_epoch",
            DenyReason::HeadMismatch => "head_mismatch",
            DenyReason::NotApproved => "not_approved",
            DenyReason::UnknownApproval => "unknown_approval",
        }
    }
}

/// What became of a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// The authority was issued to this claim's attempt: the hub may launch once.
    Issued(AuthorityRecord),
    /// An authority had already been issued (to this or another attempt): here it is. Only
    /// when [`AuthorityRecord::claimed_by`] the claim's token may its ids be shown to the caller.
    Spent(AuthorityRecord),
    /// Refused.
    Denied(DenyReason),
}

/// A hub's report of how an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultInput {
    /// The authority reported on.
    pub authority_id: String,
    /// The attempt; must be the authority's.
    pub attempt_id: String,
    /// The owner the hub's token belongs to: another owner's authority is `UnknownAuthority`.
    pub owner_id: String,
    /// The id of the reporting bearer token: must be the one that claimed the authority.
    pub token_id: String,
    /// `completed`, `failed`, `not_visible` or `head_moved` (checked by the caller).
    pub outcome: String,
    /// The evidence as JSON text.
    pub evidence: String,
    /// When the report arrived.
    pub at: Timestamp,
}

/// What became of a result report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultOutcome {
    /// Recorded (`first`), or a duplicate of the attempt's recorded result (`!first`, counted,
    /// nothing else changed). `result` is the record on file.
    Recorded {
        /// False for a duplicate.
        first: bool,
        /// The result on record (the first report's).
        result: ResultRecord,
    },
    /// No such authority (of this owner).
    UnknownAuthority,
    /// The authority was claimed with another bearer token of the owner; nothing was recorded.
    OtherToken,
    /// The authority was issued to another attempt (this one); nothing was recorded.
    WrongAttempt(String),
}

/// Persistence of the work ledger; see the module docs for the transactions and the audit
/// records. Every method fails with [`StoreError`] (class `storage`) when the database does.
#[async_trait]
pub trait LedgerStore: Send + Sync {
    /// Stores a new request (its id must be new) and audits it. Returns once committed.
    async fn insert_work_request(&self, request: &WorkRequestRecord) -> Result<(), StoreError>;

    /// The request with exactly this id.
    async fn work_request(&self, id: &str) -> Result<Option<WorkRequestRecord>, StoreError>;

    /// The requests of `requester`, newest (`created_at`, then id) first, at most `limit`.
    async fn work_requests(&self, requester: &str, limit: u32) -> Result<Vec<WorkRequestRecord>, StoreError>;

    /// The approvals of a request, oldest first.
    async fn work_approvals(&self, request_id: &str) -> Result<Vec<WorkApprovalRecord>, StoreError>;

    /// The authority issued under an approval, if any.
    async fn authority_of(&self, approval_id: &str) -> Result<Option<AuthorityRecord>, StoreError>;

    /// The recorded result of an attempt, if any.
    async fn attempt_result(&self, attempt_id: &str) -> Result<Option<ResultRecord>, StoreError>;

    /// Approves an `open` request at the revision the owner saw, pinning its epoch, repository
    /// and PR with `input`'s head SHA, scope and expiry (a new `wap_` id); the request becomes
    /// `approved`. One transaction; audited.
    async fn approve_work_request(&self, input: &ApproveInput) -> Result<ApproveOutcome, StoreError>;

    /// Revokes a request that has not ended: bumps its epoch and marks it `revoked`, so every
    /// approval of it is dead and every later claim is denied. One transaction; audited.
    async fn revoke_work_request(
        &self,
        request_id: &str,
        owner_id: &str,
        at: Timestamp,
    ) -> Result<RevokeOutcome, StoreError>;

    /// Approvals of `owner_id` a hub may claim at `now`: the request is `approved`, the
    /// approval carries its current epoch and revision, has not expired and has no authority.
    /// Ordered by approval time then id; at most `limit`, after `after` when given.
    async fn ledger_candidates(
        &self,
        owner_id: &str,
        after: Option<&CandidateCursor>,
        limit: u32,
        now: Timestamp,
    ) -> Result<Vec<CandidateRecord>, StoreError>;

    /// Decides a claim in one locked transaction (see [`decide_claim`]); on `Issued` stores a
    /// new `ath_` authority and marks the request `claimed`. Audited (issued, spent or denied).
    async fn claim_approval(&self, claim: &ClaimInput) -> Result<ClaimOutcome, StoreError>;

    /// Records an attempt's result once: the first report stores it and ends the request
    /// (`completed` for outcome `completed`, otherwise `failed`); a later report of the same
    /// attempt only counts as a duplicate. Audited.
    async fn record_result(&self, input: &ResultInput) -> Result<ResultOutcome, StoreError>;
}

/// The decision on a claim, from the rows read under the lock: `approval` (already matched to
/// the claim's request and owner, `None` otherwise), its `request`, and the authority already
/// issued under it. In this order: no approval → `unknown_approval`; revoked request →
/// `revoked`; epoch differs (claim, approval or request) → `stale_epoch`; revision differs →
/// `stale_revision`; head differs → `head_mismatch`; `at >= expires_at` → `expired`; an
/// existing authority → `Spent`; request not `approved` → `not_approved`; else `None` (issue).
/// A replay of an issued claim (same attempt) is therefore denied once the request was revoked
/// or the approval expired: `spent` never stands for a live authority that is not.
pub fn decide_claim(
    claim: &ClaimInput,
    approval: Option<&WorkApprovalRecord>,
    request: Option<&WorkRequestRecord>,
    existing: Option<&AuthorityRecord>,
) -> Option<ClaimOutcome> {
    let deny = |reason| Some(ClaimOutcome::Denied(reason));
    let (Some(approval), Some(request)) = (approval, request) else { return deny(DenyReason::UnknownApproval) };
    if approval.request_id != claim.request_id
        || request.id != approval.request_id
        || approval.approved_by != claim.owner_id
    {
        return deny(DenyReason::UnknownApproval);
    }
    if request.status == WorkStatus::Revoked {
        return deny(DenyReason::Revoked);
    }
    if claim.epoch != request.epoch || approval.epoch != request.epoch {
        return deny(DenyReason::StaleEpoch);
    }
    if claim.revision != approval.revision || approval.revision != request.revision {
        return deny(DenyReason::StaleRevision);
    }
    if claim.head_sha != approval.head_sha {
        return deny(DenyReason::HeadMismatch);
    }
    if claim.at >= approval.expires_at {
        return deny(DenyReason::Expired);
    }
    if let Some(existing) = existing {
        return Some(ClaimOutcome::Spent(existing.clone()));
    }
    if request.status != WorkStatus::Approved {
        return deny(DenyReason::NotApproved);
    }
    None
}

/// The status a request ends in for a reported attempt outcome.
pub fn status_for_outcome(outcome: &str) -> WorkStatus {
    if outcome == "completed" { WorkStatus::Completed } else { WorkStatus::Failed }
}

/// The audit entry of a ledger change.
#[allow(clippy::too_many_arguments)]
pub(crate) fn audit(
    agent: &str,
    request_id: &str,
    action: &str,
    input: serde_json::Value,
    outcome: AuditOutcome,
    approval_id: &str,
    attempt_id: &str,
    detail: String,
) -> AuditEntry {
    AuditEntry {
        agent: agent.to_string(),
        run_id: request_id.to_string(),
        call_id: attempt_id.to_string(),
        action: action.to_string(),
        input,
        policy: "ledger".into(),
        risk: 0.0,
        outcome,
        latency_ms: 0,
        sandbox: String::new(),
        approval_id: approval_id.to_string(),
        rollback_token: String::new(),
        detail,
    }
}

/// The audit entry of a claim's outcome.
pub(crate) fn claim_audit(claim: &ClaimInput, outcome: &ClaimOutcome) -> AuditEntry {
    let input = serde_json::json!({
        "approval_id": claim.approval_id, "revision": claim.revision, "epoch": claim.epoch,
        "head_sha": claim.head_sha, "hub_id": claim.hub_id, "attempt_id": claim.attempt_id,
        "owner_id": claim.owner_id, "token_id": claim.token_id,
    });
    let (result, detail) = match outcome {
        ClaimOutcome::Issued(a) => (AuditOutcome::Approved, format!("authority {} issued to {}", a.id, a.attempt_id)),
        ClaimOutcome::Spent(a) => (
            AuditOutcome::Blocked,
            format!(
                "spent: authority {} was issued to {} before ({})",
                a.id,
                a.attempt_id,
                if a.claimed_by(&claim.token_id) { "same token" } else { "another token; not shown to it" }
            ),
        ),
        ClaimOutcome::Denied(reason) => (AuditOutcome::Blocked, format!("denied: {}", reason.as_str())),
    };
    audit(
        &claim.hub_id,
        &claim.request_id,
        "ledger_claim",
        input,
        result,
        &claim.approval_id,
        &claim.attempt_id,
        detail,
    )
}

/// The audit entry of a new request.
pub(crate) fn request_audit(request: &WorkRequestRecord) -> AuditEntry {
    audit(
        &request.requester,
        &request.id,
        "ledger_request",
        serde_json::json!({"kind": request.kind, "repository": request.repository, "pr_number": request.pr_number}),
        AuditOutcome::Completed,
        "",
        "",
        format!("work request {} created (revision {})", request.id, request.revision),
    )
}

/// The audit entry of an approval attempt.
pub(crate) fn approve_audit(input: &ApproveInput, outcome: &ApproveOutcome) -> AuditEntry {
    let (result, approval_id, detail) = match outcome {
        ApproveOutcome::Approved(a) => (
            AuditOutcome::Approved,
            a.id.as_str(),
            format!("approved revision {} at head {} until {}", a.revision, a.head_sha, a.expires_at.to_rfc3339()),
        ),
        ApproveOutcome::NotFound => (AuditOutcome::Blocked, "", "refused: no such request".into()),
        ApproveOutcome::NotOwner => (AuditOutcome::Blocked, "", "refused: another owner's request".into()),
        ApproveOutcome::NotOpen(s) => (AuditOutcome::Blocked, "", format!("refused: the request is {s}")),
        ApproveOutcome::StaleRevision(r) => {
            (AuditOutcome::Blocked, "", format!("refused: the request is at revision {r}"))
        }
    };
    audit(
        &input.owner_id,
        &input.request_id,
        "ledger_approve",
        serde_json::json!({"revision": input.revision, "head_sha": input.head_sha, "scope": input.scope,
            "expires_at": input.expires_at.to_rfc3339()}),
        result,
        approval_id,
        "",
        detail,
    )
}

/// The audit entry of a revocation attempt.
pub(crate) fn revoke_audit(request_id: &str, owner_id: &str, outcome: &RevokeOutcome) -> AuditEntry {
    let (result, detail) = match outcome {
        RevokeOutcome::Revoked(r) => (AuditOutcome::Completed, format!("revoked; epoch is now {}", r.epoch)),
        RevokeOutcome::NotFound => (AuditOutcome::Blocked, "refused: no such request".into()),
        RevokeOutcome::NotOwner => (AuditOutcome::Blocked, "refused: another owner's request".into()),
        RevokeOutcome::AlreadyFinal(s) => (AuditOutcome::Blocked, format!("refused: the request is already {s}")),
    };
    audit(owner_id, request_id, "ledger_revoke", serde_json::json!({}), result, "", "", detail)
}

/// The audit entry of a result report.
pub(crate) fn result_audit(input: &ResultInput, request_id: Option<&str>, outcome: &ResultOutcome) -> AuditEntry {
    let (result, detail) = match outcome {
        ResultOutcome::Recorded { first: true, result } => (
            if result.outcome == "completed" { AuditOutcome::Completed } else { AuditOutcome::Failed },
            format!("result {} recorded", result.outcome),
        ),
        ResultOutcome::Recorded { first: false, result } => {
            (AuditOutcome::Blocked, format!("duplicate report ignored (on record: {})", result.outcome))
        }
        ResultOutcome::UnknownAuthority => (AuditOutcome::Blocked, "refused: unknown authority".into()),
        ResultOutcome::OtherToken => {
            (AuditOutcome::Blocked, "refused: the authority was claimed with another bearer token".into())
        }
        ResultOutcome::WrongAttempt(expected) => {
            (AuditOutcome::Blocked, format!("refused: the authority was issued to attempt {expected}"))
        }
    };
    audit(
        &input.owner_id,
        request_id.unwrap_or(""),
        "ledger_result",
        serde_json::json!({"authority_id": input.authority_id, "outcome": input.outcome, "token_id": input.token_id}),
        result,
        "",
        &input.attempt_id,
        detail,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_foreign_ones_are_refused() {
        let c = CandidateCursor { approved_at: "2026-11-30T12:00:00.000000000Z".into(), approval_id: "wap_1".into() };
        assert_eq!(CandidateCursor::decode(&c.encode()), Some(c));
        assert_eq!(CandidateCursor::decode("zz"), None);
        assert_eq!(CandidateCursor::decode(&hex::encode("yesterday wap_1")), None);
        assert_eq!(CandidateCursor::decode(&hex::encode("2026-11-30T12:00:00Z x';--")), None);
    }

    #[test]
    fn statuses_round_trip() {
        for s in [
            WorkStatus::Open,
            WorkStatus::Approved,
            WorkStatus::Claimed,
            WorkStatus::Completed,
            WorkStatus::Failed,
            WorkStatus::Revoked,
        ] {
            assert_eq!(WorkStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(WorkStatus::parse("done"), None);
    }
}
