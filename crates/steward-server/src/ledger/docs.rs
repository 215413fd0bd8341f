//! OpenAPI: the ledger's operations and schema-only mirrors of `steward_ledger::wire`.

use super::*;

/// The ledger's part of the OpenAPI document (merged by [`crate::openapi::document`]).
#[derive(OpenApi)]
#[openapi(
    paths(create_request, list_requests, get_request, approve, revoke, candidates, claim, report_result),
    modifiers(&BearerSecurity),
    tags((name = "ledger", description = "The work ledger: requests, pinned approvals, one-time claims, results"))
)]
pub struct LedgerApi;

/// Adds the `bearer_token` security scheme.
struct BearerSecurity;

impl Modify for BearerSecurity {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let mut scheme = Http::new(HttpAuthScheme::Bearer);
        scheme.description = Some(
            "A token made with `steward mcp token create --scope …` or on the Tokens page (`stw_…`). The \
             `submit` scope files work requests, `read` reads them, `hub` lists candidates, claims and reports \
             results. A token never approves or revokes."
                .into(),
        );
        components.add_security_scheme("bearer_token", SecurityScheme::Http(scheme));
    }
}

fn string_enum(values: &[&str], description: &str) -> utoipa::openapi::Object {
    crate::openapi::string_enum(values, description)
}

fn kind_schema() -> utoipa::openapi::Object {
    string_enum(&["pr_summary"], "What is asked for: summarise pull request N at the approved head.")
}

fn request_status_schema() -> utoipa::openapi::Object {
    string_enum(&["open", "approved", "claimed", "completed", "failed", "revoked"], "Where the request stands.")
}

fn scope_schema() -> utoipa::openapi::Object {
    string_enum(&["read"], "What the job may do.")
}

fn authority_outcome_schema() -> utoipa::openapi::Object {
    string_enum(&["issued", "spent", "denied"], "What became of the claim.")
}

fn attempt_outcome_schema() -> utoipa::openapi::Object {
    string_enum(&["completed", "failed", "not_visible", "head_moved"], "How the attempt ended.")
}

fn check_outcome_schema() -> utoipa::openapi::Object {
    string_enum(&["passed", "failed", "skipped", "error"], "What the check found.")
}

/// Schema of `steward_ledger::wire::WorkRequest`.
#[derive(ToSchema)]
#[schema(as = WorkRequest)]
pub struct WorkRequestDoc {
    /// `wrq_` + 16 hex.
    pub id: String,
    /// Starts at 1; an approval pins one revision.
    pub revision: u32,
    /// Starts at 1; bumped by every revocation.
    pub epoch: u64,
    /// What is asked for.
    #[schema(schema_with = kind_schema)]
    pub kind: String,
    /// Who asked (an owner id).
    pub requester: String,
    /// The repository's name.
    pub repository: String,
    /// The pull request's number (≥ 1).
    #[schema(minimum = 1)]
    pub pr_number: u64,
    /// Free text from the requester: data, never instructions.
    pub text: String,
    /// Where it stands.
    #[schema(schema_with = request_status_schema)]
    pub status: String,
    /// When it was made (UTC).
    pub created_at: chrono::DateTime<Utc>,
    /// When it last changed (UTC).
    pub updated_at: chrono::DateTime<Utc>,
}

/// Schema of `steward_ledger::wire::NewWorkRequest`.
#[derive(ToSchema)]
#[schema(as = NewWorkRequest)]
pub struct NewWorkRequestDoc {
    /// What is asked for.
    #[schema(schema_with = kind_schema)]
    pub kind: String,
    /// The repository's name (letters, digits, `.`, `_`, `-`, `/`; at most 100).
    #[schema(min_length = 1, max_length = 100)]
    pub repository: String,
    /// The pull request's number (≥ 1).
    #[schema(minimum = 1)]
    pub pr_number: u64,
    /// Free text (at most 4,000 characters).
    #[schema(required = false, max_length = 4000)]
    pub text: String,
}

/// Schema of `steward_ledger::wire::WorkApproval`.
#[derive(ToSchema)]
#[schema(as = WorkApproval)]
pub struct WorkApprovalDoc {
    /// `wap_` + 16 hex.
    pub id: String,
    /// The request approved.
    pub request_id: String,
    /// The request's revision approved.
    pub revision: u32,
    /// The epoch at approval time.
    pub epoch: u64,
    /// The repository approved.
    pub repository: String,
    /// The pull request approved.
    pub pr_number: u64,
    /// The head commit approved (40 lowercase hex).
    pub head_sha: String,
    /// What the job may do.
    #[schema(schema_with = scope_schema)]
    pub scope: String,
    /// The owner who approved.
    pub approved_by: String,
    /// When (UTC).
    pub approved_at: chrono::DateTime<Utc>,
    /// After this, nothing may be claimed under it (UTC).
    pub expires_at: chrono::DateTime<Utc>,
}

