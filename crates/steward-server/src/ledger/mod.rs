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
//! it needs no CSRF token); every other request goes through the session layer (`owner_layer`).
//! The JSON shapes are those of [`steward_ledger::wire`]; unknown fields are refused and every
//! body has a size limit ([`MAX_BODY`], [`MAX_RESULT_BODY`]). Text from requesters is stored and
//! shown as data; nothing in it changes a pin, a scope or a command.

use axum::extract::{DefaultBodyLimit, Form, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json, Router};
use minijinja::context;
use serde::Deserialize;
use steward_ledger::requests::LedgerError;
pub use steward_ledger::requests::{
    MAX_EXPIRES_IN_S, MAX_ID_CHARS, MAX_REPOSITORY_CHARS, MAX_TEXT_CHARS, approval_view, approve_request,
    check_expires_in, check_head_sha, check_pr_number, check_repository, check_text, check_token_id, file_request,
    outcome_name, outcome_of, request_view, revoke_request,
};
use steward_ledger::wire::{
    ApproveWorkRequest, AuthorityOutcome, Candidate, CandidatePage, ClaimRequest, ClaimResponse, Evidence,
    NewWorkRequest, ResultAck, ResultReport, WorkApproval, WorkKind, WorkRequest,
};
use steward_mcp::mcp_server::{Caller, Scope};
use steward_store::LedgerStore;
use steward_store::ledger::{
    CandidateCursor, ClaimInput, ClaimOutcome, ResultInput, ResultOutcome, WorkRequestRecord, WorkStatus,
};
use tower::ServiceExt;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{IntoParams, Modify, OpenApi, ToSchema};
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt};
use utoipa_axum::routes;

use crate::api::{ApiJson, ApiPath, ApiQuery};
use crate::error::{ApiError, ErrorBody, ErrorClass};
use crate::pages::{error_page, form_post, render};
use crate::session::Session;
use crate::state::AppState;
use crate::tokens::{self, AuthError};

/// Largest body of a ledger request except result reports (16 KiB).
pub const MAX_BODY: usize = 16 * 1024;
/// Largest body of a result report (256 KiB: the evidence carries a summary and checks).
pub const MAX_RESULT_BODY: usize = 256 * 1024;
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
                class: ErrorClass::Internal,
                message: "the request has neither a session nor a token".into(),
            }),
        }
    }
}

/// 403 `forbidden`: the caller is who it says, but may not do this.
fn forbidden(message: String) -> ApiError {
    ApiError { status: StatusCode::FORBIDDEN, class: ErrorClass::Forbidden, message }
}

/// 409 `conflict`.
fn conflict(message: String) -> ApiError {
    ApiError { status: StatusCode::CONFLICT, class: ErrorClass::Conflict, message }
}

impl From<LedgerError> for ApiError {
    fn from(e: LedgerError) -> Self {
        match e {
            LedgerError::Invalid(m) => ApiError::invalid(m),
            LedgerError::NotFound(m) => ApiError::not_found(m),
            LedgerError::NotOwner(what) => ApiError::not_owner(what),
            LedgerError::Conflict(m) => conflict(m),
            LedgerError::Internal(message) => internal(message),
            LedgerError::Storage(e) => ApiError::storage(e),
        }
    }
}

/// 500 `internal`.
fn internal(message: String) -> ApiError {
    ApiError { status: StatusCode::INTERNAL_SERVER_ERROR, class: ErrorClass::Internal, message }
}

