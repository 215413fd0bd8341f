//! Work requests and their approvals (SPEC H1): the checks every way of filing one applies (the
//! ledger's JSON API, `steward ledger`, the MCP tool), and the operations on the owner's
//! ledger — file, approve (pinned to a revision, a head SHA and an expiry), revoke — with their
//! refusals as [`LedgerError`]s. The web server maps those to HTTP answers; the terminal to
//! usage errors.

use steward_protocol::Timestamp;
use steward_store::ledger::{
    ApproveInput, ApproveOutcome, RevokeOutcome, WorkApprovalRecord, WorkRequestRecord, WorkStatus,
};
use steward_store::{LedgerStore, StoreError, new_id};

use crate::wire::{
    ApproveWorkRequest, AttemptOutcome, NewWorkRequest, RequestStatus, WorkApproval, WorkKind, WorkRequest, WorkScope,
};

/// Longest request text, in characters.
pub const MAX_TEXT_CHARS: usize = 4_000;
/// Longest repository name, in characters.
pub const MAX_REPOSITORY_CHARS: usize = 100;
/// Longest hub or attempt id, in characters.
pub const MAX_ID_CHARS: usize = 100;
/// Longest approval, in seconds (one day).
pub const MAX_EXPIRES_IN_S: u64 = 86_400;

/// Why a ledger operation was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// A value failed its check (the message says which and why).
    #[error("{0}")]
    Invalid(String),
    /// No such request (the message names it).
    #[error("{0}")]
    NotFound(String),
    /// The thing named belongs to another owner.
    #[error("{0} belongs to another owner")]
    NotOwner(&'static str),
    /// The request's state does not allow it (not open, already final, a stale revision).
    #[error("{0}")]
    Conflict(String),
    /// A stored record this version cannot read.
    #[error("{0}")]
    Internal(String),
    /// The store failed.
    #[error("storage: {0}")]
    Storage(#[from] StoreError),
}

/// A value of a work request, an approval or a hub report that failed its check; becomes
/// [`LedgerError::Invalid`] with the same message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidValue {
    /// The repository name has the wrong length or characters.
    #[error(
        "the repository must be 1 to {MAX_REPOSITORY_CHARS} characters of letters, digits, `.`, `_`, `-` and `/` \
         (e.g. `demo` or `org/demo`)"
    )]
    Repository,
    /// The pull request number is 0 or above `i64::MAX`.
    #[error("the pull request number must be at least 1")]
    PrNumber,
    /// The request text is too long.
    #[error("the text is longer than {MAX_TEXT_CHARS} characters")]
    TextTooLong,
    /// The head SHA is not 40 hex characters.
    #[error("the head SHA must be the full commit id: 40 hex characters")]
    HeadSha,
    /// The approval's lifetime is 0 or too long.
    #[error("the approval must last 1 to {MAX_EXPIRES_IN_S} seconds")]
    ExpiresIn,
    /// A hub or attempt id has the wrong length or characters; holds which field.
    #[error("{0} must be 1 to {MAX_ID_CHARS} characters of letters, digits, `_`, `-`, `.`, `:` and `@`")]
    TokenId(String),
}

impl From<InvalidValue> for LedgerError {
    fn from(err: InvalidValue) -> LedgerError {
        LedgerError::Invalid(err.to_string())
    }
}

impl LedgerError {
    /// True for failures of the server side (a stored record it cannot read, the store), as
    /// opposed to refusals of what was asked.
    pub fn is_internal(&self) -> bool {
        matches!(self, LedgerError::Internal(_) | LedgerError::Storage(_))
    }
}

/// Checks a repository name: 1 to [`MAX_REPOSITORY_CHARS`] characters of ASCII letters,
/// digits, `.`, `_`, `-` and `/`, not starting with `.`, `-` or `/`, without `..`.
pub fn check_repository(name: &str) -> Result<String, InvalidValue> {
    let name = name.trim();
    let ok_chars = name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-/".contains(&b));
    if name.is_empty()
        || name.len() > MAX_REPOSITORY_CHARS
        || !ok_chars
        || name.starts_with(['.', '-', '/'])
        || name.contains("..")
    {
        return Err(InvalidValue::Repository);
    }
    Ok(name.to_string())
}

/// Checks a PR number: 1 ..= `i64::MAX`.
pub fn check_pr_number(n: u64) -> Result<u64, InvalidValue> {
    if n == 0 || i64::try_from(n).is_err() {
        return Err(InvalidValue::PrNumber);
    }
    Ok(n)
}

