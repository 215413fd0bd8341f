//! The JSON API under `/api` (documented in `docs/api.md`). Every route acts for the
//! request's owner ([`Session`]); state-changing routes need the CSRF header.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use futures::Stream;
use serde::Deserialize;
use serde_json::{Value, json};
use steward_store::GrantScope;

use crate::error::ApiError;
use crate::runs;
use crate::session::Session;
use crate::sse;
use crate::state::{AppState, StartRun};

/// Runs listed by `GET /api/runs`.
const LIST_LIMIT: usize = 200;

/// `POST /api/runs` → 201 `{id, status, queue_position}`.
pub async fn start_run(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Json(start): Json<StartRun>,
) -> Result<Response, ApiError> {
    let started = runs::start(&state, &session.owner_id, start).await?;
    Ok((StatusCode::CREATED, Json(started)).into_response())
}

/// `GET /api/runs` → `{runs: [...]}` (the caller's, newest first).
pub async fn list_runs(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
) -> Result<Json<Value>, ApiError> {
    let runs = runs::list(&state, &session.owner_id, LIST_LIMIT).await?;
    Ok(Json(json!({ "runs": runs })))
}

/// `GET /api/runs/{id}` → `{run, events, approvals}`.
pub async fn get_run(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let (view, events, approvals) = runs::trace(&state, &session.owner_id, &id).await?;
    Ok(Json(json!({ "run": view, "events": events, "approvals": approvals })))
}

/// `POST /api/runs/{id}/cancel` → 202 `{status}`.
pub async fn cancel_run(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    runs::cancel(&state, &session.owner_id, &id).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "status": "cancelling" }))).into_response())
}

/// Query of the event stream.
#[derive(Deserialize)]
pub struct AfterQuery {
    /// Resume after this sequence number (as `Last-Event-ID`).
    after: Option<u64>,
}

/// `GET /api/runs/{id}/events` → `text/event-stream`.
pub async fn run_events(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    Query(query): Query<AfterQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    runs::owned(&state, &session.owner_id, &id).await?;
    let last_event_id = headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok());
    let after = last_event_id.or(query.after).unwrap_or(0);
    Ok(sse::run_stream(state, id, after).into_response())
}

/// Body of `POST /api/approvals/{id}`.
#[derive(Deserialize)]
pub struct DecisionBody {
    /// `approve` or `deny`.
    decision: String,
    /// `once` (default), `run` or `workspace`.
    scope: Option<String>,
    /// Why (deny only), shown to the model.
    reason: Option<String>,
}

/// `POST /api/approvals/{id}` → `{status}`.
pub async fn decide(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    Json(body): Json<DecisionBody>,
) -> Result<Json<Value>, ApiError> {
    let decision = runs::parse_decision(&body.decision, body.scope.as_deref(), body.reason.as_deref())?;
    let status = match decision {
        crate::live::Decision::Approve(_) => "approved",
        crate::live::Decision::Deny(_) => "denied",
    };
    runs::decide(&state, &session.owner_id, &id, decision).await?;
    Ok(Json(json!({ "status": status })))
}

/// `GET /api/grants` → `{grants: [...]}` (the caller's remembered approvals).
pub async fn list_grants(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
) -> Result<Json<Value>, ApiError> {
    let grants = state.runtime.store.grants(&session.owner_id).await.map_err(ApiError::storage)?;
    let now = chrono::Utc::now();
    let grants: Vec<Value> = grants
        .into_iter()
        .map(|g| {
            json!({
                "id": g.id,
                "tool": g.tool,
                "scope": match g.scope { GrantScope::Run => "run", GrantScope::Workspace => "workspace" },
                "run_id": g.run_id,
                "workspace": g.workspace,
                "approval_id": g.approval_id,
                "created_at": g.created_at,
                "expires_at": g.expires_at,
                "revoked_at": g.revoked_at,
                "state": runs::grant_state(&g, now),
            })
        })
        .collect();
    Ok(Json(json!({ "grants": grants })))
}

/// `POST /api/grants/{id}/revoke` → `{status: "revoked"}`.
pub async fn revoke_grant(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    runs::revoke_grant(&state, &session.owner_id, &id).await?;
    Ok(Json(json!({ "status": "revoked" })))
}

/// `GET /api/providers` → `{providers: [...]}`.
pub async fn providers(State(state): State<AppState>) -> Json<Value> {
    Json(json!({ "providers": state.launcher.providers().await }))
}

/// Query naming a workspace.
#[derive(Deserialize)]
pub struct WorkspaceQuery {
    /// Workspace directory (default: the server's default workspace).
    workspace: Option<String>,
}

/// `GET /api/tools` → `{workspace, tools: [{name, description, risk, parameters}]}`.
pub async fn tools(
    State(state): State<AppState>,
    Query(query): Query<WorkspaceQuery>,
) -> Result<Json<Value>, ApiError> {
    let workspace = runs::resolve_workspace(&state, query.workspace.as_deref())?;
    let tools =
        state.launcher.tools(&workspace).await.map_err(|e| ApiError::invalid(state.runtime.redactor.redact(&e)))?;
    Ok(Json(json!({ "workspace": workspace.display().to_string(), "tools": tools })))
}

/// `GET /api/memory` → `{facts: [{id, text, created_at}]}`.
pub async fn list_facts(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
) -> Result<Json<Value>, ApiError> {
    let facts = crate::memory::list(&state, &session.owner_id).await?;
    Ok(Json(json!({ "facts": facts })))
}

/// Body of `POST /api/memory`.
#[derive(Deserialize)]
pub struct FactBody {
    /// The fact (at most 300 characters).
    text: String,
}

/// `POST /api/memory` → 201 `{id, text, created_at}`.
pub async fn remember(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Json(body): Json<FactBody>,
) -> Result<Response, ApiError> {
    let fact = crate::memory::remember(&state, &session.owner_id, &body.text).await?;
    Ok((StatusCode::CREATED, Json(fact)).into_response())
}

/// `DELETE /api/memory/{id}` → `{status: "forgotten"}`.
pub async fn forget(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    crate::memory::forget(&state, &session.owner_id, &id).await?;
    Ok(Json(json!({ "status": "forgotten" })))
}

/// `GET /api/memory/events` → `text/event-stream` of `facts` events, each carrying the
/// owner's whole list as `{facts: [...]}`, first at once and then after every change.
pub async fn fact_events(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let owner = session.owner_id;
    let rx = state.facts_changed.subscribe();
    let stream = futures::stream::unfold((state, owner, rx, true), |(state, owner, mut rx, first)| async move {
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
        Some((Ok(event), (state, owner, rx, false)))
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
