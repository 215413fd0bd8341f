//! The work ledger's authority side (SPEC H1, H2): `/api/ledger/…` and the Ledger page.
//!
//! Who may do what:
//! - the owner (browser cookie + CSRF header, or the terminal through the store) files work
//!   requests, lists and reads their own, approves them pinned to a revision, a head SHA and an
//!   expiry, and revokes them;
//! - a bearer token with the `submit` scope files requests for its owner (and, like one with
//!   `read`, reads them); a token can never approve or revoke;
//! - a bearer token with the `hub` scope lists its owner's claimable candidates, claims one
//!   (one-time: `issued`, `spent` or `denied` with a fixed reason) and reports the attempt's
//!   result (idempotent per attempt). An authority belongs to the token that claimed it: only
//!   that token reports its result, and only to it does a `spent` answer name the authority and
//!   the attempt.
//!
//! Requests with `Authorization: Bearer …` to `/api/ledger/…` are answered by [`bearer_layer`]
//! (outside the cookie and CSRF layer: a bearer token is not sent by browsers on their own, so
//! it needs no CSRF token); every other request goes through [`crate::session::owner_layer`].
//! The JSON shapes are those of [`steward_ledger::wire`]; unknown fields are refused and every
//! body has a size limit ([`MAX_BODY`], [`MAX_RESULT_BODY`]). Text from requesters is stored and
//! shown as data; nothing in it changes a pin, a scope or a command.

use axum::extract::{DefaultBodyLimit, Form, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use chrono::Utc;
use minijinja::context;
use serde::Deserialize;
use steward_ledger::wire::{
    ApproveWorkRequest, AttemptOutcome, AuthorityOutcome, Candidate, CandidatePage, ClaimRequest, ClaimResponse,
    Evidence, NewWorkRequest, RequestStatus, ResultAck, ResultReport, WorkApproval, WorkKind, WorkRequest, WorkScope,
};
use steward_mcp::mcp_server::{Caller, Scope};
use steward_store::ledger::{
    ApproveInput, ApproveOutcome, CandidateCursor, ClaimInput, ClaimOutcome, ResultInput, ResultOutcome, RevokeOutcome,
    WorkApprovalRecord, WorkRequestRecord, WorkStatus,
};
use steward_store::{LedgerStore, new_id};
use tower::ServiceExt;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{IntoParams, Modify, OpenApi, ToSchema};

use crate::api::{ApiJson, ApiPath, ApiQuery};
use crate::error::{ApiError, ErrorBody};
use crate::pages::{error_page, form_post, render};
use crate::session::Session;
use crate::state::AppState;
use crate::tokens::{self, AuthError};

/// Largest body of a ledger request except result reports (16 KiB).
pub const MAX_BODY: usize = 16 * 1024;
/// Largest body of a result report (256 KiB: the evidence carries a summary and checks).
pub const MAX_RESULT_BODY: usize = 256 * 1024;
/// Longest request text, in characters.
pub const MAX_TEXT_CHARS: usize = 4_000;
/// Longest repository name, in characters.
pub const MAX_REPOSITORY_CHARS: usize = 100;
/// Longest hub or attempt id, in characters.
pub const MAX_ID_CHARS: usize = 100;
/// Longest approval, in seconds (one day).
pub const MAX_EXPIRES_IN_S: u64 = 86_400;
/// Candidates per page when `limit` is absent.
pub const CANDIDATES_DEFAULT: u32 = 50;
/// Most candidates per page.
pub const CANDIDATES_MAX: u32 = 100;
/// Requests listed by `GET /api/ledger/requests` and the Ledger page (newest first).
pub const LIST_LIMIT: u32 = 200;

/// Who calls a ledger endpoint: the owner of a browser session, or a bearer token's owner
/// with its scopes.
#[derive(Debug, Clone)]
pub enum Principal {
    /// A browser session (cookie; its CSRF token was checked for a state change).
    Owner(Session),
    /// A bearer token (checked by [`bearer_layer`]).
    Token {
        /// Its owner and scopes.
        caller: Caller,
        /// The token's id (`mcp_…`; never its secret).
        token_id: String,
    },
}

impl Principal {
    /// The owner id the caller acts for.
    pub fn owner_id(&self) -> &str {
        match self {
            Principal::Owner(s) => &s.owner_id,
            Principal::Token { caller, .. } => &caller.owner_id,
        }
    }

    /// Like [`Principal::token_with`], also answering the token's id.
    fn token_id_with(&self, scope: Scope, what: &str) -> Result<(&Caller, &str), ApiError> {
        let caller = self.token_with(scope, what)?;
        match self {
            Principal::Token { token_id, .. } => Ok((caller, token_id)),
            Principal::Owner(_) => Err(forbidden(format!("{what} needs a bearer token"))),
        }
    }

    /// Refused unless this is a token with `scope` (403 `forbidden`).
    fn token_with(&self, scope: Scope, what: &str) -> Result<&Caller, ApiError> {
        match self {
            Principal::Token { caller, .. } if caller.may(scope) => Ok(caller),
            Principal::Token { .. } => {
                Err(forbidden(format!("{what} needs a bearer token with the `{}` scope", scope.as_str())))
            }
            Principal::Owner(_) => {
                Err(forbidden(format!("{what} needs a bearer token with the `{}` scope", scope.as_str())))
            }
        }
    }

    /// Refused unless this is the owner's session (403 `forbidden`): approving and revoking
    /// are never done with a token.
    fn owner_session(&self, what: &str) -> Result<&Session, ApiError> {
        match self {
            Principal::Owner(s) => Ok(s),
            Principal::Token { .. } => Err(forbidden(format!(
                "{what} is done by the owner in the web UI or the terminal, never with a bearer token"
            ))),
        }
    }
}

/// The caller a bearer token stands for and the token's id, as [`bearer_layer`] puts them into
/// the request.
#[derive(Debug, Clone)]
struct TokenCaller(Caller, String);

impl<S: Send + Sync> FromRequestParts<S> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        if let Some(TokenCaller(caller, token_id)) = parts.extensions.get::<TokenCaller>() {
            return Ok(Principal::Token { caller: caller.clone(), token_id: token_id.clone() });
        }
        match parts.extensions.get::<Session>() {
            Some(session) => Ok(Principal::Owner(session.clone())),
            None => Err(ApiError {
                status: StatusCode::INTERNAL_SERVER_ERROR,
                class: "internal",
                message: "the request has neither a session nor a token".into(),
            }),
        }
    }
}