/// Checks a request's text: at most [`MAX_TEXT_CHARS`] characters.
pub fn check_text(text: &str) -> Result<String, InvalidValue> {
    if text.chars().count() > MAX_TEXT_CHARS {
        return Err(InvalidValue::TextTooLong);
    }
    Ok(text.to_string())
}

/// Checks a head SHA: exactly 40 hex characters; answered in lowercase.
pub fn check_head_sha(sha: &str) -> Result<String, InvalidValue> {
    let sha = sha.trim();
    if sha.len() != 40 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(InvalidValue::HeadSha);
    }
    Ok(sha.to_ascii_lowercase())
}

/// Checks an approval's lifetime in seconds: 1 ..= [`MAX_EXPIRES_IN_S`].
pub fn check_expires_in(seconds: u64) -> Result<u64, InvalidValue> {
    if seconds == 0 || seconds > MAX_EXPIRES_IN_S {
        return Err(InvalidValue::ExpiresIn);
    }
    Ok(seconds)
}

/// Checks a hub or attempt id: 1 to [`MAX_ID_CHARS`] characters of ASCII letters, digits,
/// `_`, `-`, `.`, `:` and `@`.
pub fn check_token_id(what: &str, id: &str) -> Result<(), InvalidValue> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ID_CHARS
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.:@".contains(&b));
    if ok { Ok(()) } else { Err(InvalidValue::TokenId(what.to_string())) }
}

/// The wire name of a kind.
pub fn kind_name(kind: WorkKind) -> &'static str {
    match kind {
        WorkKind::PrSummary => "pr_summary",
    }
}

/// A new, `open` request of `requester` from `new`, after its checks, made at `now`; stored
/// and audited.
pub async fn file_request(
    ledger: &dyn LedgerStore,
    now: Timestamp,
    requester: &str,
    new: &NewWorkRequest,
) -> Result<WorkRequestRecord, LedgerError> {
    let repository = check_repository(&new.repository)?;
    let pr_number = check_pr_number(new.pr_number)?;
    let text = check_text(&new.text)?;
    let record = WorkRequestRecord {
        id: new_id("wrq_"),
        revision: 1,
        epoch: 1,
        kind: kind_name(new.kind).to_string(),
        requester: requester.to_string(),
        repository,
        pr_number,
        text,
        status: WorkStatus::Open,
        created_at: now,
        updated_at: now,
    };
    ledger.insert_work_request(&record).await?;
    Ok(record)
}

/// Approves `owner_id`'s request `id` as `body` says (checks first) at `now`, from when its
/// expiry counts; stored and audited.
pub async fn approve_request(
    ledger: &dyn LedgerStore,
    now: Timestamp,
    owner_id: &str,
    id: &str,
    body: &ApproveWorkRequest,
) -> Result<WorkApprovalRecord, LedgerError> {
    let head_sha = check_head_sha(&body.head_sha)?;
    let seconds = check_expires_in(body.expires_in_s)?;
    let input = ApproveInput {
        request_id: id.to_string(),
        owner_id: owner_id.to_string(),
        revision: body.revision,
        head_sha,
        scope: "read".into(),
        at: now,
        expires_at: now + chrono::Duration::seconds(i64::try_from(seconds).unwrap_or(MAX_EXPIRES_IN_S as i64)),
    };
    match ledger.approve_work_request(&input).await? {
        ApproveOutcome::Approved(a) => Ok(a),
        ApproveOutcome::NotFound => Err(LedgerError::NotFound(format!("no work request `{id}`"))),
        ApproveOutcome::NotOwner => Err(LedgerError::NotOwner("the work request")),
        ApproveOutcome::NotOpen(status) => {
            Err(LedgerError::Conflict(format!("the work request is {status}; only an open request can be approved")))
        }
        ApproveOutcome::StaleRevision(current) if body.revision > current => Err(LedgerError::Conflict(format!(
            "there is no revision {}; the request is at revision {current}",
            body.revision
        ))),
        ApproveOutcome::StaleRevision(current) => Err(LedgerError::Conflict(format!(
            "the work request changed: it is at revision {current}, not {}; review it again",
            body.revision
        ))),
    }
}

