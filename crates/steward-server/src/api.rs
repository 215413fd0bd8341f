//! The JSON API under `/api` (described by the OpenAPI document `docs/openapi.json`, served at
//! `GET /api/openapi.json`; see [`crate::openapi`]). Every route acts for the request's owner
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
use crate::openapi::{ApprovalRequestDoc, EventDoc, FactRecordDoc, ToolSpecDoc, string_enum};
use crate::runs::{self, RunView, Started};
use crate::session::Session;
use crate::sse;
use crate::state::{AppState, StartRun};
use steward_core::compose::ProviderStatus;

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
    #[schema(value_type = Vec<EventDoc>)]
    pub events: Vec<Event>,
    /// Its approval requests; pending ones of a run that has ended show as `expired`.
    #[schema(value_type = Vec<ApprovalRequestDoc>)]
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
    #[schema(value_type = Vec<crate::openapi::ProviderStatusDoc>)]
    pub providers: Vec<ProviderStatus>,
}

/// The tools a run in a workspace is offered.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolList {
    /// The resolved workspace (canonical path).
    pub workspace: String,
    /// The tools.
    #[schema(value_type = Vec<ToolSpecDoc>)]
    pub tools: Vec<ToolSpec>,
}

/// The caller's remembered facts.
#[derive(Debug, Serialize, ToSchema)]
pub struct FactList {
    /// Oldest first.
    #[schema(value_type = Vec<FactRecordDoc>)]
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
    runs::decide(&state, &session.owner_id, &id, decision).await?;
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
    let now = chrono::Utc::now();
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
    let tools =
        state.launcher.tools(&workspace).await.map_err(|e| ApiError::invalid(state.runtime.redactor.redact(&e)))?;
    Ok(Json(ToolList { workspace: workspace.display().to_string(), tools }))
}