/// 403 `forbidden`: the caller is who it says, but may not do this.
fn forbidden(message: String) -> ApiError {
    ApiError { status: StatusCode::FORBIDDEN, class: "forbidden", message }
}

/// 409 `conflict`.
fn conflict(message: String) -> ApiError {
    ApiError { status: StatusCode::CONFLICT, class: "conflict", message }
}

/// 401 `unauthorized` with `WWW-Authenticate: Bearer`.
fn unauthorized(error: AuthError) -> Response {
    let message = match error {
        AuthError::Revoked => "the bearer token was revoked",
        AuthError::Missing => "this endpoint needs `Authorization: Bearer <token>`",
        _ => "unknown bearer token",
    };
    let body = ApiError { status: StatusCode::UNAUTHORIZED, class: "unauthorized", message: message.into() };
    let mut response = body.into_response();
    response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(r#"Bearer realm="steward""#));
    response
}

/// The ledger of the server's store; 500 `internal` for a store without one.
fn ledger(state: &AppState) -> Result<&dyn LedgerStore, ApiError> {
    state.runtime.store.ledger().ok_or_else(|| ApiError {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        class: "internal",
        message: "this server's store keeps no work ledger".into(),
    })
}

// ---------------------------------------------------------------------------------------------
// Checks shared with the terminal (`steward ledger …`) and the MCP tool.

/// Checks a repository name: 1 to [`MAX_REPOSITORY_CHARS`] characters of ASCII letters,
/// digits, `.`, `_`, `-` and `/`, not starting with `.`, `-` or `/`, without `..`.
pub fn check_repository(name: &str) -> Result<String, String> {
    let name = name.trim();
    let ok_chars = name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-/".contains(&b));
    if name.is_empty()
        || name.len() > MAX_REPOSITORY_CHARS
        || !ok_chars
        || name.starts_with(['.', '-', '/'])
        || name.contains("..")
    {
        return Err(format!(
            "the repository must be 1 to {MAX_REPOSITORY_CHARS} characters of letters, digits, `.`, `_`, `-` and `/` \
             (e.g. `demo` or `org/demo`)"
        ));
    }
    Ok(name.to_string())
}

/// Checks a PR number: 1 ..= `i64::MAX`.
pub fn check_pr_number(n: u64) -> Result<u64, String> {
    if n == 0 || i64::try_from(n).is_err() {
        return Err("the pull request number must be at least 1".into());
    }
    Ok(n)
}

/// Checks a request's text: at most [`MAX_TEXT_CHARS`] characters.
pub fn check_text(text: &str) -> Result<String, String> {
    if text.chars().count() > MAX_TEXT_CHARS {
        return Err(format!("the text is longer than {MAX_TEXT_CHARS} characters"));
    }
    Ok(text.to_string())
}

/// Checks a head SHA: exactly 40 hex characters; answered in lowercase.
pub fn check_head_sha(sha: &str) -> Result<String, String> {
    let sha = sha.trim();
    if sha.len() != 40 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("the head SHA must be the full commit id: 40 hex characters".into());
    }
    Ok(sha.to_ascii_lowercase())
}

/// Checks an approval's lifetime in seconds: 1 ..= [`MAX_EXPIRES_IN_S`].
pub fn check_expires_in(seconds: u64) -> Result<u64, String> {
    if seconds == 0 || seconds > MAX_EXPIRES_IN_S {
        return Err(format!("the approval must last 1 to {MAX_EXPIRES_IN_S} seconds"));
    }
    Ok(seconds)
}

