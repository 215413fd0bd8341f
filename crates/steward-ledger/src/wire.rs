//! JSON shapes of the ledger's HTTP API (`/api/ledger/…` of `steward serve`), shared by the
//! server that answers and the hub that reads them.
//!
//! Every type refuses unknown fields (`deny_unknown_fields`, SPEC H5): a response carrying a
//! field this version does not know is an error, never silently ignored. Timestamps are
//! RFC 3339 UTC. Text written by requesters (the request's `text`, a PR's title or body) is
//! data: nothing in it ever changes a scope, a pin or a command.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A point in time, UTC.
pub type Timestamp = DateTime<Utc>;

/// What a work request asks for. The first and only kind: read pull request N of a
/// repository at the approved head SHA and summarise it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum WorkKind {
    /// `pr_summary`.
    PrSummary,
}

/// What an approved job may do. Only `read` exists for [`WorkKind::PrSummary`]; a request's
/// text asking for more never changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum WorkScope {
    /// `read`: the job reads the repository; it writes nothing outside its own run.
    Read,
}

/// Where a work request stands in the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RequestStatus {
    /// Waiting for the owner's approval.
    Open,
    /// Approved; a hub may claim it until the approval expires.
    Approved,
    /// Claimed by a hub (its authority was issued); the result is not reported yet.
    Claimed,
    /// A hub reported the job `completed`.
    Completed,
    /// A hub reported the job `failed` (or the PR not visible).
    Failed,
    /// The owner revoked the approval (the epoch was bumped); nothing may start.
    Revoked,
}

/// A work request, as `POST /api/ledger/requests` creates it and
/// `GET /api/ledger/requests/{id}` returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct WorkRequest {
    /// `wrq_` + 16 hex.
    pub id: String,
    /// Starts at 1; bumped whenever the requester changes the request. An approval pins one
    /// revision.
    pub revision: u32,
    /// Starts at 1; bumped by every revocation. An approval pins one epoch; a claim whose epoch
    /// is not the current one is denied.
    pub epoch: u64,
    /// What is asked for.
    pub kind: WorkKind,
    /// Who asked: an owner id (`local:<user>`, `web:<hex>`) of the API caller or token.
    pub requester: String,
    /// The repository, as the ledger's configuration names it (e.g. `demo`).
    pub repository: String,
    /// The pull request's number (≥ 1).
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub pr_number: u64,
    /// Free text from the requester: data for the job, never instructions to Steward.
    pub text: String,
    /// Where it stands.
    pub status: RequestStatus,
    /// When it was made.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
    /// When it last changed.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub updated_at: Timestamp,
}

/// Body of `POST /api/ledger/requests`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewWorkRequest {
    /// What is asked for.
    pub kind: WorkKind,
    /// The repository's name.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 100))]
    pub repository: String,
    /// The pull request's number (≥ 1).
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub pr_number: u64,
    /// Free text (at most 4,000 chars).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 4000))]
    pub text: String,
}

/// The owner's approval of one request, pinned to everything it was given for.
/// A claim must match every pin and arrive before `expires_at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct WorkApproval {
    /// `wap_` + 16 hex.
    pub id: String,
    /// The request approved.
    pub request_id: String,
    /// The request's revision that was approved.
    pub revision: u32,
    /// The authorization epoch at approval time.
    pub epoch: u64,
    /// The repository approved.
    pub repository: String,
    /// The pull request approved.
    pub pr_number: u64,
    /// The head commit approved: 40 lowercase hex chars. A job never follows a moved head.
    pub head_sha: String,
    /// What the job may do.
    pub scope: WorkScope,
    /// The owner who approved.
    pub approved_by: String,
    /// When it was approved.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub approved_at: Timestamp,
    /// After this, nothing may be claimed or started under it.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub expires_at: Timestamp,
}

/// Body of `POST /api/ledger/requests/{id}/approve` (owner only, web UI or terminal).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ApproveWorkRequest {
    /// The revision the owner saw; refused when the request changed since.
    pub revision: u32,
    /// The head SHA the owner approves (40 hex chars).
    #[cfg_attr(feature = "openapi", schema(min_length = 40, max_length = 40))]
    pub head_sha: String,
    /// How long the approval lasts, in seconds (1 ..= 86,400).
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 86400))]
    pub expires_in_s: u64,
}

/// One approved request a hub may claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    /// The approval with its pins.
    pub approval: WorkApproval,
    /// The request's text (data).
    pub text: String,
}

/// One page of `GET /api/ledger/candidates?cursor=…&limit=…` (limit 1 ..= 100, default 50).
/// The listing is complete only after a page whose `next_cursor` is `None`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CandidatePage {
    /// Candidates in a stable order (approval time, then id).
    pub items: Vec<Candidate>,
    /// Pass as `cursor` to get the next page; `None` on the last page.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub next_cursor: Option<String>,
}

