//! The JSON API under `/api` (described by the OpenAPI document `docs/openapi.json`, served at
//! `GET /api/openapi.json`, built by the `openapi` module). Every route acts for the request's owner
//! ([`Session`]); state-changing routes need the CSRF header. Every error, including a body or
//! query the extractors refuse, answers with the JSON body of [`ErrorBody`].

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{FromRequest, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use futures::Stream;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::json;
use steward_protocol::{ApprovalRequest, Event, ToolSpec};
use steward_store::{FactRecord, GrantScope};
use utoipa::{IntoParams, ToSchema};

use crate::conversations::{self, ConversationView, NewConversation, Sent};
use crate::error::{ApiError, ErrorBody};
use crate::runs::{self, RunView, Started};
use crate::schema::string_enum;
use crate::session::Session;
use crate::sse;
use crate::state::{AppState, StartRun};
use steward_core::ProviderStatus;

/// Runs listed by `GET /api/runs`.
const LIST_LIMIT: usize = 200;

/// A JSON request body; a body that is not JSON or does not fit answers with the API's JSON
/// error (400 `invalid`, 413 when too large, 415 without `Content-Type: application/json`).
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let Json(value) = Json::<T>::from_request(request, state).await?;
        Ok(ApiJson(value))
    }
}

/// Path parameters; a malformed one answers with the API's JSON error (400 `invalid`).
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let axum::extract::Path(value) = axum::extract::Path::<T>::from_request_parts(parts, state).await?;
        Ok(ApiPath(value))
    }
}

/// A query string; a malformed one answers with the API's JSON error (400 `invalid`).
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let axum::extract::Query(value) = axum::extract::Query::<T>::from_request_parts(parts, state).await?;
        Ok(ApiQuery(value))
    }
}

/// The caller's runs.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunList {
    /// Newest first, at most 200.
    pub runs: Vec<RunView>,
}

/// A run with everything it recorded.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunTrace {
    /// The run.
    pub run: RunView,
    /// Its events in order (`seq` 1, 2, …).
    pub events: Vec<Event>,
    /// Its approval requests; pending ones of a run that has ended show as `expired`.
    pub approvals: Vec<ApprovalRequest>,
}

/// What a state-changing request did.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatusReply {
    /// `cancelling` (cancel), `approved` or `denied` (decide), `revoked` (revoke a grant),
    /// `forgotten` (forget a fact).
    #[schema(schema_with = status_schema)]
    pub status: &'static str,
}

fn status_schema() -> utoipa::openapi::Object {
    string_enum(&["cancelling", "approved", "denied", "revoked", "forgotten", "ended"], "What the request did.")
}

/// A remembered approval of the caller.
#[derive(Debug, Serialize, ToSchema)]
pub struct GrantView {
    /// `grt_…`.
    pub id: String,
    /// The tool it covers.
    pub tool: String,
    /// `run` (later calls in the same run) or `workspace` (any run of the owner there).
    #[schema(schema_with = grant_scope_schema)]
    pub scope: &'static str,
    /// The run it was given in.
    pub run_id: String,
    /// Canonical workspace path.
    pub workspace: String,
    /// The approval it came from.
    pub approval_id: String,
    /// When it was given.
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// When it stops counting.
    pub expires_at: chrono::DateTime<chrono::Utc>,
    /// When it was revoked, if it was.
    #[schema(required = true)]
    pub revoked_at: Option<chrono::DateTime<chrono::Utc>>,
    /// `active`, `revoked` or `expired` (a run grant also ends with its run).
    #[schema(schema_with = grant_state_schema)]
    pub state: &'static str,
}

fn grant_scope_schema() -> utoipa::openapi::Object {
    string_enum(&["run", "workspace"], "How far the grant reaches.")
}

fn grant_state_schema() -> utoipa::openapi::Object {
    string_enum(&["active", "revoked", "expired"], "Whether the grant still counts.")
}

/// The caller's remembered approvals.
#[derive(Debug, Serialize, ToSchema)]
pub struct GrantList {
    /// Oldest first.
    pub grants: Vec<GrantView>,
}

/// Configured and preset providers.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProviderList {
    /// Each with its reachability.
    pub providers: Vec<ProviderStatus>,
}

/// The tools a run in a workspace is offered.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolList {
    /// The resolved workspace (canonical path).
    pub workspace: String,
    /// The tools.
    pub tools: Vec<ToolSpec>,
}

/// The caller's remembered facts.
#[derive(Debug, Serialize, ToSchema)]
pub struct FactList {
    /// Oldest first.
    pub facts: Vec<FactRecord>,
}