/// Schema of `steward_ledger::wire::ApproveWorkRequest`.
#[derive(ToSchema)]
#[schema(as = ApproveWorkRequest)]
pub struct ApproveWorkRequestDoc {
    /// The revision the owner saw.
    pub revision: u32,
    /// The head SHA approved (40 hex).
    #[schema(min_length = 40, max_length = 40)]
    pub head_sha: String,
    /// Lifetime in seconds (1 to 86,400).
    #[schema(minimum = 1, maximum = 86400)]
    pub expires_in_s: u64,
}

/// Schema of `steward_ledger::wire::Candidate`.
#[derive(ToSchema)]
#[schema(as = Candidate)]
pub struct CandidateDoc {
    /// The approval with its pins.
    pub approval: WorkApprovalDoc,
    /// The request's text (data).
    pub text: String,
}

/// Schema of `steward_ledger::wire::CandidatePage`.
#[derive(ToSchema)]
#[schema(as = CandidatePage)]
pub struct CandidatePageDoc {
    /// Candidates by approval time, then id.
    pub items: Vec<CandidateDoc>,
    /// Pass as `cursor` for the next page; null on the last page.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// Schema of `steward_ledger::wire::ClaimRequest`.
#[derive(ToSchema)]
#[schema(as = ClaimRequest)]
pub struct ClaimRequestDoc {
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
    /// Which hub claims.
    pub hub_id: String,
    /// The hub's attempt id.
    pub attempt_id: String,
}

/// Schema of `steward_ledger::wire::ClaimResponse`.
#[derive(ToSchema)]
#[schema(as = ClaimResponse)]
pub struct ClaimResponseDoc {
    /// What became of the claim.
    #[schema(schema_with = authority_outcome_schema)]
    pub outcome: String,
    /// The authority (`issued`: this claim's; `spent`: the earlier one, only when this same token
    /// claimed it, else null).
    #[schema(required = true)]
    pub authority_id: Option<String>,
    /// The attempt the authority went to (null for `denied`, and for `spent` to another token).
    #[schema(required = true)]
    pub attempt_id: Option<String>,
    /// Why (`denied`, `spent`): `revoked`, `expired`, `stale_revision`, `stale_epoch`,
    /// `head_mismatch`, `not_approved`, `already_claimed`, `unknown_approval`.
    #[schema(required = true)]
    pub reason: Option<String>,
}

/// Schema of `steward_ledger::wire::Check`.
#[derive(ToSchema)]
#[schema(as = Check)]
pub struct CheckDoc {
    /// The command as argv.
    pub command: Vec<String>,
    /// What it found.
    #[schema(schema_with = check_outcome_schema)]
    pub outcome: String,
    /// Its exit code.
    #[schema(required = true)]
    pub exit_code: Option<i32>,
    /// Where its log is kept.
    #[schema(required = true)]
    pub log_ref: Option<String>,
}

/// Schema of `steward_ledger::wire::Evidence`.
#[derive(ToSchema)]
#[schema(as = Evidence)]
pub struct EvidenceDoc {
    /// The commit read or tested (40 hex).
    #[schema(required = true)]
    pub tested_sha: Option<String>,
    /// Who executed: hub id and Steward version.
    pub executor: String,
    /// Facts of the environment; never secrets.
    pub environment: std::collections::BTreeMap<String, String>,
    /// The checks run, in order.
    pub checks: Vec<CheckDoc>,
    /// What was explicitly not checked.
    pub not_checked: Vec<String>,
    /// The Steward run that executed the job.
    #[schema(required = true)]
    pub run_id: Option<String>,
    /// The job's result text, redacted.
    #[schema(required = true)]
    pub summary: Option<String>,
}

/// Schema of `steward_ledger::wire::ResultReport`.
#[derive(ToSchema)]
#[schema(as = ResultReport)]
pub struct ResultReportDoc {
    /// The attempt the authority was issued to.
    pub attempt_id: String,
    /// How it ended.
    #[schema(schema_with = attempt_outcome_schema)]
    pub outcome: String,
    /// What backs it.
    pub evidence: EvidenceDoc,
}

/// Schema of `steward_ledger::wire::ResultAck`.
#[derive(ToSchema)]
#[schema(as = ResultAck)]
pub struct ResultAckDoc {
    /// The attempt.
    pub attempt_id: String,
    /// False for a duplicate report.
    pub first: bool,
    /// The outcome on record.
    #[schema(schema_with = attempt_outcome_schema)]
    pub outcome: String,
}