/// Checks a hub or attempt id: 1 to [`MAX_ID_CHARS`] characters of ASCII letters, digits,
/// `_`, `-`, `.`, `:` and `@`.
fn check_token_id(what: &str, id: &str) -> Result<(), ApiError> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ID_CHARS
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.:@".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid(format!(
            "{what} must be 1 to {MAX_ID_CHARS} characters of letters, digits, `_`, `-`, `.`, `:` and `@`"
        )))
    }
}

/// The wire name of a kind.
fn kind_name(kind: WorkKind) -> &'static str {
    match kind {
        WorkKind::PrSummary => "pr_summary",
    }
}

/// A new, `open` request of `requester` from `new`, after its checks; stored and audited.
pub async fn file_request(
    ledger: &dyn LedgerStore,
    requester: &str,
    new: &NewWorkRequest,
) -> Result<WorkRequestRecord, ApiError> {
    let repository = check_repository(&new.repository).map_err(ApiError::invalid)?;
    let pr_number = check_pr_number(new.pr_number).map_err(ApiError::invalid)?;
    let text = check_text(&new.text).map_err(ApiError::invalid)?;
    let now = Utc::now();
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
    ledger.insert_work_request(&record).await.map_err(ApiError::storage)?;
    Ok(record)
}

/// Approves `owner_id`'s request `id` as `body` says (checks first); stored and audited.
pub async fn approve_request(
    ledger: &dyn LedgerStore,
    owner_id: &str,
    id: &str,
    body: &ApproveWorkRequest,
) -> Result<WorkApprovalRecord, ApiError> {
    let head_sha = check_head_sha(&body.head_sha).map_err(ApiError::invalid)?;
    let seconds = check_expires_in(body.expires_in_s).map_err(ApiError::invalid)?;
    let now = Utc::now();
    let input = ApproveInput {
        request_id: id.to_string(),
        owner_id: owner_id.to_string(),
        revision: body.revision,
        head_sha,
        scope: "read".into(),
        at: now,
        expires_at: now + chrono::Duration::seconds(i64::try_from(seconds).unwrap_or(MAX_EXPIRES_IN_S as i64)),
    };
    match ledger.approve_work_request(&input).await.map_err(ApiError::storage)? {
        ApproveOutcome::Approved(a) => Ok(a),
        ApproveOutcome::NotFound => Err(ApiError::not_found(format!("no work request `{id}`"))),
        ApproveOutcome::NotOwner => Err(ApiError::not_owner("the work request")),
        ApproveOutcome::NotOpen(status) => {
            Err(conflict(format!("the work request is {status}; only an open request can be approved")))
        }
        ApproveOutcome::StaleRevision(current) if body.revision > current => {
            Err(conflict(format!("there is no revision {}; the request is at revision {current}", body.revision)))
        }
        ApproveOutcome::StaleRevision(current) => Err(conflict(format!(
            "the work request changed: it is at revision {current}, not {}; review it again",
            body.revision
        ))),
    }
}

/// Revokes `owner_id`'s request `id`; stored and audited.
pub async fn revoke_request(ledger: &dyn LedgerStore, owner_id: &str, id: &str) -> Result<WorkRequestRecord, ApiError> {
    match ledger.revoke_work_request(id, owner_id, Utc::now()).await.map_err(ApiError::storage)? {
        RevokeOutcome::Revoked(r) => Ok(r),
        RevokeOutcome::NotFound => Err(ApiError::not_found(format!("no work request `{id}`"))),
        RevokeOutcome::NotOwner => Err(ApiError::not_owner("the work request")),
        RevokeOutcome::AlreadyFinal(status) => Err(conflict(format!("the work request is already {status}"))),
    }
}

// ---------------------------------------------------------------------------------------------
// Records as wire shapes.

fn internal(message: String) -> ApiError {
    ApiError { status: StatusCode::INTERNAL_SERVER_ERROR, class: "internal", message }
}