/// Revokes `owner_id`'s request `id` at `now`; stored and audited.
pub async fn revoke_request(
    ledger: &dyn LedgerStore,
    now: Timestamp,
    owner_id: &str,
    id: &str,
) -> Result<WorkRequestRecord, LedgerError> {
    match ledger.revoke_work_request(id, owner_id, now).await? {
        RevokeOutcome::Revoked(r) => Ok(r),
        RevokeOutcome::NotFound => Err(LedgerError::NotFound(format!("no work request `{id}`"))),
        RevokeOutcome::NotOwner => Err(LedgerError::NotOwner("the work request")),
        RevokeOutcome::AlreadyFinal(status) => {
            Err(LedgerError::Conflict(format!("the work request is already {status}")))
        }
    }
}

// Records as wire shapes.

/// The wire form of a stored request.
pub fn request_view(r: &WorkRequestRecord) -> Result<WorkRequest, LedgerError> {
    let kind = match r.kind.as_str() {
        "pr_summary" => WorkKind::PrSummary,
        other => return Err(LedgerError::Internal(format!("work request {} has an unknown kind {other:?}", r.id))),
    };
    let status = match r.status {
        WorkStatus::Open => RequestStatus::Open,
        WorkStatus::Approved => RequestStatus::Approved,
        WorkStatus::Claimed => RequestStatus::Claimed,
        WorkStatus::Completed => RequestStatus::Completed,
        WorkStatus::Failed => RequestStatus::Failed,
        WorkStatus::Revoked => RequestStatus::Revoked,
    };
    Ok(WorkRequest {
        id: r.id.clone(),
        revision: r.revision,
        epoch: r.epoch,
        kind,
        requester: r.requester.clone(),
        repository: r.repository.clone(),
        pr_number: r.pr_number,
        text: r.text.clone(),
        status,
        created_at: r.created_at,
        updated_at: r.updated_at,
    })
}

/// The wire form of a stored approval.
pub fn approval_view(a: &WorkApprovalRecord) -> Result<WorkApproval, LedgerError> {
    let scope = match a.scope.as_str() {
        "read" => WorkScope::Read,
        other => return Err(LedgerError::Internal(format!("approval {} has an unknown scope {other:?}", a.id))),
    };
    Ok(WorkApproval {
        id: a.id.clone(),
        request_id: a.request_id.clone(),
        revision: a.revision,
        epoch: a.epoch,
        repository: a.repository.clone(),
        pr_number: a.pr_number,
        head_sha: a.head_sha.clone(),
        scope,
        approved_by: a.approved_by.clone(),
        approved_at: a.approved_at,
        expires_at: a.expires_at,
    })
}

/// The stored name of an attempt's outcome.
pub fn outcome_name(outcome: AttemptOutcome) -> &'static str {
    match outcome {
        AttemptOutcome::Completed => "completed",
        AttemptOutcome::Failed => "failed",
        AttemptOutcome::NotVisible => "not_visible",
        AttemptOutcome::HeadMoved => "head_moved",
    }
}

/// The outcome stored as `name`; [`LedgerError::Internal`] for a name this version does not know.
pub fn outcome_of(name: &str) -> Result<AttemptOutcome, LedgerError> {
    Ok(match name {
        "completed" => AttemptOutcome::Completed,
        "failed" => AttemptOutcome::Failed,
        "not_visible" => AttemptOutcome::NotVisible,
        "head_moved" => AttemptOutcome::HeadMoved,
        other => return Err(LedgerError::Internal(format!("a stored result has an unknown outcome {other:?}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_checked() {
        assert_eq!(check_repository(" org/demo-1.x ").unwrap(), "org/demo-1.x");
        for bad in ["", "-x", "/etc", "a/../b", "a b", "x;rm", &"a".repeat(101)] {
            assert!(check_repository(bad).is_err(), "{bad}");
        }
        assert!(check_pr_number(0).is_err());
        assert!(check_pr_number(u64::MAX).is_err());
        assert_eq!(check_head_sha(&"AB".repeat(20)).unwrap(), "ab".repeat(20));
        assert!(check_head_sha(&"a".repeat(39)).is_err());
        assert!(check_head_sha(&"g".repeat(40)).is_err());
        assert!(check_expires_in(0).is_err());
        assert!(check_expires_in(86_401).is_err());
        assert!(check_text(&"x".repeat(4_001)).is_err());
        assert!(check_token_id("hub_id", "hub:laptop").is_ok());
        assert!(check_token_id("hub_id", "hub laptop").is_err());
    }
}