/// Starts a run.
///
/// The run waits in a queue when the server's concurrency limit is reached.
#[utoipa::path(
    post,
    path = "/api/runs",
    tag = "runs",
    request_body = StartRun,
    security(("owner_cookie" = [], "csrf_token" = [])),
    responses(
        (status = 201, description = "Started or queued", body = Started),
        (status = 400, body = ErrorBody, description = "`invalid`: a blank or too long task, an unknown mode, a \
            workspace this server does not serve, a run that could not be prepared, or a body that does not fit"),
        (status = 403, description = "`csrf`: a missing or wrong CSRF token", body = ErrorBody),
        (status = 413, description = "`invalid`: the body is too large", body = ErrorBody),
        (status = 415, description = "`invalid`: the body is not `application/json`", body = ErrorBody),
    )
)]
pub async fn start_run(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    ApiJson(start): ApiJson<StartRun>,
) -> Result<Response, ApiError> {
    let started = runs::start(&state, &session.owner_id, start).await?;
    Ok((StatusCode::CREATED, Json(started)).into_response())
}

/// Lists the caller's runs, newest first.
#[utoipa::path(
    get,
    path = "/api/runs",
    tag = "runs",
    security((), ("owner_cookie" = [])),
    responses(
        (status = 200, description = "The caller's runs", body = RunList),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn list_runs(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
) -> Result<Json<RunList>, ApiError> {
    let runs = runs::list(&state, &session.owner_id, LIST_LIMIT).await?;
    Ok(Json(RunList { runs }))
}

/// One of the caller's runs with its events and approval requests.
#[utoipa::path(
    get,
    path = "/api/runs/{id}",
    tag = "runs",
    params(("id" = String, Path, description = "Run id (`run_…`)")),
    security((), ("owner_cookie" = [])),
    responses(
        (status = 200, description = "The run, its events and approvals", body = RunTrace),
        (status = 403, description = "`not_owner`: the run belongs to another owner", body = ErrorBody),
        (status = 404, description = "`not_found`: no such run", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn get_run(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<RunTrace>, ApiError> {
    let (run, events, approvals) = runs::trace(&state, &session.owner_id, &id).await?;
    Ok(Json(RunTrace { run, events, approvals }))
}

/// Cancels one of the caller's runs that this server executes or queues.
#[utoipa::path(
    post,
    path = "/api/runs/{id}/cancel",
    tag = "runs",
    params(("id" = String, Path, description = "Run id (`run_…`)")),
    security(("owner_cookie" = [], "csrf_token" = [])),
    responses(
        (status = 202, description = "Cancelling: `{\"status\": \"cancelling\"}`", body = StatusReply),
        (status = 403, description = "`csrf` or `not_owner`", body = ErrorBody),
        (status = 404, description = "`not_found`: no such run", body = ErrorBody),
        (status = 409, body = ErrorBody,
            description = "`not_pending`: the run has ended or executes in another process"),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn cancel_run(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    ApiPath(id): ApiPath<String>,
) -> Result<Response, ApiError> {
    runs::cancel(&state, &session.owner_id, &id).await?;
    Ok((StatusCode::ACCEPTED, Json(StatusReply { status: "cancelling" })).into_response())
}

/// Query of the event stream.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AfterQuery {
    /// Resume after this sequence number (as `Last-Event-ID`, which wins when both are given).
    after: Option<u64>,
}

/// Headers of the event stream.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
pub struct ResumeHeaders {
    /// Resume after this sequence number (browsers send it when they reconnect).
    #[param(rename = "Last-Event-ID", required = false)]
    pub last_event_id: u64,
}

/// Streams a run's events as Server-Sent Events.
///
/// Each SSE event carries one run event as JSON, with its `seq` as the SSE id; the stream ends
/// after the run's terminal event.
#[utoipa::path(
    get,
    path = "/api/runs/{id}/events",
    tag = "runs",
    params(
        ("id" = String, Path, description = "Run id (`run_…`)"),
        AfterQuery,
        ResumeHeaders,
    ),
    security((), ("owner_cookie" = [])),
    responses(
        (status = 200, description = "The event stream", content_type = "text/event-stream", body = String),
        (status = 400, description = "`invalid`: a malformed query string", body = ErrorBody),
        (status = 403, description = "`not_owner`: the run belongs to another owner", body = ErrorBody),
        (status = 404, description = "`not_found`: no such run", body = ErrorBody),
        (status = 429, description = "`busy`: too many event streams are open", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn run_events(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<AfterQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    runs::owned(&state, &session.owner_id, &id).await?;
    let last_event_id = headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok());
    let after = last_event_id.or(query.after).unwrap_or(0);
    let slot = sse::open_stream(&state)?;
    Ok(sse::run_stream(state, id, after, slot).into_response())
}

/// Body of `POST /api/approvals/{id}`.
#[derive(Deserialize, ToSchema)]
pub struct DecisionBody {
    /// `approve` or `deny`.
    #[schema(schema_with = decision_schema)]
    decision: String,
    /// For approvals: `once` (default), `run` or `workspace`.
    scope: Option<String>,
    /// For denials: why, shown to the model (at most 500 characters are kept).
    reason: Option<String>,
    /// For approvals: the hash of the call the approver was shown (SHA-256 hex of
    /// `["steward-call-v1", tool, arguments]`, keys sorted). The run refuses the approval
    /// (`call_mismatch`) when it is not the hash of the call it would run. Without it, the
    /// request as the server reads it now is taken as shown.
    call_hash: Option<String>,
}

fn decision_schema() -> utoipa::openapi::Object {
    string_enum(&["approve", "deny"], "`approve` or `deny`.")
}

/// Approves or denies one of the caller's approval requests.
#[utoipa::path(
    post,
    path = "/api/approvals/{id}",
    tag = "approvals",
    operation_id = "decide_approval",
    params(("id" = String, Path, description = "Approval id (`apr_…`)")),
    request_body = DecisionBody,
    security(("owner_cookie" = [], "csrf_token" = [])),
    responses(
        (status = 200, body = StatusReply,
            description = "Decided: `{\"status\": \"approved\"}` or `{\"status\": \"denied\"}`"),
        (status = 400, body = ErrorBody,
            description = "`invalid`: an unknown decision or scope, or a body that does not fit"),
        (status = 403, description = "`csrf` or `not_owner`", body = ErrorBody),
        (status = 404, description = "`not_found`: no such approval", body = ErrorBody),
        (status = 409, description = "`expired` or `not_pending`: it can no longer be decided", body = ErrorBody),
        (status = 413, description = "`invalid`: the body is too large", body = ErrorBody),
        (status = 415, description = "`invalid`: the body is not `application/json`", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn decide(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<DecisionBody>,
) -> Result<Json<StatusReply>, ApiError> {
    let decision = runs::parse_decision(&body.decision, body.scope.as_deref(), body.reason.as_deref())?;
    let status = match decision {
        crate::live::Decision::Approve(_) => "approved",
        crate::live::Decision::Deny(_) => "denied",
    };
    runs::decide(&state, &session.owner_id, &id, decision, body.call_hash).await?;
    Ok(Json(StatusReply { status }))
}

/// Lists the caller's remembered approvals.
#[utoipa::path(
    get,
    path = "/api/grants",
    tag = "grants",
    security((), ("owner_cookie" = [])),
    responses(
        (status = 200, description = "The caller's grants", body = GrantList),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn list_grants(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
) -> Result<Json<GrantList>, ApiError> {
    let grants = state.runtime.store.grants(&session.owner_id).await.map_err(ApiError::storage)?;
    let now = state.now();
    let grants = grants
        .into_iter()
        .map(|g| GrantView {
            state: runs::grant_state(&g, now),
            scope: match g.scope {
                GrantScope::Run => "run",
                GrantScope::Workspace => "workspace",
            },
            id: g.id,
            tool: g.tool,
            run_id: g.run_id,
            workspace: g.workspace,
            approval_id: g.approval_id,
            created_at: g.created_at,
            expires_at: g.expires_at,
            revoked_at: g.revoked_at,
        })
        .collect();
    Ok(Json(GrantList { grants }))
}

/// Revokes one of the caller's grants; later calls of its tool ask again.
#[utoipa::path(
    post,
    path = "/api/grants/{id}/revoke",
    tag = "grants",
    params(("id" = String, Path, description = "Grant id (`grt_…`)")),
    security(("owner_cookie" = [], "csrf_token" = [])),
    responses(
        (status = 200, description = "Revoked: `{\"status\": \"revoked\"}`", body = StatusReply),
        (status = 403, description = "`csrf`: a missing or wrong CSRF token", body = ErrorBody),
        (status = 404, description = "`not_found`: the caller has no such grant", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn revoke_grant(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<StatusReply>, ApiError> {
    runs::revoke_grant(&state, &session.owner_id, &id).await?;
    Ok(Json(StatusReply { status: "revoked" }))
}

/// Lists the configured and preset providers with their reachability.
#[utoipa::path(
    get,
    path = "/api/providers",
    tag = "tools",
    operation_id = "list_providers",
    security((), ("owner_cookie" = [])),
    responses((status = 200, description = "The providers", body = ProviderList))
)]
pub async fn providers(State(state): State<AppState>) -> Json<ProviderList> {
    Json(ProviderList { providers: state.launcher.providers().await })
}

/// Query naming a workspace.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WorkspaceQuery {
    /// Workspace directory (default: the server's default workspace).
    workspace: Option<String>,
}

/// Lists the tools a run in a workspace is offered.
#[utoipa::path(
    get,
    path = "/api/tools",
    tag = "tools",
    operation_id = "list_tools",
    params(WorkspaceQuery),
    security((), ("owner_cookie" = [])),
    responses(
        (status = 200, description = "The workspace and its tools", body = ToolList),
        (status = 400, body = ErrorBody, description = "`invalid`: a workspace this server does not serve, a \
            configuration that does not load, or a malformed query string"),
    )
)]
pub async fn tools(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<WorkspaceQuery>,
) -> Result<Json<ToolList>, ApiError> {
    let workspace = runs::resolve_workspace(&state, query.workspace.as_deref())?;
    let tools = state
        .launcher
        .tools(&workspace)
        .await
        .map_err(|e| ApiError::invalid(state.runtime.redactor.redact(&e.to_string())))?;
    Ok(Json(ToolList { workspace: workspace.display().to_string(), tools }))
}

mod conversation;
mod memory;

pub use conversation::*;
pub use memory::*;