/// Body of `POST /api/ledger/claims`: a hub asks for the one-time authority to run an
/// approval. Every pin is repeated so that the ledger refuses a claim made against a stale view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ClaimRequest {
    /// The approval claimed.
    pub approval_id: String,
    /// The request's id.
    pub request_id: String,
    /// The revision the hub saw.
    pub revision: u32,
    /// The epoch the hub saw.
    pub epoch: u64,
    /// The head SHA the hub saw.
    pub head_sha: String,
    /// Which hub claims (stable per hub, e.g. `hub:<host>`).
    pub hub_id: String,
    /// The hub's attempt id (`att_` + 16 hex), journaled before the claim was sent.
    pub attempt_id: String,
}

/// What became of a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthorityOutcome {
    /// The authority was issued to this claim: the hub may launch exactly once.
    Issued,
    /// The authority was already issued to an earlier claim (another attempt or hub).
    Spent,
    /// Refused: revoked, expired, a pin did not match, or the request is not approved.
    Denied,
    /// The hub cannot tell (no answer, a lost response): goes to reconciliation, never retried.
    Unknown,
}

/// The schema of [`ClaimResponse::outcome`]: the ledger answers `issued`, `spent` or `denied`,
/// never `unknown` (which only a hub concludes).
#[cfg(feature = "openapi")]
fn claim_outcome_schema() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(["issued", "spent", "denied"]))
        .description(Some("What became of the claim."))
        .build()
}

/// Answer to a claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ClaimResponse {
    /// What became of the claim (`issued`, `spent` or `denied`; the ledger never says
    /// `unknown`).
    #[cfg_attr(feature = "openapi", schema(schema_with = claim_outcome_schema))]
    pub outcome: AuthorityOutcome,
    /// `ath_` + 16 hex when `issued`; for `spent`, the authority issued earlier, named only to
    /// the bearer token that claimed it (null for any other token).
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub authority_id: Option<String>,
    /// The attempt the authority was issued to (this claim's when `issued`; for `spent`, only
    /// to the token that claimed it).
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub attempt_id: Option<String>,
    /// Why, when `denied` or `spent`: a fixed code (`revoked`, `expired`, `stale_revision`,
    /// `stale_epoch`, `head_mismatch`, `not_approved`, `already_claimed`, `unknown_approval`).
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub reason: Option<String>,
}

/// How an attempt ended, as the hub reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum AttemptOutcome {
    /// The job ran and produced its result.
    Completed,
    /// The job ran and failed.
    Failed,
    /// The PR (or its approved head) was not visible to the executor; nothing ran.
    NotVisible,
    /// The head moved after approval; nothing ran, the attempt is held for the owner.
    HeadMoved,
}

/// What one check found. A skipped check is never reported as passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum CheckOutcome {
    /// Ran and succeeded.
    Passed,
    /// Ran and failed.
    Failed,
    /// Not run (the reason belongs in the log reference or `not_checked`).
    Skipped,
    /// Could not be run or its result could not be read.
    Error,
}

/// One check the executor ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// The command as argv.
    pub command: Vec<String>,
    /// What it found.
    pub outcome: CheckOutcome,
    /// Its exit code, when it ran to an exit.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub exit_code: Option<i32>,
    /// Where its log is kept (e.g. `run:<run id>` or a path), if anywhere.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub log_ref: Option<String>,
}

/// Evidence binding a result to what was actually tested.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// The commit the executor read or tested (40 hex), if it got that far.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub tested_sha: Option<String>,
    /// Who executed: hub id and Steward version.
    pub executor: String,
    /// Relevant facts of the environment (OS, provider, model …); never secrets.
    pub environment: BTreeMap<String, String>,
    /// The checks run, in order.
    pub checks: Vec<Check>,
    /// What was explicitly not checked.
    pub not_checked: Vec<String>,
    /// The Steward run that executed the job, if one was started.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub run_id: Option<String>,
    /// The job's result text (the summary), redacted, if any.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub summary: Option<String>,
}

/// Body of `POST /api/ledger/authorities/{authority_id}/result`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ResultReport {
    /// The attempt the authority was issued to; any other is refused.
    pub attempt_id: String,
    /// How it ended.
    pub outcome: AttemptOutcome,
    /// What backs it.
    pub evidence: Evidence,
}

/// Answer to a result report. Reports are idempotent per attempt: a duplicate is attached to
/// the same attempt and never completes the request a second time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ResultAck {
    /// The attempt the report belongs to.
    pub attempt_id: String,
    /// `false` when this attempt's result had already been recorded (a duplicate report).
    pub first: bool,
    /// The outcome on record (the first report's).
    pub outcome: AttemptOutcome,
}

/// Error body of every ledger endpoint, the shape of every `steward serve` API error:
/// `{"error": {"class": "...", "message": "..."}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerError {
    /// The error.
    pub error: LedgerErrorDetail,
}

/// The error of a [`LedgerError`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerErrorDetail {
    /// Fixed code, e.g. `not_found`, `not_owner`, `invalid`, `conflict`, `unauthorized`.
    pub class: String,
    /// Human-readable explanation written by Steward.
    pub message: String,
}