/// Lists the caller's remembered facts, oldest first.
#[utoipa::path(
    get,
    path = "/api/memory",
    tag = "memory",
    operation_id = "list_facts",
    security((), ("owner_cookie" = [])),
    responses(
        (status = 200, description = "The caller's facts", body = FactList),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn list_facts(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
) -> Result<Json<FactList>, ApiError> {
    let facts = crate::memory::list(&state, &session.owner_id).await?;
    Ok(Json(FactList { facts }))
}

/// Body of `POST /api/memory`.
#[derive(Deserialize, ToSchema)]
pub struct FactBody {
    /// The fact (not blank, at most 300 characters; secrets are redacted).
    #[schema(min_length = 1)]
    text: String,
}

/// Remembers a fact for the caller; it is shown to the model of every run of the caller.
#[utoipa::path(
    post,
    path = "/api/memory",
    tag = "memory",
    operation_id = "remember_fact",
    request_body = FactBody,
    security(("owner_cookie" = [], "csrf_token" = [])),
    responses(
        (status = 201, description = "Remembered", body = FactRecordDoc),
        (status = 400, body = ErrorBody, description = "`invalid`: an empty, too long or duplicate fact, too many \
            facts, or a body that does not fit"),
        (status = 403, description = "`csrf`: a missing or wrong CSRF token", body = ErrorBody),
        (status = 413, description = "`invalid`: the body is too large", body = ErrorBody),
        (status = 415, description = "`invalid`: the body is not `application/json`", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn remember(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    ApiJson(body): ApiJson<FactBody>,
) -> Result<Response, ApiError> {
    let fact = crate::memory::remember(&state, &session.owner_id, &body.text).await?;
    Ok((StatusCode::CREATED, Json(fact)).into_response())
}

/// Forgets one of the caller's facts.
#[utoipa::path(
    delete,
    path = "/api/memory/{id}",
    tag = "memory",
    operation_id = "forget_fact",
    params(("id" = String, Path, description = "Fact id (`fct_…`)")),
    security(("owner_cookie" = [], "csrf_token" = [])),
    responses(
        (status = 200, description = "Forgotten: `{\"status\": \"forgotten\"}`", body = StatusReply),
        (status = 403, description = "`csrf`: a missing or wrong CSRF token", body = ErrorBody),
        (status = 404, description = "`not_found`: the caller has no such fact", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn forget(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<StatusReply>, ApiError> {
    crate::memory::forget(&state, &session.owner_id, &id).await?;
    Ok(Json(StatusReply { status: "forgotten" }))
}

/// Streams the caller's remembered facts as Server-Sent Events.
///
/// Each `facts` event carries the whole list as `{"facts": [...]}` (as `GET /api/memory`),
/// first at once and then after every change.
#[utoipa::path(
    get,
    path = "/api/memory/events",
    tag = "memory",
    security((), ("owner_cookie" = [])),
    responses(
        (status = 200, description = "The event stream", content_type = "text/event-stream", body = String),
        (status = 429, description = "`busy`: too many event streams are open", body = ErrorBody),
    )
)]
pub async fn fact_events(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let slot = sse::open_stream(&state)?;
    let owner = session.owner_id;
    let rx = state.facts_changed.subscribe();
    let stream =
        futures::stream::unfold((state, owner, rx, true, slot), |(state, owner, mut rx, first, slot)| async move {
            if !first {
                loop {
                    match rx.recv().await {
                        Ok(changed) if changed == owner => break,
                        Ok(_) => continue,
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => break,
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                    }
                }
            }
            let facts = crate::memory::list(&state, &owner).await.unwrap_or_default();
            let event = SseEvent::default().event("facts").data(json!({ "facts": facts }).to_string());
            Some((Ok(event), (state, owner, rx, false, slot)))
        });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// A conversation in a list.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConversationSummary {
    /// `cnv_…`.
    pub id: String,
    /// Workspace of its runs.
    pub workspace: String,
    /// Number of turns.
    pub turns: usize,
    /// The first message, if any.
    pub first_message: String,
    /// True once it has ended.
    pub ended: bool,
    /// When it started (RFC 3339).
    pub created_at: String,
}

/// The caller's conversations.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConversationList {
    /// Newest first.
    pub conversations: Vec<ConversationSummary>,
}

/// Lists the caller's conversations, newest first.
#[utoipa::path(
    get,
    path = "/api/conversations",
    tag = "conversations",
    security((), ("owner_cookie" = [])),
    responses(
        (status = 200, description = "The caller's conversations", body = ConversationList),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn list_conversations(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
) -> Result<Json<ConversationList>, ApiError> {
    let all = conversations::list(&state, &session.owner_id).await?;
    Ok(Json(ConversationList {
        conversations: all
            .into_iter()
            .map(|c| ConversationSummary {
                first_message: c.turns.first().map(|t| t.message.clone()).unwrap_or_default(),
                turns: c.turns.len(),
                ended: c.ended_at.is_some(),
                created_at: c.created_at.to_rfc3339(),
                workspace: c.workspace,
                id: c.id,
            })
            .collect(),
    }))
}

/// Starts a conversation: one task at a time, the last 4 turns given as context, ended after
/// 15 minutes without a viewer.
#[utoipa::path(
    post,
    path = "/api/conversations",
    tag = "conversations",
    request_body = NewConversation,
    security(("owner_cookie" = [], "csrf_token" = [])),
    responses(
        (status = 201, description = "Started", body = ConversationView),
        (status = 400, body = ErrorBody, description = "`invalid`: a workspace this server does not serve, an \
            unknown mode, or a body that does not fit"),
        (status = 403, description = "`csrf`: a missing or wrong CSRF token", body = ErrorBody),
        (status = 413, description = "`invalid`: the body is too large", body = ErrorBody),
        (status = 415, description = "`invalid`: the body is not `application/json`", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn create_conversation(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    ApiJson(body): ApiJson<serde_json::Value>,
) -> Result<Response, ApiError> {
    // Every field is optional, so insist on an object: serde would also read an array.
    if !body.is_object() {
        return Err(ApiError::invalid("the body must be a JSON object"));
    }
    let new: NewConversation =
        serde_json::from_value(body).map_err(|e| ApiError::invalid(format!("invalid body: {e}")))?;
    let record = conversations::create(&state, &session.owner_id, new).await?;
    let view = conversations::view(&state, &record).await?;
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

/// One of the caller's conversations with its turns.
#[utoipa::path(
    get,
    path = "/api/conversations/{id}",
    tag = "conversations",
    params(("id" = String, Path, description = "Conversation id (`cnv_…`)")),
    security((), ("owner_cookie" = [])),
    responses(
        (status = 200, description = "The conversation", body = ConversationView),
        (status = 403, description = "`not_owner`: another owner's conversation", body = ErrorBody),
        (status = 404, description = "`not_found`: no such conversation", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn get_conversation(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ConversationView>, ApiError> {
    let record = conversations::owned(&state, &session.owner_id, &id).await?;
    Ok(Json(conversations::view(&state, &record).await?))
}

/// Body of `POST /api/conversations/{id}/messages`.
#[derive(Deserialize, ToSchema)]
pub struct MessageBody {
    /// The message: a task, or a memory command ("remember that …", "forget fact N").
    #[schema(min_length = 1)]
    text: String,
}

/// Sends a message to one of the caller's conversations.
///
/// A memory command is answered at once (`reply`); anything else starts a run (`run_id`)
/// given the conversation's last 4 turns. Refused with `busy` while the previous task still
/// runs and with `ended` once the conversation has ended; nothing is queued.
#[utoipa::path(
    post,
    path = "/api/conversations/{id}/messages",
    tag = "conversations",
    params(("id" = String, Path, description = "Conversation id (`cnv_…`)")),
    request_body = MessageBody,
    security(("owner_cookie" = [], "csrf_token" = [])),
    responses(
        (status = 201, description = "Sent", body = Sent),
        (status = 400, body = ErrorBody, description = "`invalid`: an empty message, a run that could not be \
            prepared, or a body that does not fit"),
        (status = 403, description = "`not_owner` or `csrf`", body = ErrorBody),
        (status = 404, description = "`not_found`: no such conversation", body = ErrorBody),
        (status = 409, description = "`busy`: its previous task still runs; `ended`: it has ended", body = ErrorBody),
        (status = 413, description = "`invalid`: the body is too large", body = ErrorBody),
        (status = 415, description = "`invalid`: the body is not `application/json`", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn send_message(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<MessageBody>,
) -> Result<Response, ApiError> {
    let sent = conversations::send(&state, &session.owner_id, &id, &body.text).await?;
    Ok((StatusCode::CREATED, Json(sent)).into_response())
}

/// Ends one of the caller's conversations now; its running task is cancelled.
#[utoipa::path(
    post,
    path = "/api/conversations/{id}/end",
    tag = "conversations",
    params(("id" = String, Path, description = "Conversation id (`cnv_…`)")),
    security(("owner_cookie" = [], "csrf_token" = [])),
    responses(
        (status = 200, description = "Ended", body = StatusReply),
        (status = 403, description = "`not_owner` or `csrf`", body = ErrorBody),
        (status = 404, description = "`not_found`: no such conversation", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn end_conversation(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<StatusReply>, ApiError> {
    conversations::end(&state, &session.owner_id, &id).await?;
    Ok(Json(StatusReply { status: "ended" }))
}

/// Streams one of the caller's conversations as Server-Sent Events; an open stream counts as
/// a viewer (the conversation ends after 15 minutes without one).
///
/// Each `conversation` event carries the conversation as `GET /api/conversations/{id}` does,
/// first at once and then after every change.
#[utoipa::path(
    get,
    path = "/api/conversations/{id}/events",
    tag = "conversations",
    params(("id" = String, Path, description = "Conversation id (`cnv_…`)")),
    security((), ("owner_cookie" = [])),
    responses(
        (status = 200, description = "The event stream", content_type = "text/event-stream", body = String),
        (status = 403, description = "`not_owner`: another owner's conversation", body = ErrorBody),
        (status = 404, description = "`not_found`: no such conversation", body = ErrorBody),
        (status = 429, description = "`busy`: too many event streams are open", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn conversation_events(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    ApiPath(id): ApiPath<String>,
) -> Result<Response, ApiError> {
    conversations::owned(&state, &session.owner_id, &id).await?;
    let slot = sse::open_stream(&state)?;
    let viewer = (conversations::join(&state, &id), slot);
    let changes = (state.conversations_changed.subscribe(), state.run_finished.subscribe());
    let stream = futures::stream::unfold(
        (state, id, changes, true, viewer),
        |(state, id, mut changes, first, viewer)| async move {
            use tokio::sync::broadcast::error::RecvError;
            // Wakes on a change of this conversation, or when a run of one of its turns ends.
            if !first {
                loop {
                    let (changed, run_ended) = tokio::select! {
                        c = changes.0.recv() => (Some(c), None),
                        r = changes.1.recv() => (None, Some(r)),
                    };
                    match (changed, run_ended) {
                        (Some(Ok(c)), _) if c == id => break,
                        (_, Some(Ok(run))) => {
                            let ours = matches!(state.runtime.store.conversation(&id).await, Ok(Some(c)) if c.turns.iter().any(|t| t.run_id == run));
                            if ours {
                                break;
                            }
                        }
                        (Some(Err(RecvError::Lagged(_))), _) | (_, Some(Err(RecvError::Lagged(_)))) => break,
                        (Some(Err(RecvError::Closed)), _) | (_, Some(Err(RecvError::Closed))) => return None,
                        _ => continue,
                    }
                }
            }
            let record = state.runtime.store.conversation(&id).await.ok().flatten()?;
            let view = conversations::view(&state, &record).await.ok()?;
            let event = SseEvent::default().event("conversation").data(serde_json::to_string(&view).ok()?);
            Some((Ok::<_, Infallible>(event), (state, id, changes, false, viewer)))
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))).into_response())
}