/// The wire form of a stored request.
pub fn request_view(r: &WorkRequestRecord) -> Result<WorkRequest, ApiError> {
    let kind = match r.kind.as_str() {
        "pr_summary" => WorkKind::PrSummary,
        other => return Err(internal(format!("work request {} has an unknown kind {other:?}", r.id))),
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
pub fn approval_view(a: &WorkApprovalRecord) -> Result<WorkApproval, ApiError> {
    let scope = match a.scope.as_str() {
        "read" => WorkScope::Read,
        other => return Err(internal(format!("approval {} has an unknown scope {other:?}", a.id))),
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

fn outcome_name(outcome: AttemptOutcome) -> &'static str {
    match outcome {
        AttemptOutcome::Completed => "completed",
        AttemptOutcome::Failed => "failed",
        AttemptOutcome::NotVisible => "not_visible",
        AttemptOutcome::HeadMoved => "head_moved",
    }
}

fn outcome_of(name: &str) -> Result<AttemptOutcome, ApiError> {
    Ok(match name {
        "completed" => AttemptOutcome::Completed,
        "failed" => AttemptOutcome::Failed,
        "not_visible" => AttemptOutcome::NotVisible,
        "head_moved" => AttemptOutcome::HeadMoved,
        other => return Err(internal(format!("a stored result has an unknown outcome {other:?}"))),
    })
}

// ---------------------------------------------------------------------------------------------
// The JSON API.

/// The owner's work requests, newest first.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct WorkRequestList {
    /// At most 200.
    #[schema(value_type = Vec<WorkRequestDoc>)]
    pub requests: Vec<WorkRequest>,
}

/// Query of `GET /api/ledger/candidates`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CandidateQuery {
    /// `next_cursor` of the previous page; absent for the first page.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Candidates per page, 1 to 100 (default 50).
    #[serde(default)]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
}

/// Files a work request for the caller.
///
/// The request starts `open`; only its requester's owner approves it (web UI or terminal).
#[utoipa::path(
    post,
    path = "/api/ledger/requests",
    tag = "ledger",
    request_body = NewWorkRequestDoc,
    security(("owner_cookie" = [], "csrf_token" = []), ("bearer_token" = ["submit"])),
    responses(
        (status = 201, description = "Filed", body = WorkRequestDoc),
        (status = 400, body = ErrorBody, description = "`invalid`: a bad repository name, PR number or text, an \
            unknown field, or a body that does not fit"),
        (status = 401, description = "`unauthorized`: an unknown or revoked bearer token", body = ErrorBody),
        (status = 403, description = "`csrf`, or `forbidden`: a token without the `submit` scope", body = ErrorBody),
        (status = 413, description = "`invalid`: the body is larger than 16 KiB", body = ErrorBody),
        (status = 415, description = "`invalid`: the body is not `application/json`", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn create_request(
    State(state): State<AppState>,
    principal: Principal,
    ApiJson(body): ApiJson<NewWorkRequest>,
) -> Result<Response, ApiError> {
    if let Principal::Token { .. } = principal {
        principal.token_with(Scope::Submit, "filing a work request")?;
    }
    let record = file_request(ledger(&state)?, principal.owner_id(), &body).await?;
    Ok((StatusCode::CREATED, Json(request_view(&record)?)).into_response())
}

fn may_read(principal: &Principal) -> Result<(), ApiError> {
    match principal {
        Principal::Token { caller: c, .. } if !(c.may(Scope::Read) || c.may(Scope::Submit)) => {
            Err(forbidden("reading work requests needs a token with the `read` or `submit` scope".into()))
        }
        _ => Ok(()),
    }
}

/// The caller's work requests, newest first (at most 200).
#[utoipa::path(
    get,
    path = "/api/ledger/requests",
    tag = "ledger",
    security((), ("owner_cookie" = []), ("bearer_token" = ["read"])),
    responses(
        (status = 200, description = "The caller's work requests", body = WorkRequestList),
        (status = 401, description = "`unauthorized`: an unknown or revoked bearer token", body = ErrorBody),
        (status = 403, description = "`forbidden`: a token without `read` or `submit`", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn list_requests(
    State(state): State<AppState>,
    principal: Principal,
) -> Result<Json<WorkRequestList>, ApiError> {
    may_read(&principal)?;
    let records = ledger(&state)?.work_requests(principal.owner_id(), LIST_LIMIT).await.map_err(ApiError::storage)?;
    let requests = records.iter().map(request_view).collect::<Result<_, _>>()?;
    Ok(Json(WorkRequestList { requests }))
}

/// One of the caller's work requests.
#[utoipa::path(
    get,
    path = "/api/ledger/requests/{id}",
    tag = "ledger",
    params(("id" = String, Path, description = "Work request id (`wrq_…`)")),
    security((), ("owner_cookie" = []), ("bearer_token" = ["read"])),
    responses(
        (status = 200, description = "The work request", body = WorkRequestDoc),
        (status = 401, description = "`unauthorized`: an unknown or revoked bearer token", body = ErrorBody),
        (status = 403, description = "`not_owner`: another owner's request; `forbidden`: a token without `read` or \
            `submit`", body = ErrorBody),
        (status = 404, description = "`not_found`: no such request", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn get_request(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<WorkRequest>, ApiError> {
    may_read(&principal)?;
    let record = owned_request(ledger(&state)?, principal.owner_id(), &id).await?;
    Ok(Json(request_view(&record)?))
}

async fn owned_request(ledger: &dyn LedgerStore, owner_id: &str, id: &str) -> Result<WorkRequestRecord, ApiError> {
    match ledger.work_request(id).await.map_err(ApiError::storage)? {
        Some(r) if r.requester == owner_id => Ok(r),
        Some(_) => Err(ApiError::not_owner("the work request")),
        None => Err(ApiError::not_found(format!("no work request `{id}`"))),
    }
}

/// Approves one of the caller's open work requests (owner only: never with a bearer token).
///
/// The approval pins the request's id, revision and epoch, its repository and PR, the head SHA
/// given here, the scope `read` and an expiry; a hub's claim must match every pin.
#[utoipa::path(
    post,
    path = "/api/ledger/requests/{id}/approve",
    tag = "ledger",
    params(("id" = String, Path, description = "Work request id (`wrq_…`)")),
    request_body = ApproveWorkRequestDoc,
    security(("owner_cookie" = [], "csrf_token" = [])),
    responses(
        (status = 200, description = "Approved", body = WorkApprovalDoc),
        (status = 400, body = ErrorBody, description = "`invalid`: a bad head SHA or lifetime, an unknown field, or \
            a body that does not fit"),
        (status = 401, description = "`unauthorized`: an unknown or revoked bearer token", body = ErrorBody),
        (status = 403, description = "`csrf`; `not_owner`: another owner's request; `forbidden`: a bearer token",
            body = ErrorBody),
        (status = 404, description = "`not_found`: no such request", body = ErrorBody),
        (status = 409, description = "`conflict`: the request is not open, or is at another revision",
            body = ErrorBody),
        (status = 413, description = "`invalid`: the body is larger than 16 KiB", body = ErrorBody),
        (status = 415, description = "`invalid`: the body is not `application/json`", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn approve(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<ApproveWorkRequest>,
) -> Result<Json<WorkApproval>, ApiError> {
    let session = principal.owner_session("approving")?;
    let approval = approve_request(ledger(&state)?, &session.owner_id, &id, &body).await?;
    Ok(Json(approval_view(&approval)?))
}

/// Revokes one of the caller's work requests (owner only): its epoch is bumped and every
/// later claim is denied `revoked`.
#[utoipa::path(
    post,
    path = "/api/ledger/requests/{id}/revoke",
    tag = "ledger",
    params(("id" = String, Path, description = "Work request id (`wrq_…`)")),
    security(("owner_cookie" = [], "csrf_token" = [])),
    responses(
        (status = 200, description = "Revoked: the request with its new epoch", body = WorkRequestDoc),
        (status = 401, description = "`unauthorized`: an unknown or revoked bearer token", body = ErrorBody),
        (status = 403, description = "`csrf`; `not_owner`: another owner's request; `forbidden`: a bearer token",
            body = ErrorBody),
        (status = 404, description = "`not_found`: no such request", body = ErrorBody),
        (status = 409, description = "`conflict`: the request already ended", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn revoke(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<WorkRequest>, ApiError> {
    let session = principal.owner_session("revoking")?;
    let record = revoke_request(ledger(&state)?, &session.owner_id, &id).await?;
    Ok(Json(request_view(&record)?))
}

/// One page of the approvals the token's owner approved that a hub may claim now: approved,
/// not expired, of the current epoch, not claimed yet; by approval time, then id.
#[utoipa::path(
    get,
    path = "/api/ledger/candidates",
    tag = "ledger",
    params(CandidateQuery),
    security(("bearer_token" = ["hub"])),
    responses(
        (status = 200, description = "One page; complete once `next_cursor` is null", body = CandidatePageDoc),
        (status = 400, description = "`invalid`: a bad cursor or limit, or an unknown parameter", body = ErrorBody),
        (status = 401, description = "`unauthorized`: no, an unknown or a revoked bearer token", body = ErrorBody),
        (status = 403, description = "`forbidden`: a token without the `hub` scope; `csrf`: an `Origin` naming \
            another site", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn candidates(
    State(state): State<AppState>,
    principal: Principal,
    ApiQuery(query): ApiQuery<CandidateQuery>,
) -> Result<Json<CandidatePage>, ApiError> {
    let caller = principal.token_with(Scope::Hub, "listing candidates")?;
    let limit = query.limit.unwrap_or(CANDIDATES_DEFAULT);
    if !(1..=CANDIDATES_MAX).contains(&limit) {
        return Err(ApiError::invalid(format!("limit must be 1 to {CANDIDATES_MAX}")));
    }
    let cursor = match query.cursor.as_deref().filter(|c| !c.is_empty()) {
        Some(text) => Some(
            CandidateCursor::decode(text)
                .ok_or_else(|| ApiError::invalid("the cursor is not one this ledger gave out"))?,
        ),
        None => None,
    };
    let found = ledger(&state)?
        .ledger_candidates(&caller.owner_id, cursor.as_ref(), limit, Utc::now())
        .await
        .map_err(ApiError::storage)?;
    let next_cursor = match found.last() {
        Some(last) if found.len() == limit as usize => Some(CandidateCursor::after(&last.approval).encode()),
        _ => None,
    };
    let items = found
        .iter()
        .map(|c| Ok(Candidate { approval: approval_view(&c.approval)?, text: c.text.clone() }))
        .collect::<Result<_, ApiError>>()?;
    Ok(Json(CandidatePage { items, next_cursor }))
}

/// Claims an approval: the one-time authority to run it.
///
/// `issued` once (to the first claim that matches every pin); afterwards `spent`, naming the
/// authority and the attempt it went to only when this same token claimed it (so a hub
/// recognises its own earlier claim; another token learns neither id); or `denied` with
/// `reason` `revoked`, `expired`, `stale_revision`, `stale_epoch`, `head_mismatch`,
/// `not_approved` or `unknown_approval`. The pins, revocation and expiry are checked before an
/// existing authority is answered `spent`: a claim replayed after the request was revoked or
/// the approval expired is `denied`. Every outcome is answered with 200: a denial is a
/// decision, not an error.
#[utoipa::path(
    post,
    path = "/api/ledger/claims",
    tag = "ledger",
    request_body = ClaimRequestDoc,
    security(("bearer_token" = ["hub"])),
    responses(
        (status = 200, description = "The decision", body = ClaimResponseDoc),
        (status = 400, body = ErrorBody, description = "`invalid`: a bad hub or attempt id, an unknown field, or a \
            body that does not fit"),
        (status = 401, description = "`unauthorized`: no, an unknown or a revoked bearer token", body = ErrorBody),
        (status = 403, description = "`forbidden`: a token without the `hub` scope; `csrf`: an `Origin` naming \
            another site", body = ErrorBody),
        (status = 413, description = "`invalid`: the body is larger than 16 KiB", body = ErrorBody),
        (status = 415, description = "`invalid`: the body is not `application/json`", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn claim(
    State(state): State<AppState>,
    principal: Principal,
    ApiJson(body): ApiJson<ClaimRequest>,
) -> Result<Json<ClaimResponse>, ApiError> {
    let (caller, token_id) = principal.token_id_with(Scope::Hub, "claiming")?;
    check_token_id("hub_id", &body.hub_id)?;
    check_token_id("attempt_id", &body.attempt_id)?;
    let input = ClaimInput {
        approval_id: body.approval_id.clone(),
        request_id: body.request_id.clone(),
        revision: body.revision,
        epoch: body.epoch,
        head_sha: body.head_sha.to_ascii_lowercase(),
        owner_id: caller.owner_id.clone(),
        hub_id: body.hub_id.clone(),
        token_id: token_id.to_string(),
        attempt_id: body.attempt_id.clone(),
        at: Utc::now(),
    };
    let answer = match ledger(&state)?.claim_approval(&input).await.map_err(ApiError::storage)? {
        ClaimOutcome::Issued(a) => ClaimResponse {
            outcome: AuthorityOutcome::Issued,
            authority_id: Some(a.id),
            attempt_id: Some(a.attempt_id),
            reason: None,
        },
        // Only the token that claimed learns which authority and attempt hold it.
        ClaimOutcome::Spent(a) if a.claimed_by(token_id) => ClaimResponse {
            outcome: AuthorityOutcome::Spent,
            authority_id: Some(a.id),
            attempt_id: Some(a.attempt_id),
            reason: Some("already_claimed".into()),
        },
        ClaimOutcome::Spent(_) => ClaimResponse {
            outcome: AuthorityOutcome::Spent,
            authority_id: None,
            attempt_id: None,
            reason: Some("already_claimed".into()),
        },
        ClaimOutcome::Denied(reason) => ClaimResponse {
            outcome: AuthorityOutcome::Denied,
            authority_id: None,
            attempt_id: None,
            reason: Some(reason.as_str().into()),
        },
    };
    Ok(Json(answer))
}

/// Reports how the attempt holding an authority ended, with its evidence.
///
/// Only the bearer token that claimed the authority may report (another token of the same
/// owner is refused 403 `forbidden`). Idempotent per attempt: the first report is recorded and
/// ends the request (`completed`, or `failed` for every other outcome); a later one answers
/// `first: false` with the outcome on record and changes nothing.
#[utoipa::path(
    post,
    path = "/api/ledger/authorities/{id}/result",
    tag = "ledger",
    params(("id" = String, Path, description = "Authority id (`ath_…`)")),
    request_body = ResultReportDoc,
    security(("bearer_token" = ["hub"])),
    responses(
        (status = 200, description = "Recorded, or a duplicate of the recorded result", body = ResultAckDoc),
        (status = 400, body = ErrorBody, description = "`invalid`: an unknown field, or a body that does not fit"),
        (status = 401, description = "`unauthorized`: no, an unknown or a revoked bearer token", body = ErrorBody),
        (status = 403, description = "`forbidden`: a token without the `hub` scope, or another token than the one \
            that claimed the authority; `csrf`: an `Origin` naming another site", body = ErrorBody),
        (status = 404, description = "`not_found`: no such authority (of this owner)", body = ErrorBody),
        (status = 409, description = "`conflict`: the authority was issued to another attempt", body = ErrorBody),
        (status = 413, description = "`invalid`: the body is larger than 256 KiB", body = ErrorBody),
        (status = 415, description = "`invalid`: the body is not `application/json`", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn report_result(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<ResultReport>,
) -> Result<Json<ResultAck>, ApiError> {
    let (caller, token_id) = principal.token_id_with(Scope::Hub, "reporting a result")?;
    check_token_id("attempt_id", &body.attempt_id)?;
    let evidence = serde_json::to_string(&body.evidence).map_err(|e| internal(format!("evidence: {e}")))?;
    let input = ResultInput {
        authority_id: id.clone(),
        attempt_id: body.attempt_id.clone(),
        owner_id: caller.owner_id.clone(),
        token_id: token_id.to_string(),
        outcome: outcome_name(body.outcome).into(),
        evidence,
        at: Utc::now(),
    };
    match ledger(&state)?.record_result(&input).await.map_err(ApiError::storage)? {
        ResultOutcome::Recorded { first, result } => {
            Ok(Json(ResultAck { attempt_id: result.attempt_id, first, outcome: outcome_of(&result.outcome)? }))
        }
        ResultOutcome::UnknownAuthority => Err(ApiError::not_found(format!("no authority `{id}`"))),
        ResultOutcome::OtherToken => Err(forbidden(format!(
            "authority `{id}` was claimed with another bearer token; only the token that claimed it reports its \
             result; nothing was recorded"
        ))),
        ResultOutcome::WrongAttempt(expected) => Err(conflict(format!(
            "authority `{id}` was issued to attempt `{expected}`, not `{}`; nothing was recorded",
            body.attempt_id
        ))),
    }
}

// ---------------------------------------------------------------------------------------------
// Bearer tokens.

/// The ledger's API answering bearer-token calls (no cookie, no CSRF), with [`bearer_layer`].
#[derive(Clone)]
pub struct TokenRoutes {
    state: AppState,
    router: Router,
}

impl TokenRoutes {
    /// The routes of `/api/ledger/…` for calls with a bearer token.
    pub fn new(state: AppState) -> Self {
        let router = Router::new()
            .route("/api/ledger/requests", get(list_requests).post(create_request).layer(body_limit()))
            .route("/api/ledger/requests/{id}", get(get_request))
            .route("/api/ledger/requests/{id}/approve", post(approve).layer(body_limit()))
            .route("/api/ledger/requests/{id}/revoke", post(revoke).layer(body_limit()))
            .route("/api/ledger/candidates", get(candidates))
            .route("/api/ledger/claims", post(claim).layer(body_limit()))
            .route("/api/ledger/authorities/{id}/result", post(report_result).layer(result_body_limit()))
            .fallback(|| async { ApiError::not_found("no such ledger endpoint") })
            .with_state(state.clone());
        TokenRoutes { state, router }
    }
}

/// The body limit of ledger requests ([`MAX_BODY`]).
pub fn body_limit() -> DefaultBodyLimit {
    DefaultBodyLimit::max(MAX_BODY)
}

/// The body limit of result reports ([`MAX_RESULT_BODY`]).
pub fn result_body_limit() -> DefaultBodyLimit {
    DefaultBodyLimit::max(MAX_RESULT_BODY)
}

/// True for the operations only a hub token may call (candidates, claims, results).
fn is_hub_operation(method: &Method, path: &str) -> bool {
    match *method {
        Method::GET => path == "/api/ledger/candidates",
        Method::POST => {
            path == "/api/ledger/claims"
                || path.strip_prefix("/api/ledger/authorities/").is_some_and(|rest| rest.ends_with("/result"))
        }
        _ => false,
    }
}

/// Middleware in front of the cookie layer: a request to `/api/ledger/…` that carries
/// `Authorization: Bearer …` is answered by [`TokenRoutes`] for the token's owner and scopes
/// (401 `unauthorized` for a missing, unknown or revoked token; 403 `csrf` for an `Origin`
/// naming another site); a request to a hub-only endpoint without a token is 401; every other
/// request passes on unchanged.
pub async fn bearer_layer(State(routes): State<TokenRoutes>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let authorization = request.headers().get(header::AUTHORIZATION).cloned();
    let Some(authorization) = authorization.filter(|_| path.starts_with("/api/ledger/")) else {
        if is_hub_operation(request.method(), path) {
            // Only hubs call these, and only with a token: no cookie session is made for them.
            return unauthorized(AuthError::Missing);
        }
        return next.run(request).await;
    };
    if !crate::session::same_origin(request.headers()) {
        return ApiError {
            message: "the request came from another site (its Origin header names another host)".into(),
            ..ApiError::csrf()
        }
        .into_response();
    }
    let presented = authorization
        .to_str()
        .ok()
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim().to_string());
    let Some(presented) = presented else { return unauthorized(AuthError::Missing) };
    match tokens::authenticate_with_id(routes.state.runtime.store.as_ref(), &presented).await {
        Ok((token_id, caller)) => {
            // This layer runs after the outer router matched the route: hand the token routes a
            // fresh request (method, URI, headers, body) without the outer match's path
            // parameters, and with the token's caller.
            let (parts, body) = request.into_parts();
            let mut fresh = Request::new(body);
            *fresh.method_mut() = parts.method;
            *fresh.uri_mut() = parts.uri;
            *fresh.version_mut() = parts.version;
            *fresh.headers_mut() = parts.headers;
            fresh.extensions_mut().insert(TokenCaller(caller, token_id));
            match routes.router.clone().oneshot(fresh).await {
                Ok(response) => response,
                Err(never) => match never {},
            }
        }
        Err(AuthError::Storage) => ApiError::storage("the token store cannot be read; try again").into_response(),
        Err(e) => unauthorized(e),
    }
}

// ---------------------------------------------------------------------------------------------
// The Ledger page.

fn when(t: &steward_protocol::Timestamp) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// `GET /ledger`: the owner's work requests, a form to file one, and for each open request a
/// form to approve it (revision shown, head SHA, lifetime), for each live one a revoke button.
pub async fn ledger_page(State(state): State<AppState>, Extension(session): Extension<Session>) -> Response {
    let ledger = match ledger(&state) {
        Ok(l) => l,
        Err(e) => return error_page(&session, &e),
    };
    let records = match ledger.work_requests(&session.owner_id, LIST_LIMIT).await {
        Ok(r) => r,
        Err(e) => return error_page(&session, &ApiError::storage(e)),
    };
    let mut rows = Vec::with_capacity(records.len());
    for r in &records {
        let approval = match r.status {
            WorkStatus::Open | WorkStatus::Revoked => None,
            _ => match ledger.work_approvals(&r.id).await {
                Ok(list) => list.into_iter().last(),
                Err(e) => return error_page(&session, &ApiError::storage(e)),
            },
        };
        let authority = match &approval {
            Some(a) => match ledger.authority_of(&a.id).await {
                Ok(found) => found,
                Err(e) => return error_page(&session, &ApiError::storage(e)),
            },
            None => None,
        };
        let result = match &authority {
            Some(a) => match ledger.attempt_result(&a.attempt_id).await {
                Ok(found) => found,
                Err(e) => return error_page(&session, &ApiError::storage(e)),
            },
            None => None,
        };
        // The evidence was checked against the wire shape when it was reported; an unreadable
        // one shows no summary rather than failing the page.
        let evidence: Option<Evidence> = result.as_ref().and_then(|r| serde_json::from_str(&r.evidence).ok());
        rows.push(context! {
            id => &r.id, revision => r.revision, epoch => r.epoch, kind => &r.kind, repository => &r.repository,
            pr_number => r.pr_number, text => &r.text, status => r.status.as_str(), created_at => when(&r.created_at),
            open => r.status == WorkStatus::Open, revocable => !r.status.is_final(),
            head_sha => approval.as_ref().map(|a| a.head_sha.clone()),
            expires_at => approval.as_ref().map(|a| when(&a.expires_at)),
            hub_id => authority.as_ref().map(|a| a.hub_id.clone()),
            attempt_id => authority.as_ref().map(|a| a.attempt_id.clone()),
            outcome => result.as_ref().map(|r| r.outcome.clone()),
            summary => evidence.as_ref().and_then(|e| e.summary.clone()),
            tested_sha => evidence.as_ref().and_then(|e| e.tested_sha.clone()),
            run_id => evidence.as_ref().and_then(|e| e.run_id.clone()),
        });
    }
    render(
        StatusCode::OK,
        "ledger.html",
        context! { csrf => &session.csrf, owner => &session.owner_id, requests => rows,
        max_text => MAX_TEXT_CHARS, max_expires_minutes => MAX_EXPIRES_IN_S / 60 },
    )
}

/// The form that files a request from the Ledger page.
#[derive(Deserialize)]
pub struct RequestForm {
    csrf: String,
    repository: String,
    pr_number: String,
    #[serde(default)]
    text: String,
}

/// `POST /ledger` (form): files a request for the owner.
pub async fn file_request_form(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Form(form): Form<RequestForm>,
) -> Response {
    let act = async {
        let pr_number = form
            .pr_number
            .trim()
            .parse::<u64>()
            .map_err(|_| ApiError::invalid("the pull request number must be a whole number"))?;
        let new = NewWorkRequest {
            kind: WorkKind::PrSummary,
            repository: form.repository.clone(),
            pr_number,
            text: form.text.clone(),
        };
        file_request(ledger(&state)?, &session.owner_id, &new).await?;
        Ok("/ledger".to_string())
    };
    form_post(&state, &session, &form.csrf, act).await
}

/// The approve form of an open request.
#[derive(Deserialize)]
pub struct ApproveForm {
    csrf: String,
    revision: String,
    head_sha: String,
    /// Minutes.
    expires_in_minutes: String,
}

/// `POST /ledger/{id}/approve` (form).
pub async fn approve_form(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    axum::extract::Path(id): axum::extract::Path<String>,
    Form(form): Form<ApproveForm>,
) -> Response {
    let act = async {
        let revision =
            form.revision.trim().parse::<u32>().map_err(|_| ApiError::invalid("the revision is not a number"))?;
        let minutes = form
            .expires_in_minutes
            .trim()
            .parse::<u64>()
            .map_err(|_| ApiError::invalid("the lifetime must be a whole number of minutes"))?;
        let body =
            ApproveWorkRequest { revision, head_sha: form.head_sha.clone(), expires_in_s: minutes.saturating_mul(60) };
        approve_request(ledger(&state)?, &session.owner_id, &id, &body).await?;
        Ok("/ledger".to_string())
    };
    form_post(&state, &session, &form.csrf, act).await
}

/// A form carrying only the CSRF token.
#[derive(Deserialize)]
pub struct CsrfForm {
    csrf: String,
}

/// `POST /ledger/{id}/revoke` (form).
pub async fn revoke_form(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    axum::extract::Path(id): axum::extract::Path<String>,
    Form(form): Form<CsrfForm>,
) -> Response {
    let act = async {
        revoke_request(ledger(&state)?, &session.owner_id, &id).await?;
        Ok("/ledger".to_string())
    };
    form_post(&state, &session, &form.csrf, act).await
}

// ---------------------------------------------------------------------------------------------
// OpenAPI: the ledger's operations and schema-only mirrors of `steward_ledger::wire`.

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