/// 401 `unauthorized` with `WWW-Authenticate: Bearer`.
fn unauthorized(error: AuthError) -> Response {
    let message = match error {
        AuthError::Revoked => "the bearer token was revoked",
        AuthError::Missing => "this endpoint needs `Authorization: Bearer <token>`",
        _ => "unknown bearer token",
    };
    let body = ApiError { status: StatusCode::UNAUTHORIZED, class: ErrorClass::Unauthorized, message: message.into() };
    let mut response = body.into_response();
    response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(r#"Bearer realm="steward""#));
    response
}

/// The ledger of the server's store; 500 `internal` for a store without one.
fn ledger(state: &AppState) -> Result<&dyn LedgerStore, ApiError> {
    state.runtime.store.ledger().ok_or_else(|| ApiError {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        class: ErrorClass::Internal,
        message: "this server's store keeps no work ledger".into(),
    })
}

// ---------------------------------------------------------------------------------------------
// The JSON API.

/// The owner's work requests, newest first.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct WorkRequestList {
    /// At most 200.
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
    request_body = NewWorkRequest,
    security(("owner_cookie" = [], "csrf_token" = []), ("bearer_token" = ["submit"])),
    responses(
        (status = 201, description = "Filed", body = WorkRequest),
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
    let record = file_request(ledger(&state)?, state.now(), principal.owner_id(), &body).await?;
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
        (status = 200, description = "The work request", body = WorkRequest),
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
    request_body = ApproveWorkRequest,
    security(("owner_cookie" = [], "csrf_token" = [])),
    responses(
        (status = 200, description = "Approved", body = WorkApproval),
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
    let approval = approve_request(ledger(&state)?, state.now(), &session.owner_id, &id, &body).await?;
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
        (status = 200, description = "Revoked: the request with its new epoch", body = WorkRequest),
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
    let record = revoke_request(ledger(&state)?, state.now(), &session.owner_id, &id).await?;
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
        (status = 200, description = "One page; complete once `next_cursor` is null", body = CandidatePage),
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
        .ledger_candidates(&caller.owner_id, cursor.as_ref(), limit, state.now())
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
    request_body = ClaimRequest,
    security(("bearer_token" = ["hub"])),
    responses(
        (status = 200, description = "The decision", body = ClaimResponse),
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
    check_token_id("hub_id", &body.hub_id).map_err(|e| ApiError::invalid(e.to_string()))?;
    check_token_id("attempt_id", &body.attempt_id).map_err(|e| ApiError::invalid(e.to_string()))?;
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
        at: state.now(),
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
    request_body = ResultReport,
    security(("bearer_token" = ["hub"])),
    responses(
        (status = 200, description = "Recorded, or a duplicate of the recorded result", body = ResultAck),
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
    check_token_id("attempt_id", &body.attempt_id).map_err(|e| ApiError::invalid(e.to_string()))?;
    let evidence = serde_json::to_string(&body.evidence).map_err(|e| internal(format!("evidence: {e}")))?;
    let input = ResultInput {
        authority_id: id.clone(),
        attempt_id: body.attempt_id.clone(),
        owner_id: caller.owner_id.clone(),
        token_id: token_id.to_string(),
        outcome: outcome_name(body.outcome).into(),
        evidence,
        at: state.now(),
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
    /// The routes of `/api/ledger/…` for calls with a bearer token: `router` is `routes`
    /// as the server guards it (only documented routes serve).
    pub fn new(state: AppState, router: Router<AppState>) -> Self {
        let router =
            router.fallback(|| async { ApiError::not_found("no such ledger endpoint") }).with_state(state.clone());
        TokenRoutes { state, router }
    }
}

/// The ledger's JSON API (`/api/ledger/…`) with its part of the OpenAPI document: each route
/// is registered with the `#[utoipa::path]` of its handler, so the document names exactly the
/// routes served. Both the owner's router and [`TokenRoutes`] serve these.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(LedgerApi::openapi())
        .routes(routes!(list_requests, create_request).layer(body_limit()))
        .routes(routes!(get_request))
        .routes(routes!(approve).layer(body_limit()))
        .routes(routes!(revoke).layer(body_limit()))
        .routes(routes!(candidates))
        .routes(routes!(claim).layer(body_limit()))
        .routes(routes!(report_result).layer(result_body_limit()))
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
    match tokens::authenticate_with_id(
        routes.state.runtime.store.as_ref(),
        routes.state.runtime.clock.as_ref(),
        &presented,
    )
    .await
    {
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

mod docs;
mod page;

pub use docs::*;
pub use page::*;
